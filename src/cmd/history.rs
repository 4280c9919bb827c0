//! `tailor history`: the agent's decision journal, oldest first, from a
//! running agent (`--url`, `/v1/decisions?since=`) or its state directory
//! (`--state-dir`, `decisions.jsonl` and its rotated copy).

use super::recommendations::{http_get, Source, DEFAULT_URL};
use agent::journal::{self, JournalEntry, Since};
use agent::text::printable;
use anyhow::Context;

const MIB: f64 = 1024.0 * 1024.0;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub source: Source,
    /// Only this container's actions.
    #[arg(long)]
    pub container: Option<String>,
    /// Entries after this sequence number (below 10^9) or Unix time.
    #[arg(long, default_value = "0")]
    pub since: String,
    /// JSON lines as stored.
    #[arg(long)]
    pub json: bool,
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|v| num(v, digits)).unwrap_or_else(|| "-".into())
}

/// `v` with `digits` decimals, or in exponent form when that would be long
/// (a crafted journal's `t=1e300` is not printed as 301 digits).
fn num(v: f64, digits: usize) -> String {
    if v.is_finite() && v.abs() >= 1e15 {
        format!("{v:e}")
    } else {
        format!("{v:.digits$}")
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let since = Since::parse(&args.since).map_err(anyhow::Error::msg)?;
    let entries: Vec<JournalEntry> = match &args.source.state_dir {
        Some(dir) => {
            if !dir.is_dir() {
                anyhow::bail!(
                    "--state-dir {}: not a directory (the agent's state_dir holds {})",
                    dir.display(),
                    journal::FILE_NAME
                );
            }
            let back = journal::read_dir_counted(dir)?;
            if back.files == 0 {
                anyhow::bail!(
                    "cannot read {}: no such file (has the agent run a round with --state-dir {}?)",
                    dir.join(journal::FILE_NAME).display(),
                    dir.display()
                );
            }
            if back.skipped > 0 {
                eprintln!(
                    "warning: {} line(s) of {} that are not journal entries were skipped",
                    back.skipped,
                    dir.join(journal::FILE_NAME).display()
                );
                for l in &back.first_skipped {
                    eprintln!(
                        "  {}:{}: {}",
                        l.path.display(),
                        l.line,
                        printable(&l.reason)
                    );
                }
                if back.skipped > back.first_skipped.len() {
                    eprintln!("  ... and {} more", back.skipped - back.first_skipped.len());
                }
            }
            back.entries
                .into_iter()
                .filter(|e| since.admits(e))
                .collect()
        }
        None => {
            let url = args.source.url.as_deref().unwrap_or(DEFAULT_URL);
            let body = http_get(url, &format!("/v1/decisions?since={}", args.since))?;
            serde_json::from_str(&body).context("decisions: not the agent's JSON")?
        }
    };
    for mut e in entries {
        if let Some(c) = &args.container {
            e.actions.retain(|a| &a.container == c);
            e.restored.retain(|r| &r.container == c);
            e.restarted.retain(|r| r == c);
            e.oom_kills.retain(|k| &k.container == c);
            e.early = e.early.filter(|x| &x.container == c);
            if e.actions.is_empty()
                && e.restored.is_empty()
                && e.restarted.is_empty()
                && e.oom_kills.is_empty()
            {
                continue;
            }
        }
        if args.json {
            println!("{}", serde_json::to_string(&e)?);
            continue;
        }
        // the kills came before the round's decisions
        for k in &e.oom_kills {
            println!(
                "#{} round {} t={} {} OOM-killed at t={}{} at a {} MiB limit; memory held at >= {} MiB",
                e.seq,
                e.round,
                num(e.at_s, 0),
                printable(&k.container),
                num(k.killed_at_s, 0),
                if k.found_by_inspect { " (found by inspect)" } else { "" },
                num(k.limit_mib, 1),
                num(k.floor_mib, 1)
            );
        }
        // then the original limits given back to the containers the agent's
        // cut got killed (no restart policy), before the round's decisions
        for r in &e.restored {
            println!(
                "#{} round {} t={} {} original limits restored (cpu {} cores, memory {} MiB): OOM-killed at a {} MiB limit cut below its request",
                e.seq,
                e.round,
                num(e.at_s, 0),
                printable(&r.container),
                opt(r.to_cpu_cores, 3),
                opt(r.to_mem_mib, 1),
                opt(r.killed_at_mib, 1)
            );
        }
        if let Some(x) = &e.early {
            println!(
                "#{} round {} t={} {} early round: memory {} MiB of a {} MiB limit ({} MiB at the round before: half the headroom used)",
                e.seq,
                e.round,
                num(e.at_s, 0),
                printable(&x.container),
                num(x.working_set_bytes as f64 / MIB, 1),
                num(x.limit_bytes as f64 / MIB, 1),
                num(x.at_round_bytes as f64 / MIB, 1)
            );
        }
        for a in &e.actions {
            let sizes = if a.action == "resize" {
                format!(
                    " cpu {} -> {} cores, memory {} -> {} MiB",
                    opt(a.from_cpu_cores, 3),
                    opt(a.to_cpu_cores, 3),
                    opt(a.from_mem_mib, 1),
                    opt(a.to_mem_mib, 1)
                )
            } else {
                String::new()
            };
            let note = a
                .note
                .as_deref()
                .map(|n| format!(" [{}]", printable(n)))
                .unwrap_or_default();
            println!(
                "#{} round {} t={} {} {} {}{}: {}{}",
                e.seq,
                e.round,
                num(e.at_s, 0),
                printable(&a.container),
                printable(&a.action),
                printable(&a.result),
                sizes,
                printable(&a.explanation),
                note
            );
        }
        for r in &e.restarted {
            println!(
                "#{} round {} t={} {} restarted",
                e.seq,
                e.round,
                num(e.at_s, 0),
                printable(r)
            );
        }
    }
    Ok(())
}

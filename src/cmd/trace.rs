//! `tailor trace`: trace-file tools.
//!
//! `tailor trace inspect FILE...` prints, for each file, its detected table,
//! rows, time span, distinct jobs/tasks/machines, event types and request/usage
//! distributions (quantiles). Reads stream; .csv.gz works; `--json` prints
//! one JSON object per file (one per line).

use std::path::PathBuf;

use anyhow::Context;
use datasets::inspect::{inspect, TableKind};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum TraceCommand {
    /// Summarise trace files (Google 2011/2019, Alibaba 2018 and GPU lists,
    /// Bitbrains, series files, tailor's data files, agent recordings);
    /// says what any other file is.
    Inspect(InspectArgs),
}

#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    /// Files to summarise.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Table of every file (default: detected from the name and first line):
    /// task_events, job_events, machine_events, task_usage, instance_usage,
    /// container_usage, container_meta, machine_meta, gpu_instances,
    /// gpu_pods, gpu_nodes, bitbrains, series, usage_pool, distributions.
    /// Files that are no trace (Markdown, other JSON, configuration,
    /// binary, empty) are named as such, not failed.
    #[arg(long)]
    pub table: Option<String>,
    /// Skip and count malformed rows instead of stopping at the first one.
    #[arg(long)]
    pub lenient: bool,
    /// Print JSON (one object per file, one per line).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        TraceCommand::Inspect(a) => run_inspect(a),
    }
}

fn run_inspect(a: InspectArgs) -> anyhow::Result<()> {
    let table = match a.table.as_deref() {
        None => None,
        Some(t) => Some(TableKind::parse(t).with_context(|| {
            format!(
                "unknown --table {t:?} (expected task_events, job_events, machine_events, task_usage, \
                 instance_usage, container_usage, container_meta, machine_meta, gpu_instances, gpu_pods, \
                 gpu_nodes, bitbrains, series, usage_pool or distributions)"
            )
        })?),
    };
    for (i, f) in a.files.iter().enumerate() {
        if f.is_dir() {
            anyhow::bail!(
                "{} is a directory: `trace inspect` reads files (e.g. {}/*/*.csv); \
                 to replay a directory of Google 2019 task CSVs use `tailor replay --workload google2019:{}`, \
                 a directory of Alibaba GPU instance or pod lists `tailor replay --workload alibaba-gpu:{}`, \
                 a directory of Bitbrains VM files `tailor replay --workload bitbrains:{}`",
                f.display(),
                f.display(),
                f.display(),
                f.display(),
                f.display()
            );
        }
        if table.is_none() {
            if let Some(r) = recording_summary(f)? {
                if a.json {
                    println!("{}", serde_json::to_string(&r)?);
                } else {
                    if i > 0 {
                        println!();
                    }
                    print!("{}", r.text);
                }
                continue;
            }
        }
        let s =
            inspect(f, table, a.lenient).with_context(|| format!("inspecting {}", f.display()))?;
        if a.json {
            println!("{}", serde_json::to_string(&s)?);
        } else {
            if i > 0 {
                println!();
            }
            print!("{s}");
        }
    }
    Ok(())
}

/// What `trace inspect` says of an agent recording.
#[derive(serde::Serialize)]
struct RecordingSummary {
    path: String,
    kind: &'static str,
    node: String,
    interval_s: f64,
    actuation: String,
    rounds: usize,
    span_h: f64,
    containers: usize,
    applications: usize,
    oom_kills: usize,
    models_restored: bool,
    #[serde(skip)]
    text: String,
}

/// True when `path` is recognisably an agent recording: `*.jsonl[.gz]`
/// whose first record is a recording record (`"record": "header"`, or
/// `"round"` for a recording without its header).
fn is_recording(path: &std::path::Path) -> bool {
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains(".jsonl"));
    if !named {
        return false;
    }
    let Ok(mut r) = datasets::recording::RecordReader::open(path) else {
        return false;
    };
    matches!(
        r.read_next::<serde_json::Value>(),
        Ok(Some(v)) if matches!(v.get("record").and_then(|k| k.as_str()), Some("header" | "round"))
    )
}

/// A summary of `path` when it is an agent recording (see
/// [`is_recording`]), `Ok(None)` for any other file, and the recording's
/// own error (file and line) when it is one that cannot be read: a garbled
/// line, an unknown version, an invalid header.
fn recording_summary(path: &std::path::Path) -> anyhow::Result<Option<RecordingSummary>> {
    if !is_recording(path) {
        return Ok(None);
    }
    let rec = sim::recorded::read_recording(path)?;
    let mut containers = std::collections::BTreeSet::new();
    let mut apps = std::collections::BTreeSet::new();
    let mut oom_kills = 0;
    for r in &rec.rounds {
        for c in &r.containers {
            containers.insert(c.meta.id.as_str());
            apps.insert(c.meta.app.as_str());
        }
        oom_kills += r
            .events
            .iter()
            .filter(|e| matches!(e, shaper::record::KernelEvent::OomKill { .. }))
            .count();
    }
    let span_h = match (rec.rounds.first(), rec.rounds.last()) {
        (Some(a), Some(b)) => (b.at_s - a.at_s) / 3600.0,
        _ => 0.0,
    };
    let h = &rec.header;
    let text = format!(
        "{}: agent recording of node {} ({}, {}), every {} s\n  rounds: {} over {:.2} h\n  containers: {} in {} applications\n  OOM kills: {}\n  models restored at start: {}\n  replay it: tailor replay --workload recorded:{}\n",
        path.display(),
        h.node,
        h.actuation,
        h.mode,
        h.interval_s,
        rec.rounds.len(),
        span_h,
        containers.len(),
        apps.len(),
        oom_kills,
        if h.models.is_some() { "yes" } else { "no" },
        path.display()
    );
    Ok(Some(RecordingSummary {
        path: path.display().to_string(),
        kind: "agent_recording",
        node: h.node.clone(),
        interval_s: h.interval_s,
        actuation: h.actuation.clone(),
        rounds: rec.rounds.len(),
        span_h,
        containers: containers.len(),
        applications: apps.len(),
        oom_kills,
        models_restored: h.models.is_some(),
        text,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(version: u32) -> String {
        format!(
            r#"{{"record": "header", "version": {version}, "node": "n", "interval_s": 10.0, "actuation": "shape", "mode": "standalone", "shaper": {{}}, "forecaster": {{}}}}"#
        )
    }

    /// A damaged recording is reported with its own error (file and line),
    /// not as "not a trace"; another JSON-lines file is left to `inspect`.
    #[test]
    fn a_damaged_recording_is_an_error_naming_it() {
        let d = tempfile::tempdir().expect("tmp");
        let v = shaper::record::RECORD_VERSION;
        let cases = [
            (
                "garbled.jsonl",
                format!("{}\n{{\"record\": \"round\", oops\n", header(v)),
                "garbled.jsonl:2:",
            ),
            (
                "v99.jsonl",
                format!("{}\n", header(v + 98)),
                "record version",
            ),
            (
                "bad-header.jsonl",
                header(v).replace("10.0", "-1.0") + "\n",
                "interval_s must be in",
            ),
        ];
        for (name, text, want) in cases {
            let p = d.path().join(name);
            std::fs::write(&p, text).expect("write");
            let err = recording_summary(&p).err().expect(name).to_string();
            assert!(err.contains(name) && err.contains(want), "{name}: {err}");
        }
        let whole = d.path().join("ok.jsonl");
        std::fs::write(&whole, header(v) + "\n").expect("write");
        let s = recording_summary(&whole)
            .expect("readable")
            .expect("a recording");
        assert_eq!((s.rounds, s.kind), (0, "agent_recording"));
        let other = d.path().join("other.jsonl");
        std::fs::write(&other, "{\"a\": 1}\n").expect("write");
        assert!(recording_summary(&other).expect("not read").is_none());
    }
}

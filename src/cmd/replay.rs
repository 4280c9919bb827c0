//! `tailor replay`: simulate a workload under a shaping policy.
//!
//! With no argument: the bundled Google 2011 slice, pessimistic policy, GP
//! forecaster, K1 = 0.3, K2 = 3, against the baseline run of the same
//! workload; prints a human summary. Beside the baseline it runs the oracle
//! (exact forecasts, no buffer, `sim::oracle_of`) and shows the memory a
//! run reclaims in GiB-hours and as a share of the oracle's saving.

use std::path::PathBuf;

use shaper::Policy;
use sim::{Progress, SimConfig, Summary};

use crate::cmd::sim_args::SimArgs;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub sim: SimArgs,
    /// Constant buffer term, fraction of the request (default 0.05).
    #[arg(long)]
    pub k1: Option<f64>,
    /// Dynamic buffer term, sigmas (default 1).
    #[arg(long)]
    pub k2: Option<f64>,
    /// Seconds between shaping rounds (default 300).
    #[arg(long)]
    pub interval_s: Option<f64>,
    /// Print the summary (or, with --compare, every summary) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write a Markdown report with plots into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also run the optimistic and pessimistic policies (and the baseline)
    /// with the same forecaster, and compare them.
    #[arg(long)]
    pub compare: bool,
    /// Skip the baseline and oracle runs (no turnaround ratio, no saving).
    #[arg(long)]
    pub no_baseline: bool,
    /// With `--workload recorded:PATH`: replay the recording through the
    /// node kernel with the recorded configuration (or the `[shaper]` of
    /// `--config`) and compare every round's plan with the decisions the
    /// agent recorded; exits non-zero on any mismatch.
    #[arg(long)]
    pub check_parity: bool,
}

/// Builds the configuration from the file and the flags.
pub fn config_from(args: &Args) -> anyhow::Result<SimConfig> {
    let mut cfg = args.sim.base_config()?;
    if let Some(k) = args.k1 {
        cfg.shaper.k1 = k;
    }
    if let Some(k) = args.k2 {
        cfg.shaper.k2 = k;
    }
    if let Some(i) = args.interval_s {
        cfg.interval_s = i;
    }
    cfg.validate()?;
    Ok(cfg)
}

/// `--check-parity`: prints `parity: N rounds, M actions, K mismatches`
/// and every mismatch; an error when K > 0.
fn check_parity(args: &Args) -> anyhow::Result<()> {
    let Ok(sim::WorkloadSource::Recorded { path }) = args.sim.workload.parse() else {
        anyhow::bail!("--check-parity needs --workload recorded:PATH");
    };
    let rec = sim::recorded::read_recording(&path)?;
    let over = match (args.sim.config_file()?, &args.sim.config) {
        (Some(c), Some(p)) => {
            eprintln!(
                "parity: [shaper] of {} replaces the recorded kernel config",
                p.display()
            );
            Some(c.shaper)
        }
        _ => None,
    };
    let parity = sim::recorded::check_parity(&rec, over.as_ref())?;
    print!("{parity}");
    if !parity.mismatches.is_empty() {
        anyhow::bail!(
            "{} mismatches between the recorded and the replayed decisions",
            parity.mismatches.len()
        );
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    crate::cmd::sim_args::init_logging();
    if args.check_parity {
        return check_parity(&args);
    }
    let cfg = config_from(&args)?;
    let seeds = args.sim.seed_list(&cfg)?;
    if seeds.len() > 1 {
        return run_seeds(&args, &cfg, &seeds);
    }
    let workloads = args.sim.seeded_workloads(&seeds)?;
    let wl = workloads.first();
    // The workload is read before `--out` is made (as frontier and tune
    // do): bad input leaves no directory behind.
    if let Some(dir) = &args.out {
        crate::cmd::sim_args::prepare_out_dir(dir)?;
    }
    let (baseline, runs) = run_workload(&args, &cfg, wl)?;
    if let Some(dir) = &args.out {
        write_report(dir, &wl.name, baseline.as_ref(), &runs)?;
        eprintln!("report written to {}", dir.join("report.md").display());
    }
    if args.json {
        if args.compare {
            let mut all: Vec<&Summary> = Vec::new();
            if let Some(b) = &baseline {
                all.push(&b.summary);
            }
            all.extend(runs.iter().map(|r| &r.summary));
            println!("{}", serde_json::to_string_pretty(&all)?);
        } else {
            // The run's summary, with the baseline's under `baseline` (its
            // failed share and reserved GiB-h: what "the baseline + 0.1
            // points" is checked against).
            let mut v = serde_json::to_value(&runs[0].summary)?;
            if let (Some(b), Some(o)) = (&baseline, v.as_object_mut()) {
                o.insert("baseline".into(), serde_json::to_value(&b.summary)?);
            }
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
    } else {
        print_human(
            wl,
            baseline.as_ref().map(|b| &b.summary),
            &runs.iter().map(|r| &r.summary).collect::<Vec<_>>(),
        );
    }
    Ok(())
}

/// The baseline (unless `--no-baseline`) and the configured run(s) of
/// `--compare` on one workload.
fn run_workload(
    args: &Args,
    cfg: &SimConfig,
    wl: &datasets::workload::Workload,
) -> anyhow::Result<(Option<sim::RunResult>, Vec<sim::RunResult>)> {
    let with_baseline = !args.no_baseline;
    let mut configs = vec![cfg.clone()];
    if args.compare {
        configs.clear();
        for p in [Policy::Optimistic, Policy::Pessimistic] {
            let mut c = cfg.clone();
            c.shaper.policy = p;
            configs.push(c);
        }
    }
    let mut runs: Vec<sim::RunResult> = Vec::new();
    let mut baseline: Option<sim::RunResult> = None;
    let needs_baseline = with_baseline || args.compare;
    // The oracle's reserved memory, for the share of its saving that a run
    // reclaims: run beside the baseline.
    let mut oracle_mem_gib_h: Option<f64> = None;
    if needs_baseline && configs.iter().any(|c| c.shaper.policy != Policy::Baseline) {
        let b = run_one(wl, &sim::baseline_of(cfg), &args.sim)?;
        b.summary.check_ran().map_err(|e| args.sim.explain(e))?;
        baseline = Some(b);
        let o = run_one(wl, &sim::oracle_of(cfg), &args.sim)?;
        oracle_mem_gib_h = Some(o.summary.mem_alloc_gib_h);
    }
    for c in &configs {
        let mut r = if c.shaper.policy == Policy::Baseline {
            match &baseline {
                Some(b) => b.clone(),
                None => run_one(wl, c, &args.sim)?,
            }
        } else {
            run_one(wl, c, &args.sim)?
        };
        r.summary.check_ran().map_err(|e| args.sim.explain(e))?;
        if let Some(b) = &baseline {
            r.summary.set_baseline(b.summary.turnaround_mean_s);
            if let (Some(o), false) = (oracle_mem_gib_h, c.shaper.policy == Policy::Baseline) {
                r.summary.set_reclaim(b.summary.mem_alloc_gib_h, o);
            }
        }
        runs.push(r);
    }
    Ok((baseline, runs))
}

/// One column of a `--seeds` run: a label and its statistics over seeds.
#[derive(serde::Serialize)]
struct SeedColumn {
    label: String,
    #[serde(flatten)]
    stats: sim::seeds::SummaryStats,
}

/// `--seeds N > 1`: every run once per seed, then means with 95%
/// intervals per column (baseline and each configured run).
fn run_seeds(args: &Args, cfg: &SimConfig, seeds: &[u64]) -> anyhow::Result<()> {
    let workloads = args.sim.seeded_workloads(seeds)?;
    if let Some(dir) = &args.out {
        crate::cmd::sim_args::prepare_out_dir(dir)?;
    }
    let mut columns: Vec<(String, Vec<Summary>)> = Vec::new();
    workloads.for_each(|seed, wl| -> anyhow::Result<()> {
        let (baseline, runs) = run_workload(args, cfg, wl)?;
        if seed == seeds[0] {
            if let Some(dir) = &args.out {
                write_report(dir, &wl.name, baseline.as_ref(), &runs)?;
                eprintln!(
                    "report of the first seed ({}) written to {}",
                    seeds[0],
                    dir.join("report.md").display()
                );
            }
        }
        let all = report_runs(baseline.as_ref(), &runs).map(|r| &r.summary);
        for (col, s) in all.enumerate() {
            if columns.len() <= col {
                columns.push((column_label(s), Vec::new()));
            }
            columns[col].1.push(s.clone());
        }
        Ok(())
    })?;
    let stats: Vec<SeedColumn> = columns
        .iter()
        .map(|(label, runs)| SeedColumn {
            label: label.clone(),
            stats: sim::seeds::SummaryStats::of(seeds, &runs.iter().collect::<Vec<_>>()),
        })
        .collect();
    if args.json {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            seeds: &'a [u64],
            columns: &'a [SeedColumn],
            runs: Vec<&'a [Summary]>,
        }
        let out = Out {
            seeds,
            columns: &stats,
            runs: columns.iter().map(|(_, r)| r.as_slice()).collect(),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "workload {} over {} seeds {:?}: means ± 95% t-interval half-widths ([low, high] where the interval is clipped at 0 or 100%)",
        args.sim.workload,
        seeds.len(),
        seeds
    );
    let mut header = format!("  {:<28}", "");
    for c in &stats {
        header.push_str(&format!(" {:>27}", c.label));
    }
    println!("{header}");
    let pct = |x: f64| {
        if x.is_finite() {
            format!("{:.2}%", 100.0 * x)
        } else {
            "-".to_string()
        }
    };
    let num1 = |x: f64| {
        if x.is_finite() {
            gib_h(x)
        } else {
            "-".to_string()
        }
    };
    let ratio = |x: f64| {
        if x.is_finite() {
            format!("{x:.3}x")
        } else {
            "n/a".to_string()
        }
    };
    type Fmt<'a> = &'a dyn Fn(f64) -> String;
    let rows: [(&str, &str, Fmt); 12] = [
        ("failed apps", "failed_app_fraction", &pct),
        ("OOM component-days", "oom_component_day_fraction", &pct),
        ("reserved memory (GiB-h)", "mem_alloc_gib_h", &num1),
        ("memory reclaimed (GiB-h)", "mem_reclaimed_gib_h", &num1),
        ("share of oracle's saving", "oracle_capture", &pct),
        ("turnaround ratio", "turnaround_ratio", &ratio),
        ("memory slack mean", "mem_slack_mean", &pct),
        ("memory slack median", "mem_slack_median", &pct),
        ("cluster mem slack", "cluster_mem_slack", &pct),
        ("cluster cpu slack", "cluster_cpu_slack", &pct),
        ("evicted apps", "evicted_app_fraction", &pct),
        ("work lost (s)", "work_lost_s", &num1),
    ];
    for (name, key, f) in rows {
        let mut line = format!("  {name:<28}");
        for c in &stats {
            line.push_str(&format!(" {:>27}", c.stats.show(key, f)));
        }
        println!("{line}");
    }
    Ok(())
}

fn run_one(
    wl: &datasets::workload::Workload,
    cfg: &SimConfig,
    sim_args: &SimArgs,
) -> anyhow::Result<sim::RunResult> {
    let label = format!(
        "{}/{}",
        cfg.shaper.policy,
        if cfg.shaper.policy == Policy::Baseline {
            "-".to_string()
        } else {
            cfg.forecaster_label()
        }
    );
    let pb = sim_args.progress_bar(&label);
    let cb = |p: Progress| {
        if let Some(pb) = &pb {
            pb.set_length(p.apps_total as u64);
            pb.set_position(p.apps_done as u64);
            pb.set_message(format!("apps, t={:.0}s", p.now_s));
        }
    };
    let r = sim::simulate(wl, cfg, Some(&cb))?;
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    Ok(r)
}

fn fmt_s(x: f64) -> String {
    if !x.is_finite() {
        "-".to_string()
    } else if x >= 3600.0 {
        format!("{:.2} h", x / 3600.0)
    } else {
        format!("{x:.0} s")
    }
}

/// A run's column heading: `baseline`, else `policy+forecaster`.
fn column_label(s: &Summary) -> String {
    if s.policy == "baseline" {
        "baseline".to_string()
    } else {
        format!("{}+{}", s.policy, s.forecaster)
    }
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1}%", 100.0 * x)
    } else {
        "-".to_string()
    }
}

fn print_human(wl: &datasets::workload::Workload, baseline: Option<&Summary>, runs: &[&Summary]) {
    let comps: usize = wl.apps.iter().map(|a| a.components.len()).sum();
    println!(
        "workload {}: {} hosts, {} applications, {} components",
        wl.name,
        wl.hosts.len(),
        wl.apps.len(),
        comps
    );
    let mut cols: Vec<&Summary> = Vec::new();
    if let Some(b) = baseline {
        cols.push(b);
    }
    cols.extend(
        runs.iter()
            .copied()
            .filter(|r| r.policy != "baseline" || baseline.is_none()),
    );
    let header: Vec<String> = cols.iter().map(|s| column_label(s)).collect();
    let row = |name: &str, f: &dyn Fn(&Summary) -> String| {
        let mut line = format!("  {name:<26}");
        for s in &cols {
            // At least one space between columns, however wide a cell.
            line.push_str(&format!(" {:>21}", f(s)));
        }
        println!("{line}");
    };
    row("", &|s| {
        header[cols.iter().position(|c| std::ptr::eq(*c, s)).unwrap_or(0)].clone()
    });
    row("K1 / K2", &|s| format!("{} / {}", s.k1, s.k2));
    row("apps completed", &|s| {
        let mut notes = Vec::new();
        if s.apps_abandoned > 0 {
            notes.push(format!("{} abandoned", s.apps_abandoned));
        }
        if s.apps_rejected > 0 {
            // never placed: no host could ever hold them
            notes.push(format!("{} rejected", s.apps_rejected));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join(", "))
        };
        format!("{} / {}{notes}", s.apps_completed, s.apps - s.apps_rejected)
    });
    row("turnaround mean", &|s| fmt_s(s.turnaround_mean_s));
    row("turnaround median", &|s| fmt_s(s.turnaround_median_s));
    row("turnaround ratio (vs base)", &|s| {
        s.turnaround_ratio
            .map_or("n/a".to_string(), |r| format!("{r:.2}x"))
    });
    row("queueing mean", &|s| fmt_s(s.queueing_mean_s));
    row("memory slack mean/median", &|s| {
        format!("{} / {}", pct(s.mem_slack_mean), pct(s.mem_slack_median))
    });
    row("cpu slack mean/median", &|s| {
        format!("{} / {}", pct(s.cpu_slack_mean), pct(s.cpu_slack_median))
    });
    row("failed apps (crashed)", &|s| pct(s.failed_app_fraction));
    row("evicted apps", &|s| pct(s.evicted_app_fraction));
    row("OOM kills (host killer)", &|s| {
        format!("{} ({})", s.oom_kills, s.host_oom_kills)
    });
    row("evictions", &|s| s.evictions.to_string());
    row("resizes", &|s| s.resizes.to_string());
    row("work lost", &|s| fmt_s(s.work_lost_s));
    row("mean mem used / alloc", &|s| {
        format!(
            "{} / {}",
            pct(s.mean_used_mem_frac),
            pct(s.mean_alloc_mem_frac)
        )
    });
    row("cluster mem/cpu slack", &|s| {
        format!(
            "{} / {}",
            pct(s.cluster_mem_slack),
            pct(s.cluster_cpu_slack)
        )
    });
    row("reserved memory", &|s| {
        format!("{} GiB-h", gib_h(s.mem_alloc_gib_h))
    });
    row("memory reclaimed", &|s| match s.mem_reclaimed_gib_h {
        Some(r) => format!("{} GiB-h", gib_h(r)),
        None => "-".to_string(),
    });
    row("share of oracle's saving", &|s| match (
        s.oracle_capture,
        s.mem_reclaimed_gib_h,
        s.oracle_mem_alloc_gib_h,
    ) {
        (Some(c), Some(r), Some(o)) => {
            format!("{} of {} GiB-h", pct(c), gib_h(s.mem_alloc_gib_h + r - o))
        }
        _ => "-".to_string(),
    });
    row("OOM component-days", &|s| pct(s.oom_component_day_fraction));
    row("OOM kills per forecast round", &|s| {
        if s.oom_kills_per_forecast_round.is_finite() {
            format!("{:.3}%", 100.0 * s.oom_kills_per_forecast_round)
        } else {
            "-".to_string()
        }
    });
    row("forecasts own/prior/fallback", &|s| {
        if s.forecast_own_fraction.is_finite() {
            format!(
                "{} / {} / {}",
                pct(s.forecast_own_fraction),
                pct(s.forecast_prior_fraction),
                pct(s.forecast_fallback_fraction)
            )
        } else {
            "-".to_string()
        }
    });
    row("wall time", &|s| format!("{:.2} s", s.wall_s));
    row("events/s", &|s| format!("{:.0}", s.events_per_s));
    row("forecast updates/s", &|s| {
        format!("{:.0}", s.forecast_updates_per_s)
    });
}

/// The runs in report order: the baseline first (once), then the others.
fn report_runs<'a>(
    baseline: Option<&'a sim::RunResult>,
    runs: &'a [sim::RunResult],
) -> impl Iterator<Item = &'a sim::RunResult> {
    baseline.into_iter().chain(
        runs.iter()
            .filter(move |r| r.summary.policy != "baseline" || baseline.is_none()),
    )
}

/// Writes the Markdown report and plots of one workload's runs to `dir`.
fn write_report(
    dir: &std::path::Path,
    name: &str,
    baseline: Option<&sim::RunResult>,
    runs: &[sim::RunResult],
) -> anyhow::Result<()> {
    let all: Vec<&sim::RunResult> = report_runs(baseline, runs).collect();
    sim::report::write_report(dir, name, &all)?;
    Ok(())
}

/// GiB-hours with one decimal, or three significant digits below 1 (a
/// host's recording of minutes reserves a small fraction of a GiB-hour).
fn gib_h(x: f64) -> String {
    if x == 0.0 || x.abs() >= 1.0 {
        return format!("{x:.1}");
    }
    let digits = (2 - x.abs().log10().floor() as i32).clamp(1, 9) as usize;
    format!("{x:.digits$}")
}

#[cfg(test)]
mod gib_h_tests {
    use super::gib_h;

    #[test]
    fn small_amounts_keep_three_significant_digits() {
        assert_eq!(gib_h(486.7939), "486.8");
        assert_eq!(gib_h(0.0), "0.0");
        assert_eq!(gib_h(0.5), "0.500");
        assert_eq!(gib_h(0.001234), "0.00123");
        assert_eq!(gib_h(-0.0421), "-0.0421");
    }
}

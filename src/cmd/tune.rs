//! `tailor tune`: K1 x K2 sweep on a workload (thesis Fig. 4.4), in parallel
//! on all cores; heatmaps, CSV, and the best (K1, K2) under a failure budget
//! as a `[shaper]` TOML snippet, and `report.md` with the metric definitions.
//! A pick on the edge of the grid is warned about (stderr and report).

use std::path::PathBuf;

use sim::tune::{run_grid_seeds, write_outputs, DEFAULT_K1, DEFAULT_K2};

use crate::cmd::sim_args::SimArgs;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub sim: SimArgs,
    /// K1 values, comma-separated (default 0,0.01,0.05,0.1,0.2,0.5).
    #[arg(long, value_delimiter = ',')]
    pub k1: Option<Vec<f64>>,
    /// K2 values, comma-separated (default 0,1,2,3).
    #[arg(long, value_delimiter = ',')]
    pub k2: Option<Vec<f64>>,
    /// Failure budget: the best cell has at most this share of failed applications.
    #[arg(long, default_value_t = 0.01)]
    pub max_failed_fraction: f64,
    /// Output directory (grid.csv, grid.json, heatmaps, report.md, best.toml).
    #[arg(long, default_value = "tune-out")]
    pub out: PathBuf,
    /// Print the grid as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    crate::cmd::sim_args::init_logging();
    if !(args.max_failed_fraction.is_finite() && (0.0..=1.0).contains(&args.max_failed_fraction)) {
        anyhow::bail!(
            "--max-failed-fraction must be in [0, 1], got {}",
            args.max_failed_fraction
        );
    }
    let cfg = args.sim.base_config()?;
    cfg.validate()?;
    let seeds = args.sim.seed_list(&cfg)?;
    // Ascending, without duplicates: heatmap axes and edge warnings read
    // the lists in order.
    let sorted = |v: Vec<f64>| {
        let mut v = v;
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let k1 = sorted(args.k1.clone().unwrap_or_else(|| DEFAULT_K1.to_vec()));
    let k2 = sorted(args.k2.clone().unwrap_or_else(|| DEFAULT_K2.to_vec()));
    sim::tune::check_grid(&k1, &k2, seeds.len())?;
    // The workload is read before `--out` is made: bad input leaves no
    // empty directory behind.
    let workloads = args.sim.seeded_workloads(&seeds)?;
    crate::cmd::sim_args::prepare_out_dir(&args.out)?;
    let short_recording = short_recording_warning(workloads.first());
    if let Some(w) = &short_recording {
        eprintln!("warning: {w}");
    }
    let pb = args.sim.progress_bar("tune");
    let cb = |done: usize, total: usize| {
        if let Some(pb) = &pb {
            pb.set_length(total as u64);
            pb.set_position(done as u64);
        }
    };
    let grid = run_grid_seeds(workloads, &cfg, &k1, &k2, Some(&cb))?;
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    // QA E11: no figure of a grid in which nothing ran means anything
    for c in &grid.cells {
        c.summary.check_ran().map_err(|e| args.sim.explain(e))?;
    }
    let out = write_outputs(&args.out, &grid, &cfg.shaper, args.max_failed_fraction)?;
    for p in &out.problems {
        eprintln!("warning: plot not written: {p}");
    }
    for w in &out.warnings {
        eprintln!("warning: {w}");
    }
    let best = out.best;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&grid)?);
        return Ok(());
    }
    println!(
        "workload {}: {} cells ({} K1 x {} K2), policy {}, forecaster {}",
        grid.workload,
        grid.cells.len(),
        k1.len(),
        k2.len(),
        cfg.shaper.policy,
        cfg.forecaster_label()
    );
    println!(
        "baseline: mean turnaround {:.0} s, mean memory slack {:.1}%",
        grid.baseline.turnaround_mean_s,
        100.0 * grid.baseline.mem_slack_mean
    );
    if grid.seeds.len() > 1 {
        println!(
            "means over {} seeds {:?}, ± 95% t-interval half-widths",
            grid.seeds.len(),
            grid.seeds
        );
    }
    println!(
        "{:>8} {:>6} {:>18} {:>18} {:>18} {:>18}",
        "K1", "K2", "ratio", "mem slack", "failed", "reserved GiB-h"
    );
    for c in &grid.cells {
        let s = &c.summary;
        let stat = |key: &str, v: f64, f: &dyn Fn(f64) -> String| match &c.seeds {
            Some(st) => st.show(key, f),
            None => f(v),
        };
        println!(
            "{:>8} {:>6} {:>18} {:>18} {:>18} {:>18}",
            c.k1,
            c.k2,
            stat(
                "turnaround_ratio",
                s.turnaround_ratio.unwrap_or(f64::NAN),
                &|r| if r.is_finite() {
                    format!("{r:.2}x")
                } else {
                    "-".to_string()
                }
            ),
            stat("mem_slack_mean", s.mem_slack_mean, &|v| format!(
                "{:.1}%",
                100.0 * v
            )),
            stat("failed_app_fraction", s.failed_app_fraction, &|v| format!(
                "{:.2}%",
                100.0 * v
            )),
            stat("mem_alloc_gib_h", s.mem_alloc_gib_h, &|v| format!("{v:.1}")),
        );
    }
    match best {
        Some(b) => println!(
            "best under {:.2}% failed: K1 = {}, K2 = {} (ratio {:.2}x); written to {}",
            100.0 * args.max_failed_fraction,
            b.k1,
            b.k2,
            b.summary.turnaround_ratio.unwrap_or(f64::NAN),
            args.out.join("best.toml").display()
        ),
        None => println!(
            "no cell has at most {:.2}% failed applications; no best.toml written",
            100.0 * args.max_failed_fraction
        ),
    }
    println!(
        "report: {} (grid, heatmaps: {})",
        args.out.join("report.md").display(),
        args.out.display()
    );
    Ok(())
}

/// A host's recording shorter than a day says little about the sizing its
/// node needs (a daily peak, a weekly job may be missing from it).
fn short_recording_warning(w: &datasets::workload::Workload) -> Option<String> {
    const DAY_S: f64 = 86_400.0;
    if !w.name.starts_with("recorded:") {
        return None;
    }
    let span_s = w
        .apps
        .iter()
        .flat_map(|a| a.components.iter().map(move |c| a.arrival_s + c.work_s))
        .fold(0.0, f64::max);
    (span_s < DAY_S).then(|| {
        format!(
            "the recording covers {:.1} h: a sizing tuned on less than a day of the host's life may miss its daily peaks; record at least a day (better a week) before trusting best.toml",
            span_s / 3600.0
        )
    })
}

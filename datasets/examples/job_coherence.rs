//! Measures the job-level coherence of usage/request ratios on the real
//! Google 2011 task_usage sample joined with task_events part 0 (the
//! figures in `datasets/README.md`), and the same split on workloads whose
//! usage is drawn from the bundled pool.
//!
//! Usage: `cargo run -p datasets --example job_coherence -- [GOOGLE_2011_DIR]`
//! (default `../shared/data/google-2011`; the pool part runs without it).

use datasets::coherence::{cycle_ratio, sample_ratios_with, variance_split, Ratio, RequestRule};
use datasets::pool::{UsagePool, COHERENCE_MIN_TASKS};
use datasets::workload::Workload;
use std::path::PathBuf;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Within-job split of `log(peak memory / request)` (peak averaged over
/// one cycle of the shape, [`cycle_ratio`]) over the applications with at
/// least `COHERENCE_MIN_TASKS` components.
fn workload_split(w: &Workload) -> Option<datasets::coherence::VarianceSplit> {
    variance_split(
        w.apps.iter().flat_map(|a| {
            a.components
                .iter()
                .map(move |c| (a.id, cycle_ratio(c, true)))
        }),
        COHERENCE_MIN_TASKS,
    )
}

fn main() -> Res<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "../shared/data/google-2011".to_string()),
    );
    let te = dir.join("task_events/part-00000-of-00500.csv.gz");
    let tu = dir.join("task_usage/part-00000-of-00500.first10000rows.with-header.csv");
    if te.is_file() && tu.is_file() {
        for rule in [RequestRule::InForce, RequestRule::First] {
            let samples = sample_ratios_with(&[te.as_path()], &[tu.as_path()], false, rule)?;
            println!(
            "real sample ({}), request rule {rule:?}: {} tasks with a request; jobs with >= {COHERENCE_MIN_TASKS} tasks:",
            dir.display(),
            samples.len()
        );
            for ratio in [Ratio::MemPeak, Ratio::Mem, Ratio::Cpu] {
                match variance_split(
                samples.iter().filter_map(|t| Some((t.job_id, ratio.of(t)?))),
                COHERENCE_MIN_TASKS,
            ) {
                Some(s) => println!(
                    "  log({}): {} jobs, {} tasks, var {:.3}, job explains {:.1}% (within-job share {:.4})",
                    ratio.name(),
                    s.jobs,
                    s.tasks,
                    s.total_var,
                    100.0 * s.between_share(),
                    s.within_share
                ),
                None => println!("  log({}): fewer than 2 jobs", ratio.name()),
            }
            }
        }
    } else {
        println!(
            "skipped the real-sample measurement: {} or {} not found",
            te.display(),
            tu.display()
        );
    }
    let pool = UsagePool::bundled()?;
    if let Some(j) = &pool.ratios.job {
        println!(
            "bundled pool: measured within-job share {:.4} (peak memory), {:.4} (CPU)",
            j.measured_within_share_mem_peak, j.measured_within_share_cpu
        );
    }
    let bundled = datasets::bundled_workload()?;
    let synthetic = datasets::synthetic::generate(&datasets::synthetic::SyntheticConfig {
        apps: 3000,
        ..Default::default()
    })?;
    for (name, w) in [
        ("bundled workload", &bundled),
        ("synthetic:0:3000", &synthetic),
    ] {
        match workload_split(w) {
            Some(s) => println!(
                "{name}: log(mean in-interval peak memory / request): {} apps, {} components, job explains {:.1}% (within-job share {:.4})",
                s.jobs,
                s.tasks,
                100.0 * s.between_share(),
                s.within_share
            ),
            None => println!("{name}: fewer than 2 applications with >= {COHERENCE_MIN_TASKS} components"),
        }
    }
    Ok(())
}

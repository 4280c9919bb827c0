//! Job-level coherence: pool draws keep the within-job share of variance
//! measured on the real sample (always, against the figure recorded in the
//! bundled pool), and that figure matches a fresh measurement on
//! ../shared/data (skipped when absent).

mod common;
use common::shared;

use datasets::coherence::{sample_ratios, variance_split, Ratio, VarianceSplit};
use datasets::pool::{UsagePool, COHERENCE_MIN_TASKS};
use datasets::synthetic::{generate, SyntheticConfig};
use datasets::workload::{Resources, Workload};

/// Split of `log(x / request)` over apps with >= 5 components, `x` = the
/// in-interval memory peak (`peak = true`) or the mean CPU, averaged over
/// one cycle of the component's shape (the level a pool draw sets; siblings
/// share the shape and phase, so any single interval gives the same
/// within-job spread but adds the shape's between-job spread).
fn split(w: &Workload, peak: bool) -> VarianceSplit {
    variance_split(
        w.apps.iter().flat_map(|a| {
            a.components
                .iter()
                .map(move |c| (a.id, datasets::coherence::cycle_ratio(c, peak)))
        }),
        COHERENCE_MIN_TASKS,
    )
    .expect("at least 2 apps with 5 components")
}

/// Tolerance on the within-job share: sampling noise of a few hundred
/// generated jobs plus the clipping of usage at the request shift it by a
/// few points; independent per-task draws (the old pool) give ~0.9, far
/// outside.
const TOLERANCE: f64 = 0.03;

#[test]
fn generated_workloads_keep_the_measured_job_coherence() {
    let pool = UsagePool::bundled().expect("pool");
    let job = pool
        .ratios
        .job
        .clone()
        .expect("bundled pool has job coherence");
    let synthetic = generate(&SyntheticConfig {
        apps: 3000,
        ..Default::default()
    })
    .expect("synthetic");
    for (name, w) in [
        ("bundled", datasets::bundled_workload().expect("bundled")),
        ("synthetic", synthetic),
    ] {
        let m = split(&w, true);
        println!(
            "{name}: peak memory: {} apps, {} comps, within share {:.4} (measured {:.4})",
            m.jobs, m.tasks, m.within_share, job.measured_within_share_mem_peak
        );
        assert!(
            (m.within_share - job.measured_within_share_mem_peak).abs() <= TOLERANCE,
            "{name}: generated within-job share {:.4} vs measured {:.4}",
            m.within_share,
            job.measured_within_share_mem_peak
        );
        let c = split(&w, false);
        println!(
            "{name}: CPU: within share {:.4} (measured {:.4})",
            c.within_share, job.measured_within_share_cpu
        );
        assert!(
            (c.within_share - job.measured_within_share_cpu).abs() <= TOLERANCE,
            "{name}: generated CPU within-job share {:.4} vs measured {:.4}",
            c.within_share,
            job.measured_within_share_cpu
        );
    }
}

#[test]
fn independent_draws_lose_the_coherence() {
    // The same pool without the coherence (the old rule) draws each task's
    // ratio independently: the within-job share is then large, so the test
    // above can fail.
    let mut pool = UsagePool::bundled().expect("pool");
    pool.ratios.job = None;
    let req = Resources::new(1.0, 1e9);
    let w = variance_split(
        (0..200u64).flat_map(|job| {
            let pool = &pool;
            (0..10u64).map(move |t| {
                let c = datasets::workload::ComponentSpec::new(
                    datasets::workload::Class::Core,
                    req,
                    1.0,
                    pool.usage_for_task(job, t, 0, req, datasets::pool::PoolPhase::Job),
                );
                (job, datasets::coherence::cycle_ratio(&c, true))
            })
        }),
        COHERENCE_MIN_TASKS,
    )
    .expect("split");
    println!("independent draws: within share {:.4}", w.within_share);
    assert!(w.within_share > 0.5, "{w:?}");
}

#[test]
fn bundled_figure_matches_the_real_sample() {
    let Some(d) = shared() else { return };
    let g = d.join("google-2011");
    let te = g.join("task_events/part-00000-of-00500.csv.gz");
    let tu = g.join("task_usage/part-00000-of-00500.first10000rows.with-header.csv");
    let samples = sample_ratios(&[te.as_path()], &[tu.as_path()], false).expect("sample");
    let peak = variance_split(
        samples
            .iter()
            .filter_map(|t| Some((t.job_id, Ratio::MemPeak.of(t)?))),
        COHERENCE_MIN_TASKS,
    )
    .expect("split");
    println!(
        "real sample: {} jobs, {} tasks, job explains {:.2}% of var log(peak memory / request)",
        peak.jobs,
        peak.tasks,
        100.0 * peak.between_share()
    );
    // 105 jobs with >= 5 tasks, 9,000 tasks; the job explains 87.4%.
    assert!(peak.jobs >= 100 && peak.tasks >= 8000, "{peak:?}");
    assert!(peak.between_share() > 0.8, "{peak:?}");
    let pool = UsagePool::bundled().expect("pool");
    let job = pool.ratios.job.expect("coherence");
    assert!(
        (job.measured_within_share_mem_peak - peak.within_share).abs() < 1e-5,
        "bundled pool records {} but the sample gives {}",
        job.measured_within_share_mem_peak,
        peak.within_share
    );
}

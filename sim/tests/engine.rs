//! Engine behaviour on small hand-built workloads.

use shaper::Policy;
use sim::{simulate, ForecasterSource};
use tailor_core::{Class, Resources};

mod engine_common;
use engine_common::*;

#[test]
fn single_app_runs_its_work_under_baseline() {
    let wl = one_host(
        4.0,
        100.0,
        vec![app(
            1,
            100.0,
            vec![comp(Class::Core, 1.0, 10.0, 1000.0, &[0.5], &[0.5])],
        )],
    );
    let r = simulate(&wl, &cfg(Policy::Baseline, ForecasterSource::Oracle), None).expect("run");
    let s = &r.summary;
    assert_eq!(s.apps_completed, 1);
    assert!(
        (s.turnaround_mean_s - 1000.0).abs() < 1e-6,
        "{}",
        s.turnaround_mean_s
    );
    assert_eq!(s.oom_kills, 0);
    // Usage is half the request all along: slack 0.5 for both resources.
    assert!(
        (s.mem_slack_mean - 0.5).abs() < 1e-9,
        "{}",
        s.mem_slack_mean
    );
    assert!((s.cpu_slack_mean - 0.5).abs() < 1e-9);
}

#[test]
fn fifo_queueing_by_allocation() {
    // Each app reserves 60 of 100 memory: the second waits for the first.
    let wl = one_host(
        8.0,
        100.0,
        vec![
            app(
                1,
                0.0,
                vec![comp(Class::Core, 1.0, 60.0, 1000.0, &[1.0], &[0.1])],
            ),
            app(
                2,
                10.0,
                vec![comp(Class::Core, 1.0, 60.0, 500.0, &[1.0], &[0.1])],
            ),
        ],
    );
    let r = simulate(&wl, &cfg(Policy::Baseline, ForecasterSource::Oracle), None).expect("run");
    let mut out = r.metrics.apps.clone();
    out.sort_by_key(|a| a.id);
    assert_eq!(out[0].turnaround_s(), Some(1000.0));
    // Admitted at 1000, runs 500: turnaround 1490, of which 990 queued.
    assert!((out[1].turnaround_s().expect("done") - 1490.0).abs() < 1e-6);
    assert!((out[1].queued_s - 990.0).abs() < 1e-6);
}

#[test]
fn rejected_when_never_fits() {
    let wl = one_host(
        2.0,
        10.0,
        vec![
            app(
                1,
                0.0,
                vec![comp(Class::Core, 4.0, 1.0, 10.0, &[1.0], &[1.0])],
            ),
            app(
                2,
                0.0,
                vec![comp(Class::Core, 1.0, 1.0, 10.0, &[1.0], &[1.0])],
            ),
        ],
    );
    let r = simulate(&wl, &cfg(Policy::Baseline, ForecasterSource::Oracle), None).expect("run");
    assert_eq!(r.summary.apps_rejected, 1);
    assert_eq!(r.summary.apps_completed, 1);
}

#[test]
fn elastic_components_wait_for_room() {
    // Core 50 mem + two elastic 40 each on a 100 host: one elastic waits.
    let wl = one_host(
        8.0,
        100.0,
        vec![app(
            1,
            0.0,
            vec![
                comp(Class::Core, 1.0, 50.0, 1000.0, &[1.0], &[0.5]),
                comp(Class::Elastic, 1.0, 40.0, 400.0, &[1.0], &[0.5]),
                comp(Class::Elastic, 1.0, 40.0, 400.0, &[1.0], &[0.5]),
            ],
        )],
    );
    let r = simulate(&wl, &cfg(Policy::Baseline, ForecasterSource::Oracle), None).expect("run");
    // Second elastic starts at 400 and ends at 800; core ends at 1000.
    assert_eq!(r.metrics.apps[0].finished_s, Some(1000.0));
    let wl2 = one_host(
        8.0,
        100.0,
        vec![app(
            1,
            0.0,
            vec![
                comp(Class::Core, 1.0, 50.0, 500.0, &[1.0], &[0.5]),
                comp(Class::Elastic, 1.0, 40.0, 400.0, &[1.0], &[0.5]),
                comp(Class::Elastic, 1.0, 40.0, 400.0, &[1.0], &[0.5]),
            ],
        )],
    );
    let r2 = simulate(&wl2, &cfg(Policy::Baseline, ForecasterSource::Oracle), None).expect("run");
    assert_eq!(r2.metrics.apps[0].finished_s, Some(800.0));
}

#[test]
fn oracle_pessimistic_never_crashes_optimistic_does() {
    let wl = spike_workload(8);
    let mut pes = cfg(Policy::Pessimistic, ForecasterSource::Oracle);
    pes.shaper.min_relative_change = 0.0;
    let mut opt = pes.clone();
    opt.shaper.policy = Policy::Optimistic;
    let p = simulate(&wl, &pes, None).expect("pessimistic");
    let o = simulate(&wl, &opt, None).expect("optimistic");
    let b =
        simulate(&wl, &cfg(Policy::Baseline, ForecasterSource::Oracle), None).expect("baseline");
    assert_eq!(p.summary.apps_completed, 8);
    assert_eq!(o.summary.apps_completed, 8);
    assert_eq!(p.summary.oom_kills, 0, "{:?}", p.summary);
    assert_eq!(p.summary.failed_app_fraction, 0.0);
    assert!(
        p.summary.evictions > 0,
        "the spike forces evictions: {:?}",
        p.summary
    );
    assert!(o.summary.failed_app_fraction > 0.0, "{:?}", o.summary);
    assert!(o.summary.host_oom_kills > 0);
    // Shaping cuts memory slack.
    assert!(
        p.summary.mem_slack_mean < b.summary.mem_slack_mean,
        "{} vs {}",
        p.summary.mem_slack_mean,
        b.summary.mem_slack_mean
    );
}

#[test]
fn runs_are_deterministic() {
    let wl = spike_workload(8);
    let mut c = cfg(Policy::Optimistic, ForecasterSource::Oracle);
    c.parallel_forecasts = true;
    let a = simulate(&wl, &c, None).expect("a");
    let b = simulate(&wl, &c, None).expect("b");
    assert_eq!(a.metrics.apps, b.metrics.apps);
    assert_eq!(a.metrics.timeline, b.metrics.timeline);
    assert_eq!(a.metrics.mem_slack, b.metrics.mem_slack);
    assert_eq!(a.summary.oom_kills, b.summary.oom_kills);
}

#[test]
fn cpu_below_demand_slows_down() {
    // Baseline never slows down (usage is clipped at the request).
    // Starts at 100 s: its samples change between rounds (rounds at k * 300 s).
    let wl = one_host(
        4.0,
        100.0,
        vec![app(
            1,
            100.0,
            vec![comp(
                Class::Core,
                2.0,
                10.0,
                3000.0,
                &[0.1, 0.1, 0.1, 1.0],
                &[0.5],
            )],
        )],
    );
    let b =
        simulate(&wl, &cfg(Policy::Baseline, ForecasterSource::Oracle), None).expect("baseline");
    assert_eq!(b.metrics.apps[0].finished_s, Some(3100.0));
    // Last-value model, no grace, no buffer: allocation follows the 0.1
    // usage, so the jump to 1.0 runs at alloc/demand < 1 until the next round.
    let mut c = cfg(Policy::Pessimistic, ForecasterSource::Model);
    c.forecaster.kind = forecaster::config::ModelKind::Last;
    c.forecaster.calibrated = false;
    c.shaper.min_history_samples = 1;
    c.shaper.grace_period_s = 0.0;
    c.shaper.k1 = 0.0;
    c.shaper.k2 = 0.0;
    c.shaper.min_relative_change = 0.0;
    let s = simulate(&wl, &c, None).expect("shaped");
    let f = s.metrics.apps[0].finished_s.expect("done");
    assert!(
        f > 3100.0,
        "finished at {f}: {:?} resizes {}",
        s.summary,
        s.metrics.resizes
    );
}

/// An in-place request change of the trace (Google 2019) takes effect at
/// its sample: the baseline's allocation follows it, and usage is clipped
/// to the request in force, not to the first one.
#[test]
fn request_changes_move_the_baseline_allocation() {
    let mut c = comp(
        Class::Core,
        1.0,
        10.0,
        1200.0,
        &[0.5],
        &[0.5, 0.5, 1.5, 1.5],
    );
    c.request_changes = vec![datasets::workload::RequestChange {
        at_elapsed_s: 600.0,
        request: Resources::new(1.0, 20.0 * MIB),
    }];
    let wl = one_host(4.0, 100.0, vec![app(1, 0.0, vec![c])]);
    let r = simulate(&wl, &cfg(Policy::Baseline, ForecasterSource::Oracle), None).expect("run");
    assert_eq!(r.metrics.request_changes, 1);
    assert_eq!(r.summary.oom_kills, 0, "the baseline never fails");
    // 10 units for the first 600 s, 20 for the last 600 s
    assert!(
        (r.metrics.mem_alloc_byte_s - 18_000.0 * MIB).abs() < 1e-3,
        "{}",
        r.metrics.mem_alloc_byte_s
    );
    // usage above the first request (15 of 20) is seen, not clipped to 10
    let used_max = r
        .metrics
        .timeline
        .iter()
        .map(|p| p.used_mem_frac)
        .fold(0.0, f64::max);
    assert!((used_max - 0.15).abs() < 1e-9, "{used_max}");

    // Shaped by the oracle: the change re-specifies the container at its
    // new request and the models restart from it, so nothing is killed.
    let mut shaped = cfg(Policy::Pessimistic, ForecasterSource::Oracle);
    shaped.shaper.k1 = 0.0;
    shaped.shaper.k2 = 0.0;
    shaped.shaper.grace_period_s = 0.0;
    let r = simulate(&wl, &shaped, None).expect("run");
    assert_eq!(r.metrics.request_changes, 1);
    assert_eq!(r.summary.oom_kills, 0);
    assert!(
        r.metrics.mem_alloc_byte_s < 18_000.0 * MIB,
        "{}",
        r.metrics.mem_alloc_byte_s
    );
}

#[test]
fn an_empty_cluster_skips_its_rounds_to_the_next_start() {
    // An application, then nothing for ~32 years (a damaged trace's far
    // arrival and a run delayed as long): the engine goes from one start
    // to the next instead of spinning through a round every 300 s.
    const FAR_S: f64 = 1e9;
    let mut delayed = comp(Class::Core, 1.0, 10.0, 1000.0, &[0.5], &[0.5]);
    delayed.start_delay_s = FAR_S;
    let wl = one_host(
        4.0,
        100.0,
        vec![
            app(
                1,
                100.0,
                vec![comp(Class::Core, 1.0, 10.0, 1000.0, &[0.5], &[0.5])],
            ),
            app(
                2,
                FAR_S,
                vec![
                    comp(Class::Core, 1.0, 10.0, 1000.0, &[0.5], &[0.5]),
                    delayed,
                ],
            ),
        ],
    );
    let r = simulate(
        &wl,
        &cfg(Policy::Pessimistic, ForecasterSource::Oracle),
        None,
    )
    .expect("run");
    assert_eq!(r.summary.apps_completed, 2);
    assert!(
        (r.summary.turnaround_mean_s - (1000.0 + (FAR_S + 1000.0)) / 2.0).abs() < 1.0,
        "{}",
        r.summary.turnaround_mean_s
    );
    assert!(r.metrics.rounds < 50, "{} rounds", r.metrics.rounds);
    assert!(r.metrics.timeline.len() < 50);
    // The skipped time counts as an empty cluster in the time averages:
    // 5 of 100 memory units used for ~3,000 s of ~2e9 s.
    let used = r.summary.mean_used_mem_frac;
    assert!(used > 0.0 && used < 1e-6, "{used}");
}

#[test]
fn delayed_components_start_after_their_delay() {
    // Two runs of one task: the second starts 600 s after the first, as in
    // a Google 2019 job; the host has room for only one at a time.
    let first = comp(Class::Core, 1.0, 10.0, 600.0, &[0.5], &[0.5]);
    let mut second = comp(Class::Core, 1.0, 10.0, 1000.0, &[0.5], &[0.5]);
    second.start_delay_s = 600.0;
    let wl = one_host(1.0, 10.0, vec![app(1, 100.0, vec![first, second])]);
    let r = simulate(&wl, &cfg(Policy::Baseline, ForecasterSource::Oracle), None).expect("run");
    assert_eq!(r.summary.apps_completed, 1);
    assert_eq!(
        r.summary.apps_rejected, 0,
        "admitted without the delayed run"
    );
    // 600 s of the first run, then 1000 s of the second
    assert!(
        (r.summary.turnaround_mean_s - 1600.0).abs() < 1e-6,
        "{}",
        r.summary.turnaround_mean_s
    );
    // never both at once: 10 units reserved for 1,600 s
    assert!(
        (r.metrics.mem_alloc_byte_s - 16_000.0 * MIB).abs() < 1e-3,
        "{}",
        r.metrics.mem_alloc_byte_s
    );

    // A delayed run that finds no room waits for it, then runs.
    let first = comp(Class::Core, 1.0, 10.0, 1000.0, &[0.5], &[0.5]);
    let mut second = comp(Class::Core, 1.0, 10.0, 1000.0, &[0.5], &[0.5]);
    second.start_delay_s = 300.0;
    let wl = one_host(1.0, 10.0, vec![app(1, 0.0, vec![first, second])]);
    let r = simulate(&wl, &cfg(Policy::Baseline, ForecasterSource::Oracle), None).expect("run");
    assert!(
        (r.summary.turnaround_mean_s - 2000.0).abs() < 1e-6,
        "{}",
        r.summary.turnaround_mean_s
    );
}

#[test]
fn an_application_over_max_restarts_is_abandoned_and_failed() {
    // Two applications that each fit the host alone, with memory that
    // swings between 10% and 95% of their requests. Optimistic shaping
    // (no buffer) lets both in while they are low; when both swing high the
    // host OOM killer kills one, again after every restart. With
    // `max_restarts = 1` an application killed a second time is given up:
    // it counts as failed and is not run again.
    let mut mem = vec![0.1f32; 3];
    mem.extend([0.95f32; 3]);
    let periodic = |i| {
        app(
            i,
            i as f64,
            vec![comp(Class::Core, 1.0, 90.0, 36_000.0, &[0.5], &mem)],
        )
    };
    let wl = one_host(16.0, 100.0, vec![periodic(0), periodic(1)]);
    let mut c = cfg(Policy::Optimistic, ForecasterSource::Oracle);
    c.shaper.min_relative_change = 0.0;
    c.shaper.failure_limit = 1_000_000;
    c.shaper.k1 = 0.0;
    c.shaper.k2 = 0.0;
    let free = simulate(&wl, &c, None).expect("run");
    c.max_restarts = 1;
    let capped = simulate(&wl, &c, None).expect("run");
    let most = |r: &sim::RunResult| r.metrics.apps.iter().map(|a| a.crashes).max();
    assert!(
        most(&free) > Some(1),
        "some app is killed twice: {:?}",
        free.summary
    );
    let s = &capped.summary;
    assert!(s.apps_abandoned > 0, "{s:?}");
    assert_eq!(s.apps_completed + s.apps_abandoned, 2, "{s:?}");
    for a in &capped.metrics.apps {
        // All components are core: every failure is a crash.
        assert_eq!(a.abandoned, a.crashes > 1, "{a:?}");
        assert!(
            a.crashes <= 2 && (a.finished_s.is_some() != a.abandoned),
            "{a:?}"
        );
    }
    let failed = capped.metrics.apps.iter().filter(|a| a.crashes > 0).count();
    assert!((s.failed_app_fraction - failed as f64 / 2.0).abs() < 1e-12);
}

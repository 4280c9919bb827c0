//! Engine behaviour around OOM kills, evictions and restarts, on small
//! hand-built workloads.

use datasets::workload::{OomRestart, Workload};
use shaper::Policy;
use sim::{simulate, ForecasterSource, SimConfig};
use tailor_core::{Class, Resources};

mod engine_common;
use engine_common::*;

/// One core task flat at 0.3 GiB and three elastic ones whose memory
/// jumps from 0.3 to `spike` GiB at their 7th sample, the `i`-th elastic
/// one starting `delay_s(i)` after the job, on a host with room for all.
fn spiky_job(spike: f32, delay_s: impl Fn(usize) -> f64) -> Workload {
    let gib = f64::from(1u32 << 30);
    let mut spiky = vec![0.3f32; 20];
    spiky[6] = spike;
    let mut comps = vec![comp(Class::Core, 1.0, gib, 6000.0, &[0.5], &[0.3])];
    comps.extend((0..3).map(|i| {
        let mut c = comp(Class::Elastic, 1.0, gib, 6000.0, &[0.5], &spiky);
        c.start_delay_s = delay_s(i);
        c
    }));
    one_host(16.0, 16.0 * gib, vec![app(1, 0.0, comps)])
}

/// `last` with no buffer, no hysteresis and no failure limit: each
/// component is sized at its history.
fn last_no_buffer() -> SimConfig {
    let mut c = cfg(Policy::Pessimistic, ForecasterSource::Model);
    c.forecaster.kind = forecaster::config::ModelKind::Last;
    c.shaper.k1 = 0.0;
    c.shaper.k2 = 0.0;
    c.shaper.min_relative_change = 0.0;
    c.shaper.failure_limit = 1_000_000;
    c
}

#[test]
fn components_killed_in_the_same_sample_are_one_restart() {
    // One core task and three elastic ones whose memory spikes together at
    // their 7th sample. `last` with no buffer sizes them at their history:
    // the spike kills the three at once (and their re-runs, from the
    // start, again together). Each such sample is one restart of the
    // application, not three: with `max_restarts` below the number of
    // kills it is not given up (a job whose thousand tasks crossed their
    // allocations in one sample was abandoned, and its memory never
    // reserved again).
    let wl = spiky_job(0.9, |_| 0.0);
    let mut c = last_no_buffer();
    let free = simulate(&wl, &c, None).expect("run").summary;
    assert!(free.oom_kills >= 3, "the three spike together: {free:?}");
    assert_eq!(free.apps_completed, 1, "{free:?}");
    c.max_restarts = u32::try_from(free.oom_kills / 3).expect("small");
    let s = simulate(&wl, &c, None).expect("run").summary;
    assert_eq!(s.apps_abandoned, 0, "{s:?}");
    assert_eq!(s.apps_completed, 1, "{s:?}");
    assert_eq!(s.oom_kills, free.oom_kills, "{s:?}");
    // Every kill still counts for the shaper's failure limit.
    c.max_restarts = 1_000_000;
    c.shaper.failure_limit = 3;
    let limited = simulate(&wl, &c, None).expect("run");
    assert_eq!(limited.summary.apps_completed, 1, "{:?}", limited.summary);
}

#[test]
fn later_siblings_are_held_at_the_kill_mark_past_the_age_of_the_kill() {
    // Three elastic tasks of one job spike at their 7th sample, from 0.3
    // to 0.35 GiB; the first starts with the job and dies at 1,800 s, the
    // other two start at 3,000 s. Nothing of their own or of their
    // siblings' history foretells the spike, but younger than the first
    // was at its kill they are held at its mark (the limit that killed
    // it, bumped by at least 100 MiB), so it passes: one kill in all.
    // Without any memory hold (the kill hold is one of them) each meets it.
    let wl = spiky_job(0.35, |i| if i == 0 { 0.0 } else { 3000.0 });
    let mut c = last_no_buffer();
    let held = simulate(&wl, &c, None).expect("run").summary;
    assert_eq!(held.oom_kills, 1, "{held:?}");
    assert_eq!(held.apps_completed, 1, "{held:?}");
    c.shaper.mem_hold_s = 0.0;
    let free = simulate(&wl, &c, None).expect("run").summary;
    assert_eq!(free.oom_kills, 3, "{free:?}");
}

#[test]
fn an_older_sibling_keeps_room_for_the_rise_that_killed_a_younger_one() {
    // Two elastic tasks of one job rise from 0.3 to 0.35 GiB for one
    // sample, each at its own age: the first (started with the job) at its
    // 7th sample, the second (started 300 s later) at its 13th. `last`
    // with no buffer kills the first at its rise. The second is then
    // older than the first was at its kill, so the kill hold has let it go
    // by the time it rises, and it dies there too. With `sibling_jump` the
    // kill is a jump of the job (its mark, 0.3 GiB + 100 MiB, above the
    // killed task's own peak): the second keeps that much room above its
    // own peak and passes.
    let gib = f64::from(1u32 << 30);
    let rise_at = |i: usize| {
        let mut m = vec![0.3f32; 20];
        m[i] = 0.35;
        m
    };
    let first = comp(Class::Elastic, 1.0, gib, 6000.0, &[0.5], &rise_at(6));
    let mut second = comp(Class::Elastic, 1.0, gib, 6000.0, &[0.5], &rise_at(12));
    second.start_delay_s = 300.0;
    let core = comp(Class::Core, 1.0, gib, 6000.0, &[0.5], &[0.3]);
    let wl = one_host(
        16.0,
        16.0 * gib,
        vec![app(1, 0.0, vec![core, first, second])],
    );
    let mut c = last_no_buffer();
    c.shaper.sibling_hold_s = 0.0;
    c.shaper.sibling_jump = false;
    let alone = simulate(&wl, &c, None).expect("run").summary;
    assert_eq!(alone.oom_kills, 2, "{alone:?}");
    c.shaper.sibling_jump = true;
    let jump = simulate(&wl, &c, None).expect("run").summary;
    assert_eq!(jump.oom_kills, 1, "{jump:?}");
    assert_eq!(jump.apps_completed, 1, "{jump:?}");
}

#[test]
fn a_task_killed_below_its_request_re_runs_at_its_request() {
    // One core task flat at 0.1 GiB of its 1 GiB request steps to 0.9 GiB
    // at its 7th sample. `last` with no buffer cuts it to ~0.1 GiB and the
    // step kills it. The kill says only that the cut was too deep (the
    // peak is censored at the limit), so its re-run is held at its
    // request: one kill. Bumped from the cut instead (+100 MiB or x1.2, the
    // VPA's rule for a request), the re-run was killed at every bump.
    let gib = f64::from(1u32 << 30);
    let mut step = vec![0.1f32; 20];
    step[6..].fill(0.9);
    let wl = one_host(
        16.0,
        16.0 * gib,
        vec![app(
            1,
            0.0,
            vec![comp(Class::Core, 1.0, gib, 6000.0, &[0.5], &step)],
        )],
    );
    let s = simulate(&wl, &last_no_buffer(), None).expect("run").summary;
    assert_eq!(s.oom_kills, 1, "{s:?}");
    assert_eq!(s.apps_completed, 1, "{s:?}");
}

#[test]
fn a_restarted_component_starts_from_its_own_history() {
    // The spike kills the three elastic tasks at their 7th sample; each
    // re-runs from its start. The next run's models are rebuilt from the
    // samples the killed run's models had seen (as the agent rebuilds a
    // container recreated under the same name), so the re-runs forecast
    // from their own models at once: the run makes no more forecasts from
    // priors than a run without the spike, where nothing is killed (22
    // instead of 4 when every run started from nothing).
    let c = last_no_buffer();
    let killed = simulate(&spiky_job(0.9, |_| 0.0), &c, None).expect("run");
    let calm = simulate(&spiky_job(0.3, |_| 0.0), &c, None).expect("run");
    assert!(killed.summary.oom_kills >= 3, "{:?}", killed.summary);
    assert_eq!(calm.summary.oom_kills, 0, "{:?}", calm.summary);
    let (k, m) = (&killed.metrics, &calm.metrics);
    assert!(
        k.forecasts_shown > m.forecasts_shown,
        "the re-runs forecast"
    );
    assert!(m.forecasts_prior > 0, "a first run starts from priors");
    assert_eq!(k.forecasts_prior, m.forecasts_prior, "prior forecasts");
}

#[test]
fn a_re_run_sibling_is_held_at_the_kill_of_its_own_age() {
    // Two core tasks of one batch job with the same shape, the second
    // started one sample later; both rise from 0.3 to 0.38 GiB at their
    // 7th sample. `last` with no buffer kills the first there, and the job
    // re-runs. The kill's mark (0.3 GiB + 100 MiB) holds its sibling
    // through the age it was killed at, counted in the re-run's own
    // samples: the 6 samples the sibling inherits from its killed run warm
    // its models but do not make it older (they did, and it was killed in
    // the re-run at the same rise).
    let gib = f64::from(1u32 << 30);
    let mut rise = vec![0.3f32; 20];
    for v in &mut rise[6..] {
        *v = 0.38;
    }
    let mut first = comp(Class::Core, 1.0, gib, 6000.0, &[0.5], &rise);
    first.oom_restart = OomRestart::Application;
    let mut second = first.clone();
    second.start_delay_s = 300.0;
    let wl = one_host(16.0, 16.0 * gib, vec![app(1, 0.0, vec![first, second])]);
    let r = simulate(&wl, &last_no_buffer(), None).expect("run");
    assert_eq!(r.summary.oom_kills, 1, "{:?}", r.summary);
    assert_eq!(r.summary.apps_completed, 1, "{:?}", r.summary);
    assert_eq!(r.metrics.apps[0].crashes, 1);
}

#[test]
fn an_oom_killed_service_task_restarts_alone_where_it_was() {
    // Two tasks of one service; task 0's memory spikes at its 7th sample.
    // `last` with no buffer sizes it at its history: the spike kills it.
    let mut spiky = vec![0.3f32; 20];
    spiky[6] = 0.9;
    let wl = |restart: OomRestart| {
        // GiB: the OOM floor after a kill adds at least 100 MiB.
        let gib = f64::from(1u32 << 30);
        let mut a = comp(Class::Core, 1.0, gib, 6000.0, &[0.5], &spiky);
        let mut b = comp(Class::Core, 1.0, gib, 6000.0, &[0.5], &[0.3]);
        a.oom_restart = restart;
        b.oom_restart = restart;
        one_host(16.0, 16.0 * gib, vec![app(1, 0.0, vec![a, b])])
    };
    let mut c = cfg(Policy::Pessimistic, ForecasterSource::Model);
    c.forecaster.kind = forecaster::config::ModelKind::Last;
    c.shaper.k1 = 0.0;
    c.shaper.k2 = 0.0;
    c.shaper.min_relative_change = 0.0;
    let batch = simulate(&wl(OomRestart::Application), &c, None).expect("run");
    let service = simulate(&wl(OomRestart::Component), &c, None).expect("run");
    // The simulator's `oom_restart` overrides the workload's.
    let mut forced = c.clone();
    forced.oom_restart = Some(OomRestart::Component);
    let overridden = simulate(&wl(OomRestart::Application), &forced, None).expect("run");
    assert_eq!(overridden.metrics.apps, service.metrics.apps);
    forced.oom_restart = Some(OomRestart::Application);
    let overridden = simulate(&wl(OomRestart::Component), &forced, None).expect("run");
    assert_eq!(overridden.metrics.apps, batch.metrics.apps);
    for r in [&batch, &service] {
        assert!(r.summary.oom_kills >= 1, "{:?}", r.summary);
        assert_eq!(r.summary.apps_completed, 1, "{:?}", r.summary);
        // a crash either way
        assert_eq!(r.summary.failed_app_fraction, 1.0, "{:?}", r.summary);
    }
    // The application re-runs: both tasks' work is lost and done again.
    let s = &batch.summary;
    assert!(s.work_lost_s >= 2.0 * 1800.0 - 1e-6, "{s:?}");
    assert!(s.turnaround_mean_s >= 6000.0 + 1800.0 - 1e-6, "{s:?}");
    // The service: task 0 alone restarts at the sample it was killed in,
    // at its request, so the spike passes; nothing is lost or re-run, and
    // it finishes when it would have (plus the spike's sample lived again).
    let s = &service.summary;
    assert_eq!(s.oom_kills, 1, "{s:?}");
    assert_eq!(s.work_lost_s, 0.0, "{s:?}");
    assert!(
        s.turnaround_mean_s <= 6000.0 + 300.0 + 1e-6,
        "{}",
        s.turnaround_mean_s
    );
    assert_eq!(service.metrics.apps[0].crashes, 1);
}

#[test]
fn an_evicted_service_task_waits_where_it_was() {
    // The spike workload forces evictions under the oracle; applications
    // that re-run from their start lose work, tasks that restart alone
    // (a preempted service's) keep it.
    let mut pes = cfg(Policy::Pessimistic, ForecasterSource::Oracle);
    pes.shaper.min_relative_change = 0.0;
    let batch = simulate(&spike_workload(8), &pes, None).expect("batch");
    pes.oom_restart = Some(OomRestart::Component);
    let service = simulate(&spike_workload(8), &pes, None).expect("service");
    for r in [&batch, &service] {
        assert_eq!(r.summary.apps_completed, 8, "{:?}", r.summary);
        assert!(r.summary.evictions > 0, "{:?}", r.summary);
        assert_eq!(r.summary.failed_app_fraction, 0.0, "{:?}", r.summary);
    }
    assert!(batch.summary.work_lost_s > 0.0, "{:?}", batch.summary);
    assert_eq!(service.summary.work_lost_s, 0.0, "{:?}", service.summary);
    let evicted = service.metrics.apps.iter().filter(|a| a.evictions > 0);
    assert!(evicted.clone().count() > 0);
    // An evicted task finishes no earlier than its work allows.
    for a in evicted {
        let f = a.finished_s.expect("completed");
        assert!(f >= a.arrival_s + 7200.0 - 1e-6, "{a:?}");
    }
}

#[test]
fn an_elastic_components_eviction_leaves_its_application_shaped() {
    // Host of 10 memory units. B (first in FIFO order) uses 0.9 of its 9,
    // then jumps to 8.55 at its sample 6. A has a core component (request
    // 2, using 0.5) and four elastic ones (request 1.5, using 0.75). Under
    // exact forecasts the jump leaves room for A's core and one elastic
    // component: three elastic ones are evicted. Were those evictions
    // failures of A, A would be past `failure_limit` (3), its core would
    // go back to its request (2), which no longer fits beside B, and the
    // whole of A would be evicted.
    let mut b_mem = vec![0.1f32; 6];
    b_mem.extend([0.95f32; 14]);
    let b = app(
        1,
        0.0,
        vec![comp(Class::Core, 0.1, 9.0, 6000.0, &[0.5], &b_mem)],
    );
    let mut a_comps = vec![comp(Class::Core, 0.1, 2.0, 6000.0, &[0.5], &[0.25])];
    for _ in 0..4 {
        a_comps.push(comp(Class::Elastic, 0.1, 1.5, 6000.0, &[0.5], &[0.5]));
    }
    let a = app(2, 1.0, a_comps);
    let wl = one_host(100.0, 10.0, vec![b, a]);
    let mut c = cfg(Policy::Pessimistic, ForecasterSource::Oracle);
    c.shaper.k1 = 0.0;
    c.shaper.k2 = 0.0;
    c.shaper.min_relative_change = 0.0;
    assert_eq!(c.shaper.failure_limit, 3);
    let r = simulate(&wl, &c, None).expect("run");
    let s = &r.summary;
    assert_eq!(s.apps_completed, 2, "{s:?}");
    assert!(s.evictions >= 3, "the elastic components make room: {s:?}");
    assert_eq!(r.metrics.apps[1].evictions, 0, "{:?}", r.metrics.apps[1]);
    assert_eq!(s.failed_app_fraction, 0.0, "{s:?}");
}

#[test]
fn a_request_change_rebuilds_the_models_from_recent_history_only() {
    // 2,000 samples, the request changing every 20th (a Bitbrains VM's
    // provisioned memory can change every few samples): each change
    // rebuilds the models from at most `history_cap` samples, keeping the
    // held peak in absolute terms, so the model updates grow with the
    // samples, not with their square (a rebuild from the whole history
    // made them ~50 times the samples here).
    const N: usize = 2_000;
    let mut mem = vec![0.4f32; N];
    mem[1] = 0.9;
    let mut c = comp(Class::Core, 1.0, 10.0, N as f64 * 300.0, &[0.5], &mem);
    c.request_changes = (1..N / 20)
        .map(|k| datasets::workload::RequestChange {
            at_elapsed_s: (20 * k) as f64 * 300.0,
            request: Resources::new(1.0, if k % 2 == 1 { 11.0 } else { 10.0 } * MIB),
        })
        .collect();
    let wl = one_host(4.0, 100.0, vec![app(1, 0.0, vec![c])]);
    let mut cfg = last_no_buffer();
    // the one-day hold only (not a small application's week)
    cfg.shaper.small_app_components = 0;
    let r = simulate(&wl, &cfg, None).expect("run");
    assert_eq!(r.metrics.request_changes, (N / 20 - 1) as u64);
    assert_eq!(r.summary.oom_kills, 0);
    let cap = shaper::models::history_cap(cfg.forecaster.warm_samples(), &cfg.shaper) as u64;
    // a sample fed and a forecast made per round, a rebuild per change
    let bound = 2 * (2 * N as u64 + r.metrics.request_changes * cap);
    assert!(
        r.metrics.forecast_updates <= bound,
        "{} > {bound}",
        r.metrics.forecast_updates
    );
    // The 9-unit peak stays held after the changes within the hold (a
    // day: 288 samples), then memory is shaped to the 4 units used.
    let alloc = |t_s: f64| {
        r.metrics
            .timeline
            .iter()
            .rfind(|p| p.t_s <= t_s)
            .map(|p| p.alloc_mem_frac * 100.0)
            .expect("sampled")
    };
    assert!(alloc(215.0 * 300.0) > 8.99, "{}", alloc(215.0 * 300.0));
    assert!(alloc(1_515.0 * 300.0) < 6.0, "{}", alloc(1_515.0 * 300.0));
}

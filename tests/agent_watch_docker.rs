//! The memory watch between rounds (`mem_watch_s`) against a REAL dockerd
//! (scripts/test.sh installs and starts it; in CI the test fails when
//! Docker is missing): the agent runs its own loop (`Agent::run`) at the
//! shipped 10 s interval over one container that sits flat at 10 MiB, is
//! cut, and then grows linearly, faster than a cut limit's buffer per
//! interval (docs/known-gaps.md: without the watch such a ramp is killed
//! or survives by the luck of where the rounds fall).
//!
//! `cargo test --test agent_watch_docker -- --ignored --nocapture` measures
//! ramps of 1 to 16 MiB/s with and without the watch (the table in
//! docs/known-gaps.md).

mod agent_common;

use agent_common::*;
use std::time::{Duration, Instant};

const FLAT_S: f64 = 50.0;

/// What one ramp under one agent came to.
#[derive(Debug)]
struct Ramp {
    /// The lowest limit dockerd had before the ramp, MiB.
    cut_mib: u64,
    early_rounds: u64,
    oom_kills: u64,
    /// The working set at the agent's last round, MiB.
    end_usage_mib: f64,
    top_mib: f64,
}

/// Runs container `tailor-t-<test>` flat at 10 MiB for 50 s, then up to
/// 250 MiB (120 MiB at 2 MiB/s or less) at `mib_per_s`, under an agent
/// with the shipped forecaster and buffer at the shipped interval and
/// `mem_watch_s = watch_s`, until 15 s after the ramp's end.
async fn ramp(test: &str, mib_per_s: f64, watch_s: f64) -> Ramp {
    let top_mib: f64 = if mib_per_s <= 2.0 { 130.0 } else { 250.0 };
    let ramp_s = (top_mib - 10.0) / mib_per_s;
    let steps = [
        format!("10:0.02:{FLAT_S}"),
        format!("{top_mib}:0.02:{ramp_s}:ramp"),
        format!("{top_mib}:0.02:3600"),
    ];
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    let c = TestContainer::run(
        &format!("tailor-t-{test}"),
        256,
        1.0,
        &[("tailor.enable", "true"), ("tailor.test", test)],
        &steps,
        &[],
    );
    let started = Instant::now();
    // the lone container sized as a core component (K1 0.05 x 1.2), not
    // as a small application (K1 0.6, which would hide the ramp)
    let mut cfg = default_forecaster_config(test);
    cfg.interval_s = 10.0;
    cfg.warmup_rounds = 1;
    cfg.mem_watch_s = watch_s;
    cfg.shaper.small_app_components = 0;
    cfg.shaper.app_mem_ref_rel = 0.0;
    cfg.shaper.sibling_hold_s = 0.0;
    let agent = docker_agent(cfg);
    let shared = agent.shared();
    let run_s = FLAT_S + ramp_s + 15.0;
    let run = tokio::spawn(agent.run(tokio::time::sleep(Duration::from_secs_f64(run_s))));
    // the limit as dockerd has it, every second, until the agent stops
    let mut cut_mib = u64::MAX;
    while !run.is_finished() {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if started.elapsed().as_secs_f64() < FLAT_S {
            cut_mib = cut_mib.min(c.mem_limit() / MIB);
        }
    }
    run.await.expect("agent task").expect("agent loop");
    let report = shared.last_report().expect("rounds ran");
    let end_usage_mib = report
        .view
        .containers
        .first()
        .map_or(0.0, |v| v.usage.mem_bytes / MIB as f64);
    let r = Ramp {
        cut_mib,
        early_rounds: shared.metrics.early_rounds(),
        oom_kills: shared.metrics.oom_events(),
        end_usage_mib,
        top_mib,
    };
    eprintln!("ramp {mib_per_s} MiB/s, mem_watch_s {watch_s}: {r:?}");
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_faster_than_the_buffer_per_interval_gets_an_early_round() {
    let test = "watch";
    if docker_or_skip(test).is_none() {
        return;
    }
    let r = ramp(test, 2.0, 1.0).await;
    assert!(
        r.cut_mib < 64,
        "the flat phase cut the limit first (min {} MiB)",
        r.cut_mib
    );
    assert!(
        r.end_usage_mib > r.top_mib - 10.0,
        "the ramp happened and ended running ({:.1} MiB at the end)",
        r.end_usage_mib
    );
    assert!(r.early_rounds >= 1, "the watch ran a round early");
    assert_eq!(r.oom_kills, 0, "no OOM kill during the ramp");
}

/// Measures (prints) ramps of 1 to 16 MiB/s with the watch off and on,
/// the two of each rate side by side; asserts only that each cut first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement (about 10 minutes): run with --ignored --nocapture"]
async fn ramp_rates_with_and_without_the_watch() {
    if docker_or_skip("watch-table").is_none() {
        return;
    }
    let mut rows = Vec::new();
    for rate in [1.0, 2.0, 4.0, 8.0, 16.0] {
        let (off_name, on_name) = (format!("watch-off-{rate}"), format!("watch-on-{rate}"));
        let (off, on) = tokio::join!(ramp(&off_name, rate, 0.0), ramp(&on_name, rate, 1.0));
        assert!(off.cut_mib < 64 && on.cut_mib < 64, "{off:?} {on:?}");
        rows.push((rate, off, on));
    }
    eprintln!("| ramp (MiB/s) | watch off: OOM kills | watch on: OOM kills | early rounds |");
    eprintln!("|---|---|---|---|");
    for (rate, off, on) in rows {
        eprintln!(
            "| {rate} | {} | {} | {} |",
            off.oom_kills, on.oom_kills, on.early_rounds
        );
    }
}

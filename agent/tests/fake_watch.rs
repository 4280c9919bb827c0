//! The memory watch between rounds (`mem_watch_s`, `agent::watch`) in the
//! agent's own loop (`Agent::run`) on the in-memory fake runtime: a
//! container that uses more than half its headroom between two rounds
//! gets the next round at once, long before its time. (Against a real
//! dockerd: tests/agent_watch_docker.rs.)

use agent::runtime::CpuLimit;
use shaper::record::Record;
use std::time::{Duration, Instant};

mod fake_rig;

use fake_rig::*;

/// A rig at `interval_s` with the watch at `watch_s` (recording to
/// `recording` if given; `cgroups` false: the runtime cannot read cgroup
/// files) in which `web` (1 GiB, 50 MiB used) was cut over four manual
/// rounds; and its cut limit.
async fn cut_web(
    interval_s: f64,
    watch_s: f64,
    cgroups: bool,
    recording: Option<&std::path::Path>,
) -> (Rig, u64) {
    let mut cfg = config("");
    cfg.interval_s = interval_s;
    cfg.warmup_rounds = 0;
    cfg.mem_watch_s = watch_s;
    if let Some(path) = recording {
        cfg.record.enabled = true;
        cfg.record.path = Some(path.to_path_buf());
    }
    let mut r = rig(cfg);
    if !cgroups {
        r.fake.hide_cgroups();
    }
    r.fake.add(
        "web",
        &[ENABLE],
        Some(GIB),
        CpuLimit::Nano {
            nano_cpus: 1_000_000_000,
        },
        900.0,
    );
    for _ in 0..4 {
        r.step(&[("web", 50 * MIB, 0.05)]).await;
    }
    let cut = r.mem_limit("web");
    assert!(cut < 200 * MIB, "cut from 1 GiB first ({cut} bytes)");
    (r, cut)
}

/// Cuts `web` (1 GiB, 50 MiB used) over four manual rounds, then runs the
/// agent's loop at a 1 h interval with the watch on (`watch_s`; 0 = off),
/// raises its usage to `jump_to` after the loop's first round, and returns
/// (early rounds, the last report, web's limit then, the `early` flag of
/// every recorded round) after `wait`. With `cgroups` false the runtime
/// cannot read cgroup files.
async fn jump(
    cgroups: bool,
    watch_s: f64,
    jump_to: impl Fn(u64) -> u64,
    wait: Duration,
) -> (u64, agent::RoundReport, u64, Vec<bool>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let recording = dir.path().join("rec.jsonl.gz");
    let (r, cut) = cut_web(3600.0, watch_s, cgroups, Some(&recording)).await;
    let Rig { fake, clock, agent } = r;
    let shared = agent.shared();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let rounds_before = shared.metrics.rounds().0;
    let run = tokio::spawn(agent.run(async {
        let _ = stop_rx.await;
    }));
    // the loop's first round is at once; then nothing for an hour
    let started = Instant::now();
    while shared.metrics.rounds().0 == rounds_before && started.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    clock.advance(1.0);
    fake.set_now(tailor_core::Clock::now_s(clock.as_ref()));
    fake.set_usage("web", jump_to(cut), 0);
    tokio::time::sleep(wait).await;
    let _ = stop_tx.send(());
    run.await.expect("agent task").expect("agent loop");
    let report = shared.last_report().expect("rounds ran");
    let limit = fake
        .container("web")
        .and_then(|c| c.info.limits.mem_bytes)
        .expect("limited");
    let mut reader = datasets::recording::RecordReader::open(&recording).expect("recording");
    let mut early_flags = Vec::new();
    while let Some(r) = reader.read_next::<Record>().expect("a record") {
        if let Record::Round(r) = r {
            early_flags.push(r.early);
        }
    }
    (shared.metrics.early_rounds(), report, limit, early_flags)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_the_headroom_used_between_rounds_runs_the_round_at_once() {
    // 50 MiB at the round; past halfway to the cut limit
    let (early, report, limit, recorded) = jump(
        true,
        0.1,
        |cut| 50 * MIB + (cut - 50 * MIB) / 2 + 2 * MIB,
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(early, 1, "one early round");
    let why = report.early.expect("the report says why");
    assert_eq!(why.container, "web");
    assert_eq!(why.at_round_bytes, 50 * MIB);
    assert!(why.working_set_bytes > why.at_round_bytes);
    let used = report.view.containers[0].usage.mem_bytes;
    // 4 manual rounds, the loop's first, then the early one: recorded as such
    assert_eq!(recorded, vec![false, false, false, false, false, true]);
    assert!(
        limit as f64 > used && used > 50.0 * MIB as f64,
        "the early round saw the new usage ({used}) and sized above it ({limit})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rise_within_half_the_headroom_or_with_the_watch_off_waits() {
    for (watch_s, what) in [(0.1, "within half"), (0.0, "watch off")] {
        let rise = |cut: u64| {
            if watch_s > 0.0 {
                50 * MIB + (cut - 50 * MIB) / 2 - MIB
            } else {
                cut - MIB
            }
        };
        let (early, report, _, recorded) =
            jump(true, watch_s, rise, Duration::from_millis(800)).await;
        assert!(!recorded.contains(&true), "{what}");
        assert_eq!(early, 0, "{what}");
        assert!(report.early.is_none(), "{what}");
    }
}

/// An agent that cannot read the cgroup files says so once, and rounds
/// keep their schedule.
#[tokio::test(flavor = "current_thread")]
async fn unreadable_cgroups_are_reported_once() {
    let (logs, _guard) = agent::fake::Logs::capture(tracing::Level::WARN);
    let past_half = |cut: u64| 50 * MIB + (cut - 50 * MIB) / 2 + 2 * MIB;
    let (early, report, _, _) = jump(false, 0.1, past_half, Duration::from_millis(800)).await;
    assert_eq!(early, 0);
    assert!(report.early.is_none());
    let warned = logs.lines("memory watch: cannot read");
    assert_eq!(warned.len(), 1, "{}", logs.text());
    assert!(warned[0].contains("container=web"), "{}", warned[0]);
}

/// An early round comes between two rounds of the schedule and does not
/// move it: the next scheduled round comes when it was due (so a
/// recording's scheduled rounds stay `interval_s` apart, and its replay
/// keeps the node's time). On tokio's paused clock: the times are exact.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_early_round_leaves_the_schedule_where_it_was() {
    let (r, cut) = cut_web(60.0, 1.0, true, None).await;
    let Rig { fake, clock, agent } = r;
    let shared = agent.shared();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let start = tokio::time::Instant::now();
    let run = tokio::spawn(agent.run(async {
        let _ = stop_rx.await;
    }));
    // the time (s from the start) at which each of the loop's rounds ended
    let rounds_before = shared.metrics.rounds().0;
    let mut ended_s = Vec::new();
    let mut jumped = false;
    while ended_s.len() < 4 && start.elapsed() < Duration::from_secs(600) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let done = (shared.metrics.rounds().0 - rounds_before) as usize;
        while ended_s.len() < done {
            ended_s.push(start.elapsed().as_secs_f64());
        }
        if !jumped && start.elapsed() >= Duration::from_secs(20) {
            // 20 s after the first round: past half the headroom
            clock.advance(1.0);
            fake.set_now(tailor_core::Clock::now_s(clock.as_ref()));
            fake.set_usage("web", 50 * MIB + (cut - 50 * MIB) / 2 + 2 * MIB, 0);
            jumped = true;
        }
    }
    let _ = stop_tx.send(());
    run.await.expect("agent task").expect("agent loop");
    assert_eq!(shared.metrics.early_rounds(), 1, "rounds at {ended_s:?} s");
    // at once, then early at ~21 s, then at 60 and 120 s as scheduled
    // (not 81 s: the early round did not restart the schedule)
    assert_eq!(ended_s.len(), 4, "{ended_s:?}");
    assert!(ended_s[0] < 1.0, "{ended_s:?}");
    assert!((20.0..23.0).contains(&ended_s[1]), "{ended_s:?}");
    assert!((60.0..61.0).contains(&ended_s[2]), "{ended_s:?}");
    assert!((120.0..121.0).contains(&ended_s[3]), "{ended_s:?}");
}

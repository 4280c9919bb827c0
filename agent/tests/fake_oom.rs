//! OOM kills against the in-memory fake runtime (no Docker): counted once
//! whether the event stream or `inspect` tells first, at the limit the
//! kernel killed at, and the next allocation grown from it.

mod fake_rig;

use fake_rig::*;

/// After an OOM kill at `before` bytes the memory limit grows by at least
/// the 100 MiB bump.
fn assert_grown_by_the_bump(r: &Rig, before: u64) {
    let mem = r.mem_limit("tight");
    assert!(
        mem >= before + 100 * MIB,
        "after an OOM kill at {} MiB the limit grows by >= 100 MiB, got {}",
        before / MIB,
        mem / MIB
    );
}

#[tokio::test]
async fn oom_kill_makes_the_next_allocation_grow() {
    let (mut r, before) = oom_rig(true).await;
    r.fake.oom("tight");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let rep = r.step(&[("tight", 90 * MIB, 0.1)]).await;
    assert_eq!(rep.view.containers[0].oom_kills, 1);
    assert_grown_by_the_bump(&r, before);
    assert_eq!(r.agent.shared().metrics.oom_events(), 1);
}

#[tokio::test]
async fn oom_kill_missed_by_the_event_stream_is_recovered_from_inspect() {
    // no event listener: the stream is down while the kernel kills it
    let (mut r, before) = oom_rig(false).await;
    let killed_at = r.clock_now() + 0.5;
    r.fake.oom_kill("tight", killed_at, false);
    let rep = r.step(&[]).await;
    assert!(rep.view.containers.is_empty(), "exited, not in the view");
    assert_eq!(r.agent.shared().metrics.oom_events(), 1, "found by inspect");
    assert_eq!(r.agent.shared().metrics.oom_recovered(), 1);
    // it comes back (restart policy); Docker still says OOMKilled with the
    // same FinishedAt: counted once, and its next allocation grows
    r.restart("tight").await;
    let mut last = None;
    for _ in 0..8 {
        last = Some(r.step(&[("tight", 90 * MIB, 0.1)]).await);
    }
    let rep = last.expect("rounds ran");
    assert_eq!(rep.view.containers[0].oom_kills, 1);
    assert!(rep.view.containers[0].oom_floor_bytes >= (before + 100 * MIB) as f64);
    assert_eq!(
        rep.view.containers[0].usage.mem_bytes,
        (90 * MIB) as f64,
        "usage is what was measured, not the floor"
    );
    assert_eq!(r.agent.shared().metrics.oom_events(), 1, "counted once");
    assert_eq!(r.agent.shared().metrics.oom_recovered(), 1);
    assert_grown_by_the_bump(&r, before);
}

/// Killed and started again by its restart policy between two rounds
/// while the event stream is down: the list still says running, but the
/// CPU counter went back (a new cgroup), so the next round inspects it and
/// counts the kill, without waiting for `reinspect_every`.
#[tokio::test]
async fn a_restart_between_rounds_that_the_stream_missed_is_inspected_at_once() {
    let mut c = config("");
    c.shaper.max_growth = 2.0;
    c.reinspect_every = 1_000;
    let (mut r, before) = tight_rig(c, false, 90 * MIB).await;
    let killed_at = r.clock_now() + 0.5;
    r.fake.oom_kill("tight", killed_at, false);
    r.restart("tight").await;
    // this round's sample finds the counter gone back, the next inspects
    r.step(&[("tight", 90 * MIB, 0.1)]).await;
    let rep = r.step(&[("tight", 90 * MIB, 0.1)]).await;
    assert_eq!(r.agent.shared().metrics.oom_events(), 1, "found by inspect");
    assert_eq!(r.agent.shared().metrics.oom_recovered(), 1);
    assert_eq!(rep.view.containers[0].oom_kills, 1);
    for _ in 0..4 {
        r.step(&[("tight", 90 * MIB, 0.1)]).await;
    }
    assert_eq!(r.agent.shared().metrics.oom_events(), 1, "counted once");
    assert_grown_by_the_bump(&r, before);
}

#[tokio::test]
async fn an_oom_kill_grows_the_limit_at_most_to_the_ceiling() {
    // max_growth = 1 (the default): the floor (+100 MiB) stops at the
    // 100 MiB the container was started with.
    let (mut r, before) = tight_rig(config(""), true, 60 * MIB).await;
    assert!(before < 100 * MIB, "shrunk first: {} MiB", before / MIB);
    r.fake.oom("tight");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    r.step(&[("tight", 60 * MIB, 0.1)]).await;
    assert_eq!(r.mem_limit("tight"), 100 * MIB);
}

#[tokio::test]
async fn streamed_oom_kill_is_not_counted_again_by_inspect() {
    let (mut r, before) = oom_rig(true).await;
    let killed_at = r.clock_now() + 0.5;
    r.fake.oom_kill("tight", killed_at, true);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    r.step(&[]).await;
    r.restart("tight").await;
    for _ in 0..8 {
        r.step(&[("tight", 90 * MIB, 0.1)]).await;
    }
    assert_eq!(r.agent.shared().metrics.oom_events(), 1, "counted once");
    assert_eq!(r.agent.shared().metrics.oom_recovered(), 0);
    assert!(r.mem_limit("tight") >= before + 100 * MIB);
}

/// A kill whose streamed event the daemon stamped 3 s after the exit (a
/// loaded daemon; the pairing allows `OOM_PAIR_S`, 10 s, either way), read
/// after inspect found the exit (`inspected_first`) or before; then the
/// container runs again.
async fn killed_with_an_event_3_s_late(inspected_first: bool) -> Rig {
    let (mut r, _) = oom_rig(true).await;
    let killed_at = r.clock_now() + 0.5;
    r.fake.oom_kill("tight", killed_at, false);
    if inspected_first {
        r.step(&[]).await;
        assert_eq!(r.agent.shared().metrics.oom_recovered(), 1);
    }
    r.fake.set_now(killed_at + 3.0);
    r.fake.oom("tight");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    r.step(&[]).await;
    r.restart("tight").await;
    r.step(&[("tight", 90 * MIB, 0.1)]).await;
    r
}

#[tokio::test]
async fn late_stream_event_of_a_recovered_oom_kill_is_not_counted_again() {
    let mut r = killed_with_an_event_3_s_late(true).await;
    assert_eq!(r.agent.shared().metrics.oom_events(), 1, "counted once");
    // a later, separate OOM event is counted
    r.fake.oom("tight");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    r.step(&[("tight", 90 * MIB, 0.1)]).await;
    assert_eq!(r.agent.shared().metrics.oom_events(), 2);
}

#[tokio::test]
async fn a_late_stream_event_read_before_inspect_pairs_with_the_exit() {
    let r = killed_with_an_event_3_s_late(false).await;
    let m = &r.agent.shared().metrics;
    assert_eq!((m.oom_events(), m.oom_recovered()), (1, 0), "counted once");
}

/// QA D2: a container killed at a cut limit and resized by the agent in the
/// round in which it died, before the kill's event was drained, is counted
/// at the cut limit: the floor (and the recording's `OomKill`) come from
/// the limit it was killed at, not the one the agent set afterwards.
#[tokio::test]
async fn oom_kill_reported_after_a_resize_counts_at_the_limit_killed_at() {
    let dir = tempfile::tempdir().expect("tempdir");
    let recording = dir.path().join("recording.jsonl.gz");
    let mut c = config("");
    // room for the floor above both limits: no ceiling hides the difference
    c.shaper.max_growth = 4.0;
    c.record.enabled = true;
    c.record.path = Some(recording.clone());
    let (mut r, cut) = tight_rig(c, true, 60 * MIB).await;
    assert!(cut < 100 * MIB, "shrunk first: {} MiB", cut / MIB);
    // killed at the cut limit half a second before this round; its restart
    // policy starts it again at once, and the stream delivers the kill late
    // (after the round drained its events)
    let killed_at = r.clock_now() + 0.5;
    r.fake.hold_events();
    r.fake.oom_kill("tight", killed_at, true);
    r.fake.set_now(killed_at);
    r.restart("tight").await;
    // the agent sees it running again, using more (the fake does not stop
    // use at the limit), and grows it
    r.step(&[("tight", 120 * MIB, 0.1)]).await;
    let grown = r.mem_limit("tight");
    assert!(
        grown > cut,
        "grown in the round it died: {} MiB",
        grown / MIB
    );
    assert_eq!(r.agent.shared().metrics.oom_events(), 0, "not drained yet");
    r.fake.release_events();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let rep = r.step(&[("tight", 20 * MIB, 0.1)]).await;
    assert_eq!(r.agent.shared().metrics.oom_events(), 1);
    let cfg = r.agent.config().shaper.clone();
    let request = rep.view.containers[0].request.mem_bytes;
    let floor = shaper::OomFloor::after_kill(cut as f64, request, killed_at, &cfg).mem_bytes;
    let wrong = shaper::OomFloor::after_kill(grown as f64, request, killed_at, &cfg).mem_bytes;
    assert!(floor < wrong);
    let seen = rep.view.containers[0].oom_floor_bytes;
    assert_eq!(rep.view.containers[0].usage.mem_bytes, (20 * MIB) as f64);
    assert_eq!(
        seen,
        floor,
        "floor from the {} MiB the kernel killed at ({} MiB), not from the {} MiB set after ({} MiB): got {} MiB",
        cut / MIB,
        floor / 1048576.0,
        grown / MIB,
        wrong / 1048576.0,
        seen / 1048576.0
    );
    // the recording says the same, with the kill's time
    let mut reader = datasets::recording::RecordReader::open(&recording).expect("recording");
    let mut kills = Vec::new();
    while let Ok(Some(record)) = reader.read_next::<shaper::record::Record>() {
        if let shaper::record::Record::Round(round) = record {
            kills.extend(round.events.into_iter().filter_map(|e| match e {
                shaper::record::KernelEvent::OomKill {
                    limit_bytes, at_s, ..
                } => Some((limit_bytes, at_s)),
                _ => None,
            }));
        }
    }
    assert_eq!(kills, vec![(cut as f64, killed_at)]);
    // and so does the decision journal (`tailor history`, `/v1/decisions`)
    let journaled: Vec<(String, f64, f64)> = r
        .agent
        .shared()
        .decisions_since(None)
        .into_iter()
        .flat_map(|e| e.oom_kills)
        .map(|k| (k.container, k.limit_mib, k.killed_at_s))
        .collect();
    assert_eq!(
        journaled,
        vec![("tight".to_string(), cut as f64 / 1048576.0, killed_at)]
    );
}

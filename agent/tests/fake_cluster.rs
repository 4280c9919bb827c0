//! The agent loop applying a central shaper's actions (cluster mode)
//! against the in-memory fake runtime: the actions come from a scripted
//! plan source, with action ids, as the cluster client hands them over.

use agent::fake::{FakeCall, Logs};
use agent::runtime::{ContainerState, CpuLimit};
use agent::{AgentConfig, NodeActionKind, Outcome};
use tailor_core::Resources;

mod fake_rig;

use fake_rig::*;

/// No warm-up (the script decides every round's actions); evicted
/// containers stay stopped.
fn cluster_config() -> AgentConfig {
    config("").clone_with(|c| {
        c.warmup_rounds = 0;
        c.restart_evicted = false;
    })
}

fn stops(r: &Rig, id: &str) -> usize {
    r.fake
        .calls()
        .iter()
        .filter(|c| matches!(c, FakeCall::Stop(i, _) if i == id))
        .count()
}

/// QA C10: the round after an eviction, planned from the report sent
/// before the stop, evicts the same container again. It is already
/// stopped: that counts as applied (protocol/src/lib.rs: "an eviction of
/// a container that is already gone counts as applied"), not as a failed
/// action logged with an empty container name.
#[tokio::test]
async fn a_repeated_eviction_of_a_stopped_container_counts_as_applied() {
    let (logs, _guard) = Logs::capture(tracing::Level::INFO);
    let script = Scripted::default();
    let mut r = rig_with(cluster_config(), Box::new(script.clone()));
    r.fake.add(
        "late",
        &[ENABLE],
        Some(256 * MIB),
        CpuLimit::Nano {
            nano_cpus: 500_000_000,
        },
        900.0,
    );
    r.step(&[("late", 60 * MIB, 0.01)]).await;
    let evict = NodeActionKind::Evict { whole_app: true };
    script.queue(vec![shaper_action("e-1", "late", "late", evict.clone())]);
    let report = r.step(&[("late", 60 * MIB, 0.01)]).await;
    assert_eq!(report.outcomes[0].result, Outcome::Applied);
    assert_eq!(
        r.fake.container("late").map(|c| c.info.state),
        Some(ContainerState::Exited)
    );
    script.take_outcomes();

    // The view lists running containers only: the action has no name.
    script.queue(vec![shaper_action("e-2", "late", "", evict)]);
    let report = r.step(&[]).await;
    let o = &report.outcomes[0];
    assert_eq!(o.result, Outcome::Unchanged, "{o:?}");
    assert_eq!(o.error.as_deref(), Some("already stopped"));
    assert_eq!(o.action.container_name, "late", "the name the agent knows");
    let told = script.take_outcomes();
    assert_eq!(told.len(), 1);
    assert!(
        matches!(told[0].result, Outcome::Applied | Outcome::Unchanged),
        "acknowledged as applied: {told:?}"
    );
    assert_eq!(stops(&r, "late"), 1, "not stopped twice");
    assert!(
        logs.lines("action not applied").is_empty(),
        "{}",
        logs.text()
    );

    // A container the agent does not manage is still refused, and the
    // warning names it by id.
    script.queue(vec![shaper_action(
        "e-3",
        "someone-elses",
        "",
        NodeActionKind::Evict { whole_app: false },
    )]);
    let report = r.step(&[]).await;
    assert_eq!(report.outcomes[0].result, Outcome::Refused);
    let refused = logs.lines("action not applied");
    assert_eq!(refused.len(), 1, "{}", logs.text());
    assert!(
        refused[0].contains("container=someone-elses"),
        "{}",
        refused[0]
    );
}

fn add_own(r: &Rig, id: &str, mem: u64) {
    r.fake.add(
        id,
        &[ENABLE],
        Some(mem),
        CpuLimit::Nano {
            nano_cpus: 500_000_000,
        },
        900.0,
    );
}

fn resize_to(cpu: f64, mem: u64) -> NodeActionKind {
    NodeActionKind::Resize {
        from: Resources::new(0.5, 256.0 * MIB as f64),
        to: Resources::new(cpu, mem as f64),
    }
}

fn planned_to(o: &agent::ActionOutcome) -> Resources {
    match o.action.kind {
        NodeActionKind::Resize { to, .. } => to,
        ref other => panic!("not a resize: {other:?}"),
    }
}

/// QA C8: a hostile shaper grew a 256 MiB / 0.5-core container to 64 GiB
/// and 2 cores, and cut others below the 16 MiB floor; the agent applied
/// whatever it was sent. It now holds a shaper's resize to its own bounds
/// (the kernel's: `min_*`, `request * max_growth`), warns with fields, and
/// says so in the explanation; a plan within them is applied as sent.
#[tokio::test]
async fn a_shapers_resize_is_held_to_the_agents_bounds() {
    let (logs, _guard) = Logs::capture(tracing::Level::INFO);
    let script = Scripted::default();
    let mut r = rig_with(cluster_config(), Box::new(script.clone()));
    add_own(&r, "own", 256 * MIB);
    add_own(&r, "tiny", 64 * MIB);
    let usage = [("own", 100 * MIB, 0.02), ("tiny", 5 * MIB, 0.001)];
    r.step(&usage).await;

    script.queue(vec![
        shaper_action("g-1", "own", "own", resize_to(2.0, 64 * GIB)),
        shaper_action("s-1", "tiny", "tiny", resize_to(0.001, 6 * MIB)),
    ]);
    let report = r.step(&usage).await;
    let own = &report.outcomes[0];
    // back at its request: what it holds already, no runtime call
    assert_eq!(planned_to(own), Resources::new(0.5, 256.0 * MIB as f64));
    assert_eq!(own.result, Outcome::Unchanged, "{own:?}");
    assert!(r.updates_of("own").is_empty(), "{:?}", r.updates_of("own"));
    assert!(
        own.action.explanation.ends_with(
            "clamped by the agent: cpu 2 -> 0.5 cores (ceiling), mem 65536 -> 256 MiB (ceiling)"
        ),
        "{}",
        own.action.explanation
    );
    let tiny = &report.outcomes[1];
    assert_eq!(tiny.result, Outcome::Applied, "{tiny:?}");
    assert_eq!(planned_to(tiny), Resources::new(0.01, 16.0 * MIB as f64));
    let update = r.updates_of("tiny").pop().expect("updated");
    assert_eq!(update.mem_bytes, Some(16 * MIB), "the floor, not 6 MiB");
    assert_eq!(
        r.fake.container("tiny").map(|c| c.info.limits.cpu),
        Some(CpuLimit::Nano {
            nano_cpus: 10_000_000
        })
    );
    let warned = logs.lines("outside the agent's bounds: clamped");
    assert_eq!(warned.len(), 4, "{}", logs.text());
    for (line, fields) in warned.iter().zip([
        "container=own action_id=\"g-1\" resource=\"cpu\" planned=2.0 clamped=0.5 unit=\"cores\" bound=\"ceiling\" request=0.5 host=4.0",
        "container=own action_id=\"g-1\" resource=\"mem\" planned=65536.0 clamped=256.0 unit=\"MiB\" bound=\"ceiling\" request=256.0 host=8192.0",
        "container=tiny action_id=\"s-1\" resource=\"cpu\" planned=0.001 clamped=0.01 unit=\"cores\" bound=\"floor\"",
        "container=tiny action_id=\"s-1\" resource=\"mem\" planned=6.0 clamped=16.0 unit=\"MiB\" bound=\"floor\"",
    ]) {
        assert!(line.contains("WARN") && line.contains(fields), "{line}\nwants {fields}");
    }

    // Within the bounds: applied as sent, nothing said.
    script.queue(vec![shaper_action(
        "s-2",
        "own",
        "own",
        resize_to(0.25, 128 * MIB),
    )]);
    let report = r.step(&usage).await;
    assert_eq!(report.outcomes[0].result, Outcome::Applied);
    assert_eq!(
        planned_to(&report.outcomes[0]),
        Resources::new(0.25, 128.0 * MIB as f64)
    );
    assert!(!report.outcomes[0].action.explanation.contains("clamped"));
    assert_eq!(logs.lines("outside the agent's bounds").len(), 4);
}

/// QA C8: with room to grow (`max_growth`), a shaper's resize still stops
/// at the host's CPUs and RAM.
#[tokio::test]
async fn a_shapers_resize_stops_at_the_host() {
    let (logs, _guard) = Logs::capture(tracing::Level::INFO);
    let script = Scripted::default();
    let cfg = cluster_config().clone_with(|c| c.shaper.max_growth = 1000.0);
    let mut r = rig_with(cfg, Box::new(script.clone()));
    add_own(&r, "own", 256 * MIB);
    let usage = [("own", 100 * MIB, 0.02)];
    r.step(&usage).await;
    script.queue(vec![shaper_action(
        "g-1",
        "own",
        "own",
        resize_to(16.0, 64 * GIB),
    )]);
    let report = r.step(&usage).await;
    // the fake host: 4 CPUs, 8 GiB
    assert_eq!(
        planned_to(&report.outcomes[0]),
        Resources::new(4.0, 8.0 * GIB as f64)
    );
    let update = r.updates_of("own").pop().expect("updated");
    assert_eq!(update.mem_bytes, Some(8 * GIB));
    let warned = logs.lines("outside the agent's bounds: clamped");
    assert_eq!(warned.len(), 2, "{}", logs.text());
    assert!(
        warned.iter().all(|l| l.contains("bound=\"host\"")),
        "{warned:?}"
    );
}

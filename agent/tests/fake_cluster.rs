//! The agent loop applying a central shaper's actions (cluster mode)
//! against the in-memory fake runtime: the actions come from a scripted
//! plan source, with action ids, as the cluster client hands them over.

use agent::fake::FakeCall;
use agent::runtime::{ContainerState, CpuLimit};
use agent::{AgentConfig, NodeActionKind, Outcome};

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
    let (logs, _guard) = Logs::capture();
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

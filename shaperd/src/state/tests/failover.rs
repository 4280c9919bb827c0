//! A new leader taking over from the store: what carries over, and what a
//! replayed report can no longer do.

use super::*;
use crate::store::{MemoryStore, StateStore};

/// A single-threaded runtime and an empty in-memory store.
fn runtime_and_store() -> (tokio::runtime::Runtime, MemoryStore) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    (rt, MemoryStore::new())
}

/// Two states sharing one store behave like a leader and its successor:
/// acks of the old leader's actions are known to the new one, failure
/// counts carry over and are not counted twice, new action ids never
/// repeat old ones.
#[test]
fn a_new_leader_continues_from_the_store() {
    let (rt, store) = runtime_and_store();
    let mut a = state(0.0);
    let epoch = rt.block_on(store.init_epoch("cluster-1")).expect("epoch");
    let d = rt.block_on(store.load()).expect("load");
    a.restore(epoch.clone(), d, 0.0);
    report_early_and_late(&mut a, 11.0);
    // One round, written through before it is installed.
    let input = a.snapshot(12.0).expect("round");
    let plan = shaper::decide(&input.view, 12.0, a.shaper_config());
    let prepared = input.prepare(plan);
    rt.block_on(store.put_round(
        prepared.round(),
        &prepared.durable_actions(),
        prepared.keep_from(),
    ))
    .expect("put round");
    let out = a.commit(prepared);
    assert_eq!(out.evict_application, 2, "{out:?}");
    let old_round = a.round();
    let ids = |resp: &ReportResponse| -> Vec<ActionId> {
        resp.actions.iter().map(|w| w.id.clone()).collect()
    };
    let ra = a.report(report("a", 10.0 * GB, vec![]), 13.0).expect("ok");
    let rb = a.report(report("b", 10.0 * GB, vec![]), 13.0).expect("ok");
    let (id_a, id_b) = (ids(&ra)[0].clone(), ids(&rb)[0].clone());
    assert!(id_a.0.starts_with("cluster-1-"), "{id_a:?}");
    // Agent a's ack reaches the old leader and is stored before its answer.
    a.ack(&AckRequest {
        agent_id: "a".into(),
        acks: vec![Ack {
            action_id: id_a.clone(),
            outcome: AckOutcome::Applied,
        }],
    })
    .expect("ack");
    let writes = a.take_writes();
    assert_eq!(writes.acks.len(), 1);
    assert_eq!(writes.app_failures, vec![("t/late".to_string(), 1)]);
    rt.block_on(store.put_acks(&writes)).expect("put acks");
    assert!(a.take_writes().is_empty(), "taken once");

    // The leader dies; a new one loads the store.
    let mut b = state(20.0);
    let d = rt.block_on(store.load()).expect("load");
    b.restore(
        rt.block_on(store.init_epoch("other")).expect("epoch"),
        d,
        20.0,
    );
    assert_eq!(b.epoch(), "cluster-1", "the cluster's epoch is kept");
    assert_eq!(b.round(), old_round);
    assert_eq!(b.app_failures("t/late"), 1);
    assert_eq!(b.status(20.0).evicted_apps.len(), 1);
    assert_eq!(b.action_status(&id_a), Some(ActionStatus::Applied));
    // Agent b never reported to the new leader: its ack is still known,
    // and the application's failure is not counted twice (same round).
    let resp = b
        .ack(&AckRequest {
            agent_id: "b".into(),
            acks: vec![
                Ack {
                    action_id: id_b.clone(),
                    outcome: AckOutcome::Applied,
                },
                // Agent a acks again (its ack may have been lost in flight).
                Ack {
                    action_id: id_a.clone(),
                    outcome: AckOutcome::Applied,
                },
            ],
        })
        .expect("ack");
    assert_eq!(resp.accepted, 1, "b's own action; a's is not b's");
    assert_eq!(resp.unknown, 1);
    let resp = b
        .ack(&AckRequest {
            agent_id: "a".into(),
            acks: vec![Ack {
                action_id: id_a.clone(),
                outcome: AckOutcome::Applied,
            }],
        })
        .expect("ack");
    assert_eq!((resp.accepted, resp.unknown), (1, 0));
    assert_eq!(b.app_failures("t/late"), 1, "counted once");
    assert_eq!(b.ack_counters().unknown, 1, "only the misattributed ack");
    // New rounds go on after the old ones: no id is issued twice.
    b.report(
        report(
            "a",
            10.0 * GB,
            vec![comp("x1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
        ),
        31.0,
    )
    .expect("ok");
    let out = b.plan_round(31.0).expect("round after warmup");
    assert!(out.round > old_round);
}

/// Report sequences stored with a round survive a failover: the new leader
/// refuses a report captured before it, and takes the next one.
#[test]
fn a_new_leader_refuses_reports_replayed_from_before_the_last_round() {
    let (rt, store) = runtime_and_store();
    let mut a = state(0.0);
    let w = who("n1", "t");
    let mut req = report("n1", 10.0 * GB, vec![]);
    req.boot_id = 7;
    req.seq = 5;
    a.report_as(&w, req.clone(), 1.0).expect("accepted");
    rt.block_on(store.put_replay_guard(&a.replay_snapshot()))
        .expect("stored");
    let mut b = state(0.0);
    b.restore("e1".into(), rt.block_on(store.load()).expect("load"), 2.0);
    assert!(
        matches!(
            b.report_as(&w, req.clone(), 3.0),
            Err(Refusal::Replay { .. })
        ),
        "a replayed report is refused by the new leader"
    );
    // A later report of the same boot may have been accepted by the old
    // leader after its last round: refused until the agent starts a boot.
    req.seq = 6;
    assert!(
        matches!(
            b.report_as(&w, req.clone(), 3.0),
            Err(Refusal::Replay { .. })
        ),
        "the old boot ends with the old leader"
    );
    let old = req.clone();
    req.boot_id = 8;
    req.seq = 1;
    b.report_as(&w, req, 3.0).expect("the agent's new boot");
    assert!(
        matches!(b.report_as(&w, old, 4.0), Err(Refusal::Replay { .. })),
        "and the old boot stays refused"
    );
}

//! Managed containers that are not running, against the in-memory fake
//! runtime (the rig of agent/tests/fake_loop.rs): a container OOM-killed at
//! a limit the agent cut below its request (QA D10).

use agent::fake::FakeCall;
use agent::runtime::CpuLimit;

mod fake_rig;

use fake_rig::*;

/// The rows of container `name` in the last round's recommendations:
/// (state, resource, current limit, request, applied).
fn recommended(r: &Rig, name: &str) -> Vec<(String, String, Option<f64>, f64, String)> {
    r.agent
        .shared()
        .last_recommendations()
        .expect("recommendations")
        .items
        .into_iter()
        .filter(|i| i.container == name)
        .map(|i| {
            (
                i.state(),
                i.resource.as_str().to_string(),
                i.current_limit,
                i.request,
                i.applied,
            )
        })
        .collect()
}

/// QA D10: a container with no restart policy, OOM-killed at a limit the
/// agent had cut below its request (100 MiB, 1 core), gets its original
/// limits back in the round the agent learns of it (a `docker start` would
/// run it at its request), is listed in the recommendations as waiting for
/// room, and is started again once `restart_cooldown_s` has passed and its
/// request fits, through the evictions' path; the OOM floor then holds it
/// at its request. The journal shows the restore and the restart.
#[tokio::test]
async fn a_container_killed_at_the_agents_cut_gets_its_request_back_and_restarts() {
    let (mut r, cut) = tight_rig(
        config("").clone_with(|c| c.restart_cooldown_s = 5.0),
        true,
        60 * MIB,
    )
    .await;
    assert!(cut < 100 * MIB, "shrunk first: {} MiB", cut / MIB);
    let killed_at = r.clock_now() + 0.5;
    r.fake.oom_kill("tight", killed_at, true);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let rep = r.step(&[]).await;
    assert_eq!(
        rep.oom_kills
            .iter()
            .map(|k| k.limit_mib)
            .collect::<Vec<_>>(),
        vec![cut as f64 / MIB as f64]
    );
    // restored at once, not started (cooldown)
    let c = r.fake.container("tight").expect("exists").info;
    assert_eq!(
        (c.limits.mem_bytes, c.limits.cpu.cores()),
        (Some(100 * MIB), Some(1.0)),
        "original limits restored"
    );
    assert_ne!(c.state, agent::runtime::ContainerState::Running);
    assert_eq!(rep.restored.len(), 1, "{:?}", rep.restored);
    assert_eq!(rep.restored[0].to_mem_mib, Some(100.0));
    assert!(rep.restarted.is_empty());
    assert_eq!(r.agent.evicted().len(), 1, "waits for room");
    assert!(rep.view.evicted.is_empty(), "not an eviction");
    assert_eq!(
        recommended(&r, "tight"),
        ["cpu", "memory"]
            .iter()
            .zip([(1.0, 1.0), (100.0, 100.0)])
            .map(|(res, (cur, req))| (
                "oom-killed, waiting for room".to_string(),
                res.to_string(),
                Some(cur),
                req,
                "original limits restored".to_string()
            ))
            .collect::<Vec<_>>()
    );
    // started again when the cooldown has passed (its request fits)
    let mut restarted_round = None;
    for n in 0..6 {
        let rep = r.step(&[]).await;
        if rep.restarted.iter().any(|c| c == "tight") {
            restarted_round = Some(n);
            break;
        }
        assert!(rep.restored.is_empty(), "restored once");
        assert_eq!(
            recommended(&r, "tight")[0].0,
            "oom-killed, waiting for room"
        );
    }
    let n = restarted_round.expect("restarted");
    assert!(n >= 3, "not before the cooldown: round {n}");
    assert!(r.fake.calls().contains(&FakeCall::Start("tight".into())));
    assert!(r.agent.evicted().is_empty());
    // running again at its request: the OOM floor holds its memory there
    for _ in 0..4 {
        r.step(&[("tight", 60 * MIB, 0.1)]).await;
    }
    assert_eq!(r.mem_limit("tight"), 100 * MIB);
    assert_eq!(recommended(&r, "tight")[0].0, "running");
    let journal = r.agent.shared().decisions_since(None);
    let restored: Vec<_> = journal
        .iter()
        .flat_map(|e| e.restored.iter().map(|x| x.container.clone()))
        .collect();
    let restarted: Vec<_> = journal.iter().flat_map(|e| e.restarted.clone()).collect();
    assert_eq!(
        (restored, restarted),
        (vec!["tight".to_string()], vec!["tight".to_string()])
    );
}

/// QA D10: with `restart_evicted = false` the container killed at the
/// agent's cut gets its request back and stays stopped, listed as such; a
/// container killed at its own limit (not the agent's cut) and one whose
/// restart policy starts it again are left alone.
#[tokio::test]
async fn a_container_killed_at_the_agents_cut_stays_stopped_at_its_request_without_restarts() {
    let mut r = rig(config("").clone_with(|c| c.restart_evicted = false));
    r.agent.start_event_listener();
    let one = CpuLimit::Nano {
        nano_cpus: 1_000_000_000,
    };
    for id in ["tight", "policy"] {
        r.fake.add(id, &[ENABLE], Some(100 * MIB), one, 900.0);
    }
    r.fake.set_restart_policy("policy", true);
    for _ in 0..4 {
        r.step(&[("tight", 60 * MIB, 0.1), ("policy", 60 * MIB, 0.1)])
            .await;
    }
    let (cut, policy_cut) = (r.mem_limit("tight"), r.mem_limit("policy"));
    assert!(cut < 100 * MIB && policy_cut < 100 * MIB, "shrunk first");
    // started later: too few samples to be resized before its kill
    r.fake.add("own", &[ENABLE], Some(100 * MIB), one, 900.0);
    r.step(&[("own", 60 * MIB, 0.1)]).await;
    let killed_at = r.clock_now() + 0.5;
    for id in ["tight", "own", "policy"] {
        r.fake.oom_kill(id, killed_at, true);
    }
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    for _ in 0..3 {
        r.step(&[]).await;
    }
    assert_eq!(r.mem_limit("tight"), 100 * MIB, "request back");
    assert_eq!(r.mem_limit("own"), 100 * MIB);
    assert!(r.updates_of("own").is_empty(), "never touched");
    assert_eq!(r.mem_limit("policy"), policy_cut, "left to its policy");
    assert!(
        r.fake
            .calls()
            .iter()
            .all(|c| !matches!(c, FakeCall::Start(_))),
        "nothing started"
    );
    let state = |name: &str| recommended(&r, name).first().map(|row| row.0.clone());
    for name in ["tight", "own", "policy"] {
        assert_eq!(
            state(name).as_deref(),
            Some("oom-killed, stopped"),
            "{name}"
        );
    }
}

/// QA D10: with `max_growth` > 1 the OOM floor of a kill at the agent's cut
/// is above the request (the cut + 100 MiB), and the next round raises the
/// restarted container to it: the restart waits until the floor fits, not
/// only the request. Here the node has 150 MiB: the 100 MiB request fits,
/// the ~160 MiB floor does not, so it starts once the floor has ended
/// (`oom_memory_s`).
#[tokio::test]
async fn a_restart_waits_until_its_oom_floor_fits() {
    let cfg = config(&with_capacity("", 4.0, 150 * MIB)).clone_with(|c| {
        c.shaper.max_growth = 3.0;
        c.shaper.oom_memory_s = 8.0;
    });
    let (mut r, cut) = tight_rig(cfg, true, 60 * MIB).await;
    assert!(cut < 100 * MIB, "shrunk first: {} MiB", cut / MIB);
    r.fake.oom_kill("tight", r.clock_now() + 0.5, true);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let mut restarted_round = None;
    for n in 0..14 {
        let rep = r.step(&[]).await;
        if rep.restarted.iter().any(|c| c == "tight") {
            restarted_round = Some(n);
            break;
        }
    }
    let n = restarted_round.expect("restarted once the floor ended");
    assert!(
        n >= 7,
        "not while its floor is held above the node: round {n}"
    );
    assert_eq!(r.mem_limit("tight"), 100 * MIB, "started at its request");
}

//! Limits someone else sets (`docker update`) and agent restarts: which
//! limits are the container's request, against the in-memory fake runtime.

use agent::runtime::{ContainerRuntime, CpuLimit, Limits, ResourceUpdate};
use agent::{Agent, AgentConfig, LocalShaper};
use std::path::Path;
use std::sync::Arc;

mod fake_rig;

use fake_rig::*;

fn nano(cores: f64) -> CpuLimit {
    CpuLimit::Nano {
        nano_cpus: (cores * 1e9) as i64,
    }
}

fn limits(r: &Rig) -> agent::runtime::Limits {
    r.fake.container("c").expect("c").info.limits
}

/// Container `c` (1 GiB, 1 core, inspected every round) after six rounds
/// of an idle load under `cfg`: shaped down.
async fn shaped_rig_with(cfg: AgentConfig) -> Rig {
    let mut r = rig(cfg.clone_with(|c| c.reinspect_every = 1));
    r.fake.add("c", &[ENABLE], Some(GIB), nano(1.0), 900.0);
    for _ in 0..6 {
        r.step(&[("c", 20 * MIB, 0.05)]).await;
    }
    r
}

async fn shaped_rig() -> Rig {
    shaped_rig_with(config("")).await
}

/// An operator's `docker update` while the agent shapes is adopted as the
/// container's request: the agent plans from it and a shutdown restores
/// it, instead of undoing it at the next round.
#[tokio::test]
async fn limits_changed_by_hand_become_the_request() {
    let mut r = shaped_rig().await;
    assert!(limits(&r).mem_bytes.expect("limited") < GIB, "shrunk");
    r.fake
        .update(
            "c",
            &ResourceUpdate {
                mem_bytes: Some(2 * GIB),
                cpu: Some(nano(1.5)),
                mem_swap_bytes: None,
            },
        )
        .await
        .expect("the operator's update");
    let rep = r.step(&[("c", 20 * MIB, 0.05)]).await;
    assert_eq!(rep.view.containers[0].request.mem_bytes, (2 * GIB) as f64);
    assert_eq!(rep.view.containers[0].request.cpu_cores, 1.5);
    r.agent.shutdown().await;
    assert_eq!(
        limits(&r).mem_bytes,
        Some(2 * GIB),
        "restored to the operator's"
    );
    assert_eq!(limits(&r).cpu, nano(1.5));
}

/// A `docker update` of one resource adopts that resource alone: the
/// other keeps its original request, not the agent's cut (an operator who
/// raised the CPU of a shaped container had its cut memory adopted as its
/// request, and a shutdown left it there).
#[tokio::test]
async fn a_limit_changed_by_hand_adopts_that_resource_alone() {
    let mut r = shaped_rig().await;
    let cut = limits(&r);
    assert!(cut.mem_bytes.expect("limited") < GIB, "memory shrunk");
    assert_ne!(cut.cpu, nano(1.0), "CPU shrunk");
    r.fake
        .update(
            "c",
            &ResourceUpdate {
                mem_bytes: None,
                cpu: Some(nano(1.5)),
                mem_swap_bytes: None,
            },
        )
        .await
        .expect("the operator's CPU update");
    let rep = r.step(&[("c", 20 * MIB, 0.05)]).await;
    assert_eq!(rep.view.containers[0].request.cpu_cores, 1.5);
    assert_eq!(
        rep.view.containers[0].request.mem_bytes, GIB as f64,
        "memory keeps its original request"
    );
    r.agent.shutdown().await;
    assert_eq!(limits(&r).mem_bytes, Some(GIB), "memory restored");
    assert_eq!(limits(&r).cpu, nano(1.5), "the operator's CPU kept");
}

/// A config keeping its state in `dir`.
fn with_state(dir: &Path) -> AgentConfig {
    config("").clone_with(|c| c.state_file = dir.join("state.json"))
}

/// The agent killed (no shutdown: limits stay cut) and started again on
/// the same host and state.
fn relaunch(r: Rig, cfg: AgentConfig) -> Rig {
    let Rig { fake, clock, agent } = r;
    drop(agent);
    let source = Box::new(LocalShaper::new(cfg.shaper.clone()));
    let agent = Agent::new(cfg, Arc::new(fake.clone()), source, clock.clone()).expect("agent");
    Rig { fake, clock, agent }
}

/// `c`'s request in the first round of a relaunched agent.
async fn request_after_relaunch(r: Rig, cfg: AgentConfig) -> (Rig, f64, f64) {
    let mut r = relaunch(r, cfg);
    let rep = r.step(&[("c", 20 * MIB, 0.05)]).await;
    let req = rep.view.containers[0].request;
    (r, req.mem_bytes, req.cpu_cores)
}

fn edit_state(dir: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("state.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("state")).expect("JSON");
    f(&mut v);
    std::fs::write(&path, serde_json::to_vec(&v).expect("JSON")).expect("write");
}

/// An agent started again (after a kill: the limits stay cut) plans from
/// the original limits the previous run saw, not from its cut; and no
/// other agent may use the state file while it lives.
#[tokio::test]
async fn original_limits_survive_an_agent_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = with_state(dir.path());
    let r = shaped_rig_with(cfg.clone()).await;
    assert!(limits(&r).mem_bytes.expect("limited") < GIB, "shrunk");
    let mut r = relaunch(r, cfg.clone());
    // While it lives, no other agent (an `--once` preview included) may use
    // its state file.
    let second = Agent::new(
        cfg.clone(),
        Arc::new(r.fake.clone()),
        Box::new(LocalShaper::new(cfg.shaper.clone())),
        r.clock.clone(),
    );
    match second {
        Err(e) => assert!(e.to_string().contains("another tailor agent"), "{e}"),
        Ok(_) => panic!("a second agent on the same state file"),
    }
    let rep = r.step(&[("c", 20 * MIB, 0.05)]).await;
    assert_eq!(
        rep.view.containers[0].request.mem_bytes, GIB as f64,
        "request = original limit, not the shrunk one"
    );
    assert_eq!(rep.view.containers[0].request.cpu_cores, 1.0);
}

/// An operator's `docker update` while no agent runs is found when the
/// agent starts again and adopted, that resource alone: the other keeps
/// its original request, not the cut the agent left.
#[tokio::test]
async fn a_limit_changed_while_the_agent_is_stopped_is_adopted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = with_state(dir.path());
    let r = shaped_rig_with(cfg.clone()).await;
    assert!(
        limits(&r).mem_bytes.expect("limited") < GIB,
        "memory shrunk"
    );
    assert_ne!(limits(&r).cpu, nano(1.0), "CPU shrunk");
    r.fake
        .update(
            "c",
            &ResourceUpdate {
                mem_bytes: Some(2 * GIB),
                cpu: None,
                mem_swap_bytes: None,
            },
        )
        .await
        .expect("the operator's update, no agent running");
    let mut r = relaunch(r, cfg);
    let rep = r.step(&[("c", 20 * MIB, 0.05)]).await;
    assert_eq!(rep.view.containers[0].request.mem_bytes, (2 * GIB) as f64);
    assert_eq!(
        rep.view.containers[0].request.cpu_cores, 1.0,
        "CPU keeps its original request"
    );
    r.agent.shutdown().await;
    assert_eq!(limits(&r).mem_bytes, Some(2 * GIB), "the operator's memory");
    assert_eq!(limits(&r).cpu, nano(1.0), "CPU restored");
}

/// The limits a resize sets are written to the state before the update:
/// an agent killed between the update and its next state write leaves a
/// cut that its next start knows for its own (it would otherwise be taken
/// for the operator's and become the request).
#[tokio::test]
async fn a_cut_written_ahead_is_not_taken_for_a_change_by_hand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = with_state(dir.path());
    let r = shaped_rig_with(cfg.clone()).await;
    let cut = limits(&r);
    assert!(cut.mem_bytes.expect("limited") < GIB);
    // the state as a kill right after the update left it: the cut written
    // ahead, never confirmed
    edit_state(dir.path(), |v| {
        let set = &mut v["set_limits"]["c"];
        assert_eq!(
            serde_json::from_value::<Limits>(set["pending"].clone()).expect("pending"),
            cut,
            "written ahead: {set}"
        );
        set["applied"] = serde_json::Value::Null;
    });
    let (r, mem, cpu) = request_after_relaunch(r, cfg.clone()).await;
    assert_eq!((mem, cpu), (GIB as f64, 1.0), "the original request");
    // without the write-ahead the cut would have been adopted: the check
    // can tell them apart
    edit_state(dir.path(), |v| v["set_limits"]["c"] = serde_json::json!({}));
    let (_, mem, cpu) = request_after_relaunch(r, cfg).await;
    assert_eq!(mem, cut.mem_bytes.expect("limited") as f64, "adopted");
    assert_eq!(cpu, cut.cpu.cores().expect("limited"));
}

/// A state file from an agent that did not write limits ahead: the limits
/// found at the first start after the upgrade are taken as the agent's
/// own, and written for the starts after it.
#[tokio::test]
async fn a_state_from_before_the_write_ahead_keeps_the_original_requests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = with_state(dir.path());
    let r = shaped_rig_with(cfg.clone()).await;
    edit_state(dir.path(), |v| {
        let o = v.as_object_mut().expect("object");
        o.remove("set_limits");
        o.remove("writes_ahead");
    });
    let (r, mem, cpu) = request_after_relaunch(r, cfg.clone()).await;
    assert_eq!(
        (mem, cpu),
        (GIB as f64, 1.0),
        "upgrade: the cut is the agent's"
    );
    let (_, mem, cpu) = request_after_relaunch(r, cfg).await;
    assert_eq!((mem, cpu), (GIB as f64, 1.0), "and at the next start");
}

/// An update the daemon applied but answered with an error (a timeout) is
/// the agent's own: the next inspection does not take the cut for a change
/// by hand (it was written ahead), so the request stays the original.
#[tokio::test]
async fn a_cut_whose_answer_was_lost_is_not_taken_for_a_change_by_hand() {
    let mut r = rig(config("").clone_with(|c| c.reinspect_every = 1));
    r.fake.add("c", &[ENABLE], Some(GIB), nano(1.0), 900.0);
    r.fake.lose_update_answers("c");
    for _ in 0..8 {
        let rep = r.step(&[("c", 20 * MIB, 0.05)]).await;
        assert_eq!(rep.view.containers[0].request.mem_bytes, GIB as f64);
        assert_eq!(rep.view.containers[0].request.cpu_cores, 1.0);
    }
    assert!(limits(&r).mem_bytes.expect("limited") < GIB, "cut");
    r.agent.shutdown().await;
    assert_eq!(limits(&r).mem_bytes, Some(GIB), "restored");
}

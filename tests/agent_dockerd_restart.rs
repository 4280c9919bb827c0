//! Restarting dockerd mid-run does not kill the agent: its rounds fail while
//! the daemon is down (backing off), and it carries on once the daemon is
//! back (event stream resubscribed, containers seen again).
//!
//! A binary of its own: cargo runs test binaries one after another, so no
//! other Docker test is running while the daemon restarts. The daemon is
//! stopped through its pid file and started again with
//! tools/dockerd-start.sh (the way scripts/test.sh started it).

mod agent_common;

use agent::docker::DockerRuntime;
use agent::{Agent, LocalShaper};
use agent_common::*;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailor_core::SystemClock;

fn dockerd_pid() -> Option<u32> {
    std::fs::read_to_string("/var/run/docker.pid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn docker_up() -> bool {
    docker(&["info", "--format", "{{.ServerVersion}}"]).is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_survives_a_dockerd_restart() {
    let test = "dockerd-restart";
    if docker_or_skip(test).is_none() {
        return;
    }
    let Some(pid) = dockerd_pid() else {
        panic!("{test}: dockerd runs but /var/run/docker.pid is missing: cannot restart it");
    };
    let sel = ("tailor.test", test);
    // --restart always: the container comes back with the daemon
    let c = TestContainer::run(
        "tailor-t-restart",
        128,
        0.5,
        &[("tailor.enable", "true"), sel],
        &["8:0.02:3600"],
        &["--restart", "always"],
    );

    let cfg = agent_config(test, "", "");
    let runtime = Arc::new(DockerRuntime::new(&cfg.docker_socket).expect("client"));
    let agent = Agent::new(
        cfg.clone(),
        runtime,
        Box::new(LocalShaper::new(cfg.shaper.clone())),
        Arc::new(SystemClock),
    )
    .expect("agent");
    let shared = agent.shared();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(agent.run(async move {
        let _ = stop_rx.await;
    }));

    // a few good rounds
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (ok_before, _) = shared.metrics.rounds();
    assert!(ok_before >= 2, "rounds ran before the restart");

    // stop dockerd
    let status = Command::new("kill")
        .arg(pid.to_string())
        .status()
        .expect("kill");
    assert!(status.success());
    let t0 = Instant::now();
    while docker_up() && t0.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!docker_up(), "dockerd stopped");
    // wait for its pid file to disappear (clean exit) before starting it again
    let t0 = Instant::now();
    while dockerd_pid() == Some(pid) && t0.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !task.is_finished(),
        "the agent keeps running while dockerd is down"
    );
    let (_, failed_while_down) = shared.metrics.rounds();
    assert!(
        failed_while_down >= 1,
        "rounds failed while dockerd was down"
    );

    // start it again
    let script = workspace_root().join("tools/dockerd-start.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("dockerd-start.sh");
    assert!(
        out.status.success(),
        "restart dockerd: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let restarted_at = tailor_core::Clock::now_s(&SystemClock);

    // the agent carries on: a successful round after the restart that sees the container again
    let t0 = Instant::now();
    let mut seen_again = false;
    while t0.elapsed() < Duration::from_secs(90) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if let Some(r) = shared.last_report() {
            if r.at_s > restarted_at && r.view.containers.iter().any(|v| v.meta.id == c.id) {
                seen_again = true;
                break;
            }
        }
    }
    assert!(!task.is_finished(), "the agent is still running");
    assert!(
        seen_again,
        "after the restart the agent completes rounds and sees the container again"
    );
    let _ = stop_tx.send(());
    let res = tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("agent stops")
        .expect("join");
    assert!(res.is_ok(), "clean shutdown: {res:?}");
    assert!(c.running(), "shutdown leaves containers running");
}

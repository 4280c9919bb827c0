//! The agent child process of the cluster tests: a test spawns its own
//! test binary running one ignored helper test, which reads the agent's
//! configuration from the environment and runs a cluster-mode agent on
//! Docker until it is killed.

#![allow(dead_code)]

use crate::agent_common::agent_config;
use crate::loopback_common::Proc;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const LABEL: &str = "TAILOR_CLUSTER_CHILD_LABEL";
const TOP: &str = "TAILOR_CLUSTER_CHILD_TOP";
const TABLES: &str = "TAILOR_CLUSTER_CHILD_TABLES";
const STATE_FILE: &str = "TAILOR_CLUSTER_CHILD_STATE_FILE";

/// Spawns this test binary's ignored helper test `child_test` as an agent
/// managing containers labelled `tailor.test=<label>`, configured by
/// `top` and `tables` (see `agent_common::agent_config`) and, when given,
/// with its state file at `state_file`; its stderr goes to `log`.
pub fn spawn_agent_child(
    child_test: &str,
    label: &str,
    top: &str,
    tables: &str,
    state_file: Option<&str>,
    log: &Path,
) -> Proc {
    let log = std::fs::File::create(log).expect("log");
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args([
        "--ignored",
        "--exact",
        child_test,
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(LABEL, label)
    .env(TOP, top)
    .env(TABLES, tables);
    if let Some(s) = state_file {
        cmd.env(STATE_FILE, s);
    }
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("spawn agent child");
    Proc { child }
}

/// The body of a helper test spawned by [`spawn_agent_child`]: runs the
/// agent until killed. Run any other way (no configuration in the
/// environment), it says what it is for (`parent`) and returns.
pub fn run_agent_child(name: &str, parent: &str) {
    let Ok(label) = std::env::var(LABEL) else {
        eprintln!("{name}: only run as a child of {parent}");
        return;
    };
    let top = std::env::var(TOP).unwrap_or_default();
    let tables = std::env::var(TABLES).unwrap_or_default();
    let mut cfg = agent_config(&label, &top, &tables);
    if let Ok(s) = std::env::var(STATE_FILE) {
        cfg.state_file = PathBuf::from(s);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let cluster_cfg = cfg.cluster.clone().expect("[cluster]");
        let now_s = tailor_core::Clock::now_s(&tailor_core::SystemClock);
        let source = agent::cluster::ClusterPlanSource::new(&cluster_cfg, now_s)
            .expect("cluster plan source");
        let runtime = std::sync::Arc::new(
            agent::docker::DockerRuntime::new(&cfg.docker_socket).expect("docker"),
        );
        let a = agent::Agent::new(
            cfg,
            runtime,
            Box::new(source),
            std::sync::Arc::new(tailor_core::SystemClock),
        )
        .expect("agent");
        a.run(std::future::pending()).await.expect("agent run");
    });
}

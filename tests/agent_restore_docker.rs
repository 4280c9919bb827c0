//! `on_shutdown = "restore_requests"` against a REAL dockerd (scripts/test.sh
//! installs and starts it): what the agent gives back when it stops. In CI
//! (CI=true) these tests fail when Docker is missing.

mod agent_common;

use agent::docker::DockerRuntime;
use agent::runtime::ResourceUpdate;
use agent::{Agent, AgentConfig, ContainerRuntime, LocalShaper};
use agent_common::*;
use std::sync::Arc;
use std::time::Duration;
use tailor_core::SystemClock;

fn new_agent(cfg: AgentConfig) -> Agent<DockerRuntime> {
    let runtime = Arc::new(DockerRuntime::new(&cfg.docker_socket).expect("docker client"));
    let source = Box::new(LocalShaper::new(cfg.shaper.clone()));
    let mut a = Agent::new(cfg, runtime, source, Arc::new(SystemClock)).expect("agent");
    a.start_event_listener();
    a
}

async fn rounds(agent: &mut Agent<DockerRuntime>, n: usize) {
    for _ in 0..n {
        tokio::time::sleep(Duration::from_secs(1)).await;
        agent.round().await.expect("round against the real dockerd");
    }
}

/// `docker run -d` of the test image with exactly `limits` (docker run
/// flags), removed when dropped.
fn run_with(name: &str, test: &str, limits: &[&str]) -> TestContainer {
    let _ = docker(&["rm", "-f", name]);
    let label = format!("tailor.test={test}");
    let mut args = vec![
        "run",
        "-d",
        "--network",
        "none",
        "--name",
        name,
        "--label",
        "tailor.enable=true",
        "--label",
        &label,
    ];
    args.extend_from_slice(limits);
    args.extend_from_slice(&[IMAGE, "/bin/loadgen", "8:0.02:3600"]);
    let id = docker(&args).unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    TestContainer {
        id,
        name: name.to_string(),
    }
}

/// `docker inspect` field of `c` as an integer.
fn host_config(c: &TestContainer, field: &str) -> i64 {
    let f = format!("{{{{.HostConfig.{field}}}}}");
    docker(&["inspect", "--format", &f, &c.id])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{}: no {field}", c.name))
}

/// The memory + swap limit the kernel applies to running `c` (bytes;
/// `i64::MAX` for none), read inside the container: cgroup v1
/// `memory.memsw.limit_in_bytes`, v2 `memory.max` + `memory.swap.max`.
/// `None` when the kernel has no swap accounting.
fn effective_memsw(c: &TestContainer) -> Option<i64> {
    let read = |f: &str| docker(&["exec", &c.id, "cat", f]).ok();
    let num = |s: String| -> i64 {
        if s == "max" {
            i64::MAX
        } else {
            s.parse()
                .unwrap_or_else(|_| panic!("{}: bad cgroup value {s:?}", c.name))
        }
    };
    if let Some(v1) = read("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes") {
        return Some(num(v1));
    }
    let mem = read("/sys/fs/cgroup/memory.max").map(num)?;
    let swap = read("/sys/fs/cgroup/memory.swap.max").map(num)?;
    Some(mem.saturating_add(swap))
}

/// H4: a container started with `--memory-swap -1` (unlimited swap) and a
/// CFS quota gets both back on shutdown. Before, the update failed on
/// cgroup v1 (`memory.limit_in_bytes: invalid argument`: runc wrote the
/// restored memory limit above the shrunk memory + swap limit, which -1
/// did not raise) and the container kept its shrunk memory without swap.
/// Growing a shaped container's memory above its current swap limit works
/// too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_restores_unlimited_swap_and_cpu_quota() {
    let test = "restore-swap";
    if docker_or_skip(test).is_none() {
        return;
    }
    let c = run_with(
        "tailor-t-rs-swap",
        test,
        &[
            "--memory",
            "256m",
            "--memory-swap",
            "-1",
            "--cpu-quota",
            "50000",
            "--cpu-period",
            "100000",
        ],
    );
    assert_eq!(
        host_config(&c, "MemorySwap"),
        -1,
        "started with unlimited swap"
    );
    let mut agent = new_agent(agent_config(test, "", ""));
    rounds(&mut agent, 8).await;
    let shrunk = c.mem_limit();
    assert!(shrunk < 128 * MIB, "memory cut: {} MiB", shrunk / MIB);
    assert_eq!(
        host_config(&c, "MemorySwap"),
        shrunk as i64,
        "no swap while shaped"
    );
    assert!(host_config(&c, "CpuQuota") < 50_000, "CPU quota cut");
    // a resize that grows memory above the current memory + swap limit
    let runtime = DockerRuntime::new(&agent.config().docker_socket).expect("docker client");
    let grown = shrunk + 64 * MIB;
    runtime
        .update(
            &c.id,
            &ResourceUpdate {
                mem_bytes: Some(grown),
                ..ResourceUpdate::default()
            },
        )
        .await
        .expect("growing memory above the swap limit");
    assert_eq!(c.mem_limit(), grown);
    assert_eq!(host_config(&c, "MemorySwap"), grown as i64);
    if let Some(memsw) = effective_memsw(&c) {
        assert_eq!(memsw, grown as i64, "the kernel applies the grown limit");
    }
    let restored = agent.shutdown().await;
    assert_eq!(restored, vec![c.name.clone()]);
    assert_eq!(c.mem_limit(), 256 * MIB, "memory restored");
    assert_eq!(host_config(&c, "MemorySwap"), -1, "unlimited swap restored");
    if let Some(memsw) = effective_memsw(&c) {
        assert!(
            memsw >= 1 << 62,
            "the kernel applies no swap limit: {memsw}"
        );
    }
    assert_eq!(host_config(&c, "CpuQuota"), 50_000, "CPU quota restored");
    assert_eq!(host_config(&c, "CpuPeriod"), 100_000);
    assert_eq!(c.nano_cpus(), 0);
    assert!(c.running());
}

/// H5: a container that is stopped when the agent stops (here by the
/// operator) gets its original limits back too, so that `docker start`
/// runs it at the size it was started with, not the shrunk one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_restores_stopped_containers() {
    let test = "restore-stopped";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = [("tailor.enable", "true"), ("tailor.test", test)];
    let stopped = TestContainer::run("tailor-t-rs-stopped", 512, 0.5, &sel, &["8:0.02:3600"], &[]);
    let running = TestContainer::run("tailor-t-rs-running", 512, 0.5, &sel, &["8:0.02:3600"], &[]);
    let mut agent = new_agent(agent_config(test, "", ""));
    rounds(&mut agent, 8).await;
    for c in [&stopped, &running] {
        assert!(
            c.mem_limit() < 256 * MIB,
            "{} memory cut: {} MiB",
            c.name,
            c.mem_limit() / MIB
        );
        assert!(c.nano_cpus() < 500_000_000, "{} CPU cut", c.name);
    }
    docker(&["stop", "-t", "0", &stopped.id]).expect("docker stop");
    rounds(&mut agent, 2).await;
    assert!(!stopped.running());
    let mut restored = agent.shutdown().await;
    restored.sort();
    assert_eq!(restored, vec![running.name.clone(), stopped.name.clone()]);
    assert!(!stopped.running(), "restoring does not start it");
    for c in [&stopped, &running] {
        assert_eq!(c.mem_limit(), 512 * MIB, "{} memory restored", c.name);
        assert_eq!(
            host_config(c, "MemorySwap"),
            512 * MIB as i64,
            "{} swap",
            c.name
        );
        assert_eq!(c.nano_cpus(), 500_000_000, "{} CPU restored", c.name);
    }
    docker(&["start", &stopped.id]).expect("docker start");
    assert!(stopped.running());
    if let Some(memsw) = effective_memsw(&stopped) {
        assert_eq!(memsw, 512 * MIB as i64, "started at its original size");
    }
}

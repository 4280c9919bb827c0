//! Helpers for the Podman integration tests (tests/agent_podman.rs): the
//! real Podman's CLI and API socket, its containers (removed when dropped),
//! the agent process and the agent library on Podman.

#![allow(dead_code)]

use crate::agent_common::{self, cli, in_ci};
use agent::podman::PodmanRuntime;
use agent::Agent;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const SOCK: &str = "/run/podman/podman.sock";
pub const IMAGE: &str = "localhost/tailor-test:latest";
pub const MIB: u64 = 1 << 20;

pub fn podman(args: &[&str]) -> Result<String, String> {
    cli("podman", args)
}

/// A raw HTTP/1.0 request; (status, body).
pub fn http(stream: impl Read + Write, method: &str, path: &str) -> Option<(u16, String)> {
    let mut stream = stream;
    let req = format!("{method} {path} HTTP/1.0\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    stream.write_all(req.as_bytes()).ok()?;
    let mut buf = String::new();
    stream.read_to_string(&mut buf).ok()?;
    let (head, body) = buf.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

pub fn podman_api(method: &str, path: &str) -> Option<(u16, String)> {
    let s = std::os::unix::net::UnixStream::connect(SOCK).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    http(s, method, path)
}

pub fn agent_http(addr: &str, path: &str) -> Option<(u16, String)> {
    let s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    http(s, "GET", path)
}

pub fn problem() -> Option<String> {
    let ready = || -> Option<String> {
        match podman_api("GET", "/_ping") {
            Some((200, _)) => {}
            other => return Some(format!("{SOCK} does not answer /_ping: {other:?}")),
        }
        podman(&["image", "exists", IMAGE])
            .err()
            .map(|e| format!("test image {IMAGE} missing: {e}"))
    };
    ready()?;
    // try to start it once (installs podman when missing)
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/podman-start.sh");
    if let Ok(o) = Command::new("bash").arg(&script).output() {
        if !o.status.success() {
            eprintln!(
                "{} failed:\n{}{}",
                script.display(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    ready()
}

pub fn podman_or_skip(test: &str) -> bool {
    match problem() {
        None => true,
        Some(p) if in_ci() => {
            panic!("{test}: Podman is required in CI (CI=true) but unavailable: {p}")
        }
        Some(p) => {
            eprintln!("\n!!!!!!!!!! SKIPPED {test}: Podman unavailable: {p}\n!!!!!!!!!! run ./scripts/test.sh (tools/podman-start.sh) to install and start it\n");
            false
        }
    }
}

/// The test image's load generator running `steps`.
pub fn loadgen<'a>(steps: &[&'a str]) -> Vec<&'a str> {
    let mut cmd = vec!["/bin/loadgen"];
    cmd.extend_from_slice(steps);
    cmd
}

/// A Podman container, removed when dropped.
pub struct PodmanContainer {
    pub id: String,
}

impl Drop for PodmanContainer {
    fn drop(&mut self) {
        let _ = podman(&["rm", "-f", "-t", "0", &self.id]);
    }
}

impl PodmanContainer {
    pub fn run(
        name: &str,
        mem_mib: u64,
        cpus: f64,
        labels: &[(&str, &str)],
        steps: &[&str],
    ) -> Self {
        Self::start(name, Some((mem_mib, cpus)), labels, &loadgen(steps))
    }

    /// `podman run` without a memory or CPU limit.
    pub fn run_unlimited(name: &str, labels: &[(&str, &str)], steps: &[&str]) -> Self {
        Self::start(name, None, labels, &loadgen(steps))
    }

    /// `podman run` of `cmd` in the test image.
    pub fn start(
        name: &str,
        limits: Option<(u64, f64)>,
        labels: &[(&str, &str)],
        cmd: &[&str],
    ) -> Self {
        Self::start_with(name, limits, labels, &[], cmd)
    }

    /// [`PodmanContainer::start`] with `extra` options for `podman run`.
    pub fn start_with(
        name: &str,
        limits: Option<(u64, f64)>,
        labels: &[(&str, &str)],
        extra: &[&str],
        cmd: &[&str],
    ) -> Self {
        let _ = podman(&["rm", "-f", "-t", "0", name]);
        let mut args: Vec<String> = ["run", "-d", "--network", "none", "--name", name]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if let Some((mem_mib, cpus)) = limits {
            let mem = format!("{mem_mib}m");
            args.extend([
                "--memory".into(),
                mem.clone(),
                "--memory-swap".into(),
                mem,
                "--cpus".into(),
                format!("{cpus}"),
            ]);
        }
        for (k, v) in labels {
            args.push("--label".into());
            args.push(format!("{k}={v}"));
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(IMAGE.into());
        args.extend(cmd.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let id = podman(&refs).unwrap_or_else(|e| panic!("cannot start {name} on Podman: {e}"));
        PodmanContainer { id }
    }

    pub fn inspect_u64(&self, field: &str) -> u64 {
        podman(&["inspect", "--format", &format!("{{{{{field}}}}}"), &self.id])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// The kernel's memory limit of the container's cgroup (v1 or v2).
    pub fn cgroup_mem_limit(&self) -> Option<u64> {
        let pid = self.inspect_u64(".State.Pid");
        let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        for line in cg.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
            let file = if ctrl.split(',').any(|c| c == "memory") {
                Path::new("/sys/fs/cgroup/memory")
                    .join(path.trim_start_matches('/'))
                    .join("memory.limit_in_bytes")
            } else if ctrl.is_empty() && Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
                Path::new("/sys/fs/cgroup")
                    .join(path.trim_start_matches('/'))
                    .join("memory.max")
            } else {
                continue;
            };
            return std::fs::read_to_string(file).ok()?.trim().parse().ok();
        }
        None
    }
}

/// Kills the agent (SIGTERM, then SIGKILL) when dropped.
pub struct AgentProcess(pub Child);

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// An agent library instance on the real Podman (recommend mode: Debian's
/// Podman cannot resize), with the integration tests' kernel settings.
pub async fn podman_agent(
    test: &str,
    top: &str,
    tables: &str,
    state_dir: Option<&Path>,
) -> Agent<PodmanRuntime> {
    let mut cfg = agent_common::agent_config(test, top, tables);
    if let Some(dir) = state_dir {
        cfg.state_file = dir.join("agent-state.json");
    }
    podman_agent_with(cfg).await
}

pub async fn podman_agent_with(cfg: agent::AgentConfig) -> Agent<PodmanRuntime> {
    let runtime = Arc::new(PodmanRuntime::connect(SOCK).await.expect("podman client"));
    agent_common::local_agent(cfg, runtime)
}

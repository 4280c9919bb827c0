//! Helpers for the agent's Docker integration tests (real dockerd).
//!
//! `docker_or_skip()` checks that Docker answers and that the test image is
//! there (building it with tools/build-test-image.sh if needed). When Docker
//! is unavailable the tests FAIL if `CI=true`, and skip with a loud message
//! otherwise. `scripts/test.sh` installs and starts dockerd first.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

pub const IMAGE: &str = "tailor-test:latest";
pub const MIB: u64 = 1 << 20;

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn in_ci() -> bool {
    std::env::var("CI")
        .map(|v| !v.is_empty() && v != "false" && v != "0")
        .unwrap_or(false)
}

/// `Some(())` when Docker and the test image are ready. Panics in CI when
/// they are not; returns `None` (after a loud message) elsewhere.
pub fn docker_or_skip(test: &str) -> Option<()> {
    let problem = match Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
    {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`docker info` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run `docker`: {e}")),
    };
    let problem = problem.or_else(|| {
        let script = workspace_root().join("tools/build-test-image.sh");
        match Command::new("bash").arg(&script).output() {
            Ok(o) if o.status.success() => None,
            Ok(o) => Some(format!(
                "{} failed: {}{}",
                script.display(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )),
            Err(e) => Some(format!("cannot run {}: {e}", script.display())),
        }
    });
    match problem {
        None => Some(()),
        Some(p) if in_ci() => {
            panic!("{test}: Docker is required in CI (CI=true) but unavailable: {p}")
        }
        Some(p) => {
            eprintln!("\n!!!!!!!!!! SKIPPED {test}: Docker unavailable: {p}\n!!!!!!!!!! run ./scripts/test.sh to install and start dockerd\n");
            None
        }
    }
}

pub fn docker(args: &[&str]) -> Result<String, String> {
    cli("docker", args)
}

/// Runs `program` with `args`; its trimmed stdout, or what went wrong.
pub fn cli(program: &str, args: &[&str]) -> Result<String, String> {
    let o = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// A test container, removed (`docker rm -f`) when dropped.
pub struct TestContainer {
    pub id: String,
    pub name: String,
}

impl Drop for TestContainer {
    fn drop(&mut self) {
        let _ = docker(&["rm", "-f", &self.id]);
    }
}

impl TestContainer {
    /// `docker run -d --network none` of the test image running
    /// `loadgen STEPS...`, with the given memory limit (MiB), CPU limit
    /// (cores) and labels.
    pub fn run(
        name: &str,
        mem_mib: u64,
        cpus: f64,
        labels: &[(&str, &str)],
        steps: &[&str],
        extra: &[&str],
    ) -> TestContainer {
        let mut cmd = vec!["/bin/loadgen"];
        cmd.extend_from_slice(steps);
        Self::run_cmd(name, mem_mib, cpus, labels, extra, &cmd)
    }

    /// Like [`TestContainer::run`], running `cmd` in the test image.
    pub fn run_cmd(
        name: &str,
        mem_mib: u64,
        cpus: f64,
        labels: &[(&str, &str)],
        extra: &[&str],
        cmd: &[&str],
    ) -> TestContainer {
        let _ = docker(&["rm", "-f", name]);
        let mut args: Vec<String> = vec![
            "run".into(),
            "-d".into(),
            "--network".into(),
            "none".into(),
            "--name".into(),
            name.into(),
            "--memory".into(),
            format!("{mem_mib}m"),
            "--memory-swap".into(),
            format!("{mem_mib}m"),
            "--cpus".into(),
            format!("{cpus}"),
        ];
        for (k, v) in labels {
            args.push("--label".into());
            args.push(format!("{k}={v}"));
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(IMAGE.into());
        args.extend(cmd.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let id = docker(&refs).unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        TestContainer {
            id,
            name: name.to_string(),
        }
    }

    pub fn mem_limit(&self) -> u64 {
        docker(&["inspect", "--format", "{{.HostConfig.Memory}}", &self.id])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    pub fn nano_cpus(&self) -> i64 {
        docker(&["inspect", "--format", "{{.HostConfig.NanoCpus}}", &self.id])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    pub fn running(&self) -> bool {
        docker(&["inspect", "--format", "{{.State.Running}}", &self.id])
            .map(|s| s == "true")
            .unwrap_or(false)
    }

    pub fn oom_killed(&self) -> bool {
        docker(&["inspect", "--format", "{{.State.OOMKilled}}", &self.id])
            .map(|s| s == "true")
            .unwrap_or(false)
    }
}

/// An agent config for the tests: 1 s interval, short history, no grace
/// period, a fast baseline forecaster, containers selected by
/// `tailor.test=<test>`.
/// `top` holds top-level keys, `tables` extra tables.
pub fn agent_config(test: &str, top: &str, tables: &str) -> agent::AgentConfig {
    test_config(
        test,
        top,
        "k1 = 0.1\nk2 = 3.0\nmin_history_samples = 3\nhorizon_samples = 3\n\
         small_app_components = 0\napp_mem_ref_rel = 0.0\nsibling_hold_s = 0.0",
        &format!("[forecaster]\nkind = \"peak\"\ncalibrated = false\n[forecaster.peak]\nwindow = 5\n{tables}"),
    )
}

/// The agent's shipped forecaster and kernel settings (calibrated last
/// value, k1 = 0.05, k2 = 1, the size rules), no grace period, in
/// `recommend` mode, recording every round to `record_path`.
pub fn recording_config(test: &str, record_path: &std::path::Path) -> agent::AgentConfig {
    test_config(
        test,
        "actuation = \"recommend\"",
        "",
        &format!(
            "[record]\nenabled = true\npath = {:?}\nmax_bytes = 16777216\n",
            record_path.display().to_string()
        ),
    )
}

/// The agent's shipped forecaster and shaper settings (calibrated last
/// value, k1 = 0.05, k2 = 1, the size rules, 6-sample horizon) at a 1 s
/// interval, except the shaper's grace period (0: act on young
/// containers).
pub fn default_forecaster_config(test: &str) -> agent::AgentConfig {
    test_config(test, "", "", "")
}

fn test_config(test: &str, top: &str, shaper: &str, tables: &str) -> agent::AgentConfig {
    // the tests were written for the agent's earlier defaults (shape,
    // unlimited containers managed, no eviction cap): kept unless a test
    // sets the key itself
    let mut top = top.to_string();
    if !top.contains("actuation") {
        top.push_str("\nactuation = \"shape\"");
    }
    if !top.contains("manage_unlimited") {
        top.push_str("\nmanage_unlimited = true");
    }
    let mut shaper = shaper.to_string();
    if !shaper.contains("k1") {
        // written for the earlier default buffer (k1 = 0.05; now 0.4)
        shaper.push_str("\nk1 = 0.05");
    }
    if !shaper.contains("max_evictions_per_round") {
        shaper.push_str("\nmax_evictions_per_round = 1000");
    }
    let text = format!(
        r#"
interval_s = 1.0
state_file = ""
host_lock = ""
stop_grace_s = 1
restart_cooldown_s = 2.0
{top}
[selector]
labels = {{ "tailor.test" = "{test}" }}
[http]
listen = ""
[shaper]
grace_period_s = 0.0
{shaper}
{tables}
"#
    );
    agent::config::check_toml(&text).unwrap_or_else(|e| panic!("test config: {e}"))
}

/// (forecast source, samples seen) of container `name` in a round.
pub fn seen(r: &agent::RoundReport, name: &str) -> Option<(Option<shaper::ForecastSource>, u64)> {
    r.view
        .containers
        .iter()
        .find(|c| c.meta.name == name)
        .map(|c| (c.forecast_source, c.samples))
}

/// An agent planning locally (its own kernel) over `runtime`, on the wall
/// clock.
pub fn local_agent<R: agent::ContainerRuntime>(
    cfg: agent::AgentConfig,
    runtime: std::sync::Arc<R>,
) -> agent::Agent<R> {
    let source = Box::new(agent::LocalShaper::new(cfg.shaper.clone()));
    agent::Agent::new(
        cfg,
        runtime,
        source,
        std::sync::Arc::new(tailor_core::SystemClock),
    )
    .expect("agent")
}

/// One round, a second after the caller's last one.
pub async fn round_in_1s<R: agent::ContainerRuntime>(
    agent: &mut agent::Agent<R>,
) -> agent::RoundReport {
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    agent.round().await.expect("round against the real engine")
}

/// An agent over the real dockerd at `cfg.docker_socket`.
pub fn docker_agent(cfg: agent::AgentConfig) -> agent::Agent<agent::docker::DockerRuntime> {
    let runtime = agent::docker::DockerRuntime::new(&cfg.docker_socket).expect("docker client");
    local_agent(cfg, std::sync::Arc::new(runtime))
}

/// A busybox shell loop that bursts 4 processes for 50 ms every ~0.55 s:
/// about 0.13 cores on average, but 4 cores within a CFS period, so a
/// container limited to 0.5 cores is throttled while using far less.
pub const BURSTS: &str = "while :; do p=''; for i in 1 2 3 4; do yes >/dev/null & p=\"$p $!\"; done; sleep 0.05; kill $p; wait; sleep 0.5; done";

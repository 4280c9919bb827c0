//! `tailor agent` against a REAL Podman (`podman system service` on
//! /run/podman/podman.sock, Debian's podman; scripts/test.sh starts it with
//! tools/podman-start.sh). Podman 4.3 has no compat update route, so the
//! agent configured with `actuation = "shape"` must detect it at start, say
//! so, run in recommend mode (plans computed and served, nothing applied)
//! and still sample and forecast. On a Podman that can resize, the test
//! checks instead that the agent kept shaping.
//! In CI (CI=true) the test fails when Podman is missing; elsewhere it skips
//! loudly.
//!
//! The Podman twins of two Docker tests run the agent library on the same
//! engine (recommend mode): an unlimited container gets no limit and causes
//! no eviction, and models survive an agent restart and a re-creation. The
//! restart policy Podman reports marks a container that restarts alone.

mod agent_common;
mod podman_common;

use agent::podman::PodmanRuntime;
use agent::NodeActionKind;
use serde_json::Value;
use shaper::ForecastSource;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use podman_common::*;

#[test]
fn podman_without_update_route_runs_shape_config_as_recommend() {
    let test = "podman_recommend";
    if !podman_or_skip(test) {
        return;
    }
    let sel = ("tailor.test", test);
    let on = ("tailor.enable", "true");
    // idle containers with generous limits: the shaper wants to shrink them
    let a = PodmanContainer::run("tailor-p-idle1", 256, 1.0, &[on, sel], &["8:0.02:3600"]);
    let b = PodmanContainer::run(
        "tailor-p-idle2",
        256,
        1.0,
        &[on, sel, ("tailor.app", "web")],
        &["12:0.02:3600"],
    );
    // labelled for the test but not opted in: never managed
    let stranger = PodmanContainer::run("tailor-p-stranger", 128, 0.5, &[sel], &["8:0.02:3600"]);
    let before: Vec<(u64, u64, Option<u64>)> = [&a, &b, &stranger]
        .iter()
        .map(|c| {
            (
                c.inspect_u64(".HostConfig.Memory"),
                c.inspect_u64(".HostConfig.NanoCpus"),
                c.cgroup_mem_limit(),
            )
        })
        .collect();
    assert_eq!(before[0].0, 256 * MIB, "podman run --memory 256m");
    assert_eq!(
        before[0].2,
        Some(256 * MIB),
        "cgroup limit of a fresh container"
    );

    // Does this Podman have the compat update route? (4.3.1: no)
    let (status, body) =
        podman_api("POST", "/containers/tailor-no-such-container/update").expect("podman answers");
    let route_missing = !(status == 404 && body.trim_start().starts_with('{'));
    let version = podman_api("GET", "/version")
        .map(|(_, b)| b)
        .unwrap_or_default();
    println!("podman update probe: {status} {body:?}; route missing: {route_missing}");

    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let cfg = dir.path().join("agent.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"actuation = "shape"
interval_s = 1.0
warmup_rounds = 0
state_file = "{state}"
host_lock = ""
[runtime]
kind = "podman"
socket = "{SOCK}"
[http]
listen = "{listen}"
[selector]
labels = {{ "tailor.test" = "{test}" }}
[shaper]
k1 = 0.1
k2 = 3.0
min_history_samples = 3
horizon_samples = 3
grace_period_s = 0.0
[forecaster]
kind = "peak"
calibrated = false
[forecaster.peak]
window = 5
"#,
            state = dir.path().join("state.json").display(),
        ),
    )
    .expect("write agent.toml");
    let log_path = dir.path().join("agent.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["agent", "--config"])
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start tailor agent");
    let mut agent = AgentProcess(child);

    // wait for rounds with forecasts and a plan (at most 90 s: a loaded
    // machine; the test ends as soon as they are there)
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut last: Option<Value> = None;
    let mut recommended = 0usize;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        if let Ok(Some(st)) = agent.0.try_wait() {
            panic!(
                "the agent exited ({st}):\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        }
        let Some((200, body)) = agent_http(&listen, "/v1/decisions") else {
            continue;
        };
        let r: Value = serde_json::from_str(&body).expect("decisions JSON");
        let outcomes = r["outcomes"].as_array().cloned().unwrap_or_default();
        recommended = recommended.max(
            outcomes
                .iter()
                .filter(|o| o["result"] == "recommended")
                .count(),
        );
        let forecasts = r["view"]["containers"]
            .as_array()
            .map(|cs| cs.iter().filter(|c| !c["forecast"].is_null()).count())
            .unwrap_or(0);
        last = Some(r);
        if forecasts == 2 && (recommended > 0 || !route_missing) {
            break;
        }
    }
    let log_text = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let r = last.unwrap_or_else(|| panic!("no round served on /v1/decisions:\n{}", log_text()));
    let (_, metrics) = agent_http(&listen, "/metrics").expect("metrics");
    // `tailor recommendations --csv` against the running agent: every
    // managed container, per resource, with target and bounds in cores/MiB
    let out = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args([
            "recommendations",
            "--csv",
            "--url",
            &format!("http://{listen}"),
        ])
        .output()
        .expect("run tailor recommendations");
    let csv = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "recommendations failed: {csv}");
    drop(agent);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("container,app,resource,unit,current_limit,request,usage,lower,target,upper,confidence,reason,applied,state"),
        "{csv}"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for name in ["tailor-p-idle1", "tailor-p-idle2"] {
        for (resource, unit) in [("cpu", "cores"), ("memory", "MiB")] {
            let row = rows
                .iter()
                .find(|r| r[0] == name && r[2] == resource)
                .unwrap_or_else(|| panic!("no {resource} row for {name}: {csv}"));
            assert_eq!(row[3], unit, "{csv}");
            let num = |i: usize| row[i].parse::<f64>().unwrap_or(f64::NAN);
            let (lower, target, upper) = (num(7), num(8), num(9));
            assert!(
                lower <= target && target <= upper && target > 0.0,
                "bounds around the target: {row:?}"
            );
            let request = if unit == "MiB" { 256.0 } else { 1.0 };
            assert_eq!(num(5), request, "request in {unit}: {row:?}");
        }
    }
    assert!(
        !rows.iter().any(|r| r[0] == "tailor-p-stranger"),
        "unmanaged container listed: {csv}"
    );
    let log = log_text();
    println!("--- agent log ---\n{log}");

    // stats flow on Podman: both managed containers sampled and forecast
    let containers = r["view"]["containers"].as_array().expect("containers");
    let names: Vec<&str> = containers
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(containers.len(), 2, "two managed containers, got {names:?}");
    assert!(!names.contains(&"tailor-p-stranger"), "{names:?}");
    for c in containers {
        assert!(
            !c["forecast"].is_null(),
            "no forecast for {}: {c}",
            c["name"]
        );
        assert!(c["samples"].as_u64().unwrap_or(0) >= 3, "{c}");
        let used = c["usage"]["mem_bytes"].as_f64().unwrap_or(0.0);
        assert!(
            used > 1.0 * MIB as f64 && used < 256.0 * MIB as f64,
            "memory usage from Podman's stats: {used}"
        );
        assert_eq!(
            c["request"]["mem_bytes"].as_f64(),
            Some(256.0 * MIB as f64),
            "request from Podman's inspect: {c}"
        );
    }
    assert!(log.contains("podman capabilities probed"), "{log}");
    assert!(log.contains("Podman Engine"), "engine name logged: {log}");

    if route_missing {
        assert!(version.contains("Podman Engine"), "{version}");
        // detected and said so
        assert!(log.contains("update_route=\"missing\""), "{log}");
        assert!(
            log.contains("cannot resize running containers: running in recommend mode"),
            "{log}"
        );
        assert!(!log.contains("Resize {"), "no Debug dumps in the log");
        assert_eq!(
            metric(&metrics, "tailor_agent_runtime_can_update"),
            Some(0.0),
            "{metrics}"
        );
        assert_eq!(
            metric(&metrics, "tailor_agent_recommend_forced"),
            Some(1.0),
            "{metrics}"
        );
        // ran in recommend mode: a plan, none of it applied
        assert_eq!(r["actuation"], "recommend", "{r}");
        assert!(recommended > 0, "the shaper planned nothing: vacuous\n{r}");
        assert_eq!(
            metric(&metrics, "tailor_agent_runtime_errors_total{op=\"update\"}"),
            Some(0.0),
            "no update was attempted: {metrics}"
        );
        // and changed no container limit (Podman's view and the kernel's)
        let after: Vec<(u64, u64, Option<u64>)> = [&a, &b, &stranger]
            .iter()
            .map(|c| {
                (
                    c.inspect_u64(".HostConfig.Memory"),
                    c.inspect_u64(".HostConfig.NanoCpus"),
                    c.cgroup_mem_limit(),
                )
            })
            .collect();
        assert_eq!(before, after, "limits changed in recommend mode");
    } else {
        assert_eq!(
            metric(&metrics, "tailor_agent_runtime_can_update"),
            Some(1.0)
        );
        assert_eq!(metric(&metrics, "tailor_agent_recommend_forced"), Some(0.0));
        assert_eq!(r["actuation"], "shape", "{r}");
    }
}

/// The Podman twin of tests/agent_unlimited_docker.rs: with the default
/// `manage_unlimited = false`, a container without limits counts at what it
/// uses, gets no recommendation and makes no one an eviction candidate,
/// while the labelled containers next to it are recommended smaller limits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podman_unlimited_container_gets_no_limit_and_causes_no_eviction() {
    let test = "podman_unlimited";
    if !podman_or_skip(test) {
        return;
    }
    let labels = [("tailor.enable", "true"), ("tailor.test", test)];
    let free = PodmanContainer::run_unlimited("tailor-p-unl-free", &labels, &["60:0.02:3600"]);
    let a = PodmanContainer::run("tailor-p-unl-a", 256, 1.0, &labels, &["20:0.02:3600"]);
    let b = PodmanContainer::run("tailor-p-unl-b", 256, 1.0, &labels, &["20:0.02:3600"]);
    assert_eq!(
        free.inspect_u64(".HostConfig.Memory"),
        0,
        "started without a limit"
    );
    let mut agent = podman_agent(
        test,
        "manage_unlimited = false\nactuation = \"recommend\"",
        &format!("[capacity]\ncpu_cores = 2.0\nmem_bytes = {}\n", 400 * MIB),
        None,
    )
    .await;
    for _ in 0..3 {
        agent.sample_only().await.expect("sample");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut evictions = Vec::new();
    let mut touched_free = Vec::new();
    let mut mem_targets: Vec<(String, f64)> = Vec::new();
    let mut free_seen = false;
    for _ in 0..10 {
        let r = agent_common::round_in_1s(&mut agent).await;
        free_seen |= r
            .view
            .containers
            .iter()
            .any(|c| c.meta.name == "tailor-p-unl-free");
        for o in &r.outcomes {
            match &o.action.kind {
                NodeActionKind::Evict { .. } => evictions.push(o.action.container_name.clone()),
                NodeActionKind::Resize { to, .. } => {
                    mem_targets.push((o.action.container_name.clone(), to.mem_bytes))
                }
            }
            if o.action.container_name == "tailor-p-unl-free" {
                touched_free.push(format!("{:?}", o.action.kind));
            }
        }
    }
    assert!(free_seen, "the unlimited container is in the agent's view");
    assert!(evictions.is_empty(), "evictions: {evictions:?}");
    assert!(
        touched_free.is_empty(),
        "unlimited container acted on: {touched_free:?}"
    );
    for name in ["tailor-p-unl-a", "tailor-p-unl-b"] {
        let last = mem_targets.iter().rev().find(|(n, _)| n == name);
        assert!(
            last.is_some_and(|(_, m)| *m < (256 * MIB) as f64),
            "{name} is recommended a smaller memory limit: {last:?}"
        );
    }
    // recommend mode: nothing was applied
    assert_eq!(
        free.inspect_u64(".HostConfig.Memory"),
        0,
        "no memory limit given"
    );
    assert_eq!(
        free.inspect_u64(".HostConfig.NanoCpus"),
        0,
        "no CPU limit given"
    );
    assert_eq!(a.inspect_u64(".HostConfig.Memory"), 256 * MIB);
    assert_eq!(b.inspect_u64(".HostConfig.Memory"), 256 * MIB);
}

/// The Podman twin of tests/agent_docker.rs
/// `memory_is_never_cut_below_the_reservation`, in recommend mode: an idle
/// container's memory is recommended down to its `--memory-reservation`,
/// not below, and nothing is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podman_memory_is_never_recommended_below_the_reservation() {
    let test = "podman_reserved";
    if !podman_or_skip(test) {
        return;
    }
    let labels = [("tailor.enable", "true"), ("tailor.test", test)];
    let c = PodmanContainer::start_with(
        "tailor-p-reserved",
        Some((256, 1.0)),
        &labels,
        &["--memory-reservation", "160m"],
        &loadgen(&["8:0.02:3600"]),
    );
    let mut agent = podman_agent(test, "actuation = \"recommend\"", "", None).await;
    let mut last_mem_target = None;
    for _ in 0..8 {
        let r = agent_common::round_in_1s(&mut agent).await;
        for o in &r.outcomes {
            if let NodeActionKind::Resize { to, .. } = &o.action.kind {
                last_mem_target = Some(to.mem_bytes);
            }
        }
    }
    assert_eq!(
        last_mem_target,
        Some((160 * MIB) as f64),
        "recommended down to the reservation, not below"
    );
    assert_eq!(
        c.inspect_u64(".HostConfig.Memory"),
        256 * MIB,
        "nothing applied"
    );
    assert_eq!(c.inspect_u64(".HostConfig.MemoryReservation"), 160 * MIB);
}

/// The Podman twin of tests/agent_models_docker.rs: models survive an
/// agent restart (the first round after it forecasts from the restored
/// model, not from the request) and a container's re-creation under the
/// same name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podman_models_survive_restart_and_recreation() {
    let test = "podman_models";
    if !podman_or_skip(test) {
        return;
    }
    let dir = tempfile::tempdir().expect("tmp");
    let name = "tailor-p-models";
    let labels = [("tailor.enable", "true"), ("tailor.test", test)];
    let first = PodmanContainer::run(name, 256, 1.0, &labels, &["24:0.02:3600"]);
    let top = "actuation = \"recommend\"";

    let mut a = podman_agent(test, top, "", Some(dir.path())).await;
    let mut before = 0;
    for _ in 0..8 {
        let r = agent_common::round_in_1s(&mut a).await;
        if let Some((_, n)) = agent_common::seen(&r, name) {
            before = n;
        }
    }
    assert!(before >= 6, "the first agent fed {before} samples");
    drop(a);
    assert!(
        dir.path().join(agent::checkpoint::MODELS_FILE).exists(),
        "models checkpointed under the state directory"
    );

    let mut b = podman_agent(test, top, "", Some(dir.path())).await;
    let r = agent_common::round_in_1s(&mut b).await;
    let (source, n) = agent_common::seen(&r, name).expect("container listed");
    assert_eq!(
        source,
        Some(ForecastSource::Own),
        "first round after the restart forecasts from the restored model"
    );
    assert!(n >= 4, "restored history: {n} samples");

    drop(first);
    agent_common::round_in_1s(&mut b).await; // sees it gone: its history is kept under its name
    let _second = PodmanContainer::run(name, 256, 1.0, &labels, &["24:0.02:3600"]);
    let r = agent_common::round_in_1s(&mut b).await;
    let (source, n) = agent_common::seen(&r, name).expect("recreated container listed");
    assert!(n > 3, "inherited history: {n} samples");
    assert_eq!(
        source,
        Some(ForecastSource::Own),
        "the recreated container starts from its predecessor's model"
    );
}

/// The Podman twin of tests/agent_throttled_docker.rs, in recommend mode:
/// Podman 4.3's compat stats report no throttling, so the agent reads the
/// container's cgroup `cpu.stat`; a bursty container throttled under its
/// 0.5-core limit is recommended no CPU cut (the recommendation says why),
/// a quiet neighbour is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podman_throttled_container_cpu_is_not_shrunk() {
    let test = "podman_throttled";
    if !podman_or_skip(test) {
        return;
    }
    let labels = [("tailor.enable", "true"), ("tailor.test", test)];
    let hot = "tailor-p-thr-hot";
    let _hot = PodmanContainer::start(
        hot,
        Some((256, 0.5)),
        &labels,
        &["sh", "-c", agent_common::BURSTS],
    );
    let calm = "tailor-p-thr-calm";
    let _calm = PodmanContainer::run(calm, 256, 0.5, &labels, &["16:0.05:3600"]);
    // no buffer: the plan follows the (peak) forecast, so a CPU cut is
    // planned for both containers even on a loaded machine
    let mut cfg = agent_common::agent_config(test, "actuation = \"recommend\"", "");
    cfg.shaper.k1 = 0.0;
    cfg.shaper.k2 = 0.0;
    let mut agent = podman_agent_with(cfg).await;
    let mut cuts: Vec<(String, Option<String>)> = Vec::new();
    for _ in 0..10 {
        let r = agent_common::round_in_1s(&mut agent).await;
        for o in &r.outcomes {
            if let NodeActionKind::Resize { from, to } = &o.action.kind {
                if to.cpu_cores < from.cpu_cores {
                    cuts.push((o.action.container_name.clone(), o.error.clone()));
                }
            }
        }
    }
    assert!(
        agent.shared().metrics.throttled_periods() > 0,
        "throttled periods read from the cgroup"
    );
    let held = |name: &str| {
        cuts.iter()
            .any(|(n, note)| n == name && note.as_deref().is_some_and(|t| t.contains("throttled")))
    };
    assert!(
        held(hot),
        "the bursty container's CPU cut is held back: {cuts:?}"
    );
    assert!(
        cuts.iter().any(|(n, _)| n == calm) && !held(calm),
        "the quiet neighbour's CPU cut is recommended: {cuts:?}"
    );
}

/// Podman 4.3 never says that the kernel OOM-killed a container (no `oom`
/// event, `OOMKilled` false, exit code 137; agent/PODMAN.md). The Podman
/// adapter infers the kill from the SIGKILL exit of a memory-limited
/// container it did not stop: the agent counts it once, as found by
/// `inspect`, and raises the container's memory to the OOM floor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podman_oom_kill_is_inferred_from_the_sigkill_exit() {
    let test = "podman_oom";
    if !podman_or_skip(test) {
        return;
    }
    let labels = [("tailor.enable", "true"), ("tailor.test", test)];
    // 8 MiB for 8 s, then 64 MiB in a 32 MiB container: OOM-killed
    let c = PodmanContainer::run(
        "tailor-p-oom",
        32,
        1.0,
        &labels,
        &["8:0.01:8", "64:0.01:3600"],
    );
    // The OOM floor stops at the ceiling, `request * max_growth`: room for
    // it past the 32 MiB the container was started with.
    let mut cfg = agent_common::agent_config(test, "actuation = \"recommend\"", "");
    cfg.shaper.max_growth = 8.0;
    let mut agent = podman_agent_with(cfg).await;
    let mut seen_running = false;
    let mut exited = false;
    for _ in 0..60 {
        let r = agent_common::round_in_1s(&mut agent).await;
        seen_running |= r
            .view
            .containers
            .iter()
            .any(|v| v.meta.name == "tailor-p-oom");
        if c.inspect_u64(".State.Pid") == 0 {
            exited = true;
            break;
        }
    }
    assert!(seen_running, "the agent saw it running before the kill");
    assert!(exited, "the container was not OOM-killed within 60 s");
    assert_eq!(c.inspect_u64(".State.ExitCode"), 137, "killed by SIGKILL");
    let podman_says =
        podman(&["inspect", "--format", "{{.State.OOMKilled}}", &c.id]).expect("inspect");
    for _ in 0..3 {
        agent_common::round_in_1s(&mut agent).await;
    }
    let m = &agent.shared().metrics;
    assert_eq!(
        (m.oom_events(), m.oom_recovered()),
        (1, 1),
        "inferred once from inspect (Podman's OOMKilled: {podman_says})"
    );
    // restarted by the operator: its memory need is at least the OOM
    // floor, max(32 MiB + 100 MiB, 32 MiB x 1.2)
    podman(&["start", &c.id]).expect("podman start");
    let floor = (32 * MIB + 100 * MIB) as f64;
    let mut need = None;
    for _ in 0..4 {
        let r = agent_common::round_in_1s(&mut agent).await;
        if let Some(v) = r
            .view
            .containers
            .iter()
            .find(|v| v.meta.name == "tailor-p-oom")
        {
            need = Some(v.oom_floor_bytes);
            break;
        }
    }
    let need = need.expect("the restarted container is in the view");
    assert!(
        need >= floor,
        "memory {need} B below the OOM floor {floor} B"
    );
}

/// An OOM kill of a process that is not the container's main one (a child
/// of a shell) leaves the container running and no exit code behind; Podman
/// 4.3 sends no `oom` event either. The adapter reads the cgroup's OOM-kill
/// counter with each sample and turns each rise into an `Oom` event: the
/// agent counts the kills from its event stream while the container keeps
/// running, and holds its memory at the OOM floor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podman_oom_kill_of_a_child_process_is_counted() {
    let test = "podman_oom_child";
    if !podman_or_skip(test) {
        return;
    }
    let labels = [("tailor.enable", "true"), ("tailor.test", test)];
    // the shell survives; each loadgen it starts asks for 64 MiB of 32
    let c = PodmanContainer::start(
        "tailor-p-oom-child",
        Some((32, 1.0)),
        &labels,
        &[
            "sh",
            "-c",
            "sleep 3; while :; do /bin/loadgen 64:0.01:3600; sleep 2; done",
        ],
    );
    let mut cfg = agent_common::agent_config(test, "actuation = \"recommend\"", "");
    cfg.shaper.max_growth = 8.0;
    let mut agent = podman_agent_with(cfg).await;
    agent.start_event_listener();
    let mut counted = 0;
    for _ in 0..40 {
        agent_common::round_in_1s(&mut agent).await;
        counted = agent.shared().metrics.oom_events();
        if counted >= 2 {
            break;
        }
    }
    assert!(counted >= 2, "{counted} OOM kills counted within 40 rounds");
    assert_eq!(
        agent.shared().metrics.oom_recovered(),
        0,
        "counted from the event stream, not from an exit"
    );
    assert!(
        c.inspect_u64(".State.Pid") > 0,
        "the container keeps running"
    );
    // the kernel's OOM floor (max_growth 8 leaves room for it): its next
    // allocation is at least max(32 MiB + 100 MiB, 32 MiB x 1.2)
    let r = agent_common::round_in_1s(&mut agent).await;
    let v = r
        .view
        .containers
        .iter()
        .find(|v| v.meta.name == "tailor-p-oom-child")
        .expect("in the view");
    assert!(
        v.oom_floor_bytes >= (132 * MIB) as f64,
        "memory {} B below the OOM floor",
        v.oom_floor_bytes
    );
}

/// The same container on Docker and on Podman, read through the agent's
/// two adapters: the same limit, a working set within 15% (Podman 4.3's
/// compat stats carry no `memory_stats.stats` nor `max_usage`: the adapter
/// reads the inactive file cache and the peak from the cgroup, so the page
/// cache is not counted as working set there either), and a peak on both.
/// The memory watch's direct cgroup reads (`mem_now`) agree with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podman_stats_match_docker_field_by_field() {
    use agent::ContainerRuntime;
    let test = "podman_stats";
    if !podman_or_skip(test) || agent_common::docker_or_skip(test).is_none() {
        return;
    }
    let labels = [("tailor.test", test)];
    let steps = ["48:0.2:3600"];
    let p = PodmanContainer::run("tailor-p-stats", 128, 1.0, &labels, &steps);
    let d = agent_common::TestContainer::run("tailor-d-stats", 128, 1.0, &labels, &steps, &[]);
    let podman_rt = PodmanRuntime::connect(SOCK).await.expect("podman client");
    let docker_rt =
        agent::docker::DockerRuntime::new("/var/run/docker.sock").expect("docker client");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let ps = podman_rt.stats(&p.id).await.expect("podman stats");
    let ds = docker_rt.stats(&d.id).await.expect("docker stats");
    eprintln!("docker: {ds:?}\npodman: {ps:?}");
    assert_eq!(ps.mem_limit_bytes, Some(128 * MIB));
    assert_eq!(ds.mem_limit_bytes, Some(128 * MIB));
    let (pw, dw) = (ps.working_set_bytes() as f64, ds.working_set_bytes() as f64);
    assert!(dw >= (40 * MIB) as f64, "docker working set {dw} B");
    assert!(
        (pw - dw).abs() <= 0.15 * dw,
        "working sets differ: podman {pw} B, docker {dw} B"
    );
    for (engine, s) in [("docker", &ds), ("podman", &ps)] {
        let peak = s
            .mem_peak_bytes
            .unwrap_or_else(|| panic!("{engine}: no peak"));
        assert!(
            peak >= s.working_set_bytes(),
            "{engine}: peak {peak} below the working set"
        );
        assert!(s.cpu_total_ns > 0, "{engine}: no CPU counter");
    }
    // the memory watch's cgroup reads (no daemon call) agree with the stats
    for (engine, now, s) in [
        ("docker", docker_rt.mem_now(&d.id), &ds),
        ("podman", podman_rt.mem_now(&p.id), &ps),
    ] {
        let now = now.unwrap_or_else(|| panic!("{engine}: no cgroup memory"));
        assert_eq!(now.limit_bytes, Some(128 * MIB), "{engine}");
        // and so are the stats: read from the cgroup (no host CPU
        // counter, which only the engines' answers carry)
        assert_eq!(s.system_cpu_ns, None, "{engine}: stats from the API");
        let (n, w) = (now.working_set_bytes as f64, s.working_set_bytes() as f64);
        assert!(
            (n - w).abs() <= 0.15 * w,
            "{engine}: cgroup {n} B, stats {w} B"
        );
    }
}

/// Podman's compatible API reports a container's restart policy in
/// `HostConfig.RestartPolicy` as dockerd does: the agent marks a container
/// that Podman starts again after a kill as restarting alone (what the
/// recording and the simulator's `OomRestart::Component` read), and a
/// plain one not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podman_restart_policy_marks_a_container_that_restarts_alone() {
    use agent::ContainerRuntime;
    let test = "podman_restart_policy";
    if !podman_or_skip(test) {
        return;
    }
    let labels = [("tailor.test", test)];
    let steps = ["16:0.1:3600"];
    let plain = PodmanContainer::run("tailor-p-norestart", 64, 0.5, &labels, &steps);
    let name = "tailor-p-restart";
    let _ = podman(&["rm", "-f", "-t", "0", name]);
    let mut args = vec![
        "run",
        "-d",
        "--network",
        "none",
        "--restart",
        "always",
        "--name",
        name,
        IMAGE,
    ];
    args.extend(loadgen(&steps));
    let id = podman(&args).unwrap_or_else(|e| panic!("cannot start {name} on Podman: {e}"));
    let restarting = PodmanContainer { id };
    let rt = PodmanRuntime::connect(SOCK).await.expect("podman client");
    let info = rt.inspect(&restarting.id).await.expect("inspect");
    assert!(info.restarts_alone, "--restart always: {info:?}");
    let info = rt.inspect(&plain.id).await.expect("inspect");
    assert!(!info.restarts_alone, "no restart policy: {info:?}");
}

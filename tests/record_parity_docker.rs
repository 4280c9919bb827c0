//! Record and replay against a REAL dockerd: an agent in `recommend` mode
//! records 22 one-second rounds over six containers (a memory ramp, an idle
//! container with a generous limit, two containers of one application, a
//! CPU-busy one and a small steady one); `tailor replay --workload
//! recorded:PATH --check-parity` must find the same decisions, round by
//! round, with 0 mismatches. The same recording replayed with one kernel
//! rule changed (a memory floor) must fail the check. The restart policy
//! dockerd reports for a container is in the recording, and its replay
//! restarts that container alone after an OOM kill.

mod agent_common;

use agent::docker::DockerRuntime;
use agent::{Agent, LocalShaper};
use agent_common::*;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tailor_core::SystemClock;

const ROUNDS: usize = 22;

fn parity(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(args)
        .output()
        .expect("run tailor");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `parity: N rounds, M actions, K mismatches` -> (N, M, K)
fn counts(text: &str) -> (u64, u64, u64) {
    let line = text
        .lines()
        .find(|l| l.starts_with("parity: ") && l.contains(" rounds"))
        .unwrap_or_else(|| panic!("no parity line in:\n{text}"));
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("number"))
        .collect();
    (nums[0], nums[1], nums[2])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_run_replays_with_zero_mismatches() {
    let test = "parity";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = ("tailor.test", test);
    let on = ("tailor.enable", "true");
    let _ramp = TestContainer::run(
        "tailor-t-par-ramp",
        256,
        1.0,
        &[on, sel],
        &["8:0.05:4", "96:0.05:20:ramp"],
        &[],
    );
    let _idle = TestContainer::run(
        "tailor-t-par-idle",
        512,
        1.0,
        &[on, sel],
        &["8:0.01:3600"],
        &[],
    );
    let _web1 = TestContainer::run(
        "tailor-t-par-web1",
        128,
        1.0,
        &[on, sel, ("tailor.app", "web")],
        &["24:0.1:3600"],
        &["--restart", "unless-stopped"],
    );
    let _web2 = TestContainer::run(
        "tailor-t-par-web2",
        128,
        1.0,
        &[on, sel, ("tailor.app", "web"), ("tailor.class", "elastic")],
        &["20:0.1:3600"],
        &[],
    );
    let _busy = TestContainer::run(
        "tailor-t-par-busy",
        64,
        1.0,
        &[on, sel],
        &["8:0.6:3600"],
        &[],
    );
    let _small = TestContainer::run(
        "tailor-t-par-small",
        64,
        0.5,
        &[on, sel],
        &["12:0.02:3600"],
        &[],
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rec.jsonl.gz");
    let cfg = recording_config(test, &path);
    let shaper_cfg = cfg.shaper.clone();
    let runtime = Arc::new(DockerRuntime::new(&cfg.docker_socket).expect("docker client"));
    let source = Box::new(LocalShaper::new(cfg.shaper.clone()));
    let mut agent = Agent::new(cfg, runtime, source, Arc::new(SystemClock)).expect("agent");
    agent.start_event_listener();
    let mut planned_actions = 0;
    for _ in 0..ROUNDS {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let r = agent.round().await.expect("round against the real dockerd");
        assert_eq!(r.view.containers.len(), 6, "six managed containers");
        planned_actions += r.outcomes.len();
    }
    drop(agent);
    assert!(
        planned_actions > 0,
        "the agent recommended nothing: the check would be vacuous"
    );

    let rec = format!("recorded:{}", path.display());
    let (ok, text) = parity(&["replay", "--workload", &rec, "--check-parity"]);
    println!("{text}");
    let (rounds, actions, mismatches) = counts(&text);
    assert!(ok, "parity check failed:\n{text}");
    assert_eq!(rounds, ROUNDS as u64);
    assert!(actions > 0, "{text}");
    assert_eq!(mismatches, 0, "{text}");

    // One rule changed in one place: the replay's memory floor.
    let mut changed = shaper_cfg;
    changed.min_mem_bytes = 48.0 * 1048576.0;
    let toml = format!(
        "[shaper]\n{}",
        toml::to_string(&changed).expect("shaper config as TOML")
    );
    let over = dir.path().join("changed.toml");
    std::fs::write(&over, toml).expect("write config");
    let over = over.display().to_string();
    let with_config = |config: &str| {
        parity(&[
            "replay",
            "--workload",
            &rec,
            "--check-parity",
            "--config",
            config,
        ])
    };
    let (ok, text) = with_config(&over);
    println!("{text}");
    let (_, _, mismatches) = counts(&text);
    assert!(
        !ok && mismatches > 0,
        "a changed floor went unnoticed:\n{text}"
    );

    // A bad config is checked key by key, every error named by its key path.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[shaper]\nkk = 1\nk1 = -3\n").expect("write config");
    let bad = bad.display().to_string();
    let (ok, text) = with_config(&bad);
    assert!(
        !ok && text.contains("shaper.kk") && text.contains("shaper.k1"),
        "a bad config's errors by key path:\n{text}"
    );

    // The recording is also a workload for the simulator.
    let (ok, text) = parity(&["replay", "--workload", &rec, "--quiet", "--json"]);
    assert!(ok, "replay of the recording failed:\n{text}");
    // web1's restart policy (read from dockerd) is in the recording: in the
    // replay an OOM kill restarts it alone; every other container re-runs
    // its application.
    let recording = sim::recorded::read_recording(&path).expect("read the recording");
    let wl = sim::recorded::recorded_workload(&recording, "parity").expect("workload");
    let restarting: Vec<(usize, usize)> = wl
        .apps
        .iter()
        .enumerate()
        .flat_map(|(a, app)| {
            app.components
                .iter()
                .enumerate()
                .filter(|(_, c)| c.oom_restart == datasets::workload::OomRestart::Component)
                .map(move |(i, _)| (a, i))
        })
        .collect();
    assert_eq!(
        restarting.len(),
        1,
        "only web1 restarts alone: {restarting:?}"
    );
    let (a, i) = restarting[0];
    assert_eq!(
        wl.apps[a].components.len(),
        2,
        "web1 is one of the web pair"
    );
    assert_eq!(
        wl.apps[a].components[i].class,
        datasets::workload::Class::Core,
        "the restarting one is web1 (web2 is elastic)"
    );
}

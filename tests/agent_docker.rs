//! The agent against a REAL dockerd (scripts/test.sh installs and starts it):
//! the agent runs as a library over `DockerRuntime`, one round per second,
//! on containers of the busybox + loadgen test image. Each test selects its
//! own containers with the label `tailor.test=<test name>`, so the tests can
//! run in parallel. In CI (CI=true) these tests fail when Docker is missing.

mod agent_common;

use agent::docker::DockerRuntime;
use agent::{Agent, AgentConfig, LocalShaper, NodeActionKind, RoundReport};
use agent_common::*;
use std::sync::Arc;
use std::time::Duration;
use tailor_core::SystemClock;

fn new_agent(cfg: AgentConfig) -> Agent<DockerRuntime> {
    let mut a = agent_without_events(cfg);
    a.start_event_listener();
    a
}

/// An agent whose event stream is down (never subscribed).
fn agent_without_events(cfg: AgentConfig) -> Agent<DockerRuntime> {
    let runtime = Arc::new(DockerRuntime::new(&cfg.docker_socket).expect("docker client"));
    let source = Box::new(LocalShaper::new(cfg.shaper.clone()));
    Agent::new(cfg, runtime, source, Arc::new(SystemClock)).expect("agent")
}

async fn rounds(agent: &mut Agent<DockerRuntime>, n: usize, mut each: impl FnMut(&RoundReport)) {
    for _ in 0..n {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let r = agent.round().await.expect("round against the real dockerd");
        each(&r);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_containers_are_cut_protected_and_unlabelled_untouched() {
    let test = "idle";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = ("tailor.test", test);
    let idle1 = TestContainer::run(
        "tailor-t-idle1",
        256,
        1.0,
        &[("tailor.enable", "true"), sel],
        &["8:0.02:3600"],
        &[],
    );
    let idle2 = TestContainer::run(
        "tailor-t-idle2",
        256,
        1.0,
        &[("tailor.enable", "true"), sel, ("tailor.app", "web")],
        &["12:0.02:3600"],
        &[],
    );
    let vip = TestContainer::run(
        "tailor-t-vip",
        256,
        1.0,
        &[("tailor.enable", "true"), sel, ("tailor.protected", "true")],
        &["8:0.02:3600"],
        &[],
    );
    // carries the test label but not the opt-in label: never managed
    let stranger = TestContainer::run("tailor-t-stranger", 256, 1.0, &[sel], &["8:0.02:3600"], &[]);

    let mut agent = new_agent(agent_config(test, "", ""));
    let mut first_alloc = None;
    let mut last_alloc = 0.0;
    let mut managed = 0;
    rounds(&mut agent, 8, |r| {
        let alloc = r.view.allocated().mem_bytes;
        first_alloc.get_or_insert(alloc);
        last_alloc = alloc;
        managed = r.view.containers.len();
        assert!(r
            .view
            .containers
            .iter()
            .all(|c| c.meta.name != "tailor-t-stranger"));
    })
    .await;
    assert_eq!(managed, 3, "idle1, idle2 and vip are managed");
    for c in [&idle1, &idle2] {
        let lim = c.mem_limit();
        assert!(
            lim < 128 * MIB,
            "{}: memory limit {} MiB not cut from 256 MiB",
            c.name,
            lim / MIB
        );
        assert!(
            lim >= 16 * MIB,
            "{}: limit {} MiB below the floor",
            c.name,
            lim / MIB
        );
        assert!(
            c.nano_cpus() < 1_000_000_000,
            "{}: CPU limit not cut",
            c.name
        );
        assert!(c.running() && !c.oom_killed());
    }
    let first = first_alloc.expect("rounds ran");
    assert!(
        last_alloc < 0.7 * first,
        "reserved memory on the node drops: {first} -> {last_alloc}"
    );
    assert_eq!(vip.mem_limit(), 256 * MIB, "protected container untouched");
    assert_eq!(vip.nano_cpus(), 1_000_000_000);
    assert_eq!(
        stranger.mem_limit(),
        256 * MIB,
        "unlabelled container untouched"
    );
    assert_eq!(stranger.nano_cpus(), 1_000_000_000);
}

/// `--memory-reservation` is a floor: an idle container's memory limit is
/// cut, but never below its reservation, which the agent leaves as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_is_never_cut_below_the_reservation() {
    let test = "reserved";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = ("tailor.test", test);
    let c = TestContainer::run(
        "tailor-t-reserved",
        256,
        1.0,
        &[("tailor.enable", "true"), sel],
        &["8:0.02:3600"],
        &["--memory-reservation", "160m"],
    );
    let mut agent = new_agent(agent_config(test, "", ""));
    let mut floor_bytes = 0.0;
    rounds(&mut agent, 8, |r| {
        if let Some(v) = r.view.containers.first() {
            floor_bytes = v.meta.mem_floor_bytes;
        }
    })
    .await;
    assert_eq!(floor_bytes, (160 * MIB) as f64, "the reservation is read");
    let lim = c.mem_limit();
    assert!(lim < 256 * MIB, "memory limit {} MiB not cut", lim / MIB);
    assert_eq!(lim, 160 * MIB, "cut to the reservation, not below");
    let reservation = docker(&[
        "inspect",
        "--format",
        "{{.HostConfig.MemoryReservation}}",
        &c.id,
    ])
    .expect("inspect");
    assert_eq!(
        reservation.trim(),
        (160 * MIB).to_string(),
        "reservation untouched"
    );
    assert!(c.nano_cpus() < 1_000_000_000, "CPU still cut");
    assert!(c.running() && !c.oom_killed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recommend_mode_changes_nothing() {
    let test = "recommend";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = ("tailor.test", test);
    let c = TestContainer::run(
        "tailor-t-rec",
        256,
        1.0,
        &[("tailor.enable", "true"), sel],
        &["8:0.02:3600"],
        &[],
    );
    let mut agent = new_agent(agent_config(test, "actuation = \"recommend\"", ""));
    let mut recommended = 0;
    rounds(&mut agent, 6, |r| {
        recommended += r
            .outcomes
            .iter()
            .filter(|o| o.result == agent::Outcome::Recommended)
            .count();
        assert!(r
            .outcomes
            .iter()
            .all(|o| o.result != agent::Outcome::Applied));
    })
    .await;
    assert!(recommended > 0, "the agent recommends a cut");
    assert_eq!(c.mem_limit(), 256 * MIB);
    assert_eq!(c.nano_cpus(), 1_000_000_000);
    assert!(c.running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_ramp_gets_its_limit_raised_ahead_of_usage() {
    let test = "ramp";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = ("tailor.test", test);
    // 10 MiB for 8 s, then +5 MiB/s up to 160 MiB, then hold
    let c = TestContainer::run(
        "tailor-t-ramp",
        512,
        1.0,
        &[("tailor.enable", "true"), sel],
        &["10:0.02:8", "160:0.02:30:ramp", "160:0.02:3600"],
        &[],
    );
    let mut agent = new_agent(agent_config(test, "", ""));
    let mut min_limit = u64::MAX;
    let mut max_usage = 0.0f64;
    rounds(&mut agent, 42, |r| {
        if let Some(v) = r.view.containers.first() {
            max_usage = max_usage.max(v.usage.mem_bytes);
            min_limit = min_limit.min(v.allocation.mem_bytes as u64);
            assert!(v.oom_kills == 0, "OOM kill during the ramp");
        }
    })
    .await;
    let lim = c.mem_limit();
    assert!(
        min_limit < 100 * MIB,
        "the idle phase cut the limit first (min {} MiB)",
        min_limit / MIB
    );
    assert!(
        max_usage > 140.0 * MIB as f64,
        "the ramp happened (max usage {} MiB)",
        max_usage / MIB as f64
    );
    assert!(
        lim as f64 > max_usage,
        "limit {} MiB ahead of usage {} MiB",
        lim / MIB,
        max_usage / MIB as f64
    );
    assert!(c.running(), "container still running");
    assert!(!c.oom_killed(), "no kernel OOM kill");
    assert_eq!(agent.shared().metrics.oom_events(), 0);
}

/// The calibrated GP (the default forecaster until the frontiers chose the
/// last value) with one K1 = 0.05, K2 = 3 for every container against the
/// real engine. The ramp is started (`docker exec` of a second load
/// generator) only after 35 rounds, i.e. once the GP has left its
/// last-value fallback (25 samples), whatever the machine's load: the ramp
/// is forecast by the GP itself. (The shipped defaults run against the
/// real engine in `tests/record_parity_docker.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_forecaster_cuts_idle_limits_and_raises_a_ramp_ahead() {
    let test = "gp";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = ("tailor.test", test);
    let idle = TestContainer::run(
        "tailor-t-gp-idle",
        256,
        1.0,
        &[("tailor.enable", "true"), sel],
        &["8:0.02:3600"],
        &[],
    );
    let ramp = TestContainer::run(
        "tailor-t-gp-ramp",
        512,
        1.0,
        &[("tailor.enable", "true"), sel],
        &["10:0.02:3600"],
        &[],
    );
    let mut cfg = default_forecaster_config(test);
    cfg.forecaster.kind = forecaster::config::ModelKind::Gp;
    assert!(cfg.forecaster.calibrated);
    // Each lone container is a small application under the shipped size
    // rules (K1 0.6): the uniform buffer the test was written for.
    cfg.shaper.k2 = 3.0;
    cfg.shaper.small_app_components = 0;
    cfg.shaper.app_mem_ref_rel = 0.0;
    cfg.shaper.sibling_hold_s = 0.0;
    let mut agent = new_agent(cfg);
    let find = |r: &RoundReport, name: &str| {
        r.view
            .containers
            .iter()
            .find(|c| c.meta.name == name)
            .cloned()
    };
    let mut idle_min_limit = u64::MAX;
    let mut samples = 0;
    rounds(&mut agent, 35, |r| {
        if let Some(v) = find(r, &ramp.name) {
            idle_min_limit = idle_min_limit.min(v.allocation.mem_bytes as u64);
            samples = v.samples;
            assert_eq!(v.oom_kills, 0, "OOM kill while idle");
        }
    })
    .await;
    assert!(samples >= 30, "GP warm before the ramp ({samples} samples)");
    assert!(
        idle_min_limit < 100 * MIB,
        "the idle phase cut the ramp container's limit first (min {} MiB)",
        idle_min_limit / MIB
    );
    // +2.75 MiB/s for 40 s on top of the 10 MiB already there, then hold
    docker(&[
        "exec",
        "-d",
        &ramp.id,
        "/bin/loadgen",
        "0:0:0",
        "110:0:40:ramp",
        "110:0:3600",
    ])
    .expect("start the ramp");
    let mut max_usage = 0.0f64;
    let mut min_headroom = f64::INFINITY;
    let mut n = 0;
    rounds(&mut agent, 50, |r| {
        n += 1;
        if let Some(v) = find(r, &ramp.name) {
            max_usage = max_usage.max(v.usage.mem_bytes);
            min_headroom = min_headroom.min(v.allocation.mem_bytes - v.usage.mem_bytes);
            assert_eq!(v.oom_kills, 0, "OOM kill during the ramp (round {n})");
        }
    })
    .await;
    eprintln!(
        "default forecaster: idle min limit {} MiB, ramp max usage {:.1} MiB, min headroom {:.1} MiB, final limit {} MiB",
        idle_min_limit / MIB,
        max_usage / MIB as f64,
        min_headroom / MIB as f64,
        ramp.mem_limit() / MIB
    );
    let lim = idle.mem_limit();
    assert!(
        (16 * MIB..128 * MIB).contains(&lim),
        "idle container's limit cut from 256 MiB to {} MiB",
        lim / MIB
    );
    assert!(idle.running() && !idle.oom_killed());
    assert!(
        max_usage > 100.0 * MIB as f64,
        "the ramp happened (max usage {} MiB)",
        max_usage / MIB as f64
    );
    let lim = ramp.mem_limit();
    assert!(
        lim as f64 > max_usage,
        "limit {} MiB ahead of usage {} MiB",
        lim / MIB,
        max_usage / MIB as f64
    );
    assert!(ramp.running(), "ramp container still running");
    assert!(!ramp.oom_killed(), "no kernel OOM kill");
    assert_eq!(agent.shared().metrics.oom_events(), 0);
}

/// A kernel OOM kill while the event stream is down: found from `inspect`
/// (State.OOMKilled + FinishedAt), counted once (Docker keeps OOMKilled set
/// after a restart) and the next allocation grows as for a streamed event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oom_kill_missed_by_the_event_stream_is_recovered() {
    let test = "oomrec";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = ("tailor.test", test);
    // 8 MiB for 8 s, then 64 MiB in a 32 MiB container: OOM-killed
    let c = TestContainer::run(
        "tailor-t-oomrec",
        32,
        1.0,
        &[("tailor.enable", "true"), sel],
        &["8:0.01:8", "64:0.01:3600"],
        &[],
    );
    // The OOM floor stops at the ceiling, `request * max_growth`: room for
    // it past the 32 MiB the container was started with.
    let mut cfg = agent_config(test, "", "");
    cfg.shaper.max_growth = 8.0;
    // the operator starts it below (a restart by the agent is
    // `a_container_killed_at_the_agents_cut_is_restarted_by_the_agent`)
    cfg.restart_evicted = false;
    let mut agent = agent_without_events(cfg);
    let mut seen_running = false;
    let mut killed_at_mib = None;
    let mut waited = 0;
    while !c.oom_killed() || c.running() || killed_at_mib.is_none() {
        waited += 1;
        assert!(waited < 60, "the container was not OOM-killed");
        rounds(&mut agent, 1, |r| {
            seen_running |= r.view.containers.iter().any(|v| v.meta.name == c.name);
            killed_at_mib = killed_at_mib.or(r.oom_kills.first().map(|k| k.limit_mib));
        })
        .await;
    }
    assert!(seen_running, "the agent saw it running before the kill");
    // the limit it was killed at (the agent may have shaped it below 32 MiB)
    // and the OOM floor its next allocation gets: max(+100 MiB, x1.2)
    let killed_at = (killed_at_mib.expect("counted") * MIB as f64) as u64;
    let floor = (killed_at + 100 * MIB).max(killed_at * 6 / 5);
    rounds(&mut agent, 2, |_| {}).await;
    let m = &agent.shared().metrics;
    assert_eq!(
        (m.oom_events(), m.oom_recovered()),
        (1, 1),
        "found by inspect"
    );
    // QA D10: killed at the agent's cut (no restart policy), it is stopped
    // at its request, not at the cut (the agent may also have grown it
    // past 32 MiB before the kill: then it is left as it is); listed
    // either way
    if killed_at < 32 * MIB {
        assert_eq!(c.mem_limit(), 32 * MIB, "killed at {} MiB", killed_at / MIB);
    }
    let listed: Vec<String> = agent
        .shared()
        .last_recommendations()
        .expect("recommendations")
        .items
        .iter()
        .filter(|i| i.container == c.name)
        .map(|i| i.state())
        .collect();
    assert_eq!(listed, ["oom-killed, stopped", "oom-killed, stopped"]);
    // an operator gives it room and starts it again; Docker still reports
    // OOMKilled (same FinishedAt) while it runs
    docker(&["update", "--memory", "256m", "--memory-swap", "256m", &c.id]).expect("update");
    docker(&["start", &c.id]).expect("start");
    let mut kills = 0;
    rounds(&mut agent, 8, |r| {
        if let Some(v) = r.view.containers.iter().find(|v| v.meta.name == c.name) {
            kills = v.oom_kills;
            assert!(v.oom_floor_bytes >= floor as f64, "held at the OOM floor");
            // the floor is not shown as usage: it uses 8, then 64 MiB
            assert!(
                v.usage.mem_bytes < floor as f64,
                "usage {} MiB is what was measured",
                v.usage.mem_bytes / MIB as f64
            );
        }
    })
    .await;
    assert!(c.running());
    assert_eq!(kills, 1);
    let m = &agent.shared().metrics;
    assert_eq!((m.oom_events(), m.oom_recovered()), (1, 1), "counted once");
    // shaped from 256 MiB down to the OOM floor, not to usage
    let lim = c.mem_limit();
    assert!(
        (floor..256 * MIB).contains(&lim),
        "next allocation grew to the OOM floor: {} MiB",
        lim / MIB
    );
}

/// QA D10: a container with no restart policy, OOM-killed at a limit the
/// agent cut below its request, gets its request back and is started again
/// by the agent once `restart_cooldown_s` has passed; the OOM floor then
/// holds it at its request, so the level that killed it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_killed_at_the_agents_cut_is_restarted_by_the_agent() {
    let test = "oomres";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = ("tailor.test", test);
    // 8 MiB for 15 s (the agent cuts it to ~9 MiB), then 24 MiB: above the
    // cut, within its 32 MiB request
    let c = TestContainer::run(
        "tailor-t-oomres",
        32,
        1.0,
        &[("tailor.enable", "true"), sel],
        &["8:0.01:15", "24:0.01:3600"],
        &[],
    );
    let mut agent = new_agent(agent_config(test, "", ""));
    let mut killed_at_mib = None;
    let mut restarted_round = None;
    for n in 0..60 {
        rounds(&mut agent, 1, |r| {
            killed_at_mib = killed_at_mib.or(r.oom_kills.first().map(|k| k.limit_mib));
            if r.restarted.iter().any(|x| x == &c.name) {
                restarted_round = Some(n);
            }
        })
        .await;
        if restarted_round.is_some() {
            break;
        }
    }
    let killed_at_mib = killed_at_mib.expect("OOM-killed at the cut");
    assert!(
        killed_at_mib < 24.0,
        "killed at the cut: {killed_at_mib} MiB"
    );
    assert!(restarted_round.is_some(), "restarted by the agent");
    // running through its 24 MiB phase at its request
    rounds(&mut agent, 20, |_| {}).await;
    assert!(c.running(), "runs after the restart");
    assert_eq!(c.mem_limit(), 32 * MIB, "held at its request");
    assert_eq!(agent.shared().metrics.oom_events(), 1, "killed once");
    let journal = agent.shared().decisions_since(None);
    let restored = journal
        .iter()
        .flat_map(|e| e.restored.iter())
        .filter(|x| x.container == c.name)
        .count();
    let restarted = journal
        .iter()
        .flat_map(|e| e.restarted.iter())
        .filter(|x| **x == c.name)
        .count();
    assert_eq!((restored, restarted), (1, 1), "journaled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_evicts_youngest_elastic_of_last_app_and_restarts_it() {
    let test = "overload";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = ("tailor.test", test);
    let on = ("tailor.enable", "true");
    // node of 500 MiB for managed containers. App "a" (first): one core
    // container (request 600 MiB) that grows to 330 MiB (+10 MiB/s: its
    // buffer, k1 * request = 60 MiB, covers several seconds) for a while. App "b": a core and two
    // elastic containers of ~30 MiB each.
    let a = TestContainer::run(
        "tailor-t-a-core",
        600,
        0.5,
        &[on, sel, ("tailor.app", "a")],
        &[
            "30:0.02:12",
            "330:0.02:30:ramp",
            "330:0.02:14",
            "30:0.02:3600",
        ],
        &[],
    );
    std::thread::sleep(Duration::from_millis(1100));
    let b_core = TestContainer::run(
        "tailor-t-b-core",
        150,
        0.5,
        &[on, sel, ("tailor.app", "b")],
        &["30:0.02:3600"],
        &[],
    );
    std::thread::sleep(Duration::from_millis(1100));
    let b_old = TestContainer::run(
        "tailor-t-b-el-old",
        150,
        0.5,
        &[on, sel, ("tailor.app", "b"), ("tailor.class", "elastic")],
        &["30:0.02:3600"],
        &[],
    );
    std::thread::sleep(Duration::from_millis(1100));
    let b_young = TestContainer::run(
        "tailor-t-b-el-young",
        150,
        0.5,
        &[on, sel, ("tailor.app", "b"), ("tailor.class", "elastic")],
        &["30:0.02:3600"],
        &[],
    );
    let mut cfg = agent_config(
        test,
        "",
        &format!("[capacity]\ncpu_cores = 2.0\nmem_bytes = {}\n", 500 * MIB),
    );
    // buffer = k1 * request only: the ramp would make the peak model's sigma
    // (and the k2 term) large for a few rounds; this test is about the order
    cfg.shaper.k2 = 0.0;
    // the memory hold (a day by default) keeps a-core's peak for 5 s only, so
    // that room returns within the test once its usage falls back
    cfg.shaper.mem_hold_s = 5.0;
    // the thesis's planning: a target that does not fit evicts (under the
    // default `buffer` these usages, 420 MiB at most, fit the node and only
    // the buffers would be cut; agent/tests/fake_loop.rs evicts under it)
    cfg.shaper.mem_shortfall = shaper::MemShortfall::Evict;
    let mut agent = new_agent(cfg);
    // warm the models up without planning (requests alone exceed the node)
    for _ in 0..3 {
        agent.sample_only().await.expect("sample");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut evictions: Vec<String> = Vec::new();
    let mut restarted: Vec<String> = Vec::new();
    rounds(&mut agent, 75, |r| {
        for o in &r.outcomes {
            if matches!(o.action.kind, NodeActionKind::Evict { .. })
                && o.result == agent::Outcome::Applied
            {
                evictions.push(o.action.container_name.clone());
            }
        }
        restarted.extend(r.restarted.iter().cloned());
    })
    .await;
    let (n, failed) = agent.shared().metrics.rounds();
    eprintln!(
        "overload: {n} rounds ({failed} failed), evictions {evictions:?}, restarted {restarted:?}"
    );
    assert!(
        !a.oom_killed(),
        "a-core outgrew its limit (kernel OOM kill)"
    );
    assert!(!evictions.is_empty(), "overload made the agent evict");
    assert_eq!(
        evictions[0], "tailor-t-b-el-young",
        "youngest elastic of the last application first: {evictions:?}"
    );
    assert!(
        !evictions
            .iter()
            .any(|e| e == "tailor-t-a-core" || e == "tailor-t-b-core"),
        "core containers kept: {evictions:?}"
    );
    assert!(
        restarted.iter().any(|n| n == "tailor-t-b-el-young"),
        "restarted when room returned: {restarted:?}"
    );
    assert!(b_young.running(), "the evicted container runs again");
    for c in [&a, &b_core, &b_old] {
        assert!(!c.oom_killed(), "{} was OOM-killed", c.name);
    }
    assert!(a.running() && b_core.running());
}

/// `on_shutdown = "restore_requests"` puts back the memory limit AND the
/// swap limit the container was started with (issue 13: MemorySwap was left
/// at the shaped memory limit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_restores_memory_and_swap() {
    let test = "swap";
    if docker_or_skip(test).is_none() {
        return;
    }
    let sel = ("tailor.test", test);
    // 256 MiB of memory, 512 MiB of memory + swap (the later flag wins)
    let c = TestContainer::run(
        "tailor-t-swap",
        256,
        1.0,
        &[("tailor.enable", "true"), sel],
        &["8:0.02:3600"],
        &["--memory-swap", "512m"],
    );
    let swap = || {
        docker(&["inspect", "--format", "{{.HostConfig.MemorySwap}}", &c.id])
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0)
    };
    assert_eq!(
        swap(),
        512 * MIB as i64,
        "started with 512 MiB memory + swap"
    );
    let mut agent = new_agent(agent_config(test, "", ""));
    rounds(&mut agent, 8, |_| {}).await;
    assert!(
        c.mem_limit() < 128 * MIB,
        "memory cut: {} MiB",
        c.mem_limit() / MIB
    );
    assert_eq!(swap(), c.mem_limit() as i64, "no swap while shaped");
    let restored = agent.shutdown().await;
    assert_eq!(restored, vec!["tailor-t-swap".to_string()]);
    assert_eq!(c.mem_limit(), 256 * MIB, "memory restored");
    assert_eq!(swap(), 512 * MIB as i64, "memory + swap restored");
    assert!(c.running());
}

/// A round's stats come from the container's cgroup files, at once (no
/// wait for dockerd's collector tick), and carry what Docker's own answer
/// does: the same CPU counter (the API's read falls between two direct
/// reads), working set, limit and peak.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_read_from_the_cgroup_agree_with_dockers_answer() {
    use agent::ContainerRuntime;
    let test = "cgstats";
    if docker_or_skip(test).is_none() {
        return;
    }
    let c = TestContainer::run(
        &format!("tailor-t-{test}"),
        64,
        0.5,
        &[("tailor.test", test)],
        &["20:0.3:600"],
        &[],
    );
    let rt = DockerRuntime::new(agent::docker::DEFAULT_SOCKET).expect("docker client");
    // until the load holds its 20 MiB
    let mut direct = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let s = rt.stats(&c.id).await.expect("stats");
        if s.working_set_bytes() >= 20 * MIB {
            direct = Some(s);
            break;
        }
    }
    let direct = direct.expect("the load reached 20 MiB");
    let api = rt.api_stats(&c.id).await.expect("Docker's stats");
    // read again until the counter moves on: a kernel that counts CPU
    // time by ticks (User-Mode Linux, tools/uml-docker.sh) may show none
    // over the short wait for Docker's answer
    let mut after = rt.stats(&c.id).await.expect("stats");
    for _ in 0..25 {
        if after.cpu_total_ns > direct.cpu_total_ns {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        after = rt.stats(&c.id).await.expect("stats");
    }
    // the direct reads are the cgroup's (Docker's answer carries the
    // host's CPU counter, which the cgroup has not), timed by the local
    // clock
    assert_eq!(direct.system_cpu_ns, None, "{direct:?}");
    assert!(api.system_cpu_ns.is_some(), "{api:?}");
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    let read_s = after.read_s.expect("read time");
    assert!((now_s - read_s).abs() < 5.0, "{read_s} vs {now_s}");
    assert!(
        direct.cpu_total_ns <= api.cpu_total_ns && api.cpu_total_ns <= after.cpu_total_ns,
        "CPU counter: direct {} <= Docker's {} <= direct {}",
        direct.cpu_total_ns,
        api.cpu_total_ns,
        after.cpu_total_ns
    );
    assert!(after.cpu_total_ns > direct.cpu_total_ns, "the load runs");
    let ws = |s: &agent::runtime::ContainerStats| s.working_set_bytes() as f64 / MIB as f64;
    assert!(
        (ws(&direct) - ws(&api)).abs() < 2.0 && (ws(&after) - ws(&api)).abs() < 2.0,
        "working set (MiB): direct {:.2}, Docker's {:.2}, direct {:.2}",
        ws(&direct),
        ws(&api),
        ws(&after)
    );
    assert_eq!(after.mem_limit_bytes, Some(64 * MIB));
    assert_eq!(api.mem_limit_bytes, Some(64 * MIB));
    // Docker's answer has a peak on cgroup v1 only (`max_usage`)
    if let Some(ap) = api.mem_peak_bytes {
        let p = after.mem_peak_bytes.expect("peak");
        assert!(p >= ap && p - ap < 2 * MIB, "peak {p} vs Docker's {ap}");
    }
    assert!(after.cpu_nr_throttled.is_some(), "{after:?}");
}

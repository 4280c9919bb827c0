//! The memory watch between rounds (`mem_watch_s`) against a REAL dockerd
//! (scripts/test.sh installs and starts it; in CI the test fails when
//! Docker is missing): the agent runs its own loop (`Agent::run`) at the
//! shipped 10 s interval over one container that sits flat at 10 MiB, is
//! cut, and then grows linearly, faster than a cut limit's buffer per
//! interval (docs/known-gaps.md: without the watch such a ramp is killed
//! or survives by the luck of where the rounds fall).
//!
//! In cluster mode the same ramp runs under an in-process central shaper
//! (`shaperd`) planning every 10 s: the agent's early report asks it for a
//! round at once and gets that round's actions back.
//!
//! `cargo test --test agent_watch_docker -- --ignored --nocapture` measures
//! ramps of 1 to 16 MiB/s with and without the watch (the table in
//! docs/known-gaps.md).

mod agent_common;
mod loopback_common;

use agent_common::*;
use loopback_common::{register_agent, write_private};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FLAT_S: f64 = 50.0;

/// What one ramp under one agent came to.
#[derive(Debug)]
struct Ramp {
    /// The lowest limit dockerd had before the ramp, MiB.
    cut_mib: u64,
    early_rounds: u64,
    oom_kills: u64,
    /// The working set at the agent's last round, MiB.
    end_usage_mib: f64,
    top_mib: f64,
    /// Rounds the central shaper planned early (cluster mode).
    shaper_early_rounds: u64,
}

/// Who plans the agent's rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Planner {
    Local,
    /// A central shaper in this process, at the agent's interval.
    Cluster,
}

/// A central shaper in this process planning every `interval_s` with the
/// agent's `[shaper]` table, and `cfg` turned into its agent (cluster
/// mode, its own credential).
async fn central_shaper(
    dir: &std::path::Path,
    cfg: &mut agent::AgentConfig,
) -> shaperd::server::ShaperServer {
    let token_file = dir.join("operator.token");
    write_private(&token_file, "watch-test-operator-token-0123456789\n");
    let creds_file = dir.join("credentials.toml");
    let agent_token = register_agent(dir, &creds_file, "watch-node", "t");
    let mut scfg = shaperd::config::ShaperServerConfig::with_token_file(&token_file);
    scfg.credentials_file = Some(creds_file);
    scfg.listen = "127.0.0.1:0".parse().expect("addr");
    scfg.interval_s = cfg.interval_s;
    scfg.warmup_intervals = 0;
    scfg.shaper = cfg.shaper.clone();
    let server = shaperd::server::ShaperServer::start(scfg)
        .await
        .expect("start the shaper");
    let mut client = agent::cluster::ClusterClientConfig::new(server.url(), agent_token);
    client.agent_id = Some("watch-node".into());
    cfg.mode = agent::config::Mode::Cluster;
    cfg.cluster = Some(client);
    server
}

/// Runs container `tailor-t-<test>` flat at 10 MiB for 50 s, then up to
/// 250 MiB (120 MiB at 2 MiB/s or less) at `mib_per_s`, under an agent
/// with the shipped forecaster and buffer at the shipped interval and
/// `mem_watch_s = watch_s`, until 15 s after the ramp's end.
async fn ramp(test: &str, mib_per_s: f64, watch_s: f64, planner: Planner) -> Ramp {
    let top_mib: f64 = if mib_per_s <= 2.0 { 130.0 } else { 250.0 };
    let ramp_s = (top_mib - 10.0) / mib_per_s;
    let steps = [
        format!("10:0.02:{FLAT_S}"),
        format!("{top_mib}:0.02:{ramp_s}:ramp"),
        format!("{top_mib}:0.02:3600"),
    ];
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    let c = TestContainer::run(
        &format!("tailor-t-{test}"),
        256,
        1.0,
        &[("tailor.enable", "true"), ("tailor.test", test)],
        &steps,
        &[],
    );
    let started = Instant::now();
    // the lone container sized as a core component (K1 0.05 x 1.2), not
    // as a small application (K1 0.6, which would hide the ramp)
    let mut cfg = default_forecaster_config(test);
    cfg.interval_s = 10.0;
    cfg.warmup_rounds = 1;
    cfg.mem_watch_s = watch_s;
    cfg.shaper.small_app_components = 0;
    cfg.shaper.app_mem_ref_rel = 0.0;
    cfg.shaper.sibling_hold_s = 0.0;
    let dir = tempfile::tempdir().expect("tempdir");
    let (shaper, agent) = match planner {
        Planner::Local => (None, docker_agent(cfg)),
        Planner::Cluster => {
            let shaper = central_shaper(dir.path(), &mut cfg).await;
            let source = agent::cluster::ClusterPlanSource::new(
                cfg.cluster.as_ref().expect("cluster table"),
                tailor_core::Clock::now_s(&tailor_core::SystemClock),
            )
            .expect("cluster client");
            let runtime = agent::docker::DockerRuntime::new(&cfg.docker_socket).expect("docker");
            let agent = agent::Agent::new(
                cfg,
                Arc::new(runtime),
                Box::new(source),
                Arc::new(tailor_core::SystemClock),
            )
            .expect("agent");
            (Some(shaper), agent)
        }
    };
    let shared = agent.shared();
    let run_s = FLAT_S + ramp_s + 15.0;
    let run = tokio::spawn(agent.run(tokio::time::sleep(Duration::from_secs_f64(run_s))));
    // the limit as dockerd has it, every second, until the agent stops
    let mut cut_mib = u64::MAX;
    while !run.is_finished() {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if started.elapsed().as_secs_f64() < FLAT_S {
            cut_mib = cut_mib.min(c.mem_limit() / MIB);
        }
    }
    run.await.expect("agent task").expect("agent loop");
    let report = shared.last_report().expect("rounds ran");
    let end_usage_mib = report
        .view
        .containers
        .first()
        .map_or(0.0, |v| v.usage.mem_bytes / MIB as f64);
    let r = Ramp {
        cut_mib,
        early_rounds: shared.metrics.early_rounds(),
        oom_kills: shared.metrics.oom_events(),
        end_usage_mib,
        top_mib,
        shaper_early_rounds: shaper.as_ref().map_or(0, |s| {
            let text = s.shared().render_metrics();
            text.lines()
                .find_map(|l| {
                    l.strip_prefix("tailor_shaper_early_rounds_total ")?
                        .parse()
                        .ok()
                })
                .expect("the shaper's early rounds metric")
        }),
    };
    if let Some(s) = shaper {
        s.shutdown().await;
    }
    eprintln!("ramp {mib_per_s} MiB/s, mem_watch_s {watch_s}, {planner:?}: {r:?}");
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_faster_than_the_buffer_per_interval_gets_an_early_round() {
    let test = "watch";
    if docker_or_skip(test).is_none() {
        return;
    }
    let r = ramp(test, 2.0, 1.0, Planner::Local).await;
    ramp_survived(&r);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_cluster_mode_the_early_report_gets_a_round_at_once() {
    let test = "watch-cluster";
    if docker_or_skip(test).is_none() {
        return;
    }
    let r = ramp(test, 2.0, 1.0, Planner::Cluster).await;
    ramp_survived(&r);
    assert!(
        r.shaper_early_rounds >= 1,
        "the shaper planned a round early: {r:?}"
    );
}

fn ramp_survived(r: &Ramp) {
    assert!(
        r.cut_mib < 64,
        "the flat phase cut the limit first (min {} MiB)",
        r.cut_mib
    );
    assert!(
        r.end_usage_mib > r.top_mib - 10.0,
        "the ramp happened and ended running ({:.1} MiB at the end)",
        r.end_usage_mib
    );
    assert!(r.early_rounds >= 1, "the watch ran a round early: {r:?}");
    assert_eq!(r.oom_kills, 0, "no OOM kill during the ramp: {r:?}");
}

/// Measures (prints) ramps of 1 to 16 MiB/s with the watch off and on,
/// standalone and under a central shaper, the four of each rate side by
/// side; asserts only that each cut first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement (about 12 minutes): run with --ignored --nocapture"]
async fn ramp_rates_with_and_without_the_watch() {
    if docker_or_skip("watch-table").is_none() {
        return;
    }
    let mut rows = Vec::new();
    for rate in [1.0, 2.0, 4.0, 8.0, 16.0] {
        let names = ["off", "on", "c-off", "c-on"].map(|w| format!("watch-{w}-{rate}"));
        let (off, on, c_off, c_on) = tokio::join!(
            ramp(&names[0], rate, 0.0, Planner::Local),
            ramp(&names[1], rate, 1.0, Planner::Local),
            ramp(&names[2], rate, 0.0, Planner::Cluster),
            ramp(&names[3], rate, 1.0, Planner::Cluster),
        );
        for r in [&off, &on, &c_off, &c_on] {
            assert!(r.cut_mib < 64, "{r:?}");
        }
        rows.push((rate, off, on, c_off, c_on));
    }
    eprintln!("| ramp (MiB/s) | standalone, watch off: OOM kills | watch on: OOM kills | early rounds | cluster, watch off: OOM kills | watch on: OOM kills | early rounds (the shaper's) |");
    eprintln!("|---|---|---|---|---|---|---|");
    for (rate, off, on, c_off, c_on) in rows {
        eprintln!(
            "| {rate} | {} | {} | {} | {} | {} | {} ({}) |",
            off.oom_kills,
            on.oom_kills,
            on.early_rounds,
            c_off.oom_kills,
            c_on.oom_kills,
            c_on.early_rounds,
            c_on.shaper_early_rounds
        );
    }
}

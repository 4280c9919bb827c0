//! A throttled container's CPU limit is not shrunk, against a REAL dockerd
//! (scripts/test.sh installs and starts it). In CI (CI=true) this test
//! fails when Docker is missing.
//!
//! The container bursts 4 processes for 50 ms every ~0.55 s
//! ([`agent_common::BURSTS`]): ~0.13 cores on average under a 0.5-core
//! limit, so its forecast asks for far less than the limit, yet the kernel
//! throttles it in many CFS periods. The agent samples `throttling_data`
//! and must leave its CPU alone (memory is still shaped). A quiet
//! neighbour with the same limit shows that CPU is cut when nothing is
//! throttled.

mod agent_common;

use agent::NodeActionKind;
use agent_common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_container_cpu_is_not_shrunk_on_dockerd() {
    let test = "throttled";
    if docker_or_skip(test).is_none() {
        return;
    }
    let labels = [("tailor.enable", "true"), ("tailor.test", test)];
    let hot = TestContainer::run_cmd(
        "tailor-t-thr-hot",
        256,
        0.5,
        &labels,
        &[],
        &["sh", "-c", BURSTS],
    );
    let calm = TestContainer::run(
        "tailor-t-thr-calm",
        256,
        0.5,
        &labels,
        &["16:0.05:3600"],
        &[],
    );
    // no buffer: the plan follows the (peak) forecast, so a CPU cut is
    // planned for both containers even on a loaded machine
    let mut cfg = agent_config(test, "", "");
    cfg.shaper.k1 = 0.0;
    cfg.shaper.k2 = 0.0;
    let mut agent = docker_agent(cfg);
    let mut cpu_cuts: Vec<(String, f64, f64)> = Vec::new();
    let mut held: Vec<String> = Vec::new();
    for _ in 0..10 {
        let r = round_in_1s(&mut agent).await;
        for o in &r.outcomes {
            if let NodeActionKind::Resize { from, to } = &o.action.kind {
                if to.cpu_cores < from.cpu_cores {
                    cpu_cuts.push((
                        o.action.container_name.clone(),
                        from.cpu_cores,
                        to.cpu_cores,
                    ));
                }
            }
            if let Some(note) = o.error.as_ref().filter(|n| n.contains("throttled")) {
                held.push(format!("{}: {note}", o.action.container_name));
            }
        }
    }
    assert!(
        agent.shared().metrics.throttled_periods() > 0,
        "the engine reported throttled periods"
    );
    // the kernel plans a CPU cut (its forecast is far below the limit), the
    // agent keeps the CPU limit and says why
    assert!(
        cpu_cuts.iter().any(|(n, ..)| n == &hot.name),
        "a CPU cut was planned for the bursty container: {cpu_cuts:?}"
    );
    assert!(
        held.iter().any(|h| h.starts_with(&hot.name)),
        "the cut was held back because of throttling: {held:?}"
    );
    assert_eq!(hot.nano_cpus(), 500_000_000, "CPU limit kept");
    assert!(hot.mem_limit() < 256 * MIB, "memory still shaped");
    assert!(
        !held.iter().any(|h| h.starts_with(&calm.name)) && calm.nano_cpus() < 500_000_000,
        "the quiet neighbour's CPU is cut: {cpu_cuts:?} {held:?}"
    );
}

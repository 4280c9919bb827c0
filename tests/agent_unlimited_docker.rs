//! A container without limits next to labelled ones, against a REAL dockerd
//! (scripts/test.sh installs and starts it). In CI (CI=true) this test
//! fails when Docker is missing.
//!
//! With the default `manage_unlimited = false` the unlimited container
//! counts at what it uses: it is never given a limit and never evicted,
//! and it does not make the node look full (before, it counted as the
//! whole node and the labelled containers were evicted).

mod agent_common;

use agent::NodeActionKind;
use agent_common::*;
use std::time::Duration;

/// `docker run` of the test image with no memory or CPU limit.
fn run_unlimited(name: &str, labels: &[(&str, &str)], step: &str) -> TestContainer {
    let _ = docker(&["rm", "-f", name]);
    let mut args: Vec<String> = ["run", "-d", "--network", "none", "--name", name]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for (k, v) in labels {
        args.push("--label".into());
        args.push(format!("{k}={v}"));
    }
    args.extend([IMAGE.to_string(), "/bin/loadgen".into(), step.into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let id = docker(&refs).unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    TestContainer {
        id,
        name: name.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlimited_container_gets_no_limit_and_causes_no_eviction() {
    let test = "unlimited";
    if docker_or_skip(test).is_none() {
        return;
    }
    let labels = [("tailor.enable", "true"), ("tailor.test", test)];
    let free = run_unlimited("tailor-t-unl-free", &labels, "60:0.02:3600");
    let a = TestContainer::run("tailor-t-unl-a", 256, 1.0, &labels, &["20:0.02:3600"], &[]);
    let b = TestContainer::run("tailor-t-unl-b", 256, 1.0, &labels, &["20:0.02:3600"], &[]);
    // the labelled requests alone (512 MiB) exceed the node: shaping must
    // make room, and the unlimited container must not count as the node
    let cfg = agent_config(
        test,
        "manage_unlimited = false",
        &format!("[capacity]\ncpu_cores = 2.0\nmem_bytes = {}\n", 400 * MIB),
    );
    assert!(!cfg.manage_unlimited);
    let mut agent = docker_agent(cfg);
    for _ in 0..3 {
        agent.sample_only().await.expect("sample");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut evictions = Vec::new();
    let mut touched_free = Vec::new();
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let r = agent.round().await.expect("round against the real dockerd");
        for o in &r.outcomes {
            if matches!(o.action.kind, NodeActionKind::Evict { .. }) {
                evictions.push(o.action.container_name.clone());
            }
            if o.action.container_name == free.name {
                touched_free.push(format!("{:?}", o.action.kind));
            }
        }
    }
    assert!(evictions.is_empty(), "evictions: {evictions:?}");
    assert!(
        touched_free.is_empty(),
        "unlimited container acted on: {touched_free:?}"
    );
    assert!(free.running(), "the unlimited container keeps running");
    assert_eq!(free.mem_limit(), 0, "no memory limit given");
    assert_eq!(free.nano_cpus(), 0, "no CPU limit given");
    assert!(a.running() && b.running());
    assert!(
        a.mem_limit() < 256 * MIB && b.mem_limit() < 256 * MIB,
        "the labelled containers are shaped: {} / {} bytes",
        a.mem_limit(),
        b.mem_limit()
    );
}

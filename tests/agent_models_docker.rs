//! Models survive an agent restart and a container's re-creation, against
//! a REAL dockerd (scripts/test.sh installs and starts it). In CI
//! (CI=true) this test fails when Docker is missing.
//!
//! 1. An agent with a state directory watches a container for 8 rounds and
//!    checkpoints its models (`models.json`).
//! 2. A new agent over the same state directory: in its first round the
//!    container's forecast comes from its restored model ("own", with the
//!    samples seen before the restart), not from the request.
//! 3. The container is removed and recreated under the same name: the new
//!    container (a new id) inherits its predecessor's history.
//! 4. The second agent's recording replays with no mismatch: it starts
//!    from the models that agent restored.

mod agent_common;

use agent_common::*;
use shaper::ForecastSource;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_survive_restart_and_recreation() {
    let test = "models";
    if docker_or_skip(test).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tmp");
    let config = || {
        let mut c = agent_config(test, "actuation = \"recommend\"", "");
        c.state_file = dir.path().join("agent-state.json");
        c
    };
    let sel = ("tailor.test", test);
    let name = "tailor-t-models";
    let labels = [("tailor.enable", "true"), sel];
    let first = TestContainer::run(name, 256, 1.0, &labels, &["24:0.02:3600"], &[]);

    let mut a = docker_agent(config());
    let mut before = 0;
    for _ in 0..8 {
        let r = round_in_1s(&mut a).await;
        if let Some((_, n)) = seen(&r, name) {
            before = n;
        }
    }
    assert!(before >= 6, "the first agent fed {before} samples");
    drop(a);
    assert!(
        dir.path().join(agent::checkpoint::MODELS_FILE).exists(),
        "models checkpointed under the state directory"
    );

    // The restarted agent records: its recording carries the models it
    // restored, so a parity check starts from them (step 4).
    let recording = dir.path().join("run2.jsonl.gz");
    let mut b = docker_agent({
        let mut c = config();
        c.record.enabled = true;
        c.record.path = Some(recording.clone());
        c
    });
    let r = round_in_1s(&mut b).await;
    let (source, n) = seen(&r, name).expect("container listed");
    assert_eq!(
        source,
        Some(ForecastSource::Own),
        "first round after the restart forecasts from the restored model"
    );
    // a fresh model would have seen at most 1 sample in its first round
    assert!(n >= 4, "restored history: {n} samples");
    assert!(
        r.view
            .containers
            .iter()
            .find(|c| c.meta.name == name)
            .and_then(|c| c.forecast.as_ref())
            .is_some(),
        "a forecast, not the request"
    );

    drop(first);
    round_in_1s(&mut b).await; // sees it gone: its history is kept under its name
    let _second = TestContainer::run(name, 256, 1.0, &labels, &["24:0.02:3600"], &[]);
    let r = round_in_1s(&mut b).await;
    let (source, n) = seen(&r, name).expect("recreated container listed");
    assert!(n > 3, "inherited history: {n} samples");
    assert_eq!(
        source,
        Some(ForecastSource::Own),
        "the recreated container starts from its predecessor's model"
    );
    drop(b);
    let rec = sim::recorded::read_recording(&recording).expect("the second run's recording");
    assert!(
        rec.header.models.is_some(),
        "the restored models are in the header"
    );
    let parity = sim::recorded::check_parity(&rec, None).expect("parity");
    assert!(parity.forecasts > 0, "{parity}");
    assert!(parity.mismatches.is_empty(), "{parity}");
}

//! Unit tests of reading a recording, its parity check and its workload.

use super::*;
use shaper::node::{ContainerMeta, ContainerSample, Sample};
use shaper::ShaperConfig;

const MIB: f64 = 1024.0 * 1024.0;

fn round(i: u64, mem_mib: f64, peak_mib: Option<f64>, events: Vec<KernelEvent>) -> RoundRecord {
    RoundRecord {
        round: i,
        at_s: 100.0 + i as f64,
        capacity: Resources::new(2.0, 1024.0 * MIB),
        events,
        containers: vec![ContainerSample {
            meta: ContainerMeta::core("c", "c", "web", 50.0),
            request: Resources::new(1.0, 256.0 * MIB),
            allocation: Resources::new(1.0, 128.0 * MIB),
            usage: Resources::new(0.1, mem_mib * MIB),
            sample: Some(Sample {
                cpu_cores: Some(0.1),
                mem_bytes: mem_mib * MIB,
                mem_peak_bytes: peak_mib.map(|p| p * MIB),
            }),
            app_failures: 0,
            oom_kills: 0,
        }],
        labels: BTreeMap::new(),
        forecasts: vec![None],
        source: "local".into(),
        decisions: None,
        early: false,
    }
}

/// A one-second recording of `rounds`.
fn recording(rounds: Vec<RoundRecord>) -> Recording {
    Recording {
        header: RecordingHeader {
            version: shaper::record::RECORD_VERSION,
            node: "n".into(),
            interval_s: 1.0,
            actuation: "shape".into(),
            mode: "standalone".into(),
            shaper: ShaperConfig::default(),
            forecaster: Default::default(),
            models: None,
        },
        rounds,
    }
}

/// The recorded in-interval peaks are the replay's peaks, and an OOM
/// kill at 128 MiB makes that interval's peak just above 128 MiB
/// although the samples never showed more than 100 MiB.
#[test]
fn peaks_and_oom_kills_are_kept_as_demand() {
    let kill = KernelEvent::OomKill {
        container_id: "c".into(),
        limit_bytes: 128.0 * MIB,
        at_s: 102.0,
    };
    let rec = recording(vec![
        round(0, 50.0, None, vec![]),
        round(1, 60.0, Some(100.0), vec![]),
        round(2, 20.0, None, vec![kill]),
        round(3, 30.0, None, vec![]),
    ]);
    let wl = recorded_workload(&rec, "t").expect("workload");
    let u = &wl.apps[0].components[0].usage;
    let peaks: Vec<f64> = (0..4).map(|i| u.mem_peak(i) / MIB).collect();
    assert!((peaks[0] - 50.0).abs() < 1e-3, "{peaks:?}");
    assert!((peaks[1] - 100.0).abs() < 1e-3, "{peaks:?}");
    assert!(peaks[2] > 128.0 && peaks[2] < 129.0, "{peaks:?}");
    assert!((peaks[3] - 30.0).abs() < 1e-3, "{peaks:?}");
    assert!(
        (u.mem_bytes.at(2) / MIB - 20.0).abs() < 1e-3,
        "the mean is kept"
    );
}

/// An early round (the agent's memory watch) is no interval of its own:
/// its peak and its OOM kill join the next round's interval, and a last
/// early round is kept.
#[test]
fn an_early_round_joins_the_next_rounds_interval() {
    let kill = KernelEvent::OomKill {
        container_id: "c".into(),
        limit_bytes: 128.0 * MIB,
        at_s: 102.5,
    };
    let mut rounds = vec![
        round(0, 50.0, None, vec![]),
        round(1, 60.0, None, vec![]),
        round(2, 90.0, None, vec![]),
        round(3, 70.0, None, vec![]),
        round(4, 40.0, None, vec![]),
        round(5, 30.0, None, vec![kill]),
        round(6, 35.0, None, vec![]),
        round(7, 120.0, None, vec![]),
    ];
    for i in [2, 5, 7] {
        rounds[i].early = true;
    }
    let wl = recorded_workload(&recording(rounds), "t").expect("workload");
    let c = &wl.apps[0].components[0];
    let u = &c.usage;
    let mean: Vec<f64> = (0..5).map(|i| (u.mem_bytes.at(i) / MIB).round()).collect();
    let peak: Vec<f64> = (0..5).map(|i| u.mem_peak(i) / MIB).collect();
    assert_eq!(mean, vec![50.0, 60.0, 70.0, 40.0, 35.0], "{peak:?}");
    assert!((peak[2] - 90.0).abs() < 1e-3, "the early 90 MiB: {peak:?}");
    assert!(
        peak[4] > 128.0 && peak[4] < 129.0,
        "the early kill: {peak:?}"
    );
    assert!(
        (u.mem_bytes.at(5) / MIB - 120.0).abs() < 1e-3,
        "the last early round kept"
    );
    assert_eq!(c.work_s, 6.0, "six intervals, not eight");
}

/// A recorded memory reservation is the replayed component's floor:
/// an idle container is sized down to it, not below.
#[test]
fn a_recorded_reservation_is_a_floor() {
    let run = |floor_mib: f64| {
        let mut rounds: Vec<RoundRecord> = (0..300).map(|i| round(i, 20.0, None, vec![])).collect();
        for r in &mut rounds {
            r.containers[0].meta.mem_floor_bytes = floor_mib * MIB;
        }
        let wl = recorded_workload(&recording(rounds), "t").expect("workload");
        assert_eq!(wl.apps[0].components[0].mem_floor_bytes, floor_mib * MIB);
        let cfg = crate::SimConfig {
            interval_s: 1.0,
            shaper: ShaperConfig {
                grace_period_s: 0.0,
                ..ShaperConfig::uniform()
            },
            ..Default::default()
        };
        let r = crate::simulate(&wl, &cfg, None).expect("replay");
        r.metrics.mem_alloc_byte_s / MIB
    };
    let (free, floored) = (run(0.0), run(200.0));
    // 300 s of a 256 MiB request: shaped far below 200 MiB on average
    // without the floor, at least 200 MiB all along with it.
    assert!(free < 100.0 * 300.0, "{free} MiB s");
    assert!(floored >= 200.0 * 299.0, "{floored} MiB s");
    assert!(floored <= 256.0 * 300.0, "{floored} MiB s");
}

/// A header whose interval the simulator cannot run at is refused
/// naming the file, the line and the key (it failed later with an
/// error that named neither).
#[test]
fn a_header_interval_out_of_range_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("rec.jsonl");
    let mut rec = recording(vec![]);
    rec.header.interval_s = 1e-300;
    let line = serde_json::to_string(&Record::Header(Box::new(rec.header))).expect("json");
    std::fs::write(&path, format!("{line}\n")).expect("write");
    let err = read_recording(&path).expect_err("refused").to_string();
    assert!(
        err.contains("rec.jsonl")
            && err.contains("line 1: header: interval_s must be in [0.1, 86400]"),
        "{err}"
    );
}

/// A limit changed by hand while recorded (the agent adopts it as the
/// request) is a request change at the sample it was first seen; the
/// usage stays in bytes.
#[test]
fn a_request_changed_by_hand_is_a_request_change() {
    let mut rounds: Vec<RoundRecord> = (0..4).map(|i| round(i, 50.0, None, vec![])).collect();
    for r in &mut rounds[2..] {
        r.containers[0].request = Resources::new(0.5, 512.0 * MIB);
    }
    let rec = recording(rounds);
    let wl = recorded_workload(&rec, "t").expect("workload");
    let c = &wl.apps[0].components[0];
    assert_eq!(c.request, Resources::new(1.0, 256.0 * MIB));
    assert_eq!(
        c.request_changes,
        vec![RequestChange {
            at_elapsed_s: 2.0,
            request: Resources::new(0.5, 512.0 * MIB),
        }]
    );
    assert_eq!(c.request_at(1.9), c.request);
    assert!((c.usage.mem_bytes.at(3) / MIB - 50.0).abs() < 1e-3);
}
/// Writes `rec` as a recording file and reads it back.
fn read_back(rec: &Recording) -> Result<Recording, String> {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("rec.jsonl");
    let mut text =
        serde_json::to_string(&Record::Header(Box::new(rec.header.clone()))).expect("json");
    text.push('\n');
    for r in &rec.rounds {
        text.push_str(&serde_json::to_string(&Record::Round(r.clone())).expect("json"));
        text.push('\n');
    }
    std::fs::write(&path, text).expect("write");
    read_recording(&path).map_err(|e| e.to_string())
}

/// QA E4: a round's values are checked as the trace readers check
/// theirs: 1e300 or negative amounts, a capacity of 0 or 1e300, a time
/// that goes back and a container twice in a round are errors naming
/// the file, the line and the key (they replayed with absurd figures or
/// were silently ignored).
#[test]
fn out_of_range_round_values_are_refused_naming_the_line_and_key() {
    let base = || {
        (0..4)
            .map(|i| round(i, 50.0, None, vec![]))
            .collect::<Vec<_>>()
    };
    assert!(read_back(&recording(base())).is_ok());
    type Edit = fn(&mut RoundRecord);
    let cases: [(Edit, &str); 10] = [
        (
            |r| r.containers[0].request.mem_bytes = 1e300,
            "containers[0].request.mem_bytes: 1e300 is above the largest accepted",
        ),
        (
            |r| r.containers[0].usage.mem_bytes = 1e300,
            "containers[0].usage.mem_bytes: 1e300 is above",
        ),
        (
            |r| r.containers[0].usage.mem_bytes = -1e9,
            "containers[0].usage.mem_bytes: -1000000000 is negative",
        ),
        (
            |r| r.containers[0].request.cpu_cores = -1.0,
            "containers[0].request.cpu_cores: -1 is negative",
        ),
        (
            |r| {
                if let Some(s) = r.containers[0].sample.as_mut() {
                    s.mem_peak_bytes = Some(1e300);
                }
            },
            "containers[0].sample.mem_peak_bytes: 1e300 is above",
        ),
        (
            |r| r.capacity.mem_bytes = 1e300,
            "capacity.mem_bytes: 1e300 is above",
        ),
        (
            |r| r.capacity.cpu_cores = 0.0,
            "capacity.cpu_cores: 0 must be above 0",
        ),
        (
            |r| r.at_s = 50.0,
            "at_s: 50 is not after the previous round's, 101",
        ),
        (
            |r| {
                let c = r.containers[0].clone();
                r.containers.push(c);
                r.forecasts.push(None);
            },
            "containers[1].id: \"c\" is in the round twice",
        ),
        (|r| r.forecasts.clear(), "forecasts: 0 for 1 containers"),
    ];
    for (edit, want) in cases {
        let mut rounds = base();
        edit(&mut rounds[2]);
        let e = read_back(&recording(rounds)).expect_err(want);
        // the header is line 1: round 2 is line 4
        assert!(
            e.contains("rec.jsonl") && e.contains(&format!("line 4: {want}")),
            "{want}: {e}"
        );
    }
}

//! `tailor tune` end to end on the bundled workload (oracle, small grid).

use std::process::Command;

#[test]
fn tune_writes_grid_heatmaps_and_an_accepted_snippet() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args([
            "tune",
            "--forecaster",
            "oracle",
            "--k1",
            "0,0.05",
            "--k2",
            "0,3",
            "--quiet",
            "--max-failed-fraction",
            "0.05",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .expect("run tailor");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(dir.path().join("grid.csv")).expect("grid.csv");
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    assert!(csv.starts_with("k1,k2,turnaround_ratio"));
    for stem in [
        "heatmap_turnaround_ratio",
        "heatmap_mem_slack",
        "heatmap_failed_fraction",
    ] {
        assert!(
            dir.path().join(format!("{stem}.svg")).exists(),
            "{stem}.svg"
        );
        assert!(
            dir.path().join(format!("{stem}.png")).exists(),
            "{stem}.png"
        );
    }
    // The snippet is a [shaper] table the shaper (and so the agent) accepts.
    let text = std::fs::read_to_string(dir.path().join("best.toml")).expect("best.toml");
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Snippet {
        shaper: shaper::ShaperConfig,
    }
    let s: Snippet = toml::from_str(&text).expect("valid [shaper] table");
    s.shaper.validate().expect("valid shaper config");
    assert!([0.0, 0.05].contains(&s.shaper.k1));
    assert!([0.0, 3.0].contains(&s.shaper.k2));
}

/// A host's recording: `trace inspect` summarises it, and a tune on one
/// shorter than a day warns that its pick may miss the host's daily peaks.
#[test]
fn a_short_recording_is_inspected_and_tune_warns() {
    use datasets::recording::RecordWriter;
    use shaper::node::{ContainerMeta, ContainerSample, Sample};
    use shaper::record::{Record, RecordingHeader, RoundRecord, RECORD_VERSION};
    use shaper::Resources;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("recording.jsonl.gz");
    let mut w = RecordWriter::create(&path, 1 << 20).expect("create");
    w.append(&Record::Header(Box::new(RecordingHeader {
        version: RECORD_VERSION,
        node: "n".into(),
        interval_s: 10.0,
        actuation: "shape".into(),
        mode: "standalone".into(),
        shaper: Default::default(),
        forecaster: Default::default(),
        models: None,
    })))
    .expect("header");
    let gib = 1024.0 * 1024.0 * 1024.0;
    for i in 0..60u64 {
        let mem = (0.2 + 0.1 * (i % 5) as f64) * gib;
        w.append(&Record::Round(RoundRecord {
            round: i,
            at_s: 1000.0 + 10.0 * i as f64,
            capacity: Resources::new(2.0, 4.0 * gib),
            events: vec![],
            containers: vec![ContainerSample {
                meta: ContainerMeta::core("c", "c", "web", 900.0),
                request: Resources::new(1.0, gib),
                allocation: Resources::new(1.0, gib),
                usage: Resources::new(0.1, mem),
                sample: Some(Sample {
                    cpu_cores: Some(0.1),
                    mem_bytes: mem,
                    mem_peak_bytes: None,
                }),
                app_failures: 0,
                oom_kills: 0,
            }],
            labels: Default::default(),
            forecasts: vec![None],
            source: "local".into(),
            decisions: None,
            early: false,
        }))
        .expect("round");
    }
    w.finish().expect("finish");
    let out = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["trace", "inspect"])
        .arg(&path)
        .output()
        .expect("run tailor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("agent recording of node n"), "{text}");
    assert!(text.contains("rounds: 60 over 0.16 h"), "{text}");
    assert!(text.contains("containers: 1 in 1 applications"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args([
            "tune",
            "--k1",
            "0,0.1",
            "--k2",
            "0,1",
            "--quiet",
            "--workload",
        ])
        .arg(format!("recorded:{}", path.display()))
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .expect("run tailor");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("the recording covers 0.2 h"), "{stderr}");
}

/// Bad input (a K1 out of range, a workload that cannot be read) fails
/// before `--out` is made: no empty directory is left behind, for `tune`
/// and `frontier` alike.
#[test]
fn bad_input_leaves_no_out_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-trace");
    for (i, args) in [
        vec!["tune", "--k1=-1"],
        vec!["tune", "--workload"],
        vec!["frontier", "--workload"],
    ]
    .into_iter()
    .enumerate()
    {
        let out_dir = dir.path().join(format!("out-{i}"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tailor"));
        cmd.args(&args);
        if args.last() == Some(&"--workload") {
            cmd.arg(format!("google2011:{}", missing.display()));
        }
        let out = cmd.arg("--out").arg(&out_dir).output().expect("run tailor");
        assert!(!out.status.success(), "{args:?}");
        assert!(
            !out_dir.exists(),
            "{args:?}: {} left behind",
            out_dir.display()
        );
    }
}

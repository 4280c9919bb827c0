//! `tailor replay` end to end on the bundled workload.

use std::process::Command;

fn tailor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tailor"))
}

#[test]
fn replay_json_has_the_summary_fields() {
    let out = tailor()
        .args(["replay", "--forecaster", "last", "--json", "--quiet"])
        .output()
        .expect("run tailor");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    for key in [
        "policy",
        "forecaster",
        "k1",
        "k2",
        "apps",
        "apps_completed",
        "turnaround_mean_s",
        "turnaround_median_s",
        "turnaround_ratio",
        "mem_slack_mean",
        "mem_slack_median",
        "cpu_slack_mean",
        "failed_app_fraction",
        "oom_kills",
        "evictions",
        "work_lost_s",
        "wall_s",
        "events_per_s",
        "forecast_updates_per_s",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert_eq!(v["policy"], "pessimistic");
    assert_eq!(v["forecaster"], "last");
    assert_eq!(v["k1"], 0.3);
    assert!(v["apps_completed"].as_u64().unwrap_or(0) > 100);
    assert!(
        v["turnaround_ratio"].as_f64().is_some(),
        "baseline ran: {v}"
    );
}

#[test]
fn replay_compare_writes_a_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tailor()
        .args([
            "replay",
            "--forecaster",
            "oracle",
            "--compare",
            "--quiet",
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("baseline")
            && stdout.contains("optimistic+oracle")
            && stdout.contains("pessimistic+oracle"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).expect("report.md");
    assert!(md.contains("| baseline |"), "{md}");
    assert!(md.contains("pessimistic+oracle"));
    for f in [
        "turnaround_cdf.svg",
        "slack_box.svg",
        "queue_length.svg",
        "summary.json",
    ] {
        assert!(dir.path().join(f).exists(), "{f} missing");
    }
}

#[test]
fn replay_rejects_bad_arguments() {
    for args in [
        vec!["replay", "--policy", "reckless"],
        vec!["replay", "--forecaster", "crystal-ball"],
        vec!["replay", "--k1", "-1"],
        vec!["replay", "--workload", "nowhere:1"],
    ] {
        let out = tailor().args(&args).output().expect("run tailor");
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn replay_reads_a_config_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sim.toml");
    std::fs::write(
        &path,
        "forecaster_source = \"oracle\"\n[shaper]\npolicy = \"optimistic\"\nk1 = 0.1\n",
    )
    .expect("write");
    let out = tailor()
        .args(["replay", "--json", "--no-baseline", "--quiet", "--config"])
        .arg(&path)
        .output()
        .expect("run tailor");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["policy"], "optimistic");
    assert_eq!(v["forecaster"], "oracle");
    assert_eq!(v["k1"], 0.1);
    assert!(v["turnaround_ratio"].is_null());
    std::fs::write(&path, "intervall_s = 3.0\n").expect("write");
    let out = tailor()
        .args(["replay", "--config"])
        .arg(&path)
        .output()
        .expect("run tailor");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("intervall_s"));
}

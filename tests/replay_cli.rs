//! `tailor replay` end to end on the bundled workload.

use std::process::Command;

fn tailor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tailor"))
}

/// `tailor replay --json --quiet ARGS`, which must succeed: its JSON.
fn replay_json<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> serde_json::Value {
    let out = tailor()
        .args(["replay", "--json", "--quiet"])
        .args(args)
        .output()
        .expect("run tailor");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn replay_json_has_the_summary_fields() {
    let v = replay_json(&["--forecaster", "last"]);
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
    assert_eq!(v["k1"], 0.05);
    assert_eq!(v["k2"], 1.0);
    assert!(v["apps_completed"].as_u64().unwrap_or(0) > 100);
    assert!(
        v["turnaround_ratio"].as_f64().is_some(),
        "baseline ran: {v}"
    );
}

/// The saving against the baseline and the oracle's share: the oracle's own
/// sizing reclaims exactly the oracle's saving, and a buffered run less.
#[test]
fn replay_shows_the_saving_as_a_share_of_the_oracles() {
    let run = replay_json::<&str>;
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    // The oracle's own sizing: no buffer, no size rule (`sim::oracle_of`).
    let oracle = run(&[
        "--forecaster",
        "oracle",
        "--k1",
        "0",
        "--k2",
        "0",
        "--small-app-components",
        "0",
        "--app-mem-ref-rel",
        "0",
    ]);
    assert!(
        (f(&oracle, "oracle_capture") - 1.0).abs() < 1e-9,
        "{oracle}"
    );
    assert!(
        (f(&oracle, "oracle_mem_alloc_gib_h") - f(&oracle, "mem_alloc_gib_h")).abs() < 1e-6,
        "{oracle}"
    );
    let shaped = run(&["--forecaster", "last"]);
    let reclaimed = f(&shaped, "mem_reclaimed_gib_h");
    let room = f(&oracle, "mem_reclaimed_gib_h");
    assert!(room > 0.0 && reclaimed < room, "{shaped}");
    assert!(
        (f(&shaped, "oracle_capture") - reclaimed / room).abs() < 1e-9,
        "{shaped}"
    );
    let alone = run(&["--forecaster", "last", "--no-baseline"]);
    assert!(
        alone["oracle_capture"].is_null() && alone["mem_reclaimed_gib_h"].is_null(),
        "{alone}"
    );
    let human = tailor()
        .args(["replay", "--forecaster", "last", "--quiet"])
        .output()
        .expect("run tailor");
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("memory reclaimed") && text.contains("share of oracle's saving"),
        "{text}"
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
    // The message once, without a backtrace, however the environment is set.
    let out = tailor()
        .args(["replay", "--seeds", "0"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run tailor");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(
        err.matches("--seeds must be in [1, 100], got 0").count(),
        1,
        "{err}"
    );
    assert!(!err.contains("backtrace"), "{err}");
    // A directory of both Alibaba GPU clusters names its subdirectories.
    let slice = concat!(env!("CARGO_MANIFEST_DIR"), "/data/alibaba-gpu-slice");
    let out = tailor()
        .args(["replay", "--workload", &format!("alibaba-gpu:{slice}")])
        .output()
        .expect("run tailor");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("gpu-v2023, gpu-v2025: name one of them"),
        "{err}"
    );
}

#[test]
fn an_unwritable_out_fails_before_the_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").expect("write");
    for cmd in ["replay", "tune", "frontier"] {
        let out = tailor()
            .args([cmd, "--quiet", "--out"])
            .arg(&file)
            .output()
            .expect("run tailor");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd}");
        assert!(err.contains("cannot create the directory"), "{cmd}: {err}");
    }
}

#[test]
fn replay_counts_the_applications_no_host_could_hold() {
    let out = tailor()
        .args(["replay", "--quiet", "--capacity-scale", "0.01"])
        .output()
        .expect("run tailor");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("apps completed"))
        .expect("apps completed row");
    assert!(line.contains(" rejected)"), "{line}");
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
    let v = replay_json(&[
        std::ffi::OsStr::new("--no-baseline"),
        "--config".as_ref(),
        path.as_os_str(),
    ]);
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

/// `--pool-phase task` gives each pooled task a phase of its own: the same
/// workload, other usage series (and `job`, the default, changes nothing).
#[test]
fn replay_pool_phase_moves_the_siblings_phases() {
    let alloc = |phase: &[&str]| -> f64 {
        let v = replay_json(&[&["--no-baseline"], phase].concat());
        v["mem_alloc_gib_h"].as_f64().expect("mem_alloc_gib_h")
    };
    let default = alloc(&[]);
    assert_eq!(alloc(&["--pool-phase", "job"]), default);
    assert_ne!(alloc(&["--pool-phase", "task"]), default);
}

/// A printing command whose reader is gone (`tailor ... | head`) ends by
/// SIGPIPE, like other Unix tools, not with a panic (exit 101).
#[test]
fn a_closed_stdout_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = tailor()
        .args(["config", "check", "packaging/agent.toml"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(13), "{:?}: {stderr}", out.status);
}

//! `--out` of `tailor replay`, `tune` and `frontier`: all or nothing
//! (QA E6), made only after the workload was read (QA E8); degenerate
//! runs (QA E11) and seeds past u64 (QA E15).

use std::path::Path;
use std::process::{Command, Output};

fn tailor(args: &[&str], out: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tailor"));
    c.args(args);
    if let Some(o) = out {
        c.arg("--out").arg(o);
    }
    c.output().expect("run tailor")
}

const REPLAY: &[&str] = &[
    "replay",
    "--quiet",
    "--forecaster",
    "last",
    "--max-apps",
    "40",
];
const TUNE: &[&str] = &[
    "tune",
    "--quiet",
    "--forecaster",
    "oracle",
    "--k1",
    "0",
    "--k2",
    "0,3",
    "--max-apps",
    "40",
];
const FRONTIER: &[&str] = &[
    "frontier",
    "--quiet",
    "--forecasters",
    "peak",
    "--k1",
    "0",
    "--k2",
    "0",
    "--memory-risk",
    "none",
    "--max-apps",
    "40",
];

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A name of the output taken by a directory: the command fails naming
/// that file, the older outputs are untouched and no new one (or temporary
/// file) is left.
#[test]
fn a_failed_write_leaves_the_older_outputs_untouched() {
    for (args, blocked, old) in [
        (REPLAY, "report.md", "summary.json"),
        (TUNE, "report.md", "grid.csv"),
        (FRONTIER, "frontier.md", "points.csv"),
    ] {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir(dir.path().join(blocked)).expect("blocker");
        std::fs::write(dir.path().join(old), "older run").expect("old");
        let out = tailor(args, Some(dir.path()));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: {err}", args[0]);
        let named = format!("{}: is a directory", dir.path().join(blocked).display());
        assert!(err.contains(&named), "{}: {err}", args[0]);
        let mut expected = vec![blocked.to_string(), old.to_string()];
        expected.sort();
        assert_eq!(names(dir.path()), expected, "{}", args[0]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(old)).expect("old"),
            "older run",
            "{}",
            args[0]
        );
    }
}

/// A re-run replaces every file of the older run (an older `best.toml`
/// too when no cell meets the budget any more).
#[test]
fn a_rerun_replaces_the_outputs() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("report.md"), "older run").expect("old");
    let out = tailor(REPLAY, Some(dir.path()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).expect("md");
    assert!(md.starts_with('#'), "{md}");
    assert!(names(dir.path()).iter().all(|n| !n.starts_with('.')));
}

/// QA E8: the workload is read before `--out` is made.
#[test]
fn bad_input_leaves_no_out_directory() {
    for args in [REPLAY, TUNE, FRONTIER] {
        let dir = tempfile::tempdir().expect("tmp");
        let o = dir.path().join("new");
        let mut a = args.to_vec();
        a.extend(["--workload", "bitbrains:/nonexistent/tailor-qa"]);
        let out = tailor(&a, Some(&o));
        assert!(!out.status.success(), "{}", args[0]);
        assert!(
            !o.exists(),
            "{}: --out made before the workload was read",
            args[0]
        );
    }
}

/// QA E11: every application rejected is an error, not a table of 0.0%.
#[test]
fn nothing_placed_is_an_error() {
    for args in [REPLAY, TUNE, FRONTIER] {
        let dir = tempfile::tempdir().expect("tmp");
        let o = dir.path().join("new");
        let mut a = args.to_vec();
        a.push("--capacity-scale=1e-300");
        let out = tailor(&a, (args[0] != "replay").then_some(o.as_path()));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}", args[0]);
        assert!(
            err.contains("no application ran: all 40 applications")
                && err.contains("--capacity-scale 1e-300 shrinks every host"),
            "{}: {err}",
            args[0]
        );
        let written = std::fs::read_dir(&o).map_or(0, |d| d.count());
        assert_eq!(written, 0, "{}: files written to --out", args[0]);
    }
}

/// QA E11: turnarounds below a millisecond give no ratio (n/a, null).
#[test]
fn a_ratio_of_nothing_is_not_shown() {
    let mut a = REPLAY.to_vec();
    a.push("--stretch=1e-300");
    let out = tailor(&a, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("turnaround ratio"))
        .expect("ratio row");
    assert!(line.contains("n/a") && !line.contains("1.00x"), "{line}");
    a.push("--json");
    let out = tailor(&a, None);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(v["turnaround_ratio"].is_null(), "{v}");
}

/// QA E15: seeds past u64::MAX are refused, and huge values print short.
#[test]
fn seeds_do_not_wrap_and_huge_values_print_short() {
    let out = tailor(
        &[
            "replay",
            "--quiet",
            "--workload",
            "synthetic:18446744073709551615:10",
            "--seeds",
            "3",
        ],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("runs past the largest seed"), "{err}");
    let out = tailor(&["replay", "--quiet", "--stretch=1e300"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("got 1e300"), "{err}");
}

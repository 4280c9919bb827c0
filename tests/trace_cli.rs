//! `tailor trace inspect` end to end (the binary), on the in-repo slice
//! always and on ../shared/data when present.

use std::path::{Path, PathBuf};
use std::process::Command;

fn tailor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tailor"))
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn inspect_repo_slice_text_and_json() {
    let te = repo("data/google-2011-slice/task_events/part-00000-of-00500.csv.gz");
    let me = repo("data/google-2011-slice/machine_events/part-00000-of-00001.csv.gz");
    let out = tailor()
        .args(["trace", "inspect"])
        .arg(&te)
        .arg(&me)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("google-2011 task_events"), "{text}");
    assert!(text.contains("rows: 2663"), "{text}");
    assert!(text.contains("tasks: 1132"), "{text}");
    assert!(text.contains("google-2011 machine_events"), "{text}");
    assert!(text.contains("machines: 80"), "{text}");

    let out = tailor()
        .args(["trace", "inspect", "--json"])
        .arg(&te)
        .output()
        .expect("run");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["rows"], 2663);
    assert_eq!(v["table"], "task_events");
    assert_eq!(v["distinct"]["jobs"], 363);
}

#[test]
fn malformed_file_fails_with_file_and_line_unless_lenient() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("task_events.csv");
    std::fs::write(
        &p,
        "0,,1,0,5,1,u,0,9,0.1,0.1,,\n5,,1,0,5,zz,u,0,9,,,,\n9,,1,0,5,4,u,0,9,,,,\n",
    )
    .expect("write");
    let out = tailor()
        .args(["trace", "inspect"])
        .arg(&p)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("task_events.csv:2:") && err.contains("event type"),
        "{err}"
    );
    let out = tailor()
        .args(["trace", "inspect", "--lenient"])
        .arg(&p)
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("rows: 2 (1 malformed rows skipped)"),
        "{text}"
    );
    let out = tailor()
        .args(["trace", "inspect", "--table", "nope"])
        .arg(&p)
        .output()
        .expect("run");
    assert!(!out.status.success());
}

#[test]
fn inspect_real_task_events_part0() {
    let shared = repo("../shared/data");
    if !shared.is_dir() {
        println!("skipped: ../shared/data not found");
        return;
    }
    let te = shared.join("google-2011/task_events/part-00000-of-00500.csv.gz");
    let out = tailor()
        .args(["trace", "inspect", "--json"])
        .arg(&te)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["rows"], 450_146);
    let ev = &v["counts"]["event type"];
    assert_eq!(ev["SUBMIT"], 201_491);
    assert_eq!(ev["SCHEDULE"], 189_994);
    assert_eq!(ev["FINISH"], 43_237);
    assert_eq!(ev["KILL"], 10_505);
    assert_eq!(ev["EVICT"], 4_338);
    assert_eq!(ev["FAIL"], 581);
    let gcd = shared.join("google-2011/derived/GCD_VMs.tar.gz");
    let out = tailor()
        .args(["trace", "inspect", "--json"])
        .arg(&gcd)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["distinct"]["series"], 1600);
    assert_eq!(v["rows"], 1600 * 288);
}

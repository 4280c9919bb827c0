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

/// Every file under `dir`, recursively, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn inspect_reads_every_file_in_data_or_says_what_it_is() {
    let files = files_under(&repo("data"));
    assert!(files.len() >= 6, "{files:?}");
    // all at once, as `tailor trace inspect data/**` would
    let out = tailor()
        .args(["trace", "inspect"])
        .args(&files)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for f in &files {
        let out = tailor()
            .args(["trace", "inspect", "--json"])
            .arg(f)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let table = v["table"].as_str().expect("table");
        let name = f.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(
            text.contains(&f.display().to_string()),
            "{name} not in the text output"
        );
        if name.ends_with(".md") {
            // documentation: named as such, not summarised, not an error
            assert_eq!(table, "not_a_trace", "{name}: {v}");
            assert!(
                v["note"].as_str().expect("note").contains("Markdown"),
                "{v}"
            );
        } else {
            // every data file is read: a known kind with rows
            assert_ne!(table, "not_a_trace", "{name}: {v}");
            assert!(v["rows"].as_u64().expect("rows") > 0, "{name}: {v}");
        }
        match name {
            "usage-pool.txt.gz" => {
                assert_eq!(table, "usage_pool", "{v}");
                assert!(v["distinct"]["series"].as_u64() > Some(100), "{v}");
                assert!(
                    v["distributions"]["CPU usage / request (per task)"]["count"].as_u64()
                        > Some(100)
                );
            }
            "google-2011-distributions.json.gz" => {
                assert_eq!(table, "workload_distributions", "{v}");
                assert!(
                    v["distributions"]["job inter-arrival quantiles (s)"].is_object(),
                    "{v}"
                );
            }
            "ATTRIBUTION.md" => {}
            _ if f.to_string_lossy().contains("google-2011-slice") => {
                assert!(
                    ["task_events", "job_events", "machine_events"].contains(&table),
                    "{name}: {table}"
                );
            }
            _ => {}
        }
    }
}

#[test]
fn files_that_are_no_trace_are_named_not_failed() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "notes.md",
            b"# Notes\n\nsome text\n",
            "Markdown text (3 lines)",
        ),
        ("empty.csv", b"", "empty file"),
        ("blob.bin", b"\x00\x01\x02\x03binary\x00", "binary data"),
        ("other.json", b"{\"a\": 1}\n", "JSON document"),
    ];
    for (name, bytes, what) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).expect("write");
        let out = tailor()
            .args(["trace", "inspect"])
            .arg(&p)
            .output()
            .expect("run");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("(not a trace)") && stdout.contains(what),
            "{name}: {stdout}"
        );
    }
    // a text file of no known shape still fails, saying what it tried
    let p = dir.path().join("words.txt");
    std::fs::write(&p, "hello world\nfoo bar\n").expect("write");
    let out = tailor()
        .args(["trace", "inspect"])
        .arg(&p)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a trace table this tool knows"), "{err}");
    // a directory is named as one, with what to do instead
    let out = tailor()
        .args(["trace", "inspect"])
        .arg(dir.path())
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is a directory") && err.contains("--workload google2019:"),
        "{err}"
    );
}

//! `tailor history --state-dir` on crafted journals (QA E9, E10, E15).

use std::process::{Command, Output};

fn history(dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["history", "--state-dir"])
        .arg(dir)
        .output()
        .expect("run tailor")
}

const ENTRY: &str = r#"{"seq":1,"round":1,"at_s":1700000000.0,"actuation":"recommend","source":"local","actions":[{"container":"web\u001b]0;x","action":"resize","result":"recommended","from_cpu_cores":1.0,"to_cpu_cores":0.5,"from_mem_mib":1024,"to_mem_mib":512,"explanation":"y\u001b[31mred","note":"n\u009b2J"}],"oom_kills":[{"container":"w\u001bc","limit_mib":100,"floor_mib":200,"killed_at_s":1e300}]}"#;

#[test]
fn journal_text_reaches_the_terminal_sanitised() {
    let d = tempfile::tempdir().expect("tmp");
    std::fs::write(d.path().join("decisions.jsonl"), format!("{ENTRY}\n")).expect("write");
    let out = history(d.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    assert!(text.contains("y?[31mred"), "{text}");
    assert!(text.contains("web?]0;x"), "{text}");
    assert!(text.contains("[n?2J]"), "{text}");
    // QA E15: 1e300 is not printed as 301 digits
    assert!(text.contains("OOM-killed at t=1e300"), "{text}");
}

/// A round the memory watch ran early says so, for the container named.
#[test]
fn an_early_round_is_named_with_its_memory() {
    let d = tempfile::tempdir().expect("tmp");
    let entry = r#"{"seq":3,"round":9,"at_s":1700000100.0,"actuation":"shape","source":"local","actions":[{"container":"api","action":"resize","result":"applied","from_mem_mib":26,"to_mem_mib":60,"explanation":"grown"}],"early":{"container":"api","working_set_bytes":20971520,"limit_bytes":27262976,"at_round_bytes":10485760}}"#;
    std::fs::write(d.path().join("decisions.jsonl"), format!("{entry}\n")).expect("write");
    let out = history(d.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("#3 round 9 t=1700000100 api early round: memory 20.0 MiB of a 26.0 MiB limit (10.0 MiB at the round before"),
        "{text}"
    );
    let early = text.find("early round").expect("early line");
    assert!(early < text.find("resize").expect("resize line"), "{text}");
}

#[test]
fn a_missing_journal_is_an_error_naming_it() {
    let d = tempfile::tempdir().expect("tmp");
    let out = history(d.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let path = d.path().join("decisions.jsonl");
    assert!(
        err.contains(&format!("cannot read {}", path.display())),
        "{err}"
    );
}

#[test]
fn skipped_lines_are_reported_by_number_and_cause() {
    let d = tempfile::tempdir().expect("tmp");
    let mut text = format!("{ENTRY}\nnot json\n");
    for _ in 0..7 {
        text.push_str("{\"seq\": \"one\"}\n");
    }
    std::fs::write(d.path().join("decisions.jsonl"), text).expect("write");
    let out = history(d.path());
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let path = d.path().join("decisions.jsonl");
    assert!(err.contains("8 line(s)"), "{err}");
    assert!(
        err.contains(&format!("{}:2: expected ident", path.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}:3: invalid type", path.display())),
        "{err}"
    );
    assert!(err.contains(&format!("{}:6: ", path.display())), "{err}");
    assert!(!err.contains(&format!("{}:7: ", path.display())), "{err}");
    assert!(err.contains("... and 3 more"), "{err}");
}

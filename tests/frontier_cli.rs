//! `tailor frontier` end to end: the JSON schema and invariants on the
//! bundled slice (tiny grid), `--seeds 3`, the written files, flag
//! validation, and `tune` / `frontier` on an agent recording whose tune
//! snippet `tailor config check` accepts for the agent.

use std::path::Path;
use std::process::{Command, Output};

fn tailor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(args)
        .output()
        .expect("run tailor")
}

fn ok(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// Schema of the `--json` object; returns (baseline mem, oracle mem).
fn check_schema(v: &serde_json::Value) -> (f64, f64) {
    let base = num(&v["baseline"], "mem_alloc_gib_h");
    let _ = num(&v["baseline"], "failed_app_fraction");
    let oracle = num(v, "oracle_mem_alloc_gib_h");
    assert!(
        base > 0.0 && oracle > 0.0 && oracle < base,
        "{base} {oracle}"
    );
    let points = v["points"].as_array().expect("points");
    for p in points {
        for key in ["forecaster", "sizing"] {
            assert!(p[key].is_string(), "{key} in {p}");
        }
        assert!(p["params"].is_object(), "{p}");
        for key in [
            "failed_app_fraction",
            "oom_component_day_fraction",
            "mem_alloc_gib_h",
        ] {
            let x = num(p, key);
            assert!(x >= 0.0, "{key} {x}");
        }
        assert!((0.0..=1.0).contains(&num(p, "failed_app_fraction")));
        assert!((0.0..=1.0).contains(&num(p, "oom_component_day_fraction")));
        // capture is the definition, from the reported figures
        let cap = num(p, "oracle_capture");
        let want = (base - num(p, "mem_alloc_gib_h")) / (base - oracle);
        assert!((cap - want).abs() < 1e-9, "{p}");
    }
    let find = |f: &str| {
        points
            .iter()
            .find(|p| p["forecaster"] == f)
            .unwrap_or_else(|| panic!("no {f} point"))
    };
    assert!((num(find("oracle"), "oracle_capture") - 1.0).abs() < 1e-9);
    assert_eq!(num(find("oracle"), "failed_app_fraction"), 0.0);
    assert!(num(find("baseline"), "oracle_capture").abs() < 1e-12);
    (base, oracle)
}

const TINY: [&str; 16] = [
    "frontier",
    "--quiet",
    "--forecasters",
    "peak,vpa",
    "--k1",
    "0,0.1",
    "--k2",
    "0,3",
    "--memory-risk",
    "none",
    "--vpa-percentile",
    "0.9",
    "--vpa-margin",
    "0.15",
    "--max-apps",
    "120",
];

#[test]
fn frontier_json_on_the_bundled_slice() {
    let mut args = TINY.to_vec();
    args.push("--json");
    let v = ok(&tailor(&args));
    check_schema(&v);
    let points = v["points"].as_array().expect("points");
    // baseline + oracle + 2 x 2 peak + 1 vpa
    assert_eq!(points.len(), 7, "{v}");
    let vpa = points
        .iter()
        .find(|p| p["forecaster"] == "vpa")
        .expect("vpa point");
    assert_eq!(vpa["sizing"], "vpa");
    assert_eq!(vpa["params"]["target_memory_percentile"], 0.9);
    assert_eq!(vpa["params"]["safety_margin_fraction"], 0.15);
    assert!(vpa["params"].get("k1").is_none(), "no K1 on top of the VPA");
    // peak with a buffer reclaims something without failing more than without one
    let peak = |k1: f64, k2: f64| {
        points
            .iter()
            .find(|p| {
                p["forecaster"] == "peak" && p["params"]["k1"] == k1 && p["params"]["k2"] == k2
            })
            .expect("peak point")
    };
    assert!(
        num(peak(0.1, 3.0), "failed_app_fraction") <= num(peak(0.0, 0.0), "failed_app_fraction")
    );
    assert!(v.get("ci95").is_none());
}

#[test]
fn frontier_with_three_seeds_and_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    let mut args = TINY.to_vec();
    args.extend(["--seeds", "3", "--json", "--out"]);
    let out_s = out_dir.display().to_string();
    args.push(&out_s);
    let v = ok(&tailor(&args));
    check_schema(&v);
    assert_eq!(v["seeds"], serde_json::json!([0, 1, 2]));
    for p in v["points"].as_array().expect("points") {
        let ci = &p["ci95"];
        assert!(ci.is_object(), "every point has intervals: {p}");
        assert!(num(ci, "mem_alloc_gib_h") >= 0.0);
    }
    for f in ["frontier.svg", "frontier.png", "points.csv", "frontier.md"] {
        let path = out_dir.join(f);
        assert!(
            std::fs::metadata(&path)
                .map(|m| m.len() > 0)
                .unwrap_or(false),
            "{f}"
        );
    }
    let md = std::fs::read_to_string(out_dir.join("frontier.md")).expect("md");
    for budget in ["| 0.10% |", "| 0.50% |", "| 1.00% |"] {
        assert!(md.contains(budget), "{budget} row missing:\n{md}");
    }
    assert!(md.contains("VPA best"), "{md}");
    let csv = std::fs::read_to_string(out_dir.join("points.csv")).expect("csv");
    assert_eq!(csv.lines().count(), 1 + 7, "{csv}");
    assert!(csv.starts_with("forecaster,sizing,"), "{csv}");
}

#[test]
fn replay_with_three_seeds_reports_intervals() {
    let out = tailor(&[
        "replay",
        "--quiet",
        "--forecaster",
        "peak",
        "--max-apps",
        "80",
        "--seeds",
        "3",
        "--json",
    ]);
    let v = ok(&out);
    assert_eq!(v["seeds"], serde_json::json!([0, 1, 2]));
    let cols = v["columns"].as_array().expect("columns");
    assert_eq!(cols.len(), 2, "baseline and the run: {v}");
    assert_eq!(cols[0]["label"], "baseline");
    let mem = &cols[1]["stats"]["mem_alloc_gib_h"];
    assert_eq!(mem["n"], 3);
    assert!(num(mem, "ci95") >= 0.0 && num(mem, "mean") > 0.0, "{mem}");
    assert_eq!(v["runs"][1].as_array().map(Vec::len), Some(3));
    // the seeds change the workload's random draws (usage, so not the
    // baseline's reservations)
    let runs = v["runs"][1].as_array().expect("runs");
    let gib: Vec<f64> = runs.iter().map(|r| num(r, "mem_alloc_gib_h")).collect();
    assert!(gib.windows(2).any(|w| w[0] != w[1]), "{gib:?}");
    // and the human output shows mean ± interval
    let human = tailor(&[
        "replay",
        "--quiet",
        "--forecaster",
        "peak",
        "--max-apps",
        "80",
        "--seeds",
        "2",
    ]);
    assert!(human.status.success());
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("±") && text.contains("cluster mem slack"),
        "{text}"
    );
}

#[test]
fn flags_are_validated() {
    for (args, needle) in [
        (vec!["frontier", "--seeds", "0"], "--seeds"),
        (vec!["frontier", "--k1=-1"], "k1"),
        (vec!["frontier", "--memory-risk", "0.9"], "memory_risk"),
        (vec!["frontier", "--memory-risk", "abc"], "--memory-risk"),
        (
            vec!["frontier", "--vpa-percentile", "1.5"],
            "vpa_percentile",
        ),
        (vec!["frontier", "--forecasters", "nope"], "nope"),
        (vec!["frontier", "--budget-measure", "x"], "budget-measure"),
        (vec!["frontier", "--policy", "baseline"], "baseline"),
        (vec!["replay", "--seeds", "1000"], "--seeds"),
        (
            vec![
                "frontier",
                "--small-app-components",
                "0",
                "--small-app-k1",
                "0.3",
            ],
            "small_app_components",
        ),
        (
            vec![
                "frontier",
                "--small-app-components",
                "5",
                "--small-app-k1=-1",
            ],
            "small_app_k1",
        ),
        (
            vec!["replay", "--small-app-components", "2000000"],
            "small_app_components",
        ),
        (
            vec![
                "frontier",
                "--app-mem-ref-rel",
                "0",
                "--app-k1-slope",
                "0.25",
            ],
            "app_mem_ref_gib",
        ),
        (vec!["replay", "--app-mem-ref-gib=-1"], "app_mem_ref_gib"),
        (vec!["tune", "--app-mem-ref-gib", "inf"], "app_mem_ref_gib"),
        (vec!["replay", "--app-mem-ref-rel=-0.5"], "app_mem_ref_rel"),
        (
            vec!["frontier", "--app-mem-ref-rel", "nan"],
            "app_mem_ref_rel",
        ),
        (
            vec![
                "replay",
                "--app-mem-ref-gib",
                "10",
                "--app-mem-ref-rel",
                "0.5",
            ],
            "--app-mem-ref-rel",
        ),
    ] {
        let out = tailor(&args);
        assert!(!out.status.success(), "{args:?} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// A small agent recording: 3 containers in 2 applications, 60 s rounds.
/// An agent recording of three containers for 40 one-minute rounds;
/// `restarts_alone`: their restart policy starts them again alone.
fn write_recording(path: &Path, restarts_alone: bool) {
    let gib = 1024.0 * 1024.0 * 1024.0;
    let header = serde_json::json!({
        "record": "header",
        "version": shaper::record::RECORD_VERSION,
        "node": "test-node",
        "interval_s": 60.0,
        "actuation": "recommend",
        "mode": "standalone",
        "shaper": shaper::ShaperConfig::default(),
        "forecaster": forecaster::config::ModelConfig::default(),
    });
    let mut lines = vec![header.to_string()];
    let containers = [("c1", "web"), ("c2", "web"), ("c3", "db")];
    for round in 0..40u64 {
        let t = 1000.0 + 60.0 * round as f64;
        let cs: Vec<serde_json::Value> = containers
            .iter()
            .enumerate()
            .map(|(i, (id, app))| {
                let mem = gib * (0.3 + 0.05 * ((round as f64 / 5.0 + i as f64).sin() + 1.0));
                let cpu = 0.2 + 0.02 * (round % 7) as f64;
                serde_json::json!({
                    "id": id, "name": id, "app": app, "class": "core",
                    "priority": 0, "protected": false, "started_s": 1000.0,
                    "request": {"cpu_cores": 1.0, "mem_bytes": gib},
                    "allocation": {"cpu_cores": 1.0, "mem_bytes": gib},
                    "usage": {"cpu_cores": cpu, "mem_bytes": mem},
                    "sample": {"cpu_cores": cpu, "mem_bytes": mem},
                    "app_failures": 0, "oom_kills": 0,
                    "restarts_alone": restarts_alone
                })
            })
            .collect();
        let round_rec = serde_json::json!({
            "record": "round",
            "round": round,
            "at_s": t,
            "capacity": {"cpu_cores": 4.0, "mem_bytes": 8.0 * gib},
            "containers": cs,
            "forecasts": vec![serde_json::Value::Null; containers.len()],
            "source": "warm-up",
            "decisions": null,
        });
        lines.push(round_rec.to_string());
    }
    std::fs::write(path, lines.join("\n") + "\n").expect("write recording");
}

#[test]
fn tune_and_frontier_on_an_agent_recording() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("rec.jsonl");
    write_recording(&rec, false);
    let workload = format!("recorded:{}", rec.display());
    let tune_out = dir.path().join("tune");
    let out = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args([
            "tune",
            "--quiet",
            "--workload",
            &workload,
            "--forecaster",
            "last",
            "--k1",
            "0,0.1",
            "--k2",
            "0,2",
            "--max-failed-fraction",
            "1",
            "--out",
        ])
        .arg(&tune_out)
        .output()
        .expect("tune");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snippet = std::fs::read_to_string(tune_out.join("best.toml")).expect("best.toml");
    // the snippet as (part of) the agent's configuration
    let agent_toml = dir.path().join("agent.toml");
    std::fs::write(&agent_toml, &snippet).expect("write agent.toml");
    let check = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["config", "check", "--kind", "agent"])
        .arg(&agent_toml)
        .output()
        .expect("config check");
    assert!(
        check.status.success(),
        "config check rejected the tune snippet:\n{snippet}\n{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    // the recording's interval is the simulation's
    let report = std::fs::read_to_string(tune_out.join("grid.json")).expect("grid.json");
    assert!(report.contains("recorded:"), "{report}");

    // A small frontier on a recording: `last` and the VPA, one point each
    // but two K1, plus `extra`.
    let frontier = |workload: &str, extra: &[&str]| {
        let mut args = vec![
            "frontier",
            "--quiet",
            "--workload",
            workload,
            "--forecasters",
            "last,vpa",
            "--k1",
            "0,0.2",
            "--k2",
            "0",
            "--memory-risk",
            "none",
            "--vpa-percentile",
            "0.9",
            "--vpa-margin",
            "0.15",
        ];
        args.extend_from_slice(extra);
        tailor(&args)
    };
    let v = ok(&frontier(&workload, &["--json"]));
    check_schema(&v);
    assert!(v["workload"]
        .as_str()
        .is_some_and(|w| w.starts_with("recorded:")));
    // The budgets' default measure: failed applications for containers
    // whose kill fails their application, OOM-hit component-days for
    // services that restart alone.
    let services = dir.path().join("services.jsonl");
    write_recording(&services, true);
    for (rec, measure) in [
        (&rec, "failed applications"),
        (&services, "OOM-hit component-days"),
    ] {
        let out = frontier(&format!("recorded:{}", rec.display()), &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert!(
            stdout.contains(&format!("(failure measure: {measure})")),
            "{stdout}"
        );
    }
    // a recording has no random choice: several seeds are refused
    let out = tailor(&["frontier", "--workload", &workload, "--seeds", "2"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no random choice"));
}

//! `tailor forecast` end to end (the binary): on generated CSV files always,
//! and on the Bitbrains / GCD_VMs files in ../shared/data when present.

use std::path::{Path, PathBuf};
use std::process::Command;

fn tailor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tailor"))
}

fn shared_data() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    p.is_dir().then_some(p)
}

fn write_series(dir: &Path, values: &[f64]) -> PathBuf {
    let p = dir.join("series.csv");
    let mut text = String::from("cpu\n");
    for v in values {
        text.push_str(&format!("{v}\n"));
    }
    std::fs::write(&p, text).expect("write");
    p
}

fn run_json(args: &[&str], input: &Path) -> serde_json::Value {
    let out = tailor()
        .arg("forecast")
        .args(args)
        .arg("--input")
        .arg(input)
        .arg("--json")
        .output()
        .expect("run tailor");
    assert!(
        out.status.success(),
        "tailor forecast {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn every_model_reports_the_documented_fields() {
    let dir = tempfile::tempdir().expect("tmp");
    let values: Vec<f64> = (0..120)
        .map(|i| 10.0 + (i as f64 * 0.3).sin() * 2.0 + ((i * 31) % 7) as f64 * 0.1)
        .collect();
    let input = write_series(dir.path(), &values);
    for model in ["arima", "gp", "last", "peak", "vpa"] {
        for cal in [false, true] {
            let mut args = vec!["--model", model];
            if cal {
                args.push("--calibrated");
            }
            let v = run_json(&args, &input);
            assert_eq!(v["points"], 119, "{model}: {v}");
            assert_eq!(v["series"], 1);
            assert!(
                v["model"].as_str().expect("model").starts_with(model),
                "{v}"
            );
            for key in [
                "mae",
                "mase",
                "coverage_1sigma",
                "coverage_2sigma",
                "coverage_3sigma",
                "upper_exceed_2sigma",
                "upper_exceed_3sigma",
                "mean_band_2",
                "mean_level",
                "updates_per_sec",
            ] {
                let x = v[key]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{model}: {key} missing in {v}"));
                assert!(x.is_finite() && x >= 0.0, "{model}: {key} = {x}");
            }
            let c1 = v["coverage_1sigma"].as_f64().expect("c1");
            let c3 = v["coverage_3sigma"].as_f64().expect("c3");
            assert!(c1 <= c3 && c3 <= 1.0, "{model}: coverage not monotone: {v}");
        }
    }
    // last value is its own MASE reference
    let v = run_json(&["--model", "last"], &input);
    assert!((v["mase"].as_f64().expect("mase") - 1.0).abs() < 1e-12);
}

#[test]
fn horizon_and_max_points_are_honoured() {
    let dir = tempfile::tempdir().expect("tmp");
    let values: Vec<f64> = (0..100).map(|i| (i % 10) as f64).collect();
    let input = write_series(dir.path(), &values);
    let v = run_json(
        &["--model", "peak", "--horizon", "5", "--max-points", "50"],
        &input,
    );
    // scored points: i in 1..=50-5
    assert_eq!(v["points"], 45, "{v}");
}

#[test]
fn bad_input_fails_cleanly() {
    let dir = tempfile::tempdir().expect("tmp");
    let missing = dir.path().join("nope.csv");
    let out = tailor()
        .args(["forecast", "--model", "gp", "--json", "--input"])
        .arg(&missing)
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.csv"));
    let input = write_series(dir.path(), &[1.0, 2.0]);
    let out = tailor()
        .args(["forecast", "--model", "gp", "--horizon", "0", "--input"])
        .arg(&input)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let out = tailor()
        .args(["forecast", "--model", "nonsense", "--input"])
        .arg(&input)
        .output()
        .expect("run");
    assert!(!out.status.success());
}

#[test]
fn reads_the_real_formats() {
    let Some(data) = shared_data() else {
        println!("skipped: ../shared/data not found");
        return;
    };
    let bb = data.join("bitbrains-rnd/2013-7/1.csv");
    let v = run_json(
        &[
            "--model",
            "gp",
            "--calibrated",
            "--column",
            "Memory usage [KB]",
            "--max-points",
            "150",
        ],
        &bb,
    );
    assert_eq!(v["points"], 149, "{v}");
    let tar = data.join("google-2011/derived/GCD_VMs.tar.gz");
    let v = run_json(
        &[
            "--model",
            "last",
            "--column",
            "mem",
            "--max-series",
            "3",
            "--max-points",
            "100",
        ],
        &tar,
    );
    assert_eq!(v["series"], 3, "{v}");
    assert_eq!(v["points"], 3 * 99, "{v}");
    let g19 = data.join("google-2019/instance_usage_job113/22-300000000-2531793000000.csv");
    let v = run_json(
        &[
            "--model",
            "arima",
            "--max-series",
            "1",
            "--max-points",
            "100",
        ],
        &g19,
    );
    assert_eq!(v["points"], 99, "{v}");
    // normalised units: the VPA's absolute constants would not mean anything
    let out = tailor()
        .args(["forecast", "--model", "vpa", "--input"])
        .arg(&g19)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs values in cores or bytes"), "{err}");
    let derived = data.join("google-2011/derived/data_resource_usage_5Minutes_6176858948.csv");
    let v = run_json(&["--model", "peak", "--max-points", "100"], &derived);
    assert_eq!(v["points"], 99, "{v}");
}

fn run_text(args: &[&str], input: &Path) -> String {
    let (ok, out, err) = run_any(args, input);
    assert!(ok, "tailor forecast {args:?} failed: {err}");
    out
}

#[test]
fn prints_units_and_the_limit_it_would_set() {
    let dir = tempfile::tempdir().expect("tmp");
    // CPU in cores: ~1.5 cores with small wiggles
    let values: Vec<f64> = (0..80)
        .map(|i| 1.5 + 0.1 * ((i as f64) * 0.7).sin())
        .collect();
    let input = write_series(dir.path(), &values);
    let text = run_text(
        &["--model", "peak", "--current-limit", "4", "--k1", "0.05"],
        &input,
    );
    assert!(text.contains("resource / unit     cpu / cores"), "{text}");
    assert!(
        text.contains("MAE / MASE") && text.contains(" cores /"),
        "{text}"
    );
    assert!(
        text.contains("would set") && text.contains("(current 4.000 cores: -"),
        "{text}"
    );

    // the same advice as JSON, checked against the shaper's formula
    let v = run_json(
        &["--model", "peak", "--current-limit", "4", "--k1", "0.05"],
        &input,
    );
    assert_eq!(v["points"], 79, "score fields stay at the top level: {v}");
    let l = &v["limit"];
    let f = |k: &str| l[k].as_f64().unwrap_or_else(|| panic!("{k} in {l}"));
    assert_eq!(l["unit"], "cores");
    assert_eq!(f("request"), 4.0);
    assert!((f("k1_term") - 0.05 * 4.0).abs() < 1e-9, "{l}");
    // the kernel rounds CPU limits up to whole millicores
    let buffer = f("forecast_mean") + f("k1_term") + f("k2_term");
    // the band is its printed multiplier of sigma
    assert!(
        (f("k2_term") - f("k2_sigma_mult") * f("forecast_sigma")).abs()
            <= 1e-9 * f("k2_term").abs().max(1.0),
        "{l}"
    );
    let want = buffer.max(f("last_usage")).min(4.0);
    assert!(
        f("limit") >= want - 1e-9 && f("limit") - want < 0.001 + 1e-9,
        "{l}"
    );
    assert!(f("limit") < 4.0 && f("limit") > 1.5, "{l}");
    assert!((f("change_fraction") - (f("limit") - 4.0) / 4.0).abs() < 1e-9);

    // memory in bytes, printed in MiB; K1 / K2 from the flags
    let mib = 1024.0 * 1024.0;
    let mem: Vec<f64> = (0..60).map(|i| (200.0 + (i % 5) as f64) * mib).collect();
    let p = dir.path().join("mem.csv");
    let mut body = String::from("mem_bytes\n");
    for v in &mem {
        body.push_str(&format!("{v}\n"));
    }
    std::fs::write(&p, body).expect("write");
    let args = [
        "--model",
        "last",
        "--column",
        "mem_bytes",
        "--current-limit",
        "1073741824",
        "--k1",
        "0.1",
        "--k2",
        "0",
    ];
    let text = run_text(&args, &p);
    assert!(
        text.contains("resource / unit     mem / MiB (values read as bytes)"),
        "{text}"
    );
    assert!(text.contains("current 1024.0 MiB"), "{text}");
    let v = run_json(&args, &p);
    let l = &v["limit"];
    assert_eq!(l["resource"], "mem");
    assert_eq!(l["unit"], "MiB");
    // last value 204 MiB (peak of the last sample's model), K1 = 0.1 x 1024 MiB
    let limit = l["limit"].as_f64().expect("limit");
    let mean = l["forecast_mean"].as_f64().expect("mean");
    // rounded up to a whole step (MiB) by the kernel
    let step_mib = shaper::limits::MEM_STEP_BYTES / 1048576.0;
    assert!(
        limit >= mean + 102.4 - 1e-6 && limit - (mean + 102.4) < step_mib + 1e-6,
        "{l}"
    );

    // a unit of the wrong resource is refused
    let out = tailor()
        .args(["forecast", "--model", "last", "--unit", "mib", "--input"])
        .arg(&input)
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not measure CPU"));
}

#[test]
fn enum_flags_are_validated_by_clap() {
    let dir = tempfile::tempdir().expect("tmp");
    let input = write_series(dir.path(), &[1.0, 2.0, 3.0]);
    let cases: [(&[&str], &str); 3] = [
        (
            &["replay", "--policy", "greedy"],
            "[possible values: baseline, optimistic, pessimistic]",
        ),
        (
            &["tune", "--forecaster", "prophet"],
            "[possible values: oracle, gp, arima, last, peak, vpa, vpa-simple]",
        ),
        (
            &["forecast", "--model", "nonsense", "--input"],
            "[possible values: arima, gp, last, peak, vpa, vpa-simple]",
        ),
    ];
    for (args, expected) in cases {
        let mut cmd = tailor();
        cmd.args(args);
        if args[0] == "forecast" {
            cmd.arg(&input);
        }
        let out = cmd.output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}: clap usage error");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("invalid value"), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

/// Runs `tailor forecast ARGS --input INPUT`: (success, stdout, stderr).
fn run_any(args: &[&str], input: &Path) -> (bool, String, String) {
    let out = tailor()
        .arg("forecast")
        .args(args)
        .arg("--input")
        .arg(input)
        .output()
        .expect("run tailor");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_column_read_picks_the_resource_and_the_vpa_works_in_real_units() {
    let dir = tempfile::tempdir().expect("tmp");
    // one column of memory in bytes, about 1 GiB
    let p = dir.path().join("mem.csv");
    let mut text = String::from("mem_bytes\n");
    for i in 0..60 {
        text.push_str(&format!("{}\n", 1_073_741_824 + (i % 5) * 1_048_576));
    }
    std::fs::write(&p, text).expect("write");
    let (ok, out, err) = run_any(&["--model", "last"], &p);
    assert!(ok, "{err}");
    assert!(out.contains("mem / MiB (values read as bytes)"), "{out}");
    // the faithful VPA fed real bytes: a series in KiB (about 100 MiB,
    // below the VPA's 250 MiB minimum) comes back in KiB at that minimum,
    // not at 250 Mi of the file's units
    let k = dir.path().join("kib.csv");
    let mut text = String::from("mem_kib\n");
    for i in 0..60 {
        text.push_str(&format!("{}\n", 102_400 + (i % 5) * 1024));
    }
    std::fs::write(&k, text).expect("write");
    let v = run_json(&["--model", "vpa", "--unit", "kib"], &k);
    let level_kib = v["mean_level"].as_f64().expect("level");
    let mae_kib = v["mae"].as_f64().expect("mae");
    assert!(
        (mae_kib - (256_000.0 - level_kib)).abs() < 0.05 * level_kib,
        "the VPA's minimum is 250 MiB = 256,000 KiB: {v}"
    );
    // the same by index, with a header of several columns
    let q = dir.path().join("two.csv");
    let mut text = String::from("cpu,mem\n");
    for i in 0..30 {
        text.push_str(&format!("0.5,{}\n", 1_000_000 + i));
    }
    std::fs::write(&q, text).expect("write");
    let (ok, out, err) = run_any(&["--model", "last", "--column", "1"], &q);
    assert!(ok, "{err}");
    assert!(out.contains("resource / unit     mem"), "{out}");
}

#[test]
fn a_negative_usage_names_its_line_and_a_constant_series_prints_no_nan() {
    let dir = tempfile::tempdir().expect("tmp");
    let neg = write_series(dir.path(), &[1.0, 2.0, -3.0, 4.0]);
    let (ok, _, err) = run_any(&["--model", "last"], &neg);
    assert!(!ok);
    assert!(
        err.contains("series.csv:4") && err.contains("negative"),
        "{err}"
    );
    let flat = write_series(dir.path(), &[2.0; 20]);
    let (ok, out, err) = run_any(&["--model", "last"], &flat);
    assert!(ok, "{err}");
    assert!(!out.contains("NaN"), "{out}");
}

/// Amounts that overflow once converted to bytes are refused, naming the
/// flag or the input (a `--current-limit 1e300 --unit gib` printed a
/// nonsense limit and `null`s in `--json`).
#[test]
fn amounts_too_large_once_converted_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let small = write_series(dir.path(), &[1.0, 2.0, 3.0, 4.0, 5.0]);
    let unit = ["--model", "last", "--resource", "mem", "--unit", "gib"];
    let (ok, _, err) = run_any(&[&unit[..], &["--current-limit", "1e300"]].concat(), &small);
    assert!(!ok);
    assert!(
        err.contains("--current-limit 1e300 GiB is above the largest accepted amount"),
        "{err}"
    );
    let (ok, out, _) = run_any(&[&unit[..], &["--current-limit", "8"]].concat(), &small);
    assert!(ok && out.contains("would set"), "{out}");
    let huge_dir = tempfile::tempdir().expect("tmp");
    let huge = write_series(huge_dir.path(), &[1e300, 2e300, 3e300, 4e300]);
    let (ok, _, err) = run_any(&[&unit[..], &["--current-limit", "8"]].concat(), &huge);
    assert!(!ok);
    // refused as it is read (datasets::bounds), naming file and line
    assert!(
        err.contains("series.csv:2:") && err.contains("1e300 is above the largest accepted"),
        "{err}"
    );
}

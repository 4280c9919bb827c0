//! Pooled quality figures of every model on the fixed real-series set
//! (`forecaster/tests/support/quality_set.rs`), online one-step-ahead, up to
//! 300 steps per series.
//!
//! ```sh
//! cargo run --release -p forecaster --example quality [-- MODEL...]
//! ```
//! MODEL is `arima`, `gp`, `last`, `peak` or `vpa`, optionally suffixed
//! `+cal` for the calibrated wrapper; the default runs all of them both ways.
//! `QUALITY_SET=holdout` uses the held-out series instead.
//! `QUALITY_HORIZON=K` scores the forecast of the peak of the next K
//! samples (default 1).
//! `QUALITY_DUMP=FILE` writes the set (one series a line: `name<TAB>v1,v2,...`)
//! to FILE and exits (input of `scripts/reference/gp_quality.py`).

#[path = "../tests/support/quality_set.rs"]
mod quality_set;

use forecaster::eval::evaluate_pool;
use forecaster::{ModelConfig, ModelKind};

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let Some(data) = quality_set::shared_data(&root) else {
        println!("skipped: ../shared/data not found");
        return;
    };
    // QUALITY_SET=holdout: the held-out series (calibration defaults were
    // chosen on the main set)
    let holdout = std::env::var("QUALITY_SET").is_ok_and(|v| v == "holdout");
    let loaded = if holdout {
        quality_set::holdout_series(&data, 300)
    } else {
        quality_set::quality_series(&data, 300)
    };
    let series = match loaded {
        Ok(s) => s,
        Err(e) => {
            eprintln!("loading the quality set: {e}");
            std::process::exit(1);
        }
    };
    if let Some(path) = std::env::var_os("QUALITY_DUMP") {
        let text: String = series
            .iter()
            .map(|(name, v)| {
                let vals: Vec<String> = v.iter().map(|x| format!("{x:?}")).collect();
                format!("{name}\t{}\n", vals.join(","))
            })
            .collect();
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!(
                "QUALITY_DUMP {}: {e}",
                std::path::Path::new(&path).display()
            );
            std::process::exit(1);
        }
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let specs: Vec<String> = if args.is_empty() {
        ModelKind::ALL
            .iter()
            .flat_map(|k| [k.as_str().to_string(), format!("{}+cal", k.as_str())])
            .collect()
    } else {
        args
    };
    println!(
        "{:<12} {:>6} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>7} {:>10}",
        "model",
        "points",
        "cov1",
        "cov2",
        "cov3",
        "ex2",
        "ex3",
        "medMASE",
        "pMASE",
        "band/lv",
        "upd/s"
    );
    for spec in specs {
        let (kind, cal) = match spec.strip_suffix("+cal") {
            Some(k) => (k, true),
            None => (spec.as_str(), false),
        };
        let Ok(kind) = kind.parse::<ModelKind>() else {
            eprintln!("unknown model {spec}");
            continue;
        };
        let mut cfg = ModelConfig {
            kind,
            calibrated: cal,
            ..ModelConfig::default()
        };
        // experiments: QUALITY_MODEL_JSON='{"gp":{"history":10}}' overrides sub-configs
        if let Ok(js) = std::env::var("QUALITY_MODEL_JSON") {
            match serde_json::from_str::<ModelConfig>(&js) {
                Ok(o) => {
                    cfg = ModelConfig {
                        kind,
                        calibrated: cal,
                        ..o
                    };
                }
                Err(e) => {
                    eprintln!("QUALITY_MODEL_JSON: {e}");
                    std::process::exit(2);
                }
            }
        }
        let horizon = std::env::var("QUALITY_HORIZON")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(1);
        match evaluate_pool(&spec, || cfg.build(), &series, horizon, Some(300)) {
            Ok(r) => {
                let p = &r.pooled;
                println!(
                    "{:<12} {:>6} {:>6.2}% {:>6.2}% {:>6.2}% {:>6.2}% {:>7.3}% {:>8.3} {:>7.3} {:>7.3} {:>10.0}",
                    spec,
                    p.points,
                    100.0 * p.coverage_1sigma,
                    100.0 * p.coverage_2sigma,
                    100.0 * p.coverage_3sigma,
                    100.0 * p.upper_exceed_2sigma,
                    100.0 * p.upper_exceed_3sigma,
                    r.median_mase,
                    p.mase,
                    r.median_band_ratio,
                    p.updates_per_sec
                );
                if std::env::var_os("QUALITY_VERBOSE").is_some() {
                    for (name, s) in &r.per_series {
                        println!("    {name:<60} mase {:.3} band/level {:.3} cov1 {:.3} ex2 {:.3} ex3 {:.3}", s.mase, s.mean_band_2 / s.mean_level, s.coverage_1sigma, s.upper_exceed_2sigma, s.upper_exceed_3sigma);
                    }
                }
            }
            Err(e) => println!("{spec:<12} error: {e}"),
        }
    }
}

//! Pooled forecast quality on real series (the figures of docs/results.md, "Forecast quality").
//!
//! Series: the fixed set in `forecaster/tests/support/quality_set.rs`
//! (Bitbrains CPU + memory of VMs 1-10, Google 2019 job 113 CPU + memory,
//! 10 GCD_VMs members CPU + memory, the Google 2011 derived job series;
//! 52 series), online one-step-ahead, the first 300 steps of each, default
//! model configs with the calibration wrapper. Checks (issue 2):
//! * coverage at k = 1, 2 within 2 points of 68.3 / 95.4 %;
//! * at most 0.3 % of actuals above the k = 3 upper band;
//! * median over series of mean_band_2 / mean_level <= 0.40;
//! * median MASE <= 0.90 for the GP and <= 0.885 for the ARIMA.
//!
//! Skips (prints `skipped: ../shared/data not found`) without the data.

#[path = "../forecaster/tests/support/quality_set.rs"]
mod quality_set;

use forecaster::eval::{evaluate_pool, PoolReport};
use forecaster::{ModelConfig, ModelKind};

fn run(kind: ModelKind, series: &[(String, Vec<f64>)]) -> PoolReport {
    let cfg = ModelConfig {
        kind,
        calibrated: true,
        ..ModelConfig::default()
    };
    let r =
        evaluate_pool(kind.as_str(), || cfg.build(), series, 1, Some(300)).expect("models build");
    let p = &r.pooled;
    println!(
        "{:<6} calibrated: {} series, {} points: coverage {:.2}/{:.2}/{:.2} %, above upper(2) {:.2} %, \
         above upper(3) {:.3} %, median band2/level {:.3}, median MASE {:.3} (pooled {:.3})",
        kind.as_str(),
        p.series,
        p.points,
        100.0 * p.coverage_1sigma,
        100.0 * p.coverage_2sigma,
        100.0 * p.coverage_3sigma,
        100.0 * p.upper_exceed_2sigma,
        100.0 * p.upper_exceed_3sigma,
        r.median_band_ratio,
        r.median_mase,
        p.mase
    );
    r
}

fn check_calibration(kind: ModelKind, r: &PoolReport) {
    let p = &r.pooled;
    assert!(
        (p.coverage_1sigma - 0.683).abs() <= 0.02,
        "{kind}: coverage at 1 sigma {:.4}",
        p.coverage_1sigma
    );
    assert!(
        (p.coverage_2sigma - 0.954).abs() <= 0.02,
        "{kind}: coverage at 2 sigma {:.4}",
        p.coverage_2sigma
    );
    assert!(
        p.upper_exceed_3sigma <= 0.003,
        "{kind}: {:.4} above upper(3)",
        p.upper_exceed_3sigma
    );
    assert!(
        r.median_band_ratio <= 0.40,
        "{kind}: median band2/level {:.3}",
        r.median_band_ratio
    );
}

#[test]
fn calibrated_forecasts_on_real_series() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(data) = quality_set::shared_data(root) else {
        println!("skipped: ../shared/data not found");
        return;
    };
    let series = quality_set::quality_series(&data, 300).expect("quality set loads");
    assert_eq!(series.len(), 52);

    let gp = run(ModelKind::Gp, &series);
    check_calibration(ModelKind::Gp, &gp);
    assert!(
        gp.median_mase <= 0.90,
        "GP median MASE {:.4}",
        gp.median_mase
    );

    let arima = run(ModelKind::Arima, &series);
    check_calibration(ModelKind::Arima, &arima);
    assert!(
        arima.median_mase <= 0.885,
        "ARIMA median MASE {:.4}",
        arima.median_mase
    );

    // the simple baselines are calibrated by the same wrapper
    for kind in [ModelKind::Last, ModelKind::Peak] {
        let r = run(kind, &series);
        assert!(
            r.pooled.upper_exceed_3sigma <= 0.003,
            "{kind}: {:.4} above upper(3)",
            r.pooled.upper_exceed_3sigma
        );
    }
}

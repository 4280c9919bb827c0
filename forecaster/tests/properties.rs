//! Invariants of every model: degenerate input (NaN, inf, empty, constant,
//! too short, huge or tiny magnitudes) never panics, non-finite samples are
//! rejected without changing the model, and forecasts stay finite.

use forecaster::{Forecaster, ModelConfig, ModelKind, Oracle};
use proptest::prelude::*;

fn all_models() -> Vec<Box<dyn Forecaster>> {
    let mut out = Vec::new();
    for kind in ModelKind::ALL {
        for calibrated in [false, true] {
            out.push(
                ModelConfig {
                    kind,
                    calibrated,
                    ..ModelConfig::default()
                }
                .build()
                .expect("default config builds"),
            );
        }
    }
    out
}

fn check_finite(m: &dyn Forecaster, ctx: &str) {
    for h in [0usize, 1, 3] {
        let p = m.forecast(h);
        assert!(p.mean.is_finite(), "{ctx} {}: mean {p:?}", m.name());
        assert!(
            p.std.is_finite() && p.std >= 0.0,
            "{ctx} {}: std {p:?}",
            m.name()
        );
        for k in [0.0, 1.0, 2.0, 3.0] {
            assert!(
                p.upper(k).is_finite() && p.lower(k).is_finite(),
                "{ctx} {}: band {p:?}",
                m.name()
            );
            assert!(
                p.upper(k) >= p.mean - 1e-9 * p.mean.abs().max(1.0),
                "{ctx} {}: upper below mean",
                m.name()
            );
        }
    }
}

#[test]
fn empty_history_forecasts_are_finite() {
    for m in all_models() {
        check_finite(m.as_ref(), "empty");
        assert_eq!(m.observed(), 0);
    }
}

#[test]
fn non_finite_samples_are_rejected_without_changing_state() {
    for mut m in all_models() {
        for v in [1.0, 2.0, 3.0] {
            m.observe(v).expect("finite");
        }
        let before = m.forecast(1);
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(m.observe(bad).is_err(), "{} accepted {bad}", m.name());
        }
        assert_eq!(m.observed(), 3);
        assert_eq!(
            m.forecast(1),
            before,
            "{} changed after a rejected sample",
            m.name()
        );
    }
}

#[test]
fn constant_series_forecast_the_constant() {
    for c in [0.0, 5.0, -3.0, 1e9] {
        for mut m in all_models() {
            for _ in 0..80 {
                m.observe(c).expect("finite");
            }
            check_finite(m.as_ref(), "constant");
            let p = m.forecast(1);
            if !m.name().starts_with("vpa") {
                assert!(
                    (p.mean - c).abs() <= 1e-6 * c.abs().max(1.0),
                    "{}: {p:?} for constant {c}",
                    m.name()
                );
            }
        }
    }
}

#[test]
fn oracle_is_exact_and_never_panics_past_the_end() {
    let mut o = Oracle::new(vec![]).expect("empty future is fine");
    assert_eq!(o.forecast(3).mean, 0.0);
    o.observe(1.0).expect("finite");
    assert!(o.forecast(1).mean.is_finite());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_series_never_panic(
        values in proptest::collection::vec(
            prop_oneof![
                4 => -1e3f64..1e3,
                1 => Just(0.0),
                1 => Just(f64::NAN),
                1 => Just(f64::INFINITY),
                1 => 1e12f64..1e13,
                1 => 1e-12f64..1e-11,
            ],
            0..70,
        )
    ) {
        for mut m in all_models() {
            for &v in &values {
                let r = m.observe(v);
                prop_assert_eq!(r.is_ok(), v.is_finite());
            }
            check_finite(m.as_ref(), "arbitrary");
            prop_assert_eq!(m.observed(), values.iter().filter(|v| v.is_finite()).count());
        }
    }
}

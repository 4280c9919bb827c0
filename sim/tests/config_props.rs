//! Property tests over the simulator's TOML decoder: no input panics, and an
//! accepted configuration has finite values inside the documented bounds
//! (so `tailor replay` with it runs in bounded time and memory).

use proptest::prelude::*;
use sim::SimConfig;
use tailor_core::{MAX_INTERVAL_S, MIN_INTERVAL_S};

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:?}")),
        prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "9223372036854775807",
            "1e-9",
            "1e308",
            "nan",
            "inf",
            "300.0",
            "0.5",
            "true",
            "\"gp\"",
            "\"oracle\"",
            "\"worst_fit\"",
            "\"optimistic\"",
            "[]",
            "{}",
        ])
        .prop_map(str::to_string),
    ]
}

fn text() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "interval_s",
        "horizon_samples",
        "min_history_samples",
        "seed",
        "backfill",
        "placement",
        "max_time_s",
        "max_restarts",
        "parallel_forecasts",
        "forecaster_source",
        "bogus",
    ]);
    let top = prop::collection::vec((key, scalar()), 0..6);
    let shaper_key =
        prop::sample::select(vec!["k1", "k2", "policy", "grace_period_s", "max_growth"]);
    let shaper = prop::collection::vec((shaper_key, scalar()), 0..4);
    let fc_key = prop::sample::select(vec!["kind", "calibrated", "gp", "peak"]);
    let fc = prop::collection::vec((fc_key, scalar()), 0..3);
    (top, shaper, fc).prop_map(|(top, shaper, fc)| {
        let mut s = String::new();
        let mut seen = std::collections::HashSet::new();
        let mut line = |s: &mut String, k: &str, v: &str| {
            if seen.insert(k.to_string()) {
                s.push_str(&format!("{k} = {v}\n"));
            }
        };
        for (k, v) in &top {
            line(&mut s, k, v);
        }
        s.push_str("[shaper]\n");
        for (k, v) in &shaper {
            line(&mut s, &format!("shaper.{k}"), "");
            s.push_str(&format!("{k} = {v}\n"));
        }
        s.push_str("[forecaster]\n");
        for (k, v) in &fc {
            if seen.insert(format!("fc.{k}")) {
                s.push_str(&format!("{k} = {v}\n"));
            }
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sim_toml_never_panics_and_accepted_is_bounded(t in text()) {
        if let Ok(cfg) = SimConfig::from_toml_str(&t, "props") {
            prop_assert!((MIN_INTERVAL_S..=MAX_INTERVAL_S).contains(&cfg.interval_s));
            prop_assert!(cfg.shaper.horizon_samples.is_none_or(|h| (1..=10_000).contains(&h)));
            prop_assert!(cfg.max_time_s.is_none_or(|t| t.is_finite() && t > 0.0));
            prop_assert!((1..=1_000_000).contains(&cfg.max_restarts));
            prop_assert!(cfg.shaper.k1.is_finite() && cfg.shaper.k2.is_finite());
            prop_assert!(cfg.forecaster.build().is_ok());
        }
    }

    #[test]
    fn arbitrary_text_never_panics(t in "\\PC{0,200}") {
        let _ = SimConfig::from_toml_str(&t, "props");
    }
}

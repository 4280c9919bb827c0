//! Property tests over the configuration decoders the agent and the central
//! shaper read (`agent.toml` with its `[shaper]`, `[forecaster]` and
//! `[cluster]` tables, `shaper.toml`): whatever the input, checking never
//! panics; a configuration that is accepted has finite values inside the
//! documented bounds, prints as TOML that checks back to the same
//! configuration, and so can run (issue 13: "every accepted value runs").

use agent::config::{check_toml, AgentConfig, MAX_INTERVAL_S, MIN_INTERVAL_S};
use proptest::prelude::*;
use shaper::config::MAX_HORIZON_SAMPLES;
use std::collections::BTreeMap;

/// Keys of every table of both files, plus a few unknown ones: drawing keys
/// from one pool makes known keys appear in the wrong tables too.
const KEYS: &[&str] = &[
    // agent.toml
    "mode",
    "actuation",
    "interval_s",
    "mem_watch_s",
    "horizon_samples",
    "min_history_samples",
    "warmup_rounds",
    "node_name",
    "docker_socket",
    "state_file",
    "stop_grace_s",
    "restart_evicted",
    "restart_cooldown_s",
    "min_mem_bytes",
    "min_cpu_cores",
    "oom_bump_bytes",
    "oom_bump_factor",
    "oom_memory_s",
    "reinspect_every",
    "on_shutdown",
    "cpu_cores",
    "mem_bytes",
    "reserved_cpu_cores",
    "reserved_mem_bytes",
    "require_enable_label",
    "labels",
    "listen",
    // [shaper]
    "policy",
    "k1",
    "k2",
    "order",
    "victim_order",
    "cpu_shortfall",
    "mem_shortfall",
    "grace_period_s",
    "failure_limit",
    "max_growth",
    "min_relative_change",
    "max_evictions_per_round",
    // [forecaster]
    "kind",
    "calibrated",
    "window",
    "history",
    "train_size",
    "min_train",
    "restarts",
    "cold_max_iters",
    "warm_max_iters",
    "research_every",
    "buckets",
    "half_life_s",
    "bucket_ratio",
    "margin",
    "prior_dof",
    "tail_shape",
    // [cluster], shaper.toml
    "shaper_url",
    "token_file",
    "agent_id",
    "timeout_s",
    "hold_s",
    "regrow_fraction",
    "snap_fraction",
    "stale_after_intervals",
    "forget_after_intervals",
    "warmup_intervals",
    "early_round_gap_s",
    "max_body_bytes",
    "max_components_per_report",
    // unknown
    "bogus",
    "interval",
];

const TABLES: &[&str] = &[
    "capacity",
    "selector",
    "http",
    "shaper",
    "forecaster",
    "cluster",
    "fail_safe",
    "gp",
    "arima",
    "calibration",
    "peak",
    "vpa",
    "labels",
];

fn scalar() -> impl Strategy<Value = toml::Value> {
    use toml::Value::*;
    prop_oneof![
        any::<i64>().prop_map(Integer),
        prop_oneof![
            Just(0i64),
            Just(1),
            Just(3),
            Just(-1),
            Just(20),
            Just(i64::MAX),
            Just(100_000_000_000),
            Just(16 << 20),
        ]
        .prop_map(Integer),
        any::<f64>().prop_map(Float),
        prop_oneof![
            Just(1e308),
            Just(1e-10),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(-0.0),
            Just(0.05),
            Just(0.5),
            Just(1.0),
            Just(10.0),
            Just(600.0),
        ]
        .prop_map(Float),
        any::<bool>().prop_map(Boolean),
        "[a-z0-9:./_ -]{0,12}".prop_map(String),
        prop_oneof![
            Just("cluster"),
            Just("standalone"),
            Just("recommend"),
            Just("gp"),
            Just("peak"),
            Just("arima"),
            Just("optimistic"),
            Just("http://127.0.0.1:9848"),
            Just("/nonexistent/token"),
            Just("127.0.0.1:0"),
            Just(""),
        ]
        .prop_map(|s| String(s.to_string())),
    ]
}

fn table(depth: u32) -> BoxedStrategy<toml::Table> {
    let entry = (prop::sample::select(KEYS), scalar()).prop_map(|(k, v)| (k.to_string(), v));
    if depth == 0 {
        return prop::collection::vec(entry, 0..6)
            .prop_map(|v| v.into_iter().collect())
            .boxed();
    }
    let sub = (prop::sample::select(TABLES), table(depth - 1))
        .prop_map(|(k, t)| (k.to_string(), toml::Value::Table(t)));
    (
        prop::collection::vec(entry, 0..8),
        prop::collection::vec(sub, 0..4),
    )
        .prop_map(|(a, b)| {
            a.into_iter()
                .chain(b)
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .collect()
        })
        .boxed()
}

/// Every float of a serialized configuration.
fn floats(v: &toml::Value, out: &mut Vec<f64>) {
    match v {
        toml::Value::Float(f) => out.push(*f),
        toml::Value::Table(t) => t.values().for_each(|x| floats(x, out)),
        toml::Value::Array(a) => a.iter().for_each(|x| floats(x, out)),
        _ => {}
    }
}

fn assert_runnable(cfg: &AgentConfig) -> Result<(), TestCaseError> {
    prop_assert!(cfg.validate().is_ok());
    prop_assert!((MIN_INTERVAL_S..=MAX_INTERVAL_S).contains(&cfg.interval_s));
    prop_assert!(
        cfg.mem_watch_s == 0.0 || (MIN_INTERVAL_S..=MAX_INTERVAL_S).contains(&cfg.mem_watch_s)
    );
    prop_assert!(cfg
        .shaper
        .horizon_samples
        .is_none_or(|h| (1..=MAX_HORIZON_SAMPLES).contains(&h)));
    prop_assert!((1..=MAX_HORIZON_SAMPLES).contains(&cfg.shaper.min_history_samples));
    prop_assert!(cfg.shaper.oom_memory_s <= 1e9);
    prop_assert!(cfg.shaper.grace_period_s <= 365.0 * 86_400.0);
    prop_assert!(cfg.forecaster.gp.cold_max_iters <= 1_000);
    prop_assert!(cfg.forecaster.calibration.window <= 100_000);
    let value = toml::Value::try_from(cfg).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut fs = Vec::new();
    floats(&value, &mut fs);
    prop_assert!(fs.iter().all(|f| f.is_finite()), "{fs:?}");
    // what `config check --print` prints checks back to the same config
    let printed = toml::to_string_pretty(cfg).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back = check_toml(&printed).map_err(|e| TestCaseError::fail(format!("{e}\n{printed}")))?;
    prop_assert_eq!(&back, cfg);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn agent_toml_never_panics_and_accepted_configs_run(t in table(2)) {
        let text = toml::to_string(&t).unwrap_or_default();
        match check_toml(&text) {
            Ok(cfg) => assert_runnable(&cfg)?,
            Err(e) => {
                prop_assert!(!e.is_empty());
                // every error names a key of the file or the file itself
                for err in &e {
                    prop_assert!(!err.message.is_empty());
                }
            }
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        if let Ok(cfg) = check_toml(&text) {
            assert_runnable(&cfg)?;
        }
    }

    #[test]
    fn shaper_toml_never_panics_and_accepted_configs_are_bounded(t in table(1)) {
        let text = toml::to_string(&t).unwrap_or_default();
        if let Ok(cfg) = shaperd::config::check_toml(&text) {
            prop_assert!(cfg.validate().is_ok());
            prop_assert!((0.1..=86_400.0).contains(&cfg.interval_s));
            prop_assert!(cfg.stale_after_intervals >= 1 && cfg.stale_after_intervals <= 1_000_000);
            prop_assert!(cfg.max_components_per_report <= 1_000_000);
            prop_assert!(cfg.max_body_bytes <= 1 << 30);
        }
    }

    #[test]
    fn forecaster_table_builds_whenever_accepted(t in table(1)) {
        let mut outer = toml::Table::new();
        outer.insert("forecaster".into(), toml::Value::Table(t));
        let text = toml::to_string(&outer).unwrap_or_default();
        if let Ok(cfg) = check_toml(&text) {
            let mut model = cfg.forecaster.build().map_err(|e| TestCaseError::fail(e.to_string()))?;
            for i in 0..30 {
                model.observe(1.0 + (i % 5) as f64).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            let p = model.forecast(cfg.shaper.horizon_samples.unwrap_or(6));
            prop_assert!(p.mean.is_finite() && p.std.is_finite());
        }
    }
}

#[test]
fn issue_13_table_gets_clear_errors() {
    for (text, key) in [
        ("interval_s = 1e308", "interval_s"),
        (
            "[shaper]\nhorizon_samples = 100000000000",
            "shaper.horizon_samples",
        ),
    ] {
        let e = check_toml(text).expect_err(text);
        assert_eq!(e.keys(), vec![key], "{text}");
    }
    let e = shaperd::config::check_toml("token_file = \"/t\"\ninterval_s = 1e-10\n")
        .expect_err("shaper interval_s = 1e-10");
    assert_eq!(e.keys(), vec!["interval_s"]);
}

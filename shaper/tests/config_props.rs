//! Property tests over the `[shaper]` TOML decoder: no input panics, and an
//! accepted (and validated) table has finite values inside the documented
//! bounds.

use proptest::prelude::*;
use shaper::ShaperConfig;

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:?}")),
        prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "4294967296",
            "1e-10",
            "1e308",
            "nan",
            "-inf",
            "0.05",
            "3.0",
            "\"sjf\"",
            "\"pessimistic\"",
            "\"least_work_lost\"",
            "true",
            "[1]",
        ])
        .prop_map(str::to_string),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn shaper_table_never_panics_and_accepted_is_bounded(
        kv in prop::collection::btree_map(
            prop::sample::select(vec![
                "policy", "k1", "k2", "order", "victim_order", "cpu_shortfall", "mem_shortfall", "grace_period_s",
                "failure_limit", "max_growth", "min_relative_change",
                "max_evictions_per_round", "min_cpu_cores", "min_mem_bytes", "bogus",
            ]),
            value(),
            0..8,
        )
    ) {
        let text: String = kv.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
        if let Ok(c) = toml::from_str::<ShaperConfig>(&text) {
            if c.validate().is_ok() {
                for v in [c.k1, c.k2, c.grace_period_s, c.max_growth, c.min_relative_change, c.min_cpu_cores, c.min_mem_bytes] {
                    prop_assert!(v.is_finite() && v >= 0.0, "{v}");
                }
                prop_assert!(c.k1 <= 10.0 && c.k2 <= 100.0 && c.max_growth <= 1_000.0);
                prop_assert!(c.failure_limit >= 1);
            }
        }
    }
}

//! Property tests over the cluster wire decoders (`POST /v1/report`,
//! `POST /v1/ack` and their answers): arbitrary bytes and arbitrary JSON
//! shaped like the real messages never panic in decoding or validation.
//! The JSON is built by hand (not from the Rust types), so the test holds
//! whatever fields the protocol grows.

use agent::cluster::{AckRequest, AckResponse, ReportRequest, ReportResponse};
use proptest::prelude::*;
use serde_json::{json, Value};

const KEYS: &[&str] = &[
    "api_version",
    "agent_id",
    "seq",
    "boot_id",
    "capacity",
    "components",
    "acks",
    "container_id",
    "app",
    "class",
    "priority",
    "protected",
    "request",
    "allocation",
    "usage",
    "forecast",
    "started_s",
    "work_done_s",
    "app_submitted_s",
    "failures",
    "expected_remaining_s",
    "cpu_cores",
    "mem_bytes",
    "cpu",
    "mem",
    "mean",
    "std",
    "action_id",
    "outcome",
    "status",
    "error",
    "round",
    "interval_s",
    "actions",
    "id",
    "action",
    "kind",
    "explanation",
    "summary",
    "accepted",
    "unknown",
    "bogus",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![Just(-1.0), Just(0.0), Just(1e308), Just(-1e308), Just(0.5)]
            .prop_map(|f: f64| json!(f)),
        "[a-z0-9_-]{0,10}".prop_map(Value::String),
        prop_oneof![
            Just("core"),
            Just("elastic"),
            Just("applied"),
            Just("failed"),
            Just("resize"),
            Just("evict"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..8).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

/// A well-formed report whose fields are then overwritten at random.
fn report_like() -> impl Strategy<Value = Value> {
    let base = json!({
        "api_version": 1,
        "agent_id": "node-1",
        "seq": 1,
        "capacity": {"cpu_cores": 4.0, "mem_bytes": 8e9},
        "components": [{
            "container_id": "c1", "app": "web", "class": "core", "priority": 0,
            "protected": false,
            "request": {"cpu_cores": 1.0, "mem_bytes": 1e9},
            "allocation": {"cpu_cores": 1.0, "mem_bytes": 1e9},
            "usage": {"cpu_cores": 0.2, "mem_bytes": 2e8},
            "started_s": 1000.0, "failures": 0
        }],
        "acks": [{"action_id": "a1", "outcome": {"status": "applied"}}]
    });
    prop::collection::vec((prop::sample::select(KEYS), value()), 0..4).prop_map(move |edits| {
        let mut v = base.clone();
        for (k, x) in edits {
            if let Some(o) = v.as_object_mut() {
                o.insert(k.to_string(), x.clone());
            }
            if let Some(c) = v["components"].get_mut(0).and_then(Value::as_object_mut) {
                c.insert(k.to_string(), x);
            }
        }
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(r) = serde_json::from_slice::<ReportRequest>(&bytes) {
            let _ = r.validate(10_000).is_ok();
        }
        if let Ok(a) = serde_json::from_slice::<AckRequest>(&bytes) {
            let _ = a.validate(10_000).is_ok();
        }
        let _ = serde_json::from_slice::<ReportResponse>(&bytes);
        let _ = serde_json::from_slice::<AckResponse>(&bytes);
    }

    #[test]
    fn arbitrary_json_never_panics(v in value()) {
        let text = v.to_string();
        if let Ok(r) = serde_json::from_str::<ReportRequest>(&text) {
            let _ = r.validate(10_000).is_ok();
        }
        if let Ok(a) = serde_json::from_str::<AckRequest>(&text) {
            let _ = a.validate(10_000).is_ok();
        }
        let _ = serde_json::from_str::<ReportResponse>(&text);
        let _ = serde_json::from_str::<AckResponse>(&text);
    }

    /// Reports that decode and validate carry finite, non-negative amounts.
    #[test]
    fn accepted_reports_have_finite_non_negative_amounts(v in report_like()) {
        if let Ok(r) = serde_json::from_value::<ReportRequest>(v) {
            if r.validate(10_000).is_ok() {
                let ok = |x: f64| x.is_finite() && x >= 0.0;
                prop_assert!(ok(r.capacity.cpu_cores) && ok(r.capacity.mem_bytes));
                for c in &r.components {
                    for res in [c.request, c.allocation, c.usage] {
                        prop_assert!(ok(res.cpu_cores) && ok(res.mem_bytes), "{res:?}");
                    }
                }
            }
        }
    }
}

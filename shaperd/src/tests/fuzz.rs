//! Decoder fuzz of the report endpoint.

use super::*;
use crate::protocol::Encoding;

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "[a-z_]{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("agent_id".to_string()),
                    Just("capacity".to_string()),
                    Just("components".to_string()),
                    Just("acks".to_string()),
                    Just("cpu_cores".to_string()),
                    Just("mem_bytes".to_string()),
                    "[a-z_]{1,10}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replaces one leaf of a valid report with an arbitrary value.
fn mutate(v: &mut serde_json::Value, path: &[usize], new: serde_json::Value) {
    match v {
        serde_json::Value::Object(m) if !m.is_empty() => {
            let i = path.first().copied().unwrap_or(0) % m.len();
            let key = m.keys().nth(i).cloned().unwrap_or_default();
            if let Some(child) = m.get_mut(&key) {
                if path.len() > 1 {
                    mutate(child, &path[1..], new);
                } else {
                    *child = new;
                }
            }
        }
        serde_json::Value::Array(a) if !a.is_empty() => {
            let i = path.first().copied().unwrap_or(0) % a.len();
            if path.len() > 1 {
                mutate(&mut a[i], &path[1..], new);
            } else {
                a[i] = new;
            }
        }
        other => *other = new,
    }
}

/// Decoder fuzz: arbitrary bytes, arbitrary JSON and mutated valid reports,
/// each sent as JSON and as MessagePack (the same value encoded so, the
/// same bytes typed so), never crash the server; each gets 200 (and then
/// it was valid) or a JSON 400/413.
#[test]
fn decoder_fuzz_never_panics() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let fx = fixture();
    let server = rt
        .block_on(ShaperServer::start_with(
            server_config(&fx),
            Arc::new(ManualClock::new(0.0)),
            false,
        ))
        .expect("start");
    let url = server.url();
    let n1 = fx.agent_token("n1");
    let check_as = |encoding: Encoding, body: Vec<u8>, path: &str| -> Result<(), TestCaseError> {
        let (status, bytes) = rt.block_on(post_typed(
            &url,
            path,
            Some(&n1),
            encoding.media_type(),
            body.clone(),
        ));
        // 403: the mutation changed agent_id; 409: it made the sequence old.
        prop_assert!(
            [200u16, 400, 403, 409, 413].contains(&status),
            "status {}",
            status
        );
        if status == 200 {
            if path == "/v1/report" {
                let parsed: ReportRequest = encoding
                    .decode(&body)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert!(parsed.validate(10_000).is_ok());
            }
        } else {
            prop_assert!(
                serde_json::from_slice::<ErrorBody>(&bytes).is_ok(),
                "error body is JSON"
            );
        }
        Ok(())
    };
    // A value as JSON and as MessagePack.
    let check = |v: &serde_json::Value, path: &str| -> Result<(), TestCaseError> {
        check_as(Encoding::Json, serde_json::to_vec(v).expect("json"), path)?;
        let packed = rmp_serde::to_vec_named(v).expect("msgpack");
        check_as(Encoding::MessagePack, packed, path)
    };
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    });
    runner
        .run(&prop::collection::vec(any::<u8>(), 0..512), |bytes| {
            for encoding in [Encoding::Json, Encoding::MessagePack] {
                check_as(encoding, bytes.clone(), "/v1/report")?;
                check_as(encoding, bytes.clone(), "/v1/ack")?;
            }
            Ok(())
        })
        .expect("arbitrary bytes");
    runner
        .run(&arb_json(), |v| {
            check(&v, "/v1/report")?;
            check(&v, "/v1/ack")
        })
        .expect("arbitrary JSON");
    let valid: serde_json::Value = serde_json::from_slice(&valid_report_json(1)).expect("json");
    runner
        .run(
            &(prop::collection::vec(0usize..8, 1..5), arb_json()),
            |(path, new)| {
                let mut v = valid.clone();
                mutate(&mut v, &path, new);
                check(&v, "/v1/report")
            },
        )
        .expect("mutated reports");
    // Still serving: a report from the latest boot accepted (a day ahead).
    let wall_ms = (tailor_core::Clock::now_s(&tailor_core::SystemClock) * 1000.0) as u64;
    let (status, _) = rt.block_on(post_raw(
        &url,
        "/v1/report",
        Some(&n1),
        report_json("n1", wall_ms + crate::protocol::MAX_BOOT_AHEAD_MS, u64::MAX),
    ));
    assert_eq!(status, 200);
    rt.block_on(server.shutdown());
}

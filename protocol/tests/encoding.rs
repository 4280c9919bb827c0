//! Every message of the report path reads back the same in JSON and in
//! MessagePack, and MessagePack keeps JSON's rules: unknown fields refused,
//! added fields optional.

use proptest::prelude::*;
use protocol::{
    Ack, AckOutcome, AckRequest, ActionId, ActionKind, ComponentReport, Encoding, Mentions,
    RejectedComponent, ReportRequest, ReportResponse, WireAction,
};
use shaper::{
    Band, Basis, Binding, Bound, Calibration, Class, ComponentId, Explanation, Forecasts, HostId,
    Predictive, Reason, Resource, Resources, Sizing, VictimOrder,
};
use std::sync::Arc;

const BOTH: [Encoding; 2] = [Encoding::Json, Encoding::MessagePack];

fn roundtrip<T>(v: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    for e in BOTH {
        let bytes = e.encode(v).expect("encodes");
        let back: T = e.decode(&bytes).expect("decodes");
        assert_eq!(&back, v, "{e}");
    }
}

fn amount() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), 0.0..1e12, Just(1e18), Just(0.1 + 0.2)]
}

fn resources() -> impl Strategy<Value = Resources> {
    (amount(), amount()).prop_map(|(c, m)| Resources::new(c, m))
}

fn predictive() -> impl Strategy<Value = Predictive> {
    (amount(), amount(), any::<bool>(), any::<u32>()).prop_map(|(mean, std, cal, seed)| {
        let mut p = Predictive::gaussian(mean, std);
        if cal {
            let mut c = Calibration::gaussian();
            c.upper[3] *= 1.0 + (seed % 1000) as f32 / 777.0;
            c.lower[16] = (seed % 97) as f32 / 3.0;
            p.calibration = Some(Arc::new(c));
        }
        p
    })
}

fn component() -> impl Strategy<Value = ComponentReport> {
    (
        ("[a-f0-9]{1,64}", "\\PC{1,20}", any::<bool>(), any::<i32>()),
        (resources(), resources(), resources()),
        proptest::option::of((predictive(), predictive(), amount(), amount())),
        (amount(), proptest::option::of(amount()), any::<u32>()),
        (any::<bool>(), amount(), amount()),
    )
        .prop_map(
            |(
                (container_id, app, core, priority),
                (request, allocation, usage),
                forecast,
                (started_s, work_done_s, failures),
                (restarts_alone, mem_floor_bytes, oom_floor_bytes),
            )| ComponentReport {
                container_id,
                app,
                class: if core { Class::Core } else { Class::Elastic },
                priority,
                protected: priority % 2 == 0,
                request,
                allocation,
                usage,
                forecast: forecast.map(|(cpu, mem, hold, small)| Forecasts {
                    cpu,
                    mem,
                    mem_hold_bytes: hold,
                    mem_small_hold_bytes: small,
                }),
                started_s,
                work_done_s,
                app_submitted_s: work_done_s.map(|w| w / 2.0),
                failures,
                expected_remaining_s: None,
                restarts_alone,
                mem_floor_bytes,
                oom_floor_bytes,
            },
        )
}

fn ack() -> impl Strategy<Value = Ack> {
    ("[a-z0-9-]{1,30}", proptest::option::of("\\PC{0,40}")).prop_map(|(id, error)| Ack {
        action_id: ActionId(id),
        outcome: match error {
            None => AckOutcome::Applied,
            Some(error) => AckOutcome::Failed { error },
        },
    })
}

fn report() -> impl Strategy<Value = ReportRequest> {
    (
        "[a-z0-9.-]{1,40}",
        any::<u64>(),
        any::<u64>(),
        resources(),
        proptest::collection::vec(component(), 0..8),
        proptest::collection::vec(ack(), 0..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(agent_id, boot_id, seq, capacity, components, acks, mentions, early)| ReportRequest {
                agent_id,
                boot_id,
                seq,
                capacity,
                components,
                acks,
                mentions,
                early,
            },
        )
}

fn sizing() -> impl Strategy<Value = Sizing> {
    (amount(), amount(), any::<bool>()).prop_map(|(mean, sigma, ceiling)| Sizing {
        mean,
        sigma,
        k1_term: mean / 10.0,
        k2_term: 3.0 * sigma,
        band: Band::default(),
        margin_term: if ceiling { 0.0 } else { mean / 20.0 },
        target: mean * 1.1 + 3.0 * sigma,
        bound: if ceiling {
            Bound::Ceiling
        } else {
            Bound::Buffer
        },
    })
}

fn action() -> impl Strategy<Value = WireAction> {
    (
        "[0-9a-f]{1,16}-[0-9]{1,6}-[0-9]{1,6}",
        "\\PC{1,30}",
        "[a-f0-9]{1,64}",
        (resources(), resources(), 0..4u8),
        (sizing(), sizing(), any::<bool>()),
        proptest::option::of((proptest::option::of("[a-f0-9]{1,12}"), any::<bool>())),
    )
        .prop_map(
            |(id, app, container_id, (from, to, kind), (cpu, mem, bound), mentions)| {
                let (action, reason) = match kind {
                    0 => (
                        ActionKind::Resize {
                            container_id,
                            from,
                            to,
                        },
                        Reason::Shaped,
                    ),
                    1 => (
                        ActionKind::Evict {
                            container_id,
                            whole_app: true,
                        },
                        Reason::CoreDidNotFit {
                            component: ComponentId(7),
                        },
                    ),
                    2 => (
                        ActionKind::Evict {
                            container_id,
                            whole_app: false,
                        },
                        Reason::ElasticDidNotFit {
                            victim_order: VictimOrder::LowestPriorityFirst,
                        },
                    ),
                    _ => (
                        ActionKind::Resize {
                            container_id,
                            from,
                            to,
                        },
                        Reason::EvictionDeferred,
                    ),
                };
                WireAction {
                    id: ActionId(id),
                    app,
                    action,
                    explanation: Explanation {
                        reason,
                        basis: Basis::Forecast,
                        cpu,
                        mem,
                        binding: bound.then(|| {
                            Box::new(Binding {
                                host: HostId(3),
                                resource: Resource::Mem,
                                needed: 2e9,
                                free: 1e9,
                            })
                        }),
                    },
                    mentions: mentions.map(|(container_id, own_host)| Mentions {
                        container_id,
                        own_host,
                    }),
                }
            },
        )
}

fn response() -> impl Strategy<Value = ReportResponse> {
    (
        any::<u64>(),
        proptest::collection::vec(action(), 0..8),
        proptest::collection::vec(("[a-f0-9]{1,64}", "\\PC{0,40}"), 0..3),
    )
        .prop_map(|(round, actions, rejected)| ReportResponse {
            api_version: protocol::API_VERSION,
            round,
            interval_s: 10.0,
            actions,
            rejected: rejected
                .into_iter()
                .map(|(container_id, reason)| RejectedComponent {
                    container_id,
                    reason,
                })
                .collect(),
        })
}

proptest! {
    #[test]
    fn reports_read_back_the_same_in_both_encodings(r in report()) {
        roundtrip(&r);
    }

    #[test]
    fn answers_read_back_the_same_in_both_encodings(r in response()) {
        roundtrip(&r);
    }

    #[test]
    fn acks_read_back_the_same_in_both_encodings(acks in proptest::collection::vec(ack(), 0..6)) {
        roundtrip(&AckRequest { agent_id: "n".into(), acks });
    }

    /// A truncated or corrupted MessagePack body is an error, never a panic
    /// nor another report.
    #[test]
    fn damaged_msgpack_bodies_are_errors(r in report(), cut in any::<prop::sample::Index>(), flip in any::<(prop::sample::Index, u8)>()) {
        let bytes = Encoding::MessagePack.encode(&r).expect("encodes");
        let cut = cut.index(bytes.len());
        prop_assert!(Encoding::MessagePack.decode::<ReportRequest>(&bytes[..cut]).is_err());
        let mut flipped = bytes.clone();
        let at = flip.0.index(flipped.len());
        flipped[at] ^= flip.1.max(1);
        // Either refused or some report: no panic.
        let _ = Encoding::MessagePack.decode::<ReportRequest>(&flipped);
    }
}

/// MessagePack keeps JSON's rules: a field the shaper does not know is
/// refused; a field added since the first release may be left out.
#[test]
fn msgpack_refuses_unknown_fields_and_takes_older_reports() {
    let older = serde_json::json!({
        "agent_id": "n", "boot_id": 1,
        "capacity": {"cpu_cores": 1, "mem_bytes": 1},
        "components": [{"container_id": "c", "app": "web", "class": "core",
            "request": {"cpu_cores": 1, "mem_bytes": 1e9},
            "allocation": {"cpu_cores": 1, "mem_bytes": 1e9},
            "usage": {"cpu_cores": 0.1, "mem_bytes": 1e8}, "started_s": 1}]
    });
    let bytes = rmp_serde::to_vec_named(&older).expect("encodes");
    let r: ReportRequest = Encoding::MessagePack.decode(&bytes).expect("older report");
    assert_eq!(r.components[0].request.mem_bytes, 1e9);
    assert!(!r.components[0].restarts_alone);
    // integers where floats are expected, as JSON allows
    assert_eq!(r.capacity.cpu_cores, 1.0);

    let mut bogus = older.clone();
    bogus["bogus"] = serde_json::json!(1);
    let bytes = rmp_serde::to_vec_named(&bogus).expect("encodes");
    let e = Encoding::MessagePack
        .decode::<ReportRequest>(&bytes)
        .expect_err("unknown field");
    assert!(e.to_string().contains("bogus"), "{e}");
}

/// Floats travel as their bits: every value reads back exactly, and a
/// non-finite one (which JSON cannot carry) is caught by validation.
#[test]
fn msgpack_floats_are_exact_and_validated() {
    let mut r: ReportRequest = serde_json::from_value(serde_json::json!({
        "agent_id": "n", "boot_id": 1,
        "capacity": {"cpu_cores": 1, "mem_bytes": 1},
        "components": []
    }))
    .expect("report");
    r.capacity = Resources::new(0.1 + 0.2, f64::from_bits(0x41cd_cd65_0000_0001));
    let back: ReportRequest = Encoding::MessagePack
        .decode(&Encoding::MessagePack.encode(&r).expect("encodes"))
        .expect("decodes");
    assert_eq!(
        back.capacity.cpu_cores.to_bits(),
        r.capacity.cpu_cores.to_bits()
    );
    assert_eq!(
        back.capacity.mem_bytes.to_bits(),
        r.capacity.mem_bytes.to_bits()
    );

    r.capacity.mem_bytes = f64::NAN;
    let back: ReportRequest = Encoding::MessagePack
        .decode(&Encoding::MessagePack.encode(&r).expect("encodes"))
        .expect("NaN travels in MessagePack");
    let errors = back.validate(10).expect_err("NaN refused");
    assert!(
        errors.iter().any(|e| e.contains("capacity.mem_bytes")),
        "{errors:?}"
    );
}

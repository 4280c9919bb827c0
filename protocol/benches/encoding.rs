//! The report path's bodies in JSON against MessagePack, in the same run:
//! decoding an agent's report (100 components whose forecasts carry their
//! calibration tables, as a real agent's do) and encoding its answer (100
//! resizes with their explanations), the two things a central shaper does
//! for every report. The body sizes are printed first.
//!
//! ```sh
//! cargo bench -p protocol --bench encoding
//! ```

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use protocol::{
    ActionId, ActionKind, ComponentReport, Encoding, ReportRequest, ReportResponse, WireAction,
};
use shaper::{
    Band, Basis, Bound, Calibration, Class, Explanation, Forecasts, Predictive, Reason, Resources,
    Sizing,
};
use std::hint::black_box;
use std::sync::Arc;

const COMPONENTS: usize = 100;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// A deterministic fraction in [0, 1) (SplitMix64).
fn unit(mut z: u64) -> f64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

fn calibrated(mean: f64, std: f64, key: u64) -> Predictive {
    let mut c = Calibration::gaussian();
    for (i, (u, l)) in c.upper.iter_mut().zip(c.lower.iter_mut()).enumerate() {
        *u *= 1.0 + 0.5 * unit(key ^ i as u64) as f32;
        *l *= 0.5 + 0.5 * unit(key ^ 0x100 ^ i as u64) as f32;
    }
    let mut p = Predictive::gaussian(mean, std);
    p.calibration = Some(Arc::new(c));
    p
}

fn report() -> ReportRequest {
    let components = (0..COMPONENTS as u64)
        .map(|i| {
            let req_cpu = 0.25 + 1.75 * unit(i ^ 1);
            let req_mem = ((0.25 + 3.75 * unit(i ^ 2)) * GIB).round();
            let frac = 0.3 + 0.1 * unit(i ^ 3);
            let usage = Resources::new(req_cpu * frac, (req_mem * frac).round());
            ComponentReport {
                container_id: format!("{:064x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                app: format!("shop-{}", i / 10),
                class: if i % 10 < 2 {
                    Class::Core
                } else {
                    Class::Elastic
                },
                priority: 0,
                protected: false,
                request: Resources::new(req_cpu, req_mem),
                allocation: Resources::new(req_cpu * 0.6, (req_mem * 0.6).round()),
                usage,
                forecast: Some(Forecasts {
                    cpu: calibrated(usage.cpu_cores, 0.05 * usage.cpu_cores, i << 8),
                    mem: calibrated(usage.mem_bytes, 0.02 * usage.mem_bytes, i << 9),
                    mem_hold_bytes: 0.0,
                    mem_small_hold_bytes: 0.0,
                }),
                started_s: 1.764e9 + 3600.0 * unit(i ^ 4),
                work_done_s: None,
                app_submitted_s: None,
                failures: 0,
                expected_remaining_s: None,
                restarts_alone: false,
                mem_floor_bytes: 0.0,
                oom_floor_bytes: 0.0,
            }
        })
        .collect();
    ReportRequest {
        agent_id: "node-0042.example".into(),
        boot_id: 1_764_000_000_000,
        seq: 1234,
        capacity: Resources::new(64.0, 256.0 * GIB),
        components,
        acks: vec![],
        mentions: true,
        early: false,
    }
}

fn answer(report: &ReportRequest) -> ReportResponse {
    let sizing = |mean: f64, request: f64, key: u64| {
        let sigma = 0.03 * mean;
        let mult = 3.0 * (1.0 + 0.3 * unit(key));
        Sizing {
            mean,
            sigma,
            k1_term: 0.05 * request,
            k2_term: mult * sigma,
            band: Band {
                level: 3.0,
                mult,
                ..Band::default()
            },
            margin_term: 0.0,
            target: mean + 0.05 * request + mult * sigma,
            bound: Bound::Buffer,
        }
    };
    let actions = report
        .components
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let cpu = sizing(c.usage.cpu_cores, c.request.cpu_cores, i as u64);
            let mem = sizing(c.usage.mem_bytes, c.request.mem_bytes, !(i as u64));
            WireAction {
                id: ActionId(format!("19ad0c3e5f1-{}-{}", 8_640, 420_000 + i)),
                app: format!("tenant-a/{}", c.app),
                action: ActionKind::Resize {
                    container_id: c.container_id.clone(),
                    from: c.allocation,
                    to: Resources::new(cpu.target, mem.target.round()),
                },
                explanation: Explanation {
                    reason: Reason::Shaped,
                    basis: Basis::Forecast,
                    cpu,
                    mem,
                    binding: None,
                },
                mentions: None,
            }
        })
        .collect();
    ReportResponse {
        api_version: protocol::API_VERSION,
        round: 8_640,
        interval_s: 10.0,
        actions,
        rejected: vec![],
    }
}

fn bench_encoding(c: &mut Criterion) {
    let report = report();
    let answer = answer(&report);
    let mut group = c.benchmark_group("report_path");
    group.throughput(Throughput::Elements(COMPONENTS as u64));
    for e in [Encoding::Json, Encoding::MessagePack] {
        let body = e.encode(&report).expect("encodes");
        let answer_body = e.encode(&answer).expect("encodes");
        println!(
            "{e}: report {} bytes, answer {} bytes",
            body.len(),
            answer_body.len()
        );
        let name = e.media_type().trim_start_matches("application/");
        group.bench_function(format!("decode_report_{name}"), |b| {
            b.iter(|| {
                black_box(
                    e.decode::<ReportRequest>(black_box(&body))
                        .expect("decodes"),
                )
            })
        });
        group.bench_function(format!("encode_answer_{name}"), |b| {
            b.iter(|| black_box(e.encode(black_box(&answer)).expect("encodes")))
        });
        // The agent's side: its report out, its answer in.
        group.bench_function(format!("agent_side_{name}"), |b| {
            b.iter(|| {
                let out = e.encode(black_box(&report)).expect("encodes");
                let back: ReportResponse = e.decode(black_box(&answer_body)).expect("decodes");
                black_box((out, back))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_encoding);
criterion_main!(benches);

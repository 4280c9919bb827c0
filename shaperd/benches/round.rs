//! The central shaper's round at cluster scale: 10,000 agents x 100
//! containers (1M components), the loadgen's shape (applications of 10
//! containers per agent spanning 10 consecutive agents, the first 2 of each
//! slice core; host capacity 60% of the summed requests; usage ~35% of the
//! request with 1% spikes). Phases timed apart, then the whole round as the
//! server runs it (lock-free part: build + decide + prepare; under the
//! lock: begin + commit), the report path (every agent reports once), and
//! the encoding of one agent's answer (`report_response_*`).
//!
//! ```sh
//! cargo bench -p shaperd --bench round            # release profile
//! ROUND_AGENTS=1000 cargo bench -p shaperd --bench round   # 100k components
//! ```

use axum::response::IntoResponse;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shaper::{Class, Decider, Forecasts, Predictive, Resources, ShaperConfig};
use shaperd::credentials::Identity;
use shaperd::limits::ServerLimits;
use shaperd::protocol::{ComponentReport, ReportRequest};
use shaperd::state::{RoundMemory, ShaperState, StateConfig};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const CONTAINERS: usize = 100;
const HOSTS_PER_APP: usize = 10;

/// SplitMix64 (deterministic noise).
fn mix(mut z: u64) -> f64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

fn report(agent: usize, seq: u64, round: u64) -> ReportRequest {
    let group = agent / HOSTS_PER_APP;
    let mut components = Vec::with_capacity(CONTAINERS);
    let mut sum_cpu = 0.0;
    let mut sum_mem = 0.0;
    for i in 0..CONTAINERS {
        let key = (agent as u64) << 20 | (i as u64) << 8 | round;
        let req_cpu = 0.25 + 1.75 * mix(key ^ 1);
        let req_mem = (0.25 + 3.75 * mix(key ^ 2)) * GIB;
        let spike = if mix(key ^ 3) < 0.01 { 2.5 } else { 1.0 };
        let use_frac = (0.35 + 0.1 * (mix(key ^ 4) - 0.5)) * spike;
        sum_cpu += req_cpu;
        sum_mem += req_mem;
        let usage = Resources::new(req_cpu * use_frac, req_mem * use_frac);
        components.push(ComponentReport {
            container_id: format!("c{agent}-{i}"),
            app: format!("app-{group}-{}", i / 10),
            class: if i % 10 < 2 {
                Class::Core
            } else {
                Class::Elastic
            },
            priority: 0,
            protected: false,
            request: Resources::new(req_cpu, req_mem),
            allocation: Resources::new(req_cpu, req_mem),
            usage,
            forecast: Some(Forecasts {
                cpu: Predictive::gaussian(usage.cpu_cores, 0.05 * usage.cpu_cores),
                mem: Predictive::gaussian(usage.mem_bytes, 0.05 * usage.mem_bytes),
                mem_hold_bytes: 0.0,
                mem_small_hold_bytes: 0.0,
            }),
            started_s: 0.0,
            work_done_s: None,
            app_submitted_s: None,
            failures: 0,
            expected_remaining_s: None,
            restarts_alone: false,
            mem_floor_bytes: 0.0,
            oom_floor_bytes: 0.0,
        });
    }
    // Capacity 60% of the summed requests, but at least the largest request.
    let cap = Resources::new((0.6 * sum_cpu).max(2.0), (0.6 * sum_mem).max(4.0 * GIB));
    ReportRequest {
        agent_id: format!("agent-{agent:05}"),
        boot_id: 1,
        seq,
        capacity: cap,
        components,
        acks: vec![],
        mentions: false,
        early: false,
    }
}

fn state_with(agents: usize) -> ShaperState {
    let cfg = StateConfig {
        interval_s: 10.0,
        stale_after_intervals: 3,
        forget_after_intervals: 0,
        warmup_intervals: 0,
        early_round_gap_s: 1.0,
        max_components_per_report: 10_000,
        limits: ServerLimits {
            max_agents: agents,
            max_components_per_tenant: agents * CONTAINERS,
            max_components_total: agents * CONTAINERS,
            max_state_mem_bytes: u64::MAX,
            ..ServerLimits::default()
        },
    };
    let mut s = ShaperState::new(cfg, ShaperConfig::default(), "bench", 0.0);
    for a in 0..agents {
        let r = report(a, 1, 0);
        let who = identity(&r);
        s.report_as(&who, r, 1.0).expect("bench report accepted");
    }
    s
}

fn identity(r: &ReportRequest) -> Identity {
    Identity {
        agent_id: Arc::from(r.agent_id.as_str()),
        tenant: Arc::from("loadgen"),
        key_id: Arc::from("0000000000000000"),
        apps: Default::default(),
    }
}

fn bench_round(c: &mut Criterion) {
    let agents: usize = std::env::var("ROUND_AGENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
        .clamp(1, 20_000);
    let mut state = state_with(agents);
    let cfg = state.shaper_config().clone();
    let mut decider = Decider::new();
    let mut now_s = 2.0;
    let mut group = c.benchmark_group(format!("round_{}k_components", agents * CONTAINERS / 1000));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(20))
        .throughput(Throughput::Elements((agents * CONTAINERS) as u64));

    let snap = state.begin_round(now_s).expect("agents reported");
    group.bench_function("build_view", |b| b.iter(|| black_box(snap.build())));
    // The same view built into the last one's memory, as the server does.
    let mut memory = RoundMemory::default();
    group.bench_function("build_view_reusing", |b| {
        b.iter(|| {
            let input = black_box(snap.build_reusing(&mut memory));
            memory.keep_view(input);
        })
    });
    let input = snap.build();
    group.bench_function("decide", |b| {
        b.iter(|| black_box(decider.decide(&input.view, now_s, &cfg)))
    });
    let plan = decider.decide(&input.view, now_s, &cfg);
    group.bench_function("prepare_actions", |b| {
        b.iter_batched(
            || plan.clone(),
            |plan| black_box(input.prepare(plan)),
            criterion::BatchSize::PerIteration,
        )
    });
    drop((input, plan, snap));
    // The report path: every agent reports once more (the same
    // containers), as between two rounds.
    let mut seq = 1;
    group.bench_function("reports", |b| {
        b.iter_batched(
            || {
                seq += 1;
                (0..agents).map(|a| report(a, seq, 0)).collect::<Vec<_>>()
            },
            |reports| {
                for r in reports {
                    let who = identity(&r);
                    black_box(state.report_as(&who, r, 1.5).expect("accepted"));
                }
            },
            criterion::BatchSize::PerIteration,
        )
    });
    group.bench_function("whole_round", |b| {
        b.iter(|| {
            now_s += 0.001;
            let snap = state.begin_round(now_s).expect("agents reported");
            let input = snap.build();
            let plan = decider.decide(&input.view, now_s, &cfg);
            let prepared = input.prepare(plan);
            let (out, replaced) = state.commit_deferring_drops(prepared);
            if let Some(plan) = replaced.into_plan() {
                let mut actions = plan.actions;
                actions.clear();
                decider.recycle(actions);
            }
            black_box(out)
        })
    });
    // The server's round: the view, the answers and the plan's actions
    // reuse the last rounds' memory.
    group.bench_function("whole_round_reusing", |b| {
        b.iter(|| {
            now_s += 0.001;
            let snap = state.begin_round(now_s).expect("agents reported");
            let input = snap.build_reusing(&mut memory);
            let plan = decider.decide(&input.view, now_s, &cfg);
            let prepared = input.prepare_reusing(plan, &mut memory);
            memory.keep_view(input);
            let (out, replaced) = state.commit_deferring_drops(prepared);
            let (plan, spares) = replaced.into_spares();
            memory.keep(spares);
            if let Some(plan) = plan {
                let mut actions = plan.actions;
                actions.clear();
                decider.recycle(actions);
            }
            black_box(out)
        })
    });
    // An agent's answer (its ~100 actions) as JSON: the server's encoder
    // against axum's `Json`, the reference, in the same run; and as
    // MessagePack.
    let snap = state.begin_round(now_s + 0.5).expect("agents reported");
    let input = snap.build();
    let plan = decider.decide(&input.view, now_s, &cfg);
    state.commit(input.prepare(plan));
    seq += 1;
    let r = report(0, seq, 0);
    let resp = state
        .report_as(&identity(&r), r, now_s + 0.6)
        .expect("accepted");
    group.throughput(Throughput::Elements(resp.actions.len() as u64));
    group.bench_function("report_response_axum_json", |b| {
        b.iter(|| black_box(axum::Json(&resp).into_response()))
    });
    group.bench_function("report_response_json_response", |b| {
        b.iter(|| black_box(shaperd::server::json_response(&resp)))
    });
    group.bench_function("report_response_msgpack", |b| {
        b.iter(|| {
            black_box(shaperd::server::encoded_response(
                shaperd::protocol::Encoding::MessagePack,
                &resp,
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, bench_round);
criterion_main!(benches);

//! `decide()` at cluster scale: 100 components per host, 10 per application
//! (2 core + 8 elastic, spread over several hosts), requests summing to
//! about each host's capacity, forecasts at 30-90% of the request with a few
//! spikes, and 10% of hosts a little smaller so that evictions happen.
//!
//! ```sh
//! CARGO_TARGET_DIR=/work/target-shaper taskset -c 1 cargo bench -p shaper --bench decide
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shaper::synthetic::{synthetic_view, NOW_S};
use shaper::*;
use std::hint::black_box;
use std::time::Duration;

fn bench_decide(c: &mut Criterion) {
    let mut group = c.benchmark_group("decide");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for n in [10_000usize, 100_000, 1_000_000] {
        let view = synthetic_view(n, 42);
        group.throughput(Throughput::Elements(n as u64));
        for (name, cfg) in [
            ("pessimistic", ShaperConfig::default()),
            (
                "pessimistic_cpu_evict",
                ShaperConfig {
                    cpu_shortfall: CpuShortfall::Evict,
                    ..ShaperConfig::default()
                },
            ),
            (
                "pessimistic_least_work_lost",
                ShaperConfig {
                    victim_order: VictimOrder::LeastWorkLost,
                    ..ShaperConfig::default()
                },
            ),
            (
                "optimistic",
                ShaperConfig {
                    policy: Policy::Optimistic,
                    ..ShaperConfig::default()
                },
            ),
        ] {
            let plan = decide(&view, NOW_S, &cfg);
            eprintln!("{name} n={n}: {:?}", plan.summary);
            group.bench_with_input(BenchmarkId::new(name, n), &view, |b, v| {
                b.iter_with_large_drop(|| decide(black_box(v), black_box(NOW_S), &cfg))
            });
        }
        // A long-running shaper: one Decider and one plan reused per round.
        let cfg = ShaperConfig::default();
        let mut decider = Decider::new();
        let mut plan = decide(&view, NOW_S, &cfg);
        group.bench_with_input(BenchmarkId::new("pessimistic_reuse", n), &view, |b, v| {
            b.iter(|| {
                decider.decide_into(black_box(v), black_box(NOW_S), &cfg, &mut plan);
                plan.actions.len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_decide);
criterion_main!(benches);

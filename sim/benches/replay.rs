//! Replay speed on the bundled Google 2011 slice (80 hosts, 363
//! applications): one whole simulation per iteration, pessimistic policy,
//! with the oracle and with the GP forecaster, and the baseline;
//! and a contended, time-stretched variant on which the GP acts.
//! `cargo bench -p sim --bench replay`. Full-scale figures (Google 2011
//! part 0, 150k-application synthetic) come from the `run` example.

use criterion::{criterion_group, criterion_main, Criterion};
use shaper::Policy;
use sim::{simulate, ForecasterSource, SimConfig};

fn config(policy: Policy, source: ForecasterSource) -> SimConfig {
    let mut c = SimConfig::default();
    c.shaper.policy = policy;
    c.forecaster_source = source;
    // The GP (the shipped default until 2026-11-27): its speed is measured.
    c.forecaster.kind = forecaster::config::ModelKind::Gp;
    c
}

fn bench(c: &mut Criterion) {
    let wl = datasets::bundled_workload().expect("bundled workload");
    let mut g = c.benchmark_group("replay_bundled");
    g.sample_size(10);
    for (name, cfg) in [
        (
            "baseline",
            config(Policy::Baseline, ForecasterSource::Oracle),
        ),
        (
            "pessimistic_oracle",
            config(Policy::Pessimistic, ForecasterSource::Oracle),
        ),
        (
            "pessimistic_gp",
            config(Policy::Pessimistic, ForecasterSource::Model),
        ),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| simulate(&wl, &cfg, None).expect("simulation").summary)
        });
    }
    // The thesis setup of tests/replay_thesis.rs, where the GP leaves its
    // fallback on about half of the forecasts: twice slower in time, half
    // the capacity, GP with h = N = 10.
    let mut long = wl.clone();
    sim::source::stretch_time(&mut long, 2.0).expect("stretch");
    sim::source::scale_capacity(&mut long, 0.5).expect("scale");
    let mut cfg = config(Policy::Pessimistic, ForecasterSource::Model);
    cfg.forecaster.gp.history = 10;
    cfg.forecaster.gp.train_size = Some(10);
    g.bench_function("pessimistic_gp_stretch2_half_capacity_h10", |b| {
        b.iter(|| simulate(&long, &cfg, None).expect("simulation").summary)
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! GP speed: update (warm refit + one-step predict) and cold fit at
//! N = h = 20 (and h = 10, 40), single thread, plus the default model
//! (N = h = 20: warm refits, anchor runs and periodic cold refits) as it
//! runs online, and the N = 2h = 40 option the same way.
//!
//! ```sh
//! cargo bench -p forecaster --bench gp
//! ```
//! Series: Bitbrains 2013-7 VM 1 memory from ../shared/data when present
//! (real usage, as the speed targets are stated), else a deterministic
//! heavy-tailed AR(1) around a daily cycle.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use forecaster::{Forecaster, Gp, GpConfig};

/// Deterministic usage-like series: AR(1) + daily cycle + occasional spikes.
pub fn bench_series(n: usize) -> Vec<f64> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next_u = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut x = 0.0f64;
    (0..n)
        .map(|i| {
            let u = next_u().clamp(1e-9, 1.0 - 1e-9);
            let shock = if u < 0.5 {
                (2.0 * u).ln()
            } else {
                -(2.0 * (1.0 - u)).ln()
            };
            x = 0.8 * x + shock;
            let spike = if next_u() < 0.02 { 8.0 } else { 0.0 };
            50.0 + 10.0 * (i as f64 * std::f64::consts::TAU / 288.0).sin() + 2.0 * x + spike
        })
        .collect()
}

fn warmed(cfg: GpConfig, series: &[f64]) -> Gp {
    let mut gp = Gp::new(cfg).expect("valid config");
    for &v in series {
        gp.observe(v).expect("finite");
    }
    gp
}

/// The bench series: real when ../shared/data is there.
fn series() -> Vec<f64> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/bitbrains-rnd/2013-7/1.csv");
    if let Ok(s) = datasets::series::load_series(&p, Some("Memory usage [KB]")) {
        if let Some(first) = s.into_iter().next() {
            if first.values.len() >= 2000 {
                println!("gp bench series: {} (first 2000 samples)", p.display());
                return first.values[..2000].to_vec();
            }
        }
    }
    println!("gp bench series: synthetic (../shared/data not found)");
    bench_series(2000)
}

fn bench_gp(c: &mut Criterion) {
    let series = series();
    for h in [10usize, 20, 40] {
        // N = h: warm refit + predict (cold refits excluded: measured below)
        let cfg = GpConfig {
            history: h,
            train_size: Some(h),
            // never within the bench (the largest accepted period)
            cold_refit_every: 1_000_000,
            ..GpConfig::default()
        };
        let base = warmed(cfg.clone(), &series[..200]);
        let mut i = 200;
        let mut gp = base.clone();
        c.bench_function(&format!("gp_update_warm_h{h}"), |b| {
            b.iter(|| {
                if i >= series.len() {
                    i = 200;
                    gp = base.clone();
                }
                gp.observe(series[i]).expect("finite");
                i += 1;
                black_box(gp.forecast(1))
            })
        });
        // cold fit with the default restarts on a full window
        let cold = warmed(
            GpConfig {
                history: h,
                train_size: Some(h),
                ..GpConfig::default()
            },
            &series[..300],
        );
        c.bench_function(&format!("gp_cold_fit_h{h}"), |b| {
            b.iter_batched(
                || cold.clone(),
                |mut g| {
                    g.cold_refit();
                    black_box(g.forecast(1))
                },
                BatchSize::SmallInput,
            )
        });
    }
    // the default model (N = h = 20) and the N = 2h = 40 option as they run
    // online: warm steps, anchor runs and the periodic cold refit
    for (name, cfg) in [
        ("gp_update_default_h20", GpConfig::default()),
        (
            "gp_update_online_h20_n40",
            GpConfig {
                train_size: Some(40),
                ..GpConfig::default()
            },
        ),
    ] {
        let base = warmed(cfg, &series[..200]);
        let mut gp = base.clone();
        let mut i = 200;
        c.bench_function(name, |b| {
            b.iter(|| {
                if i >= series.len() {
                    i = 200;
                    gp = base.clone();
                }
                gp.observe(series[i]).expect("finite");
                i += 1;
                black_box(gp.forecast(1))
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench_gp
}
criterion_main!(benches);

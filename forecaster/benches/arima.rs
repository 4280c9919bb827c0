//! ARIMA speed on 60-point real series (from the committed statsforecast
//! fixtures, so the bench runs without ../shared/data).
//!
//! * `arima/cold_auto_arima/<series>`: one offline `auto_arima` (KPSS,
//!   stepwise search, CSS + ML per candidate). Target <= 2.2 ms.
//! * `arima/online_update/<series>`: one `observe` + `forecast(5)` of the
//!   online model in steady state (window 60, warm refit each step, order
//!   re-search every 60 steps or on error degradation, amortised).
//!   Target <= 200 us.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use forecaster::arima::{auto_arima, ArimaConfig, AutoArima};
use forecaster::Forecaster;

fn fixture_series() -> Vec<(String, Vec<f64>)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/arima/statsforecast_autoarima.json"
    );
    let text = std::fs::read_to_string(path).expect("fixture file is committed");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("fixture parses");
    let mut out = Vec::new();
    for s in doc["series"].as_array().expect("series array") {
        let id = s["id"].as_str().expect("id").to_string();
        let vals: Vec<f64> = s["values"]
            .as_array()
            .expect("values")
            .iter()
            .filter_map(|v| v.as_f64())
            .collect();
        out.push((id, vals));
    }
    out
}

fn bench(c: &mut Criterion) {
    let series = fixture_series();
    let pick = [
        "gcd/vm_4923136192_1/cpu@40",
        "bitbrains/5/cpu@1000",
        "google2011/6176858948/cpu@4100",
    ];
    let cfg = ArimaConfig::default();
    let mut group = c.benchmark_group("arima");
    group.sample_size(20);
    for name in pick {
        let Some((_, y)) = series.iter().find(|(id, _)| id == name) else {
            continue;
        };
        let short = name.replace('/', "_");
        group.bench_function(format!("cold_auto_arima/{short}"), |b| {
            b.iter(|| auto_arima(black_box(y), &cfg).ok())
        });
    }
    // all fixture series, one cold fit each per iteration (mean per series = time / n)
    let all: Vec<&Vec<f64>> = series.iter().map(|(_, y)| y).collect();
    group.bench_function(format!("cold_auto_arima_all_{}_series", all.len()), |b| {
        b.iter(|| {
            for y in &all {
                black_box(auto_arima(y, &cfg).ok());
            }
        })
    });
    for name in pick {
        let Some((_, y)) = series.iter().find(|(id, _)| id == name) else {
            continue;
        };
        let short = name.replace('/', "_");
        // stream: the window followed by its reverse, cycled, so the series
        // has no jump at the wrap
        let mut stream = y.clone();
        stream.extend(y.iter().rev());
        let mut m = AutoArima::new(cfg.clone()).expect("valid config");
        for v in &stream {
            m.observe(*v).expect("finite");
        }
        let mut i = 0usize;
        group.bench_function(format!("online_update/{short}"), |b| {
            b.iter(|| {
                let v = stream[i % stream.len()];
                i += 1;
                m.observe(v).expect("finite");
                black_box(m.forecast(5))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! ARIMA speed on 60-point real series (from the committed statsforecast
//! fixtures, so the bench runs without ../shared/data).
//!
//! * `cold_auto_arima/<series>`: one offline `auto_arima` with the default
//!   (fast) optimiser: KPSS, stepwise search, CSS + ML per candidate.
//!   Target <= 2.2 ms. `cold_auto_arima_reference/...`: the SciPy-faithful
//!   optimiser, for comparison.
//! * `online_update/<series>`: one `observe` + `forecast(5)` of the online
//!   model with the default config (window 60, 3 averaged models, warm
//!   refits, local / periodic order searches, amortised). Target <= 200 us.
//!
//! Before the criterion groups, a summary over all 42 fixture series prints
//! the median / mean / max over series of the cold fit time and of the mean
//! online update time (thread CPU and wall); `ARIMA_BENCH_SUMMARY_ONLY=1`
//! stops after it, `ARIMA_BENCH_VERBOSE=1` adds a line per series.
//!
//! Every criterion benchmark is run twice: group `arima` measures wall-clock
//! time (criterion's default), group `arima_cpu` the thread's CPU time
//! (/proc/thread-self/schedstat, tick resolution, hence 10 flat samples of
//! ~0.6 s). The CPU figure is the one to read on a loaded machine, where
//! wall time counts other processes.

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{black_box, criterion_group, Criterion, SamplingMode, Throughput};
use forecaster::arima::{auto_arima, ArimaConfig, AutoArima, Optimizer};
use forecaster::Forecaster;

/// Thread CPU time in nanoseconds from /proc/thread-self/schedstat (0 when
/// unavailable). It moves at scheduler ticks (a few ms), so every figure
/// below is taken over runs of tens of milliseconds or more.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

struct ThreadCpu;
struct NsFormatter;

impl ValueFormatter for NsFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (div, unit) = if typical < 1e3 {
            (1.0, "ns")
        } else if typical < 1e6 {
            (1e3, "us")
        } else if typical < 1e9 {
            (1e6, "ms")
        } else {
            (1e9, "s")
        };
        for v in values.iter_mut() {
            *v /= div;
        }
        unit
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        _t: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        for v in values.iter_mut() {
            *v = 1e9 / v.max(1.0);
        }
        "elem/s"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

impl Measurement for ThreadCpu {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &NsFormatter
    }
}

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

const PICK: [&str; 3] = [
    "gcd/vm_4923136192_1/cpu@40",
    "bitbrains/5/cpu@1000",
    "google2011/6176858948/cpu@4100",
];

fn run<M: Measurement>(c: &mut Criterion<M>, group_name: &str, cpu_clock: bool) {
    let series = fixture_series();
    let cfg = ArimaConfig::default();
    let reference = ArimaConfig {
        optimizer: Optimizer::Reference,
        ..ArimaConfig::default()
    };
    let mut group = c.benchmark_group(group_name);
    if cpu_clock {
        // tick-resolution clock: few long, equal samples
        group.sample_size(10);
        group.sampling_mode(SamplingMode::Flat);
        group.measurement_time(std::time::Duration::from_secs(6));
    } else {
        group.sample_size(20);
    }
    for name in PICK {
        let Some((_, y)) = series.iter().find(|(id, _)| id == name) else {
            continue;
        };
        let short = name.replace('/', "_");
        group.bench_function(format!("cold_auto_arima/{short}"), |b| {
            b.iter(|| auto_arima(black_box(y), &cfg).ok())
        });
        group.bench_function(format!("cold_auto_arima_reference/{short}"), |b| {
            b.iter(|| auto_arima(black_box(y), &reference).ok())
        });
    }
    // all fixture series, one cold fit each per iteration (per series = time / n)
    let all: Vec<&Vec<f64>> = series.iter().map(|(_, y)| y).collect();
    group.bench_function(format!("cold_auto_arima_all_{}_series", all.len()), |b| {
        b.iter(|| {
            for y in &all {
                black_box(auto_arima(y, &cfg).ok());
            }
        })
    });
    for name in PICK {
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

fn wall(c: &mut Criterion) {
    run(c, "arima", false);
}

fn cpu(c: &mut Criterion<ThreadCpu>) {
    run(c, "arima_cpu", true);
}

criterion_group!(wall_benches, wall);
criterion_group! {
    name = cpu_benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = cpu
}
/// Per-series figures over every fixture series: the cold `auto_arima`
/// time and the mean online update (observe + forecast(5)) time, as thread
/// CPU time (and wall time), summarised as median / mean / max over the
/// series. Printed before the criterion groups; with
/// `ARIMA_BENCH_SUMMARY_ONLY=1` only this runs (quick, and a clean target
/// for `perf record` / `valgrind --tool=callgrind`).
fn summary() {
    let mut series = fixture_series();
    // ARIMA_BENCH_ONLY=<substring>: only the matching series
    if let Ok(only) = std::env::var("ARIMA_BENCH_ONLY") {
        series.retain(|(id, _)| id.contains(&only));
    }
    // ARIMA_BENCH_CFG='{"average_models":1}' measures other settings
    let cfg: ArimaConfig = match std::env::var("ARIMA_BENCH_CFG") {
        Ok(js) => serde_json::from_str(&js).expect("ARIMA_BENCH_CFG is an ArimaConfig JSON"),
        Err(_) => ArimaConfig::default(),
    };
    // repetitions per series: cold fits (~2 ms each) and cycles of 120
    // online updates; enough for runs of >= ~50 ms per series (tick clock)
    let reps_of = |var: &str, default: usize| -> usize {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let cold_reps = reps_of("ARIMA_BENCH_COLD_REPS", 40);
    let reps = reps_of("ARIMA_BENCH_REPS", 10);
    let mut cold_cpu = Vec::new();
    let mut cold_wall = Vec::new();
    let mut upd_cpu = Vec::new();
    let mut upd_wall = Vec::new();
    let (mut searches, mut local, mut updates) = (0usize, 0usize, 0usize);
    let verbose = std::env::var_os("ARIMA_BENCH_VERBOSE").is_some();
    for (id, y) in &series {
        let c0 = thread_cpu_ns();
        let w0 = std::time::Instant::now();
        // ARIMA_BENCH_PART=update|cold runs one part only (callgrind counts)
        let part = std::env::var("ARIMA_BENCH_PART").unwrap_or_default();
        let cold_n = if part == "update" { 0 } else { cold_reps };
        for _ in 0..cold_n {
            black_box(auto_arima(black_box(y), &cfg).ok());
        }
        cold_wall.push(w0.elapsed().as_secs_f64() / cold_n.max(1) as f64);
        cold_cpu.push((thread_cpu_ns() - c0) as f64 * 1e-9 / cold_n.max(1) as f64);
        // online: the window then its reverse, cycled; warm up one cycle,
        // then time `reps` cycles of updates
        let mut stream = y.clone();
        stream.extend(y.iter().rev());
        let mut m = AutoArima::new(cfg.clone()).expect("valid config");
        for v in &stream {
            m.observe(*v).expect("finite");
        }
        let c0 = thread_cpu_ns();
        let w0 = std::time::Instant::now();
        let mut count = 0usize;
        for _ in 0..if part == "cold" { 0 } else { reps } {
            for v in &stream {
                m.observe(*v).expect("finite");
                black_box(m.forecast(5));
                count += 1;
            }
        }
        if verbose {
            println!(
                "  {id:<40} cold {:>8.1} us  update {:>7.1} us  order {:?} searches {} + {} local",
                cold_cpu[cold_cpu.len() - 1] * 1e6,
                (thread_cpu_ns() - c0) as f64 * 1e-3 / count.max(1) as f64,
                m.current_fit().map(|f| f.order()),
                m.searches(),
                m.local_searches()
            );
        }
        searches += m.searches();
        local += m.local_searches();
        updates += m.observed();
        upd_wall.push(w0.elapsed().as_secs_f64() / count.max(1) as f64);
        upd_cpu.push((thread_cpu_ns() - c0) as f64 * 1e-9 / count.max(1) as f64);
    }
    let stats = |v: &mut Vec<f64>| -> (f64, f64, f64) {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let med = if n % 2 == 1 {
            v[n / 2]
        } else {
            0.5 * (v[n / 2 - 1] + v[n / 2])
        };
        (med, v.iter().sum::<f64>() / n as f64, v[n - 1])
    };
    println!(
        "arima summary over {} fixture series (reps {cold_reps} cold, {reps} x 120 updates): median / mean / max ({searches} full + {local} local order searches in {updates} online updates)",
        series.len()
    );
    for (name, v) in [
        ("cold auto_arima, thread CPU", &mut cold_cpu),
        ("cold auto_arima, wall", &mut cold_wall),
        ("online update (observe+forecast), thread CPU", &mut upd_cpu),
        ("online update (observe+forecast), wall", &mut upd_wall),
    ] {
        let (med, mean, max) = stats(v);
        println!(
            "  {name:<46} {:>9.1} us {:>9.1} us {:>9.1} us",
            med * 1e6,
            mean * 1e6,
            max * 1e6
        );
    }
}

fn main() {
    summary();
    if std::env::var_os("ARIMA_BENCH_SUMMARY_ONLY").is_some() {
        return;
    }
    wall_benches();
    cpu_benches();
    Criterion::default().configure_from_args().final_summary();
}

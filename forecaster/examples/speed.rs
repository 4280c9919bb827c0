//! Timing binary for `scripts/compare_speed.py`: times our models on the
//! series the script also gives to statsforecast and scikit-learn.
//!
//! ```sh
//! cargo run --release -p forecaster --example speed -- SERIES.csv
//! ```
//! SERIES.csv: one series per line, comma-separated values. Prints one JSON
//! object (seconds, single thread):
//! * `gp_update_s`: median time of one online GP update (observe = warm
//!   refit, plus the one-step forecast) at N = h = 20, over every step after
//!   the first 40 of every series (periodic cold refits included);
//! * `gp_update_mean_s`: the mean of the same;
//! * `gp_cold_fit_s`: median time of a cold fit (3 starts) on a 40-point
//!   window (N = h = 20), windows at steps 0, 3, 6, ... of every series,
//!   each timed as the fastest of 5 fits;
//! * `arima_cold_s`: median time of `auto_arima` on 60-point windows at
//!   steps 0, 60, 120, ... of every series;
//! * `arima_update_s`: median time of one online AutoArima update + forecast;
//! * `gp_update_p90_s`, `gp_cold_fit_p90_s`, `gp_cold_fit_max_s`: the 90th
//!   percentile / maximum of the same (wall clock: a busy machine inflates
//!   the update maximum; the cold fits are fastest-of-5);
//! * `gp_update_cpu_mean_s`, `gp_cold_fit_cpu_mean_s`: mean thread CPU time
//!   of a GP update (all steps, warm-up included) and of a cold fit
//!   (windows at steps 0, 60, 120, ..., one loop), which other processes on
//!   the machine do not inflate.

use std::time::Instant;

use forecaster::arima::{auto_arima, ArimaConfig, AutoArima};
use forecaster::{Forecaster, Gp, GpConfig};

/// CPU time of this thread in seconds (Linux `/proc/thread-self/schedstat`;
/// NaN elsewhere). Robust to other processes competing for the cores,
/// unlike wall time; coarse, so only totals over many calls are used.
fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|t| {
            t.split_whitespace()
                .next()
                .and_then(|x| x.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |ns| ns * 1e-9)
}

/// `q`-quantile (nearest rank) of the values.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: speed SERIES.csv");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let series: Vec<Vec<f64>> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.split(',')
                .filter_map(|x| x.trim().parse::<f64>().ok())
                .collect()
        })
        .collect();
    let gp_cfg = GpConfig {
        history: 20,
        train_size: Some(20),
        ..GpConfig::default()
    };
    let (mut gp_upd, mut gp_cold, mut ar_cold, mut ar_upd) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // CPU-time totals: (seconds, count)
    let (mut cpu_upd, mut cpu_cold) = ((0.0f64, 0usize), (0.0f64, 0usize));
    for s in &series {
        let mut gp = match Gp::new(gp_cfg.clone()) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("gp config: {e}");
                std::process::exit(1);
            }
        };
        let c0 = cpu_s();
        for (i, &v) in s.iter().enumerate() {
            let t0 = Instant::now();
            let _ = gp.observe(v);
            std::hint::black_box(gp.forecast(1));
            if i >= 40 {
                gp_upd.push(t0.elapsed().as_secs_f64());
            }
        }
        cpu_upd = (cpu_upd.0 + cpu_s() - c0, cpu_upd.1 + s.len());
        let mut ar = match AutoArima::new(ArimaConfig::default()) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("arima config: {e}");
                std::process::exit(1);
            }
        };
        for (i, &v) in s.iter().enumerate() {
            let t0 = Instant::now();
            let _ = ar.observe(v);
            std::hint::black_box(ar.forecast(1));
            if i >= 60 {
                ar_upd.push(t0.elapsed().as_secs_f64());
            }
        }
        // every 3rd 40-point window, each the fastest of 5 fits (robust to
        // preemption on a busy machine, so the maximum means something)
        let mut start = 0;
        while start + 40 <= s.len() {
            let w40 = &s[start..start + 40];
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                let t0 = Instant::now();
                std::hint::black_box(Gp::fit_window(&gp_cfg, w40, None));
                best = best.min(t0.elapsed().as_secs_f64());
            }
            gp_cold.push(best);
            start += 3;
        }
        let mut start = 0;
        while start + 60 <= s.len() {
            let w60 = &s[start..start + 60];
            let t0 = Instant::now();
            let _ = std::hint::black_box(auto_arima(w60, &ArimaConfig::default()));
            ar_cold.push(t0.elapsed().as_secs_f64());
            start += 60;
        }
    }
    // CPU time of all cold fits in one loop (per-call deltas are too coarse)
    let c0 = cpu_s();
    for s in &series {
        let mut start = 0;
        while start + 60 <= s.len() {
            std::hint::black_box(Gp::fit_window(&gp_cfg, &s[start..start + 40], None));
            cpu_cold.1 += 1;
            start += 60;
        }
    }
    cpu_cold.0 = cpu_s() - c0;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    println!(
        "{{\"series\":{},\"gp_updates\":{},\"gp_update_s\":{:e},\"gp_update_mean_s\":{:e},\"gp_cold_fit_s\":{:e},\
         \"arima_cold_s\":{:e},\"arima_update_s\":{:e},\"arima_update_mean_s\":{:e},\
         \"gp_update_cpu_mean_s\":{:e},\"gp_cold_fit_cpu_mean_s\":{:e},\
         \"gp_update_p90_s\":{:e},\"gp_cold_fit_p90_s\":{:e},\"gp_cold_fit_max_s\":{:e}}}",
        series.len(),
        gp_upd.len(),
        median(gp_upd.clone()),
        mean(&gp_upd),
        median(gp_cold.clone()),
        median(ar_cold),
        median(ar_upd.clone()),
        mean(&ar_upd),
        cpu_upd.0 / cpu_upd.1.max(1) as f64,
        cpu_cold.0 / cpu_cold.1.max(1) as f64,
        quantile(gp_upd.clone(), 0.9),
        quantile(gp_cold.clone(), 0.9),
        quantile(gp_cold.clone(), 1.0)
    );
}

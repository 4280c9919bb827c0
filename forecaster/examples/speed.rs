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
//! * `gp_cold_fit_s`: median time of a cold fit (3 restarts) on a 40-point
//!   window (N = h = 20), windows at steps 0, 60, 120, ... of every series;
//! * `arima_cold_s`: median time of `auto_arima` on 60-point windows at the
//!   same steps;
//! * `arima_update_s`: median time of one online AutoArima update + forecast.

use std::time::Instant;

use forecaster::arima::{auto_arima, ArimaConfig, AutoArima};
use forecaster::{Forecaster, Gp, GpConfig};

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
    for s in &series {
        let mut gp = match Gp::new(gp_cfg.clone()) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("gp config: {e}");
                std::process::exit(1);
            }
        };
        for (i, &v) in s.iter().enumerate() {
            let t0 = Instant::now();
            let _ = gp.observe(v);
            std::hint::black_box(gp.forecast(1));
            if i >= 40 {
                gp_upd.push(t0.elapsed().as_secs_f64());
            }
        }
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
        let mut start = 0;
        while start + 60 <= s.len() {
            let w40 = &s[start..start + 40];
            let t0 = Instant::now();
            std::hint::black_box(Gp::fit_window(&gp_cfg, w40, None));
            gp_cold.push(t0.elapsed().as_secs_f64());
            let w60 = &s[start..start + 60];
            let t0 = Instant::now();
            let _ = std::hint::black_box(auto_arima(w60, &ArimaConfig::default()));
            ar_cold.push(t0.elapsed().as_secs_f64());
            start += 60;
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    println!(
        "{{\"series\":{},\"gp_updates\":{},\"gp_update_s\":{:e},\"gp_update_mean_s\":{:e},\"gp_cold_fit_s\":{:e},\
         \"arima_cold_s\":{:e},\"arima_update_s\":{:e},\"arima_update_mean_s\":{:e}}}",
        series.len(),
        gp_upd.len(),
        median(gp_upd.clone()),
        mean(&gp_upd),
        median(gp_cold),
        median(ar_cold),
        median(ar_upd.clone()),
        mean(&ar_upd)
    );
}

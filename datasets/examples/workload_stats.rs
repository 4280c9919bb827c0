//! Prints a workload's size, its build report (bundled slice), and a naive
//! contention check: the sum of requests of components that would run if
//! every application started at arrival, against total host capacity.
//!
//! Usage: `cargo run --release -p datasets --example workload_stats [-- TRACE_DIR | synthetic:SEED:APPS]`

use datasets::bundled::{bundled_config, bundled_workload_with};
use datasets::google2011::{build_workload_from, Google2011Config, Google2011Sources};
use datasets::pool::UsagePool;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t0 = std::time::Instant::now();
    let (w, report) = match std::env::args().nth(1) {
        Some(spec) if spec.starts_with("synthetic:") => {
            let mut p = spec.split(':').skip(1);
            let seed: u64 = p.next().unwrap_or("0").parse()?;
            let apps: usize = p.next().unwrap_or("150000").parse()?;
            let cfg = datasets::synthetic::SyntheticConfig {
                seed,
                apps,
                ..Default::default()
            };
            (datasets::synthetic::generate(&cfg)?, Default::default())
        }
        Some(dir) => build_workload_from(
            &Google2011Sources::from_dir(std::path::Path::new(&dir))?,
            &Google2011Config::default(),
            &UsagePool::bundled()?,
        )?,
        None => bundled_workload_with(&bundled_config())?,
    };
    println!("built in {:.3} s", t0.elapsed().as_secs_f64());
    println!("{report:#?}");
    let cap = w.hosts.iter().fold((0.0, 0.0), |a, h| {
        (a.0 + h.capacity.cpu_cores, a.1 + h.capacity.mem_bytes)
    });
    let comps: usize = w.apps.iter().map(|a| a.components.len()).sum();
    println!(
        "{}: {} hosts, {} apps, {} components; capacity {:.1} cores, {:.1} GiB",
        w.name,
        w.hosts.len(),
        w.apps.len(),
        comps,
        cap.0,
        cap.1 / (1u64 << 30) as f64
    );
    let mut ev: Vec<(f64, f64, f64, f64, f64)> = Vec::new(); // t, dcpu, dmem, ucpu, umem
    for a in &w.apps {
        for c in &a.components {
            let u = c.usage.at(0.0);
            ev.push((
                a.arrival_s,
                c.request.cpu_cores,
                c.request.mem_bytes,
                u.cpu_cores,
                u.mem_bytes,
            ));
            ev.push((
                a.arrival_s + c.work_s,
                -c.request.cpu_cores,
                -c.request.mem_bytes,
                -u.cpu_cores,
                -u.mem_bytes,
            ));
        }
    }
    ev.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut rc, mut rm, mut uc, mut um, mut peak_c, mut peak_m) =
        (0.0, 0.0, 0.0, 0.0, 0.0f64, 0.0f64);
    for e in &ev {
        rc += e.1;
        rm += e.2;
        uc += e.3;
        um += e.4;
        peak_c = peak_c.max(rc);
        peak_m = peak_m.max(rm);
        let _ = (uc, um);
    }
    println!(
        "peak concurrent requests if started at arrival: cpu {:.2}x capacity, mem {:.2}x capacity",
        peak_c / cap.0,
        peak_m / cap.1
    );
    let mut works: Vec<f64> = w
        .apps
        .iter()
        .flat_map(|a| a.components.iter().map(|c| c.work_s))
        .collect();
    works.sort_by(f64::total_cmp);
    let q = |p: f64| works[((works.len() - 1) as f64 * p) as usize];
    println!(
        "work_s quantiles: p10 {:.0} p50 {:.0} p90 {:.0} max {:.0}",
        q(0.1),
        q(0.5),
        q(0.9),
        q(1.0)
    );
    let at0 = w.apps.iter().filter(|a| a.arrival_s == 0.0).count();
    println!("apps arriving at 0: {at0}");
    Ok(())
}

//! Runs one simulation and prints its summary as JSON (speed measurements
//! without the CLI): `cargo run --release -p sim --example run -- WORKLOAD
//! [POLICY] [FORECASTER] [K1] [K2] [--no-baseline] [--serial] [--progress]
//! [--min-work-s=S] [--max-apps=N] [--stretch=F] [--capacity-scale=F]`
//! (applied in that order), e.g.
//! `google2011:/work/shared/data/google-2011 pessimistic oracle 0.05 3`.
//! `SIM_CONFIG=file.toml` sets the base configuration. The summary's
//! `wall_s` is the simulation's wall time (workload loading excluded; it
//! is printed to stderr).

use std::str::FromStr;

use sim::{ForecasterSource, SimConfig, WorkloadSource};

fn flag_value<T: FromStr>(flags: &[&String], name: &str) -> Result<Option<T>, String> {
    match flags.iter().find_map(|f| f.strip_prefix(name)) {
        None => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| format!("bad value in {name}{v}")),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flags: Vec<&String> = args.iter().filter(|a| a.starts_with("--")).collect();
    let pos: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let source: WorkloadSource = pos.first().map_or("bundled", |s| s.as_str()).parse()?;
    let t = std::time::Instant::now();
    let mut wl = source.load()?;
    if let Some(w) = flag_value::<f64>(&flags, "--min-work-s=")? {
        sim::source::keep_long_apps(&mut wl, w);
    }
    if let Some(n) = flag_value::<usize>(&flags, "--max-apps=")? {
        sim::source::keep_first_apps(&mut wl, n);
    }
    if let Some(f) = flag_value::<f64>(&flags, "--stretch=")? {
        sim::source::stretch_time(&mut wl, f)?;
    }
    if let Some(f) = flag_value::<f64>(&flags, "--capacity-scale=")? {
        sim::source::scale_capacity(&mut wl, f)?;
    }
    let load_s = t.elapsed().as_secs_f64();
    let comps: usize = wl.apps.iter().map(|a| a.components.len()).sum();
    eprintln!(
        "loaded {}: {} hosts, {} apps, {} components in {load_s:.2} s",
        wl.name,
        wl.hosts.len(),
        wl.apps.len(),
        comps
    );
    let mut cfg = match std::env::var("SIM_CONFIG") {
        Ok(path) => SimConfig::load(std::path::Path::new(&path))?,
        Err(_) => SimConfig::default(),
    };
    if let Some(p) = pos.get(1) {
        cfg.shaper.policy = shaper::Policy::from_str(p)?;
    }
    if let Some(f) = pos.get(2) {
        if f.as_str() == "oracle" {
            cfg.forecaster_source = ForecasterSource::Oracle;
        } else {
            cfg.forecaster.kind = forecaster::config::ModelKind::from_str(f)?;
        }
    }
    if let Some(k) = pos.get(3) {
        cfg.shaper.k1 = k.parse()?;
    }
    if let Some(k) = pos.get(4) {
        cfg.shaper.k2 = k.parse()?;
    }
    cfg.parallel_forecasts = !flags.iter().any(|f| f.as_str() == "--serial");
    let with_baseline = !flags.iter().any(|f| f.as_str() == "--no-baseline");
    let verbose = flags.iter().any(|f| f.as_str() == "--progress");
    let cb = |p: sim::Progress| {
        if verbose {
            eprintln!(
                "t={:.0}s apps done {}/{}",
                p.now_s, p.apps_done, p.apps_total
            );
        }
    };
    let (run, _) = sim::replay(&wl, &cfg, with_baseline, Some(&cb))?;
    println!("{}", serde_json::to_string_pretty(&run.summary)?);
    Ok(())
}

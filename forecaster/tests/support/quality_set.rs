//! The fixed set of real series the quality figures are pooled over
//! (shared by `tests/forecast_quality.rs` and `forecaster/examples/quality.rs`).
//!
//! From `../shared/data`, the first `max_points` samples of:
//! * Bitbrains 2013-7 VMs 1..10: `CPU usage [MHZ]` and `Memory usage [KB]` (20 series);
//! * Google 2019 job 113, the 5 instance files: the first instance of each,
//!   `avg_cpu_usage` and `avg_memory_usage` (10 series);
//! * GCD_VMs.tar.gz: members 0, 160, 320, ..., 1440 in archive order, `cpu`
//!   and `mem` (20 series);
//! * the Google 2011 derived job 6176858948 series: `meanCPUUsage` and
//!   `canonical_memory_usage` (2 series).
//!
//! 52 series in all.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `<workspace>/../shared/data` when it exists.
pub fn shared_data(workspace_root: &Path) -> Option<PathBuf> {
    let p = workspace_root.join("../shared/data");
    p.is_dir().then_some(p)
}

fn load(path: &Path, column: &str) -> Result<Vec<datasets::series::NamedSeries>, String> {
    datasets::series::load_series(path, Some(column))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Loads the quality set (see the module docs).
pub fn quality_series(data: &Path, max_points: usize) -> Result<Vec<(String, Vec<f64>)>, String> {
    let mut out: Vec<(String, Vec<f64>)> = Vec::new();
    let mut push = |name: String, mut v: Vec<f64>| {
        v.truncate(max_points);
        out.push((name, v));
    };
    for vm in 1..=10 {
        let p = data.join(format!("bitbrains-rnd/2013-7/{vm}.csv"));
        for col in ["CPU usage [MHZ]", "Memory usage [KB]"] {
            let s = load(&p, col)?;
            let first = s
                .into_iter()
                .next()
                .ok_or_else(|| format!("{}: no series", p.display()))?;
            push(format!("bitbrains/{vm}:{col}"), first.values);
        }
    }
    let g19 = data.join("google-2019/instance_usage_job113");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&g19)
        .map_err(|e| format!("{}: {e}", g19.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    for p in &files {
        for col in ["avg_cpu_usage", "avg_memory_usage"] {
            let s = load(p, col)?;
            let first = s
                .into_iter()
                .next()
                .ok_or_else(|| format!("{}: no series", p.display()))?;
            push(format!("google2019/{}", first.name), first.values);
        }
    }
    let tar = data.join("google-2011/derived/GCD_VMs.tar.gz");
    for col in ["cpu", "mem"] {
        let s = load(&tar, col)?;
        for (i, m) in s.into_iter().enumerate() {
            if i % 160 == 0 {
                push(format!("gcd/{}", m.name), m.values);
            }
        }
    }
    let derived = data.join("google-2011/derived/data_resource_usage_5Minutes_6176858948.csv");
    for col in ["meanCPUUsage", "canonical_memory_usage"] {
        let s = load(&derived, col)?;
        let first = s
            .into_iter()
            .next()
            .ok_or_else(|| format!("{}: no series", derived.display()))?;
        push(format!("google2011-derived:{col}"), first.values);
    }
    Ok(out)
}

/// A held-out set for checking that the calibration defaults (chosen on
/// [`quality_series`]) generalise: GCD_VMs members 80, 240, ..., 1520 (CPU
/// and memory, 20 series), the Google 2011 derived `max_mem_usage` and
/// `AssignMem`, and samples 300..600 of Bitbrains VMs 1..10 memory.
pub fn holdout_series(data: &Path, max_points: usize) -> Result<Vec<(String, Vec<f64>)>, String> {
    let mut out: Vec<(String, Vec<f64>)> = Vec::new();
    let tar = data.join("google-2011/derived/GCD_VMs.tar.gz");
    for col in ["cpu", "mem"] {
        for (i, m) in load(&tar, col)?.into_iter().enumerate() {
            if i % 160 == 80 {
                let mut v = m.values;
                v.truncate(max_points);
                out.push((format!("gcd/{}", m.name), v));
            }
        }
    }
    let derived = data.join("google-2011/derived/data_resource_usage_5Minutes_6176858948.csv");
    for col in ["max_mem_usage", "AssignMem"] {
        let s = load(&derived, col)?;
        let first = s
            .into_iter()
            .next()
            .ok_or_else(|| format!("{}: no series", derived.display()))?;
        let mut v = first.values;
        v.truncate(max_points);
        out.push((format!("google2011-derived:{col}"), v));
    }
    for vm in 1..=10 {
        let p = data.join(format!("bitbrains-rnd/2013-7/{vm}.csv"));
        let s = load(&p, "Memory usage [KB]")?;
        let first = s
            .into_iter()
            .next()
            .ok_or_else(|| format!("{}: no series", p.display()))?;
        let v: Vec<f64> = first
            .values
            .into_iter()
            .skip(300)
            .take(max_points)
            .collect();
        out.push((format!("bitbrains/{vm}:mem[300..]"), v));
    }
    Ok(out)
}

//! Replays the Bitbrains Rnd VMs (real units: KB of memory, MHz of CPU,
//! 5-minute samples over a month) through the faithful VPA recommender,
//! one VM = one workload, and reports how often usage exceeds the target
//! in force and how much the target reserves.
//!
//! ```sh
//! cargo run --release -p forecaster --example vpa_replay [-- DIR]
//! ```
//! DIR defaults to `../shared/data/bitbrains-rnd/2013-7`. The first day of
//! every VM is warm-up (not scored).

use forecaster::vpa::{VpaAggregate, VpaRecommenderConfig};

const WARMUP_S: f64 = 86_400.0;

struct Sample {
    t_s: f64,
    cores: f64,
    mem_bytes: f64,
    mem_capacity_bytes: f64,
}

fn read_vm(path: &std::path::Path) -> Result<Vec<Sample>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let f: Vec<f64> = line
            .split(';')
            .map(|x| x.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        if f.len() < 7 {
            return Err(format!("{}:{}: {} columns", path.display(), i + 1, f.len()));
        }
        // cores used = usage MHz / capacity MHz * cores
        let cores = if f[2] > 0.0 { f[3] / f[2] * f[1] } else { 0.0 };
        out.push(Sample {
            t_s: f[0],
            cores,
            mem_bytes: f[6] * 1024.0,
            mem_capacity_bytes: f[5] * 1024.0,
        });
    }
    Ok(out)
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../shared/data/bitbrains-rnd/2013-7")
        });
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("skipped: {} not found", dir.display());
        return;
    };
    let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    let cfg = VpaRecommenderConfig::default();
    let (mut scored, mut mem_over, mut cpu_over) = (0usize, 0usize, 0usize);
    let (mut days, mut days_over) = (0usize, 0usize);
    let (mut target_sum, mut usage_sum, mut cap_sum) = (0.0, 0.0, 0.0);
    let mut vms = 0;
    let started = std::time::Instant::now();
    for path in &files {
        let samples = match read_vm(path) {
            Ok(s) if !s.is_empty() => s,
            Ok(_) => continue,
            Err(e) => {
                eprintln!("skipping {e}");
                continue;
            }
        };
        vms += 1;
        let mut vpa = VpaAggregate::new(cfg.clone()).expect("default config is valid");
        let t0 = samples[0].t_s;
        let mut day_over = std::collections::BTreeMap::<i64, bool>::new();
        for s in &samples {
            if s.t_s - t0 >= WARMUP_S {
                let r = vpa.recommend();
                scored += 1;
                mem_over += usize::from(s.mem_bytes > r.mem.target);
                cpu_over += usize::from(s.cores > r.cpu.target);
                target_sum += r.mem.target;
                usage_sum += s.mem_bytes;
                cap_sum += s.mem_capacity_bytes;
                let e = day_over
                    .entry(((s.t_s - t0) / 86_400.0) as i64)
                    .or_default();
                *e |= s.mem_bytes > r.mem.target;
            }
            let _ = vpa.add_cpu_sample(0, s.t_s, s.cores, 0.0);
            let _ = vpa.add_mem_sample(0, s.t_s, s.mem_bytes);
        }
        days += day_over.len();
        days_over += day_over.values().filter(|v| **v).count();
    }
    let pct = |a: usize, b: usize| 100.0 * a as f64 / b.max(1) as f64;
    println!(
        "faithful VPA on {vms} Bitbrains VMs ({}), {scored} scored 5-min samples",
        dir.display()
    );
    println!(
        "  memory above target: {:.2}% of samples, {:.1}% of VM-days",
        pct(mem_over, scored),
        pct(days_over, days)
    );
    println!(
        "  cpu above target:    {:.2}% of samples",
        pct(cpu_over, scored)
    );
    println!(
        "  memory target / usage: {:.2}x; target / provisioned: {:.2}x",
        target_sum / usage_sum.max(1.0),
        target_sum / cap_sum.max(1.0)
    );
    println!("  wall: {:.2} s", started.elapsed().as_secs_f64());
}

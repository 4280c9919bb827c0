//! Regenerates the real-data slices shipped in `data/` from `../shared/data`:
//!
//! - `data/google-2011-slice/{task_events,job_events,machine_events}/…csv.gz`:
//!   every row of Google 2011 task_events part 0 for the tasks whose first
//!   placement is on one of N machines (default 80, chosen by a seeded hash
//!   among the machines present at trace start), the job_events rows of
//!   their jobs, and the machine_events rows of those machines. Rows are
//!   copied byte for byte.
//! - `data/usage-pool.txt.gz`: the usage-series pool (CPU + memory shapes
//!   from GCD_VMs, Bitbrains, Google 2019 instances, the Google 2011 derived
//!   job series and Alibaba containers) and the usage/request ratio
//!   quantiles measured on the task_usage sample joined with task_events,
//!   with the job-level coherence of those ratios
//!   (`datasets::coherence`, `datasets::pool::JobCoherence`).
//! - `data/google-2019-slice/<job>/<task>.csv.gz`: rows of 5 Google 2019
//!   instance_usage task files (header + rows copied byte for byte): tasks
//!   4 and 78 of job 113812204462 between 1,337,000 s and 1,350,000 s (two
//!   in-place memory-limit changes; task 4 starts inside the window) and
//!   the first 60 rows of tasks 0, 3 and 4 of job 380263806889.
//!
//! Usage: `cargo run --release -p datasets --example make_bundle -- [SHARED_DATA] [OUT_DATA] [N_MACHINES]`

use datasets::coherence::sample_ratios;
use datasets::google2011::reader::{
    MachineEvent, TableReader, TaskEvent, TaskEventType, TaskUsage,
};
use datasets::pool::{load_pool, JobCoherence, PoolSeries, RequestRatios, UsagePool};
use datasets::series::load_series;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn gz_writer(path: &Path) -> Res<flate2::write::GzEncoder<std::fs::File>> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    Ok(flate2::write::GzEncoder::new(
        std::fs::File::create(path)?,
        flate2::Compression::best(),
    ))
}

fn fields(line: &str) -> Vec<&str> {
    line.split(',').collect()
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let shared = PathBuf::from(args.get(1).map_or("../shared/data", String::as_str));
    let out = PathBuf::from(args.get(2).map_or("data", String::as_str));
    let n_machines: usize = args.get(3).map_or(Ok(80), |s| s.parse())?;
    let g = shared.join("google-2011");
    let te = g.join("task_events/part-00000-of-00500.csv.gz");
    let je = g.join("job_events/part-00000-of-00500.csv.gz");
    let me = g.join("machine_events/part-00000-of-00001.csv.gz");

    // Machines present at trace start (ADD at time 0 with a capacity).
    let mut at_start: Vec<u64> = Vec::new();
    for ev in TableReader::<MachineEvent>::open(&me, false)? {
        let ev = ev?;
        if ev.time_us == 0 && ev.cpus.is_some() && ev.memory.is_some() {
            at_start.push(ev.machine_id);
        }
    }
    at_start.sort_by_key(|&m| (mix64(m ^ 2011), m));
    at_start.dedup();
    let chosen: HashSet<u64> = at_start.into_iter().take(n_machines).collect();

    // Tasks whose first SCHEDULE is on a chosen machine.
    let mut first_machine: HashMap<(u64, u64), u64> = HashMap::new();
    let mut requests: HashMap<(u64, u64), (f64, f64)> = HashMap::new();
    for ev in TableReader::<TaskEvent>::open(&te, false)? {
        let ev = ev?;
        let key = (ev.job_id, ev.task_index);
        if ev.event_type == TaskEventType::Schedule {
            if let Some(m) = ev.machine_id {
                first_machine.entry(key).or_insert(m);
            }
        }
        if let (Some(c), Some(m)) = (ev.cpu_request, ev.mem_request) {
            requests.insert(key, (c, m));
        }
    }
    let kept: HashSet<(u64, u64)> = first_machine
        .iter()
        .filter(|(_, m)| chosen.contains(m))
        .map(|(k, _)| *k)
        .collect();
    let jobs: HashSet<u64> = kept.iter().map(|k| k.0).collect();

    let slice = out.join("google-2011-slice");
    let copy = |src: &Path, dst: PathBuf, keep: &dyn Fn(&[&str]) -> bool| -> Res<usize> {
        let r = datasets::io::open(src)?;
        let mut w = gz_writer(&dst)?;
        let mut n = 0;
        for line in r.lines() {
            let line = line?;
            if keep(&fields(&line)) {
                writeln!(w, "{line}")?;
                n += 1;
            }
        }
        w.finish()?;
        Ok(n)
    };
    let n_te = copy(
        &te,
        slice.join("task_events/part-00000-of-00500.csv.gz"),
        &|f| {
            f.len() > 3
                && matches!((f[2].parse::<u64>(), f[3].parse::<u64>()), (Ok(j), Ok(t)) if kept.contains(&(j, t)))
        },
    )?;
    let n_je = copy(
        &je,
        slice.join("job_events/part-00000-of-00500.csv.gz"),
        &|f| f.len() > 2 && f[2].parse::<u64>().is_ok_and(|j| jobs.contains(&j)),
    )?;
    let n_me = copy(
        &me,
        slice.join("machine_events/part-00000-of-00001.csv.gz"),
        &|f| f.len() > 1 && f[1].parse::<u64>().is_ok_and(|m| chosen.contains(&m)),
    )?;
    println!("slice: {} machines, {} tasks, {} jobs; rows: task_events {n_te}, job_events {n_je}, machine_events {n_me}", chosen.len(), kept.len(), jobs.len());

    // Usage/request ratios from the task_usage sample.
    let mut cpu_r = Vec::new();
    let mut mem_r = Vec::new();
    for u in TableReader::<TaskUsage>::open(
        &g.join("task_usage/part-00000-of-00500.first10000rows.with-header.csv"),
        false,
    )? {
        let u = u?;
        if let (Some(&(cr, mr)), Some(c), Some(m)) = (
            requests.get(&(u.job_id, u.task_index)),
            u.cpu_rate,
            u.canonical_memory,
        ) {
            if cr > 0.0 && mr > 0.0 {
                cpu_r.push(c / cr);
                mem_r.push(m / mr);
            }
        }
    }
    let quantiles = |mut v: Vec<f64>| -> Vec<f64> {
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return v;
        }
        (0..=200)
            .map(|i| v[((i as f64 / 200.0) * (v.len() - 1) as f64).round() as usize])
            .collect()
    };
    println!("ratio samples: {}", cpu_r.len());
    let tu = g.join("task_usage/part-00000-of-00500.first10000rows.with-header.csv");
    let samples = sample_ratios(&[te.as_path()], &[tu.as_path()], false)?;
    let job = JobCoherence::from_samples(&samples, 200).ok_or("no job coherence measurable")?;
    println!(
        "job coherence: within-job share of var log(CPU ratio) {:.4}, of var log(peak memory ratio) {:.4}",
        job.measured_within_share_cpu, job.measured_within_share_mem_peak
    );
    let ratios = RequestRatios {
        cpu: quantiles(cpu_r),
        mem: quantiles(mem_r),
        job: Some(job),
    };

    // Pool: all sources except the big GCD archive, plus every 8th GCD VM.
    let mut paths: Vec<PathBuf> = Vec::new();
    for i in 1..=10 {
        paths.push(shared.join(format!("bitbrains-rnd/2013-7/{i}.csv")));
    }
    let mut g19: Vec<PathBuf> =
        std::fs::read_dir(shared.join("google-2019/instance_usage_job113"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
    g19.sort();
    paths.extend(g19);
    paths.push(g.join("derived/data_resource_usage_5Minutes_6176858948.csv"));
    paths.push(shared.join("alibaba-2018/container_usage.sample10000.csv"));
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let mut pool: UsagePool = load_pool(&refs, ratios, 100)?;
    let gcd = g.join("derived/GCD_VMs.tar.gz");
    let cpu = load_series(&gcd, Some("cpu"))?;
    let mem = load_series(&gcd, Some("mem"))?;
    for (i, (c, m)) in cpu.iter().zip(&mem).enumerate() {
        if i % 8 == 0 {
            let name = c.name.trim_end_matches(":cpu").to_string();
            if let Some(p) = PoolSeries::from_raw(name, 300.0, &c.values, &m.values) {
                pool.series.push(p);
            }
        }
    }
    let mut w = gz_writer(&out.join("usage-pool.txt.gz"))?;
    pool.write(&mut w)?;
    w.finish()?;
    println!("pool: {} series", pool.series.len());

    // Google 2019 slice.
    let g19 = shared.join("google-2019/instance_usage");
    let slice19 = out.join("google-2019-slice");
    let pick: [(&str, &str, u64, u64, usize); 5] = [
        ("113812204462", "4-", 1_337_000, 1_350_000, usize::MAX),
        ("113812204462", "78-", 1_337_000, 1_350_000, usize::MAX),
        ("380263806889", "0-", 0, u64::MAX, 60),
        ("380263806889", "3-", 0, u64::MAX, 60),
        ("380263806889", "4-", 0, u64::MAX, 60),
    ];
    for (job, prefix, from_s, to_s, max_rows) in pick {
        let dir = g19.join(job);
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .collect();
        names.sort();
        let src = names
            .first()
            .ok_or_else(|| format!("{}: no {prefix}* file", dir.display()))?;
        let task = prefix.trim_end_matches('-');
        let r = datasets::io::open(src)?;
        let mut w = gz_writer(&slice19.join(job).join(format!("{task}.csv.gz")))?;
        let mut n = 0usize;
        for (i, line) in r.lines().enumerate() {
            let line = line?;
            if i == 0 {
                writeln!(w, "{line}")?;
                continue;
            }
            let t_s = fields(&line)
                .first()
                .and_then(|t| t.parse::<u64>().ok())
                .map_or(0, |t| t / 1_000_000);
            if t_s >= from_s && t_s <= to_s && n < max_rows {
                writeln!(w, "{line}")?;
                n += 1;
            }
        }
        w.finish()?;
        println!(
            "google-2019 slice: {job}/{task}: {n} rows from {}",
            src.display()
        );
    }
    Ok(())
}

//! Google clusterdata-2019 `instance_usage` rows as found in
//! `../shared/data/google-2019/instance_usage_job113/*.csv`: a BigQuery
//! export with a header of 40 flat columns (the nested CPU histogram
//! flattened into `p0_cpu_usage` … `p99_cpu_usage`). Time in µs; CPU and
//! memory in normalised units (NCU/NMU). Read with
//! [`TableReader<InstanceUsage>`](crate::google2011::reader::TableReader).
//!
//! Every usage and limit column (`avg_*`, `max_*`, `random_sample_cpu_usage`,
//! `assigned_memory`, `memory_limit`, `cpu_limit`) must be in [0,
//! [`MAX_NORMALISED`]]: a negative value or one above a thousand machines
//! (e.g. `1e300`, infinite once stored) is an error naming the file, the
//! line and the column, the shared rule of every reader
//! ([`crate::bounds::in_range`]). (A negative usage was read as 0 before;
//! the trace has none, so one is damage, not data.) The CPU-histogram
//! columns `p*_cpu_usage` are in [-1, [`MAX_NORMALISED`]]: the trace writes
//! -1 in all of them for a window without a histogram. A limit of 0 is
//! accepted: the workload floors requests at `min_request`.

use crate::google2011::reader::{
    opt_bounded, opt_f64, opt_i64, opt_in_range, opt_small, opt_string, opt_u64, req_u64, Table,
};
use serde::{Deserialize, Serialize};

/// The largest usage or limit accepted, in normalised units (a share of
/// the largest machine; the trace's are below 1): a thousand machines
/// (the shared bound, [`crate::bounds::MAX_NORMALISED`]).
pub use crate::bounds::MAX_NORMALISED;

/// An optional number in [0, [`MAX_NORMALISED`]].
fn opt_normalised(r: &csv::ByteRecord, i: usize, col: &str) -> Result<Option<f64>, String> {
    opt_bounded(r, i, col, MAX_NORMALISED)
}

/// Probabilities (in %) of the 19 CPU-usage percentile columns, in order.
pub const CPU_PERCENTILES: [u8; 19] = [
    0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99,
];

/// One 5-minute usage window of one instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceUsage {
    /// Window start, µs.
    pub time_us: u64,
    pub unique_id: Option<String>,
    pub collection_id: u64,
    pub instance_index: u64,
    pub priority: Option<u64>,
    pub scheduling_class: Option<u8>,
    pub machine_id: Option<u64>,
    pub alloc_collection_id: Option<u64>,
    /// -1 when the instance is not in an alloc set.
    pub alloc_instance_index: Option<i64>,
    pub collection_type: Option<u8>,
    pub avg_cpu_usage: Option<f64>,
    pub avg_memory_usage: Option<f64>,
    pub max_cpu_usage: Option<f64>,
    pub max_memory_usage: Option<f64>,
    pub random_sample_cpu_usage: Option<f64>,
    pub assigned_memory: Option<f64>,
    pub sample_rate: Option<f64>,
    /// CPU usage at the percentiles of [`CPU_PERCENTILES`].
    pub cpu_usage_percentiles: [Option<f64>; 19],
    pub memory_limit: Option<f64>,
    pub cpu_limit: Option<f64>,
    pub abstract_usage: Option<f64>,
    pub abstract_limit: Option<f64>,
}

impl Table for InstanceUsage {
    const NAME: &'static str = "instance_usage";
    const HEADER: Option<bool> = Some(true);
    const COLUMNS: &'static [&'static str] = &[
        "time",
        "unique_id",
        "collection_id",
        "instance_index",
        "priority",
        "scheduling_class",
        "machine_id",
        "alloc_collection_id",
        "alloc_instance_index",
        "collection_type",
        "avg_cpu_usage",
        "avg_memory_usage",
        "max_cpu_usage",
        "max_memory_usage",
        "random_sample_cpu_usage",
        "assigned_memory",
        "sample_rate",
        "p0_cpu_usage",
        "p10_cpu_usage",
        "p20_cpu_usage",
        "p30_cpu_usage",
        "p40_cpu_usage",
        "p50_cpu_usage",
        "p60_cpu_usage",
        "p70_cpu_usage",
        "p80_cpu_usage",
        "p90_cpu_usage",
        "p91_cpu_usage",
        "p92_cpu_usage",
        "p93_cpu_usage",
        "p94_cpu_usage",
        "p95_cpu_usage",
        "p96_cpu_usage",
        "p97_cpu_usage",
        "p98_cpu_usage",
        "p99_cpu_usage",
        "memory_limit",
        "cpu_limit",
        "abstract_usage",
        "abstract_limit",
    ];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        let mut pct = [None; 19];
        for (k, p) in pct.iter_mut().enumerate() {
            // -1: the window has no histogram
            *p = opt_in_range(r, 17 + k, Self::COLUMNS[17 + k], -1.0, MAX_NORMALISED)?;
        }
        Ok(InstanceUsage {
            time_us: req_u64(r, 0, "time")?,
            unique_id: opt_string(r, 1),
            collection_id: req_u64(r, 2, "collection_id")?,
            instance_index: req_u64(r, 3, "instance_index")?,
            priority: opt_u64(r, 4, "priority")?,
            scheduling_class: opt_small(r, 5, "scheduling_class")?,
            machine_id: opt_u64(r, 6, "machine_id")?,
            alloc_collection_id: opt_u64(r, 7, "alloc_collection_id")?,
            alloc_instance_index: opt_i64(r, 8, "alloc_instance_index")?,
            collection_type: opt_small(r, 9, "collection_type")?,
            avg_cpu_usage: opt_normalised(r, 10, "avg_cpu_usage")?,
            avg_memory_usage: opt_normalised(r, 11, "avg_memory_usage")?,
            max_cpu_usage: opt_normalised(r, 12, "max_cpu_usage")?,
            max_memory_usage: opt_normalised(r, 13, "max_memory_usage")?,
            random_sample_cpu_usage: opt_normalised(r, 14, "random_sample_cpu_usage")?,
            assigned_memory: opt_normalised(r, 15, "assigned_memory")?,
            sample_rate: opt_f64(r, 16, "sample_rate")?,
            cpu_usage_percentiles: pct,
            memory_limit: opt_normalised(r, 36, "memory_limit")?,
            cpu_limit: opt_normalised(r, 37, "cpu_limit")?,
            abstract_usage: opt_f64(r, 38, "abstract_usage")?,
            abstract_limit: opt_f64(r, 39, "abstract_limit")?,
        })
    }
}

// ---------------------------------------------------------------------------
// The Google 2019 per-task workload (`--workload google2019:DIR`).

use crate::workload::{
    AppSpec, Class, ComponentSpec, HostSpec, OomRestart, RequestChange, Resources, Shape,
    UsageSeries, Workload,
};
use crate::DatasetError;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;
/// Directory levels [`task_files`] descends below `DIR`.
const MAX_DEPTH: usize = 4;
/// Bytes of a file's first line read to recognise an instance_usage header.
const HEADER_LIMIT: u64 = 4096;

/// Configuration of [`build_workload`]. Every field has a documented default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Google2019Config {
    /// Capacity of a machine whose normalised capacity is 1.0 (NCU and NMU
    /// are normalised to the largest machine). Default 32 cores / 128 GiB,
    /// as for Google 2011.
    pub max_machine: Resources,
    /// Number of hosts. Default `None`: one host per distinct `machine_id`
    /// seen in the rows of the kept tasks.
    pub hosts: Option<usize>,
    /// Every host's capacity = `max_machine * host_capacity_scale`.
    /// Default 1.0.
    pub host_capacity_scale: f64,
    /// Trace time (µs) mapped to workload time 0. Default `None`: the
    /// earliest row of the kept tasks.
    pub origin_us: Option<u64>,
    /// Length of the usage grid step. Default 300 s (the trace's window);
    /// at least 60 s.
    pub interval_s: f64,
    /// A gap between two consecutive rows of a task longer than this ends
    /// a run: the task was down (every such gap in the shared sample comes
    /// with a machine change) and the next row starts a new run, replayed
    /// as another component of the same application submitted at its own
    /// time. Shorter gaps hold the last window's values. Default 3,600 s;
    /// at most 86,400 s.
    pub max_gap_s: f64,
    /// Floor on requests (limits can be 0). Default 0.01 cores / 16 MiB.
    pub min_request: Resources,
    /// Skip and count malformed rows instead of failing. Default false.
    pub lenient: bool,
    /// Workload name. Default `google-2019:<directory name>`.
    pub name: Option<String>,
}

impl Default for Google2019Config {
    fn default() -> Self {
        Google2019Config {
            max_machine: Resources::new(32.0, 128.0 * GIB),
            hosts: None,
            host_capacity_scale: 1.0,
            origin_us: None,
            interval_s: 300.0,
            max_gap_s: 3600.0,
            min_request: Resources::new(0.01, 16.0 * MIB),
            lenient: false,
            name: None,
        }
    }
}

impl Google2019Config {
    /// Checks every field; reports all problems at once.
    pub fn validate(&self) -> Result<(), DatasetError> {
        let mut e = tailor_core::ConfigErrors::new();
        let pos = |v: f64| v.is_finite() && v > 0.0;
        e.check(
            "max_machine",
            pos(self.max_machine.cpu_cores) && pos(self.max_machine.mem_bytes),
            || "must be positive and finite".to_string(),
        );
        e.range("host_capacity_scale", self.host_capacity_scale, 1e-6, 1e6);
        e.range("interval_s", self.interval_s, 60.0, 86_400.0);
        e.range(
            "max_gap_s",
            self.max_gap_s,
            self.interval_s.max(60.0),
            86_400.0,
        );
        e.check(
            "min_request",
            self.min_request.cpu_cores.is_finite()
                && self.min_request.cpu_cores >= 0.0
                && self.min_request.mem_bytes.is_finite()
                && self.min_request.mem_bytes >= 0.0,
            || "must be >= 0 and finite".to_string(),
        );
        e.range_opt("hosts", self.hosts, 1, 100_000);
        e.into_result().map_err(DatasetError::Config)
    }
}

/// What [`build_workload_from_files`] read, kept and dropped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Google2019Report {
    /// instance_usage files read.
    pub files: u64,
    /// `*.csv`/`*.csv.gz` files under the directory skipped because their
    /// header is not the 40-column instance_usage header.
    pub skipped_files: u64,
    pub rows: u64,
    /// Malformed rows skipped (lenient mode only).
    pub skipped_rows: u64,
    /// Rows without `avg_memory_usage` or `avg_cpu_usage` (left out).
    pub rows_without_usage: u64,
    /// Rows repeating a (task, time) already read (left out).
    pub duplicate_rows: u64,
    pub tasks: u64,
    /// Tasks without any `memory_limit`/`cpu_limit` (dropped).
    pub dropped_no_request: u64,
    /// Components = runs of tasks (a task down for more than `max_gap_s`
    /// has several).
    pub components: u64,
    pub apps: u64,
    pub request_changes: u64,
    /// Grid windows with no row (inside a run), filled with the previous
    /// window's values.
    pub filled_windows: u64,
    /// Windows whose in-window memory peak exceeds the request in force.
    pub windows_peak_over_request: u64,
    pub windows: u64,
    pub hosts: u64,
}

/// Every `*.csv` / `*.csv.gz` file under `dir` (descending at most 4
/// levels), sorted by path.
pub fn task_files(dir: &Path) -> Result<Vec<PathBuf>, DatasetError> {
    fn walk(d: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), DatasetError> {
        let rd = std::fs::read_dir(d).map_err(|e| DatasetError::io(d, e))?;
        for entry in rd {
            let entry = entry.map_err(|e| DatasetError::io(d, e))?;
            let p = entry.path();
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if p.is_dir() {
                if depth < MAX_DEPTH && !name.starts_with('.') {
                    walk(&p, depth + 1, out)?;
                }
            } else if p.is_file() && (name.ends_with(".csv") || name.ends_with(".csv.gz")) {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, 0, &mut out)?;
    out.sort();
    Ok(out)
}

/// Builds a workload from every instance_usage task CSV under `dir` (see
/// [`build_workload_from_files`] for the rules).
pub fn build_workload(dir: &Path, cfg: &Google2019Config) -> Result<Workload, DatasetError> {
    let files = task_files(dir)?;
    if files.is_empty() {
        return Err(DatasetError::format(dir, "no *.csv or *.csv.gz files"));
    }
    let mut cfg = cfg.clone();
    if cfg.name.is_none() {
        let base = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        cfg.name = Some(format!("google-2019:{base}"));
    }
    let (w, r) = build_workload_from_files(&files, &cfg).map_err(|e| match e {
        DatasetError::Empty(why) => DatasetError::Empty(format!("{}: {why}", dir.display())),
        e => e,
    })?;
    tracing::info!(
        files = r.files,
        skipped_files = r.skipped_files,
        rows = r.rows,
        skipped_rows = r.skipped_rows,
        rows_without_usage = r.rows_without_usage,
        duplicate_rows = r.duplicate_rows,
        tasks = r.tasks,
        dropped_no_request = r.dropped_no_request,
        components = r.components,
        apps = r.apps,
        request_changes = r.request_changes,
        filled_windows = r.filled_windows,
        windows_peak_over_request = r.windows_peak_over_request,
        windows = r.windows,
        hosts = r.hosts,
        "built Google 2019 workload"
    );
    Ok(w)
}

/// One usable row of a task.
#[derive(Clone, Copy, Debug)]
struct Row {
    time_us: u64,
    machine: Option<u64>,
    cpu: f64,
    mem: f64,
    mem_peak: f64,
    cpu_limit: Option<f64>,
    mem_limit: Option<f64>,
}

/// Builds a workload from Google 2019 instance_usage files (the
/// `../shared/data/google-2019/instance_usage/<job>/<task>-….csv` layout,
/// one task per file, 40-column header; files with another header are
/// skipped and counted):
///
/// - **Applications** = jobs (`collection_id`); priority = the highest row
///   priority; every component is core (these are latency-sensitive
///   services, scheduling class 3 in the sample). Arrival = the job's
///   earliest row (time minus the origin). An OOM-killed task restarts
///   alone and continues its usage where it was killed
///   ([`OomRestart::Component`]): Borg restarts a service's task, and the
///   service's load goes on.
/// - **Components** = runs of tasks (`collection_id`, `instance_index`;
///   rows of one task may come from several files). A task's rows, sorted
///   by time, form one run unless two consecutive rows are more than
///   `max_gap_s` apart: then the task was down and the next row starts a
///   new run. Each run is a component submitted `start_delay_s` = (its
///   first row - the job's arrival) after the application arrives.
/// - **Usage**: a regular grid of `interval_s` windows from the run's first
///   row; every row falls in the window `floor((time - first) /
///   interval_s)`. A window's CPU and memory = the mean of its rows'
///   `avg_cpu_usage`, `avg_memory_usage`; its memory peak = the max of their
///   `max_memory_usage` (the mean when empty); a window without rows holds
///   the previous window. Values times `max_machine`.
/// - **Work** = the run's length: windows x `interval_s`.
/// - **Request in force** = the last row's `cpu_limit`, `memory_limit` of
///   each window (a row without one keeps the previous), times
///   `max_machine`, floored at `min_request`. The first window's is the
///   request; every window whose request differs from the previous one's is
///   a [`RequestChange`] at `window x interval_s` seconds. A task with no
///   limit at all is dropped.
/// - **Hosts**: `hosts` hosts, default one per distinct `machine_id` seen,
///   each of capacity `max_machine * host_capacity_scale` (the sample has no
///   machine table; the machine a task ran on is not kept: the simulator
///   places components itself).
pub fn build_workload_from_files(
    files: &[PathBuf],
    cfg: &Google2019Config,
) -> Result<(Workload, Google2019Report), DatasetError> {
    cfg.validate()?;
    let mut report = Google2019Report::default();
    let mut tasks: BTreeMap<(u64, u64), Vec<Row>> = BTreeMap::new();
    let mut priority: BTreeMap<u64, u64> = BTreeMap::new();
    for path in files {
        let head = crate::io::first_line(path, HEADER_LIMIT)?;
        if !header_matches(&head) {
            tracing::warn!(path = %path.display(), "not a 40-column instance_usage file; skipped");
            report.skipped_files += 1;
            continue;
        }
        report.files += 1;
        let mut r = crate::TableReader::<InstanceUsage>::open(path, cfg.lenient)?;
        while let Some(u) = r.next_row()? {
            let (Some(cpu), Some(mem)) = (u.avg_cpu_usage, u.avg_memory_usage) else {
                report.rows_without_usage += 1;
                continue;
            };
            let key = (u.collection_id, u.instance_index);
            let p = priority.entry(u.collection_id).or_insert(0);
            *p = (*p).max(u.priority.unwrap_or(0));
            tasks.entry(key).or_default().push(Row {
                time_us: u.time_us,
                machine: u.machine_id,
                cpu,
                mem,
                mem_peak: u.max_memory_usage.unwrap_or(mem).max(mem),
                cpu_limit: u.cpu_limit,
                mem_limit: u.memory_limit,
            });
        }
        report.rows += r.rows();
        report.skipped_rows += r.skipped();
    }
    if report.files == 0 {
        return Err(DatasetError::Empty(
            "no Google 2019 instance_usage file (40-column header) found".into(),
        ));
    }
    report.tasks = tasks.len() as u64;
    // Sort, drop duplicate times and tasks without any limit.
    tasks.retain(|_, rows| {
        rows.sort_by_key(|r| r.time_us);
        let before = rows.len();
        rows.dedup_by_key(|r| r.time_us);
        report.duplicate_rows += (before - rows.len()) as u64;
        let has = rows.iter().any(|r| r.cpu_limit.is_some())
            && rows.iter().any(|r| r.mem_limit.is_some());
        if !has {
            report.dropped_no_request += 1;
        }
        has
    });
    let origin = match cfg.origin_us {
        Some(o) => o,
        None => tasks
            .values()
            .filter_map(|r| r.first().map(|r| r.time_us))
            .min()
            .unwrap_or(0),
    };
    let machines: BTreeSet<u64> = tasks
        .values()
        .flat_map(|rows| rows.iter().filter_map(|r| r.machine))
        .collect();

    // Runs per job: (start µs, component).
    let interval_us = (cfg.interval_s * 1e6) as u64;
    let max_gap_us = (cfg.max_gap_s * 1e6) as u64;
    let mut jobs: BTreeMap<u64, Vec<(u64, ComponentSpec)>> = BTreeMap::new();
    for (&(job, _task), rows) in &tasks {
        let mut start = 0;
        for i in 1..=rows.len() {
            if i == rows.len() || rows[i].time_us - rows[i - 1].time_us > max_gap_us {
                let run = &rows[start..i];
                start = i;
                if let Some(c) = run_component(run, interval_us, cfg, &mut report) {
                    jobs.entry(job).or_default().push((run[0].time_us, c));
                }
            }
        }
    }
    let mut apps = Vec::with_capacity(jobs.len());
    for (job, mut runs) in jobs {
        runs.sort_by_key(|r| r.0);
        let Some(&(first_us, _)) = runs.first() else {
            continue;
        };
        let components: Vec<ComponentSpec> = runs
            .into_iter()
            .map(|(t, mut c)| {
                c.start_delay_s = t.saturating_sub(first_us) as f64 / 1e6;
                c
            })
            .collect();
        report.components += components.len() as u64;
        apps.push(AppSpec {
            id: job,
            arrival_s: first_us.saturating_sub(origin) as f64 / 1e6,
            priority: i32::try_from(priority.get(&job).copied().unwrap_or(0)).unwrap_or(i32::MAX),
            components,
        });
    }
    apps.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.id.cmp(&b.id)));
    if apps.is_empty() {
        return Err(DatasetError::Empty(
            "no Google 2019 task with usage and limits".into(),
        ));
    }
    report.apps = apps.len() as u64;
    let n_hosts = cfg.hosts.unwrap_or(machines.len()).max(1);
    let cap = Resources::new(
        cfg.max_machine.cpu_cores * cfg.host_capacity_scale,
        cfg.max_machine.mem_bytes * cfg.host_capacity_scale,
    );
    report.hosts = n_hosts as u64;
    let name = cfg
        .name
        .clone()
        .unwrap_or_else(|| "google-2019".to_string());
    Ok((
        Workload {
            name,
            hosts: vec![HostSpec { capacity: cap }; n_hosts],
            apps,
        },
        report,
    ))
}

fn header_matches(line: &str) -> bool {
    let cols: Vec<&str> = line.trim_end().split(',').map(str::trim).collect();
    cols.as_slice() == InstanceUsage::COLUMNS
}

/// A grid window being filled: (CPU sum, memory sum, rows, peak max, last
/// CPU limit, last memory limit).
type Window = (f64, f64, u32, f64, Option<f64>, Option<f64>);

/// One run of a task (rows sorted by time, consecutive rows at most
/// `max_gap_s` apart) as a component; `None` when it has no limit at all.
fn run_component(
    run: &[Row],
    interval_us: u64,
    cfg: &Google2019Config,
    report: &mut Google2019Report,
) -> Option<ComponentSpec> {
    let first = run.first()?.time_us;
    let last = run.last()?.time_us;
    // Bounded: consecutive rows are at most max_gap_s (<= 1 day) apart and
    // interval_s >= 60 s, so the grid has at most rows x 1,441 windows.
    let n = usize::try_from((last - first) / interval_us.max(1)).ok()? + 1;
    // Per window: (cpu sum, mem sum, rows, peak max, cpu limit, mem limit).
    let mut win: Vec<Window> = vec![(0.0, 0.0, 0, 0.0, None, None); n];
    for r in run {
        let k = usize::try_from((r.time_us - first) / interval_us.max(1))
            .ok()?
            .min(n - 1);
        let w = &mut win[k];
        w.0 += r.cpu;
        w.1 += r.mem;
        w.2 += 1;
        w.3 = w.3.max(r.mem_peak);
        if r.cpu_limit.is_some() {
            w.4 = r.cpu_limit;
        }
        if r.mem_limit.is_some() {
            w.5 = r.mem_limit;
        }
    }
    // Limits: carry forward, and back-fill the windows before the first one.
    let first_cpu = run.iter().find_map(|r| r.cpu_limit)?;
    let first_mem = run.iter().find_map(|r| r.mem_limit)?;
    let mm = cfg.max_machine;
    let req_of = |c: f64, m: f64| {
        Resources::new(
            (c * mm.cpu_cores).max(cfg.min_request.cpu_cores),
            (m * mm.mem_bytes).max(cfg.min_request.mem_bytes),
        )
    };
    let mut cpu = Vec::with_capacity(n);
    let mut mem = Vec::with_capacity(n);
    let mut peak = Vec::with_capacity(n);
    let mut changes = Vec::new();
    let (mut lc, mut lm) = (first_cpu, first_mem);
    let mut prev = (0.0f32, 0.0f32, 0.0f32);
    let request = req_of(first_cpu, first_mem);
    let mut in_force = request;
    for (k, w) in win.iter().enumerate() {
        if w.2 > 0 {
            let rows = f64::from(w.2);
            prev = (
                (w.0 / rows) as f32,
                (w.1 / rows) as f32,
                w.3.max(w.1 / rows) as f32,
            );
        } else {
            report.filled_windows += 1;
        }
        cpu.push(prev.0);
        mem.push(prev.1);
        peak.push(prev.2);
        lc = w.4.unwrap_or(lc);
        lm = w.5.unwrap_or(lm);
        let req = req_of(lc, lm);
        if k > 0 && req != in_force {
            changes.push(RequestChange {
                at_elapsed_s: k as f64 * cfg.interval_s,
                request: req,
            });
            report.request_changes += 1;
        }
        in_force = req;
        report.windows += 1;
        if f64::from(prev.2) * mm.mem_bytes > req.mem_bytes {
            report.windows_peak_over_request += 1;
        }
    }
    let shape = |v: Vec<f32>, scale: f64| Shape {
        values: Arc::from(v),
        scale,
        offset: 0,
        bias: 0.0,
    };
    let mut c = ComponentSpec::new(
        Class::Core,
        request,
        n as f64 * cfg.interval_s,
        UsageSeries {
            interval_s: cfg.interval_s,
            cpu_cores: shape(cpu, mm.cpu_cores),
            mem_bytes: shape(mem, mm.mem_bytes),
            mem_peak_bytes: Some(shape(peak, mm.mem_bytes)),
        },
    );
    c.request_changes = changes;
    c.oom_restart = OomRestart::Component;
    Some(c)
}

#[cfg(test)]
mod workload_tests;

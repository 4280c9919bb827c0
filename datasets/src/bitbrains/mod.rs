//! Bitbrains GWA-T-12 per-VM files (`--workload bitbrains:PATH`): one file
//! per VM of a business-critical hosting cluster, a 300 s sample a row
//! with the VM's provisioned CPU and memory and its usage ([`VmSample`],
//! `rows.rs`). Unlike the lifecycle traces, the usage is the trace's own.
//!
//! # How the files become a [`Workload`] ([`build_workload`])
//!
//! `PATH` is one VM file or a directory: every `*.csv` / `*.csv.gz` file
//! directly in it with the Bitbrains header is read (other files are
//! skipped and counted). Times are Unix seconds; workload time 0 is the
//! earliest row of any file read.
//!
//! - **Applications**: one per VM file, priority 0, every component core;
//!   an OOM-killed run restarts alone and continues its usage where it was
//!   killed ([`OomRestart::Component`]: a VM's load comes from outside and
//!   goes on). Ids are sequential (from 0) in arrival order (ties: file
//!   name order).
//! - **Components** = runs of the VM. Rows are sorted by time; rows with a
//!   time already seen are dropped. Both are tolerated, not refused: the
//!   real files repeat times (`2013-7/20.csv` and `54.csv` hold 4,158 and
//!   6,236 rows repeating the time of the row before, nearly all
//!   identical copies), so refusing would refuse the trace. They are
//!   counted in the report (`out_of_order_rows`, `duplicate_rows`) and
//!   each file that has any gets a warning naming it, the counts and the
//!   first line of each. A row is *on* when its
//!   `CPU cores` and `Memory capacity provisioned` are > 0; the others
//!   (all zeros in the traces: the VM did not exist yet or was off) end a
//!   run, and so does a gap of more than `max_gap_s` between two on rows
//!   (the traces have two collection gaps of about 31 hours). Each run is
//!   a component submitted `start_delay_s` = (its first row - the VM's
//!   first on row) after the application arrives; arrival = the VM's first
//!   on row. A VM without an on row is skipped and counted.
//! - **Usage**: a regular grid of `interval_s` windows from the run's
//!   first row; every row falls in the window `floor((time - first) /
//!   interval_s)`. A window's memory = the mean of its rows' `Memory usage
//!   [KB]` x 1024 bytes; its CPU = the mean of `CPU usage [MHZ]` /
//!   `CPU capacity provisioned [MHZ]` x `CPU cores` (the `CPU usage [%]`
//!   column when the capacity is 0); a window without rows holds the
//!   previous window. The files have no in-interval peak, so the memory
//!   an OOM killer sees is the 5-minute mean (kills are undercounted
//!   against a trace with peaks). A VM cannot use more than it is given:
//!   usage above the request in force is cut to it (counted per window).
//! - **Work** = the run's length: windows x `interval_s`.
//! - **Request in force** = the last row's (`CPU cores`, `Memory capacity
//!   provisioned [KB]` x 1024) of each window, floored at `min_request`.
//!   The first window's is the request; every window whose request differs
//!   from the previous one's is a [`RequestChange`].
//! - **Hosts**: the traces name none. Homogeneous hosts
//!   ([`crate::hosts::homogeneous_hosts`]): `host_capacity`, default 8 x
//!   the largest request; `hosts`, default as many as hold the peak
//!   concurrent request (largest request of each run over its lifetime)
//!   x `headroom`.

mod rows;

pub use rows::VmSample;

use crate::google2011::reader::Table;
use crate::hosts::HostSizing;
use crate::workload::{
    AppSpec, Class, ComponentSpec, OomRestart, RequestChange, Resources, Shape, UsageSeries,
    Workload,
};
use crate::DatasetError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;
/// Most usage windows a workload may have (all runs of all VMs: 190
/// VM-years of 300 s windows).
pub const MAX_WINDOWS: u64 = 20_000_000;
/// Bytes of the header line read to recognise a VM file.
const HEADER_LIMIT: u64 = 4096;

/// Configuration of [`build_workload`]. Every field has a documented default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BitbrainsConfig {
    /// Usage grid step, s, in [60, 86,400]. Default 300 (the traces' step).
    pub interval_s: f64,
    /// Two on rows further apart than this end a run, s, in
    /// [`interval_s`, 86,400]. Default 3,600.
    pub max_gap_s: f64,
    /// Floor on requests. Default 0.01 cores / 16 MiB.
    pub min_request: Resources,
    /// Number of hosts, in [1, 100,000]. Default `None`: the peak
    /// concurrent request x `headroom`.
    pub hosts: Option<usize>,
    /// Capacity of every host (cores in (0, 1e6], bytes in (0, 2^60]).
    /// Default `None`: 8 x the largest request.
    pub host_capacity: Option<Resources>,
    /// The computed host count holds the peak concurrent request times
    /// this, in [1, 100]. Default 1.25.
    pub headroom: f64,
    /// Skip and count malformed rows instead of failing. Default false.
    pub lenient: bool,
    /// Workload name. Default `bitbrains:<file or directory name>`.
    pub name: Option<String>,
}

impl Default for BitbrainsConfig {
    fn default() -> Self {
        BitbrainsConfig {
            interval_s: 300.0,
            max_gap_s: 3600.0,
            min_request: Resources::new(0.01, 16.0 * MIB),
            hosts: None,
            host_capacity: None,
            headroom: 1.25,
            lenient: false,
            name: None,
        }
    }
}

impl BitbrainsConfig {
    /// The host keys.
    fn sizing(&self) -> HostSizing {
        HostSizing {
            capacity: self.host_capacity,
            hosts: self.hosts,
            headroom: self.headroom,
        }
    }

    /// Checks every field; reports all problems at once. Ranges:
    /// `interval_s` [60, 86,400]; `max_gap_s` [`interval_s`, 86,400]; the
    /// host keys as [`HostSizing::check`].
    pub fn validate(&self) -> Result<(), DatasetError> {
        let mut e = tailor_core::ConfigErrors::new();
        e.range("interval_s", self.interval_s, 60.0, 86_400.0);
        e.range(
            "max_gap_s",
            self.max_gap_s,
            self.interval_s.clamp(60.0, 86_400.0),
            86_400.0,
        );
        self.sizing().check(self.min_request, &mut e);
        e.into_result().map_err(DatasetError::Config)
    }
}

/// What [`build_workload_with_report`] read, kept and dropped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BitbrainsReport {
    /// VM files read.
    pub files: u64,
    /// CSV files of a directory without the Bitbrains header (skipped).
    pub skipped_files: u64,
    /// Rows read.
    pub rows: u64,
    /// Malformed rows skipped (lenient mode only).
    pub skipped_rows: u64,
    /// Rows whose time an earlier row of the file already had (dropped).
    pub duplicate_rows: u64,
    /// Rows earlier than the row before them in the file (sorted).
    pub out_of_order_rows: u64,
    /// Rows with 0 cores or 0 provisioned memory (the VM off or absent).
    pub off_rows: u64,
    /// VM files without an on row (skipped).
    pub vms_never_on: u64,
    pub apps: u64,
    /// Runs (components).
    pub components: u64,
    /// Grid windows of all runs.
    pub windows: u64,
    /// Windows without a row (holding the previous one).
    pub filled_windows: u64,
    /// Windows whose memory / CPU usage was above the request in force
    /// (cut to it).
    pub clamped_mem_windows: u64,
    pub clamped_cpu_windows: u64,
    pub request_changes: u64,
    pub hosts: u64,
    /// Unix time of workload time 0, s.
    pub origin_unix_s: u64,
    /// Last on row, s after the origin.
    pub trace_end_s: f64,
    /// Peak concurrent summed request.
    pub peak_request_cpu_cores: f64,
    pub peak_request_mem_gib: f64,
    /// Summed capacity of the hosts.
    pub capacity_cpu_cores: f64,
    pub capacity_mem_gib: f64,
}

/// Builds a workload from the VM files at `path` (see the module docs for
/// every rule) and logs what it read.
pub fn build_workload(path: &Path, cfg: &BitbrainsConfig) -> Result<Workload, DatasetError> {
    let (w, r) = build_workload_with_report(path, cfg)?;
    tracing::info!(
        files = r.files,
        skipped_files = r.skipped_files,
        rows = r.rows,
        skipped_rows = r.skipped_rows,
        duplicate_rows = r.duplicate_rows,
        out_of_order_rows = r.out_of_order_rows,
        off_rows = r.off_rows,
        vms_never_on = r.vms_never_on,
        apps = r.apps,
        components = r.components,
        windows = r.windows,
        filled_windows = r.filled_windows,
        clamped_mem_windows = r.clamped_mem_windows,
        clamped_cpu_windows = r.clamped_cpu_windows,
        request_changes = r.request_changes,
        hosts = r.hosts,
        trace_end_s = r.trace_end_s,
        peak_request_mem_gib = r.peak_request_mem_gib,
        capacity_mem_gib = r.capacity_mem_gib,
        "built Bitbrains workload"
    );
    Ok(w)
}

/// Whether `line` is the Bitbrains header (fields split on `;`, trimmed).
fn is_vm_header(line: &str) -> bool {
    let cols: Vec<&str> = line.split(';').map(str::trim).collect();
    cols.as_slice() == VmSample::COLUMNS
}

/// The VM files at `path`, sorted.
fn vm_files(path: &Path, report: &mut BitbrainsReport) -> Result<Vec<PathBuf>, DatasetError> {
    let expected = || {
        format!(
            "expected the Bitbrains header {}",
            VmSample::COLUMNS.join(";")
        )
    };
    if !path.is_dir() {
        if !is_vm_header(&crate::io::first_line(path, HEADER_LIMIT)?) {
            return Err(DatasetError::format(
                path,
                format!("not a Bitbrains VM file: {}", expected()),
            ));
        }
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for f in crate::google2011::reader::table_files(path)? {
        if is_vm_header(&crate::io::first_line(&f, HEADER_LIMIT)?) {
            files.push(f);
        } else {
            tracing::warn!(path = %f.display(), "not a Bitbrains VM file; skipped");
            report.skipped_files += 1;
        }
    }
    if files.is_empty() {
        return Err(DatasetError::format(
            path,
            format!("no Bitbrains VM file (*.csv): {}", expected()),
        ));
    }
    Ok(files)
}

/// One on row, in the workload's units.
#[derive(Clone, Copy, Debug)]
struct Row {
    time_s: u64,
    request: Resources,
    usage: Resources,
}

/// Reads one VM file into its runs of on rows (sorted, deduplicated).
fn read_runs(
    path: &Path,
    cfg: &BitbrainsConfig,
    report: &mut BitbrainsReport,
) -> Result<Vec<Vec<Row>>, DatasetError> {
    let mut r = crate::TableReader::<VmSample>::open(path, cfg.lenient)?;
    // (time, on row or None when off)
    let mut rows: Vec<(u64, Option<Row>)> = Vec::new();
    // times seen; (count, first line) of rows out of order and repeated
    let mut times = std::collections::HashSet::new();
    let (mut back, mut dup) = ((0u64, 0u64), (0u64, 0u64));
    while let Some(s) = r.next_row()? {
        let first = |c: &mut (u64, u64), line: u64| {
            if c.0 == 0 {
                c.1 = line;
            }
            c.0 += 1;
        };
        if rows.last().is_some_and(|l| s.time_s < l.0) {
            first(&mut back, r.line());
        }
        if !times.insert(s.time_s) {
            first(&mut dup, r.line());
        }
        let on = s.cpu_cores > 0.0 && s.mem_capacity_kb > 0.0;
        let row = on.then(|| {
            let cpu_used = if s.cpu_capacity_mhz > 0.0 {
                s.cpu_usage_mhz / s.cpu_capacity_mhz * s.cpu_cores
            } else {
                s.cpu_usage_percent / 100.0 * s.cpu_cores
            };
            Row {
                time_s: s.time_s,
                request: Resources::new(
                    s.cpu_cores.max(cfg.min_request.cpu_cores),
                    (s.mem_capacity_kb * 1024.0).max(cfg.min_request.mem_bytes),
                ),
                usage: Resources::new(cpu_used.max(0.0), (s.mem_usage_kb * 1024.0).max(0.0)),
            }
        });
        rows.push((s.time_s, row));
    }
    report.rows += r.rows();
    report.skipped_rows += r.skipped();
    let mut what = Vec::new();
    if back.0 > 0 {
        what.push(format!(
            "{} rows earlier than the row before them (first at line {}), sorted by time",
            back.0, back.1
        ));
    }
    if dup.0 > 0 {
        what.push(format!(
            "{} rows repeating a time already seen (first at line {}), dropped",
            dup.0, dup.1
        ));
    }
    if !what.is_empty() {
        tracing::warn!("{}: {}", path.display(), what.join("; "));
    }
    report.out_of_order_rows += back.0;
    rows.sort_by_key(|r| r.0);
    let before = rows.len();
    rows.dedup_by_key(|r| r.0);
    report.duplicate_rows += (before - rows.len()) as u64;
    let max_gap = cfg.max_gap_s as u64;
    let mut runs: Vec<Vec<Row>> = Vec::new();
    let mut run: Vec<Row> = Vec::new();
    for (_, row) in rows {
        match row {
            None => {
                report.off_rows += 1;
                if !run.is_empty() {
                    runs.push(std::mem::take(&mut run));
                }
            }
            Some(row) => {
                if run.last().is_some_and(|l| row.time_s - l.time_s > max_gap) {
                    runs.push(std::mem::take(&mut run));
                }
                run.push(row);
            }
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    Ok(runs)
}

/// One run as a component (start delay set by the caller), with the
/// largest request of its life. More than [`MAX_WINDOWS`] windows over the
/// workload is an error naming `path`.
fn run_component(
    path: &Path,
    run: &[Row],
    cfg: &BitbrainsConfig,
    report: &mut BitbrainsReport,
) -> Result<(ComponentSpec, Resources), DatasetError> {
    let first = run[0].time_s;
    let interval = cfg.interval_s;
    let window = |t: u64| ((t - first) as f64 / interval) as usize;
    // Consecutive rows are at most max_gap_s (<= 1 day) apart and
    // interval_s >= 60 s, so a run has at most rows x 1,441 windows; the
    // workload's total is capped as well.
    let n = window(run[run.len() - 1].time_s) + 1;
    if report.windows.saturating_add(n as u64) > MAX_WINDOWS {
        return Err(DatasetError::format(
            path,
            format!(
                "more than {MAX_WINDOWS} usage windows of {interval} s in all (windows without rows within a run are filled): use a longer interval_s or fewer files"
            ),
        ));
    }
    // Per window: (usage sum, rows, last request).
    let mut win: Vec<(Resources, u32, Option<Resources>)> = vec![(Resources::ZERO, 0, None); n];
    for r in run {
        let w = &mut win[window(r.time_s).min(n - 1)];
        w.0 = w.0.add(&r.usage);
        w.1 += 1;
        w.2 = Some(r.request);
    }
    // window 0 holds the run's first row: its last row's request
    let request = win[0].2.unwrap_or(run[0].request);
    let (mut cpu, mut mem) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut changes = Vec::new();
    let (mut in_force, mut largest) = (request, request);
    let mut usage = Resources::ZERO;
    for (k, w) in win.iter().enumerate() {
        if let Some(req) = w.2 {
            if k > 0 && req != in_force {
                changes.push(RequestChange {
                    at_elapsed_s: k as f64 * interval,
                    request: req,
                });
                report.request_changes += 1;
            }
            in_force = req;
            largest = Resources::from_fn(|r| largest.get(r).max(req.get(r)));
        }
        if w.1 > 0 {
            let rows = f64::from(w.1);
            usage = Resources::new(w.0.cpu_cores / rows, w.0.mem_bytes / rows);
        } else {
            report.filled_windows += 1;
        }
        if usage.mem_bytes > in_force.mem_bytes {
            report.clamped_mem_windows += 1;
        }
        if usage.cpu_cores > in_force.cpu_cores {
            report.clamped_cpu_windows += 1;
        }
        cpu.push(usage.cpu_cores.min(in_force.cpu_cores) as f32);
        mem.push((usage.mem_bytes.min(in_force.mem_bytes) / GIB) as f32);
    }
    report.windows += n as u64;
    let usage = UsageSeries::new(
        interval,
        Shape::scaled(Arc::from(cpu), 1.0),
        Shape::scaled(Arc::from(mem), GIB),
    );
    let mut c = ComponentSpec::new(Class::Core, request, n as f64 * interval, usage);
    c.request_changes = changes;
    c.oom_restart = OomRestart::Component;
    Ok((c, largest))
}

/// One VM file's runs.
struct Vm {
    /// Its first on row, Unix s.
    first_s: u64,
    /// Its place in file name order (the tie-break of arrival order).
    file_idx: usize,
    /// (start, Unix s; component) per run.
    runs: Vec<(u64, ComponentSpec)>,
}

/// As [`build_workload`], returning what was read instead of logging it.
pub fn build_workload_with_report(
    path: &Path,
    cfg: &BitbrainsConfig,
) -> Result<(Workload, BitbrainsReport), DatasetError> {
    cfg.validate()?;
    let mut report = BitbrainsReport::default();
    let mut vms: Vec<Vm> = Vec::new();
    let mut lifetimes: Vec<(u64, u64, Resources)> = Vec::new();
    for (file_idx, file) in vm_files(path, &mut report)?.iter().enumerate() {
        report.files += 1;
        let runs = read_runs(file, cfg, &mut report)?;
        let Some(first) = runs.first().map(|r| r[0].time_s) else {
            report.vms_never_on += 1;
            continue;
        };
        let mut comps = Vec::with_capacity(runs.len());
        for run in &runs {
            let (c, largest) = run_component(file, run, cfg, &mut report)?;
            let start = run[0].time_s;
            lifetimes.push((start, start + c.work_s as u64, largest));
            comps.push((start, c));
        }
        vms.push(Vm {
            first_s: first,
            file_idx,
            runs: comps,
        });
    }
    let Some(origin) = vms.iter().map(|v| v.first_s).min() else {
        return Err(DatasetError::format(
            path,
            "no VM with an on row (CPU cores and provisioned memory > 0)",
        ));
    };
    vms.sort_by_key(|v| (v.first_s, v.file_idx));
    let mut apps = Vec::with_capacity(vms.len());
    for (
        id,
        Vm {
            first_s: first,
            runs,
            ..
        },
    ) in vms.into_iter().enumerate()
    {
        let components: Vec<ComponentSpec> = runs
            .into_iter()
            .map(|(start, mut c)| {
                c.start_delay_s = (start - first) as f64;
                report.trace_end_s = report.trace_end_s.max((start - origin) as f64 + c.work_s);
                c
            })
            .collect();
        report.components += components.len() as u64;
        apps.push(AppSpec {
            id: id as u64,
            arrival_s: (first - origin) as f64,
            priority: 0,
            components,
        });
    }
    report.apps = apps.len() as u64;
    report.origin_unix_s = origin;
    let lifetimes: Vec<(f64, f64, Resources)> = lifetimes
        .into_iter()
        .map(|(s, e, r)| ((s - origin) as f64, (e - origin) as f64, r))
        .collect();
    let (peak, largest) = crate::hosts::peak_request(&lifetimes);
    report.peak_request_cpu_cores = peak.cpu_cores;
    report.peak_request_mem_gib = peak.mem_bytes / GIB;
    let hosts = crate::hosts::homogeneous_hosts(path, cfg.sizing(), peak, largest)?;
    report.hosts = hosts.len() as u64;
    report.capacity_cpu_cores = hosts.iter().map(|h| h.capacity.cpu_cores).sum();
    report.capacity_mem_gib = hosts.iter().map(|h| h.capacity.mem_bytes).sum::<f64>() / GIB;
    let name = cfg.name.clone().unwrap_or_else(|| {
        let base = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("bitbrains:{base}")
    });
    Ok((Workload { name, hosts, apps }, report))
}

#[cfg(test)]
mod tests;

//! Google clusterdata-2011-2: streaming readers ([`reader`]) and the
//! workload builder ([`build_workload`]).
//!
//! # How a trace becomes a [`Workload`]
//!
//! Inputs: every `*.csv`/`*.csv.gz` file of `task_events/` (required),
//! `machine_events/` (required), `job_events/` and `task_usage/` (optional)
//! under the trace directory. Times are shifted so that the workload origin
//! is the trace start ([`Google2011Config::origin_us`], 600 s).
//!
//! - **Hosts**: every machine with an ADD event at or before the end of the
//!   task-event window and a known capacity, excluding machines whose last
//!   event before the origin is a REMOVE. Capacity = the last ADD/UPDATE
//!   capacity at or before the window end, times
//!   [`Google2011Config::max_machine`] (trace capacities are normalised to
//!   the largest machine) times `host_capacity_scale`. With `max_hosts`,
//!   only the first `max_hosts` machines by ID are kept, and only tasks
//!   whose first placement in the window is on a kept machine.
//! - **Applications** = jobs, **components** = tasks (ordered by task
//!   index). Arrival = the earliest SUBMIT of the job (job_events or
//!   task_events), or its earliest event when it has no SUBMIT in the
//!   window. Priority = the highest task priority (0-11, larger is more
//!   important, as in the trace).
//! - **Jobs already running at trace start** (any event of the job at a time
//!   before the origin, typically `time = 0` SUBMIT/SCHEDULE rows):
//!   [`AtStart::Arrive`] (default) makes them arrive at time 0 with the work
//!   observed from the origin on (what they did before the trace is
//!   unknown); [`AtStart::Drop`] leaves them out.
//! - **Request** = the last non-empty CPU and memory request of the task
//!   (SUBMIT/UPDATE rows) times `max_machine`, floored at
//!   `min_request`. A task with no request in the window is dropped.
//! - **Work** (run time at full allocation) = the duration of the task's
//!   last run, SCHEDULE to its end:
//!   - ended by FINISH, FAIL or KILL: that duration;
//!   - still running at the end of the window, or ended by EVICT or LOST
//!     (the system interrupted it; it would have been rescheduled):
//!     [`Unfinished`] decides: `censor` (default) uses the run time observed
//!     up to the window end/interruption; `sample_finished` draws from the
//!     durations of the tasks that FINISHed in the window, conditioned on
//!     being at least the observed run time (censored when no finished
//!     duration is that long); `drop` leaves the task out;
//!   - never scheduled in the window: dropped, except with
//!     `sample_finished`, which draws a duration from the finished ones.
//!
//!   Work is floored at `min_work_s`.
//! - **Class** (the trace does not say; thesis chapter 3: 80% of batch
//!   applications are elastic): see [`ClassRule`]. Batch = scheduling class
//!   at most `batch_max_scheduling_class`. A batch job with more than one
//!   task is elastic when a hash of its job ID and the seed falls below
//!   `elastic_fraction`; in an elastic job the first
//!   `max(1, ceil(core_fraction * n))` tasks by index are core and the rest
//!   elastic. Every other job is rigid (all core).
//! - **Usage**: when `task_usage` has rows for the task, its series is the
//!   task's measured CPU rate and canonical memory usage per window (sorted
//!   by start time, interval = the median window length, 300 s in the
//!   trace, floored at [`MIN_USAGE_INTERVAL_S`]), with the in-window `maximum memory usage` as the memory peak
//!   series ([`UsageSeries::mem_peak_bytes`]); otherwise it is drawn from
//!   the usage pool and scaled to the request, siblings coherently (see
//!   [`crate::pool`]).

mod config;
pub mod reader;

pub(crate) use config::{check_component_filters, check_positive_resources};
pub use config::{AtStart, ClassRule, Google2011Config, Unfinished};

use crate::pool::{mix64, UsagePool};
use crate::workload::{
    AppSpec, Class, ComponentSpec, HostSpec, Resources, Shape, UsageSeries, Workload,
};
use crate::DatasetError;
use rand::{Rng, SeedableRng};
use reader::{
    JobEvent, MachineEvent, MachineEventType, Table, TableReader, TaskEvent, TaskEventType,
    TaskUsage, TimeUs, FAR_FUTURE_US,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

/// Where a table's rows come from.
#[derive(Clone, Debug)]
pub enum Input {
    File(PathBuf),
    /// Embedded bytes (plain or gzip), `name` labels errors.
    Static {
        name: String,
        bytes: &'static [u8],
    },
}

impl Input {
    /// The file's path or the embedded table's name, for messages.
    fn label(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Static { name, .. } => name.clone(),
        }
    }

    fn reader<T: Table>(&self, lenient: bool) -> Result<TableReader<T>, DatasetError> {
        match self {
            Input::File(p) => TableReader::open(p, lenient),
            Input::Static { name, bytes } => {
                Ok(TableReader::from_static(name.clone(), bytes, lenient))
            }
        }
    }
}

/// The table files of one trace.
#[derive(Clone, Debug, Default)]
pub struct Google2011Sources {
    pub task_events: Vec<Input>,
    pub job_events: Vec<Input>,
    pub machine_events: Vec<Input>,
    pub task_usage: Vec<Input>,
}

impl Google2011Sources {
    /// Finds the tables under `dir` (`task_events/`, `machine_events/`
    /// required; `job_events/`, `task_usage/` optional).
    pub fn from_dir(dir: &Path) -> Result<Self, DatasetError> {
        let list = |sub: &str, required: bool| -> Result<Vec<Input>, DatasetError> {
            let d = dir.join(sub);
            if d.exists() && !d.is_dir() {
                return Err(DatasetError::format(
                    &d,
                    "not a directory (the table's files go in it)",
                ));
            }
            if !d.is_dir() {
                if required {
                    return Err(DatasetError::format(&d, "missing table directory"));
                }
                return Ok(Vec::new());
            }
            let files = reader::table_files(&d)?;
            if required && files.is_empty() {
                return Err(DatasetError::format(&d, "no *.csv or *.csv.gz files"));
            }
            Ok(files.into_iter().map(Input::File).collect())
        };
        Ok(Google2011Sources {
            task_events: list("task_events", true)?,
            job_events: list("job_events", false)?,
            machine_events: list("machine_events", true)?,
            task_usage: list("task_usage", false)?,
        })
    }
}

/// What the builder kept, dropped and assumed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildReport {
    pub task_event_rows: u64,
    pub skipped_rows: u64,
    pub tasks_seen: u64,
    pub tasks_kept: u64,
    pub dropped_never_scheduled: u64,
    pub dropped_no_request: u64,
    pub dropped_unfinished: u64,
    pub dropped_other_host: u64,
    pub dropped_running_at_start: u64,
    pub work_censored: u64,
    pub work_sampled: u64,
    pub usage_from_trace: u64,
    pub usage_from_pool: u64,
    pub apps: u64,
    pub elastic_apps: u64,
    pub hosts: u64,
    /// End of the task-event window, seconds from the origin.
    pub window_end_s: f64,
}

#[derive(Default)]
struct TaskState {
    first_event: Option<TimeUs>,
    first_submit: Option<TimeUs>,
    first_machine: Option<u64>,
    ever_scheduled: bool,
    run_start: Option<TimeUs>,
    last_run: Option<(TimeUs, TimeUs, TaskEventType)>,
    cpu: Option<f64>,
    mem: Option<f64>,
    priority: u8,
    sched_class: Option<u8>,
}

#[derive(Default)]
struct JobState {
    submit: Option<TimeUs>,
    sched_class: Option<u8>,
}

/// Builds a workload from the Google 2011 trace tables under `dir` with the
/// bundled usage pool (see the module docs for every rule).
pub fn build_workload(dir: &Path, cfg: &Google2011Config) -> Result<Workload, DatasetError> {
    let sources = Google2011Sources::from_dir(dir)?;
    let pool = UsagePool::bundled()?;
    let mut cfg = cfg.clone();
    if cfg.name.is_none() {
        let base = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        cfg.name = Some(format!("google-2011:{base}"));
    }
    let (w, r) = build_workload_from(&sources, &cfg, &pool)?;
    tracing::info!(
        task_event_rows = r.task_event_rows,
        skipped_rows = r.skipped_rows,
        tasks_seen = r.tasks_seen,
        tasks_kept = r.tasks_kept,
        dropped_never_scheduled = r.dropped_never_scheduled,
        dropped_no_request = r.dropped_no_request,
        dropped_unfinished = r.dropped_unfinished,
        dropped_other_host = r.dropped_other_host,
        dropped_running_at_start = r.dropped_running_at_start,
        work_censored = r.work_censored,
        work_sampled = r.work_sampled,
        usage_from_trace = r.usage_from_trace,
        usage_from_pool = r.usage_from_pool,
        apps = r.apps,
        elastic_apps = r.elastic_apps,
        hosts = r.hosts,
        window_end_s = r.window_end_s,
        "built Google 2011 workload"
    );
    Ok(w)
}

fn us_to_s(t: TimeUs, origin: TimeUs) -> f64 {
    t.saturating_sub(origin) as f64 / 1e6
}

/// Builds a workload from explicit sources and pool; also returns what was
/// kept and dropped.
pub fn build_workload_from(
    sources: &Google2011Sources,
    cfg: &Google2011Config,
    pool: &UsagePool,
) -> Result<(Workload, BuildReport), DatasetError> {
    cfg.validate()?;
    let mut report = BuildReport::default();
    let origin = cfg.origin_us;

    // 1. Task events: per-task state, streaming.
    let mut tasks: HashMap<(u64, u64), TaskState> = HashMap::new();
    let mut window_end: TimeUs = origin;
    for input in &sources.task_events {
        let mut r: TableReader<TaskEvent> = input.reader(cfg.lenient)?;
        while let Some(ev) = r.next_row()? {
            if ev.time_us >= FAR_FUTURE_US {
                continue;
            }
            window_end = window_end.max(ev.time_us);
            let st = tasks.entry((ev.job_id, ev.task_index)).or_default();
            st.first_event = Some(st.first_event.map_or(ev.time_us, |t| t.min(ev.time_us)));
            st.priority = st.priority.max(ev.priority);
            if ev.scheduling_class.is_some() {
                st.sched_class = ev.scheduling_class;
            }
            if matches!(
                ev.event_type,
                TaskEventType::Submit
                    | TaskEventType::UpdatePending
                    | TaskEventType::UpdateRunning
                    | TaskEventType::Schedule
            ) {
                if let Some(c) = ev.cpu_request {
                    st.cpu = Some(c);
                }
                if let Some(m) = ev.mem_request {
                    st.mem = Some(m);
                }
            }
            match ev.event_type {
                TaskEventType::Submit => {
                    st.first_submit.get_or_insert(ev.time_us);
                }
                TaskEventType::Schedule => {
                    st.ever_scheduled = true;
                    if st.first_machine.is_none() {
                        st.first_machine = ev.machine_id;
                    }
                    st.run_start = Some(ev.time_us);
                }
                t if t.is_terminal() => {
                    if let Some(s) = st.run_start.take() {
                        st.last_run = Some((s, ev.time_us, t));
                    }
                }
                _ => {}
            }
        }
        report.task_event_rows += r.rows();
        report.skipped_rows += r.skipped();
    }
    report.tasks_seen = tasks.len() as u64;
    report.window_end_s = us_to_s(window_end, origin);

    // 2. Job events (optional): job SUBMIT time and scheduling class.
    let mut jobs: HashMap<u64, JobState> = HashMap::new();
    for input in &sources.job_events {
        let mut r: TableReader<JobEvent> = input.reader(cfg.lenient)?;
        while let Some(ev) = r.next_row()? {
            let js = jobs.entry(ev.job_id).or_default();
            if ev.event_type == TaskEventType::Submit && ev.time_us < FAR_FUTURE_US {
                js.submit = Some(js.submit.map_or(ev.time_us, |t| t.min(ev.time_us)));
            }
            if ev.scheduling_class.is_some() {
                js.sched_class = ev.scheduling_class;
            }
        }
        report.skipped_rows += r.skipped();
    }

    // 3. Machines present in the window, with their capacity.
    struct MachineState {
        added: bool,
        removed_before_origin: bool,
        cap: Option<(f64, f64)>,
    }
    let mut machines: BTreeMap<u64, MachineState> = BTreeMap::new();
    for input in &sources.machine_events {
        let mut r: TableReader<MachineEvent> = input.reader(cfg.lenient)?;
        while let Some(ev) = r.next_row()? {
            if ev.time_us > window_end {
                continue;
            }
            let m = machines.entry(ev.machine_id).or_insert(MachineState {
                added: false,
                removed_before_origin: false,
                cap: None,
            });
            match ev.event_type {
                MachineEventType::Add | MachineEventType::Update => {
                    if ev.event_type == MachineEventType::Add {
                        m.added = true;
                        m.removed_before_origin = false;
                    }
                    if let (Some(c), Some(mem)) = (ev.cpus, ev.memory) {
                        m.cap = Some((c, mem));
                    }
                }
                MachineEventType::Remove => {
                    if ev.time_us < origin {
                        m.removed_before_origin = true;
                    }
                }
            }
        }
        report.skipped_rows += r.skipped();
    }
    let mut hosts_kept: Vec<(u64, (f64, f64))> = machines
        .iter()
        .filter(|(_, m)| m.added && !m.removed_before_origin)
        .filter_map(|(&id, m)| m.cap.filter(|c| c.0 > 0.0 && c.1 > 0.0).map(|c| (id, c)))
        .collect();
    if let Some(n) = cfg.max_hosts {
        hosts_kept.truncate(n);
    }
    let host_ids: HashSet<u64> = hosts_kept.iter().map(|h| h.0).collect();
    let hosts: Vec<HostSpec> = hosts_kept
        .iter()
        .map(|(_, (c, m))| HostSpec {
            capacity: Resources::new(
                c * cfg.max_machine.cpu_cores * cfg.host_capacity_scale,
                m * cfg.max_machine.mem_bytes * cfg.host_capacity_scale,
            ),
        })
        .collect();
    if hosts.is_empty() {
        let files: Vec<String> = sources.machine_events.iter().map(Input::label).collect();
        return Err(DatasetError::Empty(format!(
            "no machine with a known capacity in machine_events ({})",
            files.join(", ")
        )));
    }
    report.hosts = hosts.len() as u64;

    // 4. Durations of finished runs (for `sample_finished`).
    let mut finished: Vec<f64> = tasks
        .values()
        .filter_map(|t| match t.last_run {
            Some((s, e, TaskEventType::Finish)) if s >= origin => Some((e - s) as f64 / 1e6),
            _ => None,
        })
        .collect();
    finished.sort_by(f64::total_cmp);

    // Jobs with any event before the origin.
    let mut at_start_jobs: HashSet<u64> = HashSet::new();
    for (&(job, _), t) in &tasks {
        if t.first_event.is_some_and(|f| f < origin) {
            at_start_jobs.insert(job);
        }
    }
    for (&job, js) in &jobs {
        if js.submit.is_some_and(|s| s < origin) {
            at_start_jobs.insert(job);
        }
    }

    // 5. Decide each task's request and work (deterministic order).
    struct Kept {
        task_index: u64,
        request: Resources,
        work_s: f64,
    }
    let mut keys: Vec<(u64, u64)> = tasks.keys().copied().collect();
    keys.sort_unstable();
    let mut per_job: BTreeMap<u64, Vec<Kept>> = BTreeMap::new();
    let mut job_meta: HashMap<u64, (TimeUs, u8, Option<u8>)> = HashMap::new();
    for key in keys {
        let Some(t) = tasks.get(&key) else { continue };
        if cfg.running_at_start == AtStart::Drop && at_start_jobs.contains(&key.0) {
            report.dropped_running_at_start += 1;
            continue;
        }
        if cfg.max_hosts.is_some() && !t.first_machine.is_some_and(|m| host_ids.contains(&m)) {
            report.dropped_other_host += 1;
            continue;
        }
        let (Some(cpu), Some(mem)) = (t.cpu, t.mem) else {
            report.dropped_no_request += 1;
            continue;
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(mix64(
            cfg.seed ^ mix64(key.0) ^ key.1.rotate_left(32),
        ));
        let sample_at_least = |min: f64, rng: &mut rand_chacha::ChaCha8Rng| -> Option<f64> {
            let lo = finished.partition_point(|&d| d < min);
            if lo >= finished.len() {
                return None;
            }
            Some(finished[rng.gen_range(lo..finished.len())])
        };
        // (observed run seconds, interrupted/unfinished?)
        let observed: Option<(f64, bool)> = match (t.run_start, t.last_run) {
            (Some(s), _) => Some((us_to_s(window_end, origin) - us_to_s(s, origin), true)),
            (None, Some((s, e, kind))) => {
                let d = us_to_s(e, origin) - us_to_s(s, origin);
                Some((
                    d,
                    matches!(kind, TaskEventType::Evict | TaskEventType::Lost),
                ))
            }
            (None, None) => None,
        };
        let work_s = match (observed, cfg.unfinished) {
            (Some((d, false)), _) => d,
            (Some((d, true)), Unfinished::Censor) => {
                report.work_censored += 1;
                d
            }
            (Some((_, true)), Unfinished::Drop) => {
                report.dropped_unfinished += 1;
                continue;
            }
            (Some((d, true)), Unfinished::SampleFinished) => match sample_at_least(d, &mut rng) {
                Some(x) => {
                    report.work_sampled += 1;
                    x
                }
                None => {
                    report.work_censored += 1;
                    d
                }
            },
            (None, Unfinished::SampleFinished) if t.ever_scheduled || t.first_submit.is_some() => {
                match sample_at_least(0.0, &mut rng) {
                    Some(x) => {
                        report.work_sampled += 1;
                        x
                    }
                    None => {
                        report.dropped_never_scheduled += 1;
                        continue;
                    }
                }
            }
            (None, _) => {
                report.dropped_never_scheduled += 1;
                continue;
            }
        };
        let request = Resources::new(
            (cpu * cfg.max_machine.cpu_cores).max(cfg.min_request.cpu_cores),
            (mem * cfg.max_machine.mem_bytes).max(cfg.min_request.mem_bytes),
        );
        let arrival = t.first_submit.or(t.first_event).unwrap_or(origin);
        let meta = job_meta
            .entry(key.0)
            .or_insert((arrival, t.priority, t.sched_class));
        meta.0 = meta.0.min(arrival);
        meta.1 = meta.1.max(t.priority);
        if meta.2.is_none() {
            meta.2 = t.sched_class;
        }
        per_job.entry(key.0).or_default().push(Kept {
            task_index: key.1,
            request,
            work_s: work_s.max(cfg.min_work_s),
        });
    }

    // 6. task_usage rows of kept tasks.
    let mut usage: HashMap<(u64, u64), Vec<UsageRow>> = HashMap::new();
    if !sources.task_usage.is_empty() {
        let kept: HashSet<(u64, u64)> = per_job
            .iter()
            .flat_map(|(&j, ts)| ts.iter().map(move |t| (j, t.task_index)))
            .collect();
        for input in &sources.task_usage {
            let mut r: TableReader<TaskUsage> = input.reader(cfg.lenient)?;
            while let Some(u) = r.next_row()? {
                let key = (u.job_id, u.task_index);
                if !kept.contains(&key) {
                    continue;
                }
                let (Some(c), Some(m)) = (u.cpu_rate, u.canonical_memory) else {
                    continue;
                };
                usage.entry(key).or_default().push(UsageRow {
                    start_us: u.start_time_us,
                    end_us: u.end_time_us,
                    cpu: c,
                    mem: m,
                    mem_peak: u.max_memory,
                });
            }
            report.skipped_rows += r.skipped();
        }
    }

    // 7. Assemble applications.
    let mut apps: Vec<AppSpec> = Vec::with_capacity(per_job.len());
    for (job, mut ts) in per_job {
        ts.sort_by_key(|t| t.task_index);
        let Some(&(arrival, priority, task_class)) = job_meta.get(&job) else {
            continue;
        };
        let js = jobs.get(&job);
        let arrival = js
            .and_then(|j| j.submit)
            .map_or(arrival, |s| s.min(arrival));
        let sched_class = js.and_then(|j| j.sched_class).or(task_class).unwrap_or(0);
        let rule = &cfg.class_rule;
        let elastic = ts.len() > 1
            && sched_class <= rule.batch_max_scheduling_class
            && unit_hash(mix64(job ^ mix64(cfg.seed ^ 0xE1A5))) < rule.elastic_fraction;
        let n_core = if elastic {
            ((rule.core_fraction * ts.len() as f64).ceil() as usize).max(1)
        } else {
            ts.len()
        };
        if elastic {
            report.elastic_apps += 1;
        }
        let components = ts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let key = (job, t.task_index);
                let usage = match usage.get_mut(&key) {
                    Some(rows) if !rows.is_empty() => {
                        report.usage_from_trace += 1;
                        trace_usage(rows, cfg.max_machine)
                    }
                    _ => {
                        report.usage_from_pool += 1;
                        pool.usage_for_task(
                            mix64(job),
                            t.task_index,
                            cfg.seed,
                            t.request,
                            cfg.pool_phase,
                        )
                    }
                };
                ComponentSpec::new(
                    if i < n_core {
                        Class::Core
                    } else {
                        Class::Elastic
                    },
                    t.request,
                    t.work_s,
                    usage,
                )
            })
            .collect::<Vec<_>>();
        report.tasks_kept += components.len() as u64;
        apps.push(AppSpec {
            id: job,
            arrival_s: us_to_s(arrival, origin),
            priority: i32::from(priority),
            components,
        });
    }
    apps.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.id.cmp(&b.id)));
    if let Some(n) = cfg.max_apps {
        if apps.len() > n {
            let dropped: usize = apps[n..].iter().map(|a| a.components.len()).sum();
            report.tasks_kept -= dropped as u64;
            apps.truncate(n);
        }
    }
    if apps.is_empty() {
        return Err(DatasetError::Empty(
            "no application survives the filters".into(),
        ));
    }
    report.apps = apps.len() as u64;
    let name = cfg
        .name
        .clone()
        .unwrap_or_else(|| "google-2011".to_string());
    Ok((Workload { name, hosts, apps }, report))
}

/// One task_usage window of a kept task (usage normalised like the trace).
struct UsageRow {
    start_us: TimeUs,
    end_us: TimeUs,
    /// CPU rate.
    cpu: f64,
    /// Canonical memory usage (mean over the window).
    mem: f64,
    /// Maximum memory usage within the window, when the row has it.
    mem_peak: Option<f64>,
}

/// The shortest usage interval (seconds): the trace's usage is measured
/// in 1-second samples aggregated over each window, so a shorter window
/// (a malformed `task_usage` row; the trace's are 300 s, shorter only at a
/// task's start or end) carries no finer measurement. The floor also keeps
/// the simulation bounded: it fires one event per usage sample, and a
/// 1 µs interval would make that millions per simulated second.
pub const MIN_USAGE_INTERVAL_S: f64 = 1.0;

fn unit_hash(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// A task's measured usage: rows sorted by start time; interval = median
/// window length, at least [`MIN_USAGE_INTERVAL_S`]. The in-interval memory peak series is the rows'
/// `maximum memory usage` (a row without one uses its canonical memory)
/// when at least one row has it.
fn trace_usage(rows: &mut [UsageRow], max_machine: Resources) -> UsageSeries {
    rows.sort_by_key(|r| r.start_us);
    let mut lens: Vec<u64> = rows
        .iter()
        .map(|r| r.end_us.saturating_sub(r.start_us))
        .filter(|&d| d > 0)
        .collect();
    lens.sort_unstable();
    let interval_s = lens
        .get(lens.len() / 2)
        .map_or(300.0, |&d| d as f64 / 1e6)
        .max(MIN_USAGE_INTERVAL_S);
    let cpu: Arc<[f32]> = rows.iter().map(|r| r.cpu.max(0.0) as f32).collect();
    let mem: Arc<[f32]> = rows.iter().map(|r| r.mem.max(0.0) as f32).collect();
    let mem_peak_bytes = rows.iter().any(|r| r.mem_peak.is_some()).then(|| {
        let peak: Arc<[f32]> = rows
            .iter()
            .map(|r| r.mem_peak.unwrap_or(r.mem).max(r.mem).max(0.0) as f32)
            .collect();
        Shape {
            values: peak,
            scale: max_machine.mem_bytes,
            offset: 0,
            bias: 0.0,
        }
    });
    UsageSeries {
        interval_s,
        cpu_cores: Shape {
            values: cpu,
            scale: max_machine.cpu_cores,
            offset: 0,
            bias: 0.0,
        },
        mem_bytes: Shape {
            values: mem,
            scale: max_machine.mem_bytes,
            offset: 0,
            bias: 0.0,
        },
        mem_peak_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_usage_carries_the_in_window_peak() {
        let mm = Resources::new(32.0, 100.0);
        let row = |s: u64, mem: f64, peak: Option<f64>| UsageRow {
            start_us: s * 300_000_000,
            end_us: (s + 1) * 300_000_000,
            cpu: 0.01,
            mem,
            mem_peak: peak,
        };
        let mut rows = vec![row(1, 0.2, None), row(0, 0.1, Some(0.3))];
        let u = trace_usage(&mut rows, mm);
        assert_eq!(u.interval_s, 300.0);
        let p = u.mem_peak_bytes.as_ref().expect("peak series");
        assert_eq!(p.values.len(), 2);
        assert!((u.mem_peak(0) - 30.0).abs() < 1e-4);
        // A row without a peak uses its mean.
        assert!((u.mem_peak(1) - 20.0).abs() < 1e-4);
        // No row with a peak: no peak series; the peak is the mean.
        let mut rows = vec![row(0, 0.1, None)];
        let u = trace_usage(&mut rows, mm);
        assert!(u.mem_peak_bytes.is_none());
        assert!((u.mem_peak(0) - 10.0).abs() < 1e-4);
    }

    /// Windows of 1 µs (a malformed trace) give the 1 s floor, not an
    /// interval the simulator would fire a million events a second for.
    #[test]
    fn a_tiny_window_is_floored_at_a_second() {
        let mm = Resources::new(32.0, 100.0);
        let mut rows: Vec<UsageRow> = (0..3)
            .map(|s| UsageRow {
                start_us: 600_000_000 + s,
                end_us: 600_000_001 + s,
                cpu: 0.01,
                mem: 0.01,
                mem_peak: None,
            })
            .collect();
        assert_eq!(trace_usage(&mut rows, mm).interval_s, MIN_USAGE_INTERVAL_S);
    }
}

//! Alibaba GPU-cluster lifecycle traces (`--workload alibaba-gpu:PATH`):
//! instance and pod lists with requests and creation / deletion times, and
//! no usage. Two formats, recognised by their CSV header
//! ([`format_of_header`]):
//!
//! - **gpu-v2025** (`cluster-trace-gpu-v2025/disaggregated_DLRM_trace.csv`,
//!   [`DlrmInstance`]): instances of long-running recommendation-inference
//!   services (156 applications, `app_name`); CPU in vCPU, memory in GiB,
//!   times in seconds from the trace start (an empty `creation_time`: the
//!   instance existed before the trace started; an empty `deletion_time`:
//!   it outlived the trace; the trace's README writes `NaN` for these,
//!   read as empty too).
//! - **gpu-v2023** (`cluster-trace-gpu-v2023/csv/openb_pod_list_*.csv`,
//!   [`OpenbPod`]): pods of a GPU cluster, batch and service pods mixed;
//!   CPU in milli-cores, memory in MiB, times in seconds, a QoS class. Its
//!   node list (`openb_node_list_all_node.csv`, [`OpenbNode`]) gives the
//!   machines.
//!
//! Rows are read with [`TableReader`](crate::TableReader) (strict or
//! lenient): a malformed row is an error naming the file, the 1-based line
//! (header = line 1) and the column. Only the columns the workload uses
//! (and a few summarised by `tailor trace inspect`) are parsed; the others
//! (limits, RDMA, disk, `max_instance_per_node`, ...) are not checked.
//!
//! # How the lists become a [`Workload`] ([`build_workload`])
//!
//! `PATH` is a file (its format from its header; any other header is an
//! error) or a directory: every `*.csv` / `*.csv.gz` file directly in it
//! with one of the two headers is read and all their applications are
//! merged into one workload; other files are skipped and counted (the node
//! list is read for the hosts). Times of every file are seconds from its
//! trace's start, which is workload time 0.
//!
//! - **Trace end** (per file) = the largest time in the file's creation,
//!   scheduled and deletion columns.
//! - **Components**: one per instance / pod, class core. Start =
//!   `creation_time` (empty: 0), end = `deletion_time` (empty: the trace
//!   end); **work** = end - start (run time at full CPU allocation: the
//!   baseline runs it exactly as long as the trace kept it; a policy that
//!   allocates less CPU than the drawn usage stretches it, as for every
//!   workload of the simulator). An instance with work <= 0 is
//!   skipped and counted. A gpu-v2023 pod that was never scheduled
//!   (`pod_phase` Pending, no `scheduled_time`) is replayed like the others
//!   (and counted as `unscheduled`): the simulator schedules it itself.
//! - **Request** = (`cpu_request` vCPU, `memory_request` GiB) or
//!   (`cpu_milli` / 1000 cores, `memory_mib` MiB), floored at
//!   `min_request`. GPU, RDMA and disk requests are not modelled.
//! - **Applications**: gpu-v2025: one per `app_name` of a file, every
//!   instance a component restarting alone after an OOM kill
//!   ([`OomRestart::Component`]: inference services whose killed instance
//!   is restarted by the cluster manager while the service goes on);
//!   priority 0 (the file has no priority). gpu-v2023: one per pod, one
//!   component, [`OomRestart::Application`] (the default: batch and service
//!   pods are not told apart); priority from `qos`: Guaranteed 3, LS 2,
//!   Burstable 1, BE 0 (any other value is a malformed row). Arrival = the
//!   earliest start of the application's components; each component is
//!   submitted `start_delay_s` = its start - arrival later. Application ids
//!   are assigned sequentially (from 0) in arrival order (ties: file, then
//!   row order); names are not kept.
//! - **Usage** (the traces have none): drawn from the bundled usage pool
//!   ([`UsagePool::usage_for_task`]) with job key = the 64-bit FNV-1a hash
//!   of the application name (`app_name`, or the pod `name`; the same in
//!   every run and process), task index = the instance's index among its
//!   application's rows in file order (0 for a pod), and the configured
//!   `seed` and `pool_phase`, as Google 2011 tasks without usage rows do.
//! - **Hosts**: with a gpu-v2023 pod list read and
//!   `openb_node_list_all_node.csv` in the same directory (and neither
//!   `hosts` nor `host_capacity` set), one host per node of capacity
//!   (`cpu_milli` / 1000 cores, `memory_mib` MiB). Otherwise homogeneous
//!   hosts: capacity = `host_capacity`, default [`HOST_REQUEST_MULTIPLE`]
//!   (8) times the largest request, CPU and memory separately (at least
//!   1 core / 1 GiB); count = `hosts`, default the smallest count that
//!   holds the peak concurrent summed request (over the trace's start/end
//!   times) times `headroom` in the binding resource:
//!   `max over r of ceil(peak_r * headroom / capacity_r)`, at least 1 (so
//!   the baseline, which reserves every request, fits with room).

mod rows;

pub use rows::{
    detect_format, format_of_header, AlibabaGpuFormat, DlrmInstance, OpenbNode, OpenbPod, Qos,
    MAX_CORES, MAX_GIB, MAX_TIME_S,
};

use crate::google2011::reader::Table;
use crate::pool::{PoolPhase, UsagePool};
use crate::workload::{AppSpec, Class, ComponentSpec, HostSpec, OomRestart, Resources, Workload};
use crate::DatasetError;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;
pub use crate::hosts::{HOST_REQUEST_MULTIPLE, MAX_HOSTS};
/// File name of the gpu-v2023 node list looked for beside a pod list.
pub const NODE_LIST_FILE: &str = "openb_node_list_all_node.csv";

// ---------------------------------------------------------------------------
// The workload.

/// Configuration of [`build_workload`]. Every field has a documented default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlibabaGpuConfig {
    /// Floor on requests. Default 0.01 cores / 16 MiB (as Google 2019).
    pub min_request: Resources,
    /// Number of homogeneous hosts, in [1, 100,000]. Default `None`: one per
    /// node of the node list when there is one, else the peak concurrent
    /// request times `headroom` (see the module docs).
    pub hosts: Option<usize>,
    /// Capacity of every homogeneous host (cores in (0, 1e6], bytes in
    /// (0, 2^60]). Default `None`: the node list's capacities when there
    /// is one, else 8 x the largest request, CPU and memory separately
    /// (at least 1 core / 1 GiB).
    pub host_capacity: Option<Resources>,
    /// The computed host count holds the peak concurrent summed request
    /// times this, in [1, 100]. Default 1.25.
    pub headroom: f64,
    /// Seed of the usage-pool draws. Default 0.
    pub seed: u64,
    /// Where the components of an application start its pool shape.
    /// Default [`PoolPhase::Job`].
    pub pool_phase: PoolPhase,
    /// Skip and count malformed rows instead of failing. Default false.
    pub lenient: bool,
    /// Workload name. Default `alibaba-gpu:<file or directory name>`.
    pub name: Option<String>,
}

impl Default for AlibabaGpuConfig {
    fn default() -> Self {
        AlibabaGpuConfig {
            min_request: Resources::new(0.01, 16.0 * MIB),
            hosts: None,
            host_capacity: None,
            headroom: 1.25,
            seed: 0,
            pool_phase: PoolPhase::Job,
            lenient: false,
            name: None,
        }
    }
}

impl AlibabaGpuConfig {
    /// The homogeneous hosts' keys.
    fn sizing(&self) -> crate::hosts::HostSizing {
        crate::hosts::HostSizing {
            capacity: self.host_capacity,
            hosts: self.hosts,
            headroom: self.headroom,
        }
    }

    /// Checks every field; reports all problems at once. Ranges:
    /// `min_request` cores [0, 1e6], bytes [0, 2^60]; `hosts` [1, 100,000];
    /// `host_capacity` cores (0, 1e6], bytes (0, 2^60]; `headroom` [1, 100].
    pub fn validate(&self) -> Result<(), DatasetError> {
        let mut e = tailor_core::ConfigErrors::new();
        self.sizing().check(self.min_request, &mut e);
        e.into_result().map_err(DatasetError::Config)
    }
}

/// What [`build_workload_with_report`] read, kept and dropped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AlibabaGpuReport {
    /// gpu-v2025 instance lists read.
    pub files_v2025: u64,
    /// gpu-v2023 pod lists read.
    pub files_v2023: u64,
    /// CSV files of a directory with neither header (skipped).
    pub skipped_files: u64,
    /// Instance and pod rows read (node rows apart).
    pub rows: u64,
    /// Malformed rows skipped (lenient mode only), node rows included.
    pub skipped_rows: u64,
    /// Instances with work (end - start) <= 0 (skipped).
    pub skipped_no_work: u64,
    /// Instances without a `creation_time` (started at 0).
    pub without_start: u64,
    /// Instances without a `deletion_time` (ended at the trace end).
    pub without_end: u64,
    /// Instances without a `scheduled_time` (never scheduled in the trace;
    /// replayed anyway).
    pub unscheduled: u64,
    pub apps: u64,
    pub components: u64,
    pub hosts: u64,
    /// Nodes of the node list used as hosts (0: homogeneous hosts).
    pub nodes: u64,
    /// Largest trace end over the files read, s.
    pub trace_end_s: f64,
    /// Peak concurrent summed request over the trace's start/end times.
    pub peak_request_cpu_cores: f64,
    pub peak_request_mem_gib: f64,
    /// Summed capacity of the hosts.
    pub capacity_cpu_cores: f64,
    pub capacity_mem_gib: f64,
}

impl AlibabaGpuReport {
    /// The formats read, e.g. `gpu-v2025` or `gpu-v2025+gpu-v2023`.
    pub fn formats(&self) -> String {
        let mut f = Vec::new();
        if self.files_v2025 > 0 {
            f.push(AlibabaGpuFormat::GpuV2025.as_str());
        }
        if self.files_v2023 > 0 {
            f.push(AlibabaGpuFormat::GpuV2023.as_str());
        }
        f.join("+")
    }
}

/// Builds a workload from the instance / pod lists at `path` (a file or a
/// directory; see the module docs for every rule) with the bundled usage
/// pool, and logs what it read.
pub fn build_workload(path: &Path, cfg: &AlibabaGpuConfig) -> Result<Workload, DatasetError> {
    let (w, r) = build_workload_with_report(path, cfg)?;
    tracing::info!(
        formats = %r.formats(),
        files_v2025 = r.files_v2025,
        files_v2023 = r.files_v2023,
        skipped_files = r.skipped_files,
        rows = r.rows,
        skipped_rows = r.skipped_rows,
        skipped_no_work = r.skipped_no_work,
        without_start = r.without_start,
        without_end = r.without_end,
        unscheduled = r.unscheduled,
        apps = r.apps,
        components = r.components,
        hosts = r.hosts,
        nodes = r.nodes,
        trace_end_s = r.trace_end_s,
        peak_request_cpu_cores = r.peak_request_cpu_cores,
        peak_request_mem_gib = r.peak_request_mem_gib,
        capacity_cpu_cores = r.capacity_cpu_cores,
        capacity_mem_gib = r.capacity_mem_gib,
        "built Alibaba GPU workload"
    );
    Ok(w)
}

/// As [`build_workload`], returning what was read instead of logging it.
pub fn build_workload_with_report(
    path: &Path,
    cfg: &AlibabaGpuConfig,
) -> Result<(Workload, AlibabaGpuReport), DatasetError> {
    // `build_workload_from` validates `cfg`
    let pool = UsagePool::bundled()?;
    build_workload_from(path, cfg, &pool)
}

/// One kept instance or pod.
struct Comp {
    start_s: f64,
    task_index: u64,
    request: Resources,
    work_s: f64,
}

/// An application being assembled.
struct PendingApp {
    /// `app_name` or pod name: the pool's job key.
    name: String,
    /// (file index, row index of its first row): the tie-break of arrival order.
    order: (usize, u64),
    priority: i32,
    oom_restart: OomRestart,
    /// Rows seen (the next row's task index).
    rows: u64,
    comps: Vec<Comp>,
}

/// A row of either format, reduced to what the workload needs.
struct Row {
    app: String,
    request: Resources,
    creation_s: Option<f64>,
    deletion_s: Option<f64>,
    /// Largest time of the row (creation, scheduled, deletion).
    latest_s: Option<f64>,
    scheduled: bool,
    priority: i32,
}

fn latest(times: &[Option<f64>]) -> Option<f64> {
    times.iter().flatten().copied().reduce(f64::max)
}

/// Reads every row of one instance or pod list.
fn read_rows(
    path: &Path,
    format: AlibabaGpuFormat,
    lenient: bool,
    report: &mut AlibabaGpuReport,
) -> Result<Vec<Row>, DatasetError> {
    let mut rows = Vec::new();
    match format {
        AlibabaGpuFormat::GpuV2025 => {
            let mut r = crate::TableReader::<DlrmInstance>::open(path, lenient)?;
            while let Some(i) = r.next_row()? {
                rows.push(Row {
                    latest_s: latest(&[i.creation_time_s, i.scheduled_time_s, i.deletion_time_s]),
                    app: i.app_name,
                    request: Resources::new(i.cpu_request, i.memory_request_gib * GIB),
                    creation_s: i.creation_time_s,
                    deletion_s: i.deletion_time_s,
                    scheduled: true,
                    priority: 0,
                });
            }
            report.files_v2025 += 1;
            report.skipped_rows += r.skipped();
        }
        AlibabaGpuFormat::GpuV2023 => {
            let mut r = crate::TableReader::<OpenbPod>::open(path, lenient)?;
            while let Some(p) = r.next_row()? {
                rows.push(Row {
                    latest_s: latest(&[p.creation_time_s, p.scheduled_time_s, p.deletion_time_s]),
                    app: p.name,
                    request: Resources::new(p.cpu_milli / 1000.0, p.memory_mib * MIB),
                    creation_s: p.creation_time_s,
                    deletion_s: p.deletion_time_s,
                    scheduled: p.scheduled_time_s.is_some(),
                    priority: p.qos.priority(),
                });
            }
            report.files_v2023 += 1;
            report.skipped_rows += r.skipped();
        }
        AlibabaGpuFormat::GpuV2023Nodes => {
            return Err(DatasetError::format(
                path,
                "a gpu-v2023 node list, not an instance or pod list (give the pod list or its directory)",
            ))
        }
    }
    report.rows += rows.len() as u64;
    Ok(rows)
}

/// Reads a node list into hosts.
fn read_nodes(
    path: &Path,
    lenient: bool,
    report: &mut AlibabaGpuReport,
) -> Result<Vec<HostSpec>, DatasetError> {
    if detect_format(path)? != Some(AlibabaGpuFormat::GpuV2023Nodes) {
        return Err(DatasetError::format(
            path,
            format!(
                "not a gpu-v2023 node list: expected the header {}",
                OpenbNode::COLUMNS.join(",")
            ),
        ));
    }
    let mut r = crate::TableReader::<OpenbNode>::open(path, lenient)?;
    let mut hosts = Vec::new();
    while let Some(n) = r.next_row()? {
        if hosts.len() >= MAX_HOSTS {
            return Err(DatasetError::format(
                path,
                format!("more than {MAX_HOSTS} nodes"),
            ));
        }
        hosts.push(HostSpec {
            capacity: Resources::new(n.cpu_milli / 1000.0, n.memory_mib * MIB),
        });
    }
    report.skipped_rows += r.skipped();
    if hosts.is_empty() {
        return Err(DatasetError::format(path, "no usable node row"));
    }
    Ok(hosts)
}

/// Instance / pod lists with their formats, and the node list to use.
type Inputs = (Vec<(PathBuf, AlibabaGpuFormat)>, Option<PathBuf>);

/// The instance / pod lists at `path` (sorted) with their formats, and the
/// node list to use, if any.
fn inputs(path: &Path, report: &mut AlibabaGpuReport) -> Result<Inputs, DatasetError> {
    let mut lists = Vec::new();
    let dir = if path.is_dir() {
        for f in crate::google2011::reader::table_files(path)? {
            if f.file_name().is_some_and(|n| n == NODE_LIST_FILE) {
                continue;
            }
            match detect_format(&f)? {
                Some(fmt @ (AlibabaGpuFormat::GpuV2025 | AlibabaGpuFormat::GpuV2023)) => {
                    lists.push((f, fmt));
                }
                _ => {
                    tracing::warn!(path = %f.display(), "not a gpu-v2025 or gpu-v2023 list; skipped");
                    report.skipped_files += 1;
                }
            }
        }
        if lists.is_empty() {
            // A directory of one list per cluster (as shipped: gpu-v2023/,
            // gpu-v2025/): the clusters differ, so each is replayed alone.
            let mut subdirs: Vec<String> = std::fs::read_dir(path)
                .map_err(|e| DatasetError::io(path, e))?
                .filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            subdirs.sort();
            let hint = if subdirs.is_empty() {
                String::new()
            } else {
                format!(
                    "; it has the subdirectories {}: name one of them (each cluster is replayed alone)",
                    subdirs.join(", ")
                )
            };
            return Err(DatasetError::format(
                path,
                format!(
                    "no gpu-v2025 instance list or gpu-v2023 pod list (*.csv with their header){hint}"
                ),
            ));
        }
        path.to_path_buf()
    } else {
        match detect_format(path)? {
            Some(fmt) => lists.push((path.to_path_buf(), fmt)),
            None => {
                return Err(DatasetError::format(
                    path,
                    format!(
                    "unknown header: expected the gpu-v2025 header {} or the gpu-v2023 header {}",
                    DlrmInstance::COLUMNS.join(","),
                    OpenbPod::COLUMNS.join(",")
                ),
                ))
            }
        }
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    let has_pods = lists.iter().any(|(_, f)| *f == AlibabaGpuFormat::GpuV2023);
    let nodes = dir.join(NODE_LIST_FILE);
    let nodes = (has_pods && nodes.is_file()).then_some(nodes);
    Ok((lists, nodes))
}

/// Builds a workload with an explicit usage pool (see the module docs);
/// also returns what was read.
pub fn build_workload_from(
    path: &Path,
    cfg: &AlibabaGpuConfig,
    pool: &UsagePool,
) -> Result<(Workload, AlibabaGpuReport), DatasetError> {
    cfg.validate()?;
    let mut report = AlibabaGpuReport::default();
    let (lists, node_list) = inputs(path, &mut report)?;
    let floor = cfg.min_request;
    let mut apps: Vec<PendingApp> = Vec::new();
    for (file_idx, (file, format)) in lists.iter().enumerate() {
        let rows = read_rows(file, *format, cfg.lenient, &mut report)?;
        let trace_end = rows.iter().filter_map(|r| r.latest_s).fold(0.0, f64::max);
        report.trace_end_s = report.trace_end_s.max(trace_end);
        let mut by_name: HashMap<String, usize> = HashMap::new();
        let mut kept = 0u64;
        for (row_idx, row) in rows.into_iter().enumerate() {
            report.without_start += u64::from(row.creation_s.is_none());
            report.without_end += u64::from(row.deletion_s.is_none());
            report.unscheduled += u64::from(!row.scheduled);
            let start_s = row.creation_s.unwrap_or(0.0);
            let work_s = row.deletion_s.unwrap_or(trace_end) - start_s;
            // gpu-v2025: instances grouped by app_name; gpu-v2023: a pod is an app.
            let grouped = *format == AlibabaGpuFormat::GpuV2025;
            let existing = if grouped {
                by_name.get(&row.app).copied()
            } else {
                None
            };
            let slot = match existing {
                Some(i) => i,
                None => {
                    if grouped {
                        by_name.insert(row.app.clone(), apps.len());
                    }
                    apps.push(PendingApp {
                        name: row.app,
                        order: (file_idx, row_idx as u64),
                        priority: row.priority,
                        oom_restart: if grouped {
                            OomRestart::Component
                        } else {
                            OomRestart::Application
                        },
                        rows: 0,
                        comps: Vec::new(),
                    });
                    apps.len() - 1
                }
            };
            let app = &mut apps[slot];
            let task_index = app.rows;
            app.rows += 1;
            // times are finite: no NaN
            if work_s <= 0.0 {
                report.skipped_no_work += 1;
                continue;
            }
            kept += 1;
            app.comps.push(Comp {
                start_s,
                task_index,
                request: Resources::new(
                    row.request.cpu_cores.max(floor.cpu_cores),
                    row.request.mem_bytes.max(floor.mem_bytes),
                ),
                work_s,
            });
        }
        if kept == 0 {
            return Err(DatasetError::format(
                file,
                "no usable row (every row malformed or with deletion_time <= creation_time)",
            ));
        }
    }
    apps.retain(|a| !a.comps.is_empty());

    // Arrival order, then sequential ids.
    let arrival = |a: &PendingApp| {
        a.comps
            .iter()
            .map(|c| c.start_s)
            .fold(f64::INFINITY, f64::min)
    };
    let mut apps: Vec<(f64, PendingApp)> = apps.into_iter().map(|a| (arrival(&a), a)).collect();
    apps.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.order.cmp(&b.1.order)));

    let lifetimes: Vec<(f64, f64, Resources)> = apps
        .iter()
        .flat_map(|(_, a)| &a.comps)
        .map(|c| (c.start_s, c.start_s + c.work_s, c.request))
        .collect();
    let (peak, largest) = crate::hosts::peak_request(&lifetimes);
    report.peak_request_cpu_cores = peak.cpu_cores;
    report.peak_request_mem_gib = peak.mem_bytes / GIB;
    let hosts = match node_list {
        Some(p) if cfg.hosts.is_none() && cfg.host_capacity.is_none() => {
            let hosts = read_nodes(&p, cfg.lenient, &mut report)?;
            report.nodes = hosts.len() as u64;
            hosts
        }
        _ => crate::hosts::homogeneous_hosts(path, cfg.sizing(), peak, largest)?,
    };
    report.hosts = hosts.len() as u64;
    report.capacity_cpu_cores = hosts.iter().map(|h| h.capacity.cpu_cores).sum();
    report.capacity_mem_gib = hosts.iter().map(|h| h.capacity.mem_bytes).sum::<f64>() / GIB;

    let mut out = Vec::with_capacity(apps.len());
    for (id, (arrival_s, a)) in apps.into_iter().enumerate() {
        let key = tailor_core::fnv1a64(&[a.name.as_bytes()]);
        let components: Vec<ComponentSpec> = a
            .comps
            .iter()
            .map(|c| {
                let usage =
                    pool.usage_for_task(key, c.task_index, cfg.seed, c.request, cfg.pool_phase);
                let mut spec = ComponentSpec::new(Class::Core, c.request, c.work_s, usage);
                spec.start_delay_s = c.start_s - arrival_s;
                spec.oom_restart = a.oom_restart;
                spec
            })
            .collect();
        report.components += components.len() as u64;
        out.push(AppSpec {
            id: id as u64,
            arrival_s,
            priority: a.priority,
            components,
        });
    }
    report.apps = out.len() as u64;
    let name = cfg.name.clone().unwrap_or_else(|| {
        let base = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("alibaba-gpu:{base}")
    });
    Ok((
        Workload {
            name,
            hosts,
            apps: out,
        },
        report,
    ))
}

#[cfg(test)]
mod tests;

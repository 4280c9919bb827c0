//! Summaries of trace files for `tailor trace inspect`: rows, time span,
//! distinct jobs/tasks/machines, event types, and request/usage
//! distributions (quantiles). The table is detected from the file name and,
//! failing that, from the first line's shape ([`detect_table`]).
//!
//! Besides trace tables it reads tailor's own data files (the usage-series
//! pool and the fitted workload distributions shipped in `data/`), and it
//! says what a file that is no trace at all is (Markdown, JSON, TOML,
//! binary, empty) instead of failing on it.

use crate::alibaba2018::{ContainerMeta, ContainerUsage, MachineMeta};
use crate::alibaba_gpu::{format_of_header, AlibabaGpuFormat, DlrmInstance, OpenbNode, OpenbPod};
use crate::bitbrains::VmSample;
use crate::google2011::reader::{JobEvent, MachineEvent, Table, TableReader, TaskEvent, TaskUsage};
use crate::google2019::InstanceUsage;
use crate::io::{first_line, open};
use crate::pool::UsagePool;
use crate::series::{detect_format, load_series, SeriesFormat};
use crate::synthetic::EmpiricalDistributions;
use crate::DatasetError;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, Read};
use std::path::Path;

/// The tables [`inspect`] knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TableKind {
    TaskEvents,
    JobEvents,
    MachineEvents,
    TaskUsage,
    Google2019InstanceUsage,
    AlibabaContainerUsage,
    AlibabaContainerMeta,
    AlibabaMachineMeta,
    /// Alibaba gpu-v2025 `disaggregated_DLRM_trace.csv`.
    AlibabaGpuInstances,
    /// Alibaba gpu-v2023 `openb_pod_list_*.csv`.
    AlibabaGpuPods,
    /// Alibaba gpu-v2023 `openb_node_list_all_node.csv`.
    AlibabaGpuNodes,
    BitbrainsVm,
    /// Anything [`crate::series::load_series`] reads (GCD_VMs archive,
    /// Google 2011 derived series, plain CSV).
    Series,
    /// tailor's usage-series pool (`data/usage-pool.txt.gz`, read by
    /// [`UsagePool::read`]).
    UsagePool,
    /// tailor's workload distributions fitted from a trace
    /// (`data/google-2011-distributions.json.gz`, [`EmpiricalDistributions`]).
    WorkloadDistributions,
    /// Not a trace (documentation, other JSON, configuration, binary data,
    /// an empty file): the summary's `note` says what it is.
    NotATrace,
}

impl TableKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TableKind::TaskEvents => "google-2011 task_events",
            TableKind::JobEvents => "google-2011 job_events",
            TableKind::MachineEvents => "google-2011 machine_events",
            TableKind::TaskUsage => "google-2011 task_usage",
            TableKind::Google2019InstanceUsage => "google-2019 instance_usage",
            TableKind::AlibabaContainerUsage => "alibaba-2018 container_usage",
            TableKind::AlibabaContainerMeta => "alibaba-2018 container_meta",
            TableKind::AlibabaMachineMeta => "alibaba-2018 machine_meta",
            TableKind::AlibabaGpuInstances => "alibaba gpu-v2025 instance list",
            TableKind::AlibabaGpuPods => "alibaba gpu-v2023 pod list",
            TableKind::AlibabaGpuNodes => "alibaba gpu-v2023 node list",
            TableKind::BitbrainsVm => "bitbrains vm",
            TableKind::Series => "usage series",
            TableKind::UsagePool => "tailor usage-series pool",
            TableKind::WorkloadDistributions => "tailor workload distributions",
            TableKind::NotATrace => "not a trace",
        }
    }

    /// Parses a table name as accepted by `--table`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "task_events" => TableKind::TaskEvents,
            "job_events" => TableKind::JobEvents,
            "machine_events" => TableKind::MachineEvents,
            "task_usage" => TableKind::TaskUsage,
            "instance_usage" => TableKind::Google2019InstanceUsage,
            "container_usage" => TableKind::AlibabaContainerUsage,
            "container_meta" => TableKind::AlibabaContainerMeta,
            "machine_meta" => TableKind::AlibabaMachineMeta,
            "gpu_instances" => TableKind::AlibabaGpuInstances,
            "gpu_pods" => TableKind::AlibabaGpuPods,
            "gpu_nodes" => TableKind::AlibabaGpuNodes,
            "bitbrains" => TableKind::BitbrainsVm,
            "series" => TableKind::Series,
            "usage_pool" => TableKind::UsagePool,
            "distributions" => TableKind::WorkloadDistributions,
            _ => return None,
        })
    }
}

/// Detects the table of `path`: first from its path (`task_events/…`,
/// `container_usage…`), then from the first line (delimiter, number of
/// fields, header names, `c_`/`m_` ids).
pub fn detect_table(path: &Path) -> Result<TableKind, DatasetError> {
    Ok(detect(path)?.0)
}

/// Bytes of (decompressed) content [`sniff`] looks at.
const SNIFF_BYTES: u64 = 64 * 1024;

/// Recognises tailor's own data files and files that are no trace from the
/// name and the first (decompressed) bytes: `Some((kind, note))`, or `None`
/// for anything that may be a trace table.
fn sniff(path: &Path) -> Result<Option<(TableKind, Option<String>)>, DatasetError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") || name.ends_with(".tar") {
        return Ok(None); // GCD_VMs archives: binary tar members, read as series
    }
    let bare = name.strip_suffix(".gz").unwrap_or(&name);
    let ext = bare.rsplit_once('.').map_or("", |(_, e)| e);
    let mut head = Vec::new();
    open(path)?
        .take(SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(|e| DatasetError::io(path, e))?;
    let not_a_trace = |what: String| Ok(Some((TableKind::NotATrace, Some(what))));
    if head.iter().all(|b| b.is_ascii_whitespace()) {
        return not_a_trace("empty file: no rows".to_string());
    }
    let control = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'))
        .count();
    if head.contains(&0) || control * 10 > head.len() {
        return not_a_trace(format!(
            "binary data ({} bytes seen), not a text table",
            head.len()
        ));
    }
    let text = String::from_utf8_lossy(&head);
    let first = text.lines().next().unwrap_or("");
    if first.starts_with("# tailor usage pool")
        || first.starts_with("ratio\t")
        || first.starts_with("series\t")
    {
        return Ok(Some((TableKind::UsagePool, None)));
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') || ext == "json" {
        if trimmed.starts_with('{') && trimmed.contains("\"jobs\"") {
            return Ok(Some((TableKind::WorkloadDistributions, None)));
        }
        return not_a_trace("a JSON document that is none of the formats read here".to_string());
    }
    let lines = || -> Result<u64, DatasetError> {
        let mut n = 0u64;
        for line in open(path)?.lines() {
            line.map_err(|e| DatasetError::io(path, e))?;
            n += 1;
        }
        Ok(n)
    };
    match ext {
        "md" | "markdown" => not_a_trace(format!(
            "Markdown text ({} lines): documentation, nothing to summarise",
            lines()?
        )),
        "toml" | "yaml" | "yml" | "ini" | "conf" => not_a_trace(format!(
            "a configuration file ({ext}, {} lines), not a trace",
            lines()?
        )),
        _ => Ok(None),
    }
}

/// The table of `path` and, for a file that is no trace, what it is.
fn detect(path: &Path) -> Result<(TableKind, Option<String>), DatasetError> {
    if let Some(found) = sniff(path)? {
        return Ok(found);
    }
    match format_of_header(&first_line(path, 4096)?) {
        Some(AlibabaGpuFormat::GpuV2025) => return Ok((TableKind::AlibabaGpuInstances, None)),
        Some(AlibabaGpuFormat::GpuV2023) => return Ok((TableKind::AlibabaGpuPods, None)),
        Some(AlibabaGpuFormat::GpuV2023Nodes) => return Ok((TableKind::AlibabaGpuNodes, None)),
        None => {}
    }
    let p = path.to_string_lossy().to_lowercase();
    for (needle, kind) in [
        ("task_events", TableKind::TaskEvents),
        ("job_events", TableKind::JobEvents),
        ("machine_events", TableKind::MachineEvents),
        ("task_usage", TableKind::TaskUsage),
        ("container_usage", TableKind::AlibabaContainerUsage),
        ("container_meta", TableKind::AlibabaContainerMeta),
        ("machine_meta", TableKind::AlibabaMachineMeta),
    ] {
        if p.contains(needle) {
            return Ok((kind, None));
        }
    }
    match detect_format(path)? {
        SeriesFormat::Bitbrains => return Ok((TableKind::BitbrainsVm, None)),
        SeriesFormat::Google2019InstanceUsage => {
            return Ok((TableKind::Google2019InstanceUsage, None))
        }
        SeriesFormat::AlibabaContainerUsage => return Ok((TableKind::AlibabaContainerUsage, None)),
        SeriesFormat::Google2011TaskUsage { .. } => return Ok((TableKind::TaskUsage, None)),
        SeriesFormat::GcdVmsTar | SeriesFormat::Google2011Derived => {
            return Ok((TableKind::Series, None))
        }
        SeriesFormat::Csv => {}
    }
    let line = first_line(path, 64 * 1024)?;
    let f: Vec<&str> = line.split(',').collect();
    let digit = |s: &str| s.bytes().next().is_some_and(|b| b.is_ascii_digit());
    let kind = match (f.len(), f.first().copied().unwrap_or("")) {
        (13, a) if digit(a) => TableKind::TaskEvents,
        (20, _) => TableKind::TaskUsage,
        (8, a) if a.starts_with("c_") => TableKind::AlibabaContainerMeta,
        (8, a) if digit(a) => TableKind::JobEvents,
        (7, a) if a.starts_with("m_") => TableKind::AlibabaMachineMeta,
        (6, a) if digit(a) => TableKind::MachineEvents,
        _ => TableKind::Series,
    };
    Ok((kind, None))
}

/// Quantiles of one distribution.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Quantiles {
    pub count: u64,
    pub mean: f64,
    pub min: f64,
    pub p5: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Quantiles {
    /// `None` for an empty sample. Sorts `v`.
    pub fn of(v: &mut [f64]) -> Option<Self> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        Some(Quantiles {
            count: v.len() as u64,
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v[0],
            p5: q(0.05),
            p25: q(0.25),
            p50: q(0.5),
            p75: q(0.75),
            p95: q(0.95),
            p99: q(0.99),
            max: v[v.len() - 1],
        })
    }
}

/// What [`inspect`] found in one file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub path: String,
    pub table: TableKind,
    pub rows: u64,
    /// Malformed rows skipped (lenient mode).
    pub skipped: u64,
    /// First and last timestamp in seconds (trace time; Google 2011 marker
    /// times 0 and 2^63-1 are excluded).
    pub time_span_s: Option<(f64, f64)>,
    /// Distinct jobs, tasks, machines, containers, series ...
    pub distinct: BTreeMap<String, u64>,
    /// Counts by category (event types, statuses, ...).
    pub counts: BTreeMap<String, BTreeMap<String, u64>>,
    /// Request and usage distributions.
    pub distributions: BTreeMap<String, Quantiles>,
    /// What the file is when it is not a trace table, or where tailor's own
    /// data files come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Default)]
struct Acc {
    rows: u64,
    t_min: Option<f64>,
    t_max: Option<f64>,
    distinct: BTreeMap<&'static str, HashSet<Vec<u8>>>,
    counts: BTreeMap<&'static str, BTreeMap<String, u64>>,
    values: BTreeMap<&'static str, Vec<f64>>,
}

impl Acc {
    fn time(&mut self, t: f64) {
        if t.is_finite() {
            self.t_min = Some(self.t_min.map_or(t, |m| m.min(t)));
            self.t_max = Some(self.t_max.map_or(t, |m| m.max(t)));
        }
    }
    fn distinct(&mut self, what: &'static str, key: impl AsRef<[u8]>) {
        let set = self.distinct.entry(what).or_default();
        if !set.contains(key.as_ref()) {
            set.insert(key.as_ref().to_vec());
        }
    }
    fn count(&mut self, what: &'static str, cat: impl Into<String>) {
        *self
            .counts
            .entry(what)
            .or_default()
            .entry(cat.into())
            .or_default() += 1;
    }
    fn value(&mut self, what: &'static str, v: Option<f64>) {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            self.values.entry(what).or_default().push(v);
        }
    }
    fn finish(self, path: &Path, table: TableKind, skipped: u64) -> Summary {
        Summary {
            path: path.display().to_string(),
            table,
            rows: self.rows,
            skipped,
            time_span_s: self.t_min.zip(self.t_max),
            distinct: self
                .distinct
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.len() as u64))
                .collect(),
            counts: self
                .counts
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            distributions: self
                .values
                .into_iter()
                .filter_map(|(k, mut v)| Quantiles::of(&mut v).map(|q| (k.to_string(), q)))
                .collect(),
            note: None,
        }
    }
}

fn scan<T: Table>(
    path: &Path,
    lenient: bool,
    acc: &mut Acc,
    mut f: impl FnMut(&mut Acc, T),
) -> Result<u64, DatasetError> {
    let mut r = TableReader::<T>::open(path, lenient)?;
    while let Some(row) = r.next_row()? {
        acc.rows += 1;
        f(acc, row);
    }
    Ok(r.skipped())
}

const G2011_MAX_TIME: u64 = 1 << 62;

fn g2011_time(acc: &mut Acc, t: u64) {
    if t > 0 && t < G2011_MAX_TIME {
        acc.time(t as f64 / 1e6);
    }
}

fn pair(a: u64, b: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&a.to_le_bytes());
    k[8..].copy_from_slice(&b.to_le_bytes());
    k
}

/// Summarises one file (`table` = `None`: detect it).
pub fn inspect(
    path: &Path,
    table: Option<TableKind>,
    lenient: bool,
) -> Result<Summary, DatasetError> {
    let (kind, mut note, detected) = match table {
        Some(k) => (k, None, false),
        None => {
            let (k, n) = detect(path)?;
            (k, n, true)
        }
    };
    let mut acc = Acc::default();
    let skipped = match kind {
        TableKind::TaskEvents => scan::<TaskEvent>(path, lenient, &mut acc, |a, e| {
            g2011_time(a, e.time_us);
            a.distinct("jobs", e.job_id.to_le_bytes());
            a.distinct("tasks", pair(e.job_id, e.task_index));
            if let Some(m) = e.machine_id {
                a.distinct("machines", m.to_le_bytes());
            }
            a.count("event type", e.event_type.as_str());
            a.count("priority", e.priority.to_string());
            if let Some(c) = e.scheduling_class {
                a.count("scheduling class", c.to_string());
            }
            a.value("CPU request (normalised)", e.cpu_request);
            a.value("memory request (normalised)", e.mem_request);
        })?,
        TableKind::JobEvents => scan::<JobEvent>(path, lenient, &mut acc, |a, e| {
            g2011_time(a, e.time_us);
            a.distinct("jobs", e.job_id.to_le_bytes());
            if let Some(u) = &e.user {
                a.distinct("users", u.as_bytes());
            }
            a.count("event type", e.event_type.as_str());
            if let Some(c) = e.scheduling_class {
                a.count("scheduling class", c.to_string());
            }
        })?,
        TableKind::MachineEvents => scan::<MachineEvent>(path, lenient, &mut acc, |a, e| {
            g2011_time(a, e.time_us);
            a.distinct("machines", e.machine_id.to_le_bytes());
            a.count("event type", format!("{:?}", e.event_type).to_uppercase());
            a.value("CPU capacity (normalised)", e.cpus);
            a.value("memory capacity (normalised)", e.memory);
        })?,
        TableKind::TaskUsage => scan::<TaskUsage>(path, lenient, &mut acc, |a, u| {
            g2011_time(a, u.start_time_us);
            g2011_time(a, u.end_time_us);
            a.distinct("jobs", u.job_id.to_le_bytes());
            a.distinct("tasks", pair(u.job_id, u.task_index));
            a.distinct("machines", u.machine_id.to_le_bytes());
            a.value("CPU rate (normalised)", u.cpu_rate);
            a.value("canonical memory usage (normalised)", u.canonical_memory);
            a.value(
                "window length (s)",
                Some(u.end_time_us.saturating_sub(u.start_time_us) as f64 / 1e6),
            );
        })?,
        TableKind::Google2019InstanceUsage => {
            scan::<InstanceUsage>(path, lenient, &mut acc, |a, u| {
                a.time(u.time_us as f64 / 1e6);
                a.distinct("collections", u.collection_id.to_le_bytes());
                a.distinct("instances", pair(u.collection_id, u.instance_index));
                if let Some(m) = u.machine_id {
                    a.distinct("machines", m.to_le_bytes());
                }
                if let Some(p) = u.priority {
                    a.count("priority", p.to_string());
                }
                a.value("avg CPU usage (NCU)", u.avg_cpu_usage);
                a.value("avg memory usage (NMU)", u.avg_memory_usage);
                a.value("CPU limit (NCU)", u.cpu_limit);
                a.value("memory limit (NMU)", u.memory_limit);
            })?
        }
        TableKind::AlibabaContainerUsage => {
            scan::<ContainerUsage>(path, lenient, &mut acc, |a, u| {
                a.time(u.time_s);
                a.distinct(
                    "containers",
                    u.container_id.as_deref().unwrap_or("").as_bytes(),
                );
                a.distinct("machines", u.machine_id.as_bytes());
                a.value("CPU util (%)", u.cpu_util_percent);
                a.value("memory util (%)", u.mem_util_percent);
            })?
        }
        TableKind::AlibabaContainerMeta => {
            scan::<ContainerMeta>(path, lenient, &mut acc, |a, m| {
                a.time(m.time_s);
                a.distinct("containers", m.container_id.as_bytes());
                if let Some(x) = &m.app_du {
                    a.distinct("app groups", x.as_bytes());
                }
                if let Some(s) = &m.status {
                    a.count("status", s.clone());
                }
                a.value("CPU request (cores)", m.cpu_request.map(|c| c / 100.0));
                a.value("memory size (normalised %)", m.mem_size);
            })?
        }
        TableKind::AlibabaMachineMeta => scan::<MachineMeta>(path, lenient, &mut acc, |a, m| {
            a.time(m.time_s);
            a.distinct("machines", m.machine_id.as_bytes());
            if let Some(s) = &m.status {
                a.count("status", s.clone());
            }
            a.value("CPUs", m.cpu_num);
            a.value("memory size (normalised %)", m.mem_size);
        })?,
        TableKind::AlibabaGpuInstances => scan::<DlrmInstance>(path, lenient, &mut acc, |a, i| {
            for t in [i.creation_time_s, i.scheduled_time_s, i.deletion_time_s]
                .into_iter()
                .flatten()
            {
                a.time(t);
            }
            a.distinct("apps", i.app_name.as_bytes());
            a.count("role", i.role.unwrap_or_else(|| "(none)".into()));
            a.count(
                "times",
                match (i.creation_time_s, i.deletion_time_s) {
                    (None, None) => "before start, after end",
                    (None, Some(_)) => "before start",
                    (Some(_), None) => "after end",
                    (Some(_), Some(_)) => "within the trace",
                },
            );
            a.value("CPU request (vCPU)", Some(i.cpu_request));
            a.value("memory request (GiB)", Some(i.memory_request_gib));
            a.value("GPU request", i.gpu_request);
        })?,
        TableKind::AlibabaGpuPods => scan::<OpenbPod>(path, lenient, &mut acc, |a, p| {
            for t in [p.creation_time_s, p.scheduled_time_s, p.deletion_time_s]
                .into_iter()
                .flatten()
            {
                a.time(t);
            }
            a.count("qos", p.qos.as_str());
            a.count("pod phase", p.pod_phase.unwrap_or_else(|| "(none)".into()));
            a.value("CPU request (cores)", Some(p.cpu_milli / 1000.0));
            a.value("memory request (MiB)", Some(p.memory_mib));
            a.value("GPUs", p.num_gpu);
            if let Some(c) = p.creation_time_s {
                a.value("lifetime (s)", p.deletion_time_s.map(|d| d - c));
            }
        })?,
        TableKind::AlibabaGpuNodes => scan::<OpenbNode>(path, lenient, &mut acc, |a, n| {
            a.distinct("nodes", n.sn.as_bytes());
            a.count("GPU model", n.model.unwrap_or_else(|| "(none)".into()));
            a.value("CPU capacity (cores)", Some(n.cpu_milli / 1000.0));
            a.value("memory capacity (MiB)", Some(n.memory_mib));
            a.value("GPUs", n.gpu);
        })?,
        TableKind::BitbrainsVm => scan::<VmSample>(path, lenient, &mut acc, |a, v| {
            a.time(v.time_s as f64);
            a.count("CPU cores", v.cpu_cores.to_string());
            a.value("CPU usage (MHz)", Some(v.cpu_usage_mhz));
            a.value("CPU usage (%)", Some(v.cpu_usage_percent));
            a.value("memory usage (KB)", Some(v.mem_usage_kb));
        })?,
        TableKind::Series => {
            let series = load_series(path, None).map_err(|e| {
                if detected {
                    let line = first_line(path, 200).unwrap_or_default();
                    DatasetError::format(
                        path,
                        format!(
                            "not a trace table this tool knows (first line: {line:?}); read as a usage series it fails: {e}"
                        ),
                    )
                } else {
                    e
                }
            })?;
            for s in &series {
                acc.rows += s.values.len() as u64;
                acc.distinct("series", s.name.as_bytes());
                acc.value("series length", Some(s.values.len() as f64));
                for &v in &s.values {
                    acc.value("values (default column)", Some(v));
                }
            }
            0
        }
        TableKind::UsagePool => {
            let pool = UsagePool::read(&path.display().to_string(), open(path)?)?;
            acc.rows = pool.series.len() as u64;
            let mean =
                |v: &[f32]| v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len().max(1) as f64;
            for p in &pool.series {
                acc.distinct("series", p.name.as_bytes());
                acc.count("interval (s)", format!("{}", p.interval_s));
                acc.value("series length (samples)", Some(p.cpu.len() as f64));
                acc.value("CPU shape mean (fraction of peak)", Some(mean(&p.cpu)));
                acc.value("memory shape mean (fraction of peak)", Some(mean(&p.mem)));
            }
            for &r in &pool.ratios.cpu {
                acc.value("CPU usage / request (per task)", Some(r));
            }
            for &r in &pool.ratios.mem {
                acc.value("memory usage / request (per task)", Some(r));
            }
            note = Some(
                "usage shapes the simulator draws component usage from (rows = series); see data/ATTRIBUTION.md".to_string(),
            );
            0
        }
        TableKind::WorkloadDistributions => {
            let d: EmpiricalDistributions = serde_json::from_reader(open(path)?).map_err(|e| {
                DatasetError::format(
                    path,
                    format!("not a tailor workload-distributions JSON: {e}"),
                )
            })?;
            acc.rows = d.jobs.len() as u64;
            for j in &d.jobs {
                acc.count("priority", j.priority.to_string());
                acc.count("scheduling class", j.scheduling_class.to_string());
                acc.value("tasks per job", Some(f64::from(j.tasks)));
                acc.value("CPU request (normalised)", Some(j.cpu));
                acc.value("memory request (normalised)", Some(j.mem));
            }
            for &q in &d.interarrival_s {
                acc.value("job inter-arrival quantiles (s)", Some(q));
            }
            for &q in &d.duration_s {
                acc.value("task duration quantiles (s)", Some(q));
            }
            note = Some(format!(
                "job records and quantiles the synthetic workload generator samples (rows = jobs); fitted from: {}",
                d.source
            ));
            0
        }
        TableKind::NotATrace => {
            if note.is_none() {
                note = Some("not a trace".to_string());
            }
            0
        }
    };
    let mut summary = acc.finish(path, kind, skipped);
    summary.note = note;
    Ok(summary)
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} ({})", self.path, self.table.as_str())?;
        if let Some(note) = &self.note {
            writeln!(f, "  {note}")?;
        }
        if self.table == TableKind::NotATrace {
            return Ok(());
        }
        write!(f, "  rows: {}", self.rows)?;
        if self.skipped > 0 {
            write!(f, " ({} malformed rows skipped)", self.skipped)?;
        }
        writeln!(f)?;
        if let Some((a, b)) = self.time_span_s {
            writeln!(
                f,
                "  time span: {a:.3} s .. {b:.3} s ({:.2} h)",
                (b - a) / 3600.0
            )?;
        }
        for (k, v) in &self.distinct {
            writeln!(f, "  {k}: {v}")?;
        }
        for (k, m) in &self.counts {
            let mut items: Vec<(&String, &u64)> = m.iter().collect();
            items.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let shown: Vec<String> = items
                .iter()
                .take(12)
                .map(|(c, n)| format!("{c}={n}"))
                .collect();
            let more = if items.len() > 12 {
                format!(" (+{} more)", items.len() - 12)
            } else {
                String::new()
            };
            writeln!(f, "  {k}: {}{more}", shown.join(" "))?;
        }
        for (k, q) in &self.distributions {
            writeln!(
                f,
                "  {k}: n={} mean={:.4} min={:.4} p5={:.4} p25={:.4} p50={:.4} p75={:.4} p95={:.4} p99={:.4} max={:.4}",
                q.count, q.mean, q.min, q.p5, q.p25, q.p50, q.p75, q.p95, q.p99, q.max
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_small_sample() {
        let mut v = vec![3.0, 1.0, 2.0, 4.0, 5.0];
        let q = Quantiles::of(&mut v).expect("q");
        assert_eq!(
            (q.min, q.p50, q.max, q.mean, q.count),
            (1.0, 3.0, 5.0, 3.0, 5)
        );
        assert!(Quantiles::of(&mut []).is_none());
    }

    #[test]
    fn inspects_the_repo_slice() {
        let p = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../data/google-2011-slice/task_events/part-00000-of-00500.csv.gz"
        ));
        let s = inspect(p, None, false).expect("inspect");
        assert_eq!(s.table, TableKind::TaskEvents);
        assert_eq!(s.rows, 2663);
        assert_eq!(s.distinct["tasks"], 1132);
        assert_eq!(s.distinct["jobs"], 363);
        let ev = &s.counts["event type"];
        assert_eq!(ev.values().sum::<u64>(), 2663);
        assert!(s.distributions.contains_key("CPU request (normalised)"));
        let text = s.to_string();
        assert!(
            text.contains("rows: 2663") && text.contains("event type: "),
            "{text}"
        );
    }

    #[test]
    fn inspects_the_alibaba_gpu_slices() {
        let dir = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../data/alibaba-gpu-slice"
        ));
        let s = inspect(
            &dir.join("gpu-v2025/disaggregated_DLRM_trace.csv"),
            None,
            false,
        )
        .expect("instances");
        assert_eq!(s.table, TableKind::AlibabaGpuInstances);
        assert_eq!((s.rows, s.distinct["apps"]), (314, 9));
        assert_eq!(s.time_span_s.map(|t| t.1), Some(172_246.0));
        assert_eq!(s.counts["times"].values().sum::<u64>(), 314);
        let s = inspect(
            &dir.join("gpu-v2023/openb_pod_list_default.csv"),
            None,
            false,
        )
        .expect("pods");
        assert_eq!(s.table, TableKind::AlibabaGpuPods);
        assert_eq!(s.rows, 200);
        assert_eq!(s.counts["qos"].len(), 4);
        let s = inspect(
            &dir.join("gpu-v2023/openb_node_list_all_node.csv"),
            None,
            false,
        )
        .expect("nodes");
        assert_eq!(s.table, TableKind::AlibabaGpuNodes);
        assert_eq!((s.rows, s.distinct["nodes"]), (1523, 1523));
        assert!(s.to_string().contains("alibaba gpu-v2023 node list"));
    }

    #[test]
    fn detects_tables_by_shape() {
        let dir = tempfile::tempdir().expect("tmp");
        let w = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).expect("write");
            detect_table(&p).expect("detect")
        };
        assert_eq!(
            w("a.csv", "0,,1,0,5,1,u,0,9,0.1,0.1,,\n"),
            TableKind::TaskEvents
        );
        assert_eq!(w("b.csv", "0,,1,0,u,3,n,l\n"), TableKind::JobEvents);
        assert_eq!(w("c.csv", "0,5,0,p,0.5,0.25\n"), TableKind::MachineEvents);
        assert_eq!(
            w("d.csv", "c_1,m_1,0,app,started,400,400,1.5\n"),
            TableKind::AlibabaContainerMeta
        );
        assert_eq!(
            w("e.csv", "m_1,0,219,17,96,100,USING\n"),
            TableKind::AlibabaMachineMeta
        );
        assert_eq!(w("f.csv", "1\n2\n"), TableKind::Series);
    }
}

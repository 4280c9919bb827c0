//! The rows of the Alibaba GPU lists, their headers and their parsers
//! (read with [`TableReader`](crate::TableReader)).

use crate::google2011::reader::{
    field, opt_nonneg_f64, opt_string, req_bounded, req_string, Table,
};
use crate::DatasetError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Latest time a row may carry (s from the trace start): 400 days (the
/// gpu-v2023 pod list spans 149 days, gpu-v2025 31). A later time is a
/// damaged row, and would make the replay simulate its years.
pub const MAX_TIME_S: f64 = crate::bounds::MAX_TRACE_TIME_S;
/// Largest CPU request or capacity in a row (cores).
pub const MAX_CORES: f64 = crate::bounds::MAX_CORES;
/// Largest memory request or capacity in a row (GiB): 2^30 GiB = 2^60 bytes.
pub const MAX_GIB: f64 = crate::bounds::MAX_BYTES / (1u64 << 30) as f64;
/// Bytes of a file's first line read to recognise its header.
const HEADER_LIMIT: u64 = 4096;

/// The file formats of this module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlibabaGpuFormat {
    /// `disaggregated_DLRM_trace.csv` ([`DlrmInstance`]).
    GpuV2025,
    /// `openb_pod_list_*.csv` ([`OpenbPod`]).
    GpuV2023,
    /// `openb_node_list_all_node.csv` ([`OpenbNode`]).
    GpuV2023Nodes,
}

impl AlibabaGpuFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            AlibabaGpuFormat::GpuV2025 => "gpu-v2025",
            AlibabaGpuFormat::GpuV2023 => "gpu-v2023",
            AlibabaGpuFormat::GpuV2023Nodes => "gpu-v2023 nodes",
        }
    }
}

/// The format whose header `line` (a file's first line) is: the exact
/// column names, in order (spaces around names, a trailing CR and a UTF-8
/// byte-order mark are ignored).
pub fn format_of_header(line: &str) -> Option<AlibabaGpuFormat> {
    let line = line.trim_start_matches('\u{feff}').trim_end();
    let cols: Vec<&str> = line.split(',').map(str::trim).collect();
    [
        (DlrmInstance::COLUMNS, AlibabaGpuFormat::GpuV2025),
        (OpenbPod::COLUMNS, AlibabaGpuFormat::GpuV2023),
        (OpenbNode::COLUMNS, AlibabaGpuFormat::GpuV2023Nodes),
    ]
    .into_iter()
    .find(|(c, _)| cols.as_slice() == *c)
    .map(|(_, f)| f)
}

/// The format of the file at `path` from its header; `None` for any other
/// file.
pub fn detect_format(path: &Path) -> Result<Option<AlibabaGpuFormat>, DatasetError> {
    Ok(format_of_header(&crate::io::first_line(
        path,
        HEADER_LIMIT,
    )?))
}

// ---------------------------------------------------------------------------
// Rows.

/// One instance of the gpu-v2025 DLRM inference trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DlrmInstance {
    pub instance_sn: String,
    /// `CN` (CPU node) or `HN` (heterogeneous GPU node).
    pub role: Option<String>,
    pub app_name: String,
    /// vCPU.
    pub cpu_request: f64,
    /// GPUs.
    pub gpu_request: Option<f64>,
    pub memory_request_gib: f64,
    /// Seconds from the trace start; `None`: before the trace started.
    pub creation_time_s: Option<f64>,
    pub scheduled_time_s: Option<f64>,
    /// Seconds from the trace start; `None`: after the trace ended.
    pub deletion_time_s: Option<f64>,
}

/// QoS class of a gpu-v2023 pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Qos {
    Guaranteed,
    /// Latency-sensitive.
    #[serde(rename = "LS")]
    Ls,
    Burstable,
    /// Best effort.
    #[serde(rename = "BE")]
    Be,
}

impl Qos {
    /// The value as written in the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            Qos::Guaranteed => "Guaranteed",
            Qos::Ls => "LS",
            Qos::Burstable => "Burstable",
            Qos::Be => "BE",
        }
    }

    fn parse(b: &[u8]) -> Option<Self> {
        Some(match b {
            b"Guaranteed" => Qos::Guaranteed,
            b"LS" => Qos::Ls,
            b"Burstable" => Qos::Burstable,
            b"BE" => Qos::Be,
            _ => return None,
        })
    }

    /// Workload priority (larger is more important): Guaranteed 3, LS 2,
    /// Burstable 1, BE 0.
    pub fn priority(self) -> i32 {
        match self {
            Qos::Guaranteed => 3,
            Qos::Ls => 2,
            Qos::Burstable => 1,
            Qos::Be => 0,
        }
    }
}

/// One pod of a gpu-v2023 pod list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenbPod {
    pub name: String,
    pub cpu_milli: f64,
    pub memory_mib: f64,
    pub num_gpu: Option<f64>,
    /// Thousandths of a GPU per GPU.
    pub gpu_milli: Option<f64>,
    pub gpu_spec: Option<String>,
    pub qos: Qos,
    /// `Running`, `Succeeded`, `Failed` or `Pending` (not checked).
    pub pod_phase: Option<String>,
    pub creation_time_s: Option<f64>,
    pub deletion_time_s: Option<f64>,
    /// `None`: never scheduled.
    pub scheduled_time_s: Option<f64>,
}

/// One node of the gpu-v2023 node list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenbNode {
    pub sn: String,
    /// > 0.
    pub cpu_milli: f64,
    /// > 0.
    pub memory_mib: f64,
    pub gpu: Option<f64>,
    pub model: Option<String>,
}

/// An optional time in `[0, MAX_TIME_S]` seconds; empty or `NaN` (the
/// traces' READMEs write NaN for "before the start" / "after the end") is
/// absent.
fn opt_time(r: &csv::ByteRecord, i: usize, col: &str) -> Result<Option<f64>, String> {
    if field(r, i).eq_ignore_ascii_case(b"nan") {
        return Ok(None);
    }
    match opt_nonneg_f64(r, i, col)? {
        Some(v) if v > MAX_TIME_S => Err(format!(
            "{col}: {} s is past the longest accepted trace ({MAX_TIME_S} s, 400 days)",
            String::from_utf8_lossy(field(r, i))
        )),
        v => Ok(v),
    }
}

/// Deletion at or after creation when both are given.
fn check_order(creation: Option<f64>, deletion: Option<f64>) -> Result<(), String> {
    match (creation, deletion) {
        (Some(c), Some(d)) if d < c => Err(format!(
            "deletion_time: {d} s is before creation_time {c} s"
        )),
        _ => Ok(()),
    }
}

impl Table for DlrmInstance {
    const NAME: &'static str = "gpu-v2025 instance list";
    const HEADER: Option<bool> = Some(true);
    const COLUMNS: &'static [&'static str] = &[
        "instance_sn",
        "role",
        "app_name",
        "cpu_request",
        "cpu_limit",
        "gpu_request",
        "gpu_limit",
        "rdma_request",
        "rdma_limit",
        "memory_request",
        "memory_limit",
        "disk_request",
        "disk_limit",
        "max_instance_per_node",
        "creation_time",
        "scheduled_time",
        "deletion_time",
    ];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        let creation = opt_time(r, 14, "creation_time")?;
        let deletion = opt_time(r, 16, "deletion_time")?;
        check_order(creation, deletion)?;
        Ok(DlrmInstance {
            instance_sn: req_string(r, 0, "instance_sn")?,
            role: opt_string(r, 1),
            app_name: req_string(r, 2, "app_name")?,
            cpu_request: req_bounded(r, 3, "cpu_request", MAX_CORES)?,
            gpu_request: opt_nonneg_f64(r, 5, "gpu_request")?,
            memory_request_gib: req_bounded(r, 9, "memory_request", MAX_GIB)?,
            creation_time_s: creation,
            scheduled_time_s: opt_time(r, 15, "scheduled_time")?,
            deletion_time_s: deletion,
        })
    }
}

impl Table for OpenbPod {
    const NAME: &'static str = "gpu-v2023 pod list";
    const HEADER: Option<bool> = Some(true);
    const COLUMNS: &'static [&'static str] = &[
        "name",
        "cpu_milli",
        "memory_mib",
        "num_gpu",
        "gpu_milli",
        "gpu_spec",
        "qos",
        "pod_phase",
        "creation_time",
        "deletion_time",
        "scheduled_time",
    ];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        let creation = opt_time(r, 8, "creation_time")?;
        let deletion = opt_time(r, 9, "deletion_time")?;
        check_order(creation, deletion)?;
        let q = field(r, 6);
        let qos = Qos::parse(q).ok_or_else(|| {
            format!(
                "qos: unknown value {:?} (expected Guaranteed, LS, Burstable or BE)",
                String::from_utf8_lossy(q)
            )
        })?;
        Ok(OpenbPod {
            name: req_string(r, 0, "name")?,
            cpu_milli: req_bounded(r, 1, "cpu_milli", MAX_CORES * 1000.0)?,
            memory_mib: req_bounded(r, 2, "memory_mib", MAX_GIB * 1024.0)?,
            num_gpu: opt_nonneg_f64(r, 3, "num_gpu")?,
            gpu_milli: opt_nonneg_f64(r, 4, "gpu_milli")?,
            gpu_spec: opt_string(r, 5),
            qos,
            pod_phase: opt_string(r, 7),
            creation_time_s: creation,
            deletion_time_s: deletion,
            scheduled_time_s: opt_time(r, 10, "scheduled_time")?,
        })
    }
}

impl Table for OpenbNode {
    const NAME: &'static str = "gpu-v2023 node list";
    const HEADER: Option<bool> = Some(true);
    const COLUMNS: &'static [&'static str] = &["sn", "cpu_milli", "memory_mib", "gpu", "model"];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        let positive = |i: usize, col: &str, max: f64| -> Result<f64, String> {
            let v = req_bounded(r, i, col, max)?;
            if v > 0.0 {
                Ok(v)
            } else {
                Err(format!(
                    "{col}: a node's capacity must be positive, got {v}"
                ))
            }
        };
        Ok(OpenbNode {
            sn: req_string(r, 0, "sn")?,
            cpu_milli: positive(1, "cpu_milli", MAX_CORES * 1000.0)?,
            memory_mib: positive(2, "memory_mib", MAX_GIB * 1024.0)?,
            gpu: opt_nonneg_f64(r, 3, "gpu")?,
            model: opt_string(r, 4),
        })
    }
}

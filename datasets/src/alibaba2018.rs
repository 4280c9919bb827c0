//! Alibaba cluster-trace-v2018 tables (no header; official column order from
//! `cluster-trace-v2018/schema.txt`). Read with
//! [`TableReader`](crate::google2011::reader::TableReader).

use crate::google2011::reader::{opt_f64, opt_string, opt_u64, req_f64, req_string, Table};
use serde::{Deserialize, Serialize};

/// One row of `container_usage` (11 columns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerUsage {
    /// Empty in some rows of the real table.
    pub container_id: Option<String>,
    pub machine_id: String,
    /// Seconds.
    pub time_s: f64,
    pub cpu_util_percent: Option<f64>,
    pub mem_util_percent: Option<f64>,
    pub cpi: Option<f64>,
    /// Normalised memory bandwidth, 0-100.
    pub mem_gps: Option<f64>,
    pub mpki: Option<f64>,
    pub net_in: Option<f64>,
    pub net_out: Option<f64>,
    /// 0-100; abnormal values are -1 or 101.
    pub disk_io_percent: Option<f64>,
}

impl Table for ContainerUsage {
    const NAME: &'static str = "container_usage";
    const HEADER: Option<bool> = Some(false);
    const COLUMNS: &'static [&'static str] = &crate::series::ALIBABA_CONTAINER_USAGE_COLUMNS;
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        Ok(ContainerUsage {
            container_id: opt_string(r, 0),
            machine_id: req_string(r, 1, "machine_id")?,
            time_s: req_f64(r, 2, "time_stamp")?,
            cpu_util_percent: opt_f64(r, 3, "cpu_util_percent")?,
            mem_util_percent: opt_f64(r, 4, "mem_util_percent")?,
            cpi: opt_f64(r, 5, "cpi")?,
            mem_gps: opt_f64(r, 6, "mem_gps")?,
            mpki: opt_f64(r, 7, "mpki")?,
            net_in: opt_f64(r, 8, "net_in")?,
            net_out: opt_f64(r, 9, "net_out")?,
            disk_io_percent: opt_f64(r, 10, "disk_io_percent")?,
        })
    }
}

/// One row of `container_meta` (8 columns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerMeta {
    pub container_id: String,
    pub machine_id: Option<String>,
    pub time_s: f64,
    /// Application group.
    pub app_du: Option<String>,
    pub status: Option<String>,
    /// 100 = 1 core.
    pub cpu_request: Option<f64>,
    /// 100 = 1 core.
    pub cpu_limit: Option<f64>,
    /// Normalised, 0-100.
    pub mem_size: Option<f64>,
}

impl Table for ContainerMeta {
    const NAME: &'static str = "container_meta";
    const HEADER: Option<bool> = Some(false);
    const COLUMNS: &'static [&'static str] = &[
        "container_id",
        "machine_id",
        "time_stamp",
        "app_du",
        "status",
        "cpu_request",
        "cpu_limit",
        "mem_size",
    ];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        Ok(ContainerMeta {
            container_id: req_string(r, 0, "container_id")?,
            machine_id: opt_string(r, 1),
            time_s: req_f64(r, 2, "time_stamp")?,
            app_du: opt_string(r, 3),
            status: opt_string(r, 4),
            cpu_request: opt_f64(r, 5, "cpu_request")?,
            cpu_limit: opt_f64(r, 6, "cpu_limit")?,
            mem_size: opt_f64(r, 7, "mem_size")?,
        })
    }
}

/// One row of `machine_meta` (7 columns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineMeta {
    pub machine_id: String,
    pub time_s: f64,
    pub failure_domain_1: Option<u64>,
    pub failure_domain_2: Option<String>,
    pub cpu_num: Option<f64>,
    /// Normalised, 0-100.
    pub mem_size: Option<f64>,
    pub status: Option<String>,
}

impl Table for MachineMeta {
    const NAME: &'static str = "machine_meta";
    const HEADER: Option<bool> = Some(false);
    const COLUMNS: &'static [&'static str] = &[
        "machine_id",
        "time_stamp",
        "failure_domain_1",
        "failure_domain_2",
        "cpu_num",
        "mem_size",
        "status",
    ];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        Ok(MachineMeta {
            machine_id: req_string(r, 0, "machine_id")?,
            time_s: req_f64(r, 1, "time_stamp")?,
            failure_domain_1: opt_u64(r, 2, "failure_domain_1")?,
            failure_domain_2: opt_string(r, 3),
            cpu_num: opt_f64(r, 4, "cpu_num")?,
            mem_size: opt_f64(r, 5, "mem_size")?,
            status: opt_string(r, 6),
        })
    }
}

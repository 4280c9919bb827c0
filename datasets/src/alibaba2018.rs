//! Alibaba cluster-trace-v2018 tables (no header; official column order from
//! `cluster-trace-v2018/schema.txt`). Read with
//! [`TableReader`](crate::google2011::reader::TableReader).
//!
//! Values are checked with the shared rule ([`crate::bounds::in_range`]);
//! one out of its range is an error naming the file, the line and the
//! column:
//! - times (`time_stamp`, s from the trace start; the trace spans 8 days)
//!   in [0, [`MAX_TRACE_TIME_S`]] (400 days);
//! - utilisations and the schema's normalised [0, 100] columns
//!   (`cpu_util_percent`, `mem_util_percent`, `mem_gps`, `net_in`,
//!   `net_out`, `mem_size`) in [0, 100]; `disk_io_percent` in [-1, 101]
//!   (the schema's abnormal values are -1 and 101);
//! - `cpi` and `mpki` in [0, [`MAX_AMOUNT`]];
//! - `cpu_request` and `cpu_limit` (100 = 1 core) in [0, 100 x
//!   [`MAX_CORES`]]; `cpu_num` in [0, [`MAX_CORES`]].

use crate::bounds::{MAX_AMOUNT, MAX_CORES, MAX_PERCENT, MAX_TRACE_TIME_S};
use crate::google2011::reader::{
    opt_bounded, opt_in_range, opt_string, opt_u64, req_bounded, req_string, Table,
};

/// A time column: seconds from the trace start, in [0, [`MAX_TRACE_TIME_S`]].
fn req_time_s(r: &csv::ByteRecord, i: usize) -> Result<f64, String> {
    req_bounded(r, i, "time_stamp", MAX_TRACE_TIME_S)
}
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
            time_s: req_time_s(r, 2)?,
            cpu_util_percent: opt_bounded(r, 3, "cpu_util_percent", MAX_PERCENT)?,
            mem_util_percent: opt_bounded(r, 4, "mem_util_percent", MAX_PERCENT)?,
            cpi: opt_bounded(r, 5, "cpi", MAX_AMOUNT)?,
            mem_gps: opt_bounded(r, 6, "mem_gps", MAX_PERCENT)?,
            mpki: opt_bounded(r, 7, "mpki", MAX_AMOUNT)?,
            net_in: opt_bounded(r, 8, "net_in", MAX_PERCENT)?,
            net_out: opt_bounded(r, 9, "net_out", MAX_PERCENT)?,
            disk_io_percent: opt_in_range(r, 10, "disk_io_percent", -1.0, MAX_PERCENT + 1.0)?,
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
            time_s: req_time_s(r, 2)?,
            app_du: opt_string(r, 3),
            status: opt_string(r, 4),
            cpu_request: opt_bounded(r, 5, "cpu_request", 100.0 * MAX_CORES)?,
            cpu_limit: opt_bounded(r, 6, "cpu_limit", 100.0 * MAX_CORES)?,
            mem_size: opt_bounded(r, 7, "mem_size", MAX_PERCENT)?,
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
            time_s: req_time_s(r, 1)?,
            failure_domain_1: opt_u64(r, 2, "failure_domain_1")?,
            failure_domain_2: opt_string(r, 3),
            cpu_num: opt_bounded(r, 4, "cpu_num", MAX_CORES)?,
            mem_size: opt_bounded(r, 5, "mem_size", MAX_PERCENT)?,
            status: opt_string(r, 6),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TableReader;

    fn first_error<T: Table>(text: &'static str) -> String {
        let mut r = TableReader::<T>::from_static("a.csv", text.as_bytes(), false);
        loop {
            match r.next_row() {
                Ok(Some(_)) => {}
                Ok(None) => return String::new(),
                Err(e) => return e.to_string(),
            }
        }
    }

    /// QA E7: times of 2^64 or -1 s, utilisation above 100 % or below 0,
    /// and 1e300 anywhere are errors naming the file, the line and the
    /// column (they were accepted: `trace inspect` showed a span of
    /// 5e15 h); the schema's abnormal disk values -1 and 101 are read.
    #[test]
    fn values_out_of_range_are_refused() {
        let ok = ",m_1,100,10,50,1.5,0.1,1,0,0,101\n,m_1,200,100,50,,,,0,0,-1\n";
        assert_eq!(first_error::<ContainerUsage>(ok), "");
        for (row, want) in [
            (
                ",m_1,18446744073709551616,10,50,,,,0,0,2\n",
                "a.csv:1: time_stamp: 1.8446744073709552e19 is above the largest accepted",
            ),
            (
                ",m_1,-1,10,50,,,,0,0,2\n",
                "a.csv:1: time_stamp: -1 is negative",
            ),
            (
                ",m_1,100,150,50,,,,0,0,2\n",
                "a.csv:1: cpu_util_percent: 150 is above the largest accepted, 100",
            ),
            (
                ",m_1,100,-5,50,,,,0,0,2\n",
                "a.csv:1: cpu_util_percent: -5 is negative",
            ),
            (
                ",m_1,100,10,50,1e300,,,0,0,2\n",
                "a.csv:1: cpi: 1e300 is above",
            ),
            (
                ",m_1,100,10,50,,,,0,0,102\n",
                "a.csv:1: disk_io_percent: 102 is above the largest accepted, 101",
            ),
        ] {
            let text: &'static str = Box::leak(row.to_string().into_boxed_str());
            let e = first_error::<ContainerUsage>(text);
            assert!(e.contains(want), "{row}: {e}");
        }
        let e = first_error::<ContainerMeta>("c_1,m_1,0,app,started,1e300,400,1.5\n");
        assert!(e.contains("a.csv:1: cpu_request: 1e300 is above"), "{e}");
        let e = first_error::<MachineMeta>("m_1,0,1,2,96,1e300,USING\n");
        assert!(
            e.contains("a.csv:1: mem_size: 1e300 is above the largest accepted, 100"),
            "{e}"
        );
    }
}

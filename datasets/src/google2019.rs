//! Google clusterdata-2019 `instance_usage` rows as found in
//! `../shared/data/google-2019/instance_usage_job113/*.csv`: a BigQuery
//! export with a header of 40 flat columns (the nested CPU histogram
//! flattened into `p0_cpu_usage` … `p99_cpu_usage`). Time in µs; CPU and
//! memory in normalised units (NCU/NMU). Read with
//! [`TableReader<InstanceUsage>`](crate::google2011::reader::TableReader).

use crate::google2011::reader::{opt_f64, opt_i64, opt_small, opt_string, opt_u64, req_u64, Table};
use serde::{Deserialize, Serialize};

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
            *p = opt_f64(r, 17 + k, Self::COLUMNS[17 + k])?;
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
            avg_cpu_usage: opt_f64(r, 10, "avg_cpu_usage")?,
            avg_memory_usage: opt_f64(r, 11, "avg_memory_usage")?,
            max_cpu_usage: opt_f64(r, 12, "max_cpu_usage")?,
            max_memory_usage: opt_f64(r, 13, "max_memory_usage")?,
            random_sample_cpu_usage: opt_f64(r, 14, "random_sample_cpu_usage")?,
            assigned_memory: opt_f64(r, 15, "assigned_memory")?,
            sample_rate: opt_f64(r, 16, "sample_rate")?,
            cpu_usage_percentiles: pct,
            memory_limit: opt_f64(r, 36, "memory_limit")?,
            cpu_limit: opt_f64(r, 37, "cpu_limit")?,
            abstract_usage: opt_f64(r, 38, "abstract_usage")?,
            abstract_limit: opt_f64(r, 39, "abstract_limit")?,
        })
    }
}

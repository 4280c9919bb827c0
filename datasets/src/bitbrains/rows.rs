//! Bitbrains GWA-T-12 per-VM files: a header row, fields separated by `;` +
//! TAB, 11 columns. Read with
//! [`TableReader<VmSample>`](crate::google2011::reader::TableReader).

use crate::google2011::reader::{req_bounded, req_f64, req_u64, Table};
use serde::{Deserialize, Serialize};

/// Latest accepted timestamp, Unix seconds (year 2286).
pub const MAX_UNIX_S: u64 = 10_000_000_000;
/// Most cores, MHz, percent and KB accepted in a row (2^50 KB = 2^60 bytes).
pub const MAX_CORES: f64 = crate::bounds::MAX_CORES;
pub const MAX_MHZ: f64 = 1.0e12;
pub const MAX_PERCENT: f64 = 1.0e6;
pub const MAX_KB: f64 = crate::bounds::MAX_BYTES / 1024.0;

/// One 300 s sample of one VM.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VmSample {
    /// Unix seconds (the header says `[ms]`, the values are seconds).
    pub time_s: u64,
    pub cpu_cores: f64,
    pub cpu_capacity_mhz: f64,
    pub cpu_usage_mhz: f64,
    pub cpu_usage_percent: f64,
    pub mem_capacity_kb: f64,
    pub mem_usage_kb: f64,
    pub disk_read_kb_per_s: f64,
    pub disk_write_kb_per_s: f64,
    pub net_rx_kb_per_s: f64,
    pub net_tx_kb_per_s: f64,
}

impl Table for VmSample {
    const NAME: &'static str = "bitbrains-vm";
    const DELIMITER: u8 = b';';
    const TRIM: bool = true;
    const HEADER: Option<bool> = Some(true);
    const COLUMNS: &'static [&'static str] = &[
        "Timestamp [ms]",
        "CPU cores",
        "CPU capacity provisioned [MHZ]",
        "CPU usage [MHZ]",
        "CPU usage [%]",
        "Memory capacity provisioned [KB]",
        "Memory usage [KB]",
        "Disk read throughput [KB/s]",
        "Disk write throughput [KB/s]",
        "Network received throughput [KB/s]",
        "Network transmitted throughput [KB/s]",
    ];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        Ok(VmSample {
            time_s: match req_u64(r, 0, "Timestamp [ms]")? {
                t if t > MAX_UNIX_S => {
                    return Err(format!(
                        "Timestamp [ms]: {t} s is past the latest accepted, {MAX_UNIX_S} (Unix seconds)"
                    ))
                }
                t => t,
            },
            cpu_cores: req_bounded(r, 1, "CPU cores", MAX_CORES)?,
            cpu_capacity_mhz: req_bounded(r, 2, "CPU capacity provisioned [MHZ]", MAX_MHZ)?,
            cpu_usage_mhz: req_bounded(r, 3, "CPU usage [MHZ]", MAX_MHZ)?,
            cpu_usage_percent: req_bounded(r, 4, "CPU usage [%]", MAX_PERCENT)?,
            mem_capacity_kb: req_bounded(r, 5, "Memory capacity provisioned [KB]", MAX_KB)?,
            mem_usage_kb: req_bounded(r, 6, "Memory usage [KB]", MAX_KB)?,
            disk_read_kb_per_s: req_f64(r, 7, "Disk read throughput [KB/s]")?,
            disk_write_kb_per_s: req_f64(r, 8, "Disk write throughput [KB/s]")?,
            net_rx_kb_per_s: req_f64(r, 9, "Network received throughput [KB/s]")?,
            net_tx_kb_per_s: req_f64(r, 10, "Network transmitted throughput [KB/s]")?,
        })
    }
}

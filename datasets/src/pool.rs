//! A pool of real usage shapes, and how a component's usage series is drawn
//! from it.
//!
//! Every pool entry pairs a CPU and a memory series from the same real
//! source (a Bitbrains VM, a Google 2019 instance, a Google 2011 derived job
//! series, an Alibaba container), each normalised to its own peak (values in
//! `[0, 1]`, stored as `Arc<[f32]>` so components share them).
//!
//! A component gets its usage from the pool as follows ([`UsagePool::usage_for`]):
//! a pool entry and a starting phase are picked from a hash of the
//! component's key and the seed; a mean usage fraction of the request `r` is
//! drawn from the empirical usage/request distribution ([`RequestRatios`],
//! measured on the Google 2011 task_usage sample joined with task_events
//! part 0); the shape (peak 1, mean `m`) is then scaled by
//! `request * min(r / m, 1)`, so its mean is `r * request` unless that would
//! put its peak above the request, in which case the peak equals the
//! request. Usage therefore never exceeds the request: as in the thesis
//! (chapter 4, footnote 1), usage above the reservation is not modelled.
//!
//! The pool shipped in the binary ([`UsagePool::bundled`]) is a slice of the
//! real series in `../shared/data` (see `data/ATTRIBUTION.md`); [`load_pool`]
//! builds a pool from the real files.

use crate::series::{detect_format, load_series, SeriesFormat};
use crate::workload::{Resources, Shape, UsageSeries};
use crate::DatasetError;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

/// Seconds between two samples of every series in the shipped pool and in
/// the formats [`load_pool`] reads (all are 300 s series, except Alibaba's
/// irregular samples, which are used as if they were 300 s apart).
pub const POOL_INTERVAL_S: f64 = 300.0;

/// One entry of the pool: CPU and memory shapes of one real source,
/// normalised to peak 1.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolSeries {
    pub name: String,
    pub interval_s: f64,
    pub cpu: Arc<[f32]>,
    pub mem: Arc<[f32]>,
}

impl PoolSeries {
    /// Builds an entry from raw values (any unit), normalising each to its
    /// peak. `None` when either series is empty, has a non-positive peak, or
    /// the lengths differ.
    pub fn from_raw(
        name: impl Into<String>,
        interval_s: f64,
        cpu: &[f64],
        mem: &[f64],
    ) -> Option<Self> {
        if cpu.len() != mem.len() || cpu.len() < 2 {
            return None;
        }
        Some(PoolSeries {
            name: name.into(),
            interval_s,
            cpu: normalise(cpu)?,
            mem: normalise(mem)?,
        })
    }
}

fn normalise(v: &[f64]) -> Option<Arc<[f32]>> {
    let peak = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !peak.is_finite() || peak <= 0.0 {
        return None;
    }
    Some(v.iter().map(|x| (x.max(0.0) / peak) as f32).collect())
}

fn mean(v: &[f32]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64
}

/// Empirical distribution of mean usage / request per task (sorted samples,
/// used as quantiles).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestRatios {
    pub cpu: Vec<f64>,
    pub mem: Vec<f64>,
}

impl RequestRatios {
    /// Quantile `u` in `[0, 1)` of a sorted sample (0 when empty).
    fn quantile(sorted: &[f64], u: f64) -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let i = ((u * sorted.len() as f64) as usize).min(sorted.len() - 1);
        sorted[i]
    }
}

/// The usage-series pool plus the usage/request ratio distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct UsagePool {
    pub series: Vec<PoolSeries>,
    pub ratios: RequestRatios,
}

/// SplitMix64: a fast, well-mixed hash used to derive per-component picks.
pub(crate) fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

const BUNDLED_POOL: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/usage-pool.txt.gz"
));

impl UsagePool {
    /// The pool shipped inside the binary (a slice of the real series; see
    /// `data/ATTRIBUTION.md`).
    pub fn bundled() -> Result<UsagePool, DatasetError> {
        UsagePool::read(
            "data/usage-pool.txt.gz",
            crate::io::open_bytes(BUNDLED_POOL),
        )
    }

    /// Reads the text pool format written by [`UsagePool::write`]:
    /// lines `ratio<TAB>cpu|mem<TAB>v,v,...` (sorted ratio samples) and
    /// `series<TAB>name<TAB>interval_s<TAB>cpu per-mille,...<TAB>mem per-mille,...`
    /// (values in thousandths of the peak). `#` starts a comment line.
    pub fn read<R: BufRead>(name: &str, r: R) -> Result<UsagePool, DatasetError> {
        let mut series = Vec::new();
        let mut ratios = RequestRatios {
            cpu: Vec::new(),
            mem: Vec::new(),
        };
        for (i, line) in r.lines().enumerate() {
            let lno = i as u64 + 1;
            let line = line.map_err(|e| DatasetError::io(name, e))?;
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = line.split('\t').collect();
            let nums = |s: &str| -> Result<Vec<f64>, DatasetError> {
                s.split(',')
                    .map(|x| {
                        x.trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|v| v.is_finite())
                            .ok_or_else(|| {
                                DatasetError::row(
                                    name,
                                    lno,
                                    format!("{x:?} is not a finite number"),
                                )
                            })
                    })
                    .collect()
            };
            match f.as_slice() {
                ["ratio", "cpu", v] => ratios.cpu = nums(v)?,
                ["ratio", "mem", v] => ratios.mem = nums(v)?,
                ["series", n, interval, cpu, mem] => {
                    let interval_s: f64 = interval
                        .parse()
                        .ok()
                        .filter(|v: &f64| *v > 0.0)
                        .ok_or_else(|| DatasetError::row(name, lno, "bad interval"))?;
                    let c: Vec<f64> = nums(cpu)?;
                    let m: Vec<f64> = nums(mem)?;
                    match PoolSeries::from_raw(*n, interval_s, &c, &m) {
                        Some(s) => series.push(s),
                        None => tracing::debug!(series = n, "skipping flat or empty pool series"),
                    }
                }
                _ => {
                    return Err(DatasetError::row(
                        name,
                        lno,
                        "expected a `ratio` or `series` line",
                    ))
                }
            }
        }
        ratios.cpu.sort_by(f64::total_cmp);
        ratios.mem.sort_by(f64::total_cmp);
        if series.is_empty() {
            return Err(DatasetError::format(name, "pool holds no series"));
        }
        Ok(UsagePool { series, ratios })
    }

    /// Writes the pool in the text format [`UsagePool::read`] reads (values
    /// quantised to thousandths of the peak; ratios to 4 significant digits).
    pub fn write<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        let fmt_ratio = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.4e}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        writeln!(
            w,
            "# tailor usage pool: shapes normalised to peak = 1000; see data/ATTRIBUTION.md"
        )?;
        writeln!(w, "ratio\tcpu\t{}", fmt_ratio(&self.ratios.cpu))?;
        writeln!(w, "ratio\tmem\t{}", fmt_ratio(&self.ratios.mem))?;
        let q = |v: &[f32]| {
            v.iter()
                .map(|x| format!("{}", (x * 1000.0).round() as i64))
                .collect::<Vec<_>>()
                .join(",")
        };
        for s in &self.series {
            writeln!(
                w,
                "series\t{}\t{}\t{}\t{}",
                s.name.replace(['\t', '\n'], " "),
                s.interval_s,
                q(&s.cpu),
                q(&s.mem)
            )?;
        }
        Ok(())
    }

    /// The usage series of a component with request `request`, derived
    /// deterministically from `key` (e.g. a hash of job ID and task index)
    /// and `seed` (see the module docs for the rule).
    pub fn usage_for(&self, key: u64, seed: u64, request: Resources) -> UsageSeries {
        if self.series.is_empty() {
            return UsageSeries {
                interval_s: POOL_INTERVAL_S,
                cpu_cores: Shape::constant(request.cpu_cores),
                mem_bytes: Shape::constant(request.mem_bytes),
            };
        }
        let h = mix64(key ^ mix64(seed));
        let s = &self.series[(h % self.series.len() as u64) as usize];
        let h2 = mix64(h);
        let offset = (h2 % s.cpu.len().max(1) as u64) as u32;
        let h3 = mix64(h2);
        let h4 = mix64(h3);
        let rc = RequestRatios::quantile(&self.ratios.cpu, unit(h3));
        let rm = RequestRatios::quantile(&self.ratios.mem, unit(h4));
        let scale = |ratio: f64, shape: &[f32], req: f64| {
            let m = mean(shape);
            if m <= 0.0 || ratio <= 0.0 {
                0.0
            } else {
                req * (ratio / m).min(1.0)
            }
        };
        UsageSeries {
            interval_s: s.interval_s,
            cpu_cores: Shape {
                values: s.cpu.clone(),
                scale: scale(rc, &s.cpu, request.cpu_cores),
                offset,
            },
            mem_bytes: Shape {
                values: s.mem.clone(),
                scale: scale(rm, &s.mem, request.mem_bytes),
                offset,
            },
        }
    }
}

/// Default (CPU, memory) columns per format for [`load_pool`].
fn pool_columns(format: SeriesFormat) -> Option<(&'static str, &'static str)> {
    match format {
        SeriesFormat::Bitbrains => Some(("CPU usage [MHZ]", "Memory usage [KB]")),
        SeriesFormat::Google2019InstanceUsage => Some(("avg_cpu_usage", "avg_memory_usage")),
        SeriesFormat::Google2011Derived => Some(("meanCPUUsage", "canonical_memory_usage")),
        SeriesFormat::GcdVmsTar => Some(("cpu", "mem")),
        SeriesFormat::AlibabaContainerUsage => Some(("cpu_util_percent", "mem_util_percent")),
        SeriesFormat::Csv => None,
    }
}

/// Builds a pool from real series files (any format of
/// [`crate::series::load_series`] that has both a CPU and a memory column:
/// Bitbrains, Google 2019 instance_usage, Google 2011 derived, GCD_VMs
/// archives, Alibaba container_usage), pairing the CPU and memory series of
/// each source. `ratios` is the usage/request distribution to use (e.g.
/// `UsagePool::bundled()?.ratios`). Series shorter than `min_len` samples or
/// flat at zero are left out.
pub fn load_pool(
    paths: &[&Path],
    ratios: RequestRatios,
    min_len: usize,
) -> Result<UsagePool, DatasetError> {
    let mut series = Vec::new();
    for &path in paths {
        let format = detect_format(path)?;
        let Some((c, m)) = pool_columns(format) else {
            return Err(DatasetError::format(
                path,
                "not a format with CPU and memory columns",
            ));
        };
        let cpu = load_series(path, Some(c))?;
        let mem = load_series(path, Some(m))?;
        for (a, b) in cpu.iter().zip(&mem) {
            if a.values.len() < min_len.max(2) {
                continue;
            }
            let name = a
                .name
                .rsplit_once(':')
                .map(|(n, _)| n.to_string())
                .unwrap_or_else(|| a.name.clone());
            if let Some(p) = PoolSeries::from_raw(name, POOL_INTERVAL_S, &a.values, &b.values) {
                series.push(p);
            }
        }
    }
    if series.is_empty() {
        return Err(DatasetError::Empty("no usable series for the pool".into()));
    }
    Ok(UsagePool { series, ratios })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> UsagePool {
        UsagePool {
            series: vec![
                PoolSeries::from_raw("a", 300.0, &[1.0, 2.0, 4.0, 1.0], &[2.0, 2.0, 2.0, 4.0])
                    .expect("a"),
                PoolSeries::from_raw("b", 300.0, &[0.0, 5.0], &[1.0, 1.0]).expect("b"),
            ],
            ratios: RequestRatios {
                cpu: vec![0.1, 0.2, 0.9],
                mem: vec![0.5, 0.7, 0.99],
            },
        }
    }

    #[test]
    fn usage_never_exceeds_request_and_is_deterministic() {
        let p = pool();
        let req = Resources::new(2.0, 1e9);
        for key in 0..200u64 {
            let u = p.usage_for(key, 7, req);
            assert_eq!(u, p.usage_for(key, 7, req));
            for i in 0..10 {
                let r = u.at(i as f64 * 300.0);
                assert!(r.cpu_cores <= req.cpu_cores * (1.0 + 1e-6) && r.cpu_cores >= 0.0);
                assert!(r.mem_bytes <= req.mem_bytes * (1.0 + 1e-6) && r.mem_bytes >= 0.0);
            }
        }
    }

    #[test]
    fn roundtrip_text_format() {
        let p = pool();
        let mut buf = Vec::new();
        p.write(&mut buf).expect("write");
        let q = UsagePool::read("mem", buf.as_slice()).expect("read");
        assert_eq!(q.series.len(), 2);
        assert_eq!(q.series[0].name, "a");
        assert_eq!(&*q.series[0].cpu, &[0.25f32, 0.5, 1.0, 0.25][..]);
        assert_eq!(q.ratios.mem, vec![0.5, 0.7, 0.99]);
        assert!(UsagePool::read("x", "bogus line\n".as_bytes()).is_err());
    }

    #[test]
    fn flat_series_are_rejected() {
        assert!(PoolSeries::from_raw("z", 300.0, &[0.0, 0.0], &[1.0, 1.0]).is_none());
        assert!(PoolSeries::from_raw("z", 300.0, &[1.0], &[1.0]).is_none());
    }
}

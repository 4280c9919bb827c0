//! A pool of real usage shapes, and how a component's usage series is drawn
//! from it.
//!
//! Every pool entry pairs a CPU and a memory series from the same real
//! source (a Bitbrains VM, a Google 2019 instance, a Google 2011 derived job
//! series, an Alibaba container), each normalised to its own peak (values in
//! `[0, 1]`, stored as `Arc<[f32]>` so components share them).
//!
//! # How a component draws its usage ([`UsagePool::usage_for_task`])
//!
//! Draws are keyed by the component's job and task index and the seed, and
//! keep the **job-level coherence** measured on the real sample (see
//! [`crate::coherence`] and `datasets/README.md`): siblings share a shape
//! and a usage/request level, and differ by a per-task spread.
//!
//! - **Shape** (job level): a pool entry and a starting phase are picked
//!   from a hash of the job key and the seed; every task of the job uses the
//!   same entry at the same phase ([`PoolPhase::Job`], the default), or
//!   the same entry at a phase of its own ([`PoolPhase::Task`]).
//! - **CPU** (with [`JobCoherence`]): `log(mean CPU / request)` = a job-level
//!   draw from the job-mean quantiles + a task-level draw from the
//!   within-job residual quantiles.
//! - **Memory**: `log(peak memory / request)` = job-level draw + task-level
//!   residual, the same way; a job-level peak factor `f >= 1` (in-window
//!   peak / mean, from the sample) gives the mean ratio `r = peak ratio / f`.
//!   The in-interval peak series is the mean series times `f`
//!   ([`UsageSeries::mem_peak_bytes`]).
//! - **Scaling**: a shape (peak 1, mean `m`) with target mean ratio `r`
//!   (`f = 1` for CPU; `r` capped at `1 / f`) is scaled by `request * r / m`
//!   when its (in-interval) peak stays at or below the request; otherwise it
//!   is compressed around its mean (`request * (r + k (v - m))`, with `k`
//!   such that the peak equals the request; [`Shape::bias`]), so its mean
//!   is always `r * request` and the drawn ratio levels are kept. Usage
//!   never exceeds the request: as in the thesis (chapter 4, footnote 1),
//!   usage above the reservation is not modelled.
//!
//! A pool without [`JobCoherence`] (an old pool file) draws each task's
//! mean ratios independently from the task-level quantiles
//! ([`RequestRatios::cpu`], [`RequestRatios::mem`]), with no peak series;
//! the shape is still shared per job.
//!
//! The pool shipped in the binary ([`UsagePool::bundled`]) is a slice of the
//! real series in `../shared/data` (see `data/ATTRIBUTION.md`); [`load_pool`]
//! builds a pool from the real files.

use crate::coherence::{log_components, variance_split, Ratio, TaskRatios};
use crate::series::{detect_format, load_series, SeriesFormat};
use crate::workload::{Resources, Shape, UsageSeries};
use crate::DatasetError;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

/// How the tasks of a job are placed on their shared shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolPhase {
    /// Every task replays the job's shape from the job's phase (the
    /// issue's rule, the default): a jump of the shape is a jump of every
    /// sibling at the same age.
    #[default]
    Job,
    /// Every task replays the job's shape from a phase of its own: the
    /// same usage character and level, jumps at different ages. Real
    /// siblings sit between the two (`scripts/reference/sibling_jumps.py`).
    Task,
}

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
/// used as quantiles), and the job-level coherence of those ratios.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestRatios {
    /// Task-level mean CPU usage / CPU request quantiles.
    pub cpu: Vec<f64>,
    /// Task-level mean memory usage / memory request quantiles.
    pub mem: Vec<f64>,
    /// Job-level coherence; `None`: independent per-task draws from `cpu`
    /// and `mem`.
    pub job: Option<JobCoherence>,
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

/// How siblings' usage/request ratios relate, measured on the Google 2011
/// task_usage sample joined with the task_events requests (jobs with at
/// least [`COHERENCE_MIN_TASKS`] tasks; see [`crate::coherence`]). Every
/// vector is a sorted quantile sample; `*_job_log` hold one entry per task
/// (its job's mean of the log ratio, so jobs are weighted by their task
/// count), `*_resid_log` each task's deviation from its job's mean.
#[derive(Clone, Debug, PartialEq)]
pub struct JobCoherence {
    /// Job means of `log(mean CPU rate / CPU request)`.
    pub cpu_job_log: Vec<f64>,
    /// Within-job residuals of `log(mean CPU rate / CPU request)`.
    pub cpu_resid_log: Vec<f64>,
    /// Job means of `log(peak memory / memory request)` (peak = the
    /// in-window `maximum memory usage`).
    pub mem_peak_job_log: Vec<f64>,
    /// Within-job residuals of `log(peak memory / memory request)`.
    pub mem_peak_resid_log: Vec<f64>,
    /// In-window peak / mean memory per task (`>= 1`).
    pub mem_peak_factor: Vec<f64>,
    /// Measured within-job share of the variance of `log(CPU ratio)`.
    pub measured_within_share_cpu: f64,
    /// Measured within-job share of the variance of `log(peak memory ratio)`.
    pub measured_within_share_mem_peak: f64,
}

/// Jobs with fewer tasks than this are left out of the coherence
/// measurement (a job mean over 1-4 tasks says little about the spread).
pub const COHERENCE_MIN_TASKS: usize = 5;

/// `n + 1` quantiles of `v` at the mid-points `(i + 0.5) / (n + 1)`,
/// `i = 0..=n` (sorted; nearest rank): each stands for an equal share of
/// the sample, so drawing them uniformly keeps its variance (end points
/// would over-weight the extremes). Empty for an empty input; the sorted
/// sample itself when `n + 1` exceeds its size.
pub fn quantiles(mut v: Vec<f64>, n: usize) -> Vec<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    if v.is_empty() || n == 0 || n + 1 >= v.len() {
        return v;
    }
    let len = v.len();
    (0..=n)
        .map(|i| {
            let p = (i as f64 + 0.5) / (n + 1) as f64;
            v[((p * len as f64) as usize).min(len - 1)]
        })
        .collect()
}

impl JobCoherence {
    /// Builds the coherence from measured task ratios (jobs with at least
    /// [`COHERENCE_MIN_TASKS`] tasks), keeping `n + 1` quantiles of each
    /// distribution. `None` when fewer than 2 such jobs have a CPU or a
    /// peak-memory ratio.
    pub fn from_samples(samples: &[TaskRatios], n: usize) -> Option<JobCoherence> {
        let min = COHERENCE_MIN_TASKS;
        let cpu = variance_split(samples.iter().filter_map(|t| Some((t.job_id, t.cpu?))), min)?;
        let peak = variance_split(
            samples.iter().filter_map(|t| Some((t.job_id, t.mem_peak?))),
            min,
        )?;
        let (cj, cr) = log_components(samples, Ratio::Cpu, min);
        let (mj, mr) = log_components(samples, Ratio::MemPeak, min);
        let pf: Vec<f64> = samples
            .iter()
            .filter_map(|t| t.peak_factor)
            .map(|f| f.max(1.0))
            .collect();
        Some(JobCoherence {
            cpu_job_log: quantiles(cj, n),
            cpu_resid_log: quantiles(cr, n),
            mem_peak_job_log: quantiles(mj, n),
            mem_peak_resid_log: quantiles(mr, n),
            mem_peak_factor: quantiles(pf, n),
            measured_within_share_cpu: cpu.within_share,
            measured_within_share_mem_peak: peak.within_share,
        })
    }

    fn is_complete(&self) -> bool {
        !(self.cpu_job_log.is_empty()
            || self.cpu_resid_log.is_empty()
            || self.mem_peak_job_log.is_empty()
            || self.mem_peak_resid_log.is_empty()
            || self.mem_peak_factor.is_empty())
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

    /// Reads the text pool format written by [`UsagePool::write`].
    /// `#` starts a comment line; the other lines are tab-separated:
    ///
    /// - `ratio<TAB>cpu|mem<TAB>v,v,...`: task-level ratio quantiles;
    /// - `job<TAB>cpu|mempeak<TAB>v,...`, `resid<TAB>cpu|mempeak<TAB>v,...`,
    ///   `peakfactor<TAB>mem<TAB>v,...` and
    ///   `measured<TAB>cpu|mempeak<TAB>within_share`: the [`JobCoherence`]
    ///   (all seven or none);
    /// - `series<TAB>name<TAB>interval_s<TAB>cpu per-mille,...<TAB>mem per-mille,...`
    ///   (values in thousandths of the peak).
    pub fn read<R: BufRead>(name: &str, r: R) -> Result<UsagePool, DatasetError> {
        let mut series = Vec::new();
        let mut ratios = RequestRatios {
            cpu: Vec::new(),
            mem: Vec::new(),
            job: None,
        };
        let mut job = JobCoherence {
            cpu_job_log: Vec::new(),
            cpu_resid_log: Vec::new(),
            mem_peak_job_log: Vec::new(),
            mem_peak_resid_log: Vec::new(),
            mem_peak_factor: Vec::new(),
            measured_within_share_cpu: f64::NAN,
            measured_within_share_mem_peak: f64::NAN,
        };
        let mut coherence_lines = 0usize;
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
            let share = |s: &str| -> Result<f64, DatasetError> {
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| (0.0..=1.0).contains(v))
                    .ok_or_else(|| {
                        DatasetError::row(name, lno, format!("{s:?} is not a share in [0, 1]"))
                    })
            };
            match f.as_slice() {
                ["ratio", "cpu", v] => ratios.cpu = nums(v)?,
                ["ratio", "mem", v] => ratios.mem = nums(v)?,
                ["job", "cpu", v] => job.cpu_job_log = nums(v)?,
                ["resid", "cpu", v] => job.cpu_resid_log = nums(v)?,
                ["job", "mempeak", v] => job.mem_peak_job_log = nums(v)?,
                ["resid", "mempeak", v] => job.mem_peak_resid_log = nums(v)?,
                ["peakfactor", "mem", v] => {
                    let v = nums(v)?;
                    if v.iter().any(|&x| x < 1.0) {
                        return Err(DatasetError::row(name, lno, "a peak factor is below 1"));
                    }
                    job.mem_peak_factor = v;
                }
                ["measured", "cpu", v] => job.measured_within_share_cpu = share(v)?,
                ["measured", "mempeak", v] => job.measured_within_share_mem_peak = share(v)?,
                ["series", n, interval, cpu, mem] => {
                    let interval_s: f64 = interval
                        .parse()
                        .ok()
                        .filter(|v: &f64| v.is_finite() && *v > 0.0)
                        .ok_or_else(|| DatasetError::row(name, lno, "bad interval"))?;
                    let c: Vec<f64> = nums(cpu)?;
                    let m: Vec<f64> = nums(mem)?;
                    match PoolSeries::from_raw(*n, interval_s, &c, &m) {
                        Some(s) => series.push(s),
                        None => tracing::debug!(series = n, "skipping flat or empty pool series"),
                    }
                    continue;
                }
                _ => return Err(DatasetError::row(
                    name,
                    lno,
                    "expected a `ratio`, `job`, `resid`, `peakfactor`, `measured` or `series` line",
                )),
            }
            if f[0] != "ratio" {
                coherence_lines += 1;
            }
        }
        ratios.cpu.sort_by(f64::total_cmp);
        ratios.mem.sort_by(f64::total_cmp);
        if coherence_lines > 0 {
            if !job.is_complete()
                || job.measured_within_share_cpu.is_nan()
                || job.measured_within_share_mem_peak.is_nan()
            {
                return Err(DatasetError::format(
                    name,
                    "incomplete job coherence: needs job/resid cpu+mempeak, peakfactor mem and measured cpu+mempeak lines",
                ));
            }
            for v in [
                &mut job.cpu_job_log,
                &mut job.cpu_resid_log,
                &mut job.mem_peak_job_log,
                &mut job.mem_peak_resid_log,
                &mut job.mem_peak_factor,
            ] {
                v.sort_by(f64::total_cmp);
            }
            ratios.job = Some(job);
        }
        if series.is_empty() {
            return Err(DatasetError::format(name, "pool holds no series"));
        }
        Ok(UsagePool { series, ratios })
    }

    /// Writes the pool in the text format [`UsagePool::read`] reads (values
    /// quantised to thousandths of the peak; ratios to 5 significant digits).
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
        if let Some(j) = &self.ratios.job {
            writeln!(w, "job\tcpu\t{}", fmt_ratio(&j.cpu_job_log))?;
            writeln!(w, "resid\tcpu\t{}", fmt_ratio(&j.cpu_resid_log))?;
            writeln!(w, "job\tmempeak\t{}", fmt_ratio(&j.mem_peak_job_log))?;
            writeln!(w, "resid\tmempeak\t{}", fmt_ratio(&j.mem_peak_resid_log))?;
            writeln!(w, "peakfactor\tmem\t{}", fmt_ratio(&j.mem_peak_factor))?;
            writeln!(w, "measured\tcpu\t{:.6}", j.measured_within_share_cpu)?;
            writeln!(
                w,
                "measured\tmempeak\t{:.6}",
                j.measured_within_share_mem_peak
            )?;
        }
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

    /// The usage series of task `task_index` of the job keyed `job_key`
    /// (e.g. a hash of the job ID), with request `request`, derived
    /// deterministically from the keys and `seed` (see the module docs for
    /// the rule: siblings share a shape and a usage/request level; with
    /// [`PoolPhase::Task`] each starts it at a phase of its own).
    pub fn usage_for_task(
        &self,
        job_key: u64,
        task_index: u64,
        seed: u64,
        request: Resources,
        phase: PoolPhase,
    ) -> UsageSeries {
        if self.series.is_empty() {
            return UsageSeries::new(
                POOL_INTERVAL_S,
                Shape::constant(request.cpu_cores),
                Shape::constant(request.mem_bytes),
            );
        }
        // Job-level stream: shape, phase, job ratio levels, peak factor.
        let hj = mix64(job_key ^ mix64(seed));
        let s = &self.series[(hj % self.series.len() as u64) as usize];
        let hj2 = mix64(hj);
        let hj3 = mix64(hj2);
        let hj4 = mix64(hj3);
        let hj5 = mix64(hj4);
        // Task-level stream.
        let ht = mix64(hj5 ^ mix64(task_index.wrapping_add(0x7A5C)));
        let ht2 = mix64(ht);
        let phase_key = match phase {
            PoolPhase::Job => hj2,
            PoolPhase::Task => mix64(ht2),
        };
        let offset = (phase_key % s.cpu.len().max(1) as u64) as u32;
        let q = RequestRatios::quantile;
        // (mean CPU ratio, mean memory ratio, peak factor)
        let (rc, rm, f) = match &self.ratios.job {
            Some(j) => {
                let rc = (q(&j.cpu_job_log, unit(hj3)) + q(&j.cpu_resid_log, unit(ht))).exp();
                let rp =
                    (q(&j.mem_peak_job_log, unit(hj4)) + q(&j.mem_peak_resid_log, unit(ht2))).exp();
                let f = q(&j.mem_peak_factor, unit(hj5)).max(1.0);
                (rc, rp / f, f)
            }
            None => (
                q(&self.ratios.cpu, unit(ht)),
                q(&self.ratios.mem, unit(ht2)),
                1.0,
            ),
        };
        let (cs, cb) = scale_bias(rc, mean(&s.cpu), 1.0);
        let (ms, mb) = scale_bias(rm, mean(&s.mem), f);
        let shape = |values: &Arc<[f32]>, scale: f64, bias: f64| Shape {
            values: values.clone(),
            scale,
            offset,
            bias,
        };
        let req = request;
        UsageSeries {
            interval_s: s.interval_s,
            cpu_cores: shape(&s.cpu, req.cpu_cores * cs, req.cpu_cores * cb),
            mem_bytes: shape(&s.mem, req.mem_bytes * ms, req.mem_bytes * mb),
            mem_peak_bytes: self
                .ratios
                .job
                .as_ref()
                .map(|_| shape(&s.mem, req.mem_bytes * ms * f, req.mem_bytes * mb * f)),
        }
    }
}

/// Scale and bias (in units of the request) turning a shape of peak 1 and
/// mean `m` into a usage of mean `min(r, 1 / f)` whose peak times `f` stays
/// at or below the request: proportional (`r / m`, no bias) when that fits,
/// else compressed around the mean so that the peak is exactly `1 / f`.
fn scale_bias(r: f64, m: f64, f: f64) -> (f64, f64) {
    if !(r.is_finite() && m.is_finite() && f.is_finite()) || r <= 0.0 || m <= 0.0 || f < 1.0 {
        return (0.0, 0.0);
    }
    let cap = 1.0 / f;
    let r = r.min(cap);
    if r <= cap * m || m >= 1.0 {
        (r / m, 0.0)
    } else {
        let k = (cap - r) / (1.0 - m);
        (k, r - k * m)
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
        SeriesFormat::Google2011TaskUsage { .. } => Some(("cpu_rate", "canonical_memory")),
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
                job: None,
            },
        }
    }

    fn coherent_pool() -> UsagePool {
        let mut p = pool();
        p.ratios.job = Some(JobCoherence {
            cpu_job_log: vec![-3.0, -2.0, -1.0],
            cpu_resid_log: vec![-0.1, 0.0, 0.1],
            mem_peak_job_log: vec![-2.0, -1.0, -0.2],
            mem_peak_resid_log: vec![-0.05, 0.0, 0.05],
            mem_peak_factor: vec![1.0, 1.1, 1.5],
            measured_within_share_cpu: 0.03,
            measured_within_share_mem_peak: 0.02,
        });
        p
    }

    #[test]
    fn usage_never_exceeds_request_and_is_deterministic() {
        let req = Resources::new(2.0, 1e9);
        for p in [pool(), coherent_pool()] {
            for key in 0..200u64 {
                let u = p.usage_for_task(key, key % 3, 7, req, PoolPhase::Job);
                assert_eq!(u, p.usage_for_task(key, key % 3, 7, req, PoolPhase::Job));
                assert_eq!(u.mem_peak_bytes.is_some(), p.ratios.job.is_some());
                for i in 0..10 {
                    let r = u.at(i as f64 * 300.0);
                    assert!(r.cpu_cores <= req.cpu_cores * (1.0 + 1e-6) && r.cpu_cores >= 0.0);
                    assert!(r.mem_bytes <= req.mem_bytes * (1.0 + 1e-6) && r.mem_bytes >= 0.0);
                    let peak = u.mem_peak(i);
                    assert!(peak >= r.mem_bytes && peak <= req.mem_bytes * (1.0 + 1e-6));
                }
            }
        }
    }

    #[test]
    fn siblings_share_shape_and_phase_and_differ_by_the_residual_only() {
        let p = coherent_pool();
        let req = Resources::new(2.0, 1e9);
        for job in 0..50u64 {
            let a = p.usage_for_task(job, 0, 3, req, PoolPhase::Job);
            let b = p.usage_for_task(job, 1, 3, req, PoolPhase::Job);
            assert!(Arc::ptr_eq(&a.cpu_cores.values, &b.cpu_cores.values));
            assert_eq!(a.cpu_cores.offset, b.cpu_cores.offset);
            // Same peak factor (peak / mean where the mean is positive).
            let i = (0..4).find(|&i| a.mem_bytes.at(i) > 0.0 && b.mem_bytes.at(i) > 0.0);
            if let Some(i) = i {
                let fa = a.mem_peak(i) / a.mem_bytes.at(i);
                let fb = b.mem_peak(i) / b.mem_bytes.at(i);
                assert!((fa - fb).abs() < 1e-6, "job {job}: {fa} vs {fb}");
            }
            // Mean peak levels differ by at most the residual range (0.1 in log).
            let level = |u: &UsageSeries| {
                let n = u.mem_bytes.values.len();
                (0..n).map(|i| u.mem_peak(i)).sum::<f64>() / n as f64
            };
            let d = (level(&a) / level(&b)).ln().abs();
            assert!(d <= 0.1 + 1e-9, "job {job}: {d}");
        }
    }

    #[test]
    fn with_task_phases_siblings_share_the_shape_and_level_but_not_the_phase() {
        let p = coherent_pool();
        let req = Resources::new(2.0, 1e9);
        let mut differ = 0;
        for job in 0..50u64 {
            let j = |t| p.usage_for_task(job, t, 3, req, PoolPhase::Job);
            let t = |t| p.usage_for_task(job, t, 3, req, PoolPhase::Task);
            let (a, b) = (t(0), t(1));
            assert!(Arc::ptr_eq(&a.mem_bytes.values, &b.mem_bytes.values));
            // the same level as with the job's phase: only the phase moves
            assert_eq!(
                (a.mem_bytes.scale, a.mem_bytes.bias),
                (j(0).mem_bytes.scale, j(0).mem_bytes.bias)
            );
            assert_eq!(a.cpu_cores.offset, a.mem_bytes.offset);
            differ += usize::from(a.mem_bytes.offset != b.mem_bytes.offset);
            assert_eq!(a, t(0), "deterministic");
        }
        // (the fixture's series are short: two phases often coincide; with
        // the job's phase none differs)
        assert!(differ >= 25, "{differ} of 50 jobs");
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
        assert_eq!(q.ratios.job, None);
        assert!(UsagePool::read("x", "bogus line\n".as_bytes()).is_err());
        let c = coherent_pool();
        let mut buf = Vec::new();
        c.write(&mut buf).expect("write");
        let q = UsagePool::read("mem", buf.as_slice()).expect("read");
        assert_eq!(q.ratios.job, c.ratios.job);
        // A partial coherence is an error naming the file.
        let text = String::from_utf8(buf).expect("utf8");
        let partial: String = text
            .lines()
            .filter(|l| !l.starts_with("peakfactor"))
            .map(|l| format!("{l}\n"))
            .collect();
        let err = UsagePool::read("p.txt", partial.as_bytes()).expect_err("partial");
        assert!(err.to_string().starts_with("p.txt: incomplete"), "{err}");
        let bad = text.replace("measured\tcpu\t0.030000", "measured\tcpu\t1.5");
        let err = UsagePool::read("p.txt", bad.as_bytes()).expect_err("share");
        assert!(err.to_string().starts_with("p.txt:"), "{err}");
    }

    #[test]
    fn flat_series_are_rejected() {
        assert!(PoolSeries::from_raw("z", 300.0, &[0.0, 0.0], &[1.0, 1.0]).is_none());
        assert!(PoolSeries::from_raw("z", 300.0, &[1.0], &[1.0]).is_none());
    }
}

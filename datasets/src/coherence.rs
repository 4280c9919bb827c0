//! Job-level coherence of usage/request ratios: how much of the spread of a
//! task's usage relative to its request is explained by its job.
//!
//! # The measurement
//!
//! [`sample_ratios`] joins Google 2011 `task_usage` rows with the requests
//! of `task_events`: for every task with usage rows, each window's
//! - CPU ratio = `CPU rate` / CPU request,
//! - memory ratio = `canonical memory usage` / memory request,
//! - peak ratio = `maximum memory usage` / memory request,
//! - peak factor = `maximum memory usage` / `canonical memory usage`,
//!
//! where the request is the one *in force at the window's start* (the last
//! SUBMIT, UPDATE or SCHEDULE row with a request at or before it, else the
//! first one after it). A task's ratio is the mean over its windows (the
//! shared sample has exactly one window per task). Zero usage or zero
//! request leaves the ratio out (its log is undefined).
//!
//! [`variance_split`] then splits the variance of `log(ratio)` over the tasks
//! of the jobs with at least `min_tasks` tasks into a between-job part and a
//! within-job part (one-way ANOVA sums of squares: `within_share =
//! SS_within / SS_total`).
//!
//! On `../shared/data/google-2011` (task_usage sample of 10,000 tasks joined
//! with task_events part 0), run with
//! `cargo run -p datasets --example job_coherence`; the figures are in
//! `datasets/README.md`.

use crate::google2011::reader::{TableReader, TaskEvent, TaskEventType, TaskUsage, TimeUs};
use crate::workload::ComponentSpec;
use crate::DatasetError;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// One task's usage/request ratios (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRatios {
    pub job_id: u64,
    pub task_index: u64,
    pub cpu: Option<f64>,
    pub mem: Option<f64>,
    pub mem_peak: Option<f64>,
    pub peak_factor: Option<f64>,
}

/// Which ratio of [`TaskRatios`] to analyse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ratio {
    Cpu,
    Mem,
    MemPeak,
}

impl Ratio {
    pub fn of(self, t: &TaskRatios) -> Option<f64> {
        match self {
            Ratio::Cpu => t.cpu,
            Ratio::Mem => t.mem,
            Ratio::MemPeak => t.mem_peak,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Ratio::Cpu => "CPU rate / CPU request",
            Ratio::Mem => "mean memory / memory request",
            Ratio::MemPeak => "peak memory / memory request",
        }
    }
}

/// Between/within-job split of the variance of `log(ratio)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VarianceSplit {
    /// Jobs with at least `min_tasks` tasks having the ratio.
    pub jobs: usize,
    /// Tasks of those jobs.
    pub tasks: usize,
    /// Variance of log(ratio) over those tasks.
    pub total_var: f64,
    /// `SS_within / SS_total` (0 when the total is 0).
    pub within_share: f64,
}

impl VarianceSplit {
    /// `1 - within_share`: the share of variance the job explains.
    pub fn between_share(&self) -> f64 {
        1.0 - self.within_share
    }
}

/// Splits the variance of `log(value)` of `(job, value)` pairs (values
/// must be > 0; others are ignored) over the jobs with at least
/// `min_tasks` values. `None` when fewer than 2 such jobs.
pub fn variance_split(
    values: impl IntoIterator<Item = (u64, f64)>,
    min_tasks: usize,
) -> Option<VarianceSplit> {
    let mut by_job: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for (j, v) in values {
        if v.is_finite() && v > 0.0 {
            by_job.entry(j).or_default().push(v.ln());
        }
    }
    by_job.retain(|_, v| v.len() >= min_tasks.max(1));
    if by_job.len() < 2 {
        return None;
    }
    let n: usize = by_job.values().map(Vec::len).sum();
    let grand = by_job.values().flatten().sum::<f64>() / n as f64;
    let mut ss_total = 0.0;
    let mut ss_within = 0.0;
    for v in by_job.values() {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        for &x in v {
            ss_total += (x - grand) * (x - grand);
            ss_within += (x - m) * (x - m);
        }
    }
    Some(VarianceSplit {
        jobs: by_job.len(),
        tasks: n,
        total_var: ss_total / n as f64,
        within_share: if ss_total > 0.0 {
            ss_within / ss_total
        } else {
            0.0
        },
    })
}

/// Per-task `log(ratio)` split into the job mean and the task's deviation
/// from it, over the jobs with at least `min_tasks` tasks having the ratio:
/// `(job_means, residuals)`, one entry per task each (so job means are
/// task-weighted), both sorted.
pub fn log_components(
    samples: &[TaskRatios],
    ratio: Ratio,
    min_tasks: usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut by_job: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for t in samples {
        if let Some(v) = ratio.of(t).filter(|v| v.is_finite() && *v > 0.0) {
            by_job.entry(t.job_id).or_default().push(v.ln());
        }
    }
    let mut means = Vec::new();
    let mut resid = Vec::new();
    for v in by_job.values().filter(|v| v.len() >= min_tasks.max(1)) {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        for &x in v {
            means.push(m);
            resid.push(x - m);
        }
    }
    means.sort_by(f64::total_cmp);
    resid.sort_by(f64::total_cmp);
    (means, resid)
}

/// A component's usage level relative to its request: the in-interval
/// memory peak (`peak = true`) or the mean CPU, averaged over one cycle of
/// its usage shape (at most 100,000 intervals), divided by its request.
/// Used to check that generated workloads keep the measured coherence.
pub fn cycle_ratio(c: &ComponentSpec, peak: bool) -> f64 {
    let (n, req) = if peak {
        (c.usage.mem_bytes.values.len(), c.request.mem_bytes)
    } else {
        (c.usage.cpu_cores.values.len(), c.request.cpu_cores)
    };
    let n = n.clamp(1, 100_000);
    let sum: f64 = (0..n)
        .map(|i| {
            if peak {
                c.usage.mem_peak(i)
            } else {
                c.usage.cpu_cores.at(i)
            }
        })
        .sum();
    sum / n as f64 / req
}

/// A request row of task_events: (time, CPU request, memory request).
type ReqRow = (TimeUs, Option<f64>, Option<f64>);

/// Which request a usage window is divided by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestRule {
    /// The request in force at the window's start (the default; the rule
    /// the Google 2011 workload builder follows).
    InForce,
    /// The task's first request row (for a task running at trace start:
    /// its time-0 SUBMIT row, which for some jobs differs from the time-0
    /// SCHEDULE row that follows it).
    First,
}

/// Reads `task_usage` rows and the `task_events` requests of their tasks
/// and returns each task's ratios, sorted by (job, task). See the module
/// docs for the join rule ([`RequestRule::InForce`]).
pub fn sample_ratios(
    task_events: &[&Path],
    task_usage: &[&Path],
    lenient: bool,
) -> Result<Vec<TaskRatios>, DatasetError> {
    sample_ratios_with(task_events, task_usage, lenient, RequestRule::InForce)
}

/// [`sample_ratios`] with another [`RequestRule`].
pub fn sample_ratios_with(
    task_events: &[&Path],
    task_usage: &[&Path],
    lenient: bool,
    rule: RequestRule,
) -> Result<Vec<TaskRatios>, DatasetError> {
    // (start, cpu rate, canonical, max memory) per task.
    type Window = (TimeUs, Option<f64>, Option<f64>, Option<f64>);
    let mut windows: HashMap<(u64, u64), Vec<Window>> = HashMap::new();
    for p in task_usage {
        let mut r = TableReader::<TaskUsage>::open(p, lenient)?;
        while let Some(u) = r.next_row()? {
            windows.entry((u.job_id, u.task_index)).or_default().push((
                u.start_time_us,
                u.cpu_rate,
                u.canonical_memory,
                u.max_memory,
            ));
        }
    }
    // Request rows (time, cpu, mem) of the tasks with usage.
    let mut requests: HashMap<(u64, u64), Vec<ReqRow>> = HashMap::new();
    for p in task_events {
        let mut r = TableReader::<TaskEvent>::open(p, lenient)?;
        while let Some(ev) = r.next_row()? {
            let key = (ev.job_id, ev.task_index);
            if !windows.contains_key(&key)
                || !matches!(
                    ev.event_type,
                    TaskEventType::Submit
                        | TaskEventType::Schedule
                        | TaskEventType::UpdatePending
                        | TaskEventType::UpdateRunning
                )
                || (ev.cpu_request.is_none() && ev.mem_request.is_none())
            {
                continue;
            }
            requests
                .entry(key)
                .or_default()
                .push((ev.time_us, ev.cpu_request, ev.mem_request));
        }
    }
    let in_force = |reqs: &[ReqRow], t: TimeUs, pick: fn(&ReqRow) -> Option<f64>| -> Option<f64> {
        if rule == RequestRule::First {
            return reqs.iter().find_map(pick);
        }
        let before = reqs
            .iter()
            .filter(|r| r.0 <= t)
            .filter_map(pick)
            .next_back();
        before.or_else(|| reqs.iter().filter(|r| r.0 > t).find_map(pick))
    };
    let mut keys: Vec<(u64, u64)> = windows.keys().copied().collect();
    keys.sort_unstable();
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(reqs) = requests.get_mut(&key) else {
            continue;
        };
        // Stable: rows at the same time keep their file order.
        reqs.sort_by_key(|r| r.0);
        let mut acc = [(0.0f64, 0usize); 4];
        for &(t, cpu, canon, max) in windows.get(&key).map_or(&[][..], Vec::as_slice) {
            let rc = in_force(reqs, t, |r| r.1).filter(|v| *v > 0.0);
            let rm = in_force(reqs, t, |r| r.2).filter(|v| *v > 0.0);
            let mut add = |k: usize, v: Option<f64>| {
                if let Some(v) = v.filter(|v| v.is_finite() && *v > 0.0) {
                    acc[k].0 += v;
                    acc[k].1 += 1;
                }
            };
            add(0, cpu.zip(rc).map(|(u, r)| u / r));
            add(1, canon.zip(rm).map(|(u, r)| u / r));
            add(2, max.zip(rm).map(|(u, r)| u / r));
            add(3, max.zip(canon.filter(|c| *c > 0.0)).map(|(m, c)| m / c));
        }
        let mean = |k: usize| (acc[k].1 > 0).then(|| acc[k].0 / acc[k].1 as f64);
        out.push(TaskRatios {
            job_id: key.0,
            task_index: key.1,
            cpu: mean(0),
            mem: mean(1),
            mem_peak: mean(2),
            peak_factor: mean(3),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_of_known_groups() {
        // Two jobs, log values {0, 0} and {ln 4, ln 4}: all variance between.
        let s = variance_split([(1, 1.0), (1, 1.0), (2, 4.0), (2, 4.0)], 2).expect("split");
        assert_eq!((s.jobs, s.tasks), (2, 4));
        assert!(s.within_share.abs() < 1e-12);
        // Same job mean, spread inside: all variance within.
        let s = variance_split([(1, 0.5), (1, 2.0), (2, 0.5), (2, 2.0)], 2).expect("split");
        assert!((s.within_share - 1.0).abs() < 1e-12);
        // Small jobs are left out; one job left is no split.
        assert!(variance_split([(1, 1.0), (1, 2.0), (2, 3.0)], 2).is_none());
    }

    #[test]
    fn components_sum_back_to_the_values() {
        let t = |j, i, v| TaskRatios {
            job_id: j,
            task_index: i,
            cpu: None,
            mem: None,
            mem_peak: Some(v),
            peak_factor: None,
        };
        let s = vec![t(1, 0, 1.0), t(1, 1, 4.0), t(2, 0, 2.0)];
        let (m, r) = log_components(&s, Ratio::MemPeak, 2);
        assert_eq!(m.len(), 2);
        assert!((m[0] - 2f64.ln()).abs() < 1e-12 && (m[1] - 2f64.ln()).abs() < 1e-12);
        assert!((r[0] + 2f64.ln()).abs() < 1e-12 && (r[1] - 2f64.ln()).abs() < 1e-12);
    }
}

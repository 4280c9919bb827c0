//! Run metrics (thesis 4.3.1): turnaround, slack, failures, evictions,
//! work lost, utilisation and queue length over time.

use serde::{Deserialize, Serialize};

/// Number of bins of a [`WeightedHist`] over `[0, 1]`.
pub const HIST_BINS: usize = 1000;

/// A time-weighted distribution of a quantity in `[0, 1]` (slack): exact
/// weighted mean, quantiles to 1/[`HIST_BINS`] resolution. Values outside
/// `[0, 1]` are clamped into the end bins (their exact value still counts
/// in the mean).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WeightedHist {
    bins: Vec<f64>,
    weight: f64,
    weighted_sum: f64,
}

impl Default for WeightedHist {
    fn default() -> Self {
        Self {
            bins: vec![0.0; HIST_BINS],
            weight: 0.0,
            weighted_sum: 0.0,
        }
    }
}

impl WeightedHist {
    /// Adds `value` with weight `w` (ignored when either is not finite or `w <= 0`).
    pub fn add(&mut self, value: f64, w: f64) {
        if !value.is_finite() || !w.is_finite() || w <= 0.0 {
            return;
        }
        let b = ((value.clamp(0.0, 1.0) * HIST_BINS as f64) as usize).min(HIST_BINS - 1);
        self.bins[b] += w;
        self.weight += w;
        self.weighted_sum += w * value;
    }

    /// Merges another histogram into this one.
    pub fn merge(&mut self, other: &WeightedHist) {
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            *a += b;
        }
        self.weight += other.weight;
        self.weighted_sum += other.weighted_sum;
    }

    /// Total weight.
    pub fn total_weight(&self) -> f64 {
        self.weight
    }

    /// Weighted mean (NaN when empty).
    pub fn mean(&self) -> f64 {
        if self.weight > 0.0 {
            self.weighted_sum / self.weight
        } else {
            f64::NAN
        }
    }

    /// Weighted quantile `q` in `[0, 1]` (bin centre; NaN when empty).
    pub fn quantile(&self, q: f64) -> f64 {
        if self.weight <= 0.0 {
            return f64::NAN;
        }
        let target = q.clamp(0.0, 1.0) * self.weight;
        let mut acc = 0.0;
        for (i, w) in self.bins.iter().enumerate() {
            acc += w;
            if acc >= target && *w > 0.0 {
                return (i as f64 + 0.5) / HIST_BINS as f64;
            }
        }
        (HIST_BINS as f64 - 0.5) / HIST_BINS as f64
    }

    /// Box-plot figures: (p5, p25, p50, p75, p95).
    pub fn box_stats(&self) -> [f64; 5] {
        [0.05, 0.25, 0.5, 0.75, 0.95].map(|q| self.quantile(q))
    }
}

/// One sample of the cluster's state, taken every shaping round.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimePoint {
    pub t_s: f64,
    /// Applications waiting in the scheduler queue.
    pub queued_apps: usize,
    pub running_apps: usize,
    pub running_components: usize,
    /// Sum of usage / sum of capacity.
    pub used_cpu_frac: f64,
    pub used_mem_frac: f64,
    /// Sum of allocations / sum of capacity.
    pub alloc_cpu_frac: f64,
    pub alloc_mem_frac: f64,
}

/// The most points a run's [`RunMetrics::timeline`] holds (8 MiB of
/// them): a run of more rounds keeps every 2nd round's point, then every
/// 4th, and so on (see `push_point`), so a long run at a short interval
/// does not grow without bound. Runs of fewer rounds keep every point.
pub const TIMELINE_CAP: usize = 1 << 17;

/// Appends the point of round `round` (counted from 1) to `timeline`,
/// which keeps the points of rounds `1, 1 + stride, 1 + 2 stride, ...`:
/// when it holds `cap` points, every other one is dropped and `stride`
/// doubles. The time-averaged metrics do not come from the timeline (they
/// are integrated every round), so they are unchanged by the thinning.
pub(crate) fn push_point(
    timeline: &mut Vec<TimePoint>,
    stride: &mut u64,
    round: u64,
    p: TimePoint,
    cap: usize,
) {
    let kept = |stride: u64| round.saturating_sub(1).is_multiple_of(stride.max(1));
    if !kept(*stride) {
        return;
    }
    if timeline.len() >= cap.max(2) {
        let mut i = 0;
        timeline.retain(|_| {
            i += 1;
            i % 2 == 1
        });
        *stride = stride.saturating_mul(2);
        if !kept(*stride) {
            return;
        }
    }
    timeline.push(p);
}

/// Quantiles of a plain sample (sorted copy); NaN when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let f = pos - lo as f64;
    sorted[lo] * (1.0 - f) + sorted[hi] * f
}

/// Mean of a sample (NaN when empty).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        f64::NAN
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Per-application outcome.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppOutcome {
    /// Workload application id.
    pub id: u64,
    pub arrival_s: f64,
    /// Completion time; `None` when it did not complete (rejected or cut off).
    pub finished_s: Option<f64>,
    /// Total time spent in the scheduler queue (all submissions).
    pub queued_s: f64,
    /// Times the application crashed (core component OOM-killed).
    pub crashes: u32,
    /// Times the shaper evicted the whole application.
    pub evictions: u32,
    /// Never admitted because its core components cannot fit on the empty cluster.
    pub rejected: bool,
    /// Given up after more than `max_restarts` failures (kills and
    /// evictions): counted as failed.
    #[serde(default)]
    pub abandoned: bool,
}

impl AppOutcome {
    /// Submission to completion (queueing and restarts included).
    pub fn turnaround_s(&self) -> Option<f64> {
        self.finished_s.map(|f| f - self.arrival_s)
    }
}

/// Everything a run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    pub apps: Vec<AppOutcome>,
    pub cpu_slack: WeightedHist,
    pub mem_slack: WeightedHist,
    /// One point per round, at most [`TIMELINE_CAP`] (then every 2nd,
    /// 4th, ... round's; see `push_point`).
    pub timeline: Vec<TimePoint>,
    /// Components killed for memory: own usage above allocation, or picked
    /// by the host OOM killer.
    pub oom_kills: u64,
    /// Of which by the host OOM killer (host memory usage above capacity).
    pub host_oom_kills: u64,
    /// Applications evicted whole + elastic components evicted by the shaper.
    pub evictions: u64,
    pub app_evictions: u64,
    pub component_evictions: u64,
    /// Work (seconds at full speed) thrown away by kills and evictions.
    pub work_lost_s: f64,
    /// Components never run because no host can hold them.
    pub components_dropped: u64,
    pub resizes: u64,
    /// In-place request changes of the trace that took effect (Google
    /// 2019); the baseline's allocation follows them.
    #[serde(default)]
    pub request_changes: u64,
    /// Optimistic growths refused for lack of room (`optimistic_growth = "refuse"`).
    pub refused_growths: u64,
    pub events: u64,
    pub rounds: u64,
    pub forecast_updates: u64,
    /// Component rounds with a forecast shown to the shaper.
    pub forecasts_shown: u64,
    /// Of which from a model past its warm-up (`EngineConfig::warm_samples`).
    pub forecasts_warm: u64,
    /// Running component rounds by where their forecast came from
    /// ([`shaper::ForecastSource`]): own warm model, prior, fallback (the
    /// model's fallback or none).
    pub forecasts_own: u64,
    pub forecasts_prior: u64,
    pub forecasts_fallback: u64,
    /// OOM kills of components whose latest forecast was warm.
    pub oom_kills_warm: u64,
    /// Wall time spent updating forecasters.
    pub forecast_wall_s: f64,
    /// Wall time spent in the shaper's decide().
    pub decide_wall_s: f64,
    pub wall_s: f64,
    /// Simulated time at the end of the run.
    pub end_s: f64,
    /// Time-integrated usage and allocation over capacity.
    pub mean_used_cpu_frac: f64,
    pub mean_used_mem_frac: f64,
    pub mean_alloc_cpu_frac: f64,
    pub mean_alloc_mem_frac: f64,
    /// Reserved memory integrated over the run: the sum of every running
    /// component's allocation, integrated exactly over simulated time
    /// (byte-seconds; [`Summary::mem_alloc_gib_h`] in GiB-hours).
    #[serde(default)]
    pub mem_alloc_byte_s: f64,
    /// Component-days: per component (a workload component, across its
    /// restarts), the 24 h windows of simulated time `[k * 86400, (k + 1) *
    /// 86400)` in which it was running at some moment.
    #[serde(default)]
    pub component_days: u64,
    /// Of which with at least one OOM kill of that component.
    #[serde(default)]
    pub oom_component_days: u64,
}

/// Length of the windows of `component_days`, seconds.
pub const COMPONENT_DAY_S: f64 = 86_400.0;

/// Per-component bookkeeping of [`RunMetrics::component_days`] and
/// [`RunMetrics::oom_component_days`]: incarnations of one component run
/// one after the other, so the windows seen only move forward and each is
/// counted once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ComponentDays {
    /// Next window not counted yet as running.
    next_running: u64,
    /// Next window not counted yet as OOM-hit.
    next_oom: u64,
}

/// Index of the 24 h window holding time `t_s` (negative and non-finite
/// times map to window 0).
fn day_of(t_s: f64) -> u64 {
    if t_s.is_finite() && t_s > 0.0 {
        (t_s / COMPONENT_DAY_S) as u64
    } else {
        0
    }
}

impl ComponentDays {
    /// The component ran over `[from_s, to_s]`: returns how many windows
    /// this adds (those not counted before).
    pub fn ran(&mut self, from_s: f64, to_s: f64) -> u64 {
        let first = day_of(from_s).max(self.next_running);
        let last = day_of(to_s.max(from_s));
        if last < first {
            return 0;
        }
        self.next_running = last + 1;
        last - first + 1
    }

    /// The component was OOM-killed at `t_s`: true when its window was not
    /// OOM-hit before.
    pub fn oom(&mut self, t_s: f64) -> bool {
        let d = day_of(t_s);
        if d < self.next_oom {
            return false;
        }
        self.next_oom = d + 1;
        true
    }
}

/// The shortest mean turnaround, seconds, that a turnaround ratio is
/// computed from (a millisecond: below it, e.g. under `--stretch 1e-300`,
/// turnarounds print as `0 s` and their quotient means nothing).
pub const MIN_RATIO_TURNAROUND_S: f64 = 1e-3;

/// Bytes in a GiB.
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The run summary (serialised as JSON by `tailor replay --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub workload: String,
    pub policy: String,
    pub forecaster: String,
    pub k1: f64,
    pub k2: f64,
    pub hosts: usize,
    pub apps: usize,
    pub apps_completed: usize,
    pub apps_rejected: usize,
    /// Given up after more than `max_restarts` failures (also in the failed
    /// share).
    #[serde(default)]
    pub apps_abandoned: usize,
    pub turnaround_mean_s: f64,
    pub turnaround_median_s: f64,
    pub turnaround_p95_s: f64,
    /// Baseline mean turnaround / this run's (> 1: faster than baseline);
    /// `None` when no baseline was run.
    pub turnaround_ratio: Option<f64>,
    pub baseline_turnaround_mean_s: Option<f64>,
    /// Reserved memory the baseline run minus this run's, GiB-hours
    /// (`None` when no baseline was run).
    #[serde(default)]
    pub mem_reclaimed_gib_h: Option<f64>,
    /// Reserved memory of the oracle run (exact forecasts, no buffer) on
    /// the same workload, GiB-hours (`None` when none was run).
    #[serde(default)]
    pub oracle_mem_alloc_gib_h: Option<f64>,
    /// The share of the oracle's saving this run reclaims:
    /// [`oracle_capture`]`(baseline, oracle, this)`.
    #[serde(default)]
    pub oracle_capture: Option<f64>,
    pub queueing_mean_s: f64,
    pub mem_slack_mean: f64,
    pub mem_slack_median: f64,
    pub cpu_slack_mean: f64,
    pub cpu_slack_median: f64,
    /// Share of applications that crashed at least once (a core component
    /// OOM-killed). Evictions are counted apart.
    pub failed_app_fraction: f64,
    /// Share of applications the shaper evicted at least once.
    pub evicted_app_fraction: f64,
    pub oom_kills: u64,
    pub host_oom_kills: u64,
    /// OOM kills of components whose latest forecast came from a model past
    /// its warm-up (for the GP: a fitted GP, not its last-value fallback).
    pub oom_kills_warm: u64,
    /// OOM kills per component round sized from a forecast: what
    /// `[shaper] memory_risk` targets (NaN when nothing was forecast).
    pub oom_kills_per_forecast_round: f64,
    /// Share of the forecasts shown to the shaper that came from a model
    /// past its warm-up (1 for the oracle; NaN when none was shown).
    pub warm_forecast_fraction: f64,
    /// Forecasts (component rounds) from a model past its warm-up.
    pub forecasts_warm: u64,
    /// Shares of running component rounds whose forecast came from the
    /// component's own warm model, from a prior (siblings, predecessors),
    /// or from a fallback (the model's fallback, or none: kept at the
    /// request). NaN when nothing was forecast.
    pub forecast_own_fraction: f64,
    pub forecast_prior_fraction: f64,
    pub forecast_fallback_fraction: f64,
    pub evictions: u64,
    /// Allocation changes applied (each one a `docker update` on a node).
    #[serde(default)]
    pub resizes: u64,
    pub work_lost_s: f64,
    pub mean_used_cpu_frac: f64,
    pub mean_used_mem_frac: f64,
    pub mean_alloc_cpu_frac: f64,
    pub mean_alloc_mem_frac: f64,
    pub simulated_s: f64,
    pub events: u64,
    pub rounds: u64,
    pub forecast_updates: u64,
    pub wall_s: f64,
    pub events_per_s: f64,
    /// Forecaster updates (observe + forecast, per resource) per second of
    /// the whole run's wall time.
    pub forecast_updates_per_s: f64,
    pub forecast_wall_s: f64,
    pub decide_wall_s: f64,
    /// Reserved memory, GiB-hours: every running component's allocation
    /// integrated over simulated time (the frontier's cost measure).
    #[serde(default)]
    pub mem_alloc_gib_h: f64,
    /// Share of component-days with at least one OOM kill (Autopilot's
    /// measure; see [`RunMetrics::component_days`]); 0 when none ran.
    #[serde(default)]
    pub oom_component_day_fraction: f64,
    /// Cluster-level memory slack (the thesis's definition): allocated
    /// minus used memory as a share of the cluster's capacity, sampled at
    /// every shaping round and time-averaged
    /// (`mean_alloc_mem_frac - mean_used_mem_frac`).
    #[serde(default)]
    pub cluster_mem_slack: f64,
    /// Cluster-level CPU slack, likewise.
    #[serde(default)]
    pub cluster_cpu_slack: f64,
}

impl Summary {
    /// Summarises `m`. Labels come from the caller.
    pub fn from_metrics(
        m: &RunMetrics,
        workload: &str,
        hosts: usize,
        policy: &str,
        forecaster: &str,
        k1: f64,
        k2: f64,
    ) -> Self {
        let mut tat: Vec<f64> = m.apps.iter().filter_map(AppOutcome::turnaround_s).collect();
        tat.sort_by(f64::total_cmp);
        let queued: Vec<f64> = m
            .apps
            .iter()
            .filter(|a| a.finished_s.is_some())
            .map(|a| a.queued_s)
            .collect();
        let considered = m.apps.iter().filter(|a| !a.rejected).count();
        let frac = |n: usize| {
            if considered > 0 {
                n as f64 / considered as f64
            } else {
                0.0
            }
        };
        let sourced = m.forecasts_own + m.forecasts_prior + m.forecasts_fallback;
        let share = |n: u64| {
            if sourced > 0 {
                n as f64 / sourced as f64
            } else {
                f64::NAN
            }
        };
        let wall = m.wall_s.max(1e-9);
        Summary {
            workload: workload.to_string(),
            policy: policy.to_string(),
            forecaster: forecaster.to_string(),
            k1,
            k2,
            hosts,
            apps: m.apps.len(),
            apps_completed: tat.len(),
            apps_rejected: m.apps.iter().filter(|a| a.rejected).count(),
            apps_abandoned: m.apps.iter().filter(|a| a.abandoned).count(),
            turnaround_mean_s: mean(&tat),
            turnaround_median_s: quantile(&tat, 0.5),
            turnaround_p95_s: quantile(&tat, 0.95),
            turnaround_ratio: None,
            baseline_turnaround_mean_s: None,
            mem_reclaimed_gib_h: None,
            oracle_mem_alloc_gib_h: None,
            oracle_capture: None,
            queueing_mean_s: mean(&queued),
            mem_slack_mean: m.mem_slack.mean(),
            mem_slack_median: m.mem_slack.quantile(0.5),
            cpu_slack_mean: m.cpu_slack.mean(),
            cpu_slack_median: m.cpu_slack.quantile(0.5),
            failed_app_fraction: frac(
                m.apps
                    .iter()
                    .filter(|a| a.crashes > 0 || a.abandoned)
                    .count(),
            ),
            evicted_app_fraction: frac(m.apps.iter().filter(|a| a.evictions > 0).count()),
            oom_kills: m.oom_kills,
            host_oom_kills: m.host_oom_kills,
            oom_kills_warm: m.oom_kills_warm,
            oom_kills_per_forecast_round: if m.forecasts_shown > 0 {
                m.oom_kills as f64 / m.forecasts_shown as f64
            } else {
                f64::NAN
            },
            warm_forecast_fraction: if m.forecasts_shown > 0 {
                m.forecasts_warm as f64 / m.forecasts_shown as f64
            } else {
                f64::NAN
            },
            forecasts_warm: m.forecasts_warm,
            forecast_own_fraction: share(m.forecasts_own),
            forecast_prior_fraction: share(m.forecasts_prior),
            forecast_fallback_fraction: share(m.forecasts_fallback),
            evictions: m.evictions,
            resizes: m.resizes,
            work_lost_s: m.work_lost_s,
            mean_used_cpu_frac: m.mean_used_cpu_frac,
            mean_used_mem_frac: m.mean_used_mem_frac,
            mean_alloc_cpu_frac: m.mean_alloc_cpu_frac,
            mean_alloc_mem_frac: m.mean_alloc_mem_frac,
            simulated_s: m.end_s,
            events: m.events,
            rounds: m.rounds,
            forecast_updates: m.forecast_updates,
            wall_s: m.wall_s,
            events_per_s: m.events as f64 / wall,
            forecast_updates_per_s: m.forecast_updates as f64 / wall,
            forecast_wall_s: m.forecast_wall_s,
            decide_wall_s: m.decide_wall_s,
            mem_alloc_gib_h: m.mem_alloc_byte_s / GIB / 3600.0,
            oom_component_day_fraction: if m.component_days > 0 {
                m.oom_component_days as f64 / m.component_days as f64
            } else {
                0.0
            },
            cluster_mem_slack: m.mean_alloc_mem_frac - m.mean_used_mem_frac,
            cluster_cpu_slack: m.mean_alloc_cpu_frac - m.mean_used_cpu_frac,
        }
    }

    /// Fills the baseline comparison from the baseline run's summary. The
    /// ratio is `None` (n/a, null in JSON) unless both mean turnarounds are
    /// at least [`MIN_RATIO_TURNAROUND_S`]: 0 / 0, or a quotient of
    /// rounding residues, is no comparison.
    pub fn set_baseline(&mut self, baseline_mean_turnaround_s: f64) {
        self.baseline_turnaround_mean_s = Some(baseline_mean_turnaround_s);
        let usable = |t: f64| t.is_finite() && t >= MIN_RATIO_TURNAROUND_S;
        self.turnaround_ratio = (usable(self.turnaround_mean_s)
            && usable(baseline_mean_turnaround_s))
        .then(|| baseline_mean_turnaround_s / self.turnaround_mean_s);
    }

    /// True when applications were submitted and every one was rejected
    /// (none fits on any host): every other figure of the run is empty.
    pub fn nothing_ran(&self) -> bool {
        self.apps > 0 && self.apps_rejected == self.apps
    }

    /// [`crate::SimError::NothingRan`] when [`Summary::nothing_ran`].
    pub fn check_ran(&self) -> Result<(), crate::SimError> {
        if self.nothing_ran() {
            return Err(crate::SimError::NothingRan {
                apps: self.apps,
                workload: self.workload.clone(),
            });
        }
        Ok(())
    }

    /// Fills the memory saving against the baseline's and the oracle's
    /// reserved memory (GiB-hours) on the same workload.
    pub fn set_reclaim(&mut self, baseline_mem_gib_h: f64, oracle_mem_gib_h: f64) {
        self.mem_reclaimed_gib_h = Some(baseline_mem_gib_h - self.mem_alloc_gib_h);
        self.oracle_mem_alloc_gib_h = Some(oracle_mem_gib_h);
        self.oracle_capture = Some(oracle_capture(
            baseline_mem_gib_h,
            oracle_mem_gib_h,
            self.mem_alloc_gib_h,
        ))
        .filter(|c| c.is_finite());
    }
}

/// `(baseline - this) / (baseline - oracle)` of reserved memory: the share
/// of the oracle's saving that `this` reclaims. NaN when the oracle
/// reclaims nothing (its reserved memory is not below the baseline's).
pub fn oracle_capture(baseline: f64, oracle: f64, this: f64) -> f64 {
    let room = baseline - oracle;
    if room.abs() > 1e-9 * baseline.abs().max(1e-12) && room > 0.0 {
        (baseline - this) / room
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hist_mean_and_median() {
        let mut h = WeightedHist::default();
        h.add(0.2, 1.0);
        h.add(0.8, 3.0);
        assert!((h.mean() - 0.65).abs() < 1e-12);
        assert!((h.quantile(0.5) - 0.8005).abs() < 1e-9);
        assert!((h.quantile(0.1) - 0.2005).abs() < 1e-9);
        h.add(f64::NAN, 1.0);
        h.add(0.5, 0.0);
        assert_eq!(h.total_weight(), 4.0);
    }

    /// Below the cap every round's point is kept; past it the timeline
    /// stays within the cap, keeps rounds 1, 1 + stride, ... evenly, and
    /// its first point.
    #[test]
    fn the_timeline_is_thinned_at_its_cap() {
        let point = |round: u64| TimePoint {
            t_s: round as f64,
            queued_apps: 0,
            running_apps: 0,
            running_components: 0,
            used_cpu_frac: 0.0,
            used_mem_frac: 0.0,
            alloc_cpu_frac: 0.0,
            alloc_mem_frac: 0.0,
        };
        let (mut t, mut stride) = (Vec::new(), 1);
        for round in 1..=8 {
            push_point(&mut t, &mut stride, round, point(round), 8);
        }
        assert_eq!((t.len(), stride), (8, 1), "every round below the cap");
        for round in 9..=1000 {
            push_point(&mut t, &mut stride, round, point(round), 8);
            assert!(t.len() <= 8, "round {round}: {}", t.len());
        }
        assert_eq!(stride, 128);
        let rounds: Vec<f64> = t.iter().map(|p| p.t_s).collect();
        assert_eq!(
            rounds,
            [1.0, 129.0, 257.0, 385.0, 513.0, 641.0, 769.0, 897.0]
        );
    }

    #[test]
    fn component_days_count_each_window_once() {
        let day = COMPONENT_DAY_S;
        let mut c = ComponentDays::default();
        assert_eq!(c.ran(10.0, 20.0), 1);
        // a restart in the same window adds nothing
        assert_eq!(c.ran(30.0, 40.0), 0);
        // spans windows 0..=2, window 0 already counted
        assert_eq!(c.ran(50.0, 2.5 * day), 2);
        assert_eq!(c.ran(3.0 * day, 3.0 * day), 1);
        assert!(c.oom(0.5 * day));
        assert!(!c.oom(0.7 * day));
        assert!(c.oom(2.1 * day));
        assert!(!c.oom(1.5 * day), "windows only move forward");
        assert_eq!(ComponentDays::default().ran(f64::NAN, 5.0), 1);
    }

    #[test]
    fn summary_derives_the_new_measures() {
        let mut m = RunMetrics {
            mean_used_cpu_frac: 0.25,
            mean_used_mem_frac: 0.5,
            mean_alloc_cpu_frac: 0.75,
            mean_alloc_mem_frac: 0.625,
            mem_alloc_byte_s: 2.0 * GIB * 7200.0,
            component_days: 8,
            oom_component_days: 2,
            ..RunMetrics::default()
        };
        let s = Summary::from_metrics(&m, "w", 1, "pessimistic", "gp", 0.0, 0.0);
        assert!((s.mem_alloc_gib_h - 4.0).abs() < 1e-12);
        assert_eq!(s.oom_component_day_fraction, 0.25);
        assert_eq!(s.cluster_mem_slack, 0.125);
        assert_eq!(s.cluster_cpu_slack, 0.5);
        m.component_days = 0;
        let s = Summary::from_metrics(&m, "w", 1, "pessimistic", "gp", 0.0, 0.0);
        assert_eq!(s.oom_component_day_fraction, 0.0);
    }

    #[test]
    fn plain_quantiles() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&xs, 0.5), 2.5);
        assert_eq!(quantile(&xs, 0.0), 1.0);
        assert!(quantile(&[], 0.5).is_nan());
        assert_eq!(mean(&xs), 2.5);
    }
}

//! [`VpaAggregate`]: the faithful VPA recommender for one workload, fed with
//! raw samples of each of its containers.

use std::collections::BTreeMap;

use super::aggregate_state::AggregateState;
use super::amount::{
    bytes_from_memory_amount, cores_from_cpu_amount, cpu_amount_from_cores,
    memory_amount_from_bytes,
};
use super::config::{CpuSampleWeight, VpaRecommenderConfig, MIN_SAMPLE_WEIGHT};
use super::container::{ContainerState, MemoryUpdate};
use super::recommender::{PodResourceRecommender, RecommendedAmounts};
use crate::{finite, ForecastError};

/// Lower bound, target and upper bound of one resource.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Bounds {
    pub lower: f64,
    pub target: f64,
    pub upper: f64,
}

/// The VPA's recommendation: CPU in cores, memory in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct VpaRecommendation {
    pub cpu: Bounds,
    pub mem: Bounds,
}

impl From<RecommendedAmounts> for VpaRecommendation {
    fn from(r: RecommendedAmounts) -> Self {
        Self {
            cpu: Bounds {
                lower: cores_from_cpu_amount(r.lower_bound.cpu_millicores),
                target: cores_from_cpu_amount(r.target.cpu_millicores),
                upper: cores_from_cpu_amount(r.upper_bound.cpu_millicores),
            },
            mem: Bounds {
                lower: bytes_from_memory_amount(r.lower_bound.mem_bytes),
                target: bytes_from_memory_amount(r.target.mem_bytes),
                upper: bytes_from_memory_amount(r.upper_bound.mem_bytes),
            },
        }
    }
}

/// One workload (application) under the VPA: every container's samples go
/// to ONE aggregate state, as the VPA aggregates all containers of a
/// workload that share a name. Containers are identified by any `u64`.
///
/// Times are `f64` seconds from any origin, samples of one container must
/// come in time order (an out-of-order sample is discarded and reported as
/// `Ok(false)`, as the VPA does); different containers may interleave.
#[derive(Clone, Debug)]
pub struct VpaAggregate {
    cfg: VpaRecommenderConfig,
    state: AggregateState,
    containers: BTreeMap<u64, ContainerState>,
    recommender: PodResourceRecommender,
    containers_in_pod: usize,
}

impl VpaAggregate {
    /// A workload with no samples. Fails on an invalid config.
    pub fn new(cfg: VpaRecommenderConfig) -> Result<Self, ForecastError> {
        cfg.validate()?;
        Ok(Self {
            state: AggregateState::new(&cfg, None)?,
            containers: BTreeMap::new(),
            recommender: PodResourceRecommender::from_config(&cfg),
            containers_in_pod: 1,
            cfg,
        })
    }

    /// The config.
    pub fn config(&self) -> &VpaRecommenderConfig {
        &self.cfg
    }

    /// The aggregate state (histograms, sample count, first/last times).
    pub fn state(&self) -> &AggregateState {
        &self.state
    }

    /// Number of distinct containers (names) in one pod of the workload;
    /// the pod minimum is split between them (default 1).
    pub fn set_containers_in_pod(&mut self, n: usize) {
        self.containers_in_pod = n.max(1);
    }

    /// Number of containers with state.
    pub fn containers(&self) -> usize {
        self.containers.len()
    }

    /// End of a container's current memory interval.
    pub fn container_window_end_s(&self, container: u64) -> Option<f64> {
        self.containers
            .get(&container)
            .and_then(|c| c.window_end_s())
    }

    /// A CPU usage sample (`cores` averaged over the sample, measured
    /// from `t_s`). Weight before decay: 0.1, or `max(request_cores, 0.1)`
    /// with [`CpuSampleWeight::Request`]. `Ok(false)` when the VPA discards
    /// it (negative usage, or not later than the container's last CPU
    /// sample).
    pub fn add_cpu_sample(
        &mut self,
        container: u64,
        t_s: f64,
        cores: f64,
        request_cores: f64,
    ) -> Result<bool, ForecastError> {
        finite(t_s)?;
        finite(cores)?;
        finite(request_cores)?;
        let millicores = if cores < 0.0 {
            -1
        } else {
            cpu_amount_from_cores(cores)
        };
        let c = self.containers.entry(container).or_default();
        if !c.accept_cpu_sample(t_s, millicores) {
            return Ok(false);
        }
        let weight = match self.cfg.cpu_sample_weight {
            CpuSampleWeight::Constant => MIN_SAMPLE_WEIGHT,
            CpuSampleWeight::Request => {
                cores_from_cpu_amount(cpu_amount_from_cores(request_cores)).max(MIN_SAMPLE_WEIGHT)
            }
        };
        self.state
            .add_cpu_sample(t_s, cores_from_cpu_amount(millicores), weight)?;
        Ok(true)
    }

    /// A memory usage sample in bytes (working set, or the peak since the
    /// previous sample when known). It updates the container's peak of the
    /// current 24 h interval. `Ok(false)` when discarded (negative, or
    /// older than the container's last memory sample).
    pub fn add_mem_sample(
        &mut self,
        container: u64,
        t_s: f64,
        bytes: f64,
    ) -> Result<bool, ForecastError> {
        finite(t_s)?;
        finite(bytes)?;
        let usage = if bytes < 0.0 {
            -1
        } else {
            memory_amount_from_bytes(bytes)
        };
        let interval = self.cfg.memory_aggregation_interval_s;
        let c = self.containers.entry(container).or_default();
        let update = c.add_memory_sample(t_s, usage, false, interval);
        self.apply(update)
    }

    /// An OOM kill of `container` at `t_s` while its memory request (the
    /// allocation it was killed at) was `request_bytes`: records
    /// `max(used + oom_min_bump_up_bytes, used * oom_bump_up_ratio)` with
    /// `used = max(request_bytes, the interval's usage peak)` as the
    /// interval's peak. Fails with [`ForecastError::Rejected`] when the OOM
    /// is more than one interval older than the last memory sample.
    pub fn record_oom(
        &mut self,
        container: u64,
        t_s: f64,
        request_bytes: f64,
    ) -> Result<(), ForecastError> {
        finite(t_s)?;
        finite(request_bytes)?;
        let req = memory_amount_from_bytes(request_bytes);
        let cfg = &self.cfg;
        let (interval, ratio, min_bump) = (
            cfg.memory_aggregation_interval_s,
            cfg.oom_bump_up_ratio,
            cfg.oom_min_bump_up_bytes,
        );
        let c = self.containers.entry(container).or_default();
        let update = c.record_oom(t_s, req, interval, ratio, min_bump)?;
        self.apply(update).map(|_| ())
    }

    fn apply(&mut self, update: MemoryUpdate) -> Result<bool, ForecastError> {
        match update {
            MemoryUpdate::Discarded => Ok(false),
            MemoryUpdate::Accepted { subtract, add } => {
                if let Some(p) = subtract {
                    self.state
                        .subtract_memory_peak(p.t_s, bytes_from_memory_amount(p.bytes))?;
                }
                if let Some(p) = add {
                    self.state
                        .add_memory_peak(p.t_s, bytes_from_memory_amount(p.bytes))?;
                }
                Ok(true)
            }
        }
    }

    /// Forgets a container's window (the pod is gone); its samples stay in
    /// the aggregate, as in the VPA.
    pub fn remove_container(&mut self, container: u64) {
        self.containers.remove(&container);
    }

    /// True when no CPU sample arrived within the memory aggregation window
    /// (8 x 24 h) before `now_s`: the VPA then garbage-collects the state.
    pub fn is_expired(&self, now_s: f64) -> bool {
        self.state.is_expired(now_s)
    }

    /// The recommendation. It depends only on the samples (relative decay
    /// and the CPU sample history), not on the current time.
    pub fn recommend(&self) -> VpaRecommendation {
        self.recommend_amounts().into()
    }

    /// The recommendation as the VPA's integer amounts.
    pub fn recommend_amounts(&self) -> RecommendedAmounts {
        self.recommender
            .recommend(&self.state, self.containers_in_pod)
    }
}

#[cfg(test)]
#[allow(clippy::approx_constant)] // 3.14 is the Go tests' value, not pi
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Within one 24 h interval each container holds exactly one peak
        /// (weight 1, all stamped at the interval end), and that peak is
        /// the largest sample so far.
        #[test]
        fn one_peak_per_container_per_interval(
            samples in proptest::collection::vec((0u64..3, 0.0f64..1e11), 1..60),
        ) {
            let mut v = VpaAggregate::new(cfg()).expect("cfg");
            let mut max = [None::<f64>; 3];
            for (i, &(c, bytes)) in samples.iter().enumerate() {
                // All samples within the first interval of every container.
                let t = i as f64;
                prop_assert!(v.add_mem_sample(c, t, bytes).expect("finite"));
                let m = &mut max[c as usize];
                *m = Some(m.map_or(bytes, |x: f64| x.max(bytes)));
            }
            let seen = max.iter().flatten().count() as f64;
            let h = v.state().memory_peaks();
            // Stamped at different window ends (first sample + 24 h), so
            // the weights are 2^(offset/86400) ~ 1.
            let w = h.histogram().total_weight();
            prop_assert!((w / seen - 1.0).abs() < 1e-3, "{} peaks, weight {}", seen, w);
            let top = max.iter().flatten().fold(0.0f64, |a, &b| a.max(b));
            let opts = h.histogram().options();
            prop_assert_eq!(
                opts.find_bucket(h.percentile(1.0) - 1.0),
                opts.find_bucket(top.trunc())
            );
        }

        /// lower <= target <= upper for any history.
        #[test]
        fn bounds_are_ordered(
            samples in proptest::collection::vec((0u64..3, 0.0f64..1e5, 0.0f64..64.0, 0.0f64..1e11), 0..80),
        ) {
            let mut v = VpaAggregate::new(cfg()).expect("cfg");
            let mut t = 0.0;
            for &(c, dt, cores, bytes) in &samples {
                t += dt;
                v.add_cpu_sample(c, t, cores, 1.0).expect("finite");
                v.add_mem_sample(c, t, bytes).expect("finite");
            }
            let r = v.recommend();
            for b in [r.cpu, r.mem] {
                prop_assert!(b.lower <= b.target && b.target <= b.upper, "{:?}", r);
            }
        }
    }

    const DAY: f64 = 86_400.0;
    const MIB: f64 = 1024.0 * 1024.0;

    fn cfg() -> VpaRecommenderConfig {
        VpaRecommenderConfig::default()
    }

    #[test]
    fn memory_target_is_p90_of_daily_peaks_plus_margin() {
        let mut v = VpaAggregate::new(cfg()).expect("cfg");
        // Ten days, one container, samples every 5 min: usage 1 GiB with a
        // daily spike to 2 GiB. Every daily peak is 2 GiB, so P90 is its
        // bucket's end.
        let gib = 1024.0 * MIB;
        for i in 0..(10 * 288) {
            let t = i as f64 * 300.0;
            let m = if i % 288 == 100 { 2.0 * gib } else { gib };
            v.add_cpu_sample(0, t, 0.5, 1.0).expect("ok");
            v.add_mem_sample(0, t, m).expect("ok");
        }
        let r = v.recommend();
        assert!(r.mem.target >= 2.0 * gib * 1.15, "{r:?}");
        assert!(r.mem.target <= 2.0 * gib * 1.15 * 1.08, "{r:?}");
        assert!(r.mem.lower <= r.mem.target && r.mem.target <= r.mem.upper);
        // CPU: constant 0.5 core.
        assert!(
            r.cpu.target >= 0.5 * 1.15 && r.cpu.target <= 0.5 * 1.15 * 1.08,
            "{r:?}"
        );
    }

    #[test]
    fn all_containers_share_one_state() {
        let mut v = VpaAggregate::new(cfg()).expect("cfg");
        for c in 0..4u64 {
            v.add_mem_sample(c, 0.0, (c + 1) as f64 * 1e9).expect("ok");
            v.add_cpu_sample(c, 0.0, 1.0, 1.0).expect("ok");
        }
        assert_eq!(v.containers(), 4);
        assert_eq!(v.state().total_samples_count(), 4);
        // Four equal-weight peaks 1..4 GB: P90 is the 4 GB bucket.
        let t = v.recommend().mem.target;
        assert!((4e9 * 1.15..=4e9 * 1.15 * 1.08).contains(&t), "{t}");
        v.remove_container(3);
        assert_eq!(v.containers(), 3);
        assert_eq!(v.recommend().mem.target, t);
    }

    #[test]
    fn a_later_higher_sample_replaces_the_interval_peak() {
        let mut v = VpaAggregate::new(cfg()).expect("cfg");
        v.add_mem_sample(0, 0.0, 1e9).expect("ok");
        v.add_mem_sample(0, 3600.0, 3e9).expect("ok");
        v.add_mem_sample(0, 7200.0, 2e9).expect("ok");
        let w = v.state().memory_peaks().histogram().total_weight();
        assert!((w - 1.0).abs() < 1e-12, "one peak per interval: {w}");
        // Next interval: a second peak.
        v.add_mem_sample(0, DAY + 1.0, 1e9).expect("ok");
        assert!(v.state().memory_peaks().histogram().total_weight() > 1.5);
        assert!(!v.add_mem_sample(0, 10.0, 5e9).expect("ok"), "out of order");
        assert!(
            !v.add_mem_sample(0, DAY + 2.0, -1.0).expect("ok"),
            "negative"
        );
        assert!(v.add_mem_sample(0, f64::NAN, 1.0).is_err());
    }

    #[test]
    fn oom_bumps_the_memory_target() {
        let mut v = VpaAggregate::new(cfg()).expect("cfg");
        v.add_cpu_sample(0, 0.0, 0.1, 0.1).expect("ok");
        v.add_mem_sample(0, 0.0, 1e9).expect("ok");
        let before = v.recommend().mem.target;
        v.record_oom(0, 60.0, 1e9).expect("fresh");
        let after = v.recommend().mem.target;
        assert!(
            after >= 1.2e9 * 1.15 && after > before,
            "{before} -> {after}"
        );
        assert!(matches!(
            v.record_oom(0, -2.0 * DAY, 1e9),
            Err(ForecastError::Rejected(_))
        ));
        // Tiny request: the 100 MiB floor wins.
        let mut w = VpaAggregate::new(cfg()).expect("cfg");
        w.record_oom(0, 0.0, MIB).expect("ok");
        let peak = w.state().memory_peaks().percentile(1.0);
        assert!(peak >= 101.0 * MIB, "{peak}");
    }

    #[test]
    fn cpu_weight_by_request_is_optional() {
        let mut by_req = VpaAggregate::new(VpaRecommenderConfig {
            cpu_sample_weight: CpuSampleWeight::Request,
            ..cfg()
        })
        .expect("cfg");
        let mut constant = VpaAggregate::new(cfg()).expect("cfg");
        // Long history at 1 core under request 1, then a day at 4 cores
        // under request 8: by request, the new level dominates sooner.
        for i in 0..(3 * 288) {
            let t = i as f64 * 300.0;
            by_req.add_cpu_sample(0, t, 1.0, 1.0).expect("ok");
            constant.add_cpu_sample(0, t, 1.0, 1.0).expect("ok");
        }
        for i in (3 * 288)..(3 * 288 + 24) {
            let t = i as f64 * 300.0;
            by_req.add_cpu_sample(0, t, 4.0, 8.0).expect("ok");
            constant.add_cpu_sample(0, t, 4.0, 8.0).expect("ok");
        }
        assert!(by_req.recommend().cpu.target > 4.0);
        assert!(constant.recommend().cpu.target < 2.0);
    }

    #[test]
    fn empty_workload_recommends_the_minimum() {
        let v = VpaAggregate::new(cfg()).expect("cfg");
        let r = v.recommend();
        assert_eq!(r.cpu.target, 0.025);
        assert_eq!(r.mem.target, 250.0 * MIB);
        assert!(!v.is_expired(1e9));
        assert!(VpaAggregate::new(VpaRecommenderConfig {
            target_memory_percentile: 2.0,
            ..cfg()
        })
        .is_err());
    }
}

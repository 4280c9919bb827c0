//! Pod resource recommender (`logic/recommender.go`): target, lower and
//! upper bound estimators for CPU and memory, built as
//! `CreatePodResourceRecommender` builds them:
//!
//! - target = `P(target) * (1 + margin)`;
//! - lower  = `P(lower) * (1 + margin) * (1 + 0.001 / confidence)^-2`;
//! - upper  = `P(upper) * (1 + margin) * (1 + 1 / confidence)`;
//! - each at least the pod minimum (25 millicores, 250 MiB) divided by
//!   the number of containers in the pod.
//!
//! The confidence is the history length in days (see
//! [`super::estimator::confidence`]): the upper bound is infinite (capped)
//! with no history, x3 at 12 h, x2 at 24 h, x1.14 at a week.

use tailor_core::Resource;

use super::aggregate_state::AggregateState;
use super::amount::{cpu_amount_from_cores, memory_amount_from_bytes, scale_resource};
use super::config::VpaRecommenderConfig;
use super::estimator::Estimator;

/// Amounts of both resources: CPU in millicores, memory in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Amounts {
    pub cpu_millicores: i64,
    pub mem_bytes: i64,
}

/// `RecommendedContainerResources`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RecommendedAmounts {
    pub target: Amounts,
    pub lower_bound: Amounts,
    pub upper_bound: Amounts,
}

/// `podResourceRecommender`.
#[derive(Clone, Debug, PartialEq)]
pub struct PodResourceRecommender {
    pub target_cpu: Estimator,
    pub target_memory: Estimator,
    pub lower_bound_cpu: Estimator,
    pub lower_bound_memory: Estimator,
    pub upper_bound_cpu: Estimator,
    pub upper_bound_memory: Estimator,
    pub min_cpu_millicores: f64,
    pub min_memory_mb: f64,
}

impl PodResourceRecommender {
    /// `CreatePodResourceRecommender`.
    pub fn from_config(cfg: &VpaRecommenderConfig) -> Self {
        let m = cfg.safety_margin_fraction;
        let (ci_cpu, ci_mem) = (
            cfg.confidence_interval_cpu_s,
            cfg.confidence_interval_memory_s,
        );
        Self {
            target_cpu: Estimator::Percentile(cfg.target_cpu_percentile).with_margin(m),
            target_memory: Estimator::Percentile(cfg.target_memory_percentile).with_margin(m),
            lower_bound_cpu: Estimator::Percentile(cfg.lower_bound_cpu_percentile)
                .with_margin(m)
                .with_confidence_multiplier(0.001, -2.0, ci_cpu),
            lower_bound_memory: Estimator::Percentile(cfg.lower_bound_memory_percentile)
                .with_margin(m)
                .with_confidence_multiplier(0.001, -2.0, ci_mem),
            upper_bound_cpu: Estimator::Percentile(cfg.upper_bound_cpu_percentile)
                .with_margin(m)
                .with_confidence_multiplier(1.0, 1.0, ci_cpu),
            upper_bound_memory: Estimator::Percentile(cfg.upper_bound_memory_percentile)
                .with_margin(m)
                .with_confidence_multiplier(1.0, 1.0, ci_mem),
            min_cpu_millicores: cfg.pod_min_cpu_millicores,
            min_memory_mb: cfg.pod_min_memory_mb,
        }
    }

    /// `GetRecommendedPodResources` for one of `containers_in_pod`
    /// aggregates (the pod minimum is split evenly between them; 0 is
    /// read as 1).
    pub fn recommend(&self, s: &AggregateState, containers_in_pod: usize) -> RecommendedAmounts {
        let fraction = 1.0 / containers_in_pod.max(1) as f64;
        let min_cpu = scale_resource(
            cpu_amount_from_cores(self.min_cpu_millicores * 0.001),
            fraction,
        );
        let min_mem = scale_resource(
            memory_amount_from_bytes(self.min_memory_mb * 1024.0 * 1024.0),
            fraction,
        );
        let both = |cpu: &Estimator, mem: &Estimator| Amounts {
            cpu_millicores: cpu.estimate(Resource::Cpu, s).max(min_cpu),
            mem_bytes: mem.estimate(Resource::Mem, s).max(min_mem),
        };
        RecommendedAmounts {
            target: both(&self.target_cpu, &self.target_memory),
            lower_bound: both(&self.lower_bound_cpu, &self.lower_bound_memory),
            upper_bound: both(&self.upper_bound_cpu, &self.upper_bound_memory),
        }
    }
}

#[cfg(test)]
#[allow(clippy::approx_constant)] // 3.14 is the Go tests' value, not pi
mod tests {
    //! Port of `logic/recommender_test.go` (the min-resources tests; the
    //! controlled-resources filter and the API list conversion have no
    //! counterpart here).
    use super::*;

    fn const_recommender() -> PodResourceRecommender {
        let cpu = Estimator::Const(cpu_amount_from_cores(0.001));
        let mem = Estimator::Const(memory_amount_from_bytes(1e6));
        PodResourceRecommender {
            target_cpu: cpu.clone(),
            target_memory: mem.clone(),
            lower_bound_cpu: cpu.clone(),
            lower_bound_memory: mem.clone(),
            upper_bound_cpu: cpu,
            upper_bound_memory: mem,
            min_cpu_millicores: 25.0,
            min_memory_mb: 250.0,
        }
    }

    fn state() -> AggregateState {
        AggregateState::new(&VpaRecommenderConfig::default(), None).expect("cfg")
    }

    #[test]
    fn min_resources_applied() {
        let r = const_recommender().recommend(&state(), 1);
        assert_eq!(
            r.target.cpu_millicores,
            cpu_amount_from_cores(25.0 / 1000.0)
        );
        assert_eq!(
            r.target.mem_bytes,
            memory_amount_from_bytes(250.0 * 1024.0 * 1024.0)
        );
    }

    #[test]
    fn min_resources_split_across_containers() {
        let r = const_recommender().recommend(&state(), 2);
        assert_eq!(
            r.target.cpu_millicores,
            cpu_amount_from_cores((25.0 / 1000.0) / 2.0)
        );
        assert_eq!(
            r.target.mem_bytes,
            memory_amount_from_bytes((250.0 * 1024.0 * 1024.0) / 2.0)
        );
    }

    #[test]
    fn bounds_follow_the_confidence() {
        let cfg = VpaRecommenderConfig {
            pod_min_cpu_millicores: 0.0,
            pod_min_memory_mb: 0.0,
            ..VpaRecommenderConfig::default()
        };
        let rec = PodResourceRecommender::from_config(&cfg);
        let mut s = AggregateState::new(&cfg, None).expect("cfg");
        // One sample a minute for a day: confidence 1, so upper = 2 x P95.
        for i in 0..1441 {
            let t = i as f64 * 60.0;
            s.add_cpu_sample(t, 1.0, 0.1).expect("ok");
        }
        s.add_memory_peak(86_400.0, 1e9).expect("ok");
        let r = rec.recommend(&s, 1);
        assert!(r.lower_bound.mem_bytes <= r.target.mem_bytes);
        assert!(r.target.mem_bytes <= r.upper_bound.mem_bytes);
        let target = r.target.mem_bytes as f64;
        let upper = r.upper_bound.mem_bytes as f64;
        assert!((upper / target - 2.0).abs() < 1e-3, "{r:?}");
        // Target: the end of 1e9's bucket (5% resolution) plus 15%.
        assert!((1.15e9..=1.15e9 * 1.08).contains(&target), "{r:?}");
        let lower = r.lower_bound.mem_bytes as f64;
        assert!(
            (lower / target - 1.0 / 1.001f64.powi(2)).abs() < 1e-6,
            "{r:?}"
        );
    }
}

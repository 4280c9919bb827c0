//! Estimators (`logic/estimator.go`): functions from an aggregate state to
//! a resource amount, composed as in the Go code. An estimator is built
//! from a base (a percentile of the state's histogram or a constant) and
//! decorators: margin, confidence multiplier and minimum.

use tailor_core::Resource;

use super::aggregate_state::AggregateState;
use super::amount::{cpu_amount_from_cores, memory_amount_from_bytes, scale_resource};

/// An estimator of one resource's amount (millicores for CPU, bytes for
/// memory).
#[derive(Clone, Debug, PartialEq)]
pub enum Estimator {
    /// `percentile{CPU,Memory}Estimator`: the percentile of the CPU usage
    /// histogram or of the memory peaks histogram.
    Percentile(f64),
    /// `const{CPU,Memory}Estimator`: always this amount.
    Const(i64),
    /// `{cpu,memory}MarginEstimator`: `base + base * fraction`.
    Margin { fraction: f64, base: Box<Estimator> },
    /// `{cpu,memory}ConfidenceMultiplier`:
    /// `base * (1 + multiplier / confidence)^exponent`.
    ConfidenceMultiplier {
        multiplier: f64,
        exponent: f64,
        confidence_interval_s: f64,
        base: Box<Estimator>,
    },
    /// `{cpu,memory}MinResourceEstimator`: at least `min`.
    MinResource { min: i64, base: Box<Estimator> },
}

impl Estimator {
    /// `With{CPU,Memory}Margin`.
    pub fn with_margin(self, fraction: f64) -> Self {
        Self::Margin {
            fraction,
            base: Box::new(self),
        }
    }

    /// `With{CPU,Memory}ConfidenceMultiplier`.
    pub fn with_confidence_multiplier(
        self,
        multiplier: f64,
        exponent: f64,
        confidence_interval_s: f64,
    ) -> Self {
        Self::ConfidenceMultiplier {
            multiplier,
            exponent,
            confidence_interval_s,
            base: Box::new(self),
        }
    }

    /// `With{CPU,Memory}MinResource`.
    pub fn with_min_resource(self, min: i64) -> Self {
        Self::MinResource {
            min,
            base: Box::new(self),
        }
    }

    /// `Get{CPU,Memory}Estimation`.
    pub fn estimate(&self, resource: Resource, s: &AggregateState) -> i64 {
        match self {
            Self::Percentile(p) => match resource {
                Resource::Cpu => cpu_amount_from_cores(s.cpu_usage().percentile(*p)),
                Resource::Mem => memory_amount_from_bytes(s.memory_peaks().percentile(*p)),
            },
            Self::Const(v) => *v,
            Self::Margin { fraction, base } => {
                let b = base.estimate(resource, s);
                b.saturating_add(scale_resource(b, *fraction))
            }
            Self::ConfidenceMultiplier {
                multiplier,
                exponent,
                confidence_interval_s,
                base,
            } => {
                let c = confidence(s, *confidence_interval_s);
                let b = base.estimate(resource, s);
                scale_resource(b, (1.0 + multiplier / c).powf(*exponent))
            }
            Self::MinResource { min, base } => base.estimate(resource, s).max(*min),
        }
    }
}

/// `getConfidence`: how much history the state holds, in units of the
/// confidence interval: `min(lifespan / interval, samples / minutes(interval))`
/// (a steady 1 sample/minute over N days gives N with the 24 h interval).
/// Lifespan and count are those of the CPU samples.
pub fn confidence(s: &AggregateState, confidence_interval_s: f64) -> f64 {
    let lifespan_s = match (s.first_sample_s(), s.last_sample_s()) {
        (Some(f), Some(l)) => l - f,
        _ => 0.0,
    };
    let lifespan = lifespan_s / confidence_interval_s;
    let samples = s.total_samples_count() as f64 / (confidence_interval_s / 60.0);
    lifespan.min(samples)
}

#[cfg(test)]
#[allow(clippy::approx_constant)] // 3.14 is the Go tests' value, not pi
mod tests {
    //! Port of `logic/estimator_test.go`.
    use super::super::amount::{bytes_from_memory_amount, cores_from_cpu_amount};
    use super::super::config::VpaRecommenderConfig;
    use super::super::histogram::Histogram;
    use super::*;

    const DAY: f64 = 86_400.0;

    fn empty_state() -> AggregateState {
        AggregateState::new(&VpaRecommenderConfig::default(), None).expect("cfg")
    }

    fn estimate_both(cpu: &Estimator, mem: &Estimator, s: &AggregateState) -> (i64, i64) {
        (
            cpu.estimate(Resource::Cpu, s),
            mem.estimate(Resource::Mem, s),
        )
    }

    /// `TestPercentileEstimator` on undecayed histograms (1, 2, 3 cores and
    /// 1e9, 2e9, 3e9 bytes): P20 of CPU ~ 1 core, P50 of memory ~ 2e9, within
    /// the 5% histogram resolution.
    #[test]
    fn percentile_estimator() {
        let cfg = VpaRecommenderConfig::default();
        let mut cpu = Histogram::new(cfg.cpu_histogram_options().expect("ok"));
        let mut mem = Histogram::new(cfg.memory_histogram_options().expect("ok"));
        for i in 1..=3 {
            cpu.add_sample(i as f64, 1.0).expect("ok");
            mem.add_sample(i as f64 * 1e9, 1.0).expect("ok");
        }
        // Estimators read the percentile straight off the histogram.
        let cpu_est = cpu_amount_from_cores(cpu.percentile(0.2));
        let mem_est = memory_amount_from_bytes(mem.percentile(0.5));
        let rel = |want: f64, got: f64| ((want - got) / want).abs();
        assert!(
            rel(1.0, cores_from_cpu_amount(cpu_est)) <= 0.05,
            "{cpu_est}"
        );
        assert!(
            rel(2e9, bytes_from_memory_amount(mem_est)) <= 0.05,
            "{mem_est}"
        );

        // The same through Estimator::Percentile on a decaying aggregate
        // whose samples share one timestamp.
        let mut s = empty_state();
        for i in 1..=3 {
            s.add_cpu_sample(0.0, i as f64, 1.0).expect("ok");
            s.add_memory_peak(0.0, i as f64 * 1e9).expect("ok");
        }
        let (c, m) = estimate_both(&Estimator::Percentile(0.2), &Estimator::Percentile(0.5), &s);
        assert_eq!((c, m), (cpu_est, mem_est));
    }

    #[test]
    fn confidence_multiplier() {
        let base_cpu = Estimator::Const(cpu_amount_from_cores(3.14));
        let base_mem = Estimator::Const(memory_amount_from_bytes(3.14e9));
        let cpu1 = base_cpu.clone().with_confidence_multiplier(1.0, 1.0, DAY);
        let mem1 = base_mem.clone().with_confidence_multiplier(1.0, 1.0, DAY);
        let cpu2 = base_cpu.clone().with_confidence_multiplier(1.0, -1.0, DAY);
        let mem2 = base_mem.clone().with_confidence_multiplier(1.0, -1.0, DAY);

        let mut s = empty_state();
        // No history: +inf (the max amount) with exponent +1, 0 with -1.
        assert_eq!(estimate_both(&cpu1, &mem1, &s).0, 100_000_000_000_000);
        assert_eq!(estimate_both(&cpu2, &mem2, &s).0, 0);

        let cpu3 = base_cpu.with_confidence_multiplier(0.1, 2.0, DAY);
        let mem3 = base_mem.with_confidence_multiplier(0.1, 2.0, DAY);
        let mut t = 0.0;
        for _ in 1..=9 {
            s.add_cpu_sample(t, 1.0, 0.1).expect("ok");
            t += 120.0;
        }
        // 9 samples / (60 * 24) = 0.00625.
        assert_eq!(confidence(&s, DAY), 0.00625);
        // 3.14 * (1 + 0.1 / 0.00625)^2 = 907.46 cores; 9.0746e11 bytes.
        let (c, m) = estimate_both(&cpu3, &mem3, &s);
        assert_eq!(cores_from_cpu_amount(c), 907.46);
        assert_eq!(bytes_from_memory_amount(m), 9.0746e11);
    }

    #[test]
    fn confidence_multiplier_with_custom_interval() {
        let interval = 18.0 * 60.0;
        let cpu4 = Estimator::Const(cpu_amount_from_cores(3.14))
            .with_confidence_multiplier(0.1, 2.0, interval);
        let mem4 = Estimator::Const(memory_amount_from_bytes(3.14e9))
            .with_confidence_multiplier(0.1, 2.0, interval);
        let mut s = empty_state();
        let mut t = 0.0;
        for _ in 1..=9 {
            s.add_cpu_sample(t, 1.0, 0.1).expect("ok");
            t += 120.0;
        }
        // 9 / 18 = 0.5; 3.14 * 1.2^2 = 4.5216 -> 4.521 cores (millicores
        // truncate), 4.5216e9 bytes.
        assert_eq!(confidence(&s, interval), 0.5);
        let (c, m) = estimate_both(&cpu4, &mem4, &s);
        assert_eq!(cores_from_cpu_amount(c), 4.521);
        assert_eq!(bytes_from_memory_amount(m), 4.5216e9);
    }

    #[test]
    fn confidence_multiplier_no_history() {
        let cpu =
            Estimator::Const(cpu_amount_from_cores(3.14)).with_confidence_multiplier(0.1, 2.0, DAY);
        assert_eq!(
            cpu.estimate(Resource::Cpu, &empty_state()),
            100_000_000_000_000
        );
    }

    #[test]
    fn margin_estimator() {
        let cpu = Estimator::Const(cpu_amount_from_cores(3.14)).with_margin(0.1);
        let mem = Estimator::Const(memory_amount_from_bytes(3.14e9)).with_margin(0.1);
        let (c, m) = estimate_both(&cpu, &mem, &empty_state());
        assert_eq!(cores_from_cpu_amount(c), 3.454);
        assert_eq!(bytes_from_memory_amount(m), 3.454e9);
    }

    #[test]
    fn min_resources_estimator() {
        let s = empty_state();
        let cpu = Estimator::Const(cpu_amount_from_cores(3.14))
            .with_min_resource(cpu_amount_from_cores(0.2));
        assert_eq!(cores_from_cpu_amount(cpu.estimate(Resource::Cpu, &s)), 3.14);
        let mem = Estimator::Const(memory_amount_from_bytes(4e8))
            .with_min_resource(memory_amount_from_bytes(2e7));
        assert_eq!(
            bytes_from_memory_amount(mem.estimate(Resource::Mem, &s)),
            4e8
        );
    }
}

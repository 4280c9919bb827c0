//! Aggregate state (`model/aggregate_container_state.go`): the CPU usage
//! and memory peak histograms of a set of containers, plus the first/last
//! CPU sample times and the CPU sample count the confidence is computed
//! from. Here one aggregate holds every container of a workload
//! (application).
//!
//! Not ported: checkpoints, the Kubernetes update policy (scaling mode,
//! controlled resources, per-VPA overrides behind a feature gate) and the
//! quality metrics.

use super::config::VpaRecommenderConfig;
use super::decaying_histogram::DecayingHistogram;
use crate::ForecastError;

/// CPU usage distribution and memory peaks of a workload.
#[derive(Clone, Debug)]
pub struct AggregateState {
    cpu: DecayingHistogram,
    memory_peaks: DecayingHistogram,
    first_sample_s: Option<f64>,
    last_sample_s: Option<f64>,
    total_samples_count: u64,
    creation_s: Option<f64>,
    memory_aggregation_window_s: f64,
}

impl AggregateState {
    /// `NewAggregateContainerState` with the config's histograms. Go stamps
    /// the creation time with the wall clock; here it is `creation_s` (or
    /// the first sample's time when `None`).
    pub fn new(cfg: &VpaRecommenderConfig, creation_s: Option<f64>) -> Result<Self, ForecastError> {
        Ok(Self {
            cpu: DecayingHistogram::new(
                cfg.cpu_histogram_options()?,
                cfg.cpu_histogram_decay_half_life_s,
            )?,
            memory_peaks: DecayingHistogram::new(
                cfg.memory_histogram_options()?,
                cfg.memory_histogram_decay_half_life_s,
            )?,
            first_sample_s: None,
            last_sample_s: None,
            total_samples_count: 0,
            creation_s,
            memory_aggregation_window_s: cfg.memory_aggregation_window_s(),
        })
    }

    /// `AggregateCPUUsage`.
    pub fn cpu_usage(&self) -> &DecayingHistogram {
        &self.cpu
    }

    /// `AggregateMemoryPeaks`.
    pub fn memory_peaks(&self) -> &DecayingHistogram {
        &self.memory_peaks
    }

    /// Time of the first CPU sample.
    pub fn first_sample_s(&self) -> Option<f64> {
        self.first_sample_s
    }

    /// Time of the last CPU sample.
    pub fn last_sample_s(&self) -> Option<f64> {
        self.last_sample_s
    }

    /// Number of CPU samples aggregated.
    pub fn total_samples_count(&self) -> u64 {
        self.total_samples_count
    }

    fn note_creation(&mut self, t_s: f64) {
        if self.creation_s.is_none() {
            self.creation_s = Some(t_s);
        }
    }

    /// `addCPUSample`: adds `cores` with `weight` at `t_s` and updates the
    /// first/last sample times and the count.
    pub fn add_cpu_sample(
        &mut self,
        t_s: f64,
        cores: f64,
        weight: f64,
    ) -> Result<(), ForecastError> {
        self.cpu.add_sample(cores, weight, t_s)?;
        self.note_creation(t_s);
        if self.last_sample_s.is_none_or_before(t_s) {
            self.last_sample_s = Some(t_s);
        }
        if !self.first_sample_s.is_some_and(|f| f <= t_s) {
            self.first_sample_s = Some(t_s);
        }
        self.total_samples_count += 1;
        Ok(())
    }

    /// Memory `AddSample`: one peak of weight 1 at `t_s`.
    pub fn add_memory_peak(&mut self, t_s: f64, bytes: f64) -> Result<(), ForecastError> {
        self.note_creation(t_s);
        self.memory_peaks.add_sample(bytes, 1.0, t_s)
    }

    /// Memory `SubtractSample`: removes a peak added before.
    pub fn subtract_memory_peak(&mut self, t_s: f64, bytes: f64) -> Result<(), ForecastError> {
        self.memory_peaks.subtract_sample(bytes, 1.0, t_s)
    }

    /// `MergeContainerState`.
    pub fn merge(&mut self, other: &AggregateState) -> Result<(), ForecastError> {
        self.cpu.merge(&other.cpu)?;
        self.memory_peaks.merge(&other.memory_peaks)?;
        if let Some(o) = other.first_sample_s {
            if !self.first_sample_s.is_some_and(|f| f <= o) {
                self.first_sample_s = Some(o);
            }
        }
        if let Some(o) = other.last_sample_s {
            if self.last_sample_s.is_none_or_before(o) {
                self.last_sample_s = Some(o);
            }
        }
        self.total_samples_count += other.total_samples_count;
        Ok(())
    }

    /// `isExpired`: no CPU sample (or, when empty, no creation) within the
    /// memory aggregation window (`interval * count`, 8 days by default).
    pub fn is_expired(&self, now_s: f64) -> bool {
        let since = if self.total_samples_count == 0 {
            self.creation_s
        } else {
            self.last_sample_s
        };
        match since {
            Some(t) => now_s - t >= self.memory_aggregation_window_s,
            None => false,
        }
    }

    #[cfg(test)]
    pub(crate) fn set_for_test(
        &mut self,
        last_s: Option<f64>,
        count: u64,
        creation_s: Option<f64>,
    ) {
        self.last_sample_s = last_s;
        self.total_samples_count = count;
        self.creation_s = creation_s;
    }
}

/// `After` on an optional time: true when unset or strictly before `t`.
trait NoneOrBefore {
    fn is_none_or_before(&self, t: f64) -> bool;
}

impl NoneOrBefore for Option<f64> {
    fn is_none_or_before(&self, t: f64) -> bool {
        !self.is_some_and(|x| x >= t)
    }
}

#[cfg(test)]
#[allow(clippy::approx_constant)] // 3.14 is the Go tests' value, not pi
mod tests {
    //! Port of `model/aggregate_container_state_test.go`: the aggregation
    //! and expiry tests (checkpoint and Kubernetes-policy tests have no
    //! counterpart here).
    use super::super::workload::VpaAggregate;
    use super::*;

    /// `testTimestamp` ("2017-04-18 17:35:05" UTC) in Unix seconds.
    const TEST_TIMESTAMP: f64 = 1_492_536_905.0;
    const DAY: f64 = 86_400.0;
    const HOUR: f64 = 3_600.0;

    /// `TestAggregateStateByContainerName`: two pods, containers app-A,
    /// app-B (pod 1) and app-A, app-C (pod 2). The app-A aggregate holds
    /// both app-A containers' CPU samples and one memory peak each (at its
    /// window end); B and C hold one sample each.
    #[test]
    fn aggregate_state_by_container_name() {
        let cfg = VpaRecommenderConfig::default();
        let request = 3.14;
        let mut app_a = VpaAggregate::new(cfg.clone()).expect("cfg");
        let mut app_b = VpaAggregate::new(cfg.clone()).expect("cfg");
        let mut app_c = VpaAggregate::new(cfg.clone()).expect("cfg");
        // containers[0] = pod1/app-A, [2] = pod2/app-A.
        assert!(app_a
            .add_cpu_sample(0, TEST_TIMESTAMP, 1.0, request)
            .expect("ok"));
        assert!(app_b
            .add_cpu_sample(1, TEST_TIMESTAMP, 5.0, request)
            .expect("ok"));
        assert!(app_a
            .add_cpu_sample(2, TEST_TIMESTAMP, 3.0, request)
            .expect("ok"));
        assert!(app_c
            .add_cpu_sample(3, TEST_TIMESTAMP, 5.0, request)
            .expect("ok"));
        assert!(app_a.add_mem_sample(0, TEST_TIMESTAMP, 2e9).expect("ok"));
        assert!(app_b.add_mem_sample(1, TEST_TIMESTAMP, 10e9).expect("ok"));
        assert!(app_a.add_mem_sample(2, TEST_TIMESTAMP, 4e9).expect("ok"));
        assert!(app_c.add_mem_sample(3, TEST_TIMESTAMP, 10e9).expect("ok"));

        assert_eq!(app_a.state().total_samples_count(), 2);
        assert_eq!(app_b.state().total_samples_count(), 1);
        assert_eq!(app_c.state().total_samples_count(), 1);

        // Expected CPU histogram: the merge of each app-A container's own.
        let mut expected_cpu = AggregateState::new(&cfg, None).expect("cfg");
        for cores in [1.0, 3.0] {
            let mut own = AggregateState::new(&cfg, None).expect("cfg");
            own.add_cpu_sample(TEST_TIMESTAMP, cores, 0.1).expect("ok");
            expected_cpu.merge(&own).expect("ok");
        }
        assert!(expected_cpu.cpu_usage().equals(app_a.state().cpu_usage()));

        // Expected memory peaks: 2e9 and 4e9 at each container's window end.
        let window_end = TEST_TIMESTAMP + DAY;
        assert_eq!(app_a.container_window_end_s(0), Some(window_end));
        assert_eq!(app_a.container_window_end_s(2), Some(window_end));
        let mut expected_mem = DecayingHistogram::new(
            cfg.memory_histogram_options().expect("ok"),
            cfg.memory_histogram_decay_half_life_s,
        )
        .expect("ok");
        expected_mem.add_sample(2e9, 1.0, window_end).expect("ok");
        expected_mem.add_sample(4e9, 1.0, window_end).expect("ok");
        assert!(expected_mem.equals(app_a.state().memory_peaks()));
    }

    #[test]
    fn aggregate_container_state_is_expired() {
        let cfg = VpaRecommenderConfig::default();
        let mut cs = AggregateState::new(&cfg, None).expect("cfg");
        cs.set_for_test(Some(TEST_TIMESTAMP), 1, None);
        assert!(!cs.is_expired(TEST_TIMESTAMP + 7.0 * DAY));
        assert!(cs.is_expired(TEST_TIMESTAMP + 8.0 * DAY));

        let mut empty = AggregateState::new(&cfg, None).expect("cfg");
        empty.set_for_test(None, 0, Some(TEST_TIMESTAMP));
        assert!(!empty.is_expired(TEST_TIMESTAMP + 7.0 * DAY));
        assert!(empty.is_expired(TEST_TIMESTAMP + 8.0 * DAY));
    }

    #[test]
    fn aggregate_container_state_is_expired_with_custom_interval_count() {
        // count = 4 and the default 24 h interval: a 96 h window.
        let cfg = VpaRecommenderConfig {
            memory_aggregation_interval_count: 4,
            ..VpaRecommenderConfig::default()
        };
        let window = 4.0 * DAY;
        let mut cs = AggregateState::new(&cfg, None).expect("cfg");
        cs.set_for_test(Some(TEST_TIMESTAMP), 1, None);
        assert!(!cs.is_expired(TEST_TIMESTAMP + window - HOUR));
        assert!(cs.is_expired(TEST_TIMESTAMP + window));

        let mut empty = AggregateState::new(&cfg, None).expect("cfg");
        empty.set_for_test(None, 0, Some(TEST_TIMESTAMP));
        assert!(!empty.is_expired(TEST_TIMESTAMP + window - HOUR));
        assert!(empty.is_expired(TEST_TIMESTAMP + window));
    }

    #[test]
    fn merge_keeps_earliest_first_and_latest_last() {
        let cfg = VpaRecommenderConfig::default();
        let mut a = AggregateState::new(&cfg, None).expect("cfg");
        let mut b = AggregateState::new(&cfg, None).expect("cfg");
        a.add_cpu_sample(100.0, 1.0, 0.1).expect("ok");
        b.add_cpu_sample(50.0, 1.0, 0.1).expect("ok");
        b.add_cpu_sample(500.0, 1.0, 0.1).expect("ok");
        a.merge(&b).expect("ok");
        assert_eq!(a.first_sample_s(), Some(50.0));
        assert_eq!(a.last_sample_s(), Some(500.0));
        assert_eq!(a.total_samples_count(), 3);
    }
}

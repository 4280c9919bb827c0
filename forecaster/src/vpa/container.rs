//! Per-container state (`model/container.go`): CPU sample de-duplication
//! and the memory peak window.
//!
//! Memory: each container contributes ONE sample per aggregation interval
//! (24 h): the running peak of that interval. A sample inside the current
//! interval that beats the peak replaces it (the old peak is subtracted
//! from the aggregate, the new one added); the first sample past the
//! interval's end opens a new interval (aligned to whole intervals after
//! the first sample) and adds its value as that interval's first peak.
//! Every peak is stamped with its interval's END time, which is what the
//! decaying histogram weighs it by.
//!
//! OOM: [`ContainerState::record_oom`] turns an OOM kill into a memory
//! sample of `max(used + oom_min_bump_up, used * oom_bump_up_ratio)` where
//! `used = max(memory request at the kill, this interval's usage peak)`.
//!
//! The container does not own the aggregate: each call returns the
//! [`MemoryUpdate`] to apply to it, so the Go tests (which check the
//! histogram calls through a mock) port as checks of that value.

use super::amount::{memory_amount_from_bytes, scale_resource};
use crate::ForecastError;

/// A memory peak as the aggregate sees it: `bytes` (an integer amount)
/// stamped at `t_s` (the end of its interval).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peak {
    pub t_s: f64,
    pub bytes: i64,
}

/// What a memory sample changes in the aggregate's peak histogram.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MemoryUpdate {
    /// Invalid (negative) or out-of-order sample: nothing changes.
    Discarded,
    /// Accepted: first subtract `subtract`, then add `add` (either may be
    /// absent, e.g. a sample below the current peak changes nothing).
    Accepted {
        subtract: Option<Peak>,
        add: Option<Peak>,
    },
}

/// One container's CPU de-duplication and memory window.
#[derive(Clone, Debug, Default)]
pub struct ContainerState {
    /// Start of the latest CPU sample aggregated.
    last_cpu_sample_s: Option<f64>,
    /// Max memory usage in the current interval.
    memory_peak: i64,
    /// Max memory estimated from an OOM in the current interval.
    oom_peak: i64,
    /// End of the current interval (exclusive).
    window_end_s: Option<f64>,
    /// Start of the latest memory sample aggregated.
    last_memory_sample_s: Option<f64>,
}

impl ContainerState {
    /// A container with no samples.
    pub fn new() -> Self {
        Self::default()
    }

    /// End of the current memory interval (`WindowEnd`).
    pub fn window_end_s(&self) -> Option<f64> {
        self.window_end_s
    }

    /// `GetMaxMemoryPeak`: the larger of the usage and OOM peaks.
    pub fn max_memory_peak(&self) -> i64 {
        self.memory_peak.max(self.oom_peak)
    }

    /// `addCPUSample` guard: true (and remembered) when the usage is
    /// non-negative and the sample is strictly later than the last one.
    pub fn accept_cpu_sample(&mut self, t_s: f64, millicores: i64) -> bool {
        if millicores < 0 || self.last_cpu_sample_s.is_some_and(|l| t_s <= l) {
            return false;
        }
        self.last_cpu_sample_s = Some(t_s);
        true
    }

    /// `addMemorySample`. OOM samples are taken even when older than the
    /// last sample.
    pub fn add_memory_sample(
        &mut self,
        t_s: f64,
        usage: i64,
        is_oom: bool,
        interval_s: f64,
    ) -> MemoryUpdate {
        if usage < 0 || (!is_oom && self.last_memory_sample_s.is_some_and(|l| t_s < l)) {
            return MemoryUpdate::Discarded;
        }
        self.last_memory_sample_s = Some(t_s);
        let mut window_end = *self.window_end_s.get_or_insert(t_s);
        let mut subtract = None;
        let mut add_new_peak = false;
        if t_s < window_end {
            let old = self.max_memory_peak();
            if old != 0 && usage > old {
                subtract = Some(Peak {
                    t_s: window_end,
                    bytes: old,
                });
                add_new_peak = true;
            }
        } else {
            // Shift to the interval holding t_s (Go: Truncate + one interval).
            let shift = ((t_s - window_end) / interval_s).trunc() * interval_s + interval_s;
            window_end += shift;
            self.window_end_s = Some(window_end);
            self.memory_peak = 0;
            self.oom_peak = 0;
            add_new_peak = true;
        }
        let mut add = None;
        if add_new_peak {
            add = Some(Peak {
                t_s: window_end,
                bytes: usage,
            });
            if is_oom {
                self.oom_peak = usage;
            } else {
                self.memory_peak = usage;
            }
        }
        MemoryUpdate::Accepted { subtract, add }
    }

    /// `RecordOOM`: an OOM kill at `t_s` while the memory request was
    /// `request_bytes`. Fails when the OOM is older than the last memory
    /// sample by more than one interval.
    pub fn record_oom(
        &mut self,
        t_s: f64,
        request_bytes: i64,
        interval_s: f64,
        oom_bump_up_ratio: f64,
        oom_min_bump_up_bytes: f64,
    ) -> Result<MemoryUpdate, ForecastError> {
        if let Some(last) = self.last_memory_sample_s {
            if t_s < last - interval_s {
                return Err(ForecastError::Rejected(format!(
                    "OOM event at {t_s} s will be discarded - it is too old (last memory sample at {last} s)"
                )));
            }
        }
        // The usage peak only: the OOM peak is left out so that repeated
        // OOMs do not run the recommendation away.
        let used = request_bytes.max(self.memory_peak);
        let needed = used
            .saturating_add(memory_amount_from_bytes(oom_min_bump_up_bytes))
            .max(scale_resource(used, oom_bump_up_ratio));
        match self.add_memory_sample(t_s, needed, true, interval_s) {
            MemoryUpdate::Discarded => {
                Err(ForecastError::Rejected("adding OOM sample failed".into()))
            }
            u => Ok(u),
        }
    }
}

#[cfg(test)]
#[allow(clippy::approx_constant)] // 3.14 is the Go tests' value, not pi
mod tests {
    //! Port of `model/container_test.go`: the mock histogram expectations
    //! become expected [`MemoryUpdate`]s.
    use super::*;

    /// `testTimestamp` ("2017-04-18 17:35:05" UTC) in Unix seconds.
    const T0: f64 = 1_492_536_905.0;
    const DAY: f64 = 86_400.0;
    const HOUR: f64 = 3_600.0;
    const MB: i64 = 1024 * 1024;
    const RATIO: f64 = 1.2;
    const MIN_BUMP: f64 = 1.048576e8;

    fn add(t_s: f64, bytes: i64) -> MemoryUpdate {
        MemoryUpdate::Accepted {
            subtract: None,
            add: Some(Peak { t_s, bytes }),
        }
    }

    fn replace(t_s: f64, old: i64, new: i64) -> MemoryUpdate {
        MemoryUpdate::Accepted {
            subtract: Some(Peak { t_s, bytes: old }),
            add: Some(Peak { t_s, bytes: new }),
        }
    }

    fn mem(c: &mut ContainerState, t_s: f64, bytes: i64, interval_s: f64) -> MemoryUpdate {
        c.add_memory_sample(t_s, bytes, false, interval_s)
    }

    fn oom(
        c: &mut ContainerState,
        t_s: f64,
        req: i64,
        interval_s: f64,
    ) -> Result<MemoryUpdate, ForecastError> {
        c.record_oom(t_s, req, interval_s, RATIO, MIN_BUMP)
    }

    #[test]
    fn aggregate_container_usage_samples() {
        let mut c = ContainerState::new();
        let step = DAY / 2.0;
        // CPU: three valid samples (3140, 6280, 1570 millicores).
        assert!(c.accept_cpu_sample(T0, 3140));
        assert_eq!(mem(&mut c, T0, 5, DAY), add(T0 + DAY, 5));
        assert!(c.accept_cpu_sample(T0 + step, 6280));
        assert_eq!(mem(&mut c, T0 + step, 10, DAY), replace(T0 + DAY, 5, 10));
        assert!(c.accept_cpu_sample(T0 + 2.0 * step, 1570));
        assert_eq!(mem(&mut c, T0 + 2.0 * step, 2, DAY), add(T0 + 2.0 * DAY, 2));
        // Out of order, negative CPU, negative memory.
        assert!(!c.accept_cpu_sample(T0 + 2.0 * step, 1000));
        assert!(!c.accept_cpu_sample(T0 + 4.0 * step, -1000));
        assert_eq!(
            mem(&mut c, T0 + 4.0 * step, -1000, DAY),
            MemoryUpdate::Discarded
        );
    }

    #[test]
    fn record_oom_increased_by_bump_up() {
        let mut c = ContainerState::new();
        let u = oom(&mut c, T0, 1000 * MB, DAY).expect("recorded");
        assert_eq!(u, add(T0 + DAY, 1200 * MB));
    }

    #[test]
    fn record_oom_dont_run_away() {
        let mut c = ContainerState::new();
        assert_eq!(
            oom(&mut c, T0, 1000 * MB, DAY).expect("ok"),
            add(T0 + DAY, 1200 * MB)
        );
        // Smaller OOMs leave the OOM peak alone.
        let none = MemoryUpdate::Accepted {
            subtract: None,
            add: None,
        };
        assert_eq!(oom(&mut c, T0, 999 * MB, DAY).expect("ok"), none);
        assert_eq!(oom(&mut c, T0, 999 * MB, DAY).expect("ok"), none);
        // A larger one raises it.
        assert_eq!(
            oom(&mut c, T0, 2000 * MB, DAY).expect("ok"),
            replace(T0 + DAY, 1200 * MB, 2400 * MB)
        );
    }

    #[test]
    fn record_oom_increased_by_min() {
        let mut c = ContainerState::new();
        assert_eq!(
            oom(&mut c, T0, MB, DAY).expect("ok"),
            add(T0 + DAY, 101 * MB)
        );
    }

    #[test]
    fn record_oom_maxed_with_known_sample() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 3000 * MB, DAY), add(T0 + DAY, 3000 * MB));
        // The last usage peak beats the request, so it is bumped.
        assert_eq!(
            oom(&mut c, T0, 1000 * MB, DAY).expect("ok"),
            replace(T0 + DAY, 3000 * MB, 3600 * MB)
        );
    }

    #[test]
    fn record_oom_discards_old_sample() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 1000 * MB, DAY), add(T0 + DAY, 1000 * MB));
        assert!(oom(&mut c, T0 - 30.0 * HOUR, 1000 * MB, DAY).is_err());
    }

    #[test]
    fn record_oom_in_new_window() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 2000 * MB, DAY), add(T0 + DAY, 2000 * MB));
        assert_eq!(
            oom(&mut c, T0 + 2.0 * DAY, 1000 * MB, DAY).expect("ok"),
            add(T0 + 3.0 * DAY, 2400 * MB)
        );
    }

    /// kubernetes/autoscaler#8548: an OOM one second before a sample that
    /// opened a new interval is fresh, not stale.
    #[test]
    fn record_oom_fresh_oom_near_window_boundary_is_not_discarded() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 100 * MB, DAY), add(T0 + DAY, 100 * MB));
        let boundary = T0 + DAY;
        let window_end = T0 + 2.0 * DAY;
        assert_eq!(
            mem(&mut c, boundary, 2000 * MB, DAY),
            add(window_end, 2000 * MB)
        );
        assert_eq!(
            oom(&mut c, boundary - 1.0, 1000 * MB, DAY).expect("fresh"),
            replace(window_end, 2000 * MB, 2400 * MB)
        );
    }

    #[test]
    fn memory_samples_with_custom_aggregation_interval() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 5, HOUR), add(T0 + HOUR, 5));
        assert_eq!(
            mem(&mut c, T0 + 2.0 * HOUR, 10, HOUR),
            add(T0 + 3.0 * HOUR, 10)
        );
    }

    #[test]
    fn memory_peak_update_within_custom_interval() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 5, HOUR), add(T0 + HOUR, 5));
        assert_eq!(
            mem(&mut c, T0 + 1800.0, 10, HOUR),
            replace(T0 + HOUR, 5, 10)
        );
    }

    #[test]
    fn record_oom_discards_old_sample_with_custom_interval() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 1000 * MB, HOUR), add(T0 + HOUR, 1000 * MB));
        assert!(oom(&mut c, T0 - 2.0 * HOUR, 1000 * MB, HOUR).is_err());
    }

    #[test]
    fn record_oom_in_new_window_with_custom_interval() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 2000 * MB, HOUR), add(T0 + HOUR, 2000 * MB));
        assert_eq!(
            oom(&mut c, T0 + 2.0 * HOUR, 1000 * MB, HOUR).expect("ok"),
            add(T0 + 3.0 * HOUR, 2400 * MB)
        );
    }

    /// The interval count (2 here) does not enter the staleness check.
    #[test]
    fn record_oom_discards_old_sample_with_custom_interval_count() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 1000 * MB, DAY), add(T0 + DAY, 1000 * MB));
        assert!(oom(&mut c, T0 - 3.0 * DAY, 1000 * MB, DAY).is_err());
    }

    #[test]
    fn memory_samples_with_custom_aggregation_interval_count() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 5, DAY), add(T0 + DAY, 5));
        assert_eq!(
            mem(&mut c, T0 + 2.0 * DAY, 10, DAY),
            add(T0 + 3.0 * DAY, 10)
        );
    }

    #[test]
    fn out_of_order_memory_is_discarded_but_oom_is_not() {
        let mut c = ContainerState::new();
        assert_eq!(mem(&mut c, T0, 5, DAY), add(T0 + DAY, 5));
        assert_eq!(mem(&mut c, T0 - 1.0, 50, DAY), MemoryUpdate::Discarded);
        assert!(oom(&mut c, T0 - 1.0, 50, DAY).is_ok());
    }
}

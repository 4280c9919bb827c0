//! [`VpaForecaster`]: the faithful VPA behind the crate's [`Forecaster`]
//! trait, for one resource of one component.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::config::{VpaRecommenderConfig, VpaResource};
use super::workload::{Bounds, VpaAggregate, VpaRecommendation};
use crate::{fallback_predictive, ForecastError, Forecaster, Predictive};

/// A workload's VPA state shared by the forecasters of its components.
pub type SharedVpa = Arc<Mutex<VpaAggregate>>;

/// One component's view of a (possibly shared) [`VpaAggregate`].
///
/// - Time: the `i`-th observed sample (from 0) is at
///   `start_s + i * sample_interval_s`.
/// - Units: an observed value `v` is `v * unit` bytes (memory) or cores
///   (CPU) for the VPA, and the forecast is divided back by `unit`. The
///   VPA's absolute constants (histograms from 10 MB / 0.01 core with 5%
///   growth above ~200 MB / 0.2 core, the 250 MiB / 25 millicore pod
///   minimum, the 100 MiB OOM bump) only mean what they mean in Kubernetes
///   when `unit` turns samples into real bytes and cores.
/// - CPU samples are weighted as configured; with
///   [`super::CpuSampleWeight::Request`] the request is taken as 1 observed
///   unit (the simulator feeds usage / request).
/// - The VPA's confidence (which widens the bounds of a young workload)
///   counts CPU samples. A memory forecaster that owns its aggregate
///   ([`VpaForecaster::new`]) therefore also records a 0-core CPU sample
///   at each step, as the real VPA receives CPU and memory samples together
///   (it touches only the CPU histogram, never read for memory). When
///   attached to a shared aggregate, the CPU forecaster of the same
///   component provides them (or use [`VpaForecaster::with_cpu_clock`]).
/// - The VPA's metrics arrive once a minute and its confidence counts them
///   as such (1440 per day); fed at `sample_interval_s` = 300 s, the count
///   grows 5x slower, so the bounds (not the target) stay wider for longer.
/// - `forecast(h)`: the horizon is ignored (the VPA recommends one request
///   for the workload, not a horizon). `mean` is the VPA target; `std` is
///   `upper bound - target`, so `upper(1.0)` is the VPA upper bound (which
///   is huge, up to the 1e14 cap, while the history is short). The lower
///   band is symmetric and is NOT the VPA lower bound: read
///   [`VpaForecaster::recommendation`] for all three. Before the first
///   sample it answers the crate's fallback (0 with a tiny std).
/// - `observe_oom(alloc)`: records an OOM kill at the allocation `alloc`
///   (observed units) at the time of the latest sample (memory only).
#[derive(Debug)]
pub struct VpaForecaster {
    shared: SharedVpa,
    container: u64,
    resource: VpaResource,
    sample_interval_s: f64,
    unit: f64,
    start_s: f64,
    cpu_clock: bool,
    observed: usize,
}

fn lock(shared: &SharedVpa) -> MutexGuard<'_, VpaAggregate> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

impl VpaForecaster {
    /// A forecaster with its own aggregate (one container, time from 0).
    pub fn new(cfg: VpaRecommenderConfig) -> Result<Self, ForecastError> {
        let resource = cfg.resource;
        let shared = Self::shared(cfg)?;
        let mut f = Self::attach(shared, 0, 0.0)?;
        f.cpu_clock = resource == VpaResource::Mem;
        Ok(f)
    }

    /// A workload aggregate to [`attach`](Self::attach) components to.
    pub fn shared(cfg: VpaRecommenderConfig) -> Result<SharedVpa, ForecastError> {
        Ok(Arc::new(Mutex::new(VpaAggregate::new(cfg)?)))
    }

    /// Component `container` of a shared workload aggregate, whose first
    /// sample is at `start_s`. Resource, interval and unit come from the
    /// aggregate's config.
    pub fn attach(shared: SharedVpa, container: u64, start_s: f64) -> Result<Self, ForecastError> {
        crate::finite(start_s)?;
        let (resource, sample_interval_s, unit) = {
            let g = lock(&shared);
            let c = g.config();
            (c.resource, c.sample_interval_s, c.unit)
        };
        Ok(Self {
            shared,
            container,
            resource,
            sample_interval_s,
            unit,
            start_s,
            cpu_clock: false,
            observed: 0,
        })
    }

    /// Also record a 0-core CPU sample with each memory sample (see the
    /// type docs); no effect on a CPU forecaster.
    pub fn with_cpu_clock(mut self, on: bool) -> Self {
        self.cpu_clock = on;
        self
    }

    /// Use `unit` VPA units (bytes or cores) per observed unit for this
    /// component only, e.g. its request in bytes when it observes usage /
    /// request: siblings with different requests then feed the shared
    /// aggregate in the same real units.
    pub fn with_unit(mut self, unit: f64) -> Result<Self, ForecastError> {
        if !(unit.is_finite() && unit > 0.0) {
            return Err(ForecastError::InvalidConfig(format!(
                "vpa.unit = {unit} must be finite and > 0"
            )));
        }
        self.unit = unit;
        Ok(self)
    }

    /// The resource this forecaster feeds.
    pub fn resource(&self) -> VpaResource {
        self.resource
    }

    /// The workload's current recommendation (VPA units: cores, bytes).
    pub fn recommendation(&self) -> VpaRecommendation {
        lock(&self.shared).recommend()
    }

    fn bounds(&self) -> Bounds {
        let r = self.recommendation();
        match self.resource {
            VpaResource::Cpu => r.cpu,
            VpaResource::Mem => r.mem,
        }
    }

    fn time_of(&self, i: usize) -> f64 {
        self.start_s + i as f64 * self.sample_interval_s
    }
}

impl Forecaster for VpaForecaster {
    fn name(&self) -> &'static str {
        "vpa"
    }

    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        crate::finite(value)?;
        let t = self.time_of(self.observed);
        let v = (value * self.unit).clamp(-f64::MAX, f64::MAX);
        {
            let mut g = lock(&self.shared);
            // A negative sample is discarded by the VPA, as in Go.
            match self.resource {
                VpaResource::Cpu => {
                    g.add_cpu_sample(self.container, t, v, self.unit)?;
                }
                VpaResource::Mem => {
                    g.add_mem_sample(self.container, t, v)?;
                    if self.cpu_clock {
                        g.add_cpu_sample(self.container, t, 0.0, self.unit)?;
                    }
                }
            }
        }
        self.observed += 1;
        Ok(())
    }

    fn observe_oom(&mut self, alloc: f64) -> Result<(), ForecastError> {
        crate::finite(alloc)?;
        if self.resource != VpaResource::Mem {
            return Ok(());
        }
        let t = self.time_of(self.observed.saturating_sub(1));
        lock(&self.shared).record_oom(self.container, t, alloc * self.unit)
    }

    fn forecast(&self, horizon: usize) -> Predictive {
        if self.observed == 0 {
            return fallback_predictive(std::iter::empty(), horizon);
        }
        let b = self.bounds();
        let mean = b.target / self.unit;
        let std = ((b.upper - b.target) / self.unit).max(0.0);
        Predictive::gaussian(mean, std)
    }

    fn observed(&self) -> usize {
        self.observed
    }

    /// The aggregate holds bytes and cores: only this component's unit
    /// changes (`unit / factor`), so its next samples and forecasts are
    /// read in the new one.
    fn rescale(&mut self, factor: f64) -> bool {
        let unit = self.unit / factor;
        if factor.is_finite() && factor > 0.0 && unit.is_finite() && unit > 0.0 {
            self.unit = unit;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

    #[test]
    fn memory_forecast_is_the_target_and_upper_is_the_upper_bound() {
        let cfg = VpaRecommenderConfig {
            unit: GIB,
            ..VpaRecommenderConfig::default()
        };
        let mut f = VpaForecaster::new(cfg).expect("cfg");
        let p0 = f.forecast(1);
        assert!(p0.mean.is_finite() && p0.std.is_finite());
        // Three days at 5-minute steps, 1.0 GiB with a daily 1.5 GiB spike.
        for i in 0..(3 * 288) {
            let v = if i % 288 == 7 { 1.5 } else { 1.0 };
            f.observe(v).expect("finite");
        }
        let r = f.recommendation();
        let p = f.forecast(12);
        assert_eq!(p.mean, r.mem.target / GIB);
        assert!((p.upper(1.0) - r.mem.upper / GIB).abs() < 1e-9);
        assert!(p.mean >= 1.5 * 1.15 && p.mean <= 1.5 * 1.15 * 1.08, "{p:?}");
        // The CPU clock gave the memory bounds a finite confidence.
        assert!(r.mem.upper < 10.0 * r.mem.target, "{r:?}");
        assert_eq!(f.observed(), 3 * 288);
        assert!(f.observe(f64::NAN).is_err());
        assert_eq!(f.observed(), 3 * 288);
    }

    /// A component's request halves: its samples so far would read twice
    /// as large in the new unit, and the VPA, which holds bytes, forecasts
    /// twice as much in it: the same bytes.
    #[test]
    fn a_rescale_keeps_the_forecast_in_bytes() {
        let cfg = VpaRecommenderConfig {
            unit: GIB,
            ..VpaRecommenderConfig::default()
        };
        let mut f = VpaForecaster::new(cfg)
            .expect("cfg")
            .with_unit(2.0 * GIB)
            .expect("unit");
        for _ in 0..50 {
            f.observe(0.25).expect("finite");
        }
        let before = f.forecast(1).mean * 2.0 * GIB;
        assert!(f.rescale(2.0));
        let after = f.forecast(1).mean * GIB;
        assert!((after - before).abs() < 1.0, "{before} {after}");
        f.observe(0.5).expect("finite");
        assert!((f.forecast(1).mean * GIB - before).abs() < 1.0);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(!f.rescale(bad), "{bad}");
        }
        assert!((f.forecast(1).mean * GIB - before).abs() < 1.0);
    }

    #[test]
    fn oom_raises_the_forecast() {
        let cfg = VpaRecommenderConfig {
            unit: GIB,
            ..VpaRecommenderConfig::default()
        };
        let mut f = VpaForecaster::new(cfg).expect("cfg");
        for _ in 0..10 {
            f.observe(1.0).expect("ok");
        }
        let before = f.forecast(1).mean;
        f.observe_oom(1.0).expect("fresh");
        let after = f.forecast(1).mean;
        assert!(after >= 1.2 * 1.15 && after > before, "{before} -> {after}");
    }

    #[test]
    fn components_share_a_workload_state() {
        let cfg = VpaRecommenderConfig {
            unit: GIB,
            ..VpaRecommenderConfig::default()
        };
        let shared = VpaForecaster::shared(cfg).expect("cfg");
        let mut a = VpaForecaster::attach(shared.clone(), 1, 0.0).expect("ok");
        let mut b = VpaForecaster::attach(shared.clone(), 2, 3600.0)
            .expect("ok")
            .with_cpu_clock(true);
        a.observe(1.0).expect("ok");
        b.observe(3.0).expect("ok");
        // Both see the same state: the P90 of {1, 3} GiB peaks is 3 GiB.
        assert_eq!(a.forecast(1), b.forecast(1));
        assert!(a.forecast(1).mean >= 3.0 * 1.15);
        assert_eq!(lock(&shared).containers(), 2);
        // Per-component units: 0.5 of a 4 GiB request is 2 GiB for the VPA.
        let mut c = VpaForecaster::attach(shared.clone(), 3, 0.0)
            .expect("ok")
            .with_unit(4.0 * GIB)
            .expect("valid unit");
        c.observe(0.5).expect("ok");
        let r = c.recommendation();
        assert!(r.mem.target >= 3.0 * GIB * 1.15, "{r:?}");
        assert!((c.forecast(1).mean * 4.0 * GIB - r.mem.target).abs() < 1.0);
        assert!(VpaForecaster::attach(shared.clone(), 4, 0.0)
            .expect("ok")
            .with_unit(0.0)
            .is_err());
        assert!(VpaForecaster::attach(shared, 3, f64::NAN).is_err());
    }

    #[test]
    fn cpu_forecaster_uses_the_cpu_histogram() {
        let cfg = VpaRecommenderConfig {
            resource: VpaResource::Cpu,
            ..VpaRecommenderConfig::default()
        };
        let mut f = VpaForecaster::new(cfg).expect("cfg");
        for i in 0..100 {
            f.observe(if i % 20 == 0 { 4.0 } else { 2.0 }).expect("ok");
        }
        let p = f.forecast(1);
        // 5% of samples at 4 cores: P90 is the 2-core bucket end.
        assert!(p.mean >= 2.0 * 1.15 && p.mean <= 2.0 * 1.15 * 1.08, "{p:?}");
        f.observe_oom(1.0).expect("ignored for CPU");
        assert_eq!(f.forecast(1), p);
    }
}

//! Per-component model management: normalisation, history, warm-up and
//! horizon.
//!
//! Every component has one model per resource ([`ComponentModels`]). Models
//! see usage **relative to the component's request** (`usage / request`),
//! whatever the caller: the agent, the simulator and a replayed recording
//! feed the same numbers, a model's parameters mean the same thing for a
//! 64 MiB and a 64 GiB container, and a forecast from a sibling or a
//! predecessor can be carried over at another request. Forecasts are
//! scaled back to absolute units (cores, bytes) with the request in force.
//!
//! A component's own model is used once it has seen
//! `[shaper] min_history_samples` samples of both resources; before that
//! [`ComponentModels::forecast`] returns `None` and the shaper keeps the
//! component at its request. The horizon (samples whose peak is
//! forecast) is [`horizon_samples`].

use crate::config::ShaperConfig;
use crate::model::{Forecasts, Predictive, Resource, Resources};
use forecaster::{ForecastError, Forecaster};

/// Usage relative to the request (0 when the request is not positive).
pub fn normalise(value: f64, request: f64) -> f64 {
    if request > 0.0 && request.is_finite() {
        value / request
    } else {
        0.0
    }
}

/// A forecast of relative usage scaled back to absolute units.
pub fn denormalise(p: Predictive, request: f64) -> Predictive {
    let by = if request > 0.0 && request.is_finite() {
        request
    } else {
        0.0
    };
    Predictive {
        mean: p.mean * by,
        std: p.std * by,
        calibration: p.calibration,
    }
}

/// The default horizon covers at least this much time (the agent's 10 s
/// rounds forecast the peak of the next minute).
pub const DEFAULT_MIN_HORIZON_S: f64 = 60.0;

/// The forecast horizon in samples: `[shaper] horizon_samples` when set,
/// else enough samples to cover the time until the next round and at least
/// [`DEFAULT_MIN_HORIZON_S`]: `ceil(max(round_interval_s, 60) /
/// sample_interval_s)`, at least 1.
pub fn horizon_samples(cfg: &ShaperConfig, round_interval_s: f64, sample_interval_s: f64) -> usize {
    cfg.horizon_samples.unwrap_or_else(|| {
        let n = round_interval_s.max(DEFAULT_MIN_HORIZON_S) / sample_interval_s;
        if n.is_finite() && n > 0.0 {
            n.ceil()
                .clamp(1.0, crate::config::MAX_HORIZON_SAMPLES as f64) as usize
        } else {
            1
        }
    })
}

/// One component's CPU and memory models.
pub struct ComponentModels {
    cpu: Box<dyn Forecaster>,
    mem: Box<dyn Forecaster>,
    /// Forecasts from the first sample on (the simulator's oracle, which
    /// knows the future).
    always_warm: bool,
}

impl std::fmt::Debug for ComponentModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentModels")
            .field("model", &self.cpu.name())
            .field("cpu_observed", &self.cpu.observed())
            .field("mem_observed", &self.mem.observed())
            .finish()
    }
}

impl ComponentModels {
    /// Two fresh models from `build`, called once per resource with the
    /// absolute units one observed unit stands for (the `request` in force
    /// now, as the models see usage / request; 1 when it is not positive).
    pub fn build(
        request: Resources,
        build: impl Fn(Resource, f64) -> Result<Box<dyn Forecaster>, ForecastError>,
    ) -> Result<Self, ForecastError> {
        let unit = |r: f64| if r > 0.0 && r.is_finite() { r } else { 1.0 };
        Ok(Self {
            cpu: build(Resource::Cpu, unit(request.cpu_cores))?,
            mem: build(Resource::Mem, unit(request.mem_bytes))?,
            always_warm: false,
        })
    }

    /// Models that forecast from the start (the simulator's oracle).
    pub fn always_warm(cpu: Box<dyn Forecaster>, mem: Box<dyn Forecaster>) -> Self {
        Self {
            cpu,
            mem,
            always_warm: true,
        }
    }

    /// Feeds one sample in absolute units; a missing CPU value (no rate
    /// yet: the first sample of a cumulative counter) feeds memory only.
    /// A value a model rejects (non-finite) leaves it unchanged.
    pub fn observe(&mut self, cpu_cores: Option<f64>, mem_bytes: f64, request: Resources) {
        if let Some(c) = cpu_cores {
            if let Err(e) = self.cpu.observe(normalise(c, request.cpu_cores)) {
                tracing::debug!(error = %e, "cpu sample rejected");
            }
        }
        if let Err(e) = self.mem.observe(normalise(mem_bytes, request.mem_bytes)) {
            tracing::debug!(error = %e, "memory sample rejected");
        }
    }

    /// Samples seen by the model that has seen fewer.
    pub fn observed(&self) -> usize {
        self.cpu.observed().min(self.mem.observed())
    }

    /// True once the models' own forecasts are used.
    pub fn ready(&self, cfg: &ShaperConfig) -> bool {
        self.always_warm || self.observed() >= cfg.min_history_samples
    }

    /// The forecast of the peak over the next `horizon` samples in
    /// absolute units, or `None` before the models are ready or when a
    /// model answers with a non-finite value.
    pub fn forecast(
        &self,
        horizon: usize,
        request: Resources,
        cfg: &ShaperConfig,
    ) -> Option<Forecasts> {
        if !self.ready(cfg) {
            return None;
        }
        let f = Forecasts {
            cpu: denormalise(self.cpu.forecast(horizon), request.cpu_cores),
            mem: denormalise(self.mem.forecast(horizon), request.mem_bytes),
        };
        let finite = |p: &Predictive| p.mean.is_finite() && p.std.is_finite();
        (finite(&f.cpu) && finite(&f.mem)).then_some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use forecaster::baselines::LastValue;

    fn last(_: Resource, _: f64) -> Result<Box<dyn Forecaster>, ForecastError> {
        Ok(Box::new(LastValue::default()))
    }

    #[test]
    fn normalised_in_absolute_out() {
        let cfg = ShaperConfig {
            min_history_samples: 2,
            ..ShaperConfig::default()
        };
        let req = Resources::new(2.0, 1e9);
        let mut m = ComponentModels::build(Resources::new(1.0, 1.0), last).expect("models");
        m.observe(None, 5e8, req);
        assert!(m.forecast(1, req, &cfg).is_none(), "cpu has no sample yet");
        m.observe(Some(1.0), 6e8, req);
        assert!(m.forecast(1, req, &cfg).is_none(), "one cpu sample < 2");
        m.observe(Some(1.5), 7e8, req);
        let f = m.forecast(1, req, &cfg).expect("ready");
        assert!((f.cpu.mean - 1.5).abs() < 1e-9);
        assert!((f.mem.mean - 7e8).abs() < 1.0);
        // the same relative history at another request scales with it
        let f2 = m
            .forecast(1, Resources::new(4.0, 2e9), &cfg)
            .expect("ready");
        assert!((f2.mem.mean - 1.4e9).abs() < 1.0);
    }

    #[test]
    fn horizon_defaults_to_one_round_and_a_minute() {
        let cfg = ShaperConfig::default();
        assert_eq!(horizon_samples(&cfg, 300.0, 300.0), 1);
        assert_eq!(horizon_samples(&cfg, 300.0, 60.0), 5);
        assert_eq!(horizon_samples(&cfg, 10.0, 10.0), 6);
        assert_eq!(horizon_samples(&cfg, 10.0, f64::INFINITY), 1);
        let cfg = ShaperConfig {
            horizon_samples: Some(6),
            ..ShaperConfig::default()
        };
        assert_eq!(horizon_samples(&cfg, 10.0, 10.0), 6);
    }
}

//! Online forecasters with calibrated predictive uncertainty.
//!
//! One model per container and per resource, fed one sample per interval.
//! Every model implements the object-safe [`Forecaster`] trait and answers
//! with a [`Predictive`] (mean, std, upper band at level k).
//!
//! [`vpa`] is a faithful port of the Kubernetes VPA recommender (model
//! `vpa`); [`baselines::Vpa`] is the older simplified stand-in
//! (`vpa-simple`).
//!
//! # Example
//!
//! ```
//! use forecaster::{Forecaster, ModelConfig};
//!
//! let cfg: ModelConfig = toml::from_str("kind = \"peak\"\ncalibrated = false").expect("config");
//! let mut model = cfg.build().expect("model");
//! for v in [1.0, 3.0, 2.0, 2.5] {
//!     model.observe(v).expect("finite sample");
//! }
//! let f = model.forecast(1);
//! assert!(f.mean >= 2.5 && f.upper(3.0) >= f.mean);
//! ```

pub use tailor_core::{Calibration, ConfigError, ConfigErrors, Predictive};

pub use baselines::{LastValue, PeakConfig, Vpa, VpaConfig, WindowPeak};
pub use calibration::{Calibrated, CalibrationConfig};
pub use config::{ModelConfig, ModelKind};
pub use gp::{Gp, GpConfig, KernelKind, Lengthscales, PriorMean, Standardise};
pub use oracle::Oracle;
pub use vpa::{VpaAggregate, VpaForecaster, VpaRecommendation, VpaRecommenderConfig};

/// Errors of this crate.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ForecastError {
    /// A sample was NaN or infinite; the model state is unchanged.
    #[error("sample {value} is not a finite number")]
    NonFinite { value: f64 },
    /// A value given by name (e.g. a model kind) is unknown.
    #[error("invalid forecaster config: {0}")]
    InvalidConfig(String),
    /// An event the model refuses (e.g. an OOM kill older than the VPA's
    /// memory interval); the model state is unchanged.
    #[error("rejected: {0}")]
    Rejected(String),
    /// Configuration values are out of range (every one, with key paths).
    #[error("invalid forecaster config: {0}")]
    Config(#[from] ConfigErrors),
}

/// `value`, or [`ForecastError::NonFinite`] when it is NaN or infinite: the
/// check every `observe` makes before touching its model.
pub(crate) fn finite(value: f64) -> Result<f64, ForecastError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(ForecastError::NonFinite { value })
    }
}

/// An online forecaster: observe one sample at a time, forecast the peak of
/// the next `horizon` samples as a predictive distribution.
///
/// Object safe: the simulator and the agent hold `Box<dyn Forecaster>`.
pub trait Forecaster: Send {
    /// Short model name (`"arima"`, `"gp"`, `"last"`, ...).
    fn name(&self) -> &'static str;

    /// Feeds the next sample. Non-finite samples are rejected with
    /// [`ForecastError::NonFinite`] and leave the model unchanged. Models
    /// refit here, so `forecast` is cheap.
    fn observe(&mut self, value: f64) -> Result<(), ForecastError>;

    /// Predictive of the maximum of the next `horizon` samples (`horizon`
    /// of 0 is treated as 1). With too little history a model returns a
    /// sane fallback (e.g. last value with a wide std), never panics.
    fn forecast(&self, horizon: usize) -> Predictive;

    /// Number of samples observed so far.
    fn observed(&self) -> usize;

    /// The component was OOM-killed at allocation `alloc` (same units as
    /// the samples). Models that do not react to OOM kills ignore it (the
    /// default); the faithful VPA ([`vpa::VpaForecaster`]) bumps its memory
    /// peak. A non-finite `alloc` is rejected by models that use it.
    fn observe_oom(&mut self, alloc: f64) -> Result<(), ForecastError> {
        let _ = alloc;
        Ok(())
    }

    /// The unit of the samples changed: a value observed so far as `v`
    /// would now be `factor * v` (a component observed relative to its
    /// request, whose request changed in place). A model whose state is
    /// kept in absolute units follows in place and returns true (the
    /// faithful VPA, as the Kubernetes VPA keeps its state through a
    /// resize); the others return false (the default) and are unchanged:
    /// the caller rebuilds them from the rescaled history.
    fn rescale(&mut self, factor: f64) -> bool {
        let _ = factor;
        false
    }
}

/// Boxed models are models too (the simulator holds `Box<dyn Forecaster>`
/// and may wrap it in [`Calibrated`]).
impl<F: Forecaster + ?Sized> Forecaster for Box<F> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        (**self).observe(value)
    }
    fn forecast(&self, horizon: usize) -> Predictive {
        (**self).forecast(horizon)
    }
    fn observed(&self) -> usize {
        (**self).observed()
    }
    fn observe_oom(&mut self, alloc: f64) -> Result<(), ForecastError> {
        (**self).observe_oom(alloc)
    }
    fn rescale(&mut self, factor: f64) -> bool {
        (**self).rescale(factor)
    }
}

pub mod arima;
pub mod baselines;
pub mod calibration;
pub mod config;
pub mod eval;
pub mod gp;
pub mod oracle;
pub mod vpa;

/// Sample standard deviation of the first differences of `values` (0 with
/// fewer than 3 values or when not finite).
pub fn diff_std(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut prev: Option<f64> = None;
    let (mut n, mut sum, mut sumsq) = (0usize, 0.0f64, 0.0f64);
    for v in values {
        if let Some(p) = prev {
            let d = v - p;
            n += 1;
            sum += d;
            sumsq += d * d;
        }
        prev = Some(v);
    }
    if n < 2 {
        return 0.0;
    }
    let mean = sum / n as f64;
    let var = (sumsq - n as f64 * mean * mean) / (n - 1) as f64;
    if var.is_finite() && var > 0.0 {
        var.sqrt()
    } else {
        0.0
    }
}

/// The fallback every model answers with when it has too little history:
/// last value as the mean (0 when empty), std = the std of the first
/// differences times `sqrt(horizon)`, never below 10% of the last value's
/// magnitude (a deliberately wide band) nor below 1e-9.
pub fn fallback_predictive(
    values: impl Iterator<Item = f64> + Clone,
    horizon: usize,
) -> Predictive {
    let last = values.clone().last().unwrap_or(0.0);
    let last = if last.is_finite() { last } else { 0.0 };
    let sd = diff_std(values) * (horizon.max(1) as f64).sqrt();
    let std = sd.max(0.1 * last.abs()).max(1e-9);
    Predictive::gaussian(last, std)
}

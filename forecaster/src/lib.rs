//! Online forecasters with calibrated predictive uncertainty.
//!
//! One model per container and per resource, fed one sample per interval.
//! Every model implements the object-safe [`Forecaster`] trait and answers
//! with a [`Predictive`] (mean, std, upper band at level k).

pub use tailor_core::{Calibration, Predictive};



/// Errors of this crate.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ForecastError {
    /// A sample was NaN or infinite; the model state is unchanged.
    #[error("sample {value} is not a finite number")]
    NonFinite { value: f64 },
    /// A configuration value is out of range.
    #[error("invalid forecaster config: {0}")]
    InvalidConfig(String),
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
}

pub mod arima;
pub mod baselines;
pub mod calibration;
pub mod config;
pub mod gp;

//! Online auto-ARIMA (thesis 2.2 / 4.2.1) with statsforecast-compatible
//! offline fitting.
//!
//! * [`auto_arima`]: offline order selection on a series (KPSS for d,
//!   Hyndman-Khandakar stepwise search over (p, q) and the constant, AICc),
//!   each candidate fitted by CSS then exact Gaussian ML via a Kalman filter.
//! * [`ArimaFit`]: one fitted model with `forecast(h) -> Vec<(mean, std)>`.
//! * [`AutoArima`]: the online [`crate::Forecaster`] over a sliding window,
//!   warm-started refits and periodic / error-triggered order searches.
//! * [`ArimaConfig`]: settings with documented defaults.

// `!(x > 0.0)` style comparisons are deliberate: they also reject NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod arlike;
mod auto;
mod config;
mod fit;
mod kalman;
mod kpss;
mod online;
mod optim;
mod scipy_bfgs;

pub use auto::auto_arima;
pub use config::{ArimaConfig, InformationCriterion, Optimizer};
pub use fit::{arima_log_likelihood, ArimaFit};
pub use kalman::psi_weights;
pub use kpss::{kpss_pvalue, kpss_stat, ndiffs};
pub use online::AutoArima;

/// Errors of the ARIMA module.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArimaError {
    /// The series is too short to fit.
    #[error("series has {n} samples, need at least {min}")]
    TooShort { n: usize, min: usize },
    /// A sample is NaN or infinite.
    #[error("sample at index {index} is not a finite number")]
    NonFinite { index: usize },
    /// One model could not be fitted.
    #[error("ARIMA fit failed: {0}")]
    FitFailed(String),
    /// No candidate order could be fitted.
    #[error("no suitable ARIMA model found")]
    NoSuitableModel,
}

//! Types shared by every tailor crate.
//!
//! * [`Resources`]: a CPU + memory pair with units in the field names.
//! * [`Class`]: core or elastic component (thesis chapter 3).
//! * [`Predictive`]: a forecast as a predictive distribution with a mean, a
//!   standard deviation and an upper band at level `k` (`upper(k)`), which a
//!   calibrated forecaster may widen beyond the Gaussian `mean + k * std`.
//! * [`Clock`]: time as an input, so the simulator can drive it.
//! * [`ConfigError`] / [`ConfigErrors`]: the configuration-error type every
//!   crate's `validate()` returns (dotted key paths, all errors at once),
//!   and the interval range the agent and the simulator share
//!   ([`MIN_INTERVAL_S`], [`MAX_INTERVAL_S`]).
//!
//! This crate does no I/O and depends on nothing of ours.
//!
//! # Example
//!
//! ```
//! use tailor_core::{Predictive, Resources};
//!
//! let used = Resources::new(0.5, 256.0 * 1048576.0);
//! let limit = Resources::new(1.0, 512.0 * 1048576.0);
//! assert!(used.fits_in(&limit));
//! // A Gaussian forecast: the upper band at level 3 is mean + 3 std.
//! let f = Predictive::gaussian(300.0, 10.0);
//! assert_eq!(f.upper(3.0), 330.0);
//! ```

mod config_error;
mod hash;

pub use config_error::{
    join_key, short_num, ConfigError, ConfigErrors, MAX_INTERVAL_S, MIN_INTERVAL_S,
};
pub use hash::fnv1a64;

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// CPU and memory amounts. CPU in cores (1.0 = one core), memory in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    pub cpu_cores: f64,
    pub mem_bytes: f64,
}

impl Resources {
    pub const ZERO: Resources = Resources {
        cpu_cores: 0.0,
        mem_bytes: 0.0,
    };

    pub const fn new(cpu_cores: f64, mem_bytes: f64) -> Self {
        Self {
            cpu_cores,
            mem_bytes,
        }
    }

    /// The amount of one resource.
    pub fn get(&self, r: Resource) -> f64 {
        match r {
            Resource::Cpu => self.cpu_cores,
            Resource::Mem => self.mem_bytes,
        }
    }

    /// Mutable access to one resource.
    pub fn get_mut(&mut self, r: Resource) -> &mut f64 {
        match r {
            Resource::Cpu => &mut self.cpu_cores,
            Resource::Mem => &mut self.mem_bytes,
        }
    }

    /// Builds a pair by evaluating `f` for each resource.
    pub fn from_fn(mut f: impl FnMut(Resource) -> f64) -> Self {
        Self {
            cpu_cores: f(Resource::Cpu),
            mem_bytes: f(Resource::Mem),
        }
    }

    /// Component-wise `self + other`.
    pub fn add(&self, other: &Resources) -> Resources {
        Resources::new(
            self.cpu_cores + other.cpu_cores,
            self.mem_bytes + other.mem_bytes,
        )
    }

    /// Component-wise `self - other`.
    pub fn sub(&self, other: &Resources) -> Resources {
        Resources::new(
            self.cpu_cores - other.cpu_cores,
            self.mem_bytes - other.mem_bytes,
        )
    }

    /// True when both amounts are `<= other`'s.
    pub fn fits_in(&self, other: &Resources) -> bool {
        self.cpu_cores <= other.cpu_cores && self.mem_bytes <= other.mem_bytes
    }

    /// True when both amounts are finite.
    pub fn is_finite(&self) -> bool {
        self.cpu_cores.is_finite() && self.mem_bytes.is_finite()
    }
}

/// The two resources tailor shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    Cpu,
    Mem,
}

impl Resource {
    pub const ALL: [Resource; 2] = [Resource::Cpu, Resource::Mem];

    pub fn as_str(&self) -> &'static str {
        match self {
            Resource::Cpu => "cpu",
            Resource::Mem => "mem",
        }
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Component class (thesis chapter 3): an application needs all of its core
/// components to make progress; elastic components only speed it up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    #[default]
    Core,
    Elastic,
}

impl Class {
    pub fn as_str(&self) -> &'static str {
        match self {
            Class::Core => "core",
            Class::Elastic => "elastic",
        }
    }
}

impl std::str::FromStr for Class {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "core" => Ok(Class::Core),
            "elastic" => Ok(Class::Elastic),
            other => Err(format!(
                "unknown component class {other:?} (expected \"core\" or \"elastic\")"
            )),
        }
    }
}

/// Levels at which a [`Calibration`] stores band multipliers: k = 0, 0.25, ..., 4.
pub const CALIBRATION_LEVELS: usize = 17;
/// Step between two calibration levels.
pub const CALIBRATION_STEP: f64 = 0.25;

/// Calibrated band multipliers: the band at level `k` is `std * upper_mult(k)`
/// above the mean and `std * lower_mult(k)` below it, where the Gaussian
/// would use `k` for both. Stored at `k = 0, 0.25, ..., 4` and interpolated
/// linearly (extrapolated linearly past 4).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub upper: [f32; CALIBRATION_LEVELS],
    pub lower: [f32; CALIBRATION_LEVELS],
}

impl Calibration {
    /// The Gaussian multipliers (`k` on both sides).
    pub fn gaussian() -> Self {
        let mut upper = [0.0f32; CALIBRATION_LEVELS];
        for (i, u) in upper.iter_mut().enumerate() {
            *u = (i as f64 * CALIBRATION_STEP) as f32;
        }
        Self {
            upper,
            lower: upper,
        }
    }

    fn interp(table: &[f32; CALIBRATION_LEVELS], k: f64) -> f64 {
        if k.is_nan() || k <= 0.0 {
            return f64::from(table[0]);
        }
        let pos = k.min(1e6) / CALIBRATION_STEP;
        let last = CALIBRATION_LEVELS - 1;
        let i = (pos.floor() as usize).min(last - 1);
        let frac = pos - i as f64;
        let a = f64::from(table[i]);
        let b = f64::from(table[i + 1]);
        a + (b - a) * frac
    }

    /// Multiplier of `std` for the upper band at level `k` (`k >= 0`).
    pub fn upper_mult(&self, k: f64) -> f64 {
        Self::interp(&self.upper, k)
    }

    /// Multiplier of `std` for the lower band at level `k` (`k >= 0`).
    pub fn lower_mult(&self, k: f64) -> f64 {
        Self::interp(&self.lower, k)
    }
}

/// A forecast as a predictive distribution.
///
/// `mean` and `std` are the model's; `calibration`, when present, replaces the
/// Gaussian `k * std` bands by learned ones. The shaper's dynamic buffer
/// term is `upper(K2) - mean`.
///
/// The calibration is shared (`Arc`): a million-component cluster view
/// copies each forecast once per round, and an inline table would make
/// every component ten times larger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Predictive {
    pub mean: f64,
    pub std: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<std::sync::Arc<Calibration>>,
}

impl Predictive {
    /// A Gaussian predictive. A negative or non-finite `std` is stored as 0.
    pub fn gaussian(mean: f64, std: f64) -> Self {
        let std = if std.is_finite() && std > 0.0 {
            std
        } else {
            0.0
        };
        Self {
            mean,
            std,
            calibration: None,
        }
    }

    /// A point forecast with no uncertainty (the oracle's).
    pub fn point(mean: f64) -> Self {
        Self::gaussian(mean, 0.0)
    }

    /// Upper band at level `k`: `mean + k * std` for a Gaussian predictive.
    pub fn upper(&self, k: f64) -> f64 {
        self.mean + self.band_above(k)
    }

    /// Lower band at level `k`: `mean - k * std` for a Gaussian predictive.
    pub fn lower(&self, k: f64) -> f64 {
        let m = match &self.calibration {
            Some(c) => c.lower_mult(k),
            None => k.max(0.0),
        };
        self.mean - m * self.std
    }

    /// `upper(k) - mean`: the width of the band above the mean at level
    /// `k`, `band_mult(k) * std`.
    pub fn band_above(&self, k: f64) -> f64 {
        self.band_mult(k) * self.std
    }

    /// The multiplier of `std` in the band above the mean at level `k`:
    /// `k` for a Gaussian predictive; with a calibration, its learned
    /// upper multiplier ([`Calibration::upper_mult`]: the `Phi(k)`
    /// quantile of the model's standardised errors, over the forecast's
    /// horizon), which heavy-tailed errors make many times `k`.
    pub fn band_mult(&self, k: f64) -> f64 {
        match &self.calibration {
            Some(c) => c.upper_mult(k),
            None => k.max(0.0),
        }
    }

    /// True when `y` lies in `[lower(k), upper(k)]`.
    pub fn covers(&self, y: f64, k: f64) -> bool {
        y >= self.lower(k) && y <= self.upper(k)
    }
}

/// A source of the current time in seconds (Unix time in production, any
/// origin in the simulator). Time is an input: code that decides reads no
/// clock itself.
pub trait Clock: Send + Sync {
    /// Seconds since the clock's origin.
    fn now_s(&self) -> f64;
}

/// The system's wall clock, in Unix seconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_s(&self) -> f64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    }
}

/// A clock that only moves when told to (simulator, tests).
#[derive(Debug, Default)]
pub struct ManualClock {
    bits: AtomicU64,
}

impl ManualClock {
    pub fn new(start_s: f64) -> Self {
        Self {
            bits: AtomicU64::new(start_s.to_bits()),
        }
    }

    pub fn set(&self, now_s: f64) {
        self.bits.store(now_s.to_bits(), Ordering::SeqCst);
    }

    pub fn advance(&self, by_s: f64) {
        self.set(self.now_s() + by_s);
    }
}

impl Clock for ManualClock {
    fn now_s(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn gaussian_bands() {
        let p = Predictive::gaussian(10.0, 2.0);
        assert_eq!(p.upper(3.0), 16.0);
        assert_eq!(p.lower(1.0), 8.0);
        assert_eq!(p.band_above(2.0), 4.0);
        assert_eq!(p.band_mult(2.0), 2.0);
        assert!(p.covers(11.9, 1.0));
        assert!(!p.covers(12.1, 1.0));
    }

    #[test]
    fn gaussian_calibration_matches_plain_gaussian() {
        let plain = Predictive::gaussian(5.0, 1.5);
        let cal = Predictive {
            calibration: Some(std::sync::Arc::new(Calibration::gaussian())),
            ..plain.clone()
        };
        for k in [0.0, 0.3, 1.0, 2.0, 2.9, 3.0, 4.0] {
            assert!((plain.upper(k) - cal.upper(k)).abs() < 1e-6, "k={k}");
            assert!((plain.lower(k) - cal.lower(k)).abs() < 1e-6, "k={k}");
            assert_eq!(cal.band_above(k), cal.band_mult(k) * cal.std, "k={k}");
        }
    }

    #[test]
    fn bad_std_becomes_zero() {
        assert_eq!(Predictive::gaussian(1.0, f64::NAN).std, 0.0);
        assert_eq!(Predictive::gaussian(1.0, -1.0).std, 0.0);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(100.0);
        assert_eq!(c.now_s(), 100.0);
        c.advance(5.5);
        assert_eq!(c.now_s(), 105.5);
    }

    proptest! {
        #[test]
        fn calibrated_upper_is_monotone(mults in proptest::collection::vec(0.0f32..10.0, CALIBRATION_LEVELS)) {
            let mut sorted = mults.clone();
            sorted.sort_by(f32::total_cmp);
            let mut upper = [0.0f32; CALIBRATION_LEVELS];
            upper.copy_from_slice(&sorted);
            let c = Calibration { upper, lower: upper };
            let p = Predictive { mean: 0.0, std: 1.0, calibration: Some(std::sync::Arc::new(c)) };
            let mut prev = f64::NEG_INFINITY;
            for i in 0..=40 {
                let u = p.upper(i as f64 * 0.1);
                prop_assert!(u >= prev - 1e-9);
                prev = u;
            }
        }
    }
}

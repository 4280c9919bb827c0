//! Baselines every comparison needs: last value, moving-window peak, a
//! simplified Kubernetes-VPA-style decaying-histogram recommender (model
//! `vpa-simple`; the faithful port is [`crate::vpa`]) and the oracle
//! (defined in [`crate::oracle`], re-exported here).
//!
//! Uncertainty of the simple baselines: the std is the sample std of the
//! first differences over the last [`SPREAD_WINDOW`] samples times
//! `sqrt(horizon)` (a random-walk error model), with the wide
//! [`fallback_predictive`] until three samples are there.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::{diff_std, fallback_predictive, ConfigErrors, ForecastError, Forecaster, Predictive};

pub use crate::oracle::Oracle;

/// Samples used to estimate the spread of the simple baselines.
pub const SPREAD_WINDOW: usize = 48;

/// Pushes `v` into a bounded window.
fn push_bounded(buf: &mut VecDeque<f64>, cap: usize, v: f64) {
    if buf.len() == cap {
        buf.pop_front();
    }
    buf.push_back(v);
}

/// Last value: the next value (and the peak over any horizon) equals the
/// latest sample.
#[derive(Clone, Debug, Default)]
pub struct LastValue {
    recent: VecDeque<f64>,
    observed: usize,
}

impl LastValue {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Forecaster for LastValue {
    fn name(&self) -> &'static str {
        "last"
    }

    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        crate::finite(value)?;
        push_bounded(&mut self.recent, SPREAD_WINDOW + 1, value);
        self.observed += 1;
        Ok(())
    }

    fn forecast(&self, horizon: usize) -> Predictive {
        let horizon = horizon.max(1);
        let Some(&last) = self.recent.back() else {
            return fallback_predictive(std::iter::empty(), horizon);
        };
        if self.recent.len() < 3 {
            return fallback_predictive(self.recent.iter().copied(), horizon);
        }
        let sd = diff_std(self.recent.iter().copied()) * (horizon as f64).sqrt();
        Predictive::gaussian(last, sd.max(1e-9))
    }

    fn observed(&self) -> usize {
        self.observed
    }
}

/// Configuration of [`WindowPeak`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PeakConfig {
    /// Window of the moving maximum, in samples (default 12 = 1 h at 5 min).
    pub window: usize,
}

impl Default for PeakConfig {
    fn default() -> Self {
        Self { window: 12 }
    }
}

impl PeakConfig {
    /// Checks every field (key relative to `[peak]`): `window` in [1, 100000].
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        e.range("window", self.window, 1, 100_000);
        e.into_result()
    }
}

/// Moving-window peak: the forecast is the maximum of the last `window`
/// samples (what a "max over the last hour" rule reserves).
#[derive(Clone, Debug)]
pub struct WindowPeak {
    cfg: PeakConfig,
    recent: VecDeque<f64>,
    observed: usize,
}

impl WindowPeak {
    pub fn new(cfg: PeakConfig) -> Result<Self, ForecastError> {
        cfg.validate().map_err(|e| e.prefixed("peak"))?;
        Ok(Self {
            cfg,
            recent: VecDeque::new(),
            observed: 0,
        })
    }
}

impl Forecaster for WindowPeak {
    fn name(&self) -> &'static str {
        "peak"
    }

    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        crate::finite(value)?;
        let cap = self.cfg.window.max(SPREAD_WINDOW + 1);
        push_bounded(&mut self.recent, cap, value);
        self.observed += 1;
        Ok(())
    }

    fn forecast(&self, horizon: usize) -> Predictive {
        let horizon = horizon.max(1);
        if self.recent.len() < 3 {
            return fallback_predictive(self.recent.iter().copied(), horizon);
        }
        let w = self.cfg.window.min(self.recent.len());
        let peak = self
            .recent
            .iter()
            .rev()
            .take(w)
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let spread_from = self.recent.len().saturating_sub(SPREAD_WINDOW + 1);
        let sd = diff_std(self.recent.iter().skip(spread_from).copied()) * (horizon as f64).sqrt();
        Predictive::gaussian(peak, sd.max(1e-9))
    }

    fn observed(&self) -> usize {
        self.observed
    }
}

/// Configuration of [`Vpa`] (defaults follow the Kubernetes VPA recommender).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VpaConfig {
    /// Half-life of a sample's weight, seconds (default 86400 = 24 h).
    pub half_life_s: f64,
    /// Sampling interval, seconds (default 300, the traces' step).
    pub interval_s: f64,
    /// Target percentile in (0, 1) (default 0.9).
    pub target_percentile: f64,
    /// Safety margin multiplying the percentile (default 1.15).
    pub margin: f64,
    /// Ratio between consecutive bucket boundaries (default 1.05).
    pub bucket_ratio: f64,
    /// Number of buckets (default 600).
    pub buckets: usize,
}

impl Default for VpaConfig {
    fn default() -> Self {
        Self {
            half_life_s: 86_400.0,
            interval_s: 300.0,
            target_percentile: 0.9,
            margin: 1.15,
            bucket_ratio: 1.05,
            buckets: 600,
        }
    }
}

impl VpaConfig {
    /// Checks every field; reports all problems at once (keys relative to
    /// `[vpa]`). Ranges: `half_life_s`, `interval_s` (0, 1e9];
    /// `target_percentile` (0, 1); `margin` [1, 1000]; `bucket_ratio` (1, 2];
    /// `buckets` [10, 100000].
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        for (key, v) in [
            ("half_life_s", self.half_life_s),
            ("interval_s", self.interval_s),
        ] {
            e.check(key, v > 0.0 && v <= 1e9, || {
                format!("must be in (0, 1e9], got {}", tailor_core::short_num(v))
            });
        }
        e.check(
            "target_percentile",
            self.target_percentile > 0.0 && self.target_percentile < 1.0,
            || {
                format!(
                    "must be in (0, 1), got {}",
                    tailor_core::short_num(self.target_percentile)
                )
            },
        );
        e.range("margin", self.margin, 1.0, 1_000.0);
        e.check(
            "bucket_ratio",
            self.bucket_ratio > 1.0 && self.bucket_ratio <= 2.0,
            || {
                format!(
                    "must be in (1, 2], got {}",
                    tailor_core::short_num(self.bucket_ratio)
                )
            },
        );
        e.range("buckets", self.buckets, 10, 100_000);
        e.into_result()
    }
}

/// Kubernetes-VPA-style recommender: an exponentially bucketed histogram
/// whose sample weights decay with a half-life; the recommendation (the
/// predictive mean) is `margin * P(target_percentile)`.
///
/// Buckets: bucket 0 holds values below `b0`, bucket `i >= 1` holds
/// `[b0 * r^(i-1), b0 * r^i)`, where `b0` is 1e-3 times the magnitude of the
/// first nonzero sample (the traces mix units, so the scale is learned) and
/// `r = bucket_ratio`. A percentile is read as the upper boundary of the
/// bucket where the cumulative weight crosses it. Decay as in the VPA: the
/// n-th sample weighs `2^(n / half_life_samples)`, renormalised when large.
///
/// Std (documented choice; the VPA has none): the Gaussian-equivalent spread
/// of the histogram, `(P90 - P50) / 1.2816`, so `upper(k)` widens with the
/// spread of recent usage. The horizon is ignored: the recommendation already
/// targets a high percentile of the whole decayed history.
#[derive(Clone, Debug)]
pub struct Vpa {
    cfg: VpaConfig,
    weights: Vec<f64>,
    total: f64,
    b0: Option<f64>,
    ln_ratio: f64,
    /// Log2 of the weight the next sample gets.
    exponent: f64,
    recent: VecDeque<f64>,
    observed: usize,
}

impl Vpa {
    pub fn new(cfg: VpaConfig) -> Result<Self, ForecastError> {
        cfg.validate().map_err(|e| e.prefixed("vpa"))?;
        let ln_ratio = cfg.bucket_ratio.ln();
        Ok(Self {
            weights: vec![0.0; cfg.buckets],
            cfg,
            total: 0.0,
            b0: None,
            ln_ratio,
            exponent: 0.0,
            recent: VecDeque::new(),
            observed: 0,
        })
    }

    fn bucket(&self, v: f64, b0: f64) -> usize {
        if v < b0 {
            return 0;
        }
        let i = ((v / b0).ln() / self.ln_ratio).floor() as i64 + 1;
        i.clamp(0, self.cfg.buckets as i64 - 1) as usize
    }

    fn upper_bound(&self, i: usize, b0: f64) -> f64 {
        b0 * (self.ln_ratio * i as f64).exp()
    }

    /// The `p`-quantile of the decayed histogram (`None` before the first
    /// nonzero sample).
    pub fn percentile(&self, p: f64) -> Option<f64> {
        let b0 = self.b0?;
        if self.total <= 0.0 {
            return None;
        }
        let target = p.clamp(0.0, 1.0) * self.total;
        let mut cum = 0.0;
        for (i, w) in self.weights.iter().enumerate() {
            cum += w;
            if cum >= target && *w > 0.0 {
                return Some(self.upper_bound(i, b0));
            }
        }
        let last = self.weights.iter().rposition(|w| *w > 0.0)?;
        Some(self.upper_bound(last, b0))
    }
}

impl Forecaster for Vpa {
    fn name(&self) -> &'static str {
        "vpa-simple"
    }

    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        crate::finite(value)?;
        self.observed += 1;
        push_bounded(&mut self.recent, 3, value);
        if self.b0.is_none() && value.abs() > 0.0 {
            self.b0 = Some(value.abs() * 1e-3);
        }
        let half_life_samples = (self.cfg.half_life_s / self.cfg.interval_s).max(1e-9);
        let w = self.exponent.exp2();
        if let Some(b0) = self.b0 {
            let i = self.bucket(value.max(0.0), b0);
            self.weights[i] += w;
            self.total += w;
        }
        self.exponent += 1.0 / half_life_samples;
        if self.exponent > 100.0 {
            let scale = (-self.exponent).exp2();
            for x in &mut self.weights {
                *x *= scale;
            }
            self.total *= scale;
            self.exponent = 0.0;
        }
        Ok(())
    }

    fn forecast(&self, horizon: usize) -> Predictive {
        let (Some(p50), Some(pt)) = (
            self.percentile(0.5),
            self.percentile(self.cfg.target_percentile),
        ) else {
            return fallback_predictive(self.recent.iter().copied(), horizon);
        };
        let mean = pt * self.cfg.margin;
        let z = inverse_normal_cdf(self.cfg.target_percentile).max(1e-3);
        let std = ((pt - p50) / z).max(1e-9 * mean.abs()).max(1e-12);
        Predictive::gaussian(mean, std)
    }

    fn observed(&self) -> usize {
        self.observed
    }
}

/// Standard normal quantile (Acklam's rational approximation, |err| < 1.2e-9).
#[allow(clippy::excessive_precision)]
pub fn inverse_normal_cdf(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let a = [
        -3.969683028665376e+01,
        2.209460984245205e+02,
        -2.759285104469687e+02,
        1.383577518672690e+02,
        -3.066479806614716e+01,
        2.506628277459239e+00,
    ];
    let b = [
        -5.447609879822406e+01,
        1.615858368580409e+02,
        -1.556989798598866e+02,
        6.680131188771972e+01,
        -1.328068155288572e+01,
    ];
    let c = [
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e+00,
        -2.549732539343734e+00,
        4.374664141464968e+00,
        2.938163982698783e+00,
    ];
    let d = [
        7.784695709041462e-03,
        3.224671290700398e-01,
        2.445134137142996e+00,
        3.754408661907416e+00,
    ];
    let pl = 0.02425;
    if p < pl {
        let q = (-2.0 * p.ln()).sqrt();
        (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
            / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0)
    } else if p <= 1.0 - pl {
        let q = p - 0.5;
        let r = q * q;
        (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
            / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_value_and_peak() {
        let mut l = LastValue::new();
        let mut p = WindowPeak::new(PeakConfig { window: 3 }).expect("cfg");
        for v in [1.0, 5.0, 2.0, 3.0, 2.5] {
            l.observe(v).expect("ok");
            p.observe(v).expect("ok");
        }
        assert_eq!(l.forecast(1).mean, 2.5);
        assert_eq!(p.forecast(1).mean, 3.0);
        assert!(l.forecast(4).std > l.forecast(1).std);
        assert_eq!(l.observed(), 5);
    }

    #[test]
    fn vpa_targets_p90_with_margin() {
        let mut v = Vpa::new(VpaConfig::default()).expect("cfg");
        // values 1..=100, equally weighted within a day: P90 ~ 90
        for i in 1..=100 {
            v.observe(i as f64).expect("ok");
        }
        let p = v.forecast(1);
        assert!(
            p.mean > 90.0 * 1.15 * 0.97 && p.mean < 90.0 * 1.15 * 1.08,
            "{p:?}"
        );
        assert!(p.std > 0.0);
    }

    #[test]
    fn vpa_decays_old_samples() {
        let cfg = VpaConfig {
            half_life_s: 300.0,
            ..VpaConfig::default()
        };
        let mut v = Vpa::new(cfg).expect("cfg");
        for _ in 0..200 {
            v.observe(100.0).expect("ok");
        }
        for _ in 0..20 {
            v.observe(10.0).expect("ok");
        }
        // half-life of one sample: the old level weighs ~2^-20
        assert!(v.forecast(1).mean < 15.0, "{:?}", v.forecast(1));
    }

    #[test]
    fn inverse_normal_is_accurate() {
        assert!((inverse_normal_cdf(0.975) - 1.959964).abs() < 1e-5);
        assert!((inverse_normal_cdf(0.5)).abs() < 1e-9);
        assert!((inverse_normal_cdf(0.00135) + 3.0).abs() < 1e-3);
    }
}

//! Online calibration of any forecaster's predictive bands.
//!
//! [`Calibrated`] wraps a model, records the model's standardised one-step
//! errors `z = (y - mean) / std` and reports a [`Predictive`] whose
//! [`Calibration`] multipliers make the band at level `k` cover what the
//! Gaussian `k`-sigma band claims: the upper multiplier `u_k` is the
//! `Phi(k)` quantile of `z`, so `P(y > upper(k)) = 1 - Phi(k)`, and the lower
//! multiplier `l_k` is minus the `1 - Phi(k)` quantile, so the two-sided band
//! covers `2 Phi(k) - 1`.
//!
//! Per-series data is short (hundreds of steps) and usage errors are
//! heavy-tailed, so each one-sided quantile (upper tail from `z`, lower
//! tail from `-z`) is `w * data + (1 - w) * prior` with
//! `w = n / (n + prior_weight)`, `n` the number of recorded errors, where
//! * data: the empirical quantile while the tail probability is at least
//!   `tail_threshold` (k up to about 0.85), and beyond it a generalised
//!   Pareto tail fitted above the `1 - tail_threshold` quantile (shape
//!   `tail_shape`, scale from the mean excess): order statistics of 300
//!   errors cannot estimate a 0.135% quantile, a tail model fitted on the
//!   top 15% can extrapolate it;
//! * prior: a Student-t with `prior_dof` degrees of freedom centred on the
//!   errors' median, its scale matched to their median absolute deviation
//!   (shrunk towards the Gaussian's with `prior_scale_weight`
//!   pseudo-observations).
//!
//! Multipliers are kept >= 0 and non-decreasing in `k`; at `k = 0` both are 0.
//!
//! Multi-step forecasts (the peak of the next `h > 1` samples) get their
//! own table, learned the same way from the standardised errors of the
//! model's `h`-step peak forecasts, `z = (max(y_t..y_{t+h-1}) - mean) /
//! std`: the wrapper remembers the latest horizon `h > 1` asked of
//! [`Forecaster::forecast`], makes an `h`-step forecast after every
//! observation and scores it once its `h` samples have arrived (a new
//! horizon starts a new table). The one-step table would misstate the
//! peak's spread (on the quality set at h = 6 the GP's upper(3) was
//! exceeded 0.55% of the time with it).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use tailor_core::{CALIBRATION_LEVELS, CALIBRATION_STEP};

use crate::{Calibration, ConfigErrors, ForecastError, Forecaster, Predictive};

mod sorted;
use sorted::{deviations_sorted, quantile_sorted, ErrorWindow};

/// Standardised errors are clamped to +-this before they are recorded, so
/// one wild error (e.g. a model whose std collapsed) cannot dominate the
/// empirical tail.
pub const Z_CLAMP: f64 = 50.0;

/// Configuration of [`Calibrated`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CalibrationConfig {
    /// Standardised errors kept (default 300).
    pub window: usize,
    /// Degrees of freedom of the Student-t prior (default 2).
    pub prior_dof: f64,
    /// Pseudo-observations the prior is worth in every quantile (default 30).
    pub prior_weight: f64,
    /// Tail probability below which quantiles come from the fitted
    /// generalised Pareto tail instead of order statistics (default 0.15,
    /// so k <= 1 stays empirical).
    pub tail_threshold: f64,
    /// Shape `xi` of that Pareto tail (default 0.4: heavy, finite mean).
    pub tail_shape: f64,
    /// Pseudo-observations pulling the error scale towards the Gaussian's
    /// (default 10).
    pub prior_scale_weight: f64,
}

impl Default for CalibrationConfig {
    fn default() -> Self {
        Self {
            window: 300,
            prior_dof: 2.0,
            prior_weight: 30.0,
            tail_threshold: 0.15,
            tail_shape: 0.4,
            prior_scale_weight: 10.0,
        }
    }
}

impl CalibrationConfig {
    /// Checks every field; reports all problems at once (keys relative to
    /// the `[calibration]` table). Ranges: `window` [10, 100000];
    /// `prior_dof` [1, 1e6]; `prior_weight`, `prior_scale_weight` [0, 1e9];
    /// `tail_threshold` (0, 0.5]; `tail_shape` [0, 1).
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        e.range("window", self.window, 10, 100_000);
        e.range("prior_dof", self.prior_dof, 1.0, 1e6);
        e.range("prior_weight", self.prior_weight, 0.0, 1e9);
        e.check(
            "tail_threshold",
            self.tail_threshold > 0.0 && self.tail_threshold <= 0.5,
            || {
                format!(
                    "must be in (0, 0.5], got {}",
                    tailor_core::short_num(self.tail_threshold)
                )
            },
        );
        e.check(
            "tail_shape",
            self.tail_shape >= 0.0 && self.tail_shape < 1.0,
            || {
                format!(
                    "must be in [0, 1), got {}",
                    tailor_core::short_num(self.tail_shape)
                )
            },
        );
        e.range("prior_scale_weight", self.prior_scale_weight, 0.0, 1e9);
        e.into_result()
    }
}

/// Precomputed per-level constants.
#[derive(Clone, Debug)]
struct Levels {
    /// Upper-tail probability `1 - Phi(k)` per level.
    tail: [f64; CALIBRATION_LEVELS],
    /// Standard Student-t quantile at `Phi(k)` per level.
    t_quant: [f64; CALIBRATION_LEVELS],
    /// MAD of the standard Student-t (its 0.75 quantile).
    t_mad: f64,
}

impl Levels {
    /// `new(dof)`, cached per thread for the last `dof` asked: the
    /// Student-t quantiles were 10-17% of a simulator run's CPU when every
    /// new model recomputed them.
    fn for_dof(dof: f64) -> Self {
        thread_local! {
            static LAST: std::cell::RefCell<Option<(u64, Levels)>> =
                const { std::cell::RefCell::new(None) };
        }
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            match last.as_ref() {
                Some((bits, levels)) if *bits == dof.to_bits() => levels.clone(),
                _ => {
                    let levels = Levels::new(dof);
                    *last = Some((dof.to_bits(), levels.clone()));
                    levels
                }
            }
        })
    }

    fn new(dof: f64) -> Self {
        let normal = Normal::standard();
        let t = StudentsT::new(0.0, 1.0, dof).ok();
        let mut tail = [0.0; CALIBRATION_LEVELS];
        let mut t_quant = [0.0; CALIBRATION_LEVELS];
        for i in 0..CALIBRATION_LEVELS {
            let k = i as f64 * CALIBRATION_STEP;
            let p = normal.cdf(k);
            tail[i] = 1.0 - p;
            t_quant[i] = match &t {
                Some(t) => t.inverse_cdf(p),
                None => k,
            };
        }
        let t_mad = t.as_ref().map_or(0.674_489_75, |t| t.inverse_cdf(0.75));
        Self {
            tail,
            t_quant,
            t_mad,
        }
    }
}

/// Level by level the larger multiplier of two tables.
fn wider(a: &Calibration, b: &Calibration) -> Calibration {
    let mut out = *a;
    for i in 0..CALIBRATION_LEVELS {
        out.upper[i] = a.upper[i].max(b.upper[i]);
        out.lower[i] = a.lower[i].max(b.lower[i]);
    }
    out
}

/// Errors and table of the multi-step (peak) forecasts at one horizon.
#[derive(Clone, Debug)]
struct HorizonTrack {
    horizon: usize,
    /// Forecasts awaiting their samples: mean, std, peak so far, samples seen.
    pending: VecDeque<(f64, f64, f64, usize)>,
    errors: ErrorWindow,
    table: Calibration,
}

/// A model wrapped with online band calibration.
#[derive(Clone, Debug)]
pub struct Calibrated<F: Forecaster> {
    inner: F,
    cfg: CalibrationConfig,
    levels: Levels,
    /// Latest horizon > 1 asked of `forecast` (0: none yet).
    asked_horizon: std::cell::Cell<usize>,
    /// The multi-step track for that horizon.
    multi: Option<HorizonTrack>,
    errors: ErrorWindow,
    /// Recent absolute errors, for a fallback std when the model has none.
    abs_errors: VecDeque<f64>,
    /// One-step predictive made before the latest observation.
    pending: Option<Predictive>,
    /// The multi-step predictive made at the latest observation, with its
    /// horizon.
    pending_multi: Option<(usize, Predictive)>,
    /// Whether `pending` and `pending_multi` are still `inner`'s forecasts
    /// (nothing changed `inner` since they were made), so that `forecast`
    /// answers with them instead of computing them again: the simulator
    /// and the agent ask every model for its forecast once per round, right
    /// after the round's observation.
    fresh: bool,
    table: Calibration,
}

impl<F: Forecaster> Calibrated<F> {
    /// Wraps `inner`; fails on an invalid config.
    pub fn new(inner: F, cfg: CalibrationConfig) -> Result<Self, ForecastError> {
        cfg.validate().map_err(|e| e.prefixed("calibration"))?;
        let levels = Levels::for_dof(cfg.prior_dof);
        let mut s = Self {
            inner,
            cfg,
            levels,
            asked_horizon: std::cell::Cell::new(0),
            multi: None,
            errors: ErrorWindow::default(),
            abs_errors: VecDeque::new(),
            pending: None,
            pending_multi: None,
            fresh: false,
            table: Calibration::gaussian(),
        };
        s.table = s.compute_table(&[], 1.0);
        s.pending = Some(s.inner.forecast(1));
        s.fresh = true;
        Ok(s)
    }

    /// The wrapped model.
    pub fn inner(&self) -> &F {
        &self.inner
    }

    /// Current band multipliers.
    pub fn calibration(&self) -> &Calibration {
        &self.table
    }

    /// Standardised errors recorded so far (oldest first).
    pub fn errors(&self) -> impl Iterator<Item = f64> + '_ {
        self.errors.in_order()
    }

    /// The std the wrapper standardises by: the model's when positive, else
    /// the robust scale of recent absolute errors, else a tiny floor.
    fn effective_std(&self, p: &Predictive) -> f64 {
        let floor = 1e-9 * p.mean.abs().max(1e-3);
        if p.std.is_finite() && p.std > floor {
            return p.std;
        }
        if self.abs_errors.len() >= 3 {
            let mut v: Vec<f64> = self.abs_errors.iter().copied().collect();
            v.sort_by(f64::total_cmp);
            let med = quantile_sorted(&v, 0.5) / 0.674_489_75;
            if med.is_finite() && med > floor {
                return med;
            }
        }
        floor
    }

    /// The table from recorded errors, `up` in ascending order; `overlap`
    /// (>= 1) divides their count where it weighs them against the prior
    /// (errors of overlapping multi-step windows are that many times less
    /// independent).
    fn compute_table(&self, up: &[f64], overlap: f64) -> Calibration {
        let down: Vec<f64> = up.iter().rev().map(|z| -z).collect();
        let n = up.len() as f64 / overlap.max(1.0);
        let lv = &self.levels;
        let gauss_mad = 0.674_489_75;
        let (center, mad) = if up.is_empty() {
            (0.0, gauss_mad)
        } else {
            let med = quantile_sorted(up, 0.5);
            (med, quantile_sorted(&deviations_sorted(up, med), 0.5))
        };
        let w0 = self.cfg.prior_scale_weight;
        let mad = if n + w0 > 0.0 {
            (n * mad + w0 * gauss_mad) / (n + w0)
        } else {
            gauss_mad
        };
        let scale = mad / lv.t_mad;
        let w = n / (n + self.cfg.prior_weight);
        let mut upper = [0.0f32; CALIBRATION_LEVELS];
        let mut lower = [0.0f32; CALIBRATION_LEVELS];
        let (mut prev_u, mut prev_l) = (0.0f64, 0.0f64);
        for i in 1..CALIBRATION_LEVELS {
            let p = lv.tail[i];
            let prior_u = center + scale * lv.t_quant[i];
            let prior_l = -center + scale * lv.t_quant[i];
            let u = match self.side_quantile(up, p) {
                Some(e) => w * e + (1.0 - w) * prior_u,
                None => prior_u,
            };
            let l = match self.side_quantile(&down, p) {
                Some(e) => w * e + (1.0 - w) * prior_l,
                None => prior_l,
            };
            let u = if u.is_finite() {
                u.max(prev_u).max(0.0)
            } else {
                prev_u
            };
            let l = if l.is_finite() {
                l.max(prev_l).max(0.0)
            } else {
                prev_l
            };
            upper[i] = u as f32;
            lower[i] = l as f32;
            prev_u = u;
            prev_l = l;
        }
        // k = 0 is the mean itself
        Calibration { upper, lower }
    }

    /// Updates the pending multi-step forecasts with the new sample and
    /// records the errors of those whose horizon is complete; `true` when
    /// an error was recorded.
    fn score_multi(&mut self, value: f64) -> bool {
        let Some(t) = self.multi.as_mut() else {
            return false;
        };
        let mut scored = false;
        for e in t.pending.iter_mut() {
            e.2 = e.2.max(value);
            e.3 += 1;
        }
        while let Some(&(mean, sd, peak, seen)) = t.pending.front() {
            if seen < t.horizon {
                break;
            }
            t.pending.pop_front();
            let z = (peak - mean) / sd;
            if z.is_finite() {
                t.errors.push(z.clamp(-Z_CLAMP, Z_CLAMP), self.cfg.window);
                scored = true;
            }
        }
        scored
    }

    /// Starts (or restarts, on a new horizon) the multi-step track, makes
    /// this step's multi-step forecast and refreshes the table.
    fn push_multi(&mut self, scored: bool) {
        let h = self.asked_horizon.get();
        if h <= 1 {
            return;
        }
        let restart = !matches!(&self.multi, Some(t) if t.horizon == h);
        if restart {
            let table = self.compute_table(&[], 1.0);
            self.multi = Some(HorizonTrack {
                horizon: h,
                pending: VecDeque::with_capacity(h + 1),
                errors: ErrorWindow::default(),
                table,
            });
        }
        let p = self.inner.forecast(h);
        self.pending_multi = Some((h, p.clone()));
        let sd = self.effective_std(&p);
        let table = if scored {
            self.multi
                .as_ref()
                .map(|t| self.compute_table(t.errors.sorted(), t.horizon as f64))
        } else {
            None
        };
        if let Some(t) = self.multi.as_mut() {
            if p.mean.is_finite() && sd.is_finite() && sd > 0.0 {
                t.pending.push_back((p.mean, sd, f64::NEG_INFINITY, 0));
            }
            if let Some(tb) = table {
                t.table = tb;
            }
        }
    }

    /// The `1 - p` quantile of the sorted values `v`: empirical where the
    /// tail holds at least `tail_threshold` of the data, else a generalised
    /// Pareto tail above the `1 - tail_threshold` quantile with shape
    /// `tail_shape` and the observed mean excess. `None` without data.
    fn side_quantile(&self, v: &[f64], p: f64) -> Option<f64> {
        if v.is_empty() {
            return None;
        }
        let p0 = self.cfg.tail_threshold;
        if p >= p0 {
            return Some(quantile_sorted(v, 1.0 - p));
        }
        let u0 = quantile_sorted(v, 1.0 - p0);
        let (mut sum, mut cnt) = (0.0, 0usize);
        for &z in v.iter().rev() {
            if z <= u0 {
                break;
            }
            sum += z - u0;
            cnt += 1;
        }
        if cnt == 0 {
            return Some(u0);
        }
        let beta = sum / cnt as f64;
        let xi = self.cfg.tail_shape;
        let sigma = beta * (1.0 - xi);
        let ratio = p0 / p;
        let q = if xi.abs() < 1e-9 {
            u0 + sigma * ratio.ln()
        } else {
            u0 + sigma / xi * (ratio.powf(xi) - 1.0)
        };
        Some(q)
    }
}

impl<F: Forecaster> Forecaster for Calibrated<F> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        crate::finite(value)?;
        // the forecast made before any observation is a placeholder: skip it
        let pending = self.pending.take().filter(|_| self.inner.observed() > 0);
        if let Some(p) = pending {
            let sd = self.effective_std(&p);
            let e = value - p.mean;
            let z = e / sd;
            if z.is_finite() {
                self.errors
                    .push(z.clamp(-Z_CLAMP, Z_CLAMP), self.cfg.window);
            }
            if e.is_finite() {
                if self.abs_errors.len() == 64 {
                    self.abs_errors.pop_front();
                }
                self.abs_errors.push_back(e.abs());
            }
        }
        let scored = self.score_multi(value);
        let r = self.inner.observe(value);
        self.pending = Some(self.inner.forecast(1));
        self.pending_multi = None;
        self.fresh = true;
        self.table = self.compute_table(self.errors.sorted(), 1.0);
        self.push_multi(scored);
        r
    }

    fn forecast(&self, horizon: usize) -> Predictive {
        let horizon = horizon.max(1);
        let made = match (&self.pending, &self.pending_multi) {
            (Some(p), _) if horizon == 1 => Some(p),
            (_, Some((h, p))) if *h == horizon => Some(p),
            _ => None,
        };
        let p = match made.filter(|_| self.fresh) {
            Some(p) => p.clone(),
            None => self.inner.forecast(horizon),
        };
        let std = self.effective_std(&p);
        let table = if horizon > 1 {
            self.asked_horizon.set(horizon);
            match &self.multi {
                Some(t) if t.horizon == horizon => wider(&t.table, &self.table),
                // not tracked yet: the one-step table until the next observation
                _ => self.table,
            }
        } else {
            self.table
        };
        Predictive {
            mean: p.mean,
            std,
            calibration: Some(std::sync::Arc::new(table)),
        }
    }

    fn observed(&self) -> usize {
        self.inner.observed()
    }

    fn observe_oom(&mut self, alloc: f64) -> Result<(), ForecastError> {
        self.fresh = false;
        self.inner.observe_oom(alloc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LastValue;

    /// Deterministic heavy-tailed noise (Cauchy-like mixture).
    fn noise(i: u64) -> f64 {
        let mut x = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51afd7ed558ccd);
        x ^= x >> 33;
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        let u = u.clamp(1e-6, 1.0 - 1e-6);
        // Student-t(3)-like through a Laplace/Pareto mixture
        if u < 0.5 {
            (2.0 * u).ln()
        } else {
            -(2.0 * (1.0 - u)).ln()
        }
    }

    #[test]
    fn gaussian_prior_before_data_is_heavier_than_gaussian_in_the_tail() {
        let c = Calibrated::new(LastValue::new(), CalibrationConfig::default()).expect("cfg");
        let t = c.calibration();
        assert!(t.upper_mult(3.0) > 3.0);
        assert!(
            t.upper_mult(1.0) > 0.8 && t.upper_mult(1.0) < 1.3,
            "{}",
            t.upper_mult(1.0)
        );
    }

    #[test]
    fn calibrated_bands_cover_heavy_tailed_errors() {
        // level 100 + Laplace noise; last-value model's diff-std is sqrt(2) x
        // the noise std, so it is mis-scaled; calibration must fix coverage.
        let mut c = Calibrated::new(LastValue::new(), CalibrationConfig::default()).expect("cfg");
        let (mut in1, mut in2, mut above3, mut n) = (0, 0, 0, 0);
        for i in 0..4000u64 {
            let y = 100.0 + noise(i);
            if i > 300 {
                let p = c.forecast(1);
                n += 1;
                in1 += p.covers(y, 1.0) as usize;
                in2 += p.covers(y, 2.0) as usize;
                above3 += (y > p.upper(3.0)) as usize;
            }
            c.observe(y).expect("finite");
        }
        let (c1, c2, a3) = (
            in1 as f64 / n as f64,
            in2 as f64 / n as f64,
            above3 as f64 / n as f64,
        );
        assert!((c1 - 0.683).abs() < 0.04, "coverage 1: {c1}");
        assert!((c2 - 0.954).abs() < 0.025, "coverage 2: {c2}");
        assert!(a3 < 0.004, "above 3: {a3}");
    }

    /// Last value with a fixed std whatever the horizon: its multi-step
    /// bands are far too narrow for the peak of a random walk.
    #[derive(Clone, Debug, Default)]
    struct FixedStd {
        last: Option<f64>,
        n: usize,
    }

    impl Forecaster for FixedStd {
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
            self.last = Some(value);
            self.n += 1;
            Ok(())
        }
        fn forecast(&self, _horizon: usize) -> Predictive {
            Predictive::gaussian(self.last.unwrap_or(0.0), 1.4)
        }
        fn observed(&self) -> usize {
            self.n
        }
    }

    /// Counts its forecasts; an OOM kill raises its level.
    #[derive(Debug, Default)]
    struct Counting {
        last: f64,
        n: usize,
        forecasts: std::cell::Cell<usize>,
    }

    impl Forecaster for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
            self.last = value;
            self.n += 1;
            Ok(())
        }
        fn forecast(&self, horizon: usize) -> Predictive {
            self.forecasts.set(self.forecasts.get() + 1);
            Predictive::gaussian(self.last + horizon as f64, 1.0)
        }
        fn observed(&self) -> usize {
            self.n
        }
        fn observe_oom(&mut self, alloc: f64) -> Result<(), ForecastError> {
            self.last = alloc;
            Ok(())
        }
    }

    #[test]
    fn the_rounds_forecast_reuses_the_one_made_at_its_observation() {
        let mut c =
            Calibrated::new(Counting::default(), CalibrationConfig::default()).expect("cfg");
        for (i, v) in [1.0, 2.0, 4.0, 3.0].into_iter().enumerate() {
            c.forecast(6); // the horizon the rounds ask (tracked from here on)
            c.observe(v).expect("finite");
            let made = c.inner().forecasts.get();
            let (one, six) = (c.forecast(1), c.forecast(6));
            assert_eq!(c.inner().forecasts.get(), made, "round {i}: computed again");
            assert_eq!((one.mean, six.mean), (v + 1.0, v + 6.0));
            // a horizon not made at the observation is computed
            assert_eq!(c.forecast(3).mean, v + 3.0);
            assert_eq!(c.inner().forecasts.get(), made + 1);
        }
        // an OOM kill changes the model: its forecasts are computed anew
        c.observe_oom(10.0).expect("finite");
        assert_eq!((c.forecast(1).mean, c.forecast(6).mean), (11.0, 16.0));
    }

    #[test]
    fn multi_step_peak_gets_its_own_table() {
        // random walk with Laplace steps (std sqrt 2): the one-step table is
        // right for one step, far too narrow for the peak of the next 4
        let h = 4;
        let mut y = 0.0;
        let ys: Vec<f64> = (0..4000u64)
            .map(|i| {
                y += noise(i);
                y
            })
            .collect();
        let mut c =
            Calibrated::new(FixedStd::default(), CalibrationConfig::default()).expect("cfg");
        let (mut above2, mut above2_one_step, mut n) = (0, 0, 0);
        for (i, &v) in ys.iter().enumerate() {
            let p = c.forecast(h);
            if i > 300 && i + h <= ys.len() {
                let peak = ys[i..i + h]
                    .iter()
                    .copied()
                    .fold(f64::NEG_INFINITY, f64::max);
                let one = Predictive {
                    calibration: Some(std::sync::Arc::new(c.table)),
                    ..p.clone()
                };
                n += 1;
                above2 += (peak > p.upper(2.0)) as usize;
                above2_one_step += (peak > one.upper(2.0)) as usize;
            }
            c.observe(v).expect("finite");
        }
        let multi = c.multi.as_ref().expect("tracked");
        assert_eq!(multi.horizon, h);
        let (a2, a2_one) = (above2 as f64 / n as f64, above2_one_step as f64 / n as f64);
        assert!(a2_one > 0.06, "one-step table above upper(2): {a2_one}");
        assert!(a2 < 0.0228 + 0.01, "multi-step table above upper(2): {a2}");
        // one-step forecasts keep the one-step table
        assert_eq!(
            c.forecast(1).calibration,
            Some(std::sync::Arc::new(c.table))
        );
    }

    #[test]
    fn rejects_non_finite() {
        let mut c = Calibrated::new(LastValue::new(), CalibrationConfig::default()).expect("cfg");
        assert!(c.observe(f64::INFINITY).is_err());
        assert_eq!(c.observed(), 0);
        assert!(CalibrationConfig {
            window: 1,
            prior_dof: 0.0,
            ..Default::default()
        }
        .validate()
        .is_err());
    }
}

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
use sorted::{median_deviation, quantile_sorted, ErrorWindow, Side};

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
    /// Per level whose tail probability `p` is below `tail_threshold`
    /// (`p0`): how far the Pareto tail's quantile lies beyond its
    /// threshold per unit of `sigma / xi`, `(p0 / p)^xi - 1` (per unit of
    /// `sigma`, `ln(p0 / p)`, when `xi` is 0). Unused at the other levels.
    tail_growth: [f64; CALIBRATION_LEVELS],
}

impl Levels {
    /// `new(cfg)`, cached per thread for the last settings asked: the
    /// Student-t quantiles were 10-17% of a simulator run's CPU when every
    /// new model recomputed them.
    fn for_cfg(cfg: &CalibrationConfig) -> Self {
        type Key = [u64; 3];
        thread_local! {
            static LAST: std::cell::RefCell<Option<(Key, Levels)>> =
                const { std::cell::RefCell::new(None) };
        }
        let key = [cfg.prior_dof, cfg.tail_threshold, cfg.tail_shape].map(f64::to_bits);
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            match last.as_ref() {
                Some((k, levels)) if *k == key => levels.clone(),
                _ => {
                    let levels = Levels::new(cfg);
                    *last = Some((key, levels.clone()));
                    levels
                }
            }
        })
    }

    fn new(cfg: &CalibrationConfig) -> Self {
        let normal = Normal::standard();
        let t = StudentsT::new(0.0, 1.0, cfg.prior_dof).ok();
        let (p0, xi) = (cfg.tail_threshold, cfg.tail_shape);
        let mut tail = [0.0; CALIBRATION_LEVELS];
        let mut t_quant = [0.0; CALIBRATION_LEVELS];
        let mut tail_growth = [0.0; CALIBRATION_LEVELS];
        for i in 0..CALIBRATION_LEVELS {
            let k = i as f64 * CALIBRATION_STEP;
            let p = normal.cdf(k);
            tail[i] = 1.0 - p;
            t_quant[i] = match &t {
                Some(t) => t.inverse_cdf(p),
                None => k,
            };
            let ratio = p0 / tail[i];
            tail_growth[i] = if xi.abs() < 1e-9 {
                ratio.ln()
            } else {
                ratio.powf(xi) - 1.0
            };
        }
        let t_mad = t.as_ref().map_or(0.674_489_75, |t| t.inverse_cdf(0.75));
        Self {
            tail,
            t_quant,
            t_mad,
            tail_growth,
        }
    }
}

/// The generalised Pareto tail of one side of the errors: its threshold
/// `u0`, the side's `1 - tail_threshold` quantile, and the mean excess of
/// the values above it (`None` when none is above).
#[derive(Clone, Copy, Debug)]
struct TailFit {
    u0: f64,
    mean_excess: Option<f64>,
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
        let levels = Levels::for_cfg(&cfg);
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
        let n = up.len() as f64 / overlap.max(1.0);
        let lv = &self.levels;
        let gauss_mad = 0.674_489_75;
        let (center, mad) = if up.is_empty() {
            (0.0, gauss_mad)
        } else {
            let med = quantile_sorted(up, 0.5);
            (med, median_deviation(up, med))
        };
        let w0 = self.cfg.prior_scale_weight;
        let mad = if n + w0 > 0.0 {
            (n * mad + w0 * gauss_mad) / (n + w0)
        } else {
            gauss_mad
        };
        let scale = mad / lv.t_mad;
        let w = n / (n + self.cfg.prior_weight);
        let (up, down) = (Side::Up(up), Side::Down(up));
        let (tail_up, tail_down) = (self.tail_fit(up), self.tail_fit(down));
        let mut upper = [0.0f32; CALIBRATION_LEVELS];
        let mut lower = [0.0f32; CALIBRATION_LEVELS];
        let (mut prev_u, mut prev_l) = (0.0f64, 0.0f64);
        for i in 1..CALIBRATION_LEVELS {
            let prior_u = center + scale * lv.t_quant[i];
            let prior_l = -center + scale * lv.t_quant[i];
            let u = match self.side_quantile(up, tail_up, i) {
                Some(e) => w * e + (1.0 - w) * prior_u,
                None => prior_u,
            };
            let l = match self.side_quantile(down, tail_down, i) {
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

    /// The `1 - p` quantile of side `v`, `p` the tail probability of
    /// `level`: empirical where the tail holds at least `tail_threshold` of
    /// the data, else the generalised Pareto tail `tail` (fitted above the
    /// `1 - tail_threshold` quantile, shape `tail_shape`, scale from the
    /// mean excess). `None` without data.
    fn side_quantile(&self, v: Side<'_>, tail: TailFit, level: usize) -> Option<f64> {
        if v.len() == 0 {
            return None;
        }
        let p = self.levels.tail[level];
        if p >= self.cfg.tail_threshold {
            return Some(v.quantile(1.0 - p));
        }
        let TailFit { u0, mean_excess } = tail;
        let Some(beta) = mean_excess else {
            return Some(u0);
        };
        let xi = self.cfg.tail_shape;
        let sigma = beta * (1.0 - xi);
        let growth = self.levels.tail_growth[level];
        let q = if xi.abs() < 1e-9 {
            u0 + sigma * growth
        } else {
            u0 + sigma / xi * growth
        };
        Some(q)
    }

    /// The Pareto tail of side `v` (fitted once per table: every level
    /// beyond the threshold shares it).
    fn tail_fit(&self, v: Side<'_>) -> TailFit {
        let u0 = v.quantile(1.0 - self.cfg.tail_threshold);
        let (mut sum, mut cnt) = (0.0, 0usize);
        for z in v.above(u0) {
            sum += z - u0;
            cnt += 1;
        }
        TailFit {
            u0,
            mean_excess: (cnt > 0).then(|| sum / cnt as f64),
        }
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
mod tests;

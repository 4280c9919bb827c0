//! Gaussian process with the history-dependent kernel (thesis eq. 2.5, 2.6,
//! 4.1, 4.2).
//!
//! Each training input is the pattern `[t, y_{t-h}, ..., y_{t-1}]` with
//! target `y_t`; the training set is the `N` latest patterns (`N = h` by
//! default). Scaling ([`Standardise`]): by default the inputs' history values
//! and the targets are standardised by the mean and (population) standard
//! deviation of all `h + N` values the model holds (a zero std becomes 1);
//! `targets` uses the targets' own mean and std as scikit-learn's
//! `normalize_y`. The time coordinate is `(t - t_next) / time_scale_steps`.
//! The kernel is `signal_var * k(r) + noise_var * I` with `r` the distance
//! scaled by a time and a history lengthscale (or one shared lengthscale)
//! and `k` exponential (Matern 1/2, default) or squared-exponential.
//! Hyperparameters maximise the log marginal likelihood ([`lml`]) by a
//! projected L-BFGS with analytic gradients, log-parameterised inside
//! [`GpConfig`]'s bounds. Online schedule: each step warm-starts from the
//! previous optimum (and its L-BFGS curvature pairs); when that optimum is
//! no better than white noise (a flat plateau warm starts cannot leave) an
//! anchor run from the cold starting point competes, with an exponential
//! back-off while anchors do not win; every `cold_refit_every` steps a cold
//! fit screens `restarts` deterministic starts plus the previous optimum for
//! a few iterations and finishes the best. The one-step predictive is
//! Gaussian: mean from eq. 4.1, variance from eq. 4.2 plus the noise
//! variance. Until `h + min_train` values are seen the model fits patterns
//! of `len / 2` lags (`short_start`).
//!
//! `forecast(k)` for `k > 1` iterates the mean forward (each predicted mean
//! becomes history for the next step); the predictive of the peak has the
//! largest of those means and the std `sqrt(sum of the one-step variances up
//! to the step with the largest accumulated std)`, a conservative stand-in
//! for the exact distribution of a maximum.

mod config;
pub mod lml;
pub mod optimise;
mod patterns;
mod simd;
mod train;

pub use config::{GpConfig, Lengthscales, PriorMean, Standardise, WarmAnchor};
pub use patterns::{build_patterns, build_patterns_with, Patterns};

use std::collections::VecDeque;

use crate::{fallback_predictive, ForecastError, Forecaster, Predictive};
pub use lml::KernelKind;
pub use lml::Theta;
use lml::{Factor, TrainSet};

/// Result of [`Gp::fit_window`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowFit {
    /// Log hyperparameters `[ln l_t, ln l_h, ln signal_var, ln noise_var]`.
    pub theta: lml::Theta,
    /// Log marginal likelihood (standardised targets).
    pub lml: f64,
    /// One-step predictive mean after the window.
    pub mean: f64,
    /// One-step predictive std (noise included).
    pub std: f64,
}

/// A fitted model at the latest observation.
#[derive(Clone, Debug)]
struct Fitted {
    pats: Patterns,
    factor: Factor,
    theta: lml::Theta,
}

/// The history-kernel GP forecaster.
#[derive(Clone, Debug)]
pub struct Gp {
    cfg: GpConfig,
    values: VecDeque<f64>,
    observed: usize,
    theta: Option<lml::Theta>,
    /// Running mean of past optima (the hyperprior's mean).
    prior_mean: Option<lml::Theta>,
    /// LML evaluations (factorisations) spent by all fits so far.
    evals: u64,
    /// Warm refits since the last anchor run.
    since_anchor: usize,
    /// Warm refits to wait before the next anchor run (doubles up to
    /// `anchor_every` while anchors do not win, 1 after one does).
    anchor_wait: usize,
    /// Curvature pairs of the last accepted optimisation.
    lbfgs: lml::LbfgsMemory,
    since_cold: usize,
    fitted: Option<Fitted>,
    /// A failed fit's patterns and factor: the buffers the next refit
    /// builds into (else it builds into `fitted`'s).
    spare: Option<Fitted>,
}

/// Buffers every refit and forecast on a thread builds into: the window's
/// values, the training set and the LML evaluations' workspace; the
/// forecast's recursion history, query and its distances. They hold nothing
/// between calls, so one set per thread serves every model (a model keeps
/// only its fitted patterns and factor); refits and forecasts then allocate
/// nothing once the buffers have grown to the largest window.
#[derive(Debug, Default)]
struct Scratch {
    window: Vec<f64>,
    train: TrainSet,
    ws: lml::Workspace,
    hist: Vec<f64>,
    query: Vec<f64>,
    dt2: Vec<f64>,
    dh2: Vec<f64>,
    v: Vec<f64>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

impl Gp {
    /// A new model; fails on an invalid config.
    pub fn new(cfg: GpConfig) -> Result<Self, ForecastError> {
        cfg.validate().map_err(|e| e.prefixed("gp"))?;
        let cap = cfg.n_train() + cfg.history;
        Ok(Self {
            cfg,
            values: VecDeque::with_capacity(cap + 1),
            observed: 0,
            theta: None,
            prior_mean: None,
            evals: 0,
            lbfgs: lml::LbfgsMemory::default(),
            since_anchor: 0,
            anchor_wait: 1,
            since_cold: 0,
            fitted: None,
            spare: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &GpConfig {
        &self.cfg
    }

    /// Current hyperparameters `[time_lengthscale, history_lengthscale,
    /// signal_var, noise_var]` (natural scale, scaled units), once fitted.
    pub fn hyperparameters(&self) -> Option<[f64; 4]> {
        self.fitted.as_ref().map(|f| f.theta.map(f64::exp))
    }

    /// LML evaluations (kernel factorisations) all fits so far have spent:
    /// the unit of the hyperparameter search's cost.
    pub fn fit_evaluations(&self) -> u64 {
        self.evals
    }

    /// Log marginal likelihood of the current fit.
    pub fn log_marginal_likelihood(&self) -> Option<f64> {
        self.fitted.as_ref().map(|f| f.factor.lml)
    }

    /// Fits one window offline (no online state): cold fit with the
    /// configured restarts, or the given log hyperparameters `theta`. Returns
    /// the hyperparameters, the LML and the one-step predictive after the
    /// window. `None` when the window is too short or nothing factorises.
    /// Used by the reference tests against scikit-learn.
    pub fn fit_window(
        cfg: &GpConfig,
        window: &[f64],
        theta: Option<lml::Theta>,
    ) -> Option<WindowFit> {
        let mut gp = Gp::new(cfg.clone()).ok()?;
        gp.values = window.iter().copied().collect();
        match theta {
            None => {
                gp.since_cold = cfg.cold_refit_every;
                gp.refit();
            }
            Some(theta) => {
                let pats = build_patterns_with(
                    window,
                    cfg.history,
                    cfg.time_scale_steps,
                    cfg.prior_mean,
                    cfg.standardise,
                )?;
                let mut ts = TrainSet::default();
                ts.rebuild_patterns(&pats);
                let factor = lml::factor(&ts, cfg.kernel, theta)?;
                gp.fitted = Some(Fitted {
                    pats,
                    factor,
                    theta,
                });
            }
        }
        let f = gp.fitted.as_ref()?;
        let p = gp.forecast(1);
        Some(WindowFit {
            theta: f.theta,
            lml: f.factor.lml,
            mean: p.mean,
            std: p.std,
        })
    }

    /// History length of the patterns fitted on `len` values: `history`,
    /// or with [`GpConfig::short_start`] and fewer than `history +
    /// min_train` values, `len / 2` (as many patterns as lags).
    fn effective_history(&self, len: usize) -> usize {
        let h = self.cfg.history;
        if self.cfg.short_start && len < h + self.cfg.min_train {
            (len / 2).clamp(1, h)
        } else {
            h
        }
    }

    /// Fewest values the GP fits on (before: last-value fallback).
    fn min_fit_len(&self) -> usize {
        if self.cfg.short_start {
            (2 * self.cfg.min_train).min(self.cfg.history + self.cfg.min_train)
        } else {
            self.cfg.history + self.cfg.min_train
        }
    }

    /// Refits the current window from scratch (cold fit with restarts),
    /// as the periodic cold refit does. No-op with too little history.
    pub fn cold_refit(&mut self) {
        if self.values.len() >= self.min_fit_len() {
            self.since_cold = self.cfg.cold_refit_every;
            self.refit();
        }
    }

    /// Deterministic starting points of a cold fit: lengthscales around
    /// the median distances, noise from 1e-3 to 0.5 of the signal.
    fn cold_starts(&self, ts: &TrainSet) -> Vec<lml::Theta> {
        let shared = self.cfg.lengthscales == Lengthscales::Shared;
        let (mt, mh) = if shared {
            let m = ts.median_distance().max(1e-6).ln();
            (m, m)
        } else {
            (
                ts.median_time_distance().max(1e-6).ln(),
                ts.median_history_distance().max(1e-6).ln(),
            )
        };
        let l3 = 3.0f64.ln();
        let l10 = 10.0f64.ln();
        // balanced, time-driven, history-driven (time nearly ignored: the
        // basin the first two miss on periodic series), noisy, sharp
        let all = [
            [mt, mh, 0.0, 0.1f64.ln()],
            [mt - l10, mh + l10, 0.0, 0.05f64.ln()],
            [mt + 2.0 * l10, mh, 0.0, 0.01f64.ln()],
            [mt + l3, mh + l3, 0.0, 0.5f64.ln()],
            [mt - l3, mh - l3, 0.0, 0.01f64.ln()],
        ];
        (0..self.cfg.restarts)
            .map(|i| {
                let mut s = all[i % all.len()];
                // beyond the fixed grid: spread the lengthscales further
                let shift = (i / all.len()) as f64 * if i % 2 == 0 { 1.0 } else { -1.0 };
                s[0] += shift;
                s[1] += shift;
                s
            })
            .collect()
    }

    fn refit(&mut self) {
        // build into the last fit's buffers (or a failed fit's)
        let mut out = self
            .fitted
            .take()
            .or_else(|| self.spare.take())
            .unwrap_or_else(|| Fitted {
                pats: Patterns::empty(self.cfg.prior_mean),
                factor: Factor::default(),
                theta: [0.0; lml::NP],
            });
        // taken, not borrowed: a panic inside only loses the buffers
        let mut sc = SCRATCH.with(std::cell::RefCell::take);
        sc.window.clear();
        sc.window.extend(self.values.iter().copied());
        let built = out.pats.rebuild(
            &sc.window,
            self.effective_history(sc.window.len()),
            self.cfg.time_scale_steps,
            self.cfg.prior_mean,
            self.cfg.standardise,
        );
        if built {
            sc.train.rebuild_patterns(&out.pats);
            sc.ws = self.fit_patterns(&sc.train, std::mem::take(&mut sc.ws), out);
        } else {
            self.spare = Some(out);
        }
        SCRATCH.with(|c| c.replace(sc));
    }

    /// The hyperparameter search of [`Gp::refit`] on `ts` (built from
    /// `out.pats`), on the buffers `ws`, which it gives back. Stores the fit
    /// in `out` and keeps it, or keeps `out`'s buffers as spare when
    /// nothing factorises.
    fn fit_patterns(
        &mut self,
        ts: &TrainSet,
        ws: lml::Workspace,
        mut out: Fitted,
    ) -> lml::Workspace {
        let bounds = self.cfg.bounds();
        let kernel = self.cfg.kernel;
        let shared = self.cfg.lengthscales == Lengthscales::Shared;
        let cold = self.theta.is_none() || self.since_cold >= self.cfg.cold_refit_every;
        let prior = match (self.prior_mean, self.cfg.hyper_prior_sd) {
            (Some(mean), sd) if sd > 0.0 => Some(lml::HyperPrior {
                mean,
                inv_var: 1.0 / (sd * sd),
            }),
            _ => None,
        };
        let prior = prior.as_ref();
        let cold_opts = lml::OptOptions {
            max_iters: self.cfg.cold_max_iters as usize,
            max_evals: None,
            tol_grad: self.cfg.cold_tol_grad,
            tol_rel: 1e-10,
        };
        let warm_opts = lml::OptOptions {
            max_iters: self.cfg.warm_max_iters as usize,
            max_evals: None,
            tol_grad: self.cfg.warm_tol_grad,
            tol_rel: self.cfg.warm_tol_rel,
        };
        let anchor_opts = lml::OptOptions {
            max_iters: self.cfg.anchor_max_iters as usize,
            ..warm_opts
        };
        let mut ev = lml::Evaluator::with_workspace(ts, kernel, ws);
        let mut best: Option<lml::FitResult> = None;
        let mut consider = |r: lml::FitResult| {
            let better = !matches!(best, Some(b) if b.objective >= r.objective);
            if better {
                best = Some(r);
            }
            better
        };
        if cold {
            self.since_cold = 0;
            let mut starts = self.cold_starts(ts);
            if let Some(t) = self.theta {
                starts.push(t);
            }
            // screen every start with a few iterations, then finish the best
            let screen = self
                .cfg
                .cold_screen_iters
                .min(self.cfg.cold_max_iters as usize);
            // evaluation caps bound the worst case (a line search can
            // backtrack several times per iteration)
            let screen_opts = lml::OptOptions {
                max_iters: screen,
                max_evals: Some(2 * screen + 2),
                ..cold_opts
            };
            let mut lead: Option<(lml::FitResult, lml::LbfgsMemory)> = None;
            for s in starts {
                let mut mem = lml::LbfgsMemory::default();
                let r = lml::optimise_with(
                    &mut ev,
                    &bounds,
                    s,
                    shared,
                    if screen > 0 { &screen_opts } else { &cold_opts },
                    prior,
                    Some(&mut mem),
                );
                if !matches!(lead, Some((b, _)) if b.objective >= r.objective) {
                    lead = Some((r, mem));
                }
            }
            if let Some((r, mut mem)) = lead {
                consider(r);
                self.lbfgs = mem;
                if screen > 0 && r.objective.is_finite() {
                    let iters = self.cfg.cold_max_iters as usize - screen;
                    let finish_opts = lml::OptOptions {
                        max_iters: iters,
                        max_evals: Some(2 * iters),
                        ..cold_opts
                    };
                    let r2 = lml::optimise_with(
                        &mut ev,
                        &bounds,
                        r.theta,
                        shared,
                        &finish_opts,
                        prior,
                        Some(&mut mem),
                    );
                    if consider(r2) {
                        self.lbfgs = mem;
                    }
                }
            }
        } else if let Some(t) = self.theta {
            self.since_cold += 1;
            let mut mem = if self.cfg.keep_curvature {
                self.lbfgs
            } else {
                lml::LbfgsMemory::default()
            };
            let r = lml::optimise_with(
                &mut ev,
                &bounds,
                t,
                shared,
                &warm_opts,
                prior,
                Some(&mut mem),
            );
            if consider(r) {
                self.lbfgs = mem;
            }
            let n = ts.n as f64;
            let white = -0.5 * n * (1.0 + (2.0 * std::f64::consts::PI).ln());
            self.since_anchor += 1;
            let anchor = match self.cfg.warm_anchor {
                WarmAnchor::Never => false,
                WarmAnchor::Always => true,
                WarmAnchor::Degenerate => {
                    // a NaN/-inf optimum counts as degenerate
                    (r.lml.is_nan() || r.lml <= white + self.cfg.degenerate_margin)
                        && self.since_anchor >= self.anchor_wait
                }
            };
            if anchor {
                self.since_anchor = 0;
                let s = self.cold_starts(ts)[0];
                let mut mem = lml::LbfgsMemory::default();
                let r = lml::optimise_with(
                    &mut ev,
                    &bounds,
                    s,
                    shared,
                    &anchor_opts,
                    prior,
                    Some(&mut mem),
                );
                if consider(r) {
                    self.lbfgs = mem;
                    self.anchor_wait = 1;
                } else {
                    // the plateau is this window's optimum: back off
                    self.anchor_wait = (2 * self.anchor_wait).min(self.cfg.anchor_every);
                }
            }
        }
        if let Some(b) = best.filter(|b| b.lml.is_finite()) {
            let a = self.cfg.hyper_prior_weight;
            self.prior_mean = Some(match self.prior_mean {
                Some(m) => std::array::from_fn(|i| (1.0 - a) * m[i] + a * b.theta[i]),
                None => b.theta,
            });
        }
        let theta = match best {
            Some(b) if b.lml.is_finite() => b.theta,
            _ => {
                // nothing factorised: try a very noisy model before giving up
                let md = ts.median_distance().max(1e-6).ln();
                bounds.clamp_log([md, md, 0.0, 0.0])
            }
        };
        // the factor at the chosen point (the last evaluation, unless a
        // later start or a rejected line-search trial came after it)
        let factored = if ev.theta() == Some(theta) {
            ev.factor_into(&mut out.factor)
        } else {
            ev.lml(theta).is_some() && ev.factor_into(&mut out.factor)
        };
        self.evals += ev.evals as u64;
        let ws = ev.into_workspace();
        if factored {
            self.theta = Some(theta);
            out.theta = theta;
            self.fitted = Some(out);
        } else {
            tracing::debug!("GP fit failed; using the last-value fallback");
            self.theta = None;
            self.spare = Some(out);
        }
        ws
    }

    /// The predictive of the peak over `horizon` steps (see the module
    /// doc) on the buffers `sc`; `None` when a value is not finite.
    #[inline(always)]
    fn forecast_fitted(&self, f: &Fitted, horizon: usize, sc: &mut Scratch) -> Option<Predictive> {
        let kernel = self.cfg.kernel;
        let p = &f.pats;
        let h = p.dim - 1;
        // raw history for the recursion, oldest first
        sc.hist.clear();
        sc.hist
            .extend(self.values.iter().skip(self.values.len() - h).copied());
        let mut best_mean = f64::NEG_INFINITY;
        let mut cum_var = 0.0;
        let mut best_sd: f64 = 0.0;
        for step in 0..horizon {
            let recent = &sc.hist[sc.hist.len() - h..];
            sc.query.clear();
            sc.query.push(step as f64 / self.cfg.time_scale_steps);
            sc.query
                .extend(recent.iter().map(|v| (v - p.x_mean) / p.x_scale));
            lml::hankel_query_distances(&p.t, &p.xw, &sc.query, &mut sc.dt2, &mut sc.dh2);
            let (m, latent_var) =
                lml::predict(&f.factor, kernel, f.theta, &sc.dt2, &sc.dh2, &mut sc.v);
            // one-step variance in standardised space: latent plus noise
            let v = latent_var + f.theta[3].exp();
            let offset = match p.prior_mean {
                PriorMean::Last => recent[h - 1],
                PriorMean::Window => 0.0,
            };
            let raw = offset + p.y_mean + p.y_scale * m;
            cum_var += p.y_scale * p.y_scale * v;
            best_mean = best_mean.max(raw);
            best_sd = best_sd.max(cum_var.sqrt());
            sc.hist.push(raw);
        }
        (best_mean.is_finite() && best_sd.is_finite())
            .then(|| Predictive::gaussian(best_mean, best_sd))
    }
}

// The forecast's recursion, compiled for every instruction set ([`simd`]).
simd::simd_op!(struct Forecast<'a> { gp: &'a Gp, f: &'a Fitted, horizon: usize, sc: &'a mut Scratch } -> Option<Predictive> {
    gp.forecast_fitted(f, horizon, sc)
});

impl Forecaster for Gp {
    fn name(&self) -> &'static str {
        "gp"
    }

    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        crate::finite(value)?;
        let cap = self.cfg.n_train() + self.cfg.history;
        if self.values.len() == cap {
            self.values.pop_front();
        }
        self.values.push_back(value);
        self.observed += 1;
        if self.values.len() >= self.min_fit_len() {
            self.refit();
        }
        Ok(())
    }

    fn forecast(&self, horizon: usize) -> Predictive {
        let horizon = horizon.max(1);
        let Some(f) = &self.fitted else {
            return fallback_predictive(self.values.iter().copied(), horizon);
        };
        let mut sc = SCRATCH.with(std::cell::RefCell::take);
        let p = simd::dispatch(Forecast {
            gp: self,
            f,
            horizon,
            sc: &mut sc,
        });
        SCRATCH.with(|c| c.replace(sc));
        p.unwrap_or_else(|| fallback_predictive(self.values.iter().copied(), horizon))
    }

    fn observed(&self) -> usize {
        self.observed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 10.0 + (i as f64 * 0.4).sin() * 3.0 + ((i * 7919) % 13) as f64 * 0.1)
            .collect()
    }

    #[test]
    fn patterns_layout() {
        let w: Vec<f64> = (0..6).map(|i| i as f64).collect();
        let p = build_patterns(&w, 2, 1.0, PriorMean::Window).expect("patterns");
        assert_eq!(p.dim, 3);
        assert_eq!(p.y.len(), 4);
        // targets 2,3,4,5: mean 3.5, population sd sqrt(1.25)
        assert!((p.y_mean - 3.5).abs() < 1e-12);
        assert!((p.y_scale - 1.25f64.sqrt()).abs() < 1e-12);
        assert_eq!((p.x_mean, p.x_scale), (p.y_mean, p.y_scale));
        // first pattern: time (2-6)/1, history 0,1
        let x = p.x();
        assert_eq!(x.len(), 4 * 3);
        assert!((x[0] + 4.0).abs() < 1e-12);
        assert!((x[1] - (0.0 - 3.5) / p.x_scale).abs() < 1e-12);
        assert!((x[3 * 3 + 2] - (4.0 - 3.5) / p.x_scale).abs() < 1e-12);
        assert_eq!(p.x_test()[0], 0.0);
        assert!((p.x_test()[2] - (5.0 - 3.5) / p.x_scale).abs() < 1e-12);
        // residual targets: all differences are 1, so the scale falls back to 1
        let r = build_patterns(&w, 2, 1.0, PriorMean::Last).expect("patterns");
        assert_eq!((r.y_mean, r.y_scale), (1.0, 1.0));
        assert!(r.y.iter().all(|v| v.abs() < 1e-12));
        assert_eq!(r.x(), x);
    }

    #[test]
    fn forecasts_finite_and_tracks_level() {
        let mut gp = Gp::new(GpConfig::default()).expect("cfg");
        let s = series(120);
        let mut abs_err = 0.0;
        let mut naive = 0.0;
        for (i, &v) in s.iter().enumerate() {
            if i > 60 {
                let p = gp.forecast(1);
                assert!(p.mean.is_finite() && p.std.is_finite() && p.std > 0.0);
                abs_err += (p.mean - v).abs();
                naive += (s[i - 1] - v).abs();
            }
            gp.observe(v).expect("finite");
        }
        assert!(
            abs_err < naive,
            "GP MAE {abs_err} not below last-value {naive} on a smooth periodic series"
        );
        let p5 = gp.forecast(5);
        assert!(p5.std >= gp.forecast(1).std);
    }

    #[test]
    fn the_vectorised_forecast_is_the_scalar_one_bit_for_bit() {
        let mut gp = Gp::new(GpConfig::default()).expect("cfg");
        for (i, v) in series(90).into_iter().enumerate() {
            gp.observe(v).expect("finite");
            let Some(f) = &gp.fitted else { continue };
            for horizon in [1, 6] {
                let wide = gp.forecast(horizon);
                let mut sc = Scratch::default();
                let scalar = simd::scalar(Forecast {
                    gp: &gp,
                    f,
                    horizon,
                    sc: &mut sc,
                })
                .expect("finite");
                assert_eq!(
                    (wide.mean.to_bits(), wide.std.to_bits()),
                    (scalar.mean.to_bits(), scalar.std.to_bits()),
                    "step {i}, horizon {horizon}"
                );
            }
        }
    }

    #[test]
    fn models_sharing_a_threads_buffers_forecast_as_alone() {
        // Two models of different sizes interleaved on one thread (so on
        // the same refit and forecast buffers) forecast exactly as each
        // one run alone.
        let small = GpConfig {
            history: 6,
            min_train: 3,
            ..GpConfig::default()
        };
        let s1 = series(70);
        let s2: Vec<f64> = series(70).iter().map(|v| 50.0 - 2.0 * v).collect();
        let alone = |cfg: &GpConfig, s: &[f64]| -> Vec<Predictive> {
            let mut gp = Gp::new(cfg.clone()).expect("cfg");
            s.iter()
                .map(|&v| {
                    gp.observe(v).expect("finite");
                    gp.forecast(3)
                })
                .collect()
        };
        let (a1, a2) = (alone(&GpConfig::default(), &s1), alone(&small, &s2));
        let mut g1 = Gp::new(GpConfig::default()).expect("cfg");
        let mut g2 = Gp::new(small).expect("cfg");
        for i in 0..s1.len() {
            g1.observe(s1[i]).expect("finite");
            g2.observe(s2[i]).expect("finite");
            assert_eq!(g2.forecast(3), a2[i], "small model, step {i}");
            assert_eq!(g1.forecast(3), a1[i], "default model, step {i}");
        }
        assert!(g1.hyperparameters().is_some() && g2.hyperparameters().is_some());
    }

    #[test]
    fn rejects_non_finite_and_handles_constant() {
        let mut gp = Gp::new(GpConfig::default()).expect("cfg");
        assert!(gp.observe(f64::NAN).is_err());
        assert_eq!(gp.observed(), 0);
        for _ in 0..60 {
            gp.observe(5.0).expect("finite");
        }
        let p = gp.forecast(3);
        assert!((p.mean - 5.0).abs() < 1e-6, "{p:?}");
        assert!(p.std.is_finite());
    }

    #[test]
    fn validate_reports_all_errors() {
        let cfg = GpConfig {
            history: 0,
            restarts: 0,
            noise_var_bounds: [1.0, 0.5],
            ..GpConfig::default()
        };
        let e = cfg.validate().expect_err("invalid").to_string();
        assert!(
            e.contains("history") && e.contains("restarts") && e.contains("noise_var_bounds"),
            "{e}"
        );
    }
}

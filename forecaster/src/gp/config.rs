//! [`GpConfig`]: the GP's settings, their defaults and validation.

use serde::{Deserialize, Serialize};

use super::lml::{Bounds, KernelKind};
use crate::ConfigErrors;

/// Configuration of [`Gp`]. Every field has a default (shown on each field).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GpConfig {
    /// History window `h`: values per pattern (default 20; thesis 10..40).
    pub history: usize,
    /// Training patterns `N` (default: `None` = `history`, the thesis's
    /// `N = h`; median MASE on the quality set / held-out set: N = h = 20
    /// 0.898 / 0.929, N = 2h = 40 0.894 / 0.914 at ~3x the cost per update).
    pub train_size: Option<usize>,
    /// Kernel (default `exponential`).
    pub kernel: KernelKind,
    /// Prior mean (default `window`: the thesis's zero-mean GP on
    /// standardised targets; `last` models `y_t - y_{t-1}`).
    pub prior_mean: PriorMean,
    /// Standardisation (default `buffer`; `targets` = scikit-learn's).
    pub standardise: Standardise,
    /// `separate` (default): one lengthscale for the time coordinate and one
    /// for the history values; `shared`: one isotropic lengthscale.
    pub lengthscales: Lengthscales,
    /// Time coordinate unit in samples: patterns `time_scale_steps` apart
    /// are 1 apart in input space (default 20).
    pub time_scale_steps: f64,
    /// Fewest training patterns before the GP replaces the last-value
    /// fallback (default 5).
    pub min_train: usize,
    /// Cold refit (with restarts) every this many observations (default 25).
    pub cold_refit_every: usize,
    /// Starting points of a cold fit (default 3: balanced, time-driven and
    /// history-driven lengthscales; the previous optimum is
    /// an extra start in the periodic cold refit).
    pub restarts: usize,
    /// L-BFGS iterations of a warm refit (default 6).
    pub warm_max_iters: u64,
    /// L-BFGS iterations of a cold fit: screening plus finishing the
    /// best start (default 20).
    pub cold_max_iters: u64,
    /// Gradient tolerance of the warm refit (default 1e-3).
    pub warm_tol_grad: f64,
    /// Relative objective decrease below which a warm refit stops
    /// (default 1e-4).
    pub warm_tol_rel: f64,
    /// L-BFGS iterations every cold start gets before only the best one
    /// continues to `cold_max_iters` (default 4; 0 = every start runs to
    /// `cold_max_iters`).
    pub cold_screen_iters: usize,
    /// Gradient tolerance of the cold fit (default 1e-5).
    pub cold_tol_grad: f64,
    /// History lengthscale bounds in scaled input units (default
    /// `[1e-2, 1e3]`); also the shared lengthscale's bounds.
    pub lengthscale_bounds: [f64; 2],
    /// Time lengthscale bounds in time-coordinate units (default `[1e-3, 1e3]`).
    pub time_lengthscale_bounds: [f64; 2],
    /// Signal variance bounds, standardised units (default `[1e-3, 1e2]`).
    pub signal_var_bounds: [f64; 2],
    /// Noise variance bounds, standardised units (default `[1e-6, 1e1]`).
    pub noise_var_bounds: [f64; 2],
    /// When a warm refit also runs from the fixed cold starting point
    /// (default `degenerate`).
    pub warm_anchor: WarmAnchor,
    /// LML margin over the white-noise model below which a warm optimum is
    /// degenerate (default 1).
    pub degenerate_margin: f64,
    /// While degenerate, the anchor runs after 1, 2, 4, ... warm refits
    /// (the wait doubles while the anchor does not find a better optimum,
    /// up to this many; back to 1 when it does; default 16).
    pub anchor_every: usize,
    /// L-BFGS iterations of that anchor run (default 6).
    pub anchor_max_iters: u64,
    /// Hyperprior: sd of a Gaussian prior on every log hyperparameter
    /// centred on the running mean of past optima (default 0 = none, plain
    /// ML-II; 2 improved the pooled but not the median MASE).
    pub hyper_prior_sd: f64,
    /// Weight of the newest optimum in that running mean (default 0.1).
    pub hyper_prior_weight: f64,
    /// Warm refits start from the previous optimisation's L-BFGS
    /// curvature pairs (default true).
    pub keep_curvature: bool,
    /// Fit before `history + min_train` values are seen, with patterns of
    /// `len / 2` lags (from `2 * min_train` values; default true); else the
    /// last-value fallback until then.
    pub short_start: bool,
}

/// When a warm refit also runs from the fixed (median-distance) cold
/// starting point and keeps the better optimum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WarmAnchor {
    /// Never (warm start only).
    Never,
    /// When the warm optimum is no better than white noise: the
    /// correlations vanished (a flat plateau warm starts cannot leave).
    #[default]
    Degenerate,
    /// Every step.
    Always,
}

impl Default for GpConfig {
    fn default() -> Self {
        Self {
            history: 20,
            train_size: None,
            kernel: KernelKind::Exponential,
            prior_mean: PriorMean::Window,
            standardise: Standardise::Buffer,
            lengthscales: Lengthscales::Separate,
            time_scale_steps: 20.0,
            min_train: 5,
            cold_refit_every: 25,
            restarts: 3,
            warm_max_iters: 6,
            cold_max_iters: 20,
            warm_tol_grad: 1e-3,
            warm_tol_rel: 1e-4,
            cold_screen_iters: 4,
            cold_tol_grad: 1e-5,
            lengthscale_bounds: [1e-2, 1e3],
            time_lengthscale_bounds: [1e-3, 1e3],
            signal_var_bounds: [1e-3, 1e2],
            noise_var_bounds: [1e-6, 1e1],
            warm_anchor: WarmAnchor::Degenerate,
            degenerate_margin: 1.0,
            anchor_every: 16,
            anchor_max_iters: 6,
            short_start: true,
            keep_curvature: true,
            hyper_prior_sd: 0.0,
            hyper_prior_weight: 0.1,
        }
    }
}

impl GpConfig {
    /// Number of training patterns.
    pub fn n_train(&self) -> usize {
        self.train_size.unwrap_or(self.history)
    }

    /// Checks every field; reports all problems at once (keys relative to
    /// the `[gp]` table). Ranges: `history` [2, 64]; `train_size` [2, 200];
    /// `time_scale_steps` (0, 1e9]; `min_train` [2, train_size];
    /// `cold_refit_every`, `anchor_every` [1, 1000000]; `restarts` [1, 16];
    /// `warm_max_iters`, `anchor_max_iters`, `cold_screen_iters` [0, 1000];
    /// `cold_max_iters` [1, 1000]; tolerances (0, 1e6]; `degenerate_margin`
    /// [-1e6, 1e6]; `hyper_prior_sd` [0, 1e3]; `hyper_prior_weight` (0, 1];
    /// bounds `[lo, hi]` with 0 < lo < hi <= 1e12.
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        e.check("history", (2..=64).contains(&self.history), || {
            format!(
                "must be in [2, 64] (thesis: 10..40), got {}",
                tailor_core::short_num(self.history)
            )
        });
        e.range_opt("train_size", self.train_size, 2, 200);
        e.check(
            "time_scale_steps",
            self.time_scale_steps > 0.0 && self.time_scale_steps <= 1e9,
            || {
                format!(
                    "must be in (0, 1e9], got {}",
                    tailor_core::short_num(self.time_scale_steps)
                )
            },
        );
        e.check(
            "min_train",
            self.min_train >= 2 && self.min_train <= self.n_train().max(2),
            || {
                format!(
                    "must be in [2, train_size ({})], got {}",
                    self.n_train(),
                    self.min_train
                )
            },
        );
        e.range("degenerate_margin", self.degenerate_margin, -1e6, 1e6);
        e.range("hyper_prior_sd", self.hyper_prior_sd, 0.0, 1e3);
        e.check(
            "hyper_prior_weight",
            self.hyper_prior_weight > 0.0 && self.hyper_prior_weight <= 1.0,
            || {
                format!(
                    "must be in (0, 1], got {}",
                    tailor_core::short_num(self.hyper_prior_weight)
                )
            },
        );
        e.range("anchor_every", self.anchor_every, 1, 1_000_000);
        e.range("cold_refit_every", self.cold_refit_every, 1, 1_000_000);
        e.range("restarts", self.restarts, 1, 16);
        e.range("warm_max_iters", self.warm_max_iters, 0, 1_000);
        e.range("cold_max_iters", self.cold_max_iters, 1, 1_000);
        e.range("cold_screen_iters", self.cold_screen_iters, 0, 1_000);
        e.range("anchor_max_iters", self.anchor_max_iters, 0, 1_000);
        for (name, v) in [
            ("warm_tol_grad", self.warm_tol_grad),
            ("cold_tol_grad", self.cold_tol_grad),
            ("warm_tol_rel", self.warm_tol_rel),
        ] {
            e.check(name, v > 0.0 && v <= 1e6, || {
                format!("must be in (0, 1e6], got {}", tailor_core::short_num(v))
            });
        }
        for (name, b) in [
            ("lengthscale_bounds", self.lengthscale_bounds),
            ("time_lengthscale_bounds", self.time_lengthscale_bounds),
            ("signal_var_bounds", self.signal_var_bounds),
            ("noise_var_bounds", self.noise_var_bounds),
        ] {
            e.check(name, b[0] > 0.0 && b[0] < b[1] && b[1] <= 1e12, || {
                format!("must be [lo, hi] with 0 < lo < hi <= 1e12, got {b:?}")
            });
        }
        e.into_result()
    }

    /// Hyperparameter bounds in `theta` order.
    pub fn bounds(&self) -> Bounds {
        let time = match self.lengthscales {
            Lengthscales::Separate => self.time_lengthscale_bounds,
            Lengthscales::Shared => self.lengthscale_bounds,
        };
        Bounds {
            lo: [
                time[0],
                self.lengthscale_bounds[0],
                self.signal_var_bounds[0],
                self.noise_var_bounds[0],
            ],
            hi: [
                time[1],
                self.lengthscale_bounds[1],
                self.signal_var_bounds[1],
                self.noise_var_bounds[1],
            ],
        }
    }
}

/// How many lengthscales the kernel has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Lengthscales {
    /// One for the time coordinate, one for the history values (default).
    #[default]
    Separate,
    /// One isotropic lengthscale (scikit-learn's isotropic Matern).
    Shared,
}

/// Prior mean of the GP in the original units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PriorMean {
    /// The last value of each pattern: the GP models `y_t - y_{t-1}` from
    /// the pattern, so far from the data it falls back to "last value"
    /// (worse than `window` on the traces: the increments are close to
    /// white noise, while the level GP smooths).
    Last,
    /// The mean of the training targets (the thesis's zero-mean GP on
    /// standardised targets, as scikit-learn's `normalize_y`; default).
    #[default]
    Window,
}

/// How the values are standardised before the GP sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Standardise {
    /// Mean and population std of every value the model holds (the `h + N`
    /// latest) for the inputs and the targets alike: the prior mean is the
    /// level of the whole buffer, steadier than that of the `N` targets
    /// (default; at N = h = 20 median MASE 0.916 -> 0.898 on the quality
    /// set, 0.935 -> 0.929 on the held-out set).
    #[default]
    Buffer,
    /// Targets by their own mean and std (scikit-learn's `normalize_y`),
    /// inputs by those of `window[h..]`: the reference fixtures' scaling.
    Targets,
}

//! Training patterns `[t, y_{t-h}, ..., y_{t-1}] -> y_t` built from a
//! window of raw values, scaled as [`Standardise`] says.

use super::config::{PriorMean, Standardise};

/// Scaled training data built from a window of raw values.
#[derive(Clone, Debug, PartialEq)]
pub struct Patterns {
    /// Input dimension `h + 1`.
    pub dim: usize,
    /// The training inputs' time column (row `r`'s input is `[t[r],
    /// xw[r..r + dim - 1]]`; [`Patterns::x`] spells them out).
    pub t: Vec<f64>,
    /// The window's values scaled as the inputs' history values: row `r`'s
    /// history is `xw[r..r + dim - 1]` (the inputs' history columns are a
    /// Hankel matrix of it) and the test input's is the last `dim - 1`.
    pub xw: Vec<f64>,
    /// Standardised targets.
    pub y: Vec<f64>,
    /// Mean used to scale the history values of the inputs.
    pub x_mean: f64,
    /// Scale used to scale the history values of the inputs.
    pub x_scale: f64,
    /// Mean of the (raw or residual) targets used for standardising.
    pub y_mean: f64,
    /// Population std of those targets (0 -> 1).
    pub y_scale: f64,
    /// Prior mean the targets are taken relative to.
    pub prior_mean: PriorMean,
}

fn mean_scale(v: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = v.clone().count().max(1) as f64;
    let mean = v.clone().sum::<f64>() / n;
    let sd = (v.map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt();
    // scikit-learn's `_handle_zeros_in_scale` (plus a relative guard)
    let scale = if sd.is_finite() && sd >= 10.0 * f64::EPSILON && sd > 1e-12 * mean.abs() {
        sd
    } else {
        1.0
    };
    (mean, scale)
}

/// Builds the history-kernel patterns of `window` (raw values, oldest
/// first) with [`Standardise::Targets`] (scikit-learn's `normalize_y`, as
/// the reference fixtures): see [`build_patterns_with`].
pub fn build_patterns(
    window: &[f64],
    h: usize,
    time_scale_steps: f64,
    prior_mean: PriorMean,
) -> Option<Patterns> {
    build_patterns_with(
        window,
        h,
        time_scale_steps,
        prior_mean,
        Standardise::Targets,
    )
}

/// Builds the history-kernel patterns of `window` (raw values, oldest
/// first). Training targets are `window[j]` for `j` in `h..len` (minus
/// `window[j-1]` with [`PriorMean::Last`]); inputs are `[(j - len) /
/// time_scale, (window[j-h..j] - m) / s]` and the test input is `[0,
/// (window[len-h..] - m) / s]`. With [`Standardise::Targets`], `m`, `s` are
/// the mean and population std of `window[h..]` and the targets are
/// standardised by their own mean and std; with [`Standardise::Buffer`],
/// `m`, `s` are those of the whole window and (prior mean `window`) the
/// targets use the same `m`, `s`. `None` when the window has fewer than
/// `h + 1` values or any is not finite.
pub fn build_patterns_with(
    window: &[f64],
    h: usize,
    time_scale_steps: f64,
    prior_mean: PriorMean,
    standardise: Standardise,
) -> Option<Patterns> {
    let mut p = Patterns::empty(prior_mean);
    p.rebuild(window, h, time_scale_steps, prior_mean, standardise)
        .then_some(p)
}

impl Patterns {
    /// The row-major training inputs (`n` rows of `dim`: time, then
    /// history), built from `t` and `xw`.
    pub fn x(&self) -> Vec<f64> {
        let h = self.dim.saturating_sub(1);
        let mut x = Vec::with_capacity(self.t.len() * self.dim);
        for (r, &t) in self.t.iter().enumerate() {
            x.push(t);
            x.extend_from_slice(&self.xw[r..r + h]);
        }
        x
    }

    /// The test input: the pattern that predicts the value after the
    /// window (time 0, then the window's last `dim - 1` scaled values).
    pub fn x_test(&self) -> Vec<f64> {
        let h = self.dim.saturating_sub(1);
        let mut x = Vec::with_capacity(self.dim);
        x.push(0.0);
        x.extend_from_slice(&self.xw[self.xw.len().saturating_sub(h)..]);
        x
    }

    /// No patterns yet: buffers for [`Patterns::rebuild`].
    pub fn empty(prior_mean: PriorMean) -> Self {
        Self {
            dim: 0,
            t: Vec::new(),
            xw: Vec::new(),
            y: Vec::new(),
            x_mean: 0.0,
            x_scale: 1.0,
            y_mean: 0.0,
            y_scale: 1.0,
            prior_mean,
        }
    }

    /// [`build_patterns_with`] into these buffers (no allocation once they
    /// have grown to the window's size); `false`, leaving them unspecified,
    /// when it would return `None`.
    pub fn rebuild(
        &mut self,
        window: &[f64],
        h: usize,
        time_scale_steps: f64,
        prior_mean: PriorMean,
        standardise: Standardise,
    ) -> bool {
        let len = window.len();
        if h == 0 || len < h + 1 || window.iter().any(|v| !v.is_finite()) {
            return false;
        }
        let buffer = standardise == Standardise::Buffer;
        let (x_mean, x_scale) = if buffer {
            mean_scale(window.iter().copied())
        } else {
            mean_scale(window[h..].iter().copied())
        };
        // raw targets first, standardised in place below
        self.y.clear();
        self.y.extend((h..len).map(|j| match prior_mean {
            PriorMean::Last => window[j] - window[j - 1],
            PriorMean::Window => window[j],
        }));
        let (y_mean, y_scale) = if buffer && prior_mean == PriorMean::Window {
            (x_mean, x_scale)
        } else {
            mean_scale(self.y.iter().copied())
        };
        let dim = h + 1;
        let ts = if time_scale_steps > 0.0 {
            time_scale_steps
        } else {
            1.0
        };
        self.xw.clear();
        self.xw
            .extend(window.iter().map(|v| (v - x_mean) / x_scale));
        self.t.clear();
        self.t
            .extend((h..len).map(|j| (j as f64 - len as f64) / ts));
        for v in &mut self.y {
            *v = (*v - y_mean) / y_scale;
        }
        self.dim = dim;
        self.x_mean = x_mean;
        self.x_scale = x_scale;
        self.y_mean = y_mean;
        self.y_scale = y_scale;
        self.prior_mean = prior_mean;
        true
    }
}

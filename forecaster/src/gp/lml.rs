//! GP regression math: kernels, log marginal likelihood with analytic
//! gradients, the L-BFGS hyperparameter fit (argmin) and the predictive.
//!
//! Hyperparameters are log-parameterised: `theta = [ln lengthscale,
//! ln signal_var, ln noise_var]`. The kernel matrix is
//! `K = signal_var * k(r / lengthscale) + (noise_var + jitter) * I`
//! where `jitter` starts at [`BASE_JITTER`] (scikit-learn's default `alpha`)
//! and grows tenfold on every failed Cholesky factorisation.

use std::cell::RefCell;

use argmin::core::{CostFunction, Executor, Gradient};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

/// Diagonal jitter always added (scikit-learn's `alpha` default).
pub const BASE_JITTER: f64 = 1e-10;
/// Largest jitter tried before a factorisation is declared failed.
pub const MAX_JITTER: f64 = 1e-2;
/// Penalty weight pulling parameters back inside their bounds.
const BOUND_PENALTY: f64 = 1e3;

/// Stationary kernel on the history patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum KernelKind {
    /// Matern 1/2: `exp(-r / l)` (thesis default, best on non-smooth series).
    #[default]
    Exponential,
    /// Squared exponential (RBF): `exp(-r^2 / (2 l^2))`.
    SquaredExponential,
}

impl KernelKind {
    /// Correlation at distance `r` for lengthscale `l`.
    #[inline]
    fn corr(self, r: f64, inv_l: f64) -> f64 {
        match self {
            KernelKind::Exponential => (-r * inv_l).exp(),
            KernelKind::SquaredExponential => {
                let u = r * inv_l;
                (-0.5 * u * u).exp()
            }
        }
    }

    /// d corr / d ln l, given the correlation value `c`.
    #[inline]
    fn dcorr_dlogl(self, r: f64, inv_l: f64, c: f64) -> f64 {
        match self {
            KernelKind::Exponential => c * r * inv_l,
            KernelKind::SquaredExponential => {
                let u = r * inv_l;
                c * u * u
            }
        }
    }
}

/// Hyperparameter bounds, natural (not log) scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub lo: [f64; 3],
    pub hi: [f64; 3],
}

impl Bounds {
    /// Log-scale bounds.
    pub fn log(&self) -> ([f64; 3], [f64; 3]) {
        (
            [self.lo[0].ln(), self.lo[1].ln(), self.lo[2].ln()],
            [self.hi[0].ln(), self.hi[1].ln(), self.hi[2].ln()],
        )
    }

    /// Clamps log parameters into the bounds.
    pub fn clamp_log(&self, theta: [f64; 3]) -> [f64; 3] {
        let (lo, hi) = self.log();
        let mut out = theta;
        for i in 0..3 {
            out[i] = if out[i].is_nan() {
                0.5 * (lo[i] + hi[i])
            } else {
                out[i].clamp(lo[i], hi[i])
            };
        }
        out
    }
}

/// A training set: pairwise distances of the (scaled) inputs and the
/// (standardised) targets.
#[derive(Clone, Debug)]
pub struct TrainSet {
    /// Number of training points.
    pub n: usize,
    /// Row-major `n x n` Euclidean distances.
    pub dist: Vec<f64>,
    /// Targets.
    pub y: DVector<f64>,
}

impl TrainSet {
    /// Builds the distance matrix of row-major inputs `x` (`n` rows of `d`).
    pub fn new(x: &[f64], d: usize, y: &[f64]) -> Self {
        let n = y.len();
        let mut dist = vec![0.0; n * n];
        for i in 0..n {
            let xi = &x[i * d..(i + 1) * d];
            for j in 0..i {
                let xj = &x[j * d..(j + 1) * d];
                let mut s = 0.0;
                for (a, b) in xi.iter().zip(xj) {
                    let t = a - b;
                    s += t * t;
                }
                let r = s.sqrt();
                dist[i * n + j] = r;
                dist[j * n + i] = r;
            }
        }
        Self {
            n,
            dist,
            y: DVector::from_column_slice(y),
        }
    }

    /// Median of the nonzero pairwise distances (1 when there is none).
    pub fn median_distance(&self) -> f64 {
        let mut v: Vec<f64> = Vec::with_capacity(self.n * self.n / 2);
        for i in 0..self.n {
            for j in 0..i {
                let r = self.dist[i * self.n + j];
                if r > 0.0 && r.is_finite() {
                    v.push(r);
                }
            }
        }
        if v.is_empty() {
            return 1.0;
        }
        let mid = v.len() / 2;
        let (_, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
        *m
    }
}

/// A factorised kernel matrix at given hyperparameters.
#[derive(Clone, Debug)]
pub struct Factor {
    /// Lower Cholesky factor of `K + noise I`.
    pub chol: nalgebra::Cholesky<f64, nalgebra::Dyn>,
    /// `(K + noise I)^-1 y`.
    pub alpha: DVector<f64>,
    /// Log marginal likelihood.
    pub lml: f64,
    /// Diagonal jitter that made the factorisation succeed.
    pub jitter: f64,
    /// Signal-only correlation matrix (without the variance), row-major.
    corr: Vec<f64>,
}

/// Factorises `K(theta)` with jitter retries; `None` when even
/// [`MAX_JITTER`] fails or a value is not finite.
pub fn factor(ts: &TrainSet, kernel: KernelKind, theta: [f64; 3]) -> Option<Factor> {
    let n = ts.n;
    if n == 0 {
        return None;
    }
    let inv_l = (-theta[0]).exp();
    let sf2 = theta[1].exp();
    let sn2 = theta[2].exp();
    if !(inv_l.is_finite() && sf2.is_finite() && sn2.is_finite()) {
        return None;
    }
    let mut corr = vec![0.0; n * n];
    for i in 0..n {
        corr[i * n + i] = 1.0;
        for j in 0..i {
            let c = kernel.corr(ts.dist[i * n + j], inv_l);
            corr[i * n + j] = c;
            corr[j * n + i] = c;
        }
    }
    let mut jitter = BASE_JITTER;
    loop {
        let k = DMatrix::from_fn(n, n, |i, j| {
            let base = sf2 * corr[i * n + j];
            if i == j {
                base + sn2 + jitter
            } else {
                base
            }
        });
        if let Some(chol) = k.cholesky() {
            let alpha = chol.solve(&ts.y);
            let l = chol.l_dirty();
            let mut logdet_half = 0.0;
            for i in 0..n {
                logdet_half += l[(i, i)].ln();
            }
            let lml = -0.5 * ts.y.dot(&alpha)
                - logdet_half
                - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
            if lml.is_finite() && alpha.iter().all(|a| a.is_finite()) {
                return Some(Factor {
                    chol,
                    alpha,
                    lml,
                    jitter,
                    corr,
                });
            }
        }
        jitter *= 10.0;
        if jitter > MAX_JITTER {
            tracing::debug!(
                ?theta,
                "GP kernel matrix not positive definite even with max jitter"
            );
            return None;
        }
    }
}

/// Log marginal likelihood and its gradient with respect to `theta`.
pub fn lml_and_grad(ts: &TrainSet, kernel: KernelKind, theta: [f64; 3]) -> Option<(f64, [f64; 3])> {
    let f = factor(ts, kernel, theta)?;
    let n = ts.n;
    let inv_l = (-theta[0]).exp();
    let sf2 = theta[1].exp();
    let sn2 = theta[2].exp();
    let kinv = f.chol.inverse();
    // W = alpha alpha^T - K^-1; dLML/dtheta_j = 0.5 * sum_ik W_ik dK_ik/dtheta_j.
    let mut g = [0.0f64; 3];
    for i in 0..n {
        let ai = f.alpha[i];
        // diagonal
        let wii = ai * ai - kinv[(i, i)];
        g[1] += 0.5 * wii * sf2;
        g[2] += 0.5 * wii * sn2;
        for j in 0..i {
            let w = ai * f.alpha[j] - kinv[(i, j)];
            let c = f.corr[i * n + j];
            // off-diagonal counted twice (symmetry)
            g[1] += w * sf2 * c;
            g[0] += w * sf2 * kernel.dcorr_dlogl(ts.dist[i * n + j], inv_l, c);
        }
    }
    Some((f.lml, g))
}

/// Predictive mean and latent variance (standardised space) at a test point
/// given its distances to the training inputs.
pub fn predict(
    f: &Factor,
    kernel: KernelKind,
    theta: [f64; 3],
    dist_to_train: &[f64],
) -> (f64, f64) {
    let inv_l = (-theta[0]).exp();
    let sf2 = theta[1].exp();
    let kstar = DVector::from_iterator(
        dist_to_train.len(),
        dist_to_train.iter().map(|&r| sf2 * kernel.corr(r, inv_l)),
    );
    let mean = kstar.dot(&f.alpha);
    let v = f.chol.l_dirty().solve_lower_triangular(&kstar);
    let reduce = match v {
        Some(v) => v.norm_squared(),
        None => 0.0,
    };
    let var = (sf2 - reduce).max(0.0);
    (mean, var)
}

/// Best point seen during an optimisation (argmin may stop with an error).
#[derive(Clone, Copy, Debug)]
struct Best {
    theta: [f64; 3],
    neg_lml: f64,
}

struct NegLml<'a> {
    ts: &'a TrainSet,
    kernel: KernelKind,
    bounds: ([f64; 3], [f64; 3]),
    best: &'a RefCell<Best>,
}

impl NegLml<'_> {
    /// Penalised negative LML and its gradient at `p`.
    fn eval(&self, p: &[f64]) -> (f64, [f64; 3]) {
        let (lo, hi) = self.bounds;
        let mut t = [0.0; 3];
        let mut pen = 0.0;
        let mut pen_g = [0.0; 3];
        for i in 0..3 {
            let v = p.get(i).copied().unwrap_or(0.0);
            let v = if v.is_finite() {
                v
            } else {
                0.5 * (lo[i] + hi[i])
            };
            t[i] = v.clamp(lo[i], hi[i]);
            let d = v - t[i];
            pen += 0.5 * BOUND_PENALTY * d * d;
            pen_g[i] = BOUND_PENALTY * d;
        }
        match lml_and_grad(self.ts, self.kernel, t) {
            Some((lml, g)) => {
                let cost = -lml + pen;
                {
                    let mut b = self.best.borrow_mut();
                    if -lml < b.neg_lml {
                        *b = Best {
                            theta: t,
                            neg_lml: -lml,
                        };
                    }
                }
                (cost, [-g[0] + pen_g[0], -g[1] + pen_g[1], -g[2] + pen_g[2]])
            }
            None => (1e10 + pen, pen_g),
        }
    }
}

impl CostFunction for NegLml<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, p: &Self::Param) -> Result<f64, argmin::core::Error> {
        Ok(self.eval(p).0)
    }
}

impl Gradient for NegLml<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, p: &Self::Param) -> Result<Vec<f64>, argmin::core::Error> {
        Ok(self.eval(p).1.to_vec())
    }
}

/// Result of a hyperparameter optimisation.
#[derive(Clone, Copy, Debug)]
pub struct FitResult {
    /// Log parameters, inside the bounds.
    pub theta: [f64; 3],
    /// Log marginal likelihood at `theta` (`-inf` when nothing factorised).
    pub lml: f64,
}

/// Maximises the LML with L-BFGS from `start` (log scale), at most
/// `max_iters` iterations. Never fails: returns the best point evaluated
/// (or the clamped start with `lml = -inf`).
pub fn optimise(
    ts: &TrainSet,
    kernel: KernelKind,
    bounds: &Bounds,
    start: [f64; 3],
    max_iters: u64,
    tol_grad: f64,
) -> FitResult {
    let start = bounds.clamp_log(start);
    let best = RefCell::new(Best {
        theta: start,
        neg_lml: f64::INFINITY,
    });
    let problem = NegLml {
        ts,
        kernel,
        bounds: bounds.log(),
        best: &best,
    };
    let linesearch = MoreThuenteLineSearch::new();
    let solver = LBFGS::new(linesearch, 5);
    let solver = match solver
        .with_tolerance_grad(tol_grad)
        .and_then(|s| s.with_tolerance_cost(1e-9))
    {
        Ok(s) => s,
        Err(_) => LBFGS::new(MoreThuenteLineSearch::new(), 5),
    };
    let res = Executor::new(problem, solver)
        .configure(|state| state.param(start.to_vec()).max_iters(max_iters))
        .timer(false)
        .run();
    if let Err(e) = &res {
        tracing::trace!(error = %e, "GP L-BFGS stopped early; keeping best point seen");
    }
    let b = best.into_inner();
    if b.neg_lml.is_finite() {
        FitResult {
            theta: b.theta,
            lml: -b.neg_lml,
        }
    } else {
        FitResult {
            theta: start,
            lml: f64::NEG_INFINITY,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> TrainSet {
        let x: Vec<f64> = (0..12)
            .map(|i| (i as f64 * 0.7).sin() + 0.1 * i as f64)
            .collect();
        let y: Vec<f64> = (0..12).map(|i| (i as f64 * 0.3).cos()).collect();
        TrainSet::new(&x, 1, &y)
    }

    #[test]
    fn analytic_gradient_matches_finite_differences() {
        let ts = toy();
        for kernel in [KernelKind::Exponential, KernelKind::SquaredExponential] {
            let theta = [0.1, -0.3, -2.0];
            let (_, g) = lml_and_grad(&ts, kernel, theta).expect("factorises");
            for j in 0..3 {
                let h = 1e-6;
                let mut tp = theta;
                tp[j] += h;
                let mut tm = theta;
                tm[j] -= h;
                let fp = factor(&ts, kernel, tp).expect("f").lml;
                let fm = factor(&ts, kernel, tm).expect("f").lml;
                let fd = (fp - fm) / (2.0 * h);
                assert!(
                    (fd - g[j]).abs() < 1e-5 * (1.0 + fd.abs()),
                    "{kernel:?} j={j}: fd {fd} vs {}",
                    g[j]
                );
            }
        }
    }

    #[test]
    fn optimiser_improves_lml() {
        let ts = toy();
        let bounds = Bounds {
            lo: [1e-2, 1e-3, 1e-6],
            hi: [1e3, 1e2, 1e1],
        };
        let start = [0.0, 0.0, 0.0];
        let l0 = factor(&ts, KernelKind::Exponential, start).expect("f").lml;
        let r = optimise(&ts, KernelKind::Exponential, &bounds, start, 100, 1e-6);
        assert!(r.lml >= l0, "{} < {l0}", r.lml);
        let (_, g) = lml_and_grad(&ts, KernelKind::Exponential, r.theta).expect("f");
        let (lo, hi) = bounds.log();
        for j in 0..3 {
            let at_bound = (r.theta[j] - lo[j]).abs() < 1e-6 || (r.theta[j] - hi[j]).abs() < 1e-6;
            assert!(at_bound || g[j].abs() < 1e-2, "grad {j} = {}", g[j]);
        }
    }

    #[test]
    fn duplicate_inputs_factor_with_jitter() {
        let x = vec![1.0; 5];
        let y = vec![0.0, 1.0, 0.0, 1.0, 0.0];
        let ts = TrainSet::new(&x, 1, &y);
        // tiny noise: correlation matrix of duplicates is singular
        for sf2 in [1.0f64, 1e4] {
            let f = factor(
                &ts,
                KernelKind::Exponential,
                [0.0, sf2.ln(), (1e-12f64).ln()],
            )
            .expect("jitter retry");
            assert!(f.jitter >= BASE_JITTER && f.jitter <= MAX_JITTER);
            assert!(f.lml.is_finite());
        }
        assert!(factor(&ts, KernelKind::Exponential, [0.0, f64::NAN, 0.0]).is_none());
    }
}

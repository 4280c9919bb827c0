//! GP regression math: kernels, log marginal likelihood with analytic
//! gradients, the L-BFGS hyperparameter fit (argmin) and the predictive.
//!
//! Inputs are patterns `[t, y_{t-h}, ..., y_{t-1}]`. The distance between two
//! patterns is `r = sqrt(dt^2 / l_t^2 + |dy|^2 / l_h^2)` with a time
//! lengthscale `l_t` and a history lengthscale `l_h` (tied, `l_t = l_h`, in
//! the isotropic mode that scikit-learn's isotropic Matern matches). The
//! kernel matrix is `K = signal_var * k(r) + (noise_var + jitter) I` with
//! `k(r) = exp(-r)` (Matern 1/2) or `exp(-r^2 / 2)` (squared exponential);
//! `jitter` starts at [`BASE_JITTER`] (scikit-learn's default `alpha`) and
//! grows tenfold on every failed Cholesky factorisation.
//!
//! Hyperparameters are log-parameterised, `theta = [ln l_t, ln l_h,
//! ln signal_var, ln noise_var]`, and kept inside bounds by optimising
//! unconstrained `u` with `theta = lo + (hi - lo) * sigmoid(u)`.

use std::cell::RefCell;

use argmin::core::{CostFunction, Executor, Gradient};
use argmin::solver::linesearch::condition::ArmijoCondition;
use argmin::solver::linesearch::BacktrackingLineSearch;
use argmin::solver::quasinewton::LBFGS;
use serde::{Deserialize, Serialize};

/// Diagonal jitter always added (scikit-learn's `alpha` default).
pub const BASE_JITTER: f64 = 1e-10;
/// Largest jitter tried before a factorisation is declared failed.
pub const MAX_JITTER: f64 = 1e-2;

/// Number of hyperparameters.
pub const NP: usize = 4;
/// Log hyperparameters `[ln l_t, ln l_h, ln signal_var, ln noise_var]`.
pub type Theta = [f64; NP];

/// Stationary kernel on the history patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum KernelKind {
    /// Matern 1/2: `exp(-r)` (thesis default, best on non-smooth series).
    #[default]
    Exponential,
    /// Squared exponential (RBF): `exp(-r^2 / 2)`.
    SquaredExponential,
}

impl KernelKind {
    /// Correlation at scaled squared distance `r2`.
    #[inline]
    fn corr(self, r2: f64) -> f64 {
        match self {
            KernelKind::Exponential => (-r2.sqrt()).exp(),
            KernelKind::SquaredExponential => (-0.5 * r2).exp(),
        }
    }

    /// `d corr / d ln l` for a lengthscale whose scaled squared-distance
    /// part is `part2` (so `r2 = part2 + other`), given `c = corr(r2)`.
    #[inline]
    fn dcorr(self, r2: f64, part2: f64, c: f64) -> f64 {
        match self {
            KernelKind::Exponential => {
                if r2 > 0.0 {
                    c * part2 / r2.sqrt()
                } else {
                    0.0
                }
            }
            KernelKind::SquaredExponential => c * part2,
        }
    }
}

/// Hyperparameter bounds, natural (not log) scale, in `theta` order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub lo: Theta,
    pub hi: Theta,
}

impl Bounds {
    /// Log-scale bounds.
    pub fn log(&self) -> (Theta, Theta) {
        (self.lo.map(f64::ln), self.hi.map(f64::ln))
    }

    /// Clamps log parameters into the bounds (NaN -> mid-range).
    pub fn clamp_log(&self, theta: Theta) -> Theta {
        let (lo, hi) = self.log();
        let mut out = theta;
        for i in 0..NP {
            out[i] = if out[i].is_nan() {
                0.5 * (lo[i] + hi[i])
            } else {
                out[i].clamp(lo[i], hi[i])
            };
        }
        out
    }
}

/// Squared time and history distances of a query to each training input.
pub fn query_distances(x: &[f64], dim: usize, q: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut dt2 = Vec::with_capacity(x.len() / dim.max(1));
    let mut dh2 = Vec::with_capacity(x.len() / dim.max(1));
    for row in x.chunks_exact(dim) {
        let t = row[0] - q[0];
        dt2.push(t * t);
        dh2.push(
            row[1..]
                .iter()
                .zip(&q[1..])
                .map(|(a, b)| (a - b) * (a - b))
                .sum(),
        );
    }
    (dt2, dh2)
}

/// A training set: pairwise squared time and history distances of the
/// (scaled) inputs and the (standardised) targets.
#[derive(Clone, Debug)]
pub struct TrainSet {
    /// Number of training points.
    pub n: usize,
    /// Row-major `n x n` squared time distances.
    pub dt2: Vec<f64>,
    /// Row-major `n x n` squared history distances.
    pub dh2: Vec<f64>,
    /// Targets.
    pub y: Vec<f64>,
}

impl TrainSet {
    /// Builds the distance matrices of row-major inputs `x` (`n` rows of
    /// `d`, column 0 = time).
    pub fn new(x: &[f64], d: usize, y: &[f64]) -> Self {
        let n = y.len();
        let mut dt2 = vec![0.0; n * n];
        let mut dh2 = vec![0.0; n * n];
        for i in 0..n {
            let xi = &x[i * d..(i + 1) * d];
            for j in 0..i {
                let xj = &x[j * d..(j + 1) * d];
                let t = xi[0] - xj[0];
                let mut s = 0.0;
                for (a, b) in xi[1..].iter().zip(&xj[1..]) {
                    let u = a - b;
                    s += u * u;
                }
                dt2[i * n + j] = t * t;
                dt2[j * n + i] = t * t;
                dh2[i * n + j] = s;
                dh2[j * n + i] = s;
            }
        }
        Self {
            n,
            dt2,
            dh2,
            y: y.to_vec(),
        }
    }

    fn median_of(&self, f: impl Fn(usize) -> f64) -> f64 {
        let mut v: Vec<f64> = Vec::with_capacity(self.n * self.n / 2);
        for i in 0..self.n {
            for j in 0..i {
                let r = f(i * self.n + j).sqrt();
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

    /// Median nonzero time distance (1 when none).
    pub fn median_time_distance(&self) -> f64 {
        self.median_of(|k| self.dt2[k])
    }

    /// Median nonzero history distance (1 when none).
    pub fn median_history_distance(&self) -> f64 {
        self.median_of(|k| self.dh2[k])
    }

    /// Median nonzero full (unscaled) distance (1 when none).
    pub fn median_distance(&self) -> f64 {
        self.median_of(|k| self.dt2[k] + self.dh2[k])
    }
}

fn cholesky_in_place(a: &mut [f64], n: usize) -> bool {
    for j in 0..n {
        let rj = j * n;
        let mut d = a[rj + j];
        for k in 0..j {
            d -= a[rj + k] * a[rj + k];
        }
        if !(d > 0.0 && d.is_finite()) {
            return false;
        }
        let djj = d.sqrt();
        a[rj + j] = djj;
        let inv = 1.0 / djj;
        for i in j + 1..n {
            let ri = i * n;
            let mut s = a[ri + j];
            for k in 0..j {
                s -= a[ri + k] * a[rj + k];
            }
            a[ri + j] = s * inv;
        }
    }
    true
}

/// Solves `L x = b` in place (`l` row-major lower triangular).
fn solve_lower(l: &[f64], n: usize, b: &mut [f64]) {
    for i in 0..n {
        let ri = i * n;
        let mut s = b[i];
        for k in 0..i {
            s -= l[ri + k] * b[k];
        }
        b[i] = s / l[ri + i];
    }
}

/// Solves `L^T x = b` in place.
fn solve_upper_t(l: &[f64], n: usize, b: &mut [f64]) {
    for i in (0..n).rev() {
        let mut s = b[i];
        for k in i + 1..n {
            s -= l[k * n + i] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
}

/// A factorised kernel matrix at given hyperparameters.
#[derive(Clone, Debug)]
pub struct Factor {
    /// Training points.
    pub n: usize,
    /// Row-major lower Cholesky factor of `K + (noise + jitter) I`
    /// (only the lower triangle is meaningful).
    pub l: Vec<f64>,
    /// `(K + noise I)^-1 y`.
    pub alpha: Vec<f64>,
    /// Log marginal likelihood.
    pub lml: f64,
    /// Diagonal jitter that made the factorisation succeed.
    pub jitter: f64,
    /// Signal-only correlation matrix (without the variance), row-major.
    corr: Vec<f64>,
}

/// Scaled squared distance.
#[inline]
fn r2(dt2: f64, dh2: f64, it2: f64, ih2: f64) -> f64 {
    dt2 * it2 + dh2 * ih2
}

/// Factorises `K(theta)` with jitter retries; `None` when even
/// [`MAX_JITTER`] fails or a value is not finite.
pub fn factor(ts: &TrainSet, kernel: KernelKind, theta: Theta) -> Option<Factor> {
    let n = ts.n;
    if n == 0 {
        return None;
    }
    let it2 = (-2.0 * theta[0]).exp();
    let ih2 = (-2.0 * theta[1]).exp();
    let sf2 = theta[2].exp();
    let sn2 = theta[3].exp();
    if !(it2.is_finite() && ih2.is_finite() && sf2.is_finite() && sn2.is_finite()) {
        return None;
    }
    let mut corr = vec![0.0; n * n];
    for i in 0..n {
        corr[i * n + i] = 1.0;
        for j in 0..i {
            let k = i * n + j;
            let c = kernel.corr(r2(ts.dt2[k], ts.dh2[k], it2, ih2));
            corr[k] = c;
            corr[j * n + i] = c;
        }
    }
    let mut jitter = BASE_JITTER;
    let mut l = vec![0.0; n * n];
    loop {
        for i in 0..n {
            for j in 0..=i {
                l[i * n + j] = sf2 * corr[i * n + j];
            }
            l[i * n + i] += sn2 + jitter;
        }
        if cholesky_in_place(&mut l, n) {
            let mut alpha = ts.y.clone();
            solve_lower(&l, n, &mut alpha);
            let quad: f64 = alpha.iter().map(|v| v * v).sum();
            solve_upper_t(&l, n, &mut alpha);
            let logdet_half: f64 = (0..n).map(|i| l[i * n + i].ln()).sum();
            let lml =
                -0.5 * quad - logdet_half - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
            if lml.is_finite() && alpha.iter().all(|a| a.is_finite()) {
                return Some(Factor {
                    n,
                    l,
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

/// `(K + noise I)^-1` (full, row-major) from a factor.
fn inverse(f: &Factor) -> Vec<f64> {
    let n = f.n;
    let l = &f.l;
    // M = L^-1 (lower triangular), row-major
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        m[i * n + i] = 1.0 / l[i * n + i];
        for j in 0..i {
            let mut s = 0.0;
            for k in j..i {
                s -= l[i * n + k] * m[k * n + j];
            }
            m[i * n + j] = s / l[i * n + i];
        }
    }
    // K^-1 = M^T M: (i, j) = sum_{k >= max(i, j)} M[k][i] M[k][j]
    let mut kinv = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = 0.0;
            for k in i..n {
                s += m[k * n + i] * m[k * n + j];
            }
            kinv[i * n + j] = s;
            kinv[j * n + i] = s;
        }
    }
    kinv
}

/// Log marginal likelihood and its gradient with respect to `theta`.
pub fn lml_and_grad(ts: &TrainSet, kernel: KernelKind, theta: Theta) -> Option<(f64, Theta)> {
    let f = factor(ts, kernel, theta)?;
    let n = ts.n;
    let it2 = (-2.0 * theta[0]).exp();
    let ih2 = (-2.0 * theta[1]).exp();
    let sf2 = theta[2].exp();
    let sn2 = theta[3].exp();
    let kinv = inverse(&f);
    // W = alpha alpha^T - K^-1; dLML/dtheta_j = 0.5 * sum_ik W_ik dK_ik/dtheta_j.
    let mut g = [0.0f64; NP];
    for i in 0..n {
        let ai = f.alpha[i];
        let wii = ai * ai - kinv[i * n + i];
        g[2] += 0.5 * wii * sf2;
        g[3] += 0.5 * wii * sn2;
        for j in 0..i {
            let k = i * n + j;
            let w = ai * f.alpha[j] - kinv[k];
            let c = f.corr[k];
            let pt = ts.dt2[k] * it2;
            let ph = ts.dh2[k] * ih2;
            let rr = pt + ph;
            // off-diagonal terms counted twice (symmetry)
            let ws = w * sf2;
            g[2] += ws * c;
            g[0] += ws * kernel.dcorr(rr, pt, c);
            g[1] += ws * kernel.dcorr(rr, ph, c);
        }
    }
    Some((f.lml, g))
}

/// Predictive mean and latent variance (standardised space) at a test point
/// given its squared time and history distances to the training inputs.
pub fn predict(
    f: &Factor,
    kernel: KernelKind,
    theta: Theta,
    dt2: &[f64],
    dh2: &[f64],
) -> (f64, f64) {
    let it2 = (-2.0 * theta[0]).exp();
    let ih2 = (-2.0 * theta[1]).exp();
    let sf2 = theta[2].exp();
    let mut v: Vec<f64> = dt2
        .iter()
        .zip(dh2)
        .map(|(&a, &b)| sf2 * kernel.corr(r2(a, b, it2, ih2)))
        .collect();
    let mean: f64 = v.iter().zip(&f.alpha).map(|(a, b)| a * b).sum();
    solve_lower(&f.l, f.n, &mut v);
    let reduce: f64 = v.iter().map(|x| x * x).sum();
    let var = (sf2 - reduce).max(0.0);
    (mean, var)
}

/// Best point seen during an optimisation (argmin may stop with an error).
#[derive(Clone, Copy, Debug)]
struct Best {
    theta: Theta,
    neg_lml: f64,
}

/// One cached evaluation: parameters, cost, gradient.
type Evaluation = (Vec<f64>, f64, Vec<f64>);

struct NegLml<'a> {
    ts: &'a TrainSet,
    kernel: KernelKind,
    bounds: (Theta, Theta),
    /// Tie the time and history lengthscales (optimise 3 parameters).
    shared: bool,
    best: &'a RefCell<Best>,
    /// Last evaluation (argmin asks for cost and gradient separately).
    cache: RefCell<Option<Evaluation>>,
    /// Evaluations done and allowed: argmin's inner line search has no
    /// iteration cap, so the budget bounds the work of one optimisation.
    evals: std::cell::Cell<usize>,
    budget: usize,
}

/// Index into `theta` of optimiser coordinate `i`.
fn coord_map(shared: bool) -> &'static [&'static [usize]] {
    if shared {
        &[&[0, 1], &[2], &[3]]
    } else {
        &[&[0], &[1], &[2], &[3]]
    }
}

impl NegLml<'_> {
    /// Negative LML (per training point) and its gradient in the
    /// unconstrained coordinates `p`.
    fn eval(&self, p: &[f64]) -> Result<(f64, Vec<f64>), argmin::core::Error> {
        if let Some((k, c, g)) = &*self.cache.borrow() {
            if k.as_slice() == p {
                return Ok((*c, g.clone()));
            }
        }
        if self.evals.get() >= self.budget {
            return Err(argmin::core::Error::msg(
                "GP hyperparameter fit: evaluation budget exhausted",
            ));
        }
        self.evals.set(self.evals.get() + 1);
        let out = self.eval_uncached(p);
        *self.cache.borrow_mut() = Some((p.to_vec(), out.0, out.1.clone()));
        Ok(out)
    }

    fn eval_uncached(&self, p: &[f64]) -> (f64, Vec<f64>) {
        let (lo, hi) = self.bounds;
        let map = coord_map(self.shared);
        let mut t = [0.0; NP];
        let mut dt_du = [0.0; NP];
        for (ci, idx) in map.iter().enumerate() {
            let u = p.get(ci).copied().unwrap_or(0.0);
            let u = if u.is_finite() {
                u.clamp(-40.0, 40.0)
            } else {
                0.0
            };
            let sg = 1.0 / (1.0 + (-u).exp());
            for &i in idx.iter() {
                t[i] = (lo[i] + (hi[i] - lo[i]) * sg).clamp(lo[i], hi[i]);
                dt_du[i] = (hi[i] - lo[i]) * sg * (1.0 - sg);
            }
        }
        match lml_and_grad(self.ts, self.kernel, t) {
            Some((lml, g)) => {
                {
                    let mut b = self.best.borrow_mut();
                    if -lml < b.neg_lml {
                        *b = Best {
                            theta: t,
                            neg_lml: -lml,
                        };
                    }
                }
                // per-point scale keeps the first (memoryless) L-BFGS step short
                let w = 1.0 / self.ts.n as f64;
                let grad = map
                    .iter()
                    .map(|idx| idx.iter().map(|&i| -g[i] * dt_du[i] * w).sum())
                    .collect();
                (-lml * w, grad)
            }
            None => (1e10, vec![0.0; map.len()]),
        }
    }
}

/// Maps log parameters inside `(lo, hi)` to the unconstrained optimiser
/// coordinates (the first index of each coordinate's group).
fn to_unconstrained(theta: Theta, lo: Theta, hi: Theta, shared: bool) -> Vec<f64> {
    coord_map(shared)
        .iter()
        .map(|idx| {
            let i = idx[0];
            let f = ((theta[i] - lo[i]) / (hi[i] - lo[i])).clamp(1e-9, 1.0 - 1e-9);
            (f / (1.0 - f)).ln()
        })
        .collect()
}

impl CostFunction for NegLml<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, p: &Self::Param) -> Result<f64, argmin::core::Error> {
        Ok(self.eval(p)?.0)
    }
}

impl Gradient for NegLml<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, p: &Self::Param) -> Result<Vec<f64>, argmin::core::Error> {
        Ok(self.eval(p)?.1)
    }
}

/// Result of a hyperparameter optimisation.
#[derive(Clone, Copy, Debug)]
pub struct FitResult {
    /// Log parameters, inside the bounds.
    pub theta: Theta,
    /// Log marginal likelihood at `theta` (`-inf` when nothing factorised).
    pub lml: f64,
}

/// Maximises the LML with L-BFGS (argmin, backtracking Armijo line search)
/// from `start` (log scale), at most `max_iters` iterations and `3 *
/// max_iters + 5` LML evaluations; with `shared`
/// the two lengthscales stay tied (to `start[0]`'s group). Never fails:
/// returns the best point evaluated (or the clamped start with `lml = -inf`).
pub fn optimise(
    ts: &TrainSet,
    kernel: KernelKind,
    bounds: &Bounds,
    start: Theta,
    shared: bool,
    max_iters: u64,
    tol_grad: f64,
) -> FitResult {
    let mut start = bounds.clamp_log(start);
    if shared {
        start[1] = start[0];
    }
    let (lo, hi) = bounds.log();
    let u0 = to_unconstrained(start, lo, hi, shared);
    let best = RefCell::new(Best {
        theta: start,
        neg_lml: f64::INFINITY,
    });
    let problem = NegLml {
        ts,
        kernel,
        bounds: (lo, hi),
        shared,
        best: &best,
        cache: RefCell::new(None),
        evals: std::cell::Cell::new(0),
        budget: (3 * max_iters as usize).saturating_add(5),
    };
    let fail = FitResult {
        theta: start,
        lml: f64::NEG_INFINITY,
    };
    let Ok(linesearch) =
        ArmijoCondition::new(1e-4).and_then(|c| BacktrackingLineSearch::new(c).rho(0.5))
    else {
        return fail;
    };
    let Ok(solver) = LBFGS::new(linesearch, 5)
        .with_tolerance_grad(tol_grad)
        .and_then(|s| s.with_tolerance_cost(1e-10))
    else {
        return fail;
    };
    let res = Executor::new(problem, solver)
        .configure(|state| state.param(u0).max_iters(max_iters))
        .timer(false)
        .run();
    if let Err(e) = &res {
        tracing::trace!(error = %e, "GP L-BFGS stopped early; keeping the best point seen");
    }
    let b = best.into_inner();
    if b.neg_lml.is_finite() {
        FitResult {
            theta: b.theta,
            lml: -b.neg_lml,
        }
    } else {
        fail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> TrainSet {
        let x: Vec<f64> = (0..12)
            .flat_map(|i| {
                [
                    i as f64 * 0.1,
                    (i as f64 * 0.7).sin() + 0.1 * i as f64,
                    (i as f64 * 0.2).cos(),
                ]
            })
            .collect();
        let y: Vec<f64> = (0..12).map(|i| (i as f64 * 0.3).cos()).collect();
        TrainSet::new(&x, 3, &y)
    }

    fn bounds() -> Bounds {
        Bounds {
            lo: [1e-2, 1e-2, 1e-3, 1e-6],
            hi: [1e3, 1e3, 1e2, 1e1],
        }
    }

    #[test]
    fn analytic_gradient_matches_finite_differences() {
        let ts = toy();
        for kernel in [KernelKind::Exponential, KernelKind::SquaredExponential] {
            let theta = [0.1, -0.2, -0.3, -2.0];
            let (_, g) = lml_and_grad(&ts, kernel, theta).expect("factorises");
            for j in 0..NP {
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
    fn optimiser_improves_lml_and_reaches_stationary_point() {
        let ts = toy();
        let b = bounds();
        for shared in [false, true] {
            let start = [0.0; NP];
            let l0 = factor(&ts, KernelKind::Exponential, start).expect("f").lml;
            let r = optimise(&ts, KernelKind::Exponential, &b, start, shared, 200, 1e-8);
            assert!(r.lml >= l0, "{} < {l0}", r.lml);
            if shared {
                assert_eq!(r.theta[0], r.theta[1]);
            }
            let (_, g) = lml_and_grad(&ts, KernelKind::Exponential, r.theta).expect("f");
            let (lo, hi) = b.log();
            let gs = if shared {
                [g[0] + g[1], 0.0, g[2], g[3]]
            } else {
                g
            };
            for j in 0..NP {
                let near_bound =
                    (r.theta[j] - lo[j]).abs() < 0.5 || (r.theta[j] - hi[j]).abs() < 0.5;
                assert!(
                    near_bound || gs[j].abs() < 1e-2,
                    "shared={shared} grad {j} = {} at {:?}",
                    gs[j],
                    r.theta
                );
            }
        }
    }

    #[test]
    fn duplicate_inputs_factor_with_jitter() {
        let x = vec![1.0; 10];
        let y = vec![0.0, 1.0, 0.0, 1.0, 0.0];
        let ts = TrainSet::new(&x, 2, &y);
        for sf2 in [1.0f64, 1e4] {
            let f = factor(
                &ts,
                KernelKind::Exponential,
                [0.0, 0.0, sf2.ln(), (1e-12f64).ln()],
            )
            .expect("jitter retry");
            assert!(f.jitter >= BASE_JITTER && f.jitter <= MAX_JITTER);
            assert!(f.lml.is_finite());
        }
        assert!(factor(&ts, KernelKind::Exponential, [0.0, 0.0, f64::NAN, 0.0]).is_none());
    }
}

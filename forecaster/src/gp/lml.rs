//! GP regression math: kernels, log marginal likelihood with analytic
//! gradients, the L-BFGS hyperparameter fit and the predictive.
//!
//! The fit uses our own projected L-BFGS in log space rather than argmin's:
//! it honours box bounds (like L-BFGS-B), runs on a reusable workspace with
//! no allocation per evaluation and keeps its curvature pairs from one
//! online step to the next, which the warm refits rely on.
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
//! ln signal_var, ln noise_var]`, and kept inside box bounds by a projected
//! L-BFGS ([`optimise`], as scikit-learn's L-BFGS-B in log space). The
//! evaluations reuse the buffers of an [`Evaluator`] (no allocation per
//! evaluation).

use serde::{Deserialize, Serialize};

use super::simd::{self, simd_op};
pub use super::train::{hankel_query_distances, TrainSet};

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
    #[inline(always)]
    fn corr(self, r2: f64) -> f64 {
        match self {
            KernelKind::Exponential => exp_neg(-r2.sqrt()),
            KernelKind::SquaredExponential => exp_neg(-0.5 * r2),
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

/// `e^x` for `x <= 0` (clamped at -708), branch-free so loops over it
/// vectorise: Cody-Waite reduction by `ln 2` and a degree-12 Taylor
/// polynomial on `|f| <= ln(2) / 2` (relative error a few ulp).
#[inline(always)]
fn exp_neg(x: f64) -> f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    let x = x.clamp(-708.0, 0.0);
    let t = x * LOG2E + MAGIC;
    let k = t - MAGIC;
    let f = x - k * LN2_HI - k * LN2_LO;
    let mut p = 1.0 / 479_001_600.0;
    p = p * f + 1.0 / 39_916_800.0;
    p = p * f + 1.0 / 3_628_800.0;
    p = p * f + 1.0 / 362_880.0;
    p = p * f + 1.0 / 40_320.0;
    p = p * f + 1.0 / 5_040.0;
    p = p * f + 1.0 / 720.0;
    p = p * f + 1.0 / 120.0;
    p = p * f + 1.0 / 24.0;
    p = p * f + 1.0 / 6.0;
    p = p * f + 0.5;
    p = p * f + 1.0;
    p = p * f + 1.0;
    // the low mantissa bits of t hold k (two's complement); 2^k by exponent bits
    let ki = t.to_bits().wrapping_sub(MAGIC.to_bits()) as i64;
    p * f64::from_bits(((ki + 1023) as u64) << 52)
}

/// `a -= f * b` elementwise.
#[inline(always)]
fn axpy_neg(a: &mut [f64], f: f64, b: &[f64]) {
    let n = a.len().min(b.len());
    let (a, b) = (&mut a[..n], &b[..n]);
    for k in 0..n {
        a[k] -= f * b[k];
    }
}

/// In-place right-looking Cholesky of the upper triangle of a row-major
/// `n x n` matrix: `A = U^T U` (every update is a contiguous axpy).
#[inline(always)]
fn cholesky_upper(u: &mut [f64], n: usize) -> bool {
    for k in 0..n {
        let rk = k * n;
        let d = u[rk + k];
        if !(d > 0.0 && d.is_finite()) {
            return false;
        }
        let s = d.sqrt();
        u[rk + k] = s;
        let inv = 1.0 / s;
        for v in &mut u[rk + k + 1..rk + n] {
            *v *= inv;
        }
        let (top, rest) = u.split_at_mut((k + 1) * n);
        let row_k = &top[rk..rk + n];
        for i in k + 1..n {
            let f = row_k[i];
            let ri = (i - k - 1) * n;
            axpy_neg(&mut rest[ri + i..ri + n], f, &row_k[i..n]);
        }
    }
    true
}

/// Solves `U^T x = b` in place (forward substitution, axpy form).
#[inline(always)]
fn solve_ut(u: &[f64], n: usize, b: &mut [f64]) {
    for k in 0..n {
        let rk = k * n;
        let xk = b[k] / u[rk + k];
        b[k] = xk;
        axpy_neg(&mut b[k + 1..n], xk, &u[rk + k + 1..rk + n]);
    }
}

/// Solves `U x = b` in place (back substitution).
#[inline(always)]
fn solve_u(u: &[f64], n: usize, b: &mut [f64]) {
    for i in (0..n).rev() {
        let ri = i * n;
        let s = b[i] - dot(&u[ri + i + 1..ri + n], &b[i + 1..n]);
        b[i] = s / u[ri + i];
    }
}

/// Dot product (4 accumulators, so the compiler can vectorise it).
#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 4];
    let mut ca = a.chunks_exact(4);
    let mut cb = b.chunks_exact(4);
    for (x, y) in (&mut ca).zip(&mut cb) {
        acc[0] += x[0] * y[0];
        acc[1] += x[1] * y[1];
        acc[2] += x[2] * y[2];
        acc[3] += x[3] * y[3];
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        s += x * y;
    }
    s
}

/// A factorised kernel matrix at given hyperparameters.
#[derive(Clone, Debug, Default)]
pub struct Factor {
    /// Training points.
    pub n: usize,
    /// Row-major upper Cholesky factor `U` of `K + (noise + jitter) I =
    /// U^T U` (only the upper triangle is meaningful).
    pub u: Vec<f64>,
    /// `(K + noise I)^-1 y`.
    pub alpha: Vec<f64>,
    /// Log marginal likelihood.
    pub lml: f64,
    /// Diagonal jitter that made the factorisation succeed.
    pub jitter: f64,
}

/// Buffers of an [`Evaluator`], kept between fits so that refits do not
/// allocate (they grow to the largest training set seen).
#[derive(Clone, Debug, Default)]
pub struct Workspace {
    rr: Vec<f64>,
    corr: Vec<f64>,
    u: Vec<f64>,
    alpha: Vec<f64>,
    m: Vec<f64>,
    kinv: Vec<f64>,
}

/// Reusable buffers for LML (and gradient) evaluations on one training
/// set: no allocation per evaluation. Pair quantities live in the upper
/// triangle of row-major `n x n` buffers (`[i * n + j]`, `i < j`).
#[derive(Clone, Debug)]
pub struct Evaluator<'a> {
    ts: &'a TrainSet,
    kernel: KernelKind,
    /// Scaled distance `r` (exponential) or `r^2` (squared exponential).
    rr: Vec<f64>,
    /// Correlation `k(r)`.
    corr: Vec<f64>,
    /// Cholesky factor `U`.
    u: Vec<f64>,
    alpha: Vec<f64>,
    /// `M = U^-T = L^-1` (lower, row-major).
    m: Vec<f64>,
    /// `K^-1` (upper).
    kinv: Vec<f64>,
    theta: Theta,
    lml: f64,
    jitter: f64,
    /// Whether `u`/`alpha` hold a successful factorisation at `theta`.
    valid: bool,
    /// The gradient at `theta`, once computed.
    grad: Option<Theta>,
    /// Evaluations requested (a repeat of the last successful point
    /// reuses its factorisation).
    pub evals: usize,
}

impl<'a> Evaluator<'a> {
    /// Training points.
    pub fn n(&self) -> usize {
        self.ts.n
    }

    /// Buffers for `ts`.
    pub fn new(ts: &'a TrainSet, kernel: KernelKind) -> Self {
        Self::with_workspace(ts, kernel, Workspace::default())
    }

    /// Evaluator for `ts` on reused buffers.
    pub fn with_workspace(ts: &'a TrainSet, kernel: KernelKind, ws: Workspace) -> Self {
        let nn = ts.n * ts.n;
        let Workspace {
            mut rr,
            mut corr,
            mut u,
            mut alpha,
            mut m,
            mut kinv,
        } = ws;
        for b in [&mut rr, &mut corr, &mut u, &mut m, &mut kinv] {
            b.resize(nn, 0.0);
        }
        alpha.resize(ts.n, 0.0);
        Self {
            ts,
            kernel,
            rr,
            corr,
            u,
            alpha,
            m,
            kinv,
            theta: [f64::NAN; NP],
            lml: f64::NEG_INFINITY,
            jitter: BASE_JITTER,
            valid: false,
            grad: None,
            evals: 0,
        }
    }

    /// Gives the buffers back for the next fit.
    pub fn into_workspace(self) -> Workspace {
        Workspace {
            rr: self.rr,
            corr: self.corr,
            u: self.u,
            alpha: self.alpha,
            m: self.m,
            kinv: self.kinv,
        }
    }

    /// Factorises `K(theta)` (jitter retries) and returns the LML; `None`
    /// when even [`MAX_JITTER`] fails or a value is not finite.
    pub fn lml(&mut self, theta: Theta) -> Option<f64> {
        simd::dispatch(Lml { ev: self, theta })
    }

    #[inline(always)]
    fn lml_at(&mut self, theta: Theta) -> Option<f64> {
        self.evals += 1;
        if self.valid && theta == self.theta {
            // the same point again (an optimisation restarted where the
            // last one ended): the factor and gradient are still here
            return Some(self.lml);
        }
        self.valid = false;
        self.grad = None;
        let ts = self.ts;
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
        let exponential = self.kernel == KernelKind::Exponential;
        for i in 0..n {
            let span = i * n + i + 1..i * n + n;
            let (dt, dh) = (&ts.dt2[span.clone()], &ts.dh2[span.clone()]);
            let rr = &mut self.rr[span.clone()];
            let corr = &mut self.corr[span];
            let len = rr.len();
            let (corr, dt, dh) = (&mut corr[..len], &dt[..len], &dh[..len]);
            if exponential {
                for k in 0..len {
                    rr[k] = (dt[k] * it2 + dh[k] * ih2).sqrt();
                }
                for k in 0..len {
                    corr[k] = exp_neg(-rr[k]);
                }
            } else {
                for k in 0..len {
                    rr[k] = dt[k] * it2 + dh[k] * ih2;
                }
                for k in 0..len {
                    corr[k] = exp_neg(-0.5 * rr[k]);
                }
            }
        }
        let mut jitter = BASE_JITTER;
        loop {
            for i in 0..n {
                let ri = i * n;
                self.u[ri + i] = sf2 + sn2 + jitter;
                for (uv, &c) in self.u[ri + i + 1..ri + n]
                    .iter_mut()
                    .zip(&self.corr[ri + i + 1..ri + n])
                {
                    *uv = sf2 * c;
                }
            }
            if cholesky_upper(&mut self.u, n) {
                self.alpha.copy_from_slice(&ts.y);
                solve_ut(&self.u, n, &mut self.alpha);
                let quad = dot(&self.alpha, &self.alpha);
                solve_u(&self.u, n, &mut self.alpha);
                let logdet_half: f64 = (0..n).map(|i| self.u[i * n + i].ln()).sum();
                let lml =
                    -0.5 * quad - logdet_half - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
                if lml.is_finite() && self.alpha.iter().all(|a| a.is_finite()) {
                    self.theta = theta;
                    self.lml = lml;
                    self.jitter = jitter;
                    self.valid = true;
                    return Some(lml);
                }
            }
            jitter *= 10.0;
            if jitter > MAX_JITTER {
                tracing::trace!(
                    ?theta,
                    "GP kernel matrix not positive definite even with max jitter"
                );
                return None;
            }
        }
    }

    /// Gradient of the LML with respect to `theta` at the last successful
    /// [`Evaluator::lml`] point (`None` when there is none).
    pub fn grad(&mut self) -> Option<Theta> {
        simd::dispatch(Grad { ev: self })
    }

    #[inline(always)]
    fn grad_at(&mut self) -> Option<Theta> {
        if !self.valid {
            return None;
        }
        if self.grad.is_some() {
            return self.grad;
        }
        let n = self.ts.n;
        let theta = self.theta;
        let it2 = (-2.0 * theta[0]).exp();
        let ih2 = (-2.0 * theta[1]).exp();
        let sf2 = theta[2].exp();
        let sn2 = theta[3].exp();
        // M = U^-T (lower, row-major), from the last column back:
        // M[j][i] = -(1 / U_ii) * sum_{k=i+1..=j} U[i][k] M[j][k]
        let (u, m) = (&self.u, &mut self.m);
        for i in (0..n).rev() {
            let ri = i * n;
            let inv = 1.0 / u[ri + i];
            m[ri + i] = inv;
            let urow = &u[ri + i + 1..ri + n];
            for j in i + 1..n {
                let rj = j * n;
                let len = j - i;
                let (a, b) = (&urow[..len], &m[rj + i + 1..rj + j + 1]);
                let mut s = 0.0;
                for k in 0..len {
                    s += a[k] * b[k];
                }
                m[rj + i] = -inv * s;
            }
        }
        // K^-1 = V V^T = sum_k m_k m_k^T (upper triangle)
        let kinv = &mut self.kinv;
        kinv.fill(0.0);
        for k in 0..n {
            let mk = &self.m[k * n..k * n + k + 1];
            for i in 0..=k {
                let f = mk[i];
                axpy_neg(&mut kinv[i * n + i..i * n + k + 1], -f, &mk[i..]);
            }
        }
        // W = alpha alpha^T - K^-1; dLML/dtheta = 0.5 * sum W dK (pairs twice)
        let exponential = self.kernel == KernelKind::Exponential;
        let mut g = [0.0f64; NP];
        for i in 0..n {
            let ri = i * n;
            let ai = self.alpha[i];
            let wii = ai * ai - kinv[ri + i];
            g[2] += 0.5 * wii * sf2;
            g[3] += 0.5 * wii * sn2;
            let span = ri + i + 1..ri + n;
            let (mut gs, mut gt, mut gh) = (0.0, 0.0, 0.0);
            let len = n - i - 1;
            let ki = &kinv[span.clone()];
            let aj = &self.alpha[i + 1..n];
            let c = &self.corr[span.clone()];
            let rr = &self.rr[span.clone()];
            let dt = &self.ts.dt2[span.clone()];
            let dh = &self.ts.dh2[span];
            let (ki, aj, c, rr, dt, dh) = (
                &ki[..len],
                &aj[..len],
                &c[..len],
                &rr[..len],
                &dt[..len],
                &dh[..len],
            );
            if exponential {
                for k in 0..len {
                    let wc = (ai * aj[k] - ki[k]) * c[k];
                    gs += wc;
                    // r > 0 for distinct inputs; duplicates contribute nothing
                    let q = if rr[k] > 0.0 { wc / rr[k] } else { 0.0 };
                    gt += q * dt[k];
                    gh += q * dh[k];
                }
            } else {
                for k in 0..len {
                    let wc = (ai * aj[k] - ki[k]) * c[k];
                    gs += wc;
                    gt += wc * dt[k];
                    gh += wc * dh[k];
                }
            }
            g[2] += gs * sf2;
            g[0] += gt * it2 * sf2;
            g[1] += gh * ih2 * sf2;
        }
        self.grad = Some(g);
        self.grad
    }

    /// The factor at the last successful evaluation.
    pub fn factor(&self) -> Option<Factor> {
        let mut f = Factor::default();
        self.factor_into(&mut f).then_some(f)
    }

    /// Copies the factor at the last successful evaluation into `f`'s
    /// buffers; `false` (and `f` untouched) when there is none.
    pub fn factor_into(&self, f: &mut Factor) -> bool {
        if !self.valid {
            return false;
        }
        f.n = self.ts.n;
        f.u.clone_from(&self.u);
        f.alpha.clone_from(&self.alpha);
        f.lml = self.lml;
        f.jitter = self.jitter;
        true
    }

    /// Log hyperparameters of the last successful evaluation.
    pub fn theta(&self) -> Option<Theta> {
        self.valid.then_some(self.theta)
    }
}

// The hot loops as operations compiled for every instruction set
// ([`simd`]).
simd_op!(struct Lml<'e, 'a> { ev: &'e mut Evaluator<'a>, theta: Theta } -> Option<f64> {
    ev.lml_at(theta)
});
simd_op!(struct Grad<'e, 'a> { ev: &'e mut Evaluator<'a> } -> Option<Theta> {
    ev.grad_at()
});

/// Factorises `K(theta)` with jitter retries; `None` when even
/// [`MAX_JITTER`] fails or a value is not finite.
pub fn factor(ts: &TrainSet, kernel: KernelKind, theta: Theta) -> Option<Factor> {
    let mut ev = Evaluator::new(ts, kernel);
    ev.lml(theta)?;
    ev.factor()
}

/// Log marginal likelihood and its gradient with respect to `theta`.
pub fn lml_and_grad(ts: &TrainSet, kernel: KernelKind, theta: Theta) -> Option<(f64, Theta)> {
    let mut ev = Evaluator::new(ts, kernel);
    let lml = ev.lml(theta)?;
    Some((lml, ev.grad()?))
}

/// Predictive mean and latent variance (standardised space) at a test point
/// given its squared time and history distances to the training inputs;
/// `v` is a buffer (its contents are overwritten).
#[inline(always)]
pub fn predict(
    f: &Factor,
    kernel: KernelKind,
    theta: Theta,
    dt2: &[f64],
    dh2: &[f64],
    v: &mut Vec<f64>,
) -> (f64, f64) {
    let it2 = (-2.0 * theta[0]).exp();
    let ih2 = (-2.0 * theta[1]).exp();
    let sf2 = theta[2].exp();
    v.clear();
    v.extend(
        dt2.iter()
            .zip(dh2)
            .map(|(&a, &b)| sf2 * kernel.corr(a * it2 + b * ih2)),
    );
    let mean = dot(v, &f.alpha);
    solve_ut(&f.u, f.n, v);
    let reduce = dot(v, v);
    let var = (sf2 - reduce).max(0.0);
    (mean, var)
}

pub use super::optimise::{
    optimise, optimise_with, FitResult, HyperPrior, LbfgsMemory, OptOptions,
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    /// Patterns of a random window (length, lags, prior mean).
    fn random_patterns() -> impl Strategy<Value = super::super::Patterns> {
        (1usize..24, 1usize..32, any::<bool>()).prop_flat_map(|(h, n, last)| {
            prop::collection::vec(-50.0f64..50.0, h + n).prop_map(move |w| {
                let prior = if last {
                    super::super::PriorMean::Last
                } else {
                    super::super::PriorMean::Window
                };
                super::super::build_patterns_with(
                    &w,
                    h,
                    20.0,
                    prior,
                    super::super::Standardise::Buffer,
                )
                .expect("h + n finite values")
            })
        })
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|a| a.to_bits()).collect()
    }

    proptest! {
        /// The distances from the patterns' Hankel structure, dispatched
        /// (AVX2 where the CPU has it) or not, are the row-by-row sums to
        /// the bit; so are the dispatched LML and gradient.
        #[test]
        fn vectorised_and_scalar_agree_bit_for_bit(
            p in random_patterns(),
            theta in prop::array::uniform4(-4.0f64..3.0),
            q_hist in prop::collection::vec(-3.0f64..3.0, 24),
        ) {
            let x = p.x();
            let rows = TrainSet::new(&x, p.dim, &p.y);
            let mut wide = TrainSet::default();
            wide.rebuild_patterns(&p);
            let mut narrow = TrainSet::default();
            narrow.rebuild_patterns_scalar(&p);
            for ts in [&wide, &narrow] {
                prop_assert_eq!(bits(&ts.dt2), bits(&rows.dt2));
                prop_assert_eq!(bits(&ts.dh2), bits(&rows.dh2));
                prop_assert_eq!(bits(&ts.y), bits(&rows.y));
            }
            let mut q = vec![0.35];
            q.extend_from_slice(&q_hist[..p.dim - 1]);
            let (mut dt_rows, mut dh_rows, mut dt, mut dh) = Default::default();
            super::super::train::query_distances(&x, p.dim, &q, &mut dt_rows, &mut dh_rows);
            hankel_query_distances(&p.t, &p.xw, &q, &mut dt, &mut dh);
            prop_assert_eq!(bits(&dt), bits(&dt_rows));
            prop_assert_eq!(bits(&dh), bits(&dh_rows));
            for kernel in [KernelKind::Exponential, KernelKind::SquaredExponential] {
                let mut a = Evaluator::new(&rows, kernel);
                let mut b = Evaluator::new(&rows, kernel);
                let la = a.lml(theta).map(f64::to_bits);
                let lb = simd::scalar(Lml { ev: &mut b, theta }).map(f64::to_bits);
                prop_assert_eq!(la, lb);
                let ga = a.grad().map(|g| g.map(f64::to_bits));
                let gb = simd::scalar(Grad { ev: &mut b }).map(|g| g.map(f64::to_bits));
                prop_assert_eq!(ga, gb);
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

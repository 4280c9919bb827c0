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
fn solve_ut(u: &[f64], n: usize, b: &mut [f64]) {
    for k in 0..n {
        let rk = k * n;
        let xk = b[k] / u[rk + k];
        b[k] = xk;
        axpy_neg(&mut b[k + 1..n], xk, &u[rk + k + 1..rk + n]);
    }
}

/// Solves `U x = b` in place (back substitution).
fn solve_u(u: &[f64], n: usize, b: &mut [f64]) {
    for i in (0..n).rev() {
        let ri = i * n;
        let s = b[i] - dot(&u[ri + i + 1..ri + n], &b[i + 1..n]);
        b[i] = s / u[ri + i];
    }
}

/// Dot product (4 accumulators, so the compiler can vectorise it).
#[inline]
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
#[derive(Clone, Debug)]
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
    /// Factorisations done.
    pub evals: usize,
}

impl<'a> Evaluator<'a> {
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
        self.valid = false;
        self.evals += 1;
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
        if !self.valid {
            return None;
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
        Some(g)
    }

    /// The factor at the last successful evaluation.
    pub fn factor(&self) -> Option<Factor> {
        self.valid.then(|| Factor {
            n: self.ts.n,
            u: self.u.clone(),
            alpha: self.alpha.clone(),
            lml: self.lml,
            jitter: self.jitter,
        })
    }

    /// Log hyperparameters of the last successful evaluation.
    pub fn theta(&self) -> Option<Theta> {
        self.valid.then_some(self.theta)
    }
}

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
        .map(|(&a, &b)| sf2 * kernel.corr(a * it2 + b * ih2))
        .collect();
    let mean = dot(&v, &f.alpha);
    solve_ut(&f.u, f.n, &mut v);
    let reduce = dot(&v, &v);
    let var = (sf2 - reduce).max(0.0);
    (mean, var)
}

/// Result of a hyperparameter optimisation.
#[derive(Clone, Copy, Debug)]
pub struct FitResult {
    /// Log parameters, inside the bounds.
    pub theta: Theta,
    /// Log marginal likelihood at `theta` (`-inf` when nothing factorised).
    pub lml: f64,
    /// The maximised objective: the LML plus the log prior when there is
    /// one (`-inf` when nothing factorised).
    pub objective: f64,
    /// LML evaluations (factorisations) spent.
    pub evals: usize,
}

/// L-BFGS memory (pairs kept).
const MEMORY: usize = 5;
/// Largest change of one log parameter in one line-search step.
const MAX_STEP: f64 = 3.0;
/// Backtracking steps per line search.
const MAX_BACKTRACK: usize = 8;

/// Optimiser coordinates -> log parameters.
#[inline]
fn to_theta(x: &[f64; NP], shared: bool) -> Theta {
    if shared {
        [x[0], x[0], x[1], x[2]]
    } else {
        *x
    }
}

/// LML gradient -> optimiser coordinates (of the negative LML per point).
#[inline]
fn to_coord_grad(g: &Theta, shared: bool, scale: f64) -> [f64; NP] {
    if shared {
        [-(g[0] + g[1]) * scale, -g[2] * scale, -g[3] * scale, 0.0]
    } else {
        g.map(|v| -v * scale)
    }
}

/// Maximises the LML by a projected L-BFGS in log space inside the bounds
/// (the active set: a parameter at a bound whose gradient points outwards
/// is held), with a backtracking Armijo line search, from `start` (log
/// scale), at most `max_iters` iterations and `3 * max_iters + 5` LML
/// evaluations; stops when the projected gradient of the negative LML per
/// training point is below `tol_grad` or the relative decrease below 1e-10.
/// With `shared` the two lengthscales stay tied (to `start[0]`). Never
/// fails: returns the best point evaluated (or the clamped start with `lml
/// = -inf` when nothing factorised).
pub fn optimise(
    ts: &TrainSet,
    kernel: KernelKind,
    bounds: &Bounds,
    start: Theta,
    shared: bool,
    max_iters: u64,
    tol_grad: f64,
) -> FitResult {
    let mut ev = Evaluator::new(ts, kernel);
    let opts = OptOptions {
        max_iters: max_iters as usize,
        tol_grad,
        ..OptOptions::default()
    };
    optimise_with(&mut ev, bounds, start, shared, &opts, None, None)
}

/// Stopping rules of [`optimise_with`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OptOptions {
    /// Most L-BFGS iterations.
    pub max_iters: usize,
    /// Most LML evaluations (`None`: `3 * max_iters + 5`).
    pub max_evals: Option<usize>,
    /// Stop when the projected gradient of the negative objective per
    /// training point is below this (infinity norm).
    pub tol_grad: f64,
    /// Stop when an iteration decreases the objective per training point
    /// by less than `tol_rel * max(1, |objective|)`.
    pub tol_rel: f64,
}

impl Default for OptOptions {
    fn default() -> Self {
        Self {
            max_iters: 15,
            max_evals: None,
            tol_grad: 1e-5,
            tol_rel: 1e-10,
        }
    }
}

/// L-BFGS curvature pairs. Passed to [`optimise_with`] they start the
/// search with the inverse-Hessian estimate of an earlier one (a warm
/// refit on a window shifted by one sample has nearly the same curvature)
/// and receive the pairs of this one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LbfgsMemory {
    s: [[f64; NP]; MEMORY],
    y: [[f64; NP]; MEMORY],
    rho: [f64; MEMORY],
    len: usize,
    head: usize,
}

/// Gaussian prior on the log hyperparameters (MAP instead of ML-II):
/// the objective becomes `LML - 0.5 * inv_var * |theta - mean|^2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HyperPrior {
    /// Prior mean of `theta`.
    pub mean: Theta,
    /// `1 / sd^2` of every log parameter.
    pub inv_var: f64,
}

impl HyperPrior {
    /// Log prior density (up to a constant) and its gradient.
    fn eval(&self, theta: &Theta) -> (f64, Theta) {
        let mut v = 0.0;
        let mut g = [0.0; NP];
        for i in 0..NP {
            let d = theta[i] - self.mean[i];
            v -= 0.5 * self.inv_var * d * d;
            g[i] = -self.inv_var * d;
        }
        (v, g)
    }
}

/// [`optimise`] reusing an [`Evaluator`]'s buffers.
pub fn optimise_with(
    ev: &mut Evaluator<'_>,
    bounds: &Bounds,
    start: Theta,
    shared: bool,
    opts: &OptOptions,
    prior: Option<&HyperPrior>,
    mem: Option<&mut LbfgsMemory>,
) -> FitResult {
    let evals0 = ev.evals;
    // log posterior (up to a constant) and its gradient at the last evaluation
    let post = |theta: &Theta, lml: f64, g: Option<Theta>| -> (f64, Option<Theta>) {
        match prior {
            None => (lml, g),
            Some(p) => {
                let (v, pg) = p.eval(theta);
                (lml + v, g.map(|g| std::array::from_fn(|i| g[i] + pg[i])))
            }
        }
    };
    let mut start = bounds.clamp_log(start);
    if shared {
        start[1] = start[0];
    }
    let (tlo, thi) = bounds.log();
    let m = if shared { 3 } else { NP };
    let (lo, hi, x0) = if shared {
        (
            [tlo[0].max(tlo[1]), tlo[2], tlo[3], 0.0],
            [thi[0].min(thi[1]), thi[2], thi[3], 0.0],
            [start[0], start[2], start[3], 0.0],
        )
    } else {
        (tlo, thi, start)
    };
    let fail = FitResult {
        theta: start,
        lml: f64::NEG_INFINITY,
        objective: f64::NEG_INFINITY,
        evals: 0,
    };
    let n = ev.ts.n;
    if n == 0 {
        return fail;
    }
    let w = 1.0 / n as f64;
    let budget = opts
        .max_evals
        .unwrap_or_else(|| opts.max_iters.saturating_mul(3).saturating_add(5));
    let clamp = |x: [f64; NP]| {
        let mut o = x;
        for i in 0..m {
            o[i] = o[i].clamp(lo[i], hi[i]);
        }
        o
    };
    let mut x = clamp(x0);
    let Some(l0) = ev.lml(to_theta(&x, shared)) else {
        return FitResult {
            evals: ev.evals - evals0,
            ..fail
        };
    };
    let (p0, Some(g0)) = post(&to_theta(&x, shared), l0, ev.grad()) else {
        return fail;
    };
    let mut lml_x = l0;
    let mut f = -p0 * w;
    let mut g = to_coord_grad(&g0, shared, w);
    let mut local = LbfgsMemory::default();
    let mem = match mem {
        Some(m) => m,
        None => &mut local,
    };
    let LbfgsMemory {
        s: s_mem,
        y: y_mem,
        rho: rho_mem,
        len: mem_len,
        head: mem_head,
    } = mem;
    let dotm = |a: &[f64; NP], b: &[f64; NP]| (0..m).map(|i| a[i] * b[i]).sum::<f64>();
    let inf_norm = |a: &[f64; NP]| (0..m).fold(0.0f64, |acc, i| acc.max(a[i].abs()));
    for _ in 0..opts.max_iters {
        let mut pg = g;
        for i in 0..m {
            if (x[i] <= lo[i] && g[i] > 0.0) || (x[i] >= hi[i] && g[i] < 0.0) {
                pg[i] = 0.0;
            }
        }
        if inf_norm(&pg) < opts.tol_grad {
            break;
        }
        // two-loop recursion on the free coordinates
        let mut d = pg;
        let mut a_hist = [0.0f64; MEMORY];
        for k in 0..*mem_len {
            let idx = (*mem_head + MEMORY - 1 - k) % MEMORY;
            let a = rho_mem[idx] * dotm(&s_mem[idx], &d);
            a_hist[idx] = a;
            for i in 0..m {
                d[i] -= a * y_mem[idx][i];
            }
        }
        if *mem_len > 0 {
            let last = (*mem_head + MEMORY - 1) % MEMORY;
            let gamma = dotm(&s_mem[last], &y_mem[last]) / dotm(&y_mem[last], &y_mem[last]);
            for v in d.iter_mut().take(m) {
                *v *= gamma;
            }
        }
        for k in (0..*mem_len).rev() {
            let idx = (*mem_head + MEMORY - 1 - k) % MEMORY;
            let b = rho_mem[idx] * dotm(&y_mem[idx], &d);
            for i in 0..m {
                d[i] += (a_hist[idx] - b) * s_mem[idx][i];
            }
        }
        for i in 0..m {
            d[i] = if pg[i] == 0.0 { 0.0 } else { -d[i] };
        }
        let mut dg = dotm(&d, &pg);
        if !(dg < 0.0 && dg.is_finite()) {
            *mem_len = 0;
            d = pg.map(|v| -v);
            dg = dotm(&d, &pg);
        }
        let mut step = if *mem_len == 0 {
            (1.0 / inf_norm(&d)).min(1.0)
        } else {
            1.0
        };
        let dmax = inf_norm(&d) * step;
        if dmax > MAX_STEP {
            step *= MAX_STEP / dmax;
        }
        let mut accepted = None;
        for _ in 0..MAX_BACKTRACK {
            if ev.evals - evals0 >= budget {
                break;
            }
            let mut xn = x;
            for i in 0..m {
                xn[i] = x[i] + step * d[i];
            }
            let xn = clamp(xn);
            let mut dx = [0.0; NP];
            for i in 0..m {
                dx[i] = xn[i] - x[i];
            }
            let pred = dotm(&g, &dx);
            if pred >= 0.0 {
                break;
            }
            match ev.lml(to_theta(&xn, shared)) {
                Some(ln) => {
                    let fnew = -post(&to_theta(&xn, shared), ln, None).0 * w;
                    if fnew <= f + 1e-4 * pred {
                        accepted = Some((xn, fnew, ln));
                        break;
                    }
                    // safeguarded quadratic interpolation along the step
                    let q = 2.0 * (fnew - f - pred);
                    let t = if q > 0.0 {
                        (-pred / q).clamp(0.1, 0.5)
                    } else {
                        0.5
                    };
                    step *= t;
                }
                None => step *= 0.25,
            }
        }
        let Some((xn, fnew, lnew)) = accepted else {
            if *mem_len > 0 && ev.evals - evals0 < budget {
                // retry from steepest descent
                *mem_len = 0;
                continue;
            }
            break;
        };
        let (_, Some(gl)) = post(&to_theta(&xn, shared), lnew, ev.grad()) else {
            break;
        };
        let gn = to_coord_grad(&gl, shared, w);
        let mut sv = [0.0; NP];
        let mut yv = [0.0; NP];
        for i in 0..m {
            sv[i] = xn[i] - x[i];
            yv[i] = gn[i] - g[i];
        }
        let sy = dotm(&sv, &yv);
        if sy > 1e-12 * dotm(&yv, &yv).max(1e-300) {
            s_mem[*mem_head] = sv;
            y_mem[*mem_head] = yv;
            rho_mem[*mem_head] = 1.0 / sy;
            *mem_head = (*mem_head + 1) % MEMORY;
            *mem_len = (*mem_len + 1).min(MEMORY);
        }
        let decrease = f - fnew;
        x = xn;
        f = fnew;
        lml_x = lnew;
        g = gn;
        if decrease <= opts.tol_rel * f.abs().max(1.0) || ev.evals - evals0 >= budget {
            break;
        }
    }
    FitResult {
        theta: to_theta(&x, shared),
        lml: lml_x,
        objective: -f / w,
        evals: ev.evals - evals0,
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

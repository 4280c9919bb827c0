//! Fitting one ARIMA(p, d, q) model: CSS starting values, then exact
//! Gaussian maximum likelihood through the Kalman filter, as R's `arima` /
//! statsforecast's `arima(method = "CSS-ML")` do.
//!
//! * The AR part is optimised in the PACF space (`tanh` + Durbin-Levinson,
//!   R's `partrans`), so every ML candidate is stationary; the MA part is
//!   optimised as is, and non-invertible results are rejected by the root
//!   check of the order search (as statsforecast's `myarima`).
//! * A constant enters as a regression term like statsforecast: an intercept
//!   when `d = 0`, a drift (`beta * t`, `t = 1..n`) when `d = 1`, nothing
//!   when `d = 2`.

use super::config::Optimizer;
use super::kalman::{arma_likelihood, psi_weights, SsModel, MAX_R};
use super::optim::{bfgs, OptOptions};
use super::scipy_bfgs::minimize_bfgs;
use super::ArimaError;

/// Early stop of the SciPy-path BFGS on a relative f improvement (0 = off,
/// as SciPy: with a badly scaled intercept the steps improve f very little
/// while the intercept still moves, so any positive value stops too early).
const SCIPY_FTOL: f64 = 0.0;

/// One fitted ARIMA(p, d, q) model, possibly with a constant.
#[derive(Clone, Debug)]
pub struct ArimaFit {
    pub(crate) p: usize,
    pub(crate) d: usize,
    pub(crate) q: usize,
    pub(crate) constant: bool,
    pub(crate) ar: Vec<f64>,
    pub(crate) ma: Vec<f64>,
    /// Intercept (d = 0) or drift per step (d = 1).
    pub(crate) beta: Option<f64>,
    pub(crate) sigma2: f64,
    pub(crate) sigma2_ml: f64,
    pub(crate) loglik: f64,
    pub(crate) aic: f64,
    pub(crate) aicc: f64,
    /// Number of samples the model was fitted on.
    pub(crate) n: usize,
    /// Filter state at the end of the series.
    pub(crate) model: SsModel,
    /// A constant series: forecasts are the value with zero std.
    pub(crate) constant_series: Option<f64>,
}

impl ArimaFit {
    /// The order `(p, d, q)`.
    pub fn order(&self) -> (usize, usize, usize) {
        (self.p, self.d, self.q)
    }

    /// True when the model has a constant: an intercept (d = 0) or a drift
    /// (d = 1).
    pub fn has_constant(&self) -> bool {
        self.constant
    }

    /// AR coefficients `phi_1..phi_p` (`y_t = sum phi_i y_{t-i} + ...`).
    pub fn ar(&self) -> &[f64] {
        &self.ar
    }

    /// MA coefficients `theta_1..theta_q` (`... + e_t + sum theta_j e_{t-j}`).
    pub fn ma(&self) -> &[f64] {
        &self.ma
    }

    /// Intercept (d = 0) or drift per step (d = 1), when the model has one.
    pub fn constant_coef(&self) -> Option<f64> {
        self.beta
    }

    /// Innovation variance used for intervals: the residual sum of squares
    /// over `n - d - npar + 1`, as statsforecast's `myarima`.
    pub fn sigma2(&self) -> f64 {
        self.sigma2
    }

    /// Maximum-likelihood innovation variance (`ssq / (n - d)`).
    pub fn sigma2_ml(&self) -> f64 {
        self.sigma2_ml
    }

    /// Exact Gaussian log-likelihood.
    pub fn log_likelihood(&self) -> f64 {
        self.loglik
    }

    /// Akaike information criterion.
    pub fn aic(&self) -> f64 {
        self.aic
    }

    /// Small-sample corrected AIC.
    pub fn aicc(&self) -> f64 {
        self.aicc
    }

    /// Number of samples the model was fitted on.
    pub fn n_obs(&self) -> usize {
        self.n
    }

    fn regression_at(&self, t: usize) -> f64 {
        match self.beta {
            Some(b) if self.d == 0 => b,
            Some(b) => b * t as f64,
            None => 0.0,
        }
    }

    /// Forecasts for steps 1..=h as `(mean, std)`: the mean from the Kalman
    /// filter state at the end of the series, the std from the psi-weights,
    /// `Var[e_t(k)] = sigma2 * sum_{j<k} psi_j^2` (thesis 4.2.1).
    pub fn forecast(&self, h: usize) -> Vec<(f64, f64)> {
        if let Some(v) = self.constant_series {
            return vec![(v, 0.0); h];
        }
        let psi = psi_weights(&self.ar, &self.ma, self.d, h);
        let means = self.model.forecast(h);
        let mut acc = 0.0;
        means
            .iter()
            .enumerate()
            .map(|(k, (m, _))| {
                acc += psi[k] * psi[k];
                (
                    m + self.regression_at(self.n + k + 1),
                    (self.sigma2 * acc).max(0.0).sqrt(),
                )
            })
            .collect()
    }

    /// Forecasts with the std from the Kalman forecast covariance instead of
    /// the psi-weights (what R / statsforecast report; it adds the remaining
    /// state uncertainty at the end of the series).
    pub fn forecast_kalman(&self, h: usize) -> Vec<(f64, f64)> {
        if let Some(v) = self.constant_series {
            return vec![(v, 0.0); h];
        }
        self.model
            .forecast(h)
            .iter()
            .enumerate()
            .map(|(k, (m, v))| {
                (
                    m + self.regression_at(self.n + k + 1),
                    (self.sigma2 * v).max(0.0).sqrt(),
                )
            })
            .collect()
    }
}

/// What to fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    pub p: usize,
    pub d: usize,
    pub q: usize,
    pub constant: bool,
}

/// Starting coefficients for a warm refit.
#[derive(Clone, Debug)]
pub(crate) struct Warm<'a> {
    pub ar: &'a [f64],
    pub ma: &'a [f64],
    pub beta: Option<f64>,
}

/// R's `partrans`: maps unconstrained values to the coefficients of a
/// stationary AR polynomial (tanh to PACF, then Durbin-Levinson).
pub(crate) fn partrans(raw: &[f64], out: &mut [f64]) {
    let p = raw.len();
    let mut work = [0.0; MAX_R];
    for j in 0..p {
        out[j] = raw[j].tanh();
        work[j] = out[j];
    }
    for j in 1..p {
        let a = out[j];
        for k in 0..j {
            work[k] -= a * out[j - k - 1];
        }
        out[..j].copy_from_slice(&work[..j]);
    }
}

/// R's `invpartrans`: AR coefficients to the unconstrained values. Returns
/// `false` when the AR polynomial is not stationary (a PACF outside (-1, 1)).
pub(crate) fn invpartrans(phi: &[f64], out: &mut [f64]) -> bool {
    let p = phi.len();
    let mut work = [0.0; MAX_R];
    out[..p].copy_from_slice(phi);
    work[..p].copy_from_slice(phi);
    for j in (1..p).rev() {
        let a = out[j];
        if !(a.abs() < 1.0) {
            return false;
        }
        for k in 0..j {
            work[k] = (out[k] + a * out[j - k - 1]) / (1.0 - a * a);
        }
        out[..j].copy_from_slice(&work[..j]);
    }
    for v in out[..p].iter_mut() {
        if !(v.abs() < 1.0) {
            return false;
        }
        *v = v.atanh();
    }
    out[..p].iter().all(|v| v.is_finite())
}

/// True when all roots of `1 - sum a_i z^i` lie strictly outside the circle
/// of radius `rho` (Schur-Cohn via the Durbin-Levinson PACF).
pub(crate) fn roots_outside(a: &[f64], rho: f64) -> bool {
    let mut last = None;
    for (i, v) in a.iter().enumerate() {
        if v.abs() > 0.0 {
            last = Some(i);
        }
    }
    let Some(last) = last else { return true };
    let scaled: Vec<f64> = a[..=last]
        .iter()
        .enumerate()
        .map(|(i, v)| v * rho.powi(i as i32 + 1))
        .collect();
    let mut out = vec![0.0; scaled.len()];
    invpartrans(&scaled, &mut out)
}

/// CSS objective `0.5 * ln(ssq / nu)` of R's `ARIMA_CSS` on the already
/// differenced, regression-adjusted series `w` (length n, the first `d`
/// entries unused).
fn css_value(w: &[f64], d: usize, phi: &[f64], theta: &[f64], resid: &mut [f64]) -> f64 {
    let n = w.len();
    let p = phi.len();
    let q = theta.len();
    let ncond = d + p;
    if ncond >= n {
        return f64::NAN;
    }
    let mut ssq = 0.0;
    for v in resid[..ncond].iter_mut() {
        *v = 0.0;
    }
    for l in ncond..n {
        let mut tmp = w[l];
        for j in 0..p {
            tmp -= phi[j] * w[l - j - 1];
        }
        let jm = (l - ncond).min(q);
        for j in 0..jm {
            tmp -= theta[j] * resid[l - j - 1];
        }
        resid[l] = tmp;
        ssq += tmp * tmp;
    }
    let res = ssq / (n - ncond) as f64;
    if res > 0.0 && res.is_finite() {
        0.5 * res.ln()
    } else {
        f64::NAN
    }
}

/// Differences `x` in place `d` times, R style (w[l] -= w[l-1] from the end).
fn diff_in_place(w: &mut [f64], d: usize) {
    for _ in 0..d {
        for l in (1..w.len()).rev() {
            w[l] -= w[l - 1];
        }
    }
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, var.sqrt())
}

/// Refits `old`'s order on `x`, warm-started from its coefficients, with
/// the fast optimiser (`tight`: tight tolerances).
pub(crate) fn refit_from(
    x: &[f64],
    old: &ArimaFit,
    max_iter: usize,
    tight: bool,
) -> Result<ArimaFit, ArimaError> {
    let spec = Spec {
        p: old.p,
        d: old.d,
        q: old.q,
        constant: old.constant,
    };
    let warm = Warm {
        ar: &old.ar,
        ma: &old.ma,
        beta: old.beta,
    };
    fit_arima(x, spec, Some(warm), None, max_iter, Optimizer::Fast, tight)
}

/// Fits one model. `warm` skips the CSS stage and starts ML from the given
/// coefficients (falling back to a cold fit when they are not stationary).
/// `fixed_beta` fixes the constant instead of estimating it.
pub(crate) fn fit_arima(
    x: &[f64],
    spec: Spec,
    warm: Option<Warm<'_>>,
    fixed_beta: Option<f64>,
    max_iter: usize,
    optimizer: Optimizer,
    tight: bool,
) -> Result<ArimaFit, ArimaError> {
    let Spec { p, d, q, constant } = spec;
    let n = x.len();
    if p.max(q + 1) > MAX_R || d > 2 {
        return Err(ArimaError::FitFailed(format!(
            "order ({p},{d},{q}) too large"
        )));
    }
    if n <= d {
        return Err(ArimaError::FitFailed(format!(
            "too few observations ({n}) for d = {d}"
        )));
    }
    let has_reg = constant && d <= 1;
    // regression column
    let xreg: Vec<f64> = if !has_reg {
        Vec::new()
    } else if d == 0 {
        vec![1.0; n]
    } else {
        (1..=n).map(|t| t as f64).collect()
    };
    // OLS starting value and scale of the regression coefficient
    let (beta0, beta_scale) = if has_reg {
        if d == 0 {
            let (m, sd) = mean_sd(x);
            (m, sd / (n as f64).sqrt())
        } else {
            let dx: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
            let (m, sd) = mean_sd(&dx);
            (m, sd / (dx.len() as f64).sqrt())
        }
    } else {
        (0.0, 1.0)
    };
    let beta_scale = if beta_scale.is_finite() && beta_scale > 0.0 {
        beta_scale
    } else {
        beta0.abs().max(1.0) * 1e-3
    };
    // Cold fits reproduce statsforecast (SciPy BFGS on the raw coefficient,
    // starting at the OLS value); warm refits use our own BFGS on the
    // coefficient scaled by its OLS standard error.
    let cold = warm.is_none() && optimizer == Optimizer::Reference;
    let (beta0, beta_scale, ols_beta) = if cold {
        (0.0, 1.0, beta0)
    } else {
        (beta0, beta_scale, 0.0)
    };
    let free_reg = has_reg && fixed_beta.is_none();
    let nar = p + q;
    let k = nar + usize::from(free_reg);
    let beta_of = |u: &[f64]| -> Option<f64> {
        if !has_reg {
            None
        } else if let Some(b) = fixed_beta {
            Some(b)
        } else {
            Some(beta0 + beta_scale * u[nar])
        }
    };

    let mut work = vec![0.0; n];
    let mut resid = vec![0.0; n];

    // Starting values in the natural space: [phi, theta, u]
    let mut init = vec![0.0; k];
    if free_reg {
        init[nar] = ols_beta;
    }
    let mut do_css = true;
    if let Some(w) = &warm {
        if w.ar.len() == p && w.ma.len() == q {
            let mut tmp = [0.0; MAX_R];
            if invpartrans(w.ar, &mut tmp) {
                init[..p].copy_from_slice(w.ar);
                init[p..nar].copy_from_slice(w.ma);
                if free_reg {
                    if let Some(b) = w.beta {
                        init[nar] = (b - beta0) / beta_scale;
                    }
                }
                do_css = false;
            }
        }
    }

    if do_css && k > 0 {
        let css = |par: &[f64], work: &mut Vec<f64>, resid: &mut Vec<f64>| -> f64 {
            let b = beta_of(par);
            for i in 0..n {
                work[i] = x[i] - b.map_or(0.0, |b| b * xreg[i]);
            }
            diff_in_place(work, d);
            css_value(work, d, &par[..p], &par[p..nar], resid)
        };
        if cold {
            let r = minimize_bfgs(
                |par| css(par, &mut work, &mut resid),
                &init,
                1e-8,
                SCIPY_FTOL,
                100,
            );
            if r.status != 1 {
                init = r.x;
            }
        } else {
            let opts = OptOptions {
                max_iter: 30,
                gtol: 1e-4,
                ftol: 1e-8,
                forward: true,
            };
            if let Some(r) = bfgs(|par| css(par, &mut work, &mut resid), &init, opts) {
                if !r.hit_max_iter {
                    init = r.x;
                }
            }
        }
    }

    // transform AR to the unconstrained space
    let mut start = init.clone();
    if p > 0 && !invpartrans(&init[..p], &mut start[..p]) {
        return Err(ArimaError::FitFailed(
            "non-stationary AR part from CSS".into(),
        ));
    }

    let mut phi = [0.0; MAX_R];
    let ml = |par: &[f64], work: &mut Vec<f64>, phi: &mut [f64; MAX_R]| -> f64 {
        partrans(&par[..p], &mut phi[..p]);
        // Fast path: the ARMA filter on the differenced series, the limit
        // kappa -> inf of the diffuse filter (same likelihood to ~1e-6
        // relative, r instead of r + d states). The reference path keeps
        // R's diffuse filter to follow statsforecast's optimiser exactly.
        let b = beta_of(par);
        for i in 0..n {
            work[i] = x[i] - b.map_or(0.0, |b| b * xreg[i]);
        }
        let s = if cold {
            let Some(mut m) = SsModel::new(&phi[..p], &par[p..nar], d) else {
                return f64::INFINITY;
            };
            m.filter(work, None)
        } else {
            // 1e-9 relative: likelihood exact to ~1e-9, far fewer updates
            diff_in_place(work, d);
            match arma_likelihood(&work[d..], &phi[..p], &par[p..nar], 1e-9) {
                Some(s) => s,
                None => return f64::INFINITY,
            }
        };
        if s.nu == 0 {
            return f64::INFINITY;
        }
        let s2 = s.ssq / s.nu as f64;
        if !(s2 > 0.0) {
            return f64::NAN;
        }
        0.5 * (s2.ln() + s.sumlog / s.nu as f64)
    };
    let par = if k == 0 {
        start.clone()
    } else if cold {
        minimize_bfgs(
            |par| ml(par, &mut work, &mut phi),
            &start,
            1e-8,
            SCIPY_FTOL,
            max_iter,
        )
        .x
    } else {
        // `tight`: the optimum to ~1e-9 in the log-likelihood (final
        // offline fits). Otherwise loose tolerances (order search
        // candidates, online refits): the objective is the concentrated
        // log-likelihood divided by n, so ftol 1e-7 is a log-likelihood
        // change of ~1e-5; tight settings moved neither the chosen orders
        // nor the one-step MASE of the quality set, at ~2x the evaluations.
        let (gtol, ftol) = if tight {
            (1e-5, 1e-10)
        } else if warm.is_some() {
            (1e-3, 1e-6)
        } else {
            (1e-4, 1e-7)
        };
        let opts = OptOptions {
            max_iter,
            gtol,
            ftol,
            forward: true,
        };
        bfgs(|par| ml(par, &mut work, &mut phi), &start, opts)
            .ok_or_else(|| ArimaError::FitFailed("likelihood not finite at the start".into()))?
            .x
    };
    if par.iter().any(|v| !v.is_finite()) {
        return Err(ArimaError::FitFailed("optimiser diverged".into()));
    }
    let mut ar = vec![0.0; p];
    partrans(&par[..p], &mut ar);
    let ma = par[p..nar].to_vec();
    let beta = beta_of(&par);
    finish(x, spec, ar, ma, beta, k, &xreg, &mut work)
}

/// Rebuilds `old`'s model on a new series `x` with the same coefficients
/// (no optimisation): one filter pass for the state, the likelihood and
/// the criteria. Used between parameter refits of the online model.
pub(crate) fn refilter(x: &[f64], old: &ArimaFit) -> Result<ArimaFit, ArimaError> {
    let n = x.len();
    if n <= old.d {
        return Err(ArimaError::FitFailed("series too short".into()));
    }
    let spec = Spec {
        p: old.p,
        d: old.d,
        q: old.q,
        constant: old.constant,
    };
    let has_reg = old.constant && old.d <= 1;
    let xreg: Vec<f64> = if !has_reg {
        Vec::new()
    } else if old.d == 0 {
        vec![1.0; n]
    } else {
        (1..=n).map(|t| t as f64).collect()
    };
    let k = old.p + old.q + usize::from(has_reg);
    let mut work = vec![0.0; n];
    finish(
        x,
        spec,
        old.ar.clone(),
        old.ma.clone(),
        if has_reg { old.beta } else { None },
        k,
        &xreg,
        &mut work,
    )
}

/// The final filter pass of a fit: state at the end, likelihood, AIC/AICc,
/// sigma2. `k` is the number of estimated coefficients.
#[allow(clippy::too_many_arguments)]
fn finish(
    x: &[f64],
    spec: Spec,
    ar: Vec<f64>,
    ma: Vec<f64>,
    beta: Option<f64>,
    k: usize,
    xreg: &[f64],
    work: &mut [f64],
) -> Result<ArimaFit, ArimaError> {
    let Spec { p, d, q, .. } = spec;
    let n = x.len();
    let n_used = n - d;
    let has_reg = beta.is_some();
    let mut model = SsModel::new(&ar, &ma, d)
        .ok_or_else(|| ArimaError::FitFailed("non-stationary AR fit".into()))?;
    for i in 0..n {
        work[i] = x[i] - beta.map_or(0.0, |b| b * xreg[i]);
    }
    let mut rs = Vec::with_capacity(n);
    let s = model.filter(work, Some(&mut rs));
    if k == 0 && s.nu > 0 && s.ssq == 0.0 {
        // an exact fit with nothing estimated (a line with its fixed drift,
        // a parabola): statsforecast keeps it with sigma2 = 0, loglik NaN
        return Ok(ArimaFit {
            p,
            d,
            q,
            constant: has_reg,
            ar: Vec::new(),
            ma: Vec::new(),
            beta,
            sigma2: 0.0,
            sigma2_ml: 0.0,
            loglik: f64::NAN,
            aic: f64::NAN,
            aicc: f64::NAN,
            n,
            model,
            constant_series: None,
        });
    }
    if s.nu == 0 || !(s.ssq > 0.0) {
        return Err(ArimaError::FitFailed("degenerate likelihood".into()));
    }
    let fun = 0.5 * ((s.ssq / s.nu as f64).ln() + s.sumlog / s.nu as f64);
    let nu = n_used as f64;
    let value = 2.0 * nu * fun + nu + nu * (2.0 * std::f64::consts::PI).ln();
    let npar = k + 1;
    let aic = value + 2.0 * npar as f64;
    let nstar = n_used as f64;
    let den = nstar - npar as f64 - 1.0;
    let aicc = if den != 0.0 {
        aic + 2.0 * (npar * (npar + 1)) as f64 / den
    } else {
        f64::INFINITY
    };
    let rss: f64 = rs.iter().map(|r| r * r).sum();
    let sigma2 = rss / (nstar - npar as f64 + 1.0);
    if !(aic.is_finite() && sigma2.is_finite()) {
        return Err(ArimaError::FitFailed("non-finite fit".into()));
    }
    Ok(ArimaFit {
        p,
        d,
        q,
        constant: has_reg,
        ar,
        ma,
        beta,
        sigma2,
        sigma2_ml: s.ssq / nu,
        loglik: -0.5 * value,
        aic,
        aicc,
        n,
        model,
        constant_series: None,
    })
}

/// Exact Gaussian log-likelihood of `y` under ARIMA(p, d, q) with the
/// given coefficients (sigma2 concentrated out, the diffuse first `d`
/// observations excluded, as R / statsforecast). `constant_coef` is an
/// intercept when `d = 0` and a drift per step (`t = 1..n`) when `d = 1`.
/// Errors on orders that are too large, `d > 2`, a non-stationary AR part
/// or a series too short.
pub fn arima_log_likelihood(
    y: &[f64],
    d: usize,
    ar: &[f64],
    ma: &[f64],
    constant_coef: Option<f64>,
) -> Result<f64, ArimaError> {
    super::auto::check_series(y)?;
    let n = y.len();
    if n <= d {
        return Err(ArimaError::TooShort { n, min: d + 1 });
    }
    let mut m = SsModel::new(ar, ma, d)
        .ok_or_else(|| ArimaError::FitFailed("order too large or AR not stationary".into()))?;
    let work: Vec<f64> = (0..n)
        .map(|i| {
            let reg = match constant_coef {
                Some(b) if d == 0 => b,
                Some(b) if d == 1 => b * (i + 1) as f64,
                _ => 0.0,
            };
            y[i] - reg
        })
        .collect();
    let s = m.filter(&work, None);
    if s.nu == 0 || !(s.ssq > 0.0) {
        return Err(ArimaError::FitFailed("degenerate likelihood".into()));
    }
    let nu = (n - d) as f64;
    let fun = 0.5 * ((s.ssq / s.nu as f64).ln() + s.sumlog / s.nu as f64);
    Ok(-0.5 * (2.0 * nu * fun + nu + nu * (2.0 * std::f64::consts::PI).ln()))
}

/// The statsforecast root check of `myarima`: reject (true) when an AR or MA
/// root lies within modulus 1.01. Like statsforecast (0-based
/// `last_nonzero > 0`), a polynomial whose only non-zero coefficient is the
/// first is not checked.
pub(crate) fn near_unit_root(fit: &ArimaFit) -> bool {
    let check = |c: &[f64], sign: f64| -> bool {
        let last = c.iter().rposition(|v| v.abs() > 1e-8);
        match last {
            Some(l) if l > 0 => {
                let a: Vec<f64> = c[..=l].iter().map(|v| sign * v).collect();
                !roots_outside(&a, 1.01)
            }
            _ => false,
        }
    };
    check(&fit.ar, 1.0) || check(&fit.ma, -1.0)
}

#[cfg(test)]
mod tests;

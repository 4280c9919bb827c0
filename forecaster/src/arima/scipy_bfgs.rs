//! A faithful port of SciPy's `minimize(method="BFGS")` with its default
//! forward-difference gradient (absolute step `sqrt(eps)`), MINPACK's
//! `dcsrch` Wolfe line search and the `line_search_wolfe2` fallback.
//!
//! statsforecast fits every ARIMA candidate with this optimiser (`tol =
//! 1e-8`, `maxiter = 100`); where the likelihood surface has several local
//! optima (e.g. MA roots near the unit circle) the optimum found depends on
//! the optimiser's path, so reproducing statsforecast's choices and
//! forecasts needs the same path, not just any good optimiser.

/// Outcome of [`minimize_bfgs`], with SciPy's `status` codes: 0 success,
/// 1 iteration limit, 2 precision loss (line search failed), 3 NaN.
#[derive(Clone, Debug)]
#[allow(dead_code)] // f: for diagnostics
pub(crate) struct BfgsResult {
    pub x: Vec<f64>,
    pub f: f64,
    pub status: u8,
}

const EPS_STEP: f64 = 1.4901161193847656e-08; // sqrt(f64::EPSILON)

struct Problem<F: FnMut(&[f64]) -> f64> {
    f: F,
    xt: Vec<f64>,
}

impl<F: FnMut(&[f64]) -> f64> Problem<F> {
    fn fun(&mut self, x: &[f64]) -> f64 {
        (self.f)(x)
    }

    /// SciPy `approx_derivative(method="2-point", abs_step=sqrt(eps))`.
    fn grad(&mut self, x: &[f64], f0: f64, g: &mut [f64]) {
        self.xt.clear();
        self.xt.extend_from_slice(x);
        for i in 0..x.len() {
            let mut h = EPS_STEP;
            if (x[i] + h) - x[i] == 0.0 {
                let sign = if x[i] >= 0.0 { 1.0 } else { -1.0 };
                h = EPS_STEP * sign * x[i].abs().max(1.0);
            }
            self.xt[i] = x[i] + h;
            let dx = self.xt[i] - x[i];
            let fi = (self.f)(&self.xt);
            self.xt[i] = x[i];
            g[i] = (fi - f0) / dx;
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn sign(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else if v == 0.0 {
        0.0
    } else {
        f64::NAN
    }
}

/// MINPACK `dcstep` (SciPy `_dcsrch.dcstep`).
#[allow(clippy::too_many_arguments)]
fn dcstep(
    stx: &mut f64,
    fx: &mut f64,
    dx: &mut f64,
    sty: &mut f64,
    fy: &mut f64,
    dy: &mut f64,
    stp: &mut f64,
    fp: f64,
    dp: f64,
    brackt: &mut bool,
    stpmin: f64,
    stpmax: f64,
) {
    let sgnd = sign(dp) * sign(*dx);
    let stpf;
    if fp > *fx {
        let theta = 3.0 * (*fx - fp) / (*stp - *stx) + *dx + dp;
        let s = theta.abs().max(dx.abs()).max(dp.abs());
        let mut gamma = s * ((theta / s).powi(2) - (*dx / s) * (dp / s)).sqrt();
        if *stp < *stx {
            gamma = -gamma;
        }
        let p = (gamma - *dx) + theta;
        let q = ((gamma - *dx) + gamma) + dp;
        let r = p / q;
        let stpc = *stx + r * (*stp - *stx);
        let stpq = *stx + ((*dx / ((*fx - fp) / (*stp - *stx) + *dx)) / 2.0) * (*stp - *stx);
        stpf = if (stpc - *stx).abs() <= (stpq - *stx).abs() {
            stpc
        } else {
            stpc + (stpq - stpc) / 2.0
        };
        *brackt = true;
    } else if sgnd < 0.0 {
        let theta = 3.0 * (*fx - fp) / (*stp - *stx) + *dx + dp;
        let s = theta.abs().max(dx.abs()).max(dp.abs());
        let mut gamma = s * ((theta / s).powi(2) - (*dx / s) * (dp / s)).sqrt();
        if *stp > *stx {
            gamma = -gamma;
        }
        let p = (gamma - dp) + theta;
        let q = ((gamma - dp) + gamma) + *dx;
        let r = p / q;
        let stpc = *stp + r * (*stx - *stp);
        let stpq = *stp + (dp / (dp - *dx)) * (*stx - *stp);
        stpf = if (stpc - *stp).abs() > (stpq - *stp).abs() {
            stpc
        } else {
            stpq
        };
        *brackt = true;
    } else if dp.abs() < dx.abs() {
        let theta = 3.0 * (*fx - fp) / (*stp - *stx) + *dx + dp;
        let s = theta.abs().max(dx.abs()).max(dp.abs());
        let rad = (theta / s).powi(2) - (*dx / s) * (dp / s);
        let mut gamma = s * (if rad > 0.0 { rad } else { 0.0 }).sqrt();
        if *stp > *stx {
            gamma = -gamma;
        }
        let p = (gamma - dp) + theta;
        let q = (gamma + (*dx - dp)) + gamma;
        let r = p / q;
        let stpc = if r < 0.0 && gamma != 0.0 {
            *stp + r * (*stx - *stp)
        } else if *stp > *stx {
            stpmax
        } else {
            stpmin
        };
        let stpq = *stp + (dp / (dp - *dx)) * (*stx - *stp);
        if *brackt {
            let mut v = if (stpc - *stp).abs() < (stpq - *stp).abs() {
                stpc
            } else {
                stpq
            };
            if *stp > *stx {
                v = (*stp + 0.66 * (*sty - *stp)).min(v);
            } else {
                v = (*stp + 0.66 * (*sty - *stp)).max(v);
            }
            stpf = v;
        } else {
            let v = if (stpc - *stp).abs() > (stpq - *stp).abs() {
                stpc
            } else {
                stpq
            };
            stpf = clip(v, stpmin, stpmax);
        }
    } else if *brackt {
        let theta = 3.0 * (fp - *fy) / (*sty - *stp) + *dy + dp;
        let s = theta.abs().max(dy.abs()).max(dp.abs());
        let mut gamma = s * ((theta / s).powi(2) - (*dy / s) * (dp / s)).sqrt();
        if *stp > *sty {
            gamma = -gamma;
        }
        let p = (gamma - dp) + theta;
        let q = ((gamma - dp) + gamma) + *dy;
        let r = p / q;
        stpf = *stp + r * (*sty - *stp);
    } else if *stp > *stx {
        stpf = stpmax;
    } else {
        stpf = stpmin;
    }
    if fp > *fx {
        *sty = *stp;
        *fy = fp;
        *dy = dp;
    } else {
        if sgnd < 0.0 {
            *sty = *stx;
            *fy = *fx;
            *dy = *dx;
        }
        *stx = *stp;
        *fx = fp;
        *dx = dp;
    }
    *stp = stpf;
}

/// numpy `clip` (NaN propagates).
fn clip(v: f64, lo: f64, hi: f64) -> f64 {
    if v.is_nan() {
        v
    } else if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

/// Line-search context: evaluates f and the gradient along `xk + s pk`.
struct Line<'a, F: FnMut(&[f64]) -> f64> {
    prob: &'a mut Problem<F>,
    xk: &'a [f64],
    pk: &'a [f64],
    xs: Vec<f64>,
    /// gradient at the last point where `derphi` was evaluated
    gval: Vec<f64>,
    /// f at the last point where `phi` was evaluated (for the gradient)
    last_f: f64,
    last_s: f64,
}

impl<F: FnMut(&[f64]) -> f64> Line<'_, F> {
    fn point(&mut self, s: f64) {
        for i in 0..self.xk.len() {
            self.xs[i] = self.xk[i] + s * self.pk[i];
        }
    }

    fn phi(&mut self, s: f64) -> f64 {
        self.point(s);
        let xs = std::mem::take(&mut self.xs);
        let v = self.prob.fun(&xs);
        self.xs = xs;
        self.last_f = v;
        self.last_s = s;
        v
    }

    fn derphi(&mut self, s: f64) -> f64 {
        let f0 = if self.last_s == s {
            self.last_f
        } else {
            self.phi(s)
        };
        self.point(s);
        let xs = std::mem::take(&mut self.xs);
        let mut g = std::mem::take(&mut self.gval);
        self.prob.grad(&xs, f0, &mut g);
        self.xs = xs;
        let d = dot(&g, self.pk);
        self.gval = g;
        d
    }
}

/// SciPy `scalar_search_wolfe1` via `DCSRCH`; returns (stp, phi1).
fn search_wolfe1<F: FnMut(&[f64]) -> f64>(
    ln: &mut Line<'_, F>,
    phi0: f64,
    old_phi0: f64,
    derphi0: f64,
) -> Option<(f64, f64)> {
    let (c1, c2, amax, amin, xtol) = (1e-4, 0.9, 1e100, 1e-100, 1e-14);
    let mut alpha1 = if derphi0 != 0.0 {
        let a = (1.01 * 2.0 * (phi0 - old_phi0) / derphi0).min(1.0);
        if a < 0.0 {
            1.0
        } else {
            a
        }
    } else {
        1.0
    };
    // DCSRCH state
    let (ftol, gtol, stpmin, stpmax) = (c1, c2, amin, amax);
    let mut phi1 = phi0;
    let mut derphi1 = derphi0;
    let mut started = false;
    let mut brackt = false;
    let mut stage = 1;
    let (mut finit, mut ginit, mut gtest) = (0.0, 0.0, 0.0);
    let (mut width, mut width1) = (0.0, 0.0);
    let (mut stx, mut fx, mut gx, mut sty, mut fy, mut gy) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut stmin, mut stmax) = (0.0, 0.0);
    for _ in 0..100 {
        let mut stp = alpha1;
        let (f, g) = (phi1, derphi1);
        if !started {
            if stp < stpmin || stp > stpmax || g >= 0.0 {
                return None;
            }
            started = true;
            brackt = false;
            stage = 1;
            finit = f;
            ginit = g;
            gtest = ftol * ginit;
            width = stpmax - stpmin;
            width1 = width / 0.5;
            stx = 0.0;
            fx = finit;
            gx = ginit;
            sty = 0.0;
            fy = finit;
            gy = ginit;
            stmin = 0.0;
            stmax = stp + 4.0 * stp;
        } else {
            let ftest = finit + stp * gtest;
            if stage == 1 && f <= ftest && g >= 0.0 {
                stage = 2;
            }
            let mut warn = false;
            if brackt && (stp <= stmin || stp >= stmax) {
                warn = true;
            }
            if brackt && stmax - stmin <= xtol * stmax {
                warn = true;
            }
            if stp == stpmax && f <= ftest && g <= gtest {
                warn = true;
            }
            if stp == stpmin && (f > ftest || g >= gtest) {
                warn = true;
            }
            let conv = f <= ftest && g.abs() <= gtol * -ginit;
            if conv {
                return Some((stp, phi1));
            }
            if warn {
                return None;
            }
            if stage == 1 && f <= fx && f > ftest {
                let fm = f - stp * gtest;
                let mut fxm = fx - stx * gtest;
                let mut fym = fy - sty * gtest;
                let gm = g - gtest;
                let mut gxm = gx - gtest;
                let mut gym = gy - gtest;
                dcstep(
                    &mut stx,
                    &mut fxm,
                    &mut gxm,
                    &mut sty,
                    &mut fym,
                    &mut gym,
                    &mut stp,
                    fm,
                    gm,
                    &mut brackt,
                    stmin,
                    stmax,
                );
                fx = fxm + stx * gtest;
                fy = fym + sty * gtest;
                gx = gxm + gtest;
                gy = gym + gtest;
            } else {
                dcstep(
                    &mut stx,
                    &mut fx,
                    &mut gx,
                    &mut sty,
                    &mut fy,
                    &mut gy,
                    &mut stp,
                    f,
                    g,
                    &mut brackt,
                    stmin,
                    stmax,
                );
            }
            if brackt {
                if (sty - stx).abs() >= 0.66 * width1 {
                    stp = stx + 0.5 * (sty - stx);
                }
                width1 = width;
                width = (sty - stx).abs();
            }
            if brackt {
                stmin = stx.min(sty);
                stmax = stx.max(sty);
            } else {
                stmin = stp + 1.1 * (stp - stx);
                stmax = stp + 4.0 * (stp - stx);
            }
            stp = clip(stp, stpmin, stpmax);
            if brackt && (stp <= stmin || stp >= stmax || stmax - stmin <= xtol * stmax) {
                stp = stx;
            }
        }
        // task FG
        if !stp.is_finite() {
            return None;
        }
        alpha1 = stp;
        phi1 = ln.phi(stp);
        derphi1 = ln.derphi(stp);
    }
    None
}

fn cubicmin(a: f64, fa: f64, fpa: f64, b: f64, fb: f64, c: f64, fc: f64) -> Option<f64> {
    let cc = fpa;
    let db = b - a;
    let dc = c - a;
    let denom = (db * dc).powi(2) * (db - dc);
    let v0 = fb - fa - cc * db;
    let v1 = fc - fa - cc * dc;
    let mut aa = dc * dc * v0 - db * db * v1;
    let mut bb = -dc.powi(3) * v0 + db.powi(3) * v1;
    if denom == 0.0 || !denom.is_finite() {
        return None;
    }
    aa /= denom;
    bb /= denom;
    let radical = bb * bb - 3.0 * aa * cc;
    if radical < 0.0 || aa == 0.0 {
        return None;
    }
    let xmin = a + (-bb + radical.sqrt()) / (3.0 * aa);
    if xmin.is_finite() {
        Some(xmin)
    } else {
        None
    }
}

fn quadmin(a: f64, fa: f64, fpa: f64, b: f64, fb: f64) -> Option<f64> {
    let db = b - a;
    if db == 0.0 {
        return None;
    }
    let bb = (fb - fa - fpa * db) / (db * db);
    if bb == 0.0 {
        return None;
    }
    let xmin = a - fpa / (2.0 * bb);
    if xmin.is_finite() {
        Some(xmin)
    } else {
        None
    }
}

#[allow(clippy::too_many_arguments)]
fn zoom<F: FnMut(&[f64]) -> f64>(
    ln: &mut Line<'_, F>,
    mut a_lo: f64,
    mut a_hi: f64,
    mut phi_lo: f64,
    mut phi_hi: f64,
    mut derphi_lo: f64,
    phi0: f64,
    derphi0: f64,
) -> Option<(f64, f64)> {
    let (c1, c2) = (1e-4, 0.9);
    let (delta1, delta2) = (0.2, 0.1);
    let mut phi_rec = phi0;
    let mut a_rec = 0.0;
    let mut i = 0;
    loop {
        let dalpha = a_hi - a_lo;
        let (a, b) = if dalpha < 0.0 {
            (a_hi, a_lo)
        } else {
            (a_lo, a_hi)
        };
        let mut a_j = None;
        let mut cchk = 0.0;
        if i > 0 {
            cchk = delta1 * dalpha;
            a_j = cubicmin(a_lo, phi_lo, derphi_lo, a_hi, phi_hi, a_rec, phi_rec);
        }
        let bad = |v: Option<f64>, chk: f64| match v {
            None => true,
            Some(x) => x > b - chk || x < a + chk,
        };
        if i == 0 || bad(a_j, cchk) {
            let qchk = delta2 * dalpha;
            a_j = quadmin(a_lo, phi_lo, derphi_lo, a_hi, phi_hi);
            if bad(a_j, qchk) {
                a_j = Some(a_lo + 0.5 * dalpha);
            }
        }
        let aj = a_j.unwrap_or(a_lo + 0.5 * dalpha);
        let phi_aj = ln.phi(aj);
        if phi_aj > phi0 + c1 * aj * derphi0 || phi_aj >= phi_lo {
            phi_rec = phi_hi;
            a_rec = a_hi;
            a_hi = aj;
            phi_hi = phi_aj;
        } else {
            let derphi_aj = ln.derphi(aj);
            if derphi_aj.abs() <= -c2 * derphi0 {
                return Some((aj, phi_aj));
            }
            if derphi_aj * (a_hi - a_lo) >= 0.0 {
                phi_rec = phi_hi;
                a_rec = a_hi;
                a_hi = a_lo;
                phi_hi = phi_lo;
            } else {
                phi_rec = phi_lo;
                a_rec = a_lo;
            }
            a_lo = aj;
            phi_lo = phi_aj;
            derphi_lo = derphi_aj;
        }
        i += 1;
        if i > 10 {
            return None;
        }
    }
}

/// SciPy `scalar_search_wolfe2`; returns (alpha, phi).
fn search_wolfe2<F: FnMut(&[f64]) -> f64>(
    ln: &mut Line<'_, F>,
    phi0: f64,
    old_phi0: f64,
    derphi0: f64,
) -> Option<(f64, f64)> {
    let (c1, c2, amax) = (1e-4, 0.9, 1e100);
    let mut alpha0 = 0.0;
    let mut alpha1 = if derphi0 != 0.0 {
        (1.01 * 2.0 * (phi0 - old_phi0) / derphi0).min(1.0)
    } else {
        1.0
    };
    if alpha1 < 0.0 {
        alpha1 = 1.0;
    }
    alpha1 = alpha1.min(amax);
    let mut phi_a1 = ln.phi(alpha1);
    let mut phi_a0 = phi0;
    let mut derphi_a0 = derphi0;
    for i in 0..10 {
        if alpha1 == 0.0 || alpha0 > amax {
            return None;
        }
        if phi_a1 > phi0 + c1 * alpha1 * derphi0 || (phi_a1 >= phi_a0 && i > 0) {
            return zoom(ln, alpha0, alpha1, phi_a0, phi_a1, derphi_a0, phi0, derphi0);
        }
        let derphi_a1 = ln.derphi(alpha1);
        if derphi_a1.abs() <= -c2 * derphi0 {
            return Some((alpha1, phi_a1));
        }
        if derphi_a1 >= 0.0 {
            return zoom(ln, alpha1, alpha0, phi_a1, phi_a0, derphi_a1, phi0, derphi0);
        }
        let alpha2 = (2.0 * alpha1).min(amax);
        alpha0 = alpha1;
        alpha1 = alpha2;
        phi_a0 = phi_a1;
        phi_a1 = ln.phi(alpha1);
        derphi_a0 = derphi_a1;
    }
    // SciPy returns the last alpha without a gradient here; the caller
    // then evaluates the gradient at the new point.
    ln.last_s = f64::NAN;
    Some((alpha1, phi_a1))
}

/// SciPy `minimize(f, x0, method="BFGS", tol=gtol, options={"maxiter": max_iter})`.
pub(crate) fn minimize_bfgs<F: FnMut(&[f64]) -> f64>(
    f: F,
    x0: &[f64],
    gtol: f64,
    ftol: f64,
    max_iter: usize,
) -> BfgsResult {
    let n = x0.len();
    let mut prob = Problem {
        f,
        xt: Vec::with_capacity(n),
    };
    let mut xk = x0.to_vec();
    let mut old_fval = prob.fun(&xk);
    let mut gfk = vec![0.0; n];
    prob.grad(&xk, old_fval, &mut gfk);
    let mut hk = vec![0.0; n * n];
    for i in 0..n {
        hk[i * n + i] = 1.0;
    }
    let mut old_old_fval = old_fval + dot(&gfk, &gfk).sqrt() / 2.0;
    let inf_norm = |g: &[f64]| {
        g.iter().fold(0.0f64, |m, v| {
            if v.is_nan() || m.is_nan() {
                f64::NAN
            } else {
                m.max(v.abs())
            }
        })
    };
    let mut gnorm = inf_norm(&gfk);
    let mut k = 0;
    let mut warnflag = 0u8;
    let mut pk = vec![0.0; n];
    let mut tmp = vec![0.0; n * n];
    while gnorm > gtol && k < max_iter {
        for i in 0..n {
            let mut acc = 0.0;
            for j in 0..n {
                acc += hk[i * n + j] * gfk[j];
            }
            pk[i] = -acc;
        }
        let derphi0 = dot(&gfk, &pk);
        let (alpha_k, new_f, gfkp1) = {
            let mut ln = Line {
                prob: &mut prob,
                xk: &xk,
                pk: &pk,
                xs: vec![0.0; n],
                gval: gfk.clone(),
                last_f: old_fval,
                last_s: 0.0,
            };
            let mut r = search_wolfe1(&mut ln, old_fval, old_old_fval, derphi0);
            if r.is_none() {
                ln.gval = gfk.clone();
                ln.last_s = f64::NAN;
                r = search_wolfe2(&mut ln, old_fval, old_old_fval, derphi0);
            }
            match r {
                Some((a, fnew)) => {
                    let g = if ln.last_s.is_nan() {
                        // gradient at the accepted point was not computed
                        ln.point(a);
                        let xs = ln.xs.clone();
                        let mut g = vec![0.0; n];
                        ln.prob.grad(&xs, fnew, &mut g);
                        g
                    } else {
                        ln.gval.clone()
                    };
                    (a, fnew, g)
                }
                None => {
                    warnflag = 2;
                    break;
                }
            }
        };
        old_old_fval = old_fval;
        old_fval = new_f;
        let sk: Vec<f64> = pk.iter().map(|p| alpha_k * p).collect();
        for i in 0..n {
            xk[i] += sk[i];
        }
        let yk: Vec<f64> = gfkp1.iter().zip(&gfk).map(|(a, b)| a - b).collect();
        gfk = gfkp1;
        k += 1;
        gnorm = inf_norm(&gfk);
        if gnorm <= gtol {
            break;
        }
        // Extra stop (not in SciPy): the last step improved f by less than
        // `ftol` relative. SciPy goes on until its line search fails
        // ("precision loss"), which moves x by ~1e-7 at several times the
        // cost; the forecasts agree to ~1e-6 either way.
        if (old_old_fval - old_fval).abs() <= ftol * old_fval.abs().max(1.0) {
            break;
        }
        if !old_fval.is_finite() {
            warnflag = 2;
            break;
        }
        let rhok_inv = dot(&yk, &sk);
        let rhok = if rhok_inv == 0.0 {
            1000.0
        } else {
            1.0 / rhok_inv
        };
        // Hk = A1 Hk A2 + rho s s', A1 = I - rho s y', A2 = I - rho y s'
        // tmp = Hk A2
        for i in 0..n {
            for j in 0..n {
                let mut acc = 0.0;
                for l in 0..n {
                    let a2 = if l == j { 1.0 } else { 0.0 } - yk[l] * sk[j] * rhok;
                    acc += hk[i * n + l] * a2;
                }
                tmp[i * n + j] = acc;
            }
        }
        for i in 0..n {
            for j in 0..n {
                let mut acc = 0.0;
                for l in 0..n {
                    let a1 = if i == l { 1.0 } else { 0.0 } - sk[i] * yk[l] * rhok;
                    acc += a1 * tmp[l * n + j];
                }
                hk[i * n + j] = acc + rhok * sk[i] * sk[j];
            }
        }
    }
    if warnflag != 2 {
        if k >= max_iter {
            warnflag = 1;
        } else if gnorm.is_nan() || old_fval.is_nan() || xk.iter().any(|v| v.is_nan()) {
            warnflag = 3;
        }
    }
    BfgsResult {
        x: xk,
        f: old_fval,
        status: warnflag,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rosenbrock_like_scipy() {
        // scipy.optimize.minimize(rosen, [-1.2, 1], method="BFGS", tol=1e-8)
        // converges to (1, 1).
        let f = |x: &[f64]| (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2);
        let r = minimize_bfgs(f, &[-1.2, 1.0], 1e-8, 0.0, 200);
        assert!(
            (r.x[0] - 1.0).abs() < 1e-4 && (r.x[1] - 1.0).abs() < 1e-4,
            "{r:?}"
        );
    }

    #[test]
    fn quadratic_in_one_step_family() {
        let f = |x: &[f64]| 3.0 * (x[0] - 2.0).powi(2) + 0.5 * (x[1] + 1.0).powi(2) + 1.0;
        let r = minimize_bfgs(f, &[0.0, 0.0], 1e-8, 0.0, 100);
        assert!(
            (r.x[0] - 2.0).abs() < 1e-5 && (r.x[1] + 1.0).abs() < 1e-5,
            "{r:?}"
        );
        assert!(r.status == 0 || r.status == 2);
    }
}

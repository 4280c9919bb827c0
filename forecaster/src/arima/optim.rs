//! A small dense BFGS minimiser with finite-difference gradients, enough
//! for the 1..12 parameters of an ARIMA likelihood.

/// Result of a minimisation.
#[derive(Clone, Debug)]
#[allow(dead_code)] // f and iters: for diagnostics
pub(crate) struct OptResult {
    pub x: Vec<f64>,
    pub f: f64,
    /// Iterations done.
    pub iters: usize,
    /// True when the iteration limit stopped the search.
    pub hit_max_iter: bool,
}

/// Options of [`bfgs`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct OptOptions {
    pub max_iter: usize,
    /// Stop when the largest gradient component is below this.
    pub gtol: f64,
    /// Stop when an iteration improves f by less than `ftol * (|f| + ftol)`.
    pub ftol: f64,
    /// Forward (n evaluations) instead of central (2n) differences.
    pub forward: bool,
}

impl Default for OptOptions {
    fn default() -> Self {
        Self {
            max_iter: 100,
            gtol: 1e-7,
            ftol: 1e-12,
            forward: false,
        }
    }
}

fn gradient<F: FnMut(&[f64]) -> f64>(
    f: &mut F,
    x: &[f64],
    fx: f64,
    g: &mut [f64],
    xt: &mut Vec<f64>,
    forward: bool,
) -> bool {
    // Coordinates last to first: the last ones of an ARMA likelihood (MA
    // coefficients, mean) keep its AR part, so its cached stationary
    // covariance factors and gains (kalman) are reused right after `f(x)`.
    // Each component is computed on its own: the order changes no value.
    if forward {
        xt.clear();
        xt.extend_from_slice(x);
        for i in (0..x.len()).rev() {
            let h = 1e-7 * x[i].abs().max(1.0);
            xt[i] = x[i] + h;
            let fp = f(xt);
            let gi = if fp.is_finite() {
                (fp - fx) / h
            } else {
                xt[i] = x[i] - h;
                let fm = f(xt);
                if !fm.is_finite() {
                    return false;
                }
                (fx - fm) / h
            };
            xt[i] = x[i];
            g[i] = gi;
        }
        return true;
    }
    xt.clear();
    xt.extend_from_slice(x);
    for i in (0..x.len()).rev() {
        let h = 1e-6 * x[i].abs().max(1.0);
        xt[i] = x[i] + h;
        let fp = f(xt);
        xt[i] = x[i] - h;
        let fm = f(xt);
        xt[i] = x[i];
        if fp.is_finite() && fm.is_finite() {
            g[i] = (fp - fm) / (2.0 * h);
        } else if fp.is_finite() {
            g[i] = (fp - fx) / h;
        } else if fm.is_finite() {
            g[i] = (fx - fm) / h;
        } else {
            return false;
        }
    }
    true
}

/// Minimises `f` from `x0` by BFGS with central-difference gradients and a
/// backtracking Armijo line search. Non-finite values of `f` are treated as
/// +infinity (the line search backs off). Returns `None` when `f(x0)` is not
/// finite.
pub(crate) fn bfgs<F: FnMut(&[f64]) -> f64>(
    mut f: F,
    x0: &[f64],
    opts: OptOptions,
) -> Option<OptResult> {
    let n = x0.len();
    let mut x = x0.to_vec();
    let mut fx = f(&x);
    if !fx.is_finite() {
        return None;
    }
    if n == 0 {
        return Some(OptResult {
            x,
            f: fx,
            iters: 0,
            hit_max_iter: false,
        });
    }
    let mut xt = Vec::with_capacity(n);
    let mut g = vec![0.0; n];
    if !gradient(&mut f, &x, fx, &mut g, &mut xt, opts.forward) {
        return Some(OptResult {
            x,
            f: fx,
            iters: 0,
            hit_max_iter: false,
        });
    }
    // inverse Hessian approximation, row major
    let mut hinv = vec![0.0; n * n];
    for i in 0..n {
        hinv[i * n + i] = 1.0;
    }
    let mut first = true;
    let mut dir = vec![0.0; n];
    let mut xn = vec![0.0; n];
    let mut gn = vec![0.0; n];
    let mut s = vec![0.0; n];
    let mut yv = vec![0.0; n];
    let mut iters = 0;
    while iters < opts.max_iter {
        let gmax = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if gmax < opts.gtol {
            break;
        }
        iters += 1;
        for i in 0..n {
            let mut acc = 0.0;
            for j in 0..n {
                acc -= hinv[i * n + j] * g[j];
            }
            dir[i] = acc;
        }
        let mut slope: f64 = dir.iter().zip(&g).map(|(d, gi)| d * gi).sum();
        if !(slope < 0.0) {
            // not a descent direction: reset to steepest descent
            for i in 0..n {
                for j in 0..n {
                    hinv[i * n + j] = if i == j { 1.0 } else { 0.0 };
                }
                dir[i] = -g[i];
            }
            slope = -g.iter().map(|v| v * v).sum::<f64>();
            first = true;
        }
        let mut step = 1.0;
        if first {
            let dmax = dir.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            if dmax > 1.0 {
                step = 1.0 / dmax;
            }
        }
        let mut accepted = false;
        let mut fnew = fx;
        for _ in 0..40 {
            for i in 0..n {
                xn[i] = x[i] + step * dir[i];
            }
            fnew = f(&xn);
            if fnew.is_finite() && fnew <= fx + 1e-4 * step * slope {
                accepted = true;
                break;
            }
            step *= if fnew.is_finite() { 0.5 } else { 0.1 };
        }
        if !accepted {
            break;
        }
        if !gradient(&mut f, &xn, fnew, &mut gn, &mut xt, opts.forward) {
            break;
        }
        let improvement = fx - fnew;
        for i in 0..n {
            s[i] = xn[i] - x[i];
            yv[i] = gn[i] - g[i];
        }
        x.copy_from_slice(&xn);
        g.copy_from_slice(&gn);
        fx = fnew;
        if improvement <= opts.ftol * (fx.abs() + opts.ftol) {
            break;
        }
        let sy: f64 = s.iter().zip(&yv).map(|(a, b)| a * b).sum();
        if sy > 1e-300 {
            if first {
                // scale the initial inverse Hessian (Nocedal & Wright 6.20)
                let yy: f64 = yv.iter().map(|v| v * v).sum();
                if yy > 0.0 {
                    let sc = sy / yy;
                    for i in 0..n {
                        for j in 0..n {
                            hinv[i * n + j] = if i == j { sc } else { 0.0 };
                        }
                    }
                }
                first = false;
            }
            // H = (I - rho s y') H (I - rho y s') + rho s s'
            let rho = 1.0 / sy;
            let mut hy = vec![0.0; n];
            for i in 0..n {
                let mut acc = 0.0;
                for j in 0..n {
                    acc += hinv[i * n + j] * yv[j];
                }
                hy[i] = acc;
            }
            let yhy: f64 = yv.iter().zip(&hy).map(|(a, b)| a * b).sum();
            for i in 0..n {
                for j in 0..n {
                    hinv[i * n + j] += -rho * (hy[i] * s[j] + s[i] * hy[j])
                        + (rho * rho * yhy + rho) * s[i] * s[j];
                }
            }
        }
    }
    Some(OptResult {
        x,
        f: fx,
        iters,
        hit_max_iter: iters >= opts.max_iter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimises_rosenbrock() {
        let f = |x: &[f64]| (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2);
        let r = bfgs(
            f,
            &[-1.2, 1.0],
            OptOptions {
                max_iter: 500,
                ..Default::default()
            },
        )
        .expect("finite start");
        assert!(
            (r.x[0] - 1.0).abs() < 1e-4 && (r.x[1] - 1.0).abs() < 1e-4,
            "{:?}",
            r.x
        );
    }

    #[test]
    fn respects_infinite_regions() {
        // minimum at 0.9 of a function that is +inf beyond 1
        let f = |x: &[f64]| {
            if x[0] >= 1.0 {
                f64::INFINITY
            } else {
                (x[0] - 0.9).powi(2)
            }
        };
        let r = bfgs(f, &[0.0], OptOptions::default()).expect("finite start");
        assert!((r.x[0] - 0.9).abs() < 1e-5, "{:?}", r.x);
    }
}

//! Hyperparameter fit: a projected L-BFGS in log space over the GP's log
//! marginal likelihood (see [`super::lml`] for the objective), with an
//! optional Gaussian prior on the log parameters and curvature pairs kept
//! between online refits.

use super::lml::{Bounds, Evaluator, KernelKind, Theta, TrainSet, NP};

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
    let n = ev.n();
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

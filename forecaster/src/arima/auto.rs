//! Automatic order selection: d from KPSS tests, then the Hyndman-Khandakar
//! stepwise search over (p, q) and the constant, ranked by AICc (or AIC),
//! as statsforecast's `auto_arima_f` with `period = 1`.

use super::config::{ArimaConfig, InformationCriterion, Optimizer};
use super::fit::{fit_arima, near_unit_root, refit_from, ArimaFit, Spec, Warm};
use super::kalman::SsModel;
use super::kpss::ndiffs;
use super::ArimaError;

/// statsforecast's limit on the number of models the stepwise search fits.
const NMODELS: usize = 94;
/// Largest p + q of the non-stepwise search.
const MAX_ORDER: usize = 5;
/// Stepwise neighbours `(dp, dq)` in statsforecast's order.
const NEIGHBOUR_MOVES: [(i32, i32); 8] = [
    (-1, 0),
    (0, -1),
    (1, 0),
    (0, 1),
    (-1, -1),
    (-1, 1),
    (1, -1),
    (1, 1),
];

/// The orders next to (p, q) within (max_p, max_q), in
/// [`NEIGHBOUR_MOVES`] order.
fn neighbours(
    p: usize,
    q: usize,
    max_p: usize,
    max_q: usize,
) -> impl Iterator<Item = (usize, usize)> {
    NEIGHBOUR_MOVES.into_iter().filter_map(move |(dp, dq)| {
        let np = p.checked_add_signed(dp as isize)?;
        let nq = q.checked_add_signed(dq as isize)?;
        (np <= max_p && nq <= max_q).then_some((np, nq))
    })
}
/// Iteration limit of cold fits (R / statsforecast use 100).
const COLD_MAX_ITER: usize = 100;

fn is_constant(x: &[f64]) -> bool {
    x.iter().all(|v| *v == x[0])
}

fn constant_fit(v: f64, n: usize) -> ArimaFit {
    let model = SsModel::new(&[], &[], 0).unwrap_or_else(unreachable_model);
    ArimaFit {
        p: 0,
        d: 0,
        q: 0,
        constant: true,
        ar: Vec::new(),
        ma: Vec::new(),
        beta: Some(v),
        sigma2: 0.0,
        sigma2_ml: 0.0,
        loglik: f64::NAN,
        aic: f64::NAN,
        aicc: f64::NAN,
        n,
        model,
        constant_series: Some(v),
    }
}

// SsModel::new(&[], &[], 0) cannot fail (r = 1, no AR); keep a total
// function without unwrap anyway.
fn unreachable_model() -> SsModel {
    SsModel {
        p: 0,
        q: 0,
        r: 1,
        d: 0,
        rd: 1,
        phi: [0.0; super::kalman::MAX_R],
        theta: [0.0; super::kalman::MAX_R],
        delta: [0.0; super::kalman::MAX_D],
        a: [0.0; super::kalman::MAX_RD],
        pmat: [0.0; super::kalman::MAX_RD * super::kalman::MAX_RD],
        pn: [0.0; super::kalman::MAX_RD * super::kalman::MAX_RD],
        steady_tol: 1e-14,
    }
}

/// Checks a series: non-empty and all finite.
pub(crate) fn check_series(y: &[f64]) -> Result<(), ArimaError> {
    if y.is_empty() {
        return Err(ArimaError::TooShort { n: 0, min: 1 });
    }
    if let Some(index) = y.iter().position(|v| !v.is_finite()) {
        return Err(ArimaError::NonFinite { index });
    }
    Ok(())
}

/// Fits one candidate and scores it like statsforecast's `myarima`:
/// `f64::INFINITY` when the fit fails or a root is within 1.01 of the unit
/// circle.
pub(crate) fn score(
    x: &[f64],
    spec: Spec,
    ic: InformationCriterion,
    optimizer: Optimizer,
) -> (Option<ArimaFit>, f64) {
    match fit_arima(x, spec, None, None, COLD_MAX_ITER, optimizer, false) {
        Ok(fit) => {
            let v = match ic {
                InformationCriterion::Aicc => fit.aicc,
                InformationCriterion::Aic => fit.aic,
            };
            let v = if v.is_nan() || near_unit_root(&fit) {
                f64::INFINITY
            } else {
                v
            };
            (Some(fit), v)
        }
        Err(e) => {
            tracing::trace!(?spec, error = %e, "arima candidate failed");
            (None, f64::INFINITY)
        }
    }
}

/// Offline auto-ARIMA on `y` (statsforecast `AutoARIMA(season_length=1)`
/// semantics): d from KPSS tests (alpha `cfg.kpss_alpha`, d <= `cfg.max_d`),
/// then the stepwise (or full) search over p <= max_p, q <= max_q and the
/// constant (a mean when d = 0, a drift when d = 1), each candidate fitted
/// by CSS then exact ML.
///
/// Errors: an empty series or one with a non-finite value, and series for
/// which no candidate could be fitted.
pub fn auto_arima(y: &[f64], cfg: &ArimaConfig) -> Result<ArimaFit, ArimaError> {
    let (fit, ic) = search(y, cfg, 1)?.swap_remove(0);
    if cfg.optimizer == Optimizer::Reference || !ic.is_finite() {
        return Ok(fit);
    }
    // the candidates were fitted with loose tolerances: polish the winner
    Ok(polish(y, fit))
}

/// Refits `fit` warm-started with tight tolerances; keeps the original
/// when that fails or is no more likely.
fn polish(y: &[f64], fit: ArimaFit) -> ArimaFit {
    match refit_from(y, &fit, COLD_MAX_ITER, true) {
        Ok(f) if f.loglik >= fit.loglik && !near_unit_root(&f) => f,
        _ => fit,
    }
}

/// The search behind [`auto_arima`]; returns up to `keep` (>= 1) fitted
/// candidates with a finite criterion, best first, as `(fit, criterion)`.
/// The constant / line / parabola shortcuts return one model with a NaN
/// criterion.
pub(crate) fn search(
    y: &[f64],
    cfg: &ArimaConfig,
    keep: usize,
) -> Result<Vec<(ArimaFit, f64)>, ArimaError> {
    check_series(y)?;
    let d = if is_constant(y) {
        0
    } else {
        ndiffs(y, cfg.kpss_alpha, cfg.max_d.min(2))
    };
    search_d(y, cfg, d, keep)
}

/// [`search`] with a given number of differences `d`.
pub(crate) fn search_d(
    y: &[f64],
    cfg: &ArimaConfig,
    d: usize,
    keep: usize,
) -> Result<Vec<(ArimaFit, f64)>, ArimaError> {
    check_series(y)?;
    let n = y.len();
    if is_constant(y) {
        return Ok(vec![(constant_fit(y[0], n), f64::NAN)]);
    }
    let max_p = cfg.max_p.min(5).min(n / 3);
    let max_q = cfg.max_q.min(5).min(n / 3);
    let ic = if n <= 3 {
        InformationCriterion::Aic
    } else {
        cfg.ic
    };
    let mut dx = y.to_vec();
    for _ in 0..d {
        dx = dx.windows(2).map(|w| w[1] - w[0]).collect();
    }
    if dx.is_empty() {
        return Err(ArimaError::TooShort { n, min: d + 1 });
    }
    if is_constant(&dx) {
        // the series is a line (d = 1) or a parabola (d = 2)
        let (spec, beta) = if d >= 2 {
            (
                Spec {
                    p: 0,
                    d: 2,
                    q: 0,
                    constant: false,
                },
                None,
            )
        } else {
            let m = dx.iter().sum::<f64>() / dx.len() as f64;
            (
                Spec {
                    p: 0,
                    d,
                    q: 0,
                    constant: true,
                },
                Some(m),
            )
        };
        return fit_arima(y, spec, None, beta, COLD_MAX_ITER, cfg.optimizer, true)
            .map(|f| vec![(f, f64::NAN)]);
    }
    let allow_drift = cfg.allow_drift && d == 1;
    let allow_mean = cfg.allow_mean && d == 0;
    let mut constant = allow_drift || allow_mean;

    let mut s = Stepwise {
        y,
        d,
        ic,
        optimizer: cfg.optimizer,
        keep: keep.max(1),
        best: None,
        best_ic: f64::INFINITY,
        others: Vec::new(),
        tried: Vec::with_capacity(NMODELS),
    };

    if !cfg.stepwise {
        for p in 0..=max_p {
            for q in 0..=max_q {
                if p + q > MAX_ORDER {
                    continue;
                }
                let consts: &[bool] = if constant { &[true, false] } else { &[false] };
                for &c in consts {
                    s.try_model(p, q, c);
                }
            }
        }
    } else {
        let (sp, sq) = if n < 10 { (1, 1) } else { (2, 2) };
        let mut p = sp.min(max_p);
        let mut q = sq.min(max_q);
        s.try_model(p, q, constant);
        if s.try_model(0, 0, constant) {
            (p, q) = (0, 0);
        }
        if max_p > 0 && s.try_model(1, 0, constant) {
            (p, q) = (1, 0);
        }
        if max_q > 0 && s.try_model(0, 1, constant) {
            (p, q) = (0, 1);
        }
        if constant && s.try_model(0, 0, false) {
            // statsforecast keeps `constant` as is here
            (p, q) = (0, 0);
        }
        let mut startk = 0;
        while startk < s.tried.len() && s.tried.len() < NMODELS {
            startk = s.tried.len();
            // neighbours in statsforecast's order: (dp, dq)
            let mut moved = false;
            for (np, nq) in neighbours(p, q, max_p, max_q) {
                if !s.is_new(np, nq, constant) {
                    continue;
                }
                if s.tried.len() >= NMODELS {
                    break;
                }
                if s.try_model(np, nq, constant) {
                    (p, q) = (np, nq);
                    moved = true;
                    break;
                }
            }
            if moved {
                continue;
            }
            if (allow_drift || allow_mean)
                && s.is_new(p, q, !constant)
                && s.tried.len() < NMODELS
                && s.try_model(p, q, !constant)
            {
                constant = !constant;
            }
        }
    }
    s.finish()
}

/// The state of one order search: the best fit so far and, when more than
/// one candidate is kept, the runners-up.
struct Stepwise<'a> {
    y: &'a [f64],
    d: usize,
    ic: InformationCriterion,
    optimizer: Optimizer,
    keep: usize,
    best: Option<ArimaFit>,
    best_ic: f64,
    /// Runners-up (finite criterion), kept when `keep > 1`.
    others: Vec<(ArimaFit, f64)>,
    tried: Vec<(usize, usize, bool)>,
}

impl Stepwise<'_> {
    fn is_new(&self, p: usize, q: usize, constant: bool) -> bool {
        !self.tried.contains(&(p, q, constant))
    }

    /// Fits ARIMA(p, d, q) (with a constant when `constant`); true when it
    /// is the new best.
    fn try_model(&mut self, p: usize, q: usize, constant: bool) -> bool {
        self.tried.push((p, q, constant));
        let spec = Spec {
            p,
            d: self.d,
            q,
            constant,
        };
        let (fit, v) = score(self.y, spec, self.ic, self.optimizer);
        if v < self.best_ic {
            if self.keep > 1 {
                if let Some(old) = self.best.take() {
                    self.others.push((old, self.best_ic));
                }
            }
            self.best_ic = v;
            self.best = fit;
            true
        } else {
            if self.keep > 1 && v.is_finite() {
                if let Some(f) = fit {
                    self.others.push((f, v));
                }
            }
            false
        }
    }

    /// The best fit first, then up to `keep - 1` runners-up by criterion.
    fn finish(self) -> Result<Vec<(ArimaFit, f64)>, ArimaError> {
        match self.best {
            Some(fit) if self.best_ic.is_finite() => {
                tracing::debug!(
                    p = fit.order().0,
                    d = fit.order().1,
                    q = fit.order().2,
                    constant = fit.constant,
                    ic = self.best_ic,
                    models = self.tried.len(),
                    "auto_arima selected"
                );
                let mut out = vec![(fit, self.best_ic)];
                if self.keep > 1 {
                    let mut others = self.others;
                    others.retain(|(_, v)| v.is_finite());
                    others.sort_by(|a, b| a.1.total_cmp(&b.1));
                    out.extend(others.into_iter().take(self.keep - 1));
                }
                Ok(out)
            }
            _ => Err(ArimaError::NoSuitableModel),
        }
    }
}

/// Iteration limit of the warm-started fits of [`search_local`].
const LOCAL_MAX_ITER: usize = 8;

/// The online order search: the Hyndman-Khandakar stepwise moves (the 8
/// neighbours of (p, q), then the constant toggled) started from the order
/// (p, q) of `start` instead of (2, 2), with `d` differences (the KPSS
/// choice on `y`; when it differs from `start`'s, the constant starts as
/// allowed), every candidate warm-started from `start`'s coefficients
/// (padded with zeros or truncated; CSS when the truncated AR part is not
/// stationary) rather than fitted cold. Returns up to `keep` candidates
/// with a finite criterion, best first; errors when none could be fitted.
pub(crate) fn search_local(
    y: &[f64],
    cfg: &ArimaConfig,
    start: &ArimaFit,
    d: usize,
    keep: usize,
) -> Result<Vec<(ArimaFit, f64)>, ArimaError> {
    check_series(y)?;
    let n = y.len();
    if n <= d + 1 || d > 2 {
        return Err(ArimaError::TooShort { n, min: d + 2 });
    }
    let max_p = cfg.max_p.min(5).min(n / 3);
    let max_q = cfg.max_q.min(5).min(n / 3);
    let ic = cfg.ic;
    let allow_const = (cfg.allow_drift && d == 1) || (cfg.allow_mean && d == 0);
    let crit = |f: &ArimaFit| -> f64 {
        let v = match ic {
            InformationCriterion::Aicc => f.aicc,
            InformationCriterion::Aic => f.aic,
        };
        if v.is_nan() || near_unit_root(f) {
            f64::INFINITY
        } else {
            v
        }
    };
    let fit_from = |p: usize, q: usize, c: bool, base: &ArimaFit| -> Option<(ArimaFit, f64)> {
        let mut ar = [0.0; super::kalman::MAX_R];
        let mut ma = [0.0; super::kalman::MAX_R];
        let (np, nq) = (p.min(base.ar.len()), q.min(base.ma.len()));
        ar[..np].copy_from_slice(&base.ar[..np]);
        ma[..nq].copy_from_slice(&base.ma[..nq]);
        let warm = Warm {
            ar: &ar[..p],
            ma: &ma[..q],
            beta: if c && base.d == d { base.beta } else { None },
        };
        let spec = Spec {
            p,
            d,
            q,
            constant: c,
        };
        match fit_arima(
            y,
            spec,
            Some(warm),
            None,
            LOCAL_MAX_ITER,
            Optimizer::Fast,
            false,
        ) {
            Ok(f) => {
                let v = crit(&f);
                Some((f, v))
            }
            Err(e) => {
                tracing::trace!(?spec, error = %e, "arima local candidate failed");
                None
            }
        }
    };
    let mut all: Vec<(ArimaFit, f64)> = Vec::new();
    let mut tried: Vec<(usize, usize, bool)> = Vec::new();
    let (mut p, mut q) = (start.p.min(max_p), start.q.min(max_q));
    let mut constant = if start.d == d {
        start.constant && allow_const
    } else {
        allow_const
    };
    tried.push((p, q, constant));
    let Some(first) = fit_from(p, q, constant, start) else {
        return Err(ArimaError::NoSuitableModel);
    };
    let mut best_ic = first.1;
    let mut best_idx = 0;
    all.push(first);
    loop {
        if tried.len() >= NMODELS {
            break;
        }
        let mut moved = false;
        for (np, nq) in neighbours(p, q, max_p, max_q) {
            if tried.contains(&(np, nq, constant)) {
                continue;
            }
            tried.push((np, nq, constant));
            let base = &all[best_idx].0;
            if let Some(c) = fit_from(np, nq, constant, base) {
                let better = c.1 < best_ic;
                all.push(c);
                if better {
                    best_ic = all[all.len() - 1].1;
                    best_idx = all.len() - 1;
                    p = np;
                    q = nq;
                    moved = true;
                    break;
                }
            }
        }
        if moved {
            continue;
        }
        if allow_const && !tried.contains(&(p, q, !constant)) {
            tried.push((p, q, !constant));
            let base = &all[best_idx].0;
            if let Some(c) = fit_from(p, q, !constant, base) {
                let better = c.1 < best_ic;
                all.push(c);
                if better {
                    best_ic = all[all.len() - 1].1;
                    best_idx = all.len() - 1;
                    constant = !constant;
                    continue;
                }
            }
        }
        break;
    }
    if !best_ic.is_finite() {
        return Err(ArimaError::NoSuitableModel);
    }
    all.retain(|(_, v)| v.is_finite());
    all.sort_by(|a, b| a.1.total_cmp(&b.1));
    all.truncate(keep.max(1));
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_series_gives_flat_zero_std_forecast() {
        let fit = auto_arima(&[3.0; 30], &ArimaConfig::default()).expect("fit");
        assert_eq!(fit.order(), (0, 0, 0));
        assert_eq!(fit.forecast(3), vec![(3.0, 0.0); 3]);
    }

    #[test]
    fn linear_series_is_a_drift_random_walk() {
        let y: Vec<f64> = (0..40).map(|t| 2.0 + 0.5 * t as f64).collect();
        let fit = auto_arima(&y, &ArimaConfig::default()).expect("fit");
        assert_eq!(fit.order().1, 1);
        let fc = fit.forecast(2);
        assert!((fc[0].0 - (2.0 + 0.5 * 40.0)).abs() < 1e-6, "{fc:?}");
        assert!((fc[1].0 - (2.0 + 0.5 * 41.0)).abs() < 1e-6, "{fc:?}");
    }

    #[test]
    fn rejects_bad_input() {
        assert!(matches!(
            auto_arima(&[], &ArimaConfig::default()),
            Err(ArimaError::TooShort { .. })
        ));
        assert!(matches!(
            auto_arima(&[1.0, f64::NAN], &ArimaConfig::default()),
            Err(ArimaError::NonFinite { index: 1 })
        ));
    }
}

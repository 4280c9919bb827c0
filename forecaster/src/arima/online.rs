//! Online auto-ARIMA: a sliding window of the last `window` samples
//! (winsorized before fitting), the `average_models` best candidates of the
//! last order search combined with Akaike weights, their coefficients
//! re-optimised warm every `param_refit_every` samples (filtered only in
//! between), and a local order search from the current order every
//! `research_every` samples or when the one-step errors degrade (a full
//! search for the first model and when the local one fails).

use std::collections::VecDeque;

use super::auto::{search, search_local};
use super::config::{ArimaConfig, InformationCriterion};
use super::fit::{near_unit_root, refilter, refit_from, ArimaFit};
use super::kpss::ndiffs;
use crate::{ForecastError, Forecaster, Predictive};

/// Online auto-ARIMA forecaster (see the module docs).
///
/// `forecast(horizon)` answers for the PEAK of the next `horizon` samples:
/// from the per-step forecasts `(m_k, s_k)`, k = 1..horizon, the mean is
/// `max_k m_k` and the std is chosen so that the 2-sigma upper band equals
/// `max_k (m_k + 2 s_k)`, i.e. `std = (max_k (m_k + 2 s_k) - max_k m_k) / 2`.
/// This keeps the band that the shaper provisions from at least as high as
/// every single step's band while the mean stays the most likely peak level.
#[derive(Clone, Debug)]
pub struct AutoArima {
    cfg: ArimaConfig,
    buf: VecDeque<f64>,
    observed: usize,
    /// Current models, the selected (best criterion) first; more than one
    /// when `average_models > 1`.
    fits: Vec<ArimaFit>,
    since_search: usize,
    /// Recent squared standardized one-step errors.
    errs: VecDeque<f64>,
    /// Per-step forecasts cached after each refit (up to `cache_h` steps).
    cache: Vec<(f64, f64)>,
    scratch: Vec<f64>,
    sort_buf: Vec<f64>,
    searches: usize,
    local_searches: usize,
}

const CACHE_H: usize = 12;

impl AutoArima {
    /// A new forecaster; the config is validated.
    pub fn new(cfg: ArimaConfig) -> Result<AutoArima, ForecastError> {
        cfg.validate().map_err(|e| e.prefixed("arima"))?;
        Ok(AutoArima {
            buf: VecDeque::with_capacity(cfg.window + 1),
            cfg,
            observed: 0,
            fits: Vec::new(),
            since_search: 0,
            errs: VecDeque::new(),
            cache: Vec::new(),
            scratch: Vec::new(),
            sort_buf: Vec::new(),
            searches: 0,
            local_searches: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ArimaConfig {
        &self.cfg
    }

    /// Full order searches run so far (diagnostics).
    pub fn searches(&self) -> usize {
        self.searches
    }

    /// Local (warm-started, from the current order) searches run so far,
    /// triggered by degraded one-step errors (diagnostics).
    pub fn local_searches(&self) -> usize {
        self.local_searches
    }

    /// The current model, if one is fitted.
    pub fn current_fit(&self) -> Option<&ArimaFit> {
        self.fits.first()
    }

    /// Per-step forecasts `(mean, std)` for steps 1..=h (fallback when no
    /// model is fitted: the last value with the fallback std, growing like a
    /// random walk).
    pub fn forecast_steps(&self, h: usize) -> Vec<(f64, f64)> {
        let h = h.max(1);
        if !self.fits.is_empty() {
            let fc = if h <= self.cache.len() {
                self.cache[..h].to_vec()
            } else {
                self.combined_forecast(h)
            };
            if fc.iter().all(|(m, s)| m.is_finite() && s.is_finite()) {
                return fc;
            }
        }
        let (last, std) = self.fallback();
        (1..=h).map(|k| (last, std * (k as f64).sqrt())).collect()
    }

    /// Last value and a std from the mean absolute difference of the recent
    /// samples (`1.2533 * mean |diff|`, the Gaussian ratio); with one sample
    /// 10% of its magnitude.
    fn fallback(&self) -> (f64, f64) {
        let Some(&last) = self.buf.back() else {
            return (0.0, 0.0);
        };
        let n = self.buf.len();
        if n < 2 {
            return (last, 0.1 * last.abs());
        }
        let start = n.saturating_sub(21);
        let mut acc = 0.0;
        let mut cnt = 0;
        for i in (start + 1)..n {
            acc += (self.buf[i] - self.buf[i - 1]).abs();
            cnt += 1;
        }
        let std = 1.2533 * acc / cnt as f64;
        (last, if std.is_finite() { std } else { 0.0 })
    }

    fn degraded(&self) -> bool {
        self.errs.len() >= self.cfg.degrade_window
            && self.errs.iter().sum::<f64>() / self.errs.len() as f64 > self.cfg.degrade_ratio
    }

    fn criterion(&self, f: &ArimaFit) -> f64 {
        match self.cfg.ic {
            InformationCriterion::Aicc => f.aicc,
            InformationCriterion::Aic => f.aic,
        }
    }

    /// Forecasts of the current models combined with Akaike weights: the
    /// mixture's mean and std per step.
    fn combined_forecast(&self, h: usize) -> Vec<(f64, f64)> {
        if self.fits.len() == 1 {
            return self.fits[0].forecast(h);
        }
        let ics: Vec<f64> = self.fits.iter().map(|f| self.criterion(f)).collect();
        let min = ics.iter().copied().fold(f64::INFINITY, f64::min);
        let w: Vec<f64> = ics.iter().map(|v| (-0.5 * (v - min)).exp()).collect();
        let wsum: f64 = w.iter().sum();
        let mut m1 = vec![0.0; h];
        let mut m2 = vec![0.0; h];
        for (f, wi) in self.fits.iter().zip(&w) {
            let wi = wi / wsum;
            for (k, (m, s)) in f.forecast(h).into_iter().enumerate() {
                m1[k] += wi * m;
                m2[k] += wi * (s * s + m * m);
            }
        }
        m1.iter()
            .zip(&m2)
            .map(|(&m, &v)| (m, (v - m * m).max(0.0).sqrt()))
            .collect()
    }

    fn warm_refit(&self, y: &[f64], old: &ArimaFit) -> Option<ArimaFit> {
        if old.constant_series.is_some() {
            return None;
        }
        match refit_from(y, old, self.cfg.warm_max_iter, false) {
            Ok(f) if !near_unit_root(&f) && self.criterion(&f).is_finite() => Some(f),
            Ok(_) => {
                tracing::debug!("warm refit near a unit root");
                None
            }
            Err(e) => {
                tracing::debug!(error = %e, "warm refit failed");
                None
            }
        }
    }

    fn refit(&mut self) {
        self.scratch.clear();
        self.scratch.extend(self.buf.iter().copied());
        let mut y = std::mem::take(&mut self.scratch);
        winsorize(&mut y, self.cfg.clip_mads, &mut self.sort_buf);
        let full_search = self.fits.is_empty() || self.fits[0].constant_series.is_some();
        let mut new_fits = Vec::new();
        let mut local =
            !full_search && (self.since_search >= self.cfg.research_every || self.degraded());
        if !full_search && !local {
            let reopt = self.observed.is_multiple_of(self.cfg.param_refit_every);
            for (i, old) in self.fits.iter().enumerate() {
                let f = if reopt {
                    self.warm_refit(&y, old)
                } else {
                    refilter(&y, old).ok()
                };
                match f {
                    Some(f) => new_fits.push(f),
                    None if i == 0 => {
                        // the selected model failed: search around it
                        new_fits.clear();
                        local = true;
                        break;
                    }
                    None => {}
                }
            }
        }
        if local {
            // periodic, errors degraded or the selected model failed:
            // search the neighbourhood of the current order (warm-started)
            let d = ndiffs(&y, self.cfg.kpss_alpha, self.cfg.max_d.min(2));
            match search_local(&y, &self.cfg, &self.fits[0], d, self.cfg.average_models) {
                Ok(all) => new_fits = all.into_iter().map(|(f, _)| f).collect(),
                Err(e) => tracing::debug!(error = %e, "local order search failed"),
            }
            self.errs.clear();
            self.since_search = 0;
            self.local_searches += 1;
        }
        if new_fits.is_empty() {
            match search(&y, &self.cfg, self.cfg.average_models) {
                Ok(all) => new_fits = all.into_iter().map(|(f, _)| f).collect(),
                Err(e) => tracing::debug!(error = %e, "auto_arima failed; using the fallback"),
            }
            self.since_search = 0;
            self.errs.clear();
            self.searches += 1;
        }
        self.scratch = y;
        self.fits = new_fits;
        self.cache = if self.fits.is_empty() {
            Vec::new()
        } else {
            self.combined_forecast(CACHE_H)
        };
    }
}

/// Clamps every sample but the newest to `median +- c * 1.4826 * MAD` of
/// `y` (nothing when `c` is 0 or the MAD is 0). Isolated spikes otherwise
/// dominate a 60-sample Gaussian fit (the mean, the AR/MA coefficients and
/// the order); the newest sample is kept as is so that a level shift shows
/// at once.
fn winsorize(y: &mut [f64], c: f64, buf: &mut Vec<f64>) {
    let n = y.len();
    if !(c > 0.0) || n < 3 {
        return;
    }
    buf.clear();
    buf.extend_from_slice(y);
    let mid = n / 2;
    let med = *buf.select_nth_unstable_by(mid, f64::total_cmp).1;
    for (b, v) in buf.iter_mut().zip(y.iter()) {
        *b = (v - med).abs();
    }
    let mad = 1.4826 * *buf.select_nth_unstable_by(mid, f64::total_cmp).1;
    if !(mad > 0.0 && mad.is_finite()) {
        return;
    }
    let (lo, hi) = (med - c * mad, med + c * mad);
    for v in y[..n - 1].iter_mut() {
        *v = v.clamp(lo, hi);
    }
}

impl Forecaster for AutoArima {
    fn name(&self) -> &'static str {
        "arima"
    }

    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        crate::finite(value)?;
        // one-step error of the previous forecast, standardized
        if let Some(&(m, s)) = self.cache.first() {
            if s > 0.0 {
                let z = (value - m) / s;
                self.errs.push_back(z * z);
                while self.errs.len() > self.cfg.degrade_window {
                    self.errs.pop_front();
                }
            }
        }
        self.buf.push_back(value);
        while self.buf.len() > self.cfg.window {
            self.buf.pop_front();
        }
        self.observed += 1;
        self.since_search += 1;
        if self.buf.len() >= self.cfg.min_samples {
            self.refit();
        }
        Ok(())
    }

    fn forecast(&self, horizon: usize) -> Predictive {
        if self.buf.is_empty() {
            return Predictive::gaussian(0.0, 0.0);
        }
        let steps = self.forecast_steps(horizon.max(1));
        let mut mean = f64::NEG_INFINITY;
        let mut upper = f64::NEG_INFINITY;
        for &(m, s) in &steps {
            mean = mean.max(m);
            upper = upper.max(m + 2.0 * s);
        }
        Predictive::gaussian(mean, ((upper - mean) / 2.0).max(0.0))
    }

    fn observed(&self) -> usize {
        self.observed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_before_min_samples_and_model_after() {
        let mut m = AutoArima::new(ArimaConfig::default()).expect("cfg");
        assert_eq!(m.forecast(1), Predictive::gaussian(0.0, 0.0));
        m.observe(5.0).expect("finite");
        let p = m.forecast(1);
        assert_eq!(p.mean, 5.0);
        assert!((p.std - 0.5).abs() < 1e-12);
        for i in 0..40 {
            m.observe(5.0 + ((i * 37) % 11) as f64 * 0.3)
                .expect("finite");
        }
        assert!(m.current_fit().is_some());
        let p = m.forecast(3);
        assert!(p.mean.is_finite() && p.std > 0.0);
        assert_eq!(m.observed(), 41);
    }

    #[test]
    fn nan_is_rejected_and_state_unchanged() {
        let mut m = AutoArima::new(ArimaConfig::default()).expect("cfg");
        for i in 0..15 {
            m.observe(i as f64).expect("finite");
        }
        let before = m.forecast(2);
        assert!(matches!(
            m.observe(f64::NAN),
            Err(ForecastError::NonFinite { .. })
        ));
        assert!(m.observe(f64::INFINITY).is_err());
        assert_eq!(m.forecast(2), before);
        assert_eq!(m.observed(), 15);
    }

    #[test]
    fn peak_forecast_dominates_every_step() {
        let mut m = AutoArima::new(ArimaConfig::default()).expect("cfg");
        for i in 0..60 {
            m.observe(10.0 + 0.2 * i as f64 + ((i * 13) % 7) as f64 * 0.1)
                .expect("finite");
        }
        let steps = m.forecast_steps(5);
        let p = m.forecast(5);
        for (mk, sk) in steps {
            assert!(p.mean >= mk - 1e-12);
            assert!(p.upper(2.0) >= mk + 2.0 * sk - 1e-9);
        }
    }

    #[test]
    fn invalid_config_is_refused() {
        let cfg = ArimaConfig {
            window: 1,
            ..Default::default()
        };
        assert!(matches!(AutoArima::new(cfg), Err(ForecastError::Config(_))));
    }

    mod props {
        use super::super::super::auto::auto_arima;
        use super::*;
        use proptest::prelude::*;

        fn series() -> impl Strategy<Value = Vec<f64>> {
            (
                prop::collection::vec(-1.0f64..1.0, 0..90),
                prop_oneof![Just(1e-6), Just(1.0), Just(1e3), Just(1e7)],
                -1e6f64..1e6,
                any::<bool>(),
            )
                .prop_map(|(noise, scale, level, walk)| {
                    let mut acc = 0.0;
                    noise
                        .iter()
                        .map(|e| {
                            if walk {
                                acc += e;
                                level + scale * acc
                            } else {
                                level + scale * e
                            }
                        })
                        .collect()
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

            #[test]
            fn offline_never_panics_and_forecasts_are_finite(y in series()) {
                if let Ok(fit) = auto_arima(&y, &ArimaConfig::default()) {
                    for (m, s) in fit.forecast(6) {
                        prop_assert!(m.is_finite() && s.is_finite() && s >= 0.0, "{m} {s}");
                    }
                }
            }

            #[test]
            fn online_never_panics_and_forecasts_are_finite(
                y in series(),
                bad in prop::collection::vec(prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)], 0..3),
                h in 0usize..8,
            ) {
                let cfg = ArimaConfig { window: 40, research_every: 7, ..ArimaConfig::default() };
                let mut m = AutoArima::new(cfg).expect("valid");
                for (i, v) in y.iter().enumerate() {
                    m.observe(*v).expect("finite sample accepted");
                    if let Some(b) = bad.get(i % 11) {
                        prop_assert!(m.observe(*b).is_err());
                    }
                    let p = m.forecast(h);
                    prop_assert!(p.mean.is_finite() && p.std.is_finite() && p.std >= 0.0, "{p:?}");
                }
                prop_assert_eq!(m.observed(), y.len());
            }
        }
    }
}

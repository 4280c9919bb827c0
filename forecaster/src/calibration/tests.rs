//! Tests of the calibration wrapper and its tables.

use super::*;
use crate::LastValue;

/// Deterministic heavy-tailed noise (Cauchy-like mixture).
fn noise(i: u64) -> f64 {
    let mut x = i
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    let u = (x >> 11) as f64 / (1u64 << 53) as f64;
    let u = u.clamp(1e-6, 1.0 - 1e-6);
    // Student-t(3)-like through a Laplace/Pareto mixture
    if u < 0.5 {
        (2.0 * u).ln()
    } else {
        -(2.0 * (1.0 - u)).ln()
    }
}

/// The table as computed before the tails were fitted once per side
/// and their growth per level precomputed: each level fitted its own
/// tail on a negated copy of the errors.
fn reference_table<F: Forecaster>(c: &Calibrated<F>, up: &[f64], overlap: f64) -> Calibration {
    let side_quantile = |v: &[f64], p: f64| -> Option<f64> {
        if v.is_empty() {
            return None;
        }
        let p0 = c.cfg.tail_threshold;
        if p >= p0 {
            return Some(quantile_sorted(v, 1.0 - p));
        }
        let u0 = quantile_sorted(v, 1.0 - p0);
        let (mut sum, mut cnt) = (0.0, 0usize);
        for &z in v.iter().rev() {
            if z <= u0 {
                break;
            }
            sum += z - u0;
            cnt += 1;
        }
        if cnt == 0 {
            return Some(u0);
        }
        let beta = sum / cnt as f64;
        let xi = c.cfg.tail_shape;
        let sigma = beta * (1.0 - xi);
        let ratio = p0 / p;
        Some(if xi.abs() < 1e-9 {
            u0 + sigma * ratio.ln()
        } else {
            u0 + sigma / xi * (ratio.powf(xi) - 1.0)
        })
    };
    let down: Vec<f64> = up.iter().rev().map(|z| -z).collect();
    let n = up.len() as f64 / overlap.max(1.0);
    let lv = &c.levels;
    let gauss_mad = 0.674_489_75;
    let (center, mad) = if up.is_empty() {
        (0.0, gauss_mad)
    } else {
        let med = quantile_sorted(up, 0.5);
        let mut dev: Vec<f64> = up.iter().map(|z| (z - med).abs()).collect();
        dev.sort_by(f64::total_cmp);
        (med, quantile_sorted(&dev, 0.5))
    };
    let w0 = c.cfg.prior_scale_weight;
    let mad = if n + w0 > 0.0 {
        (n * mad + w0 * gauss_mad) / (n + w0)
    } else {
        gauss_mad
    };
    let scale = mad / lv.t_mad;
    let w = n / (n + c.cfg.prior_weight);
    let mut out = Calibration {
        upper: [0.0; CALIBRATION_LEVELS],
        lower: [0.0; CALIBRATION_LEVELS],
    };
    let (mut prev_u, mut prev_l) = (0.0f64, 0.0f64);
    for i in 1..CALIBRATION_LEVELS {
        let p = lv.tail[i];
        let prior_u = center + scale * lv.t_quant[i];
        let prior_l = -center + scale * lv.t_quant[i];
        let u = side_quantile(up, p).map_or(prior_u, |e| w * e + (1.0 - w) * prior_u);
        let l = side_quantile(&down, p).map_or(prior_l, |e| w * e + (1.0 - w) * prior_l);
        let u = if u.is_finite() {
            u.max(prev_u).max(0.0)
        } else {
            prev_u
        };
        let l = if l.is_finite() {
            l.max(prev_l).max(0.0)
        } else {
            prev_l
        };
        out.upper[i] = u as f32;
        out.lower[i] = l as f32;
        prev_u = u;
        prev_l = l;
    }
    out
}

proptest::proptest! {
    /// The table is the same bits as the reference's, whatever the
    /// errors and the tail's settings.
    #[test]
    fn the_table_is_the_references_bit_for_bit(
        mut zs in proptest::collection::vec(
            proptest::prop_oneof![-50.0f64..50.0, -2.0f64..2.0, proptest::strategy::Just(0.0)],
            0..320,
        ),
        tail_threshold in 0.01f64..0.5,
        tail_shape in proptest::prop_oneof![proptest::strategy::Just(0.0), 0.0f64..0.99],
        prior_dof in 1.0f64..30.0,
        overlap in 1.0f64..8.0,
    ) {
        zs.sort_by(f64::total_cmp);
        let cfg = CalibrationConfig { tail_threshold, tail_shape, prior_dof, ..Default::default() };
        let c = Calibrated::new(LastValue::new(), cfg).expect("cfg");
        let (new, old) = (c.compute_table(&zs, overlap), reference_table(&c, &zs, overlap));
        let bits = |t: &Calibration| {
            t.upper.iter().chain(&t.lower).map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        proptest::prop_assert_eq!(bits(&new), bits(&old));
    }
}

#[test]
fn gaussian_prior_before_data_is_heavier_than_gaussian_in_the_tail() {
    let c = Calibrated::new(LastValue::new(), CalibrationConfig::default()).expect("cfg");
    let t = c.calibration();
    assert!(t.upper_mult(3.0) > 3.0);
    assert!(
        t.upper_mult(1.0) > 0.8 && t.upper_mult(1.0) < 1.3,
        "{}",
        t.upper_mult(1.0)
    );
}

#[test]
fn calibrated_bands_cover_heavy_tailed_errors() {
    // level 100 + Laplace noise; last-value model's diff-std is sqrt(2) x
    // the noise std, so it is mis-scaled; calibration must fix coverage.
    let mut c = Calibrated::new(LastValue::new(), CalibrationConfig::default()).expect("cfg");
    let (mut in1, mut in2, mut above3, mut n) = (0, 0, 0, 0);
    for i in 0..4000u64 {
        let y = 100.0 + noise(i);
        if i > 300 {
            let p = c.forecast(1);
            n += 1;
            in1 += p.covers(y, 1.0) as usize;
            in2 += p.covers(y, 2.0) as usize;
            above3 += (y > p.upper(3.0)) as usize;
        }
        c.observe(y).expect("finite");
    }
    let (c1, c2, a3) = (
        in1 as f64 / n as f64,
        in2 as f64 / n as f64,
        above3 as f64 / n as f64,
    );
    assert!((c1 - 0.683).abs() < 0.04, "coverage 1: {c1}");
    assert!((c2 - 0.954).abs() < 0.025, "coverage 2: {c2}");
    assert!(a3 < 0.004, "above 3: {a3}");
}

/// Last value with a fixed std whatever the horizon: its multi-step
/// bands are far too narrow for the peak of a random walk.
#[derive(Clone, Debug, Default)]
struct FixedStd {
    last: Option<f64>,
    n: usize,
}

impl Forecaster for FixedStd {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        self.last = Some(value);
        self.n += 1;
        Ok(())
    }
    fn forecast(&self, _horizon: usize) -> Predictive {
        Predictive::gaussian(self.last.unwrap_or(0.0), 1.4)
    }
    fn observed(&self) -> usize {
        self.n
    }
}

/// Counts its forecasts; an OOM kill raises its level.
#[derive(Debug, Default)]
struct Counting {
    last: f64,
    n: usize,
    forecasts: std::cell::Cell<usize>,
}

impl Forecaster for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }
    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        self.last = value;
        self.n += 1;
        Ok(())
    }
    fn forecast(&self, horizon: usize) -> Predictive {
        self.forecasts.set(self.forecasts.get() + 1);
        Predictive::gaussian(self.last + horizon as f64, 1.0)
    }
    fn observed(&self) -> usize {
        self.n
    }
    fn observe_oom(&mut self, alloc: f64) -> Result<(), ForecastError> {
        self.last = alloc;
        Ok(())
    }
}

#[test]
fn the_rounds_forecast_reuses_the_one_made_at_its_observation() {
    let mut c = Calibrated::new(Counting::default(), CalibrationConfig::default()).expect("cfg");
    for (i, v) in [1.0, 2.0, 4.0, 3.0].into_iter().enumerate() {
        c.forecast(6); // the horizon the rounds ask (tracked from here on)
        c.observe(v).expect("finite");
        let made = c.inner().forecasts.get();
        let (one, six) = (c.forecast(1), c.forecast(6));
        assert_eq!(c.inner().forecasts.get(), made, "round {i}: computed again");
        assert_eq!((one.mean, six.mean), (v + 1.0, v + 6.0));
        // a horizon not made at the observation is computed
        assert_eq!(c.forecast(3).mean, v + 3.0);
        assert_eq!(c.inner().forecasts.get(), made + 1);
    }
    // an OOM kill changes the model: its forecasts are computed anew
    c.observe_oom(10.0).expect("finite");
    assert_eq!((c.forecast(1).mean, c.forecast(6).mean), (11.0, 16.0));
}

#[test]
fn multi_step_peak_gets_its_own_table() {
    // random walk with Laplace steps (std sqrt 2): the one-step table is
    // right for one step, far too narrow for the peak of the next 4
    let h = 4;
    let mut y = 0.0;
    let ys: Vec<f64> = (0..4000u64)
        .map(|i| {
            y += noise(i);
            y
        })
        .collect();
    let mut c = Calibrated::new(FixedStd::default(), CalibrationConfig::default()).expect("cfg");
    let (mut above2, mut above2_one_step, mut n) = (0, 0, 0);
    for (i, &v) in ys.iter().enumerate() {
        let p = c.forecast(h);
        if i > 300 && i + h <= ys.len() {
            let peak = ys[i..i + h]
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            let one = Predictive {
                calibration: Some(std::sync::Arc::new(c.table)),
                ..p.clone()
            };
            n += 1;
            above2 += (peak > p.upper(2.0)) as usize;
            above2_one_step += (peak > one.upper(2.0)) as usize;
        }
        c.observe(v).expect("finite");
    }
    let multi = c.multi.as_ref().expect("tracked");
    assert_eq!(multi.horizon, h);
    let (a2, a2_one) = (above2 as f64 / n as f64, above2_one_step as f64 / n as f64);
    assert!(a2_one > 0.06, "one-step table above upper(2): {a2_one}");
    assert!(a2 < 0.0228 + 0.01, "multi-step table above upper(2): {a2}");
    // one-step forecasts keep the one-step table
    assert_eq!(
        c.forecast(1).calibration,
        Some(std::sync::Arc::new(c.table))
    );
}

#[test]
fn rejects_non_finite() {
    let mut c = Calibrated::new(LastValue::new(), CalibrationConfig::default()).expect("cfg");
    assert!(c.observe(f64::INFINITY).is_err());
    assert_eq!(c.observed(), 0);
    assert!(CalibrationConfig {
        window: 1,
        prior_dof: 0.0,
        ..Default::default()
    }
    .validate()
    .is_err());
}

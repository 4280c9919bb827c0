//! Online evaluation: replay a series through a forecaster one sample at a
//! time, forecasting before each observation, and score the forecasts.
//!
//! With horizon `k` the forecast made before sample `i` is scored against
//! the peak `max(y_i, ..., y_{i+k-1})`, and the naive reference for MASE is
//! the last observed value `y_{i-1}`. A point is scored once at least one
//! sample has been observed, so the naive forecast exists. Used by
//! `tailor forecast`, the quality harness and the benches.

use std::time::Instant;

use serde::Serialize;

use crate::Forecaster;

/// Sums over scored points (pool several series by [`ReplayStats::merge`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayStats {
    /// Scored points.
    pub points: usize,
    pub sum_abs_err: f64,
    pub sum_abs_naive: f64,
    /// Points inside `[lower(k), upper(k)]` for k = 1, 2, 3.
    pub inside: [usize; 3],
    /// Points above `upper(k)` for k = 1, 2, 3.
    pub above: [usize; 3],
    /// Sum of `upper(2) - mean`.
    pub sum_band_2: f64,
    /// Sum of `|actual|`.
    pub sum_level: f64,
    /// Model updates (observe + forecast) timed.
    pub updates: usize,
    /// Seconds spent in those updates.
    pub update_secs: f64,
    /// Series pooled.
    pub series: usize,
}

impl ReplayStats {
    /// Adds `other`'s sums to `self`.
    pub fn merge(&mut self, other: &ReplayStats) {
        self.points += other.points;
        self.sum_abs_err += other.sum_abs_err;
        self.sum_abs_naive += other.sum_abs_naive;
        for i in 0..3 {
            self.inside[i] += other.inside[i];
            self.above[i] += other.above[i];
        }
        self.sum_band_2 += other.sum_band_2;
        self.sum_level += other.sum_level;
        self.updates += other.updates;
        self.update_secs += other.update_secs;
        self.series += other.series;
    }

    /// The scores these sums give.
    pub fn score(&self, model: &str) -> ReplayScore {
        let n = self.points.max(1) as f64;
        let mae = self.sum_abs_err / n;
        let naive = self.sum_abs_naive / n;
        ReplayScore {
            model: model.to_string(),
            series: self.series,
            points: self.points,
            mae,
            mase: if naive > 0.0 { mae / naive } else { f64::NAN },
            coverage_1sigma: self.inside[0] as f64 / n,
            coverage_2sigma: self.inside[1] as f64 / n,
            coverage_3sigma: self.inside[2] as f64 / n,
            upper_exceed_1sigma: self.above[0] as f64 / n,
            upper_exceed_2sigma: self.above[1] as f64 / n,
            upper_exceed_3sigma: self.above[2] as f64 / n,
            mean_band_2: self.sum_band_2 / n,
            mean_level: self.sum_level / n,
            updates_per_sec: if self.update_secs > 0.0 {
                self.updates as f64 / self.update_secs
            } else {
                f64::NAN
            },
        }
    }
}

/// Scores of one replay (or a pool of replays).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayScore {
    pub model: String,
    pub series: usize,
    pub points: usize,
    pub mae: f64,
    /// MAE / last-value MAE on the same points (NaN when that is 0).
    pub mase: f64,
    pub coverage_1sigma: f64,
    pub coverage_2sigma: f64,
    pub coverage_3sigma: f64,
    pub upper_exceed_1sigma: f64,
    pub upper_exceed_2sigma: f64,
    pub upper_exceed_3sigma: f64,
    /// Mean of `upper(2) - mean`.
    pub mean_band_2: f64,
    /// Mean of `|actual|`.
    pub mean_level: f64,
    pub updates_per_sec: f64,
}

/// Replays `values` (at most `max_points` of them) through `model` with
/// forecasts of the peak over `horizon` samples. Non-finite samples are
/// skipped (neither observed nor scored).
pub fn replay(
    model: &mut dyn Forecaster,
    values: &[f64],
    horizon: usize,
    max_points: Option<usize>,
) -> ReplayStats {
    let horizon = horizon.max(1);
    let values: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let len = max_points.map_or(values.len(), |m| m.min(values.len()));
    let values = &values[..len];
    let mut st = ReplayStats {
        series: 1,
        ..ReplayStats::default()
    };
    for i in 0..len {
        if i >= 1 && i + horizon <= len {
            let t0 = Instant::now();
            let p = model.forecast(horizon);
            st.update_secs += t0.elapsed().as_secs_f64();
            let actual = values[i..i + horizon]
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            let naive = values[i - 1];
            if p.mean.is_finite() {
                st.points += 1;
                st.sum_abs_err += (actual - p.mean).abs();
                st.sum_abs_naive += (actual - naive).abs();
                for (j, k) in [1.0, 2.0, 3.0].into_iter().enumerate() {
                    st.inside[j] += p.covers(actual, k) as usize;
                    st.above[j] += (actual > p.upper(k)) as usize;
                }
                st.sum_band_2 += p.band_above(2.0);
                st.sum_level += actual.abs();
            }
        }
        let t0 = Instant::now();
        // values are finite, so observe cannot fail with NonFinite
        if let Err(e) = model.observe(values[i]) {
            tracing::debug!(error = %e, "observe failed during replay");
        }
        st.update_secs += t0.elapsed().as_secs_f64();
        st.updates += 1;
    }
    st
}

/// Result of evaluating one model over a pool of series.
#[derive(Clone, Debug, Serialize)]
pub struct PoolReport {
    /// Scores pooled over every point of every series.
    pub pooled: ReplayScore,
    /// Median over series of MASE.
    pub median_mase: f64,
    /// Median over series of `mean_band_2 / mean_level`.
    pub median_band_ratio: f64,
    /// Per-series scores, in input order.
    pub per_series: Vec<(String, ReplayScore)>,
}

/// Replays every `(name, values)` series through a fresh model from
/// `build` (one-step or `horizon`-step peak, at most `max_points` samples
/// each) and pools the scores.
pub fn evaluate_pool<F>(
    model_name: &str,
    mut build: F,
    series: &[(String, Vec<f64>)],
    horizon: usize,
    max_points: Option<usize>,
) -> Result<PoolReport, crate::ForecastError>
where
    F: FnMut() -> Result<Box<dyn Forecaster>, crate::ForecastError>,
{
    let mut pooled = ReplayStats::default();
    let mut per_series = Vec::with_capacity(series.len());
    for (name, values) in series {
        let mut m = build()?;
        let st = replay(m.as_mut(), values, horizon, max_points);
        pooled.merge(&st);
        per_series.push((name.clone(), st.score(model_name)));
    }
    let median_mase = median(per_series.iter().map(|(_, s)| s.mase));
    let median_band_ratio = median(per_series.iter().map(|(_, s)| s.mean_band_2 / s.mean_level));
    Ok(PoolReport {
        pooled: pooled.score(model_name),
        median_mase,
        median_band_ratio,
        per_series,
    })
}

/// Median of the finite values (NaN when none).
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LastValue, Oracle};

    #[test]
    fn last_value_has_mase_one_and_oracle_zero() {
        let s: Vec<f64> = (0..50).map(|i| ((i * 37) % 11) as f64).collect();
        let mut l = LastValue::new();
        let st = replay(&mut l, &s, 1, None);
        assert_eq!(st.points, 49);
        assert!((st.score("last").mase - 1.0).abs() < 1e-12);
        let mut o = Oracle::new(s.clone()).expect("finite");
        let sc = replay(&mut o, &s, 3, Some(40)).score("oracle");
        assert_eq!(sc.points, 37);
        assert_eq!(sc.mae, 0.0);
        assert_eq!(sc.coverage_1sigma, 1.0);
        assert_eq!(sc.upper_exceed_3sigma, 0.0);
    }

    #[test]
    fn merge_pools_sums_and_median() {
        let mut a = ReplayStats {
            points: 2,
            sum_abs_err: 1.0,
            sum_abs_naive: 2.0,
            series: 1,
            ..Default::default()
        };
        let b = ReplayStats {
            points: 2,
            sum_abs_err: 3.0,
            sum_abs_naive: 2.0,
            series: 1,
            ..Default::default()
        };
        a.merge(&b);
        assert_eq!(a.series, 2);
        assert!((a.score("x").mase - 1.0).abs() < 1e-12);
        assert_eq!(median([3.0, 1.0, f64::NAN, 2.0]), 2.0);
        assert!(median([]).is_nan());
    }
}

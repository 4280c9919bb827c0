//! Risk-targeted memory (`[shaper] memory_risk = P`): a split-conformal
//! calibration of memory forecasts, pooled over every component a node (or
//! the simulator) sizes.
//!
//! A model's own band is too narrow for this: a flat memory series has a
//! tiny sample-to-sample spread, then creeps or jumps; a prior's band
//! describes siblings, not one component's next peak. So the kernel scores
//! every memory forecast against what followed it: the largest relative
//! sample (`peak / request`) seen before the next forecast, and for an
//! OOM-killed component the peak that crossed its allocation. The score is
//!
//! ```text
//! z = (peak_rel - mean_rel) / (std_rel + SCALE_FLOOR_REL)
//! ```
//!
//! (the forecast's own spread plus 1% of the request, so a flat series
//! still gets a band of its own size). Scores are kept per forecast source
//! (own model, prior, fallback), plus one window of all sources for a
//! source with fewer than [`MIN_SCORES`]. A window holds
//! * the last [`MAX_SCORES`] scores (the recent ring), and
//! * a long window of the last [`BUCKETS`] x [`MAX_SCORES`] scores (about
//!   4.2 million) in buckets of [`MAX_SCORES`], each keeping its count and
//!   its [`TOP_PER_BUCKET`] largest scores. A small `P` is a rare event:
//!   a cluster that scores 100,000 forecasts a round fills the ring in
//!   less than a round, and the jumps that kill (a whole job's components
//!   crossing at once) happen a few times a day. The long window keeps
//!   them in view at bounded memory (1 MiB a window).
//!
//! Each round, per source, the `1 - P` quantile `q` of the scores makes
//! the allocation `mean + q (std_rel + SCALE_FLOOR_REL) request`. With `n`
//! scores in the long window and `t = n + 1 - ceil((n + 1)(1 - P))` (the
//! conformal rank counted from the top):
//! * `1 <= t <= TOP_PER_BUCKET`: `q` is that order statistic of the long
//!   window, exact (the `t` largest of the window are among the buckets'
//!   largest): the next peak crosses the allocation with probability at
//!   most `P`, marginally over component-rounds, whatever the models (as
//!   long as the window's scores are exchangeable with the next);
//! * `t < 1` (`P` below `1 / (n + 1)`): a generalised Pareto tail fitted
//!   by probability-weighted moments to the long window's largest scores
//!   (5% of them, at most [`TOP_PER_BUCKET`]), its shape kept in [0, 0.5];
//! * `t > TOP_PER_BUCKET`: the recent ring, as the conformal order
//!   statistic while `P` is at least its tail share (5% of its scores, at
//!   least 20), else its fitted Pareto tail.
//!
//! Before [`MIN_SCORES`] scores in all, memory is sized by the K1/K2
//! buffer (`k1 request + upper(k2)`), as without `memory_risk`.
//! Scores are not checkpointed: after an agent restart the calibration
//! starts again from there.
//!
//! The calibrated band is handed to `decide()` inside the memory forecast:
//! its `std` becomes `band / Phi^-1(1 - P)`, so `upper(Phi^-1(1 - P))` is
//! the calibrated allocation (a Gaussian matched at the level in use).

use crate::model::Predictive;
use crate::models::ForecastSource;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Part of the request added to a forecast's spread in a score's scale.
pub const SCALE_FLOOR_REL: f64 = 0.01;
/// Scores in the recent ring of a source, and in each bucket of its long
/// window.
pub const MAX_SCORES: usize = 65_536;
/// Buckets of the long window.
pub const BUCKETS: usize = 64;
/// Largest scores kept per bucket of the long window.
pub const TOP_PER_BUCKET: usize = 4_096;
/// A source's quantile is used once it has this many scores.
pub const MIN_SCORES: usize = 200;

/// The band level `k` whose one-sided Gaussian tail is `risk`:
/// `Phi^-1(1 - risk)`. A calibrated predictive's `upper(k)` is crossed with
/// probability `1 - Phi(k)` (see `forecaster::calibration`), so
/// `upper(risk_to_level(p))` is crossed with probability `p`.
pub fn risk_to_level(risk: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    let risk = if risk.is_finite() {
        risk.clamp(
            crate::config::MIN_MEMORY_RISK,
            crate::config::MAX_MEMORY_RISK,
        )
    } else {
        crate::config::MAX_MEMORY_RISK
    };
    Normal::standard().inverse_cdf(1.0 - risk)
}

/// The score of one forecast (relative mean and spread) against the peak
/// that followed it (relative); `None` when any is not finite.
pub fn score(peak_rel: f64, mean_rel: f64, std_rel: f64) -> Option<f64> {
    let z = (peak_rel - mean_rel) / (std_rel.max(0.0) + SCALE_FLOOR_REL);
    z.is_finite().then_some(z)
}

/// An `f32` as an `i32` whose integer order is `f32::total_cmp`'s.
fn order_key(x: f32) -> i32 {
    let b = x.to_bits() as i32;
    b ^ ((((b >> 31) as u32) >> 1) as i32)
}

fn from_order_key(k: i32) -> f32 {
    f32::from_bits((k ^ ((((k >> 31) as u32) >> 1) as i32)) as u32)
}

/// One bucket of the long window: how many scores, and the largest.
#[derive(Clone, Debug, Default)]
struct Bucket {
    count: usize,
    /// Min-heap of the [`TOP_PER_BUCKET`] largest ([`order_key`]s).
    top: BinaryHeap<Reverse<i32>>,
}

impl Bucket {
    fn push(&mut self, z: f32) {
        self.count += 1;
        let k = order_key(z);
        if self.top.len() < TOP_PER_BUCKET {
            self.top.push(Reverse(k));
        } else if self.top.peek().is_some_and(|Reverse(min)| k > *min) {
            self.top.pop();
            self.top.push(Reverse(k));
        }
    }
}

/// The scores of one source: the recent ring and the long window.
#[derive(Clone, Debug, Default)]
struct Window {
    scores: Vec<f32>,
    next: usize,
    /// Oldest first; the last one fills.
    buckets: VecDeque<Bucket>,
}

impl Window {
    fn push(&mut self, z: f64) {
        let z = z.clamp(-1e30, 1e30) as f32;
        if self.scores.len() < MAX_SCORES {
            self.scores.push(z);
        } else {
            self.scores[self.next] = z;
            self.next = (self.next + 1) % MAX_SCORES;
        }
        if self.buckets.back().is_none_or(|b| b.count >= MAX_SCORES) {
            if self.buckets.len() >= BUCKETS {
                self.buckets.pop_front();
            }
            self.buckets.push_back(Bucket::default());
        }
        if let Some(b) = self.buckets.back_mut() {
            b.push(z);
        }
    }

    /// The `1 - risk` quantile of the scores (see the module docs); `None`
    /// below [`MIN_SCORES`].
    fn quantile(&self, risk: f64, sorted: &mut Vec<f32>) -> Option<f64> {
        let n: usize = self.buckets.iter().map(|b| b.count).sum();
        if n < MIN_SCORES {
            return None;
        }
        // the conformal rank from the bottom, then from the top
        let rank = (((n + 1) as f64) * (1.0 - risk)).ceil();
        let t = (n + 1) as f64 - rank;
        if t > TOP_PER_BUCKET as f64 {
            return ring_quantile(&self.scores, risk, sorted);
        }
        sorted.clear();
        for b in &self.buckets {
            sorted.extend(b.top.iter().map(|Reverse(k)| from_order_key(*k)));
        }
        let len = sorted.len();
        if t >= 1.0 {
            // the t-th largest (t <= TOP_PER_BUCKET <= len)
            let i = len - (t as usize).min(len);
            let (_, q, _) = sorted.select_nth_unstable_by(i, f32::total_cmp);
            return Some(f64::from(*q));
        }
        gpd_quantile(sorted, tail_size(n).min(TOP_PER_BUCKET).min(len), n, risk)
    }
}

/// The `1 - risk` quantile of the recent ring: conformal (an order
/// statistic) when `risk` is at least the tail share, else extrapolated
/// with a generalised Pareto tail fitted to the largest scores; `None`
/// below [`MIN_SCORES`].
fn ring_quantile(scores: &[f32], risk: f64, sorted: &mut Vec<f32>) -> Option<f64> {
    let n = scores.len();
    if n < MIN_SCORES {
        return None;
    }
    sorted.clear();
    sorted.extend_from_slice(scores);
    let m = tail_size(n);
    if risk >= m as f64 / n as f64 {
        // rank ceil((n + 1)(1 - risk)), 1-based; at most n.
        let rank = (((n + 1) as f64) * (1.0 - risk)).ceil() as usize;
        let i = rank.clamp(1, n) - 1;
        let (_, q, _) = sorted.select_nth_unstable_by(i, f32::total_cmp);
        return Some(f64::from(*q));
    }
    gpd_quantile(sorted, m, n, risk)
}

/// The `1 - risk` quantile of `n` scores whose `m` largest are in
/// `candidates` (which may hold more): a generalised Pareto tail over the
/// smallest of those `m`, fitted to the others' excesses.
fn gpd_quantile(candidates: &mut [f32], m: usize, n: usize, risk: f64) -> Option<f64> {
    let len = candidates.len();
    if m < 2 || m > len || n == 0 {
        return None;
    }
    candidates.select_nth_unstable_by(len - m, f32::total_cmp);
    let top = &mut candidates[len - m..];
    top.sort_unstable_by(f32::total_cmp);
    let u = f64::from(top[0]);
    let excess: Vec<f64> = top[1..].iter().map(|&x| f64::from(x) - u).collect();
    let (shape, scale) = gpd_pwm(&excess)?;
    let ratio = (m as f64 / n as f64) / risk;
    let q = if shape.abs() < 1e-9 {
        u + scale * ratio.ln()
    } else {
        u + scale / shape * (ratio.powf(shape) - 1.0)
    };
    q.is_finite().then_some(q)
}

/// Scores in the tail fit: 5% of them, at least 20.
fn tail_size(n: usize) -> usize {
    (n / 20).max(20).min(n)
}

/// Shape and scale of a generalised Pareto distribution fitted to
/// `excess` (ascending, non-negative) by probability-weighted moments
/// (Hosking and Wallis 1987); the shape is kept in [0, 0.5] (no bounded
/// tail, finite variance).
fn gpd_pwm(excess: &[f64]) -> Option<(f64, f64)> {
    let m = excess.len();
    if m < 2 {
        return None;
    }
    let b0 = excess.iter().sum::<f64>() / m as f64;
    // a1 = E[Y (1 - F(Y))], from the ascending order statistics
    let a1 = excess
        .iter()
        .enumerate()
        .map(|(i, &y)| y * (m - 1 - i) as f64 / (m - 1) as f64)
        .sum::<f64>()
        / m as f64;
    if b0.is_nan() || b0 <= 0.0 {
        return Some((0.0, 0.0));
    }
    let d = b0 - 2.0 * a1;
    // Hosking's k = b0 / d - 2 is minus the shape; d <= 0: heavier than
    // any GPD with finite mean.
    let shape = if d > 0.0 { 2.0 - b0 / d } else { MAX_SHAPE };
    let shape = shape.clamp(0.0, MAX_SHAPE);
    // mean excess = scale / (1 - shape)
    let scale = b0 * (1.0 - shape);
    (scale.is_finite() && shape.is_finite()).then_some((shape, scale))
}

/// Largest tail shape used.
const MAX_SHAPE: f64 = 0.5;

/// Window index of a source.
fn slot(source: ForecastSource) -> usize {
    match source {
        ForecastSource::Own => 0,
        ForecastSource::Prior => 1,
        ForecastSource::Fallback => 2,
    }
}

/// The sources, in window order.
const SOURCES: [ForecastSource; 3] = [
    ForecastSource::Own,
    ForecastSource::Prior,
    ForecastSource::Fallback,
];

/// Index of the window of every score.
const ALL: usize = SOURCES.len();

/// Pooled forecast scores and, for the round, the calibrated quantile per
/// forecast source.
#[derive(Clone, Debug, Default)]
pub struct RiskCalibration {
    /// Per source ([`slot`]), then every score.
    windows: [Window; ALL + 1],
    quantiles: [Option<f64>; ALL + 1],
    risk: Option<f64>,
    scratch: Vec<f32>,
    /// Scores seen, ever.
    pub scored: u64,
}

impl RiskCalibration {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the score of a forecast from `source`.
    pub fn observe(&mut self, source: ForecastSource, z: f64) {
        if z.is_finite() {
            self.windows[slot(source)].push(z);
            self.windows[ALL].push(z);
            self.scored += 1;
        }
    }

    /// Computes this round's quantiles for `risk` (`[shaper] memory_risk`;
    /// `None`: nothing to calibrate). Call once per round, before
    /// [`RiskCalibration::calibrate`].
    pub fn refresh(&mut self, risk: Option<f64>) {
        self.risk = risk.filter(|r| r.is_finite() && *r > 0.0);
        for i in 0..=ALL {
            self.quantiles[i] = self
                .risk
                .and_then(|r| self.windows[i].quantile(r, &mut self.scratch));
        }
        if let Some(r) = self.risk {
            for source in SOURCES {
                tracing::debug!(
                    memory_risk = r,
                    source = source.as_str(),
                    scores = self.windows[slot(source)]
                        .buckets
                        .iter()
                        .map(|b| b.count)
                        .sum::<usize>(),
                    quantile = self.quantiles[slot(source)].unwrap_or(f64::NAN),
                    all_quantile = self.quantiles[ALL].unwrap_or(f64::NAN),
                    "memory risk calibration"
                );
            }
        }
    }

    /// The calibrated quantile of `source` this round: its own scores',
    /// else (fewer than [`MIN_SCORES`]) every source's.
    pub fn quantile(&self, source: ForecastSource) -> Option<f64> {
        self.quantiles[slot(source)].or(self.quantiles[ALL])
    }

    /// Replaces a memory forecast (absolute units, for a component of
    /// request `request_bytes`) by the Gaussian whose band at this round's
    /// risk level is the calibrated one; while there is no calibration yet
    /// (fewer than [`MIN_SCORES`] scores in all), the band is the K1/K2
    /// buffer, `k1 request + upper(k2) - mean`. Unchanged without a risk
    /// or when the request is not positive.
    pub fn calibrate(
        &self,
        source: ForecastSource,
        mem: &mut Predictive,
        request_bytes: f64,
        (k1, k2): (f64, f64),
    ) {
        let Some(risk) = self.risk else {
            return;
        };
        if !(request_bytes > 0.0 && request_bytes.is_finite()) {
            return;
        }
        let band = match self.quantile(source) {
            Some(q) => q * (mem.std.max(0.0) / request_bytes + SCALE_FLOOR_REL) * request_bytes,
            None => k1 * request_bytes + mem.band_above(k2),
        }
        .max(0.0);
        let k = risk_to_level(risk);
        if k > 0.0 && band.is_finite() {
            *mem = Predictive::gaussian(mem.mean, band / k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn too_few_scores_leave_the_forecast_alone() {
        let mut r = RiskCalibration::new();
        for i in 0..MIN_SCORES - 1 {
            r.observe(ForecastSource::Own, (i % 7) as f64);
        }
        r.refresh(Some(0.001));
        assert_eq!(r.quantile(ForecastSource::Own), None);
        // not calibrated yet: the K1/K2 buffer at the risk level
        let mut p = Predictive::gaussian(5e8, 1e6);
        r.calibrate(ForecastSource::Own, &mut p, 1e9, (0.1, 3.0));
        let k = risk_to_level(0.001);
        assert!(
            (p.band_above(k) - (1e8 + 3e6)).abs() < 1.0,
            "{}",
            p.band_above(k)
        );
        assert_eq!(p.mean, 5e8);
        r.observe(ForecastSource::Own, 0.0);
        r.refresh(Some(0.001));
        assert!(r.quantile(ForecastSource::Own).is_some());
        // a source without enough scores of its own uses everyone's
        assert_eq!(
            r.quantile(ForecastSource::Prior),
            r.quantile(ForecastSource::Own)
        );
        for _ in 0..MIN_SCORES {
            r.observe(ForecastSource::Prior, 100.0);
        }
        r.refresh(Some(0.001));
        assert!(r.quantile(ForecastSource::Prior) > r.quantile(ForecastSource::Own));
    }

    #[test]
    fn the_tail_fit_finds_the_exponential_and_the_pareto() {
        // exact quantiles of the exponential (shape 0) and of a GPD with
        // shape 0.25, scale 1: the fit recovers both
        let m = 2_000;
        let q = |i: usize| (i as f64 + 0.5) / m as f64;
        let exp: Vec<f64> = (0..m).map(|i| -(1.0 - q(i)).ln()).collect();
        let (shape, scale) = gpd_pwm(&exp).expect("fit");
        assert!(
            shape < 0.02 && (scale - 1.0).abs() < 0.02,
            "{shape} {scale}"
        );
        let gpd: Vec<f64> = (0..m)
            .map(|i| ((1.0 - q(i)).powf(-0.25) - 1.0) / 0.25)
            .collect();
        let (shape, scale) = gpd_pwm(&gpd).expect("fit");
        assert!(
            (shape - 0.25).abs() < 0.03 && (scale - 1.0).abs() < 0.05,
            "{shape} {scale}"
        );
    }

    #[test]
    fn the_calibrated_band_is_the_quantile_in_request_units() {
        let mut r = RiskCalibration::new();
        // scores 1..=1000: the conformal 0.95 quantile is the 951st
        for i in 1..=1000 {
            r.observe(ForecastSource::Prior, f64::from(i));
        }
        r.refresh(Some(0.05));
        assert_eq!(r.quantile(ForecastSource::Prior), Some(951.0));
        let mut p = Predictive::gaussian(0.5e9, 0.0);
        r.calibrate(ForecastSource::Prior, &mut p, 1e9, (0.3, 3.0));
        let k = risk_to_level(0.05);
        let want = 951.0 * SCALE_FLOOR_REL * 1e9;
        assert!(
            (p.band_above(k) - want).abs() < 1e-3 * want,
            "{}",
            p.band_above(k)
        );
        assert_eq!(p.mean, 0.5e9);
    }

    #[test]
    fn the_ring_serves_common_risks_and_the_long_window_rare_ones() {
        let mut r = RiskCalibration::new();
        for _ in 0..MAX_SCORES {
            r.observe(ForecastSource::Own, 100.0);
        }
        for _ in 0..MAX_SCORES {
            r.observe(ForecastSource::Own, 1.0);
        }
        // P = 0.25: rank 32,768 from the top, past the buckets' tops: the
        // recent ring, which holds only the 1.0s
        r.refresh(Some(0.25));
        assert_eq!(r.quantile(ForecastSource::Own), Some(1.0));
        // P = 0.001: the 132nd largest of the long window, an old 100
        r.refresh(Some(0.001));
        assert_eq!(r.quantile(ForecastSource::Own), Some(100.0));
        assert_eq!(r.scored, 2 * MAX_SCORES as u64);
        // a whole long window later the 100s are gone
        for _ in 0..BUCKETS * MAX_SCORES {
            r.observe(ForecastSource::Own, 1.0);
        }
        r.refresh(Some(0.001));
        assert_eq!(r.quantile(ForecastSource::Own), Some(1.0));
    }

    #[test]
    fn one_rare_jump_among_a_million_scores_stays_in_view() {
        let mut r = RiskCalibration::new();
        r.observe(ForecastSource::Own, 1_000.0);
        for i in 0..1_000_000u32 {
            r.observe(ForecastSource::Own, f64::from(i % 10));
        }
        // n + 1 = 1,000,002: P = 1e-6 is the conformal rank of the largest
        r.refresh(Some(1e-6));
        assert_eq!(r.quantile(ForecastSource::Own), Some(1_000.0));
        // below 1 / (n + 1): the fitted tail, above the largest score
        r.refresh(Some(1e-7));
        assert!(r.quantile(ForecastSource::Own).is_some_and(|q| q > 9.0));
    }

    #[test]
    fn order_keys_sort_like_total_cmp() {
        let xs = [-1e30f32, -2.5, -0.0, 0.0, 1e-30, 3.0, 1e30];
        for w in xs.windows(2) {
            assert!(order_key(w[0]) < order_key(w[1]), "{w:?}");
        }
        for x in xs {
            assert_eq!(from_order_key(order_key(x)).to_bits(), x.to_bits());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// Split-conformal coverage: on exchangeable scores, a fresh score
        /// lands above the quantile at most `P` of the time (plus the
        /// sampling error of the check).
        #[test]
        fn fresh_scores_cross_the_quantile_at_most_p_of_the_time(
            seed in any::<u64>(),
            risk in prop::sample::select(vec![0.001, 0.01, 0.05, 0.1]),
            heavy in any::<bool>(),
        ) {
            let mut s = seed | 1;
            let mut draw = move || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let u = (s >> 11) as f64 / (1u64 << 53) as f64;
                if heavy { (1.0 - u).powf(-0.5) } else { u }
            };
            let mut r = RiskCalibration::new();
            for _ in 0..4_000 {
                r.observe(ForecastSource::Own, draw());
            }
            r.refresh(Some(risk));
            let q = r.quantile(ForecastSource::Own).expect("enough scores");
            let n = 40_000;
            let above = (0..n).filter(|_| draw() > q).count() as f64 / f64::from(n);
            // sd of the check ~ sqrt(P/n) + quantile noise ~ sqrt(P/4000)
            // (past the tail share the fitted tail adds its own error: a
            // factor 2 either way)
            let tol = 4.0 * ((risk / 4_000.0).sqrt() + (risk / f64::from(n)).sqrt());
            let (lo, hi) = if risk >= 0.05 { (risk - tol, risk + tol) } else { (risk / 2.0 - tol, 2.0 * risk + tol) };
            prop_assert!(above <= hi, "{above} > {hi}");
            prop_assert!(above >= lo, "{above} < {lo}");
        }
    }
}

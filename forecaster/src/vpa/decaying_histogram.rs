//! Decaying histogram (`util/decaying_histogram.go`): a sample added at
//! time `t` weighs `weight * 2^((t - reference) / half_life)`, so a sample
//! loses half its importance every half-life (24 h in the VPA). Only
//! relative weights matter, so the reference time moves forward (and all
//! weights are rescaled by a power of two) whenever the exponent would
//! exceed 100.
//!
//! Time is `f64` seconds from any origin. Go starts the reference at the
//! zero `time.Time` (year 1), so its first sample always moves the reference
//! to that sample's time rounded to a multiple of the half-life; here the
//! first sample sets the reference the same way explicitly, which makes the
//! weights identical for any origin (also one near or before 0). Go rounds
//! to multiples of the half-life counted from year 1; here they count from
//! the time origin (the same instants for the Unix epoch and any half-life
//! that divides a day).

use super::histogram::Histogram;
use super::histogram_options::HistogramOptions;
use crate::ForecastError;

/// When the decay factor would exceed `2^MAX_DECAY_EXPONENT`, the reference
/// time is shifted forward.
pub const MAX_DECAY_EXPONENT: f64 = 100.0;

/// Go's `round`: `floor(x + 0.5)`.
fn round_half_up(x: f64) -> f64 {
    (x + 0.5).floor()
}

/// A histogram whose samples decay exponentially with age.
#[derive(Clone, Debug)]
pub struct DecayingHistogram {
    histogram: Histogram,
    half_life_s: f64,
    /// Reference time, an integer multiple of the half-life (`None` before
    /// the first sample).
    reference_s: Option<f64>,
}

impl DecayingHistogram {
    /// `NewDecayingHistogram`. The half-life must be finite and > 0.
    pub fn new(options: HistogramOptions, half_life_s: f64) -> Result<Self, ForecastError> {
        if !(half_life_s.is_finite() && half_life_s > 0.0) {
            return Err(ForecastError::InvalidConfig(format!(
                "histogram half-life {half_life_s} s must be finite and > 0"
            )));
        }
        Ok(Self {
            histogram: Histogram::new(options),
            half_life_s,
            reference_s: None,
        })
    }

    /// The undecayed histogram underneath (weights relative to the reference).
    pub fn histogram(&self) -> &Histogram {
        &self.histogram
    }

    /// Half-life in seconds.
    pub fn half_life_s(&self) -> f64 {
        self.half_life_s
    }

    /// Current reference time (`None` before the first sample).
    pub fn reference_s(&self) -> Option<f64> {
        self.reference_s
    }

    /// `Percentile` of the decayed distribution (0 when empty).
    pub fn percentile(&self, p: f64) -> f64 {
        self.histogram.percentile(p)
    }

    /// `IsEmpty`.
    pub fn is_empty(&self) -> bool {
        self.histogram.is_empty()
    }

    /// `AddSample`: adds `weight` decayed to time `t_s`.
    pub fn add_sample(&mut self, value: f64, weight: f64, t_s: f64) -> Result<(), ForecastError> {
        let f = self.decay_factor(t_s)?;
        self.histogram.add_sample(value, weight * f)
    }

    /// `SubtractSample`: removes `weight` decayed to time `t_s`.
    pub fn subtract_sample(
        &mut self,
        value: f64,
        weight: f64,
        t_s: f64,
    ) -> Result<(), ForecastError> {
        let f = self.decay_factor(t_s)?;
        self.histogram.subtract_sample(value, weight * f)
    }

    /// `Merge`: the older reference is aligned with the younger one, then
    /// the buckets are added. Half-lives and options must match.
    pub fn merge(&mut self, other: &DecayingHistogram) -> Result<(), ForecastError> {
        if self.half_life_s != other.half_life_s {
            return Err(ForecastError::InvalidConfig(
                "can't merge decaying histograms with different half life periods".into(),
            ));
        }
        match (self.reference_s, other.reference_s) {
            (_, None) => self.histogram.merge(&other.histogram),
            (None, Some(r)) => {
                self.reference_s = Some(r);
                self.histogram.merge(&other.histogram)
            }
            (Some(a), Some(b)) if a < b => {
                self.shift_reference(b);
                self.histogram.merge(&other.histogram)
            }
            (Some(a), Some(b)) if b < a => {
                let mut o = other.clone();
                o.shift_reference(a);
                self.histogram.merge(&o.histogram)
            }
            _ => self.histogram.merge(&other.histogram),
        }
    }

    /// `Equals`: same half-life, same reference, equal histograms.
    pub fn equals(&self, other: &DecayingHistogram) -> bool {
        self.half_life_s == other.half_life_s
            && self.reference_s == other.reference_s
            && self.histogram.equals(&other.histogram)
    }

    /// `shiftReferenceTimestamp`: moves the reference to `new_ref_s` rounded
    /// to a multiple of the half-life and rescales every weight by the
    /// matching power of two.
    fn shift_reference(&mut self, new_ref_s: f64) {
        let hl = self.half_life_s;
        let new_ref = round_half_up(new_ref_s / hl) * hl;
        if let Some(old) = self.reference_s {
            let exponent = round_half_up((old - new_ref) / hl);
            self.histogram.scale(exponent.exp2());
        }
        self.reference_s = Some(new_ref);
    }

    /// `decayFactor`: `2^((t - reference) / half_life)`, shifting the
    /// reference first when the exponent would pass [`MAX_DECAY_EXPONENT`].
    fn decay_factor(&mut self, t_s: f64) -> Result<f64, ForecastError> {
        crate::finite(t_s)?;
        match self.reference_s {
            None => self.shift_reference(t_s),
            Some(r) if t_s > r + self.half_life_s * MAX_DECAY_EXPONENT => self.shift_reference(t_s),
            Some(_) => {}
        }
        let r = self.reference_s.unwrap_or(t_s);
        Ok(((t_s - r) / self.half_life_s).exp2())
    }
}

#[cfg(test)]
mod tests {
    //! Port of `util/decaying_histogram_test.go` (all but the checkpoint
    //! tests), plus property tests.
    use super::super::histogram::tests::{assert_in_epsilon, test_options, VALUE_EPSILON};
    use super::*;
    use proptest::prelude::*;

    const HOUR: f64 = 3600.0;
    /// `startTime = time.Unix(1234567890, 0)`.
    const START: f64 = 1_234_567_890.0;

    fn hist() -> DecayingHistogram {
        DecayingHistogram::new(test_options(), HOUR).expect("valid")
    }

    #[test]
    fn percentiles_empty_decaying_histogram() {
        let h = hist();
        for p in [-0.5, 0.0, 0.5, 1.0, 1.5] {
            assert_eq!(h.percentile(p), 0.0);
        }
    }

    #[test]
    fn simple_decay() {
        let mut h = hist();
        h.add_sample(2.0, 1000.0, START).expect("ok");
        // 20 half-lives later: relative weight 2^20 * 0.001 > 1000x larger.
        h.add_sample(1.0, 1.0, START + 20.0 * HOUR).expect("ok");
        assert_in_epsilon(2.0, h.percentile(0.999), VALUE_EPSILON);
        assert_in_epsilon(3.0, h.percentile(1.0), VALUE_EPSILON);
    }

    #[test]
    fn longterm_decay() {
        let mut h = hist();
        h.add_sample(2.0, 1.0, START).expect("ok");
        // Relative decay of the two samples exceeds 2^maxDecayExponent.
        h.add_sample(1.0, 1.0, START + 101.0 * HOUR).expect("ok");
        assert_in_epsilon(2.0, h.percentile(1.0), VALUE_EPSILON);
    }

    #[test]
    fn decaying_histogram_percentiles() {
        let mut h = hist();
        let mut t = START;
        for i in 1..=4 {
            h.add_sample(i as f64, i as f64, t).expect("ok");
            t += HOUR;
        }
        // [1..2]: 1*2^-3, [2..3]: 2*2^-2, [3..4]: 3*2^-1, [4..5]: 4*2^0.
        let expect = [
            (0.00, 2.0),
            (0.02, 2.0),
            (0.03, 3.0),
            (0.10, 3.0),
            (0.11, 4.0),
            (0.34, 4.0),
            (0.35, 5.0),
            (1.00, 5.0),
        ];
        for (p, v) in expect {
            assert_in_epsilon(v, h.percentile(p), VALUE_EPSILON);
        }
    }

    #[test]
    fn no_decay() {
        let mut h = hist();
        for i in 1..=4 {
            h.add_sample(i as f64, i as f64, START).expect("ok");
        }
        let expect = [
            (0.0, 2.0),
            (0.2, 3.0),
            (0.1, 2.0),
            (0.3, 3.0),
            (0.4, 4.0),
            (0.5, 4.0),
            (0.6, 4.0),
            (0.7, 5.0),
            (0.8, 5.0),
            (0.9, 5.0),
            (1.0, 5.0),
        ];
        for (p, v) in expect {
            assert_in_epsilon(v, h.percentile(p), VALUE_EPSILON);
        }
    }

    #[test]
    fn decaying_histogram_merge() {
        let mut h1 = hist();
        h1.add_sample(1.0, 1.0, START).expect("ok");
        h1.add_sample(2.0, 1.0, START + HOUR).expect("ok");
        let mut h2 = hist();
        h2.add_sample(2.0, 1.0, START + 2.0 * HOUR).expect("ok");
        h2.add_sample(3.0, 1.0, START + HOUR).expect("ok");
        let mut expected = hist();
        expected
            .add_sample(2.0, 1.0, START + 2.0 * HOUR)
            .expect("ok");
        expected.add_sample(2.0, 1.0, START + HOUR).expect("ok");
        expected.add_sample(3.0, 1.0, START + HOUR).expect("ok");
        expected.add_sample(1.0, 1.0, START).expect("ok");
        h1.merge(&h2).expect("same half-life");
        assert!(h1.equals(&expected));
    }

    #[test]
    fn merge_aligns_the_older_reference() {
        let mut old = hist();
        old.add_sample(1.0, 1.0, START).expect("ok");
        let mut young = hist();
        young
            .add_sample(3.0, 1.0, START + 150.0 * HOUR)
            .expect("ok");
        let mut a = old.clone();
        a.merge(&young).expect("ok");
        let mut b = young.clone();
        b.merge(&old).expect("ok");
        assert!(a.equals(&b));
        assert_eq!(a.reference_s(), young.reference_s());
        let other = DecayingHistogram::new(test_options(), 2.0 * HOUR).expect("valid");
        assert!(a.merge(&other).is_err());
        assert!(DecayingHistogram::new(test_options(), 0.0).is_err());
        assert!(a.add_sample(1.0, 1.0, f64::NAN).is_err());
    }

    #[test]
    fn any_time_origin_gives_the_same_percentiles() {
        for origin in [-1e9, -5.0 * HOUR, 0.0, 17.0, START] {
            let mut h = hist();
            let mut t = origin;
            for i in 1..=4 {
                h.add_sample(i as f64, i as f64, t).expect("ok");
                t += HOUR;
            }
            assert_in_epsilon(3.0, h.percentile(0.10), VALUE_EPSILON);
            assert_in_epsilon(4.0, h.percentile(0.11), VALUE_EPSILON);
            assert_in_epsilon(5.0, h.percentile(0.35), VALUE_EPSILON);
        }
    }

    proptest! {
        /// Percentiles are monotone in p.
        #[test]
        fn percentile_monotone_in_p(
            samples in proptest::collection::vec((0.0f64..12.0, 0.01f64..10.0, 0.0f64..200.0), 1..40),
            mut ps in proptest::collection::vec(-0.2f64..1.2, 2..12),
        ) {
            let mut h = hist();
            let mut t = START;
            for (v, w, dt) in samples {
                t += dt * 60.0;
                h.add_sample(v, w, t).expect("ok");
            }
            ps.sort_by(f64::total_cmp);
            for pair in ps.windows(2) {
                prop_assert!(h.percentile(pair[0]) <= h.percentile(pair[1]));
            }
        }

        /// Decay preserves relative weights: delaying every sample by the
        /// same amount (with any renormalisation in between), or adding
        /// half the weight one half-life later, leaves every bucket's share
        /// of the total weight unchanged.
        #[test]
        fn decay_preserves_relative_weights(
            samples in proptest::collection::vec((0.0f64..12.0, 0.01f64..10.0, 0.0f64..1.0), 1..30),
            shift_h in 0.0f64..500.0,
        ) {
            let mut a = hist();
            let mut b = hist();
            let mut c = hist();
            let mut t = START;
            for &(v, w, dt) in &samples {
                t += dt * HOUR;
                a.add_sample(v, w, t).expect("ok");
                b.add_sample(v, w, t + shift_h * HOUR).expect("ok");
                c.add_sample(v, w / 2.0, t + HOUR).expect("ok");
            }
            let share = |h: &DecayingHistogram, i: usize| {
                h.histogram().bucket_weight(i) / h.histogram().total_weight()
            };
            for i in 0..test_options().num_buckets() {
                let sa = share(&a, i);
                prop_assert!((sa - share(&b, i)).abs() <= 1e-9 * sa.max(1e-12), "bucket {}", i);
                prop_assert!((sa - share(&c, i)).abs() <= 1e-9 * sa.max(1e-12), "bucket {}", i);
            }
        }
    }
}

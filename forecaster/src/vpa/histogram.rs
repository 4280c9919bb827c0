//! Bucket histogram (`util/histogram.go`): each bucket holds the total
//! weight of the samples that fell in it; a percentile is the end of the
//! bucket where the cumulative weight reaches it (no interpolation). A
//! bucket lighter than the options' epsilon counts as empty.
//!
//! Not ported: checkpoints (`SaveToChekpoint` / `LoadFromCheckpoint`), which
//! serialise the histogram into a Kubernetes object.

use super::histogram_options::HistogramOptions;
use crate::ForecastError;

/// A histogram over a fixed bucketing scheme.
#[derive(Clone, Debug)]
pub struct Histogram {
    options: HistogramOptions,
    bucket_weight: Vec<f64>,
    total_weight: f64,
    /// First non-empty bucket, or the last bucket when empty.
    min_bucket: usize,
    /// Last non-empty bucket, or 0 when empty.
    max_bucket: usize,
}

fn check_weight(weight: f64) -> Result<(), ForecastError> {
    if weight.is_finite() && weight >= 0.0 {
        Ok(())
    } else {
        Err(ForecastError::InvalidConfig(format!(
            "sample weight {weight} must be finite and non-negative"
        )))
    }
}

/// `safeSubtract`: results below epsilon become 0.
fn safe_subtract(value: f64, sub: f64, epsilon: f64) -> f64 {
    let v = value - sub;
    if v < epsilon {
        0.0
    } else {
        v
    }
}

impl Histogram {
    /// `NewHistogram`: an empty histogram (its bucket count is bounded by
    /// [`super::histogram_options::MAX_BUCKETS`]).
    pub fn new(options: HistogramOptions) -> Self {
        let n = options.num_buckets();
        Self {
            options,
            bucket_weight: vec![0.0; n],
            total_weight: 0.0,
            min_bucket: n - 1,
            max_bucket: 0,
        }
    }

    /// The bucketing scheme.
    pub fn options(&self) -> &HistogramOptions {
        &self.options
    }

    /// Total weight of all samples.
    pub fn total_weight(&self) -> f64 {
        self.total_weight
    }

    /// Weight of one bucket (0 past the end).
    pub fn bucket_weight(&self, bucket: usize) -> f64 {
        self.bucket_weight.get(bucket).copied().unwrap_or(0.0)
    }

    /// `AddSample`. A negative or non-finite weight is an error (Go panics).
    pub fn add_sample(&mut self, value: f64, weight: f64) -> Result<(), ForecastError> {
        check_weight(weight)?;
        let bucket = self.options.find_bucket(value);
        let eps = self.options.epsilon();
        self.bucket_weight[bucket] += weight;
        self.total_weight += weight;
        if bucket < self.min_bucket && self.bucket_weight[bucket] >= eps {
            self.min_bucket = bucket;
        }
        if bucket > self.max_bucket && self.bucket_weight[bucket] >= eps {
            self.max_bucket = bucket;
        }
        Ok(())
    }

    /// `SubtractSample`: removes weight (never below 0; results under
    /// epsilon become 0).
    pub fn subtract_sample(&mut self, value: f64, weight: f64) -> Result<(), ForecastError> {
        check_weight(weight)?;
        let bucket = self.options.find_bucket(value);
        let eps = self.options.epsilon();
        self.total_weight = safe_subtract(self.total_weight, weight, eps);
        self.bucket_weight[bucket] = safe_subtract(self.bucket_weight[bucket], weight, eps);
        self.update_min_and_max_bucket();
        Ok(())
    }

    /// `Merge`: adds every sample of `other`. Histograms with different
    /// options cannot be merged (Go panics).
    pub fn merge(&mut self, other: &Histogram) -> Result<(), ForecastError> {
        if self.options != other.options {
            return Err(ForecastError::InvalidConfig(
                "can't merge histograms with different options".into(),
            ));
        }
        if other.min_bucket <= other.max_bucket {
            for b in other.min_bucket..=other.max_bucket {
                self.bucket_weight[b] += other.bucket_weight[b];
            }
        }
        self.total_weight += other.total_weight;
        self.min_bucket = self.min_bucket.min(other.min_bucket);
        self.max_bucket = self.max_bucket.max(other.max_bucket);
        Ok(())
    }

    /// `Percentile`: the end of the bucket where the cumulative weight
    /// reaches `percentile * total` (the start of the last bucket if that is
    /// the one); 0 when empty. `percentile` below 0 gives the end of the
    /// first non-empty bucket, above 1 the end of the last.
    pub fn percentile(&self, percentile: f64) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        let threshold = percentile * self.total_weight;
        let mut partial = 0.0;
        let mut bucket = self.min_bucket;
        while bucket < self.max_bucket {
            partial += self.bucket_weight[bucket];
            if partial >= threshold {
                break;
            }
            bucket += 1;
        }
        if bucket < self.options.num_buckets() - 1 {
            self.options.bucket_start(bucket + 1)
        } else {
            self.options.bucket_start(bucket)
        }
    }

    /// `IsEmpty`: the first non-empty bucket is lighter than epsilon.
    pub fn is_empty(&self) -> bool {
        self.bucket_weight[self.min_bucket] < self.options.epsilon()
    }

    /// `Equals`: same options, same non-empty range and bucket weights
    /// within 1e-15.
    pub fn equals(&self, other: &Histogram) -> bool {
        if self.options != other.options
            || self.min_bucket != other.min_bucket
            || self.max_bucket != other.max_bucket
        {
            return false;
        }
        if self.min_bucket > self.max_bucket {
            return true;
        }
        (self.min_bucket..=self.max_bucket)
            .all(|b| (self.bucket_weight[b] - other.bucket_weight[b]).abs() <= 1e-15)
    }

    /// `scale`: multiplies every weight by a non-negative finite factor
    /// (percentiles unchanged); buckets falling under epsilon leave the
    /// non-empty range.
    pub(crate) fn scale(&mut self, factor: f64) {
        let factor = if factor.is_finite() && factor >= 0.0 {
            factor
        } else {
            0.0
        };
        if self.min_bucket <= self.max_bucket {
            for b in self.min_bucket..=self.max_bucket {
                self.bucket_weight[b] *= factor;
            }
        }
        self.total_weight *= factor;
        self.update_min_and_max_bucket();
    }

    /// `updateMinAndMaxBucket`.
    fn update_min_and_max_bucket(&mut self) {
        let eps = self.options.epsilon();
        let last = self.options.num_buckets() - 1;
        while self.bucket_weight[self.min_bucket] < eps && self.min_bucket < last {
            self.min_bucket += 1;
        }
        while self.bucket_weight[self.max_bucket] < eps && self.max_bucket > 0 {
            self.max_bucket -= 1;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Port of `util/histogram_test.go` (all but the checkpoint tests).
    use super::*;

    /// Minimum precision of histogram values (relative).
    pub const VALUE_EPSILON: f64 = 1e-15;
    /// Minimum precision of histogram weights (absolute).
    pub const WEIGHT_EPSILON: f64 = 1e-15;

    /// `testHistogramOptions`: linear, 0..10 by 1.
    pub fn test_options() -> HistogramOptions {
        HistogramOptions::linear(10.0, 1.0, WEIGHT_EPSILON).expect("valid")
    }

    /// testify's `InEpsilon`: relative error at most `eps`.
    pub fn assert_in_epsilon(expected: f64, actual: f64, eps: f64) {
        let rel = ((expected - actual) / expected).abs();
        assert!(
            rel <= eps,
            "expected {expected}, got {actual} (relative error {rel})"
        );
    }

    #[test]
    fn percentiles_empty_histogram() {
        let h = Histogram::new(test_options());
        for p in [-0.5, 0.0, 0.5, 1.0, 1.5] {
            assert_eq!(h.percentile(p), 0.0);
        }
    }

    #[test]
    fn percentiles() {
        let mut h = Histogram::new(test_options());
        for i in 1..=4 {
            h.add_sample(i as f64, i as f64).expect("ok");
        }
        let expect = [
            (0.0, 2.0),
            (0.1, 2.0),
            (0.2, 3.0),
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
    fn percentile_out_of_bounds() {
        let o = HistogramOptions::linear(1.0, 0.1, WEIGHT_EPSILON).expect("valid");
        let mut h = Histogram::new(o);
        h.add_sample(0.1, 0.1).expect("ok");
        h.add_sample(0.2, 0.2).expect("ok");
        assert_in_epsilon(0.2, h.percentile(-0.1), VALUE_EPSILON);
        assert_in_epsilon(0.3, h.percentile(1.1), VALUE_EPSILON);
        // Fill the boundary buckets.
        h.add_sample(0.0, 0.1).expect("ok");
        h.add_sample(1.0, 0.2).expect("ok");
        assert_in_epsilon(0.1, h.percentile(-0.1), VALUE_EPSILON);
        assert_in_epsilon(1.0, h.percentile(1.1), VALUE_EPSILON);
    }

    #[test]
    fn empty_histogram() {
        let o = HistogramOptions::linear(1.0, 0.1, WEIGHT_EPSILON).expect("valid");
        let mut h = Histogram::new(o);
        assert!(h.is_empty());
        h.add_sample(0.1, WEIGHT_EPSILON * 2.5).expect("ok");
        assert!(!h.is_empty());
        h.subtract_sample(0.1, WEIGHT_EPSILON).expect("ok");
        assert!(!h.is_empty());
        h.subtract_sample(0.1, WEIGHT_EPSILON).expect("ok");
        assert!(h.is_empty());
    }

    #[test]
    fn non_empty_on_epsilon_addition() {
        let o = HistogramOptions::linear(1.0, 0.1, WEIGHT_EPSILON).expect("valid");
        let mut h = Histogram::new(o);
        assert!(h.is_empty());
        h.add_sample(9.9, WEIGHT_EPSILON * 3.0).expect("ok");
        assert!(!h.is_empty());
        h.add_sample(0.1, WEIGHT_EPSILON * 0.3).expect("ok");
        assert!(!h.is_empty());
        h.add_sample(999.9, WEIGHT_EPSILON * 0.3).expect("ok");
        assert!(!h.is_empty());
    }

    #[test]
    fn histogram_merge() {
        let mut h1 = Histogram::new(test_options());
        h1.add_sample(1.0, 1.0).expect("ok");
        h1.add_sample(2.0, 1.0).expect("ok");
        let mut h2 = Histogram::new(test_options());
        h2.add_sample(2.0, 1.0).expect("ok");
        h2.add_sample(3.0, 1.0).expect("ok");
        let mut expected = Histogram::new(test_options());
        for v in [1.0, 2.0, 2.0, 3.0] {
            expected.add_sample(v, 1.0).expect("ok");
        }
        h1.merge(&h2).expect("same options");
        assert!(h1.equals(&expected));
        let other = Histogram::new(HistogramOptions::linear(5.0, 1.0, 1.0).expect("valid"));
        assert!(h1.merge(&other).is_err());
    }

    #[test]
    fn invalid_weights_are_errors() {
        let mut h = Histogram::new(test_options());
        assert!(h.add_sample(1.0, -1.0).is_err());
        assert!(h.add_sample(1.0, f64::NAN).is_err());
        assert!(h.subtract_sample(1.0, -1.0).is_err());
        assert!(h.is_empty());
    }
}

//! Bucketing schemes of the VPA histograms (`util/histogram_options.go`).
//!
//! The VPA uses exponential buckets: the first covers `[0, first)`, bucket
//! `n` is `first * ratio^n` wide and starts at
//! `first * (ratio^n - 1) / (ratio - 1)`. With the default 5% growth, CPU
//! buckets start at 0.01 core and reach 1000 cores, memory buckets start at
//! 1e7 bytes and reach 1e12 bytes. Linear options exist for the Go tests.

use crate::ForecastError;

/// Most buckets a scheme may have (the VPA defaults use 176).
pub const MAX_BUCKETS: usize = 1_000_000;

/// How values map to histogram buckets. Built only through
/// [`HistogramOptions::linear`] and [`HistogramOptions::exponential`], so
/// the bucket count is always in `1..=MAX_BUCKETS`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HistogramOptions {
    scheme: Scheme,
    num_buckets: usize,
    epsilon: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Scheme {
    /// Buckets of `bucket_size`, the first starting at 0.
    Linear { bucket_size: f64 },
    /// Buckets growing by `ratio`, the first `first_bucket_size` wide.
    Exponential { first_bucket_size: f64, ratio: f64 },
}

fn checked_buckets(n: f64, what: &str) -> Result<usize, ForecastError> {
    if !(n.is_finite() && n >= 1.0 && n <= MAX_BUCKETS as f64) {
        return Err(ForecastError::InvalidConfig(format!(
            "{what} histogram would have {n} buckets (1..={MAX_BUCKETS} allowed)"
        )));
    }
    Ok(n as usize)
}

/// `log(base, x)` as the Go code computes it.
fn log(base: f64, x: f64) -> f64 {
    x.ln() / base.ln()
}

impl HistogramOptions {
    /// `NewLinearHistogramOptions`: fixed-size buckets, the last one
    /// starting at or above `max_value`. Requires all three arguments > 0.
    pub fn linear(max_value: f64, bucket_size: f64, epsilon: f64) -> Result<Self, ForecastError> {
        if !(max_value > 0.0 && bucket_size > 0.0 && epsilon > 0.0 && epsilon.is_finite()) {
            return Err(ForecastError::InvalidConfig(
                "maxValue and bucketSize must both be positive".into(),
            ));
        }
        let num_buckets = checked_buckets((max_value / bucket_size).ceil() + 1.0, "linear")?;
        Ok(Self {
            scheme: Scheme::Linear { bucket_size },
            num_buckets,
            epsilon,
        })
    }

    /// `NewExponentialHistogramOptions`: requires `max_value`,
    /// `first_bucket_size` and `epsilon` > 0 and `ratio` > 1.
    pub fn exponential(
        max_value: f64,
        first_bucket_size: f64,
        ratio: f64,
        epsilon: f64,
    ) -> Result<Self, ForecastError> {
        if !(max_value > 0.0 && first_bucket_size > 0.0 && ratio > 1.0 && epsilon > 0.0)
            || !(max_value.is_finite()
                && first_bucket_size.is_finite()
                && ratio.is_finite()
                && epsilon.is_finite())
        {
            return Err(ForecastError::InvalidConfig(
                "maxValue, firstBucketSize and epsilon must be > 0.0, ratio must be > 1.0".into(),
            ));
        }
        let n = log(ratio, max_value * (ratio - 1.0) / first_bucket_size + 1.0).ceil() + 1.0;
        let num_buckets = checked_buckets(n, "exponential")?;
        Ok(Self {
            scheme: Scheme::Exponential {
                first_bucket_size,
                ratio,
            },
            num_buckets,
            epsilon,
        })
    }

    /// Number of buckets.
    pub fn num_buckets(&self) -> usize {
        self.num_buckets
    }

    /// Minimum weight for a bucket to count as non-empty.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The bucket a value falls in; values outside the range go to the
    /// first or the last bucket (NaN to the first).
    pub fn find_bucket(&self, value: f64) -> usize {
        let last = self.num_buckets() - 1;
        let raw = match self.scheme {
            Scheme::Linear { bucket_size } => (value / bucket_size).trunc(),
            Scheme::Exponential {
                first_bucket_size,
                ratio,
            } => {
                if value.is_nan() || value < first_bucket_size {
                    return 0;
                }
                log(ratio, value * (ratio - 1.0) / first_bucket_size + 1.0).trunc()
            }
        };
        if raw.is_nan() || raw < 0.0 {
            0
        } else if raw >= last as f64 {
            last
        } else {
            raw as usize
        }
    }

    /// Start of a bucket. Go panics on an index out of range; here the
    /// index is clamped to the last bucket.
    pub fn bucket_start(&self, bucket: usize) -> f64 {
        let bucket = bucket.min(self.num_buckets() - 1);
        match self.scheme {
            Scheme::Linear { bucket_size } => bucket as f64 * bucket_size,
            Scheme::Exponential {
                first_bucket_size,
                ratio,
            } => {
                if bucket == 0 {
                    return 0.0;
                }
                first_bucket_size * (ratio.powf(bucket as f64) - 1.0) / (ratio - 1.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Port of `util/histogram_options_test.go`.
    use super::*;

    const EPSILON: f64 = 0.001;

    #[test]
    fn linear_histogram_options() {
        let o = HistogramOptions::linear(5.0, 0.3, EPSILON).expect("valid");
        assert_eq!(o.epsilon(), EPSILON);
        assert_eq!(o.num_buckets(), 18);
        assert_eq!(o.bucket_start(0), 0.0);
        assert_eq!(o.bucket_start(17), 5.1);
        assert_eq!(o.find_bucket(-1.0), 0);
        assert_eq!(o.find_bucket(0.0), 0);
        assert_eq!(o.find_bucket(1.3), 4);
        assert_eq!(o.find_bucket(100.0), 17);
    }

    #[test]
    fn exponential_histogram_options() {
        let o = HistogramOptions::exponential(500.0, 40.0, 1.5, EPSILON).expect("valid");
        assert_eq!(o.epsilon(), EPSILON);
        assert_eq!(o.num_buckets(), 6);
        assert_eq!(o.bucket_start(0), 0.0);
        assert_eq!(o.bucket_start(1), 40.0);
        assert_eq!(o.bucket_start(2), 100.0);
        assert_eq!(o.bucket_start(3), 190.0);
        assert_eq!(o.bucket_start(4), 325.0);
        assert_eq!(o.bucket_start(5), 527.5);
        assert_eq!(o.find_bucket(-1.0), 0);
        assert_eq!(o.find_bucket(39.99), 0);
        assert_eq!(o.find_bucket(40.0), 1);
        assert_eq!(o.find_bucket(100.0), 2);
        assert_eq!(o.find_bucket(900.0), 5);
    }

    #[test]
    fn invalid_options_are_rejected() {
        assert!(HistogramOptions::linear(0.0, 1.0, 1.0).is_err());
        assert!(HistogramOptions::exponential(10.0, 1.0, 1.0, 1.0).is_err());
        assert!(HistogramOptions::exponential(f64::INFINITY, 1.0, 1.5, 1.0).is_err());
        assert!(HistogramOptions::linear(1e12, 1e-3, 1.0).is_err());
    }

    #[test]
    fn vpa_default_schemes() {
        // CPU: 0.01 core .. 1000 cores; memory: 1e7 .. 1e12 bytes; 5% growth.
        let cpu = HistogramOptions::exponential(1000.0, 0.01, 1.05, 1e-4).expect("cpu");
        let mem = HistogramOptions::exponential(1e12, 1e7, 1.05, 1e-4).expect("mem");
        assert_eq!(cpu.num_buckets(), 176);
        assert_eq!(mem.num_buckets(), 176);
        assert!(cpu.bucket_start(cpu.num_buckets() - 1) >= 1000.0);
        assert!(mem.bucket_start(mem.num_buckets() - 1) >= 1e12);
    }
}

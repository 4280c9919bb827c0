//! The memory hold: the largest sample of a sliding window, in bounded
//! memory.
//!
//! A component's memory forecast never falls below the peak of its recent
//! samples (`[shaper] mem_hold_s`), so memory grows at once and shrinks
//! only after usage has stayed lower for the whole window. A window of `n`
//! samples is kept as at most [`BUCKETS`] bucket maxima of `ceil(n /
//! BUCKETS)` samples each: the hold covers at least the last `n - bucket +
//! 1` samples and at most the last `n` (rounded up to whole buckets), and
//! costs the same few bytes per component at a 10 s agent interval and a
//! 24 h window as at 5-minute trace samples.

use std::collections::VecDeque;

/// Buckets a window is split into.
pub const BUCKETS: usize = 24;

/// The running maximum of the last `n` samples (bucketed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hold {
    /// Samples per bucket (0 = the hold is off).
    bucket_len: usize,
    /// Buckets kept, the newest (possibly partial) last.
    buckets: usize,
    maxima: VecDeque<f64>,
    /// Samples already in the newest bucket.
    filled: usize,
}

impl Hold {
    /// A hold over the last `n` samples in [`BUCKETS`] buckets; `n = 0`
    /// holds nothing.
    pub fn new(n: usize) -> Self {
        Self::with_buckets(n, BUCKETS)
    }

    /// A hold over the last `n` samples in `buckets` buckets (at least 1):
    /// fewer buckets cost less memory and cover the window less exactly.
    pub fn with_buckets(n: usize, buckets: usize) -> Self {
        if n == 0 {
            return Self::default();
        }
        let bucket_len = n.div_ceil(buckets.max(1));
        Self {
            bucket_len,
            buckets: n.div_ceil(bucket_len),
            maxima: VecDeque::new(),
            filled: 0,
        }
    }

    /// True when the hold spans at least one sample.
    pub fn is_on(&self) -> bool {
        self.bucket_len > 0
    }

    /// Adds one sample (non-finite samples are ignored).
    pub fn push(&mut self, x: f64) {
        if self.bucket_len == 0 || !x.is_finite() {
            return;
        }
        match self.maxima.back_mut() {
            Some(m) if self.filled < self.bucket_len => *m = m.max(x),
            _ => {
                if self.maxima.len() >= self.buckets {
                    self.maxima.pop_front();
                }
                self.maxima.push_back(x);
                self.filled = 0;
            }
        }
        self.filled += 1;
    }

    /// The same window with every value kept multiplied by `factor` (a
    /// finite positive number; anything else leaves it unchanged).
    pub fn scaled(&self, factor: f64) -> Self {
        let mut h = self.clone();
        if factor.is_finite() && factor > 0.0 {
            h.maxima.iter_mut().for_each(|m| *m *= factor);
        }
        h
    }

    /// The largest sample held (0 without any).
    pub fn max(&self) -> f64 {
        self.maxima.iter().fold(0.0, |m: f64, &x| m.max(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_windows_are_exact() {
        let mut h = Hold::new(3);
        for (x, want) in [(9.0, 9.0), (2.0, 9.0), (2.0, 9.0), (2.0, 2.0), (5.0, 5.0)] {
            h.push(x);
            assert_eq!(h.max(), want);
        }
        let mut off = Hold::new(0);
        off.push(1.0);
        assert_eq!(off.max(), 0.0);
    }

    proptest! {
        #[test]
        fn holds_the_recent_peak(n in 1usize..200, buckets in 1usize..30, xs in proptest::collection::vec(0.0f64..1.0, 1..500)) {
            let mut h = Hold::with_buckets(n, buckets);
            let len = n.div_ceil(buckets);
            for (i, &x) in xs.iter().enumerate() {
                h.push(x);
                let seen = &xs[..=i];
                let last = |k: usize| seen[seen.len().saturating_sub(k)..].iter().fold(0.0f64, |a, &b| a.max(b));
                // covers at least the last n - len + 1 samples, at most the
                // last n rounded up to whole buckets
                prop_assert!(h.max() >= last(n + 1 - len));
                prop_assert!(h.max() <= last(n.div_ceil(len) * len));
            }
        }
    }
}

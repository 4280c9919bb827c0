//! The oracle: a forecaster that knows the future series and answers the
//! exact peak of the next samples (std 0), the bound every model is
//! measured against.
//!
//! Two forms, one [`Forecaster`] impl:
//!
//! - [`Oracle::new`] is handed the whole future and answers any horizon.
//! - [`Oracle::window_peaks`] answers one horizon, fixed when it is built,
//!   for a bounded number of positions, holding only their window peaks
//!   (not the raw future, which is `horizon` samples longer). The
//!   simulator uses it so that an oracle's memory does not grow with the
//!   horizon; it answers as the first form does over the same series.

use std::collections::VecDeque;

use crate::{ForecastError, Forecaster, Predictive};

/// Oracle: it knows the future series and answers the exact peak of the
/// next samples (std 0). `observe` advances through the series (the value
/// passed in is checked for finiteness but not compared).
///
/// Built with [`Oracle::new`] it answers any horizon and, past the end of
/// its future, the last known value. Built with [`Oracle::window_peaks`] it
/// answers the horizon it was built with (the `horizon` passed to
/// [`Forecaster::forecast`] is ignored) and, past its last position, the
/// last window's peak.
#[derive(Clone, Debug)]
pub struct Oracle {
    known: Known,
    pos: usize,
}

/// What an [`Oracle`] knows of the future.
#[derive(Clone, Debug)]
enum Known {
    /// `future[i]` is the i-th sample the oracle will observe.
    Future(Vec<f64>),
    /// `peaks[p]`: the largest of samples `p..p + h`, for the horizon `h`
    /// the oracle was built with.
    WindowPeaks(Vec<f64>),
}

impl Oracle {
    /// `future[i]` is the i-th sample the oracle will observe. Non-finite
    /// entries are rejected.
    pub fn new(future: Vec<f64>) -> Result<Self, ForecastError> {
        if let Some(&value) = future.iter().find(|v| !v.is_finite()) {
            return Err(ForecastError::NonFinite { value });
        }
        Ok(Self {
            known: Known::Future(future),
            pos: 0,
        })
    }

    /// An oracle over a series given by index, for one horizon: at
    /// position `p` (the samples observed so far, `p < len`) it answers the
    /// exact peak of samples `p..p + horizon` (`horizon` of 0 is treated as
    /// 1), as [`Oracle::new`] over samples `0..len + horizon - 1` does;
    /// positions past the last answer the last window's peak (0 if `len`
    /// is 0).
    ///
    /// Non-finite samples are rejected. Memory: `len` peaks, plus a
    /// monotonic deque of at most `horizon` entries while building.
    pub fn window_peaks(
        len: u64,
        horizon: usize,
        sample: impl Fn(u64) -> f64,
    ) -> Result<Self, ForecastError> {
        let h = horizon.max(1) as u64;
        // reserved up front only up to a bound: `len` is the caller's
        let mut peaks = Vec::with_capacity(len.min(1 << 16) as usize);
        // (index, value), values strictly decreasing from the front
        let mut deque: VecDeque<(u64, f64)> = VecDeque::new();
        for i in 0..len.saturating_add(h - 1) {
            let v = sample(i);
            crate::finite(v)?;
            while deque.back().is_some_and(|&(_, b)| b <= v) {
                deque.pop_back();
            }
            deque.push_back((i, v));
            if i + 1 >= h {
                let first = i + 1 - h;
                while deque.front().is_some_and(|&(j, _)| j < first) {
                    deque.pop_front();
                }
                peaks.push(deque.front().map_or(v, |&(_, p)| p));
            }
        }
        Ok(Self {
            known: Known::WindowPeaks(peaks),
            pos: 0,
        })
    }
}

impl Forecaster for Oracle {
    fn name(&self) -> &'static str {
        "oracle"
    }

    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        crate::finite(value)?;
        self.pos += 1;
        Ok(())
    }

    fn forecast(&self, horizon: usize) -> Predictive {
        match &self.known {
            Known::Future(future) => {
                let h = horizon.max(1);
                let start = self.pos.min(future.len());
                let end = (self.pos + h).min(future.len());
                let peak = future[start..end]
                    .iter()
                    .copied()
                    .fold(f64::NEG_INFINITY, f64::max);
                if peak.is_finite() {
                    Predictive::point(peak)
                } else {
                    Predictive::point(future.last().copied().unwrap_or(0.0))
                }
            }
            Known::WindowPeaks(peaks) => {
                let p = self.pos.min(peaks.len().saturating_sub(1));
                Predictive::point(peaks.get(p).copied().unwrap_or(0.0))
            }
        }
    }

    fn observed(&self) -> usize {
        self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window peaks an oracle holds (none for one handed the future).
    fn peaks(o: &Oracle) -> &[f64] {
        match &o.known {
            Known::WindowPeaks(p) => p,
            Known::Future(_) => &[],
        }
    }

    #[test]
    fn oracle_knows_the_future() {
        let mut o = Oracle::new(vec![1.0, 4.0, 2.0, 3.0]).expect("finite");
        assert_eq!(o.forecast(1).mean, 1.0);
        assert_eq!(o.forecast(2).mean, 4.0);
        o.observe(1.0).expect("ok");
        o.observe(4.0).expect("ok");
        assert_eq!(o.forecast(1), Predictive::point(2.0));
        assert_eq!(o.forecast(10).mean, 3.0);
        for _ in 0..5 {
            o.observe(0.0).expect("ok");
        }
        assert_eq!(o.forecast(1).mean, 3.0);
        assert!(Oracle::new(vec![f64::NAN]).is_err());
    }

    /// The window peaks equal the oracle over the materialised future at
    /// every position, for horizons shorter and longer than the positions.
    #[test]
    fn window_peaks_match_the_materialised_oracle() {
        let series: Vec<f64> = (0..200u64)
            .map(|i| ((i * 7919) % 101) as f64 / 10.0)
            .collect();
        for h in [1usize, 2, 5, 37, 150] {
            let len = 40u64;
            let mut w = Oracle::window_peaks(len, h, |i| series[i as usize]).expect("finite");
            let mut o = Oracle::new(series[..len as usize + h].to_vec()).expect("finite");
            for _ in 0..len {
                assert_eq!(w.forecast(h).mean, o.forecast(h).mean, "h {h}");
                w.observe(0.0).expect("finite");
                o.observe(0.0).expect("finite");
            }
        }
    }

    /// What a window-peaks oracle holds does not grow with the horizon:
    /// `len` peaks.
    #[test]
    fn window_peaks_hold_len_peaks_whatever_the_horizon() {
        let w = Oracle::window_peaks(4096, 10_000, |i| i as f64).expect("finite");
        assert_eq!(peaks(&w).len(), 4096);
        let Known::WindowPeaks(p) = &w.known else {
            panic!("window peaks");
        };
        assert!(p.capacity() <= 4096);
        assert_eq!(w.forecast(10_000).mean, 9_999.0);
    }

    #[test]
    fn window_peaks_past_the_last_position_answer_the_last_window() {
        let mut w =
            Oracle::window_peaks(3, 2, |i| [5.0, 1.0, 2.0, 0.5][i as usize]).expect("finite");
        assert_eq!(peaks(&w), [5.0, 2.0, 2.0]);
        for _ in 0..5 {
            w.observe(0.0).expect("ok");
        }
        assert_eq!(w.forecast(2).mean, 2.0);
        assert_eq!(w.observed(), 5);
        let empty = Oracle::window_peaks(0, 3, |_| 1.0).expect("finite");
        assert_eq!(empty.forecast(3).mean, 0.0);
    }

    #[test]
    fn non_finite_samples_are_rejected() {
        assert!(Oracle::window_peaks(3, 2, |i| if i == 3 { f64::NAN } else { 1.0 }).is_err());
    }
}

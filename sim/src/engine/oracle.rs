//! The oracle's models (`Forecasting::Oracle`): the exact peak of the next
//! `h` samples of the component's own usage series.
//!
//! Bounded memory: an oracle holds the window peaks of at most
//! [`ORACLE_CHUNK`] positions, not the raw future (which is `h` samples
//! longer than the positions it answers for, and `h` may be as large as
//! validation accepts), computed with a monotonic deque; it is rebuilt from
//! the current sample when the run reaches the end of its chunk. Its
//! forecasts are a pure function of the series, so where it is rebuilt
//! does not change a result.

use std::collections::VecDeque;

use super::*;

/// The most positions an oracle answers for before it is rebuilt: its
/// memory, per component and resource, whatever the horizon.
pub(super) const ORACLE_CHUNK: u64 = 4096;

/// Positions an oracle built now answers for: the component's run at full
/// speed, with room for a 2x slowdown, at most [`ORACLE_CHUNK`].
pub(super) fn oracle_len(work_s: f64, u: f64) -> u64 {
    let full = if u.is_finite() && u > 0.0 {
        (work_s / u).ceil()
    } else {
        1.0
    };
    ((2.0 * full.clamp(1.0, 1e7)) as u64 + 2).min(ORACLE_CHUNK)
}

/// An oracle pair whose future starts at sample `from` of the run (the
/// samples before it count as already observed), `offset + from` of the
/// usage series.
pub(super) fn oracle_fc_from(
    spec: &ComponentSpec,
    req: &Resources,
    work_s: f64,
    from: u64,
    offset: u64,
    h: usize,
) -> Result<CompFc, SimError> {
    let len = oracle_len(work_s, spec.usage.interval_s);
    let start = offset + from;
    let cpu = WindowPeaks::new(len, h, |i| {
        normalise(usage_at(spec, req, start + i).cpu_cores, req.cpu_cores)
    })?;
    let mem = WindowPeaks::new(len, h, |i| {
        normalise(mem_peak_at(spec, req, start + i), req.mem_bytes)
    })?;
    Ok(CompFc {
        models: ComponentModels::always_warm(Box::new(cpu), Box::new(mem)),
        fed: from,
        base: from,
        joined: true,
        request: *req,
    })
}

/// Oracle over a series given by index: at position `p` (the samples
/// observed so far) it answers the exact peak of samples `p..p + h` (the
/// horizon it was built with). Positions past the last answer the last
/// window's peak.
#[derive(Clone, Debug)]
pub(super) struct WindowPeaks {
    /// `peaks[p]`: the largest of samples `p..p + h`.
    peaks: Vec<f64>,
    pos: usize,
}

impl WindowPeaks {
    /// The peaks of the `len` windows of `h` samples (at least 1) starting
    /// at `0..len` of `sample`. Non-finite samples are rejected. Memory:
    /// `len` peaks plus a deque of at most `h` entries while building.
    pub(super) fn new(
        len: u64,
        h: usize,
        sample: impl Fn(u64) -> f64,
    ) -> Result<Self, ForecastError> {
        let h = h.max(1) as u64;
        let mut peaks = Vec::with_capacity(len as usize);
        // (index, value), values strictly decreasing from the front
        let mut deque: VecDeque<(u64, f64)> = VecDeque::new();
        for i in 0..len + h - 1 {
            let v = sample(i);
            if !v.is_finite() {
                return Err(ForecastError::NonFinite { value: v });
            }
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
        Ok(Self { peaks, pos: 0 })
    }
}

impl Forecaster for WindowPeaks {
    fn name(&self) -> &'static str {
        "oracle"
    }

    fn observe(&mut self, value: f64) -> Result<(), ForecastError> {
        if !value.is_finite() {
            return Err(ForecastError::NonFinite { value });
        }
        self.pos += 1;
        Ok(())
    }

    fn forecast(&self, _horizon: usize) -> forecaster::Predictive {
        let p = self.pos.min(self.peaks.len().saturating_sub(1));
        forecaster::Predictive::point(self.peaks.get(p).copied().unwrap_or(0.0))
    }

    fn observed(&self) -> usize {
        self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window peaks equal the forecaster crate's oracle over the
    /// materialised future at every position, for horizons shorter and
    /// longer than the positions.
    #[test]
    fn window_peaks_match_the_materialised_oracle() {
        let series: Vec<f64> = (0..200u64)
            .map(|i| ((i * 7919) % 101) as f64 / 10.0)
            .collect();
        for h in [1usize, 2, 5, 37, 150] {
            let len = 40u64;
            let mut w = WindowPeaks::new(len, h, |i| series[i as usize]).expect("finite");
            let mut o = forecaster::baselines::Oracle::new(series[..len as usize + h].to_vec())
                .expect("finite");
            for _ in 0..len {
                assert_eq!(w.forecast(h).mean, o.forecast(h).mean, "h {h}");
                w.observe(0.0).expect("finite");
                o.observe(0.0).expect("finite");
            }
        }
    }

    /// What an oracle holds does not grow with the horizon, nor with the
    /// run's length.
    #[test]
    fn an_oracle_holds_at_most_a_chunk() {
        let w = WindowPeaks::new(oracle_len(1e12, 1.0), 10_000, |i| i as f64).expect("finite");
        assert_eq!(w.peaks.len() as u64, ORACLE_CHUNK);
        assert!(w.peaks.capacity() as u64 <= ORACLE_CHUNK);
        assert_eq!(w.forecast(10_000).mean, 9_999.0);
        assert_eq!(oracle_len(600.0, 300.0), 6);
    }

    #[test]
    fn non_finite_samples_are_rejected() {
        assert!(WindowPeaks::new(3, 2, |i| if i == 3 { f64::NAN } else { 1.0 }).is_err());
    }
}

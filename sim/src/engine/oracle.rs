//! The oracle's models (`Forecasting::Oracle`): the exact peak of the next
//! `h` samples of the component's own usage series, as
//! [`forecaster::Oracle::window_peaks`] answers.
//!
//! Bounded memory: an oracle holds the window peaks of at most
//! [`ORACLE_CHUNK`] positions, not the raw future (which is `h` samples
//! longer than the positions it answers for, and `h` may be as large as
//! validation accepts); it is rebuilt from the current sample when the run
//! reaches the end of its chunk. Its forecasts are a pure function of the
//! series, so where it is rebuilt does not change a result.

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
    let cpu = forecaster::Oracle::window_peaks(len, h, |i| {
        normalise(usage_at(spec, req, start + i).cpu_cores, req.cpu_cores)
    })?;
    let mem = forecaster::Oracle::window_peaks(len, h, |i| {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What an oracle holds does not grow with the run's length: at most a
    /// chunk of positions (and the forecaster crate's window peaks hold
    /// one peak a position, whatever the horizon).
    #[test]
    fn an_oracle_answers_for_at_most_a_chunk() {
        assert_eq!(oracle_len(1e12, 1.0), ORACLE_CHUNK);
        assert_eq!(oracle_len(600.0, 300.0), 6);
    }
}

//! The one rule every reader applies to the numbers it accepts.
//!
//! A value read from a trace, a series file or an agent recording must be a
//! finite number within its range, or the reader refuses it with an error
//! naming the file, the line and the column (or key):
//! `FILE:LINE: COLUMN: 1e300 is above the largest accepted, 1000`. The
//! bounds are far above any real machine (a million cores, 2^60 bytes, a
//! thousand machines in normalised units), so they only catch damaged or
//! crafted values, which would otherwise turn into `inf` or absurd figures
//! downstream (or be dropped without a word). Every reader uses
//! [`in_range`] (CSV readers through
//! `google2011::reader::{opt_bounded, req_bounded}`), so the wording and
//! the limits are the same everywhere.

/// Largest CPU amount (a request, a usage or a machine), cores.
pub const MAX_CORES: f64 = 1.0e6;
/// Largest memory amount, bytes: 2^60 (an exbibyte).
pub const MAX_BYTES: f64 = (1u64 << 60) as f64;
/// Largest amount in normalised units (a share of the largest machine;
/// the Google traces' are below 1): a thousand machines.
pub const MAX_NORMALISED: f64 = 1.0e3;
/// Largest utilisation in percent of what it is a share of.
pub const MAX_PERCENT: f64 = 100.0;
/// Largest amount in a series file whose unit is not known (a plain CSV,
/// a derived per-job series): [`MAX_BYTES`], so bytes fit and anything
/// larger is damage.
pub const MAX_AMOUNT: f64 = MAX_BYTES;
/// Latest time from a trace's start, s: 400 days (the longest trace read
/// here spans 149 days). A later time is a damaged row, and would make a
/// replay simulate its years.
pub const MAX_TRACE_TIME_S: f64 = 400.0 * 86_400.0;
/// Latest Unix time accepted, s (year 2286).
pub const MAX_UNIX_S: f64 = 1.0e10;

/// `v` as an error shows it: plain, or in exponent form when very large
/// or very small (`1e300`, not three hundred digits).
pub fn show(v: f64) -> String {
    if v != 0.0 && v.is_finite() && (v.abs() >= 1e16 || v.abs() < 1e-6) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// `v` if it is finite and in `[min, max]`; else an error naming `what`
/// (a column or key): "is not a finite number", "is negative" (when `min`
/// is 0), "is below the smallest accepted, MIN" or "is above the largest
/// accepted, MAX".
pub fn in_range(what: &str, v: f64, min: f64, max: f64) -> Result<f64, String> {
    if !v.is_finite() {
        Err(format!("{what}: {} is not a finite number", show(v)))
    } else if v < min && min == 0.0 {
        Err(format!("{what}: {} is negative", show(v)))
    } else if v < min {
        Err(format!(
            "{what}: {} is below the smallest accepted, {}",
            show(v),
            show(min)
        ))
    } else if v > max {
        Err(format!(
            "{what}: {} is above the largest accepted, {}",
            show(v),
            show(max)
        ))
    } else {
        Ok(v)
    }
}

/// `v` if it is finite and in `(0, max]` (a capacity); else an error
/// naming `what`.
pub fn positive(what: &str, v: f64, max: f64) -> Result<f64, String> {
    match in_range(what, v, 0.0, max)? {
        v if v > 0.0 => Ok(v),
        v => Err(format!("{what}: {} must be above 0", show(v))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_wording_for_every_bound() {
        assert_eq!(in_range("c", 5.0, 0.0, 10.0), Ok(5.0));
        assert_eq!(in_range("c", 0.0, 0.0, 10.0), Ok(0.0));
        assert_eq!(
            in_range("CPUs", 1e300, 0.0, MAX_NORMALISED).expect_err("refused"),
            "CPUs: 1e300 is above the largest accepted, 1000"
        );
        assert_eq!(
            in_range("m", -1.0, 0.0, 1.0).expect_err("refused"),
            "m: -1 is negative"
        );
        assert_eq!(
            in_range("d", -2.0, -1.0, 101.0).expect_err("refused"),
            "d: -2 is below the smallest accepted, -1"
        );
        assert_eq!(
            in_range("x", f64::INFINITY, 0.0, 1.0).expect_err("refused"),
            "x: inf is not a finite number"
        );
        assert!(in_range("x", f64::NAN, 0.0, 1.0).is_err());
        assert_eq!(
            positive("capacity.cpu_cores", 0.0, MAX_CORES).expect_err("refused"),
            "capacity.cpu_cores: 0 must be above 0"
        );
        assert_eq!(
            in_range("b", 2e18, 0.0, MAX_BYTES).expect_err("refused"),
            "b: 2e18 is above the largest accepted, 1.152921504606847e18"
        );
    }
}

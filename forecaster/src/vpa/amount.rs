//! Resource amounts as the VPA stores them (`model/types.go`): integers,
//! CPU in millicores and memory in bytes, clamped to `[0, 1e14]`.
//!
//! Every estimator step goes through these conversions, so truncation
//! happens where the Go code truncates (e.g. `3.14 * 1.44` cores is
//! 4.521 cores, not 4.5216).

/// `MaxResourceAmount`: the largest amount the VPA represents.
pub const MAX_RESOURCE_AMOUNT: i64 = 100_000_000_000_000;

/// `resourceAmountFromFloat`: clamps to `[0, MAX_RESOURCE_AMOUNT]` and
/// truncates toward zero. NaN becomes 0 (Go's conversion of NaN to an
/// integer is implementation-defined; 0 is the only sane reading).
pub fn amount_from_f64(amount: f64) -> i64 {
    if amount.is_nan() {
        return 0;
    }
    if amount > MAX_RESOURCE_AMOUNT as f64 {
        return MAX_RESOURCE_AMOUNT;
    }
    if amount < 0.0 {
        return 0;
    }
    amount as i64
}

/// `CPUAmountFromCores`: cores to millicores.
pub fn cpu_amount_from_cores(cores: f64) -> i64 {
    amount_from_f64(cores * 1000.0)
}

/// `CoresFromCPUAmount`: millicores to cores.
pub fn cores_from_cpu_amount(millicores: i64) -> f64 {
    millicores as f64 / 1000.0
}

/// `MemoryAmountFromBytes`.
pub fn memory_amount_from_bytes(bytes: f64) -> i64 {
    amount_from_f64(bytes)
}

/// `BytesFromMemoryAmount`.
pub fn bytes_from_memory_amount(bytes: i64) -> f64 {
    bytes as f64
}

/// `ScaleResource`: the amount multiplied by `factor`, back through
/// [`amount_from_f64`].
pub fn scale_resource(amount: i64, factor: f64) -> i64 {
    amount_from_f64(amount as f64 * factor)
}

#[cfg(test)]
#[allow(clippy::approx_constant)] // 3.14 is the Go tests' value, not pi
mod tests {
    use super::*;

    #[test]
    fn conversions_truncate_and_clamp() {
        assert_eq!(cpu_amount_from_cores(3.14), 3140);
        assert_eq!(cores_from_cpu_amount(3140), 3.14);
        assert_eq!(amount_from_f64(-5.0), 0);
        assert_eq!(amount_from_f64(f64::INFINITY), MAX_RESOURCE_AMOUNT);
        assert_eq!(amount_from_f64(f64::NAN), 0);
        assert_eq!(scale_resource(3140, 1.44), 4521);
        assert_eq!(memory_amount_from_bytes(1.9), 1);
    }
}

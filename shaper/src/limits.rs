//! Floors, ceilings and rounding: the one place where a planned allocation
//! is bounded and rounded to what a runtime can set.
//!
//! Per resource, in this order:
//! 1. the floor (`[shaper] min_cpu_cores` / `min_mem_bytes`) raises it;
//! 2. it is rounded **up** to whole steps ([`CPU_STEP_CORES`],
//!    [`MEM_STEP_BYTES`]), unless that would cross the ceiling;
//! 3. the ceiling (`request * max_growth`) cuts it;
//! 4. current usage raises it (an allocation below what a component uses
//!    now would kill it or throttle it at once).

use crate::model::Resource;
use crate::plan::Bound;

/// CPU limits are set in millicores.
pub const CPU_STEP_CORES: f64 = 0.001;
/// Memory limits are set in whole 4 KiB pages.
pub const MEM_STEP_BYTES: f64 = 4096.0;

/// The rounding step of a resource.
pub fn step(r: Resource) -> f64 {
    match r {
        Resource::Cpu => CPU_STEP_CORES,
        Resource::Mem => MEM_STEP_BYTES,
    }
}

/// `x` if finite and > 0, else 0.
pub(crate) fn sane(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 {
        x
    } else {
        0.0
    }
}

/// A component's ceiling: `request * max_growth` (a `max_growth` below 1
/// or not finite counts as 1).
pub fn ceiling(request: f64, max_growth: f64) -> f64 {
    let growth = if max_growth.is_finite() && max_growth >= 1.0 {
        max_growth
    } else {
        1.0
    };
    request * growth
}

/// Bounds a raw target (forecast + buffer, or the request) for resource
/// `r`. Returns the allocation and what bound it.
pub fn bound_target(r: Resource, raw: f64, floor: f64, ceiling: f64, usage: f64) -> (f64, Bound) {
    let floor = sane(floor);
    let usage = sane(usage);
    let (mut t, mut bound) = if raw.is_finite() {
        (raw, Bound::Buffer)
    } else {
        (ceiling, Bound::Ceiling)
    };
    if t < floor {
        t = floor;
        bound = Bound::Floor;
    }
    let s = step(r);
    let rounded = (t / s).ceil() * s;
    if rounded.is_finite() && rounded <= ceiling {
        t = rounded;
    }
    if t > ceiling {
        t = ceiling;
        bound = Bound::Ceiling;
    }
    if t < usage {
        t = usage;
        bound = Bound::Usage;
    }
    (t.max(0.0), bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rounds_up_to_pages_and_millicores() {
        let (m, b) = bound_target(Resource::Mem, 1_000_001.0, 0.0, 1e9, 0.0);
        assert_eq!(m, 1_003_520.0);
        assert_eq!(b, Bound::Buffer);
        let (c, _) = bound_target(Resource::Cpu, 0.2501, 0.0, 2.0, 0.0);
        assert!((c - 0.251).abs() < 1e-12);
    }

    #[test]
    fn rounding_never_crosses_the_ceiling() {
        let (m, b) = bound_target(Resource::Mem, 999_999.0, 0.0, 1_000_000.0, 0.0);
        assert_eq!(m, 999_999.0);
        assert_eq!(b, Bound::Buffer);
        let (m, b) = bound_target(Resource::Mem, 2e6, 0.0, 1_000_000.0, 0.0);
        assert_eq!(m, 1_000_000.0);
        assert_eq!(b, Bound::Ceiling);
    }

    #[test]
    fn floor_then_usage() {
        let (m, b) = bound_target(Resource::Mem, 10.0, 16.0 * 1048576.0, 1e9, 0.0);
        assert_eq!(m, 16.0 * 1048576.0);
        assert_eq!(b, Bound::Floor);
        let (m, b) = bound_target(Resource::Mem, 10.0, 0.0, 1e6, 2e6);
        assert_eq!(m, 2e6);
        assert_eq!(b, Bound::Usage);
    }

    proptest! {
        #[test]
        fn bounded(raw in -1e12f64..1e12, floor in 0.0f64..1e10, ceiling in 0.0f64..1e12, usage in 0.0f64..1e12) {
            for r in Resource::ALL {
                let (t, _) = bound_target(r, raw, floor, ceiling, usage);
                prop_assert!(t.is_finite() && t >= 0.0);
                prop_assert!(t >= usage);
                prop_assert!(t <= ceiling.max(usage));
            }
        }
    }
}

//! Floors, ceilings and rounding: the one place where a planned allocation
//! is bounded and rounded to what a runtime can set.
//!
//! Per resource, in this order:
//! 1. the floor (`[shaper] min_cpu_cores` / `min_mem_bytes`) raises it;
//! 2. it is rounded **up** to whole steps ([`CPU_STEP_CORES`],
//!    [`MEM_STEP_BYTES`]), unless that would cross the ceiling
//!    (a target that whole steps would take across it is the ceiling);
//! 3. the ceiling (`request * max_growth`) cuts it;
//! 4. current usage (rounded **up** to whole steps) raises it (an
//!    allocation below what a component uses now would kill it or throttle
//!    it at once).
//!
//! So every target is a whole number of steps (a runtime rounds a memory
//! limit down to pages: an unaligned one is not what it holds), or the
//! ceiling as given: with the default `max_growth = 1` that is the
//! request, the limit the runtime already holds; rounded down, a usage
//! that reaches its request (a trace's usage is cut there) would be
//! killed a page below it. A cut to a host's share rounds down
//! ([`align_down`]) so that the cuts of a host never sum to more than it
//! has.

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

/// Steps of resource `r` per unit (cores or bytes): whole steps are
/// counted as integers and divided back, so that 237 millicores are the
/// `f64` nearest 0.237 (not `237.0 * 0.001 = 0.23700000000000002`).
fn steps_per_unit(r: Resource) -> f64 {
    match r {
        Resource::Cpu => 1000.0,
        Resource::Mem => 1.0 / MEM_STEP_BYTES,
    }
}

/// `x` in steps of `r`, snapped to the nearest whole number of steps when
/// within the error of the product (so that aligning is idempotent: 0.237
/// cores times 1000 is 237.00000000000003).
fn in_steps(r: Resource, x: f64) -> f64 {
    let n = x * steps_per_unit(r);
    let near = n.round();
    if (n - near).abs() <= f64::EPSILON * near.abs().max(1.0) {
        near
    } else {
        n
    }
}

fn from_steps(r: Resource, n: f64) -> f64 {
    n / steps_per_unit(r)
}

/// `x` rounded up to whole steps of `r`: never below `x` (`x` itself
/// when not finite, or when it is within float error above whole steps).
pub fn align_up(r: Resource, x: f64) -> f64 {
    if x.is_finite() {
        from_steps(r, in_steps(r, x).ceil()).max(x)
    } else {
        x
    }
}

/// `x` rounded down to whole steps of `r`: never above `x` (`x` itself
/// when not finite, or when it is within float error below whole steps).
pub fn align_down(r: Resource, x: f64) -> f64 {
    if x.is_finite() {
        from_steps(r, in_steps(r, x).floor()).min(x)
    } else {
        x
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
    let rounded = align_up(r, t);
    if rounded.is_finite() && rounded <= ceiling {
        t = rounded;
    } else if t <= ceiling && ceiling >= step(r) {
        // whole steps would cross the ceiling: the ceiling itself (a
        // ceiling under one step, in a test's units, keeps the raw target)
        t = ceiling;
        bound = Bound::Ceiling;
    }
    if t > ceiling {
        t = ceiling;
        bound = Bound::Ceiling;
    }
    if t < usage {
        // whole steps, as above (a ceiling under one step, in a test's
        // units, keeps the usage as it is)
        t = if ceiling >= step(r) {
            align_up(r, usage)
        } else {
            usage
        };
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
        // 245 pages would cross it: the ceiling itself
        let (m, b) = bound_target(Resource::Mem, 999_999.0, 0.0, 1_000_000.0, 0.0);
        assert_eq!(m, 1_000_000.0);
        assert_eq!(b, Bound::Ceiling);
        let (m, b) = bound_target(Resource::Mem, 999_000.0, 0.0, 1_000_000.0, 0.0);
        assert_eq!(m, 999_424.0);
        assert_eq!(b, Bound::Buffer);
        let (m, b) = bound_target(Resource::Mem, 2e6, 0.0, 1_000_000.0, 0.0);
        assert_eq!(m, 1_000_000.0);
        assert_eq!(b, Bound::Ceiling);
    }

    #[test]
    fn millicores_are_the_nearest_f64() {
        let (c, _) = bound_target(Resource::Cpu, 0.2361, 0.0, 2.0, 0.0);
        assert_eq!(c, 0.237);
        assert_eq!(align_up(Resource::Cpu, 0.237), 0.237);
        // within float error above whole steps: kept, never rounded below
        assert_eq!(
            align_up(Resource::Cpu, 0.237_000_000_000_000_02),
            0.237_000_000_000_000_02
        );
        assert_eq!(align_down(Resource::Cpu, 0.237_000_000_000_000_02), 0.237);
        assert_eq!(align_down(Resource::Cpu, 0.2379), 0.237);
        assert_eq!(align_down(Resource::Mem, 8191.0), 4096.0);
        assert_eq!(align_up(Resource::Mem, 4097.0), 8192.0);
        assert_eq!(align_up(Resource::Mem, f64::INFINITY), f64::INFINITY);
    }

    #[test]
    fn floor_then_usage() {
        let (m, b) = bound_target(Resource::Mem, 10.0, 16.0 * 1048576.0, 1e9, 0.0);
        assert_eq!(m, 16.0 * 1048576.0);
        assert_eq!(b, Bound::Floor);
        // usage is rounded up to pages (489 pages)
        let (m, b) = bound_target(Resource::Mem, 10.0, 0.0, 1e6, 2e6);
        assert_eq!(m, 2_002_944.0);
        assert_eq!(b, Bound::Usage);
    }

    proptest! {
        #[test]
        fn bounded(raw in -1e12f64..1e12, floor in 0.0f64..1e10, ceiling in 0.0f64..1e12, usage in 0.0f64..1e12) {
            for r in Resource::ALL {
                let (t, _) = bound_target(r, raw, floor, ceiling, usage);
                prop_assert!(t.is_finite() && t >= 0.0);
                prop_assert!(t >= usage);
                prop_assert!(t <= ceiling.max(align_up(r, usage)));
            }
        }

        #[test]
        fn targets_are_whole_steps_or_the_ceiling(raw in 0.0f64..1e11, floor in 0.0f64..1e10, ceiling in 2e4f64..1e11, usage in 0.0f64..1e11) {
            // memory in bytes, CPU in cores (up to 10,000)
            for r in Resource::ALL {
                let scale = match r { Resource::Cpu => 1e-7, Resource::Mem => 1.0 };
                let (t, b) = bound_target(r, raw * scale, floor * scale, ceiling * scale, usage * scale);
                if b == Bound::Ceiling {
                    prop_assert_eq!(t, ceiling * scale);
                    continue;
                }
                let n = t * steps_per_unit(r);
                prop_assert!((n - n.round()).abs() < 1e-6, "{r} {t}");
                prop_assert_eq!(align_up(r, t), t);
                prop_assert_eq!(align_down(r, t), t);
            }
        }
    }
}

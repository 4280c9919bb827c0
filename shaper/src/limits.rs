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
//! limit down to pages, so an unaligned one is not what it holds; the
//! kernel's step is a whole MiB, see [`MEM_STEP_BYTES`]), or the
//! ceiling as given: with the default `max_growth = 1` that is the
//! request, the limit the runtime already holds; rounded down, a usage
//! that reaches its request (a trace's usage is cut there) would be
//! killed a step below it. A cut to a host's share rounds down
//! ([`align_down`]) so that the cuts of a host never sum to more than it
//! has.
//!
//! [`component_bounds`] gives one component's bounds on their own: what
//! the kernel plans within, and what an agent holds a plan it did not make
//! to (a central shaper's, in cluster mode).

use crate::config::ShaperConfig;
use crate::model::Resource;
use crate::plan::Bound;

/// CPU limits are set in millicores.
pub const CPU_STEP_CORES: f64 = 0.001;
/// Memory limits are set in whole MiB. A runtime holds whole 4 KiB pages,
/// but a target that creeps up by a page or two a round (a calibrated band
/// widening on a flat series) would then be a `docker update`, an action
/// and a journal line every round (QA C7); in whole MiB it changes the
/// limit once per MiB. Measured: 7-12% fewer resizes on every workload for
/// 0.1-0.5% of the memory reclaimed (docs/results.md, "Creeping memory
/// growth").
pub const MEM_STEP_BYTES: f64 = 1048576.0;

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
///
/// Tested on the bits: the positive finite non-zero `f64`s are exactly
/// those whose bits lie in `1..=f64::MAX.to_bits()`. Same result as
/// `if x.is_finite() && x > 0.0 { x } else { 0.0 }` (which the optimizer
/// turns into a class test of about 15 instructions; this runs a few
/// dozen times per component and round).
#[inline]
pub(crate) fn sane(x: f64) -> f64 {
    if x.to_bits().wrapping_sub(1) < f64::MAX.to_bits() {
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

/// One component's bounds for one resource ([`component_bounds`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub resource: Resource,
    /// The floor: `[shaper] min_cpu_cores` / `min_mem_bytes`.
    pub floor: f64,
    /// The ceiling: `request * max_growth` ([`ceiling`]). It wins over the
    /// floor (a request below the floor is its own ceiling).
    pub ceiling: f64,
    /// Current usage: the kernel lets a target reach it (in whole steps)
    /// above the ceiling ([`bound_target`]: less would kill the component
    /// or throttle it at once).
    pub usage: f64,
    /// Memory: the component's reservation
    /// ([`crate::Component::mem_floor_bytes`]), which (in whole steps)
    /// wins over the floor and the ceiling; 0 for none (and for CPU).
    pub reserved: f64,
    /// What the component holds now ([`Bounds::keeping`]; 0 when not
    /// given): a plan may keep it above the ceiling.
    pub current: f64,
    /// What the component's host has ([`Bounds::within`]): nothing is
    /// allocated beyond it. Infinite when not given.
    pub host: f64,
}

/// Which bound [`Bounds::clamp`] moved a value to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clamped {
    /// Raised to the floor.
    Floor,
    /// Raised to the memory reservation.
    Reservation,
    /// Cut to the ceiling (or to current usage or the reservation above it).
    Ceiling,
    /// Cut to the host's capacity.
    Host,
}

impl Clamped {
    pub fn as_str(self) -> &'static str {
        match self {
            Clamped::Floor => "floor",
            Clamped::Reservation => "reservation",
            Clamped::Ceiling => "ceiling",
            Clamped::Host => "host",
        }
    }
}

/// The bounds of one component's allocation of resource `r` under `cfg`,
/// as the kernel plans it ([`crate::decide::target_with_k1`]): at least
/// the floor (`min_cpu_cores` / `min_mem_bytes`), at most the ceiling
/// (`request * max_growth`), which wins over the floor; current `usage`
/// lifts the ceiling, and for memory the reservation `reserved_mem` wins
/// over both. [`Bounds::within`] adds the host's capacity.
pub fn component_bounds(
    r: Resource,
    request: f64,
    usage: f64,
    reserved_mem: f64,
    cfg: &ShaperConfig,
) -> Bounds {
    let (floor, reserved) = match r {
        Resource::Cpu => (cfg.min_cpu_cores, 0.0),
        Resource::Mem => (cfg.min_mem_bytes, sane(reserved_mem)),
    };
    Bounds {
        resource: r,
        floor: sane(floor),
        ceiling: ceiling(sane(request), cfg.max_growth),
        usage: sane(usage),
        reserved,
        current: 0.0,
        host: f64::INFINITY,
    }
}

impl Bounds {
    /// The same bounds, at most `host` (what the component's host has,
    /// rounded down to whole steps; ignored unless finite and > 0).
    pub fn within(mut self, host: f64) -> Self {
        if host.is_finite() && host > 0.0 {
            self.host = align_down(self.resource, host);
        }
        self
    }

    /// The same bounds, lifted to `current` (what the component holds now):
    /// a plan may keep it, as protection (never shrunk) and the gradual
    /// memory shrink (`mem_shrink_max_fraction`) do.
    pub fn keeping(mut self, current: f64) -> Self {
        self.current = sane(current);
        self
    }

    /// The reservation as the kernel raises a target to it: whole steps.
    pub fn reserved_steps(&self) -> f64 {
        align_up(self.resource, self.reserved)
    }

    /// The floor in whole steps, at most the ceiling (which wins over it),
    /// as [`bound_target`] rounds it.
    fn floor_steps(&self) -> f64 {
        align_up(self.resource, self.floor).min(self.ceiling)
    }

    /// The ceiling, or current usage or the reservation above it (whole
    /// steps, as [`bound_target`] and the kernel raise a target to them),
    /// or what the component holds now, before the host.
    fn top(&self) -> f64 {
        self.ceiling
            .max(align_up(self.resource, self.usage))
            .max(self.reserved_steps())
            .max(self.current)
    }

    /// The least allocation: the floor in whole steps (at most the
    /// ceiling), or the reservation above it; at most the host.
    pub fn least(&self) -> f64 {
        self.clamp(0.0).0
    }

    /// The most allocation: the ceiling, or current usage or the
    /// reservation above it (whole steps), or what the component holds
    /// now; at most the host.
    pub fn most(&self) -> f64 {
        self.top().min(self.host)
    }

    /// `x` within the bounds (`x` itself when not finite), and the bound
    /// that moved it last (`None` when it was within them), in the
    /// kernel's order: raised to the floor, to the reservation (memory),
    /// cut to the ceiling (lifted as in [`Bounds::most`]), to the host.
    pub fn clamp(&self, x: f64) -> (f64, Option<Clamped>) {
        if !x.is_finite() {
            return (x, None);
        }
        let (mut t, mut by) = (x, None);
        let floor = self.floor_steps();
        if t < floor {
            (t, by) = (floor, Some(Clamped::Floor));
        }
        if t < self.reserved {
            (t, by) = (self.reserved_steps(), Some(Clamped::Reservation));
        }
        let top = self.top();
        if t > top {
            (t, by) = (top, Some(Clamped::Ceiling));
        }
        if t > self.host {
            (t, by) = (self.host, Some(Clamped::Host));
        }
        (t, by)
    }
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
    } else if t <= ceiling {
        // whole steps would cross the ceiling: the ceiling itself
        t = ceiling;
        bound = Bound::Ceiling;
    }
    if t > ceiling {
        t = ceiling;
        bound = Bound::Ceiling;
    }
    if t < usage {
        // whole steps, as above
        t = align_up(r, usage);
        bound = Bound::Usage;
    }
    (t.max(0.0), bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIB: f64 = 1048576.0;

    #[test]
    fn rounds_up_to_whole_mib_and_millicores() {
        let (m, b) = bound_target(Resource::Mem, 1_000_001.0, 0.0, 1e9, 0.0);
        assert_eq!(m, MIB);
        let (m, _) = bound_target(Resource::Mem, MIB + 1.0, 0.0, 1e9, 0.0);
        assert_eq!(m, 2.0 * MIB);
        assert_eq!(b, Bound::Buffer);
        let (c, _) = bound_target(Resource::Cpu, 0.2501, 0.0, 2.0, 0.0);
        assert!((c - 0.251).abs() < 1e-12);
    }

    #[test]
    fn rounding_never_crosses_the_ceiling() {
        // 10 MiB would cross it: the ceiling itself
        let ceiling = 9.5 * MIB;
        let (m, b) = bound_target(Resource::Mem, 9.2 * MIB, 0.0, ceiling, 0.0);
        assert_eq!(m, ceiling);
        assert_eq!(b, Bound::Ceiling);
        let (m, b) = bound_target(Resource::Mem, 8.2 * MIB, 0.0, ceiling, 0.0);
        assert_eq!(m, 9.0 * MIB);
        assert_eq!(b, Bound::Buffer);
        let (m, b) = bound_target(Resource::Mem, 20.0 * MIB, 0.0, ceiling, 0.0);
        assert_eq!(m, ceiling);
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
        assert_eq!(align_down(Resource::Mem, 2.0 * MIB - 1.0), MIB);
        assert_eq!(align_up(Resource::Mem, MIB + 1.0), 2.0 * MIB);
        assert_eq!(align_up(Resource::Mem, f64::INFINITY), f64::INFINITY);
    }

    #[test]
    fn floor_then_usage() {
        let (m, b) = bound_target(Resource::Mem, 10.0, 16.0 * 1048576.0, 1e9, 0.0);
        assert_eq!(m, 16.0 * 1048576.0);
        assert_eq!(b, Bound::Floor);
        // usage is rounded up to whole MiB
        let (m, b) = bound_target(Resource::Mem, 10.0, 0.0, 1e6, 2e6);
        assert_eq!(m, 2.0 * MIB);
        assert_eq!(b, Bound::Usage);
    }

    /// QA C8: the bounds an agent holds a central shaper's plan to, from
    /// the kernel's own floors and ceiling.
    #[test]
    fn component_bounds_clamp_to_the_floor_the_ceiling_and_the_host() {
        let mib = MIB;
        let cfg = ShaperConfig::default(); // 16 MiB / 0.01 cores, max_growth 1
        let gib = 1024.0 * mib;
        // 256 MiB / 0.5 cores requested, on a 2-core, 23.5 GiB host
        let mem =
            component_bounds(Resource::Mem, 256.0 * mib, 100.0 * mib, 0.0, &cfg).within(23.5 * gib);
        let cpu = component_bounds(Resource::Cpu, 0.5, 0.02, 0.0, &cfg).within(2.0);
        assert_eq!((mem.least(), mem.most()), (16.0 * mib, 256.0 * mib));
        assert_eq!((cpu.least(), cpu.most()), (0.01, 0.5));
        assert_eq!(mem.clamp(64.0 * gib), (256.0 * mib, Some(Clamped::Ceiling)));
        assert_eq!(mem.clamp(8.0 * mib), (16.0 * mib, Some(Clamped::Floor)));
        assert_eq!(mem.clamp(116.0 * mib), (116.0 * mib, None));
        assert_eq!(cpu.clamp(2.0), (0.5, Some(Clamped::Ceiling)));
        assert_eq!(cpu.clamp(0.001), (0.01, Some(Clamped::Floor)));
        assert!(
            mem.clamp(f64::NAN).0.is_nan(),
            "left for the caller to refuse"
        );
        // max_growth lifts the ceiling; the host cuts it
        let grow = ShaperConfig {
            max_growth: 200.0,
            ..ShaperConfig::default()
        };
        let mem = component_bounds(Resource::Mem, 256.0 * mib, 0.0, 0.0, &grow).within(23.5 * gib);
        assert_eq!(mem.clamp(64.0 * gib), (23.5 * gib, Some(Clamped::Host)));
        let cpu = component_bounds(Resource::Cpu, 0.5, 0.0, 0.0, &grow).within(2.0);
        assert_eq!(cpu.clamp(4.0), (2.0, Some(Clamped::Host)));
        // host RAM that is not whole MiB is rounded down
        let odd = component_bounds(Resource::Mem, 1e12, 0.0, 0.0, &cfg).within(1e9 + 1.0);
        assert_eq!(odd.most(), 953.0 * mib);
        // an unknown host bounds nothing
        assert_eq!(
            component_bounds(Resource::Cpu, 0.5, 0.0, 0.0, &cfg)
                .within(0.0)
                .host,
            f64::INFINITY
        );
    }

    /// The kernel's exceptions hold in the bounds too: the ceiling wins
    /// over the floor, current usage lifts the ceiling, and the memory
    /// reservation wins over both.
    #[test]
    fn component_bounds_keep_the_kernels_exceptions() {
        let mib = MIB;
        let cfg = ShaperConfig::default();
        // an 8 MiB request under the 16 MiB floor is its own ceiling
        let tiny = component_bounds(Resource::Mem, 8.0 * mib, 0.0, 0.0, &cfg);
        assert_eq!((tiny.least(), tiny.most()), (8.0 * mib, 8.0 * mib));
        // usage above a (label's) request: up to usage in whole MiB
        let used = component_bounds(Resource::Mem, 100.0 * mib, 150.0 * mib + 1.0, 0.0, &cfg);
        assert_eq!(used.most(), 151.0 * mib);
        assert_eq!(used.least(), 16.0 * mib, "usage is not a floor");
        // a reservation above the request: at least and at most it
        let res = component_bounds(Resource::Mem, 100.0 * mib, 0.0, 200.0 * mib, &cfg);
        assert_eq!((res.least(), res.most()), (200.0 * mib, 200.0 * mib));
        assert_eq!(
            res.clamp(50.0 * mib),
            (200.0 * mib, Some(Clamped::Reservation))
        );
        // no reservation for CPU
        let cpu = component_bounds(Resource::Cpu, 1.0, 0.0, 200.0 * mib, &cfg);
        assert_eq!(cpu.reserved, 0.0);
        // what it holds now may be kept (protection, gradual shrinks)
        let held =
            component_bounds(Resource::Mem, 100.0 * mib, 0.0, 0.0, &cfg).keeping(300.0 * mib);
        assert_eq!(held.clamp(250.0 * mib), (250.0 * mib, None));
        assert_eq!(
            held.clamp(400.0 * mib),
            (300.0 * mib, Some(Clamped::Ceiling))
        );
        let on_host = held.within(200.0 * mib);
        assert_eq!(
            on_host.clamp(250.0 * mib),
            (200.0 * mib, Some(Clamped::Host))
        );
    }

    /// [`sane`] tests the bits: the same as `is_finite() && > 0`.
    #[test]
    fn sane_keeps_positive_finite_values_only() {
        let reference = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
        for x in [
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(1),
            1.0,
            -1.0,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
        ] {
            assert_eq!(sane(x).to_bits(), reference(x).to_bits(), "{x:?}");
        }
    }

    proptest! {
        #[test]
        fn sane_is_finite_and_positive(bits in proptest::num::u64::ANY) {
            let x = f64::from_bits(bits);
            let reference = if x.is_finite() && x > 0.0 { x } else { 0.0 };
            prop_assert_eq!(sane(x).to_bits(), reference.to_bits());
        }

        /// Every target of [`bound_target`] lies within the component's
        /// bounds: an agent holding plans to them never moves the kernel's.
        #[test]
        fn bound_targets_lie_within_the_component_bounds(
            raw in -1e12f64..1e12, request in 0.0f64..1e11, usage in 0.0f64..1e11,
            growth in 1.0f64..3.0, floors in proptest::bool::ANY, tiny in proptest::bool::ANY,
        ) {
            let cfg = ShaperConfig {
                max_growth: growth,
                min_cpu_cores: if floors { 0.01 } else { 0.0 },
                min_mem_bytes: if floors { 16.0 * 1048576.0 } else { 0.0 },
                ..ShaperConfig::default()
            };
            // also with requests under one step
            let scale = if tiny { 1e-9 } else { 1.0 };
            for r in Resource::ALL {
                let unit = match r { Resource::Cpu => 1e-7, Resource::Mem => 1.0 } * scale;
                let b = component_bounds(r, request * unit, usage * unit, 0.0, &cfg);
                let (t, _) = bound_target(r, raw * unit, b.floor, b.ceiling, b.usage);
                prop_assert_eq!(b.clamp(t), (t, None), "{} {:?}", r, b);
            }
        }

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

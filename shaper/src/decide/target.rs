//! One component's target allocation, hysteresis and protection.

use super::*;
use crate::limits::component_bounds;

/// A component's target allocation and how it was computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    /// Planned allocation before hysteresis and protection.
    pub alloc: Resources,
    pub basis: Basis,
    pub cpu: Sizing,
    pub mem: Sizing,
}

impl Target {
    pub fn sizing(&self, r: Resource) -> &Sizing {
        match r {
            Resource::Cpu => &self.cpu,
            Resource::Mem => &self.mem,
        }
    }
}

fn usable(p: &Predictive) -> bool {
    p.mean.is_finite() && p.std.is_finite()
}

pub use crate::risk::risk_to_level;

/// The target allocation of one component under `cfg` at `now_s`:
/// `mean + k1 * request + (upper(k2) - mean)` per resource (for memory,
/// `mean` raised to the forecast's `mem_hold_bytes`, and for a small
/// application's component ([`ShaperConfig::is_small`]) to its
/// `mem_small_hold_bytes`), plus
/// `mem_margin * mean` for memory (when `memory_risk = P` is set, memory
/// is `upper(risk_to_level(P))`, the allocation its forecast peak crosses
/// with probability `P`; see [`buffer`]), raised to the
/// floor (`min_*`), cut to the ceiling (`request * max_growth`), raised
/// to current usage, and for memory to the component's reservation
/// ([`Component::mem_floor_bytes`], above the ceiling too). Components in
/// the grace period, without a usable forecast, or in an application over
/// the failure limit target their request (same clamps);
/// under the baseline policy the target is exactly the request. The
/// application-memory rule sees `app` as the whole view (with
/// `app_mem_ref_rel` its reference is that multiple of the application's
/// own memory); `decide()` works it out over the whole view.
pub fn component_target(
    app: &Application,
    c: &Component,
    now_s: f64,
    cfg: &ShaperConfig,
) -> Target {
    // The application's memory is summed only when the rule looks at it.
    let mut mem = [if cfg.app_mem_rule() {
        app.mem_request_bytes()
    } else {
        0.0
    }];
    let ref_gib = cfg.app_mem_ref_in(&mut mem);
    let size = app.size(mem[0]);
    let k1 = cfg.k1_for_class(size, cfg.k1_for(size, ref_gib), c.class);
    target_with_k1(app, c, now_s, cfg, k1, cfg.is_small(size, c.class))
}

/// [`component_target`] with the component's constant buffer term
/// ([`ShaperConfig::k1_for_class`]) and smallness
/// ([`ShaperConfig::is_small`]) already known: `decide()` works them out
/// once per application, with the reference of the whole view (and so does
/// a node's recommendation of a container the plan did not resize).
pub fn target_with_k1(
    app: &Application,
    c: &Component,
    now_s: f64,
    cfg: &ShaperConfig,
    k1: f64,
    small: bool,
) -> Target {
    let basis = if cfg.policy == Policy::Baseline {
        Basis::Baseline
    } else if !matches!(
        (now_s - c.started_s).partial_cmp(&cfg.grace_period_s),
        Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
    ) {
        // also catches NaN start times: conservative
        Basis::GracePeriod
    } else if app.failures >= cfg.failure_limit {
        Basis::FailureLimit
    } else {
        match &c.forecast {
            Some(f) if usable(&f.cpu) && usable(&f.mem) => Basis::Forecast,
            _ => Basis::NoForecast,
        }
    };
    let k1 = cfg.young_k1(k1, c.class, c.restarts_alone, now_s - c.started_s);
    let cpu = sizing(Resource::Cpu, c, basis, small, k1, cfg);
    let mem = sizing(Resource::Mem, c, basis, small, k1, cfg);
    Target {
        alloc: Resources::new(cpu.target, mem.target),
        basis,
        cpu,
        mem,
    }
}

/// One resource of [`target_with_k1`]: always inlined, so that each of its
/// two calls is compiled for its resource (the matches on `r` fold away).
#[inline(always)]
fn sizing(
    r: Resource,
    c: &Component,
    basis: Basis,
    small: bool,
    k1: f64,
    cfg: &ShaperConfig,
) -> Sizing {
    let req = sane(c.request.get(r));
    let usage = sane(c.usage.get(r));
    if basis == Basis::Baseline {
        return Sizing::bare(req);
    }
    let (mean, sigma, b, raw) = match (&c.forecast, basis) {
        (Some(f), Basis::Forecast) => {
            let held;
            let mut p = f.get(r);
            let hold = if small {
                f.mem_hold_bytes.max(f.mem_small_hold_bytes)
            } else {
                f.mem_hold_bytes
            };
            if r == Resource::Mem && hold > p.mean {
                // sized from the hold; the need stays the forecast's
                held = Predictive {
                    mean: hold,
                    ..p.clone()
                };
                p = &held;
            }
            let b = buffer(r, p, req, cfg, k1);
            (p.mean, p.std, b, p.mean + b.total())
        }
        _ => (0.0, 0.0, Buffer::default(), req),
    };
    // The component's bounds (floor, ceiling, what lifts it), the same
    // an agent holds a central shaper's plan to.
    let lim = component_bounds(r, req, usage, c.mem_floor_bytes, cfg);
    let (mut t, mut bound) = bound_target(r, raw, lim.floor, lim.ceiling, lim.usage);
    // After an OOM kill: at least the OOM floor (at most the ceiling),
    // in whole steps unless that crosses the ceiling.
    let oom = match r {
        Resource::Cpu => 0.0,
        Resource::Mem => oom_floor_bytes(c, cfg),
    };
    if t < oom {
        t = crate::limits::align_up(r, oom).min(lim.ceiling).max(oom);
        bound = Bound::OomFloor;
    }
    // What the runtime promises the component wins over the ceiling (a
    // request below the reservation: a label, or a component started
    // without a memory limit and counted at its use); 0 for CPU.
    if t < lim.reserved {
        t = lim.reserved_steps();
        bound = Bound::Reservation;
    }
    Sizing {
        mean,
        sigma,
        k1_term: b.k1_term,
        k2_term: b.k2_term,
        band: b.band,
        margin_term: b.margin_term,
        target: t,
        bound,
    }
}

/// A component's OOM floor while it holds ([`Component::oom_floor_bytes`]),
/// at most its memory ceiling (`request * max_growth`).
pub(super) fn oom_floor_bytes(c: &Component, cfg: &ShaperConfig) -> f64 {
    sane(c.oom_floor_bytes).min(ceiling(sane(c.request.mem_bytes), cfg.max_growth))
}

/// The safety buffer above a forecast, per term (see [`buffer`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Buffer {
    /// `k1 * request` (0 for risk-targeted memory).
    pub k1_term: f64,
    /// `upper(k2) - mean`, or for risk-targeted memory `upper(level(P)) -
    /// mean`: `band.mult * sigma`.
    pub k2_term: f64,
    /// The level and multiplier of sigma behind `k2_term`.
    pub band: Band,
    /// `mem_margin * max(mean, 0)` (memory under K1/K2 only).
    pub margin_term: f64,
}

impl Buffer {
    pub fn total(&self) -> f64 {
        self.k1_term + self.k2_term + self.margin_term
    }
}

/// The buffer that resource `r`'s forecast `p` gets under `cfg` at request
/// `req` (the target before the floor, the ceiling and current usage is
/// `p.mean + buffer.total()`): `k1 * req + (upper(k2) - mean)`, with `k1`
/// the component's ([`ShaperConfig::k1_for`]), plus
/// `mem_margin * mean` for memory; with `memory_risk = P`, memory gets
/// `upper(risk_to_level(P)) - mean` alone.
#[inline]
pub fn buffer(r: Resource, p: &Predictive, req: f64, cfg: &ShaperConfig, k1: f64) -> Buffer {
    match (r, cfg.memory_risk) {
        // Risk-targeted memory: the (calibrated) upper band at the level
        // whose one-sided tail is `memory_risk`.
        (Resource::Mem, Some(risk)) => Buffer {
            k1_term: 0.0,
            k2_term: p.band_above(risk_to_level(risk)),
            band: band(p, BandLevel::MemoryRisk, risk_to_level(risk)),
            margin_term: 0.0,
        },
        _ => Buffer {
            k1_term: sane(k1) * req,
            k2_term: p.band_above(sane(cfg.k2)),
            band: band(p, BandLevel::K2, sane(cfg.k2)),
            margin_term: match r {
                Resource::Mem => sane(cfg.mem_margin) * sane(p.mean),
                Resource::Cpu => 0.0,
            },
        },
    }
}

/// The band of `p` at `level` (its multiplier of sigma, as `band_above`).
fn band(p: &Predictive, level_of: BandLevel, level: f64) -> Band {
    Band {
        level_of,
        level,
        mult: p.band_mult(level),
    }
}

pub(super) fn rel_change(to: f64, from: f64) -> f64 {
    if to == from {
        0.0
    } else if from > 0.0 {
        (to - from).abs() / from
    } else {
        f64::INFINITY
    }
}

/// Applies protection and hysteresis: returns (allocation in force after
/// the plan, changed, skipped by hysteresis).
pub(super) fn settle(
    planned: Resources,
    c: &Component,
    cfg: &ShaperConfig,
) -> (Resources, bool, bool) {
    let cur = c.allocation;
    let cur_ok = cur.is_finite() && cur.cpu_cores >= 0.0 && cur.mem_bytes >= 0.0;
    if !cur_ok {
        return (planned, true, false);
    }
    let mut p = planned;
    if c.protected {
        p = Resources::new(
            p.cpu_cores.max(cur.cpu_cores),
            p.mem_bytes.max(cur.mem_bytes),
        );
    }
    if p == cur {
        return (cur, false, false);
    }
    if cfg.policy == Policy::Baseline {
        return (p, true, false);
    }
    let usage = Resources::new(sane(c.usage.cpu_cores), sane(c.usage.mem_bytes));
    // Growths the hysteresis never holds back: any resource already short
    // of its usage, and any memory growth at all (memory is not
    // compressible: a held-back growth towards the forecast peak is an OOM
    // kill waiting to happen, CPU only slows down; holding back growths
    // under 1% of the planned headroom cost a Bitbrains VM, QA C7).
    let need_growth = p.mem_bytes > cur.mem_bytes
        || Resource::ALL
            .iter()
            .any(|&r| cur.get(r) < usage.get(r) && p.get(r) > cur.get(r));
    let m = if cfg.min_relative_change.is_finite() {
        cfg.min_relative_change
    } else {
        0.0
    };
    let small = Resource::ALL
        .iter()
        .all(|&r| rel_change(p.get(r), cur.get(r)) < m);
    if small && !need_growth {
        return (cur, false, true);
    }
    // Hysteresis judged the whole change; a memory shrink then takes at
    // most `mem_shrink_max_fraction` of the current allocation this round.
    if p.mem_bytes < cur.mem_bytes {
        let f = cfg.mem_shrink_max_fraction.clamp(f64::MIN_POSITIVE, 1.0);
        let step = crate::limits::MEM_STEP_BYTES;
        let least = (cur.mem_bytes * (1.0 - f) / step).ceil() * step;
        p.mem_bytes = p.mem_bytes.max(least.min(cur.mem_bytes));
    }
    (p, true, false)
}

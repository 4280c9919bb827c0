//! The OOM floor: after a component was OOM-killed at a memory limit, its
//! memory allocation is held at or above `max(limit + oom_bump_bytes,
//! limit * oom_bump_factor)` for `oom_memory_s` seconds (the Kubernetes
//! VPA's bump: +100 MiB or x1.2, whichever is larger), and at or above its
//! request when the limit it was killed at was below the request. The VPA
//! bumps a request that was too small; tailor's kill at a cut below the
//! request says only that the cut was too deep, by an amount the kill
//! hides (the peak is censored at the limit), and the request is the one
//! size known to be enough: bumped from a deep cut, a container stepping
//! to near its request was killed once per +100 MiB (a QA soak on a real
//! dockerd, 2026-11-30: a step from 20 to 235 MiB under a 256 MiB limit
//! cut to 49 MiB was killed at 49 and again at 149 MiB).
//!
//! The floor bounds the component's memory target from below
//! ([`Component::oom_floor_bytes`]; its usage stays what was measured), up
//! to the component's ceiling (`request * [shaper] max_growth`): the VPA
//! raises a request, which the scheduler then places; tailor sizes within
//! the request a component was placed with. A floor past it would be a need its host was never asked to hold:
//! in the simulator, a restarted task placed at its request and evicted
//! again at once for its floor, round after round (274 evictions of one
//! job on the bundled slice at seed 15). The agent
//! (standalone or cluster) and the simulator record kills through
//! [`OomFloor::after_kill`] and apply them through [`OomFloor::held_bytes`]
//! and [`OomFloor::apply`].

use crate::config::ShaperConfig;
use crate::model::Component;
use serde::{Deserialize, Serialize};

/// A memory floor that holds until `until_s`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OomFloor {
    pub mem_bytes: f64,
    pub until_s: f64,
    /// `[shaper] max_growth` when the kill happened: the floor never
    /// passes `request * max_growth`.
    #[serde(default = "one")]
    pub max_growth: f64,
}

fn one() -> f64 {
    1.0
}

impl OomFloor {
    /// The floor after an OOM kill at `limit_bytes`, at `now_s`, of a
    /// component whose memory request is `request_bytes`: the bump, and the
    /// request when the limit was below it.
    pub fn after_kill(
        limit_bytes: f64,
        request_bytes: f64,
        now_s: f64,
        cfg: &ShaperConfig,
    ) -> Self {
        let sane = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
        let limit = sane(limit_bytes);
        let request = sane(request_bytes);
        let mut bumped = (limit + cfg.oom_bump_bytes).max(limit * cfg.oom_bump_factor);
        if limit < request {
            bumped = bumped.max(request);
        }
        Self {
            mem_bytes: if bumped.is_finite() { bumped } else { limit },
            until_s: now_s + cfg.oom_memory_s,
            max_growth: cfg.max_growth,
        }
    }

    /// Finite, not negative, and a ceiling of at least the request: what
    /// a checkpoint must hold to be restored.
    pub fn is_sane(&self) -> bool {
        self.mem_bytes.is_finite()
            && self.mem_bytes >= 0.0
            && self.until_s.is_finite()
            && self.max_growth.is_finite()
            && self.max_growth >= 1.0
    }

    /// True while the floor holds.
    pub fn active(&self, now_s: f64) -> bool {
        now_s <= self.until_s
    }

    /// The floor for a component of memory request `request_bytes`: at
    /// most its ceiling, `request_bytes * max_growth`.
    pub fn mem_bytes_for(&self, request_bytes: f64) -> f64 {
        self.mem_bytes.min(request_bytes * self.max_growth)
    }

    /// The memory held at `now_s` for a component of memory request
    /// `request_bytes`: [`OomFloor::mem_bytes_for`] while the floor holds,
    /// else 0.
    pub fn held_bytes(&self, now_s: f64, request_bytes: f64) -> f64 {
        if self.active(now_s) {
            self.mem_bytes_for(request_bytes)
        } else {
            0.0
        }
    }

    /// Sets a component's [`Component::oom_floor_bytes`] while the floor
    /// holds (its usage stays what was measured).
    pub fn apply(&self, now_s: f64, c: &mut Component) {
        c.oom_floor_bytes = c
            .oom_floor_bytes
            .max(self.held_bytes(now_s, c.request.mem_bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bump_is_the_larger_of_plus_and_times() {
        let cfg = ShaperConfig::default();
        let mib = 1048576.0;
        let f = OomFloor::after_kill(100.0 * mib, 100.0 * mib, 50.0, &cfg);
        assert_eq!(f.mem_bytes, 200.0 * mib);
        let f = OomFloor::after_kill(1000.0 * mib, 0.0, 50.0, &cfg);
        assert_eq!(f.mem_bytes, 1200.0 * mib);
        assert!(f.active(50.0 + cfg.oom_memory_s));
        assert!(!f.active(50.1 + cfg.oom_memory_s));
    }

    /// A kill at a cut below the request holds the request: the bump from
    /// the cut (+100 MiB) would be killed again by a step to near it.
    #[test]
    fn a_kill_below_the_request_holds_the_request() {
        let cfg = ShaperConfig::default();
        let mib = 1048576.0;
        let f = OomFloor::after_kill(49.0 * mib, 256.0 * mib, 0.0, &cfg);
        assert_eq!(f.mem_bytes, 256.0 * mib);
        assert_eq!(f.mem_bytes_for(256.0 * mib), 256.0 * mib);
        // at or above the request: the bump alone
        let f = OomFloor::after_kill(256.0 * mib, 256.0 * mib, 0.0, &cfg);
        assert_eq!(f.mem_bytes, 356.0 * mib);
        // a request that is not a number: the bump alone
        let f = OomFloor::after_kill(49.0 * mib, f64::NAN, 0.0, &cfg);
        assert_eq!(f.mem_bytes, 149.0 * mib);
    }

    #[test]
    fn the_floor_stops_at_the_ceiling() {
        let cfg = ShaperConfig::default();
        let f = OomFloor::after_kill(900.0, 1000.0, 0.0, &cfg);
        // 1.2 x 900 = 1080 (the +100 MiB bump is larger still), capped at
        // the request's ceiling.
        assert_eq!(f.held_bytes(1.0, 1000.0), 1000.0);
        assert_eq!(f.held_bytes(1.0 + cfg.oom_memory_s, 1000.0), 0.0);
        let grow = ShaperConfig {
            max_growth: 1.5,
            ..cfg.clone()
        };
        let f = OomFloor::after_kill(900.0, 1000.0, 0.0, &grow);
        assert_eq!(f.mem_bytes_for(1000.0), f.mem_bytes.min(1500.0));
        // An old record without the field: never above the request.
        let old: OomFloor =
            serde_json::from_str(r#"{"mem_bytes":2e9,"until_s":5.0}"#).expect("parses");
        assert_eq!(old.mem_bytes_for(1e9), 1e9);
    }
}

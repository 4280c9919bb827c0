//! The OOM floor: after a component was OOM-killed at a memory limit, its
//! memory allocation is held at or above `max(limit + oom_bump_bytes,
//! limit * oom_bump_factor)` for `oom_memory_s` seconds (the Kubernetes
//! VPA's bump: +100 MiB or x1.2, whichever is larger).
//!
//! The floor raises the memory usage the shaper sees for the component, so
//! its target clears it, up to the component's ceiling (`request *
//! [shaper] max_growth`): the VPA raises a request, which the scheduler
//! then places; tailor sizes within the request a component was placed
//! with. A floor past it would be a need its host was never asked to hold:
//! in the simulator, a restarted task placed at its request and evicted
//! again at once for its floor, round after round (274 evictions of one
//! job on the bundled slice at seed 15). The agent
//! (standalone or cluster) and the simulator record kills through
//! [`OomFloor::after_kill`] and apply it through [`OomFloor::apply`].

use crate::config::ShaperConfig;
use crate::model::{Component, Resources};
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
    /// The floor after an OOM kill at `limit_bytes`, at `now_s`.
    pub fn after_kill(limit_bytes: f64, now_s: f64, cfg: &ShaperConfig) -> Self {
        let limit = if limit_bytes.is_finite() && limit_bytes > 0.0 {
            limit_bytes
        } else {
            0.0
        };
        let bumped = (limit + cfg.oom_bump_bytes).max(limit * cfg.oom_bump_factor);
        Self {
            mem_bytes: if bumped.is_finite() { bumped } else { limit },
            until_s: now_s + cfg.oom_memory_s,
            max_growth: cfg.max_growth,
        }
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

    /// Raises memory usage to the floor while it holds (at most the
    /// ceiling of `request`: [`OomFloor::mem_bytes_for`]).
    pub fn raise(&self, now_s: f64, usage: &mut Resources, request: Resources) {
        if self.active(now_s) {
            usage.mem_bytes = usage.mem_bytes.max(self.mem_bytes_for(request.mem_bytes));
        }
    }

    /// [`OomFloor::raise`] on a component of a view.
    pub fn apply(&self, now_s: f64, c: &mut Component) {
        self.raise(now_s, &mut c.usage, c.request);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bump_is_the_larger_of_plus_and_times() {
        let cfg = ShaperConfig::default();
        let mib = 1048576.0;
        let f = OomFloor::after_kill(100.0 * mib, 50.0, &cfg);
        assert_eq!(f.mem_bytes, 200.0 * mib);
        let f = OomFloor::after_kill(1000.0 * mib, 50.0, &cfg);
        assert_eq!(f.mem_bytes, 1200.0 * mib);
        assert!(f.active(50.0 + cfg.oom_memory_s));
        assert!(!f.active(50.1 + cfg.oom_memory_s));
    }

    #[test]
    fn the_floor_stops_at_the_ceiling() {
        let cfg = ShaperConfig::default();
        let f = OomFloor::after_kill(900.0, 0.0, &cfg);
        let mut usage = Resources::new(0.1, 100.0);
        // 1.2 x 900 = 1080 (the +100 MiB bump is larger still), capped at
        // the request's ceiling.
        f.raise(1.0, &mut usage, Resources::new(1.0, 1000.0));
        assert_eq!(usage.mem_bytes, 1000.0);
        let grow = ShaperConfig {
            max_growth: 1.5,
            ..cfg.clone()
        };
        let f = OomFloor::after_kill(900.0, 0.0, &grow);
        assert_eq!(f.mem_bytes_for(1000.0), f.mem_bytes.min(1500.0));
        // An old record without the field: never above the request.
        let old: OomFloor =
            serde_json::from_str(r#"{"mem_bytes":2e9,"until_s":5.0}"#).expect("parses");
        assert_eq!(old.mem_bytes_for(1e9), 1e9);
    }
}

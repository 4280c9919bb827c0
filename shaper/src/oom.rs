//! The OOM floor: after a component was OOM-killed at a memory limit, its
//! memory allocation is held at or above `max(limit + oom_bump_bytes,
//! limit * oom_bump_factor)` for `oom_memory_s` seconds (the Kubernetes
//! VPA's bump: +100 MiB or x1.2, whichever is larger).
//!
//! The floor raises both the usage and the request the shaper sees for
//! the component, so the target and the ceiling both clear it. The agent
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
        }
    }

    /// True while the floor holds.
    pub fn active(&self, now_s: f64) -> bool {
        now_s <= self.until_s
    }

    /// Raises memory usage and request to the floor while it holds.
    pub fn raise(&self, now_s: f64, usage: &mut Resources, request: &mut Resources) {
        if self.active(now_s) {
            usage.mem_bytes = usage.mem_bytes.max(self.mem_bytes);
            request.mem_bytes = request.mem_bytes.max(self.mem_bytes);
        }
    }

    /// [`OomFloor::raise`] on a component of a view.
    pub fn apply(&self, now_s: f64, c: &mut Component) {
        self.raise(now_s, &mut c.usage, &mut c.request);
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
}

//! What an agent does while it cannot reach the shaper.
//!
//! * **Connected**: the shaper's actions are applied.
//! * **Holding** (from the first failed report until `hold_s` after the last
//!   successful one): nothing shrinks and nothing is evicted any more, at
//!   once; every container keeps what it has.
//! * **Regrowing** (after `hold_s` without the shaper): every interval, each
//!   container below its request grows by `regrow_fraction` of the gap to its
//!   request (per resource; the last `snap_fraction` of the request is closed
//!   in one step), so a cluster that lost its planner slowly returns to plain
//!   reservations instead of jumping there all at once. Each step is
//!   rounded as the kernel rounds a plan's targets
//!   ([`shaper::limits::bound_target`]: up to whole MiB and
//!   millicores, or the request itself where that would cross it), so the
//!   runtime holds the limit written.
//!
//! The first successful report returns to Connected; from then on the
//! shaper plans again from what the agent reports.

use serde::{Deserialize, Serialize};
use shaper::{ConfigErrors, Resource, Resources};

fn default_hold_s() -> f64 {
    60.0
}
fn default_regrow_fraction() -> f64 {
    0.25
}
fn default_snap_fraction() -> f64 {
    0.02
}

/// `[cluster.fail_safe]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailSafeConfig {
    /// Seconds after the last successful report during which allocations are
    /// only held. Default 60.
    #[serde(default = "default_hold_s")]
    pub hold_s: f64,
    /// Share of the gap between allocation and request closed per interval
    /// once holding is over, in (0, 1]. Default 0.25.
    #[serde(default = "default_regrow_fraction")]
    pub regrow_fraction: f64,
    /// A remaining gap smaller than this share of the request is closed at
    /// once, in [0, 1). Default 0.02.
    #[serde(default = "default_snap_fraction")]
    pub snap_fraction: f64,
}

impl Default for FailSafeConfig {
    fn default() -> Self {
        Self {
            hold_s: default_hold_s(),
            regrow_fraction: default_regrow_fraction(),
            snap_fraction: default_snap_fraction(),
        }
    }
}

/// Longest `hold_s`: 30 days.
pub const MAX_HOLD_S: f64 = 30.0 * 86_400.0;

impl FailSafeConfig {
    /// Every invalid setting at once: `hold_s` in [0, 2592000] (30 days),
    /// `regrow_fraction` in (0, 1], `snap_fraction` in [0, 1).
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        e.range("hold_s", self.hold_s, 0.0, MAX_HOLD_S);
        e.check(
            "regrow_fraction",
            self.regrow_fraction > 0.0 && self.regrow_fraction <= 1.0,
            || format!("must be in (0, 1] (got {})", self.regrow_fraction),
        );
        e.check(
            "snap_fraction",
            self.snap_fraction >= 0.0 && self.snap_fraction < 1.0,
            || format!("must be in [0, 1) (got {})", self.snap_fraction),
        );
        e.into_result()
    }
}

/// The agent's view of its link to the shaper.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LinkState {
    Connected,
    /// Unreachable since `since_s`; allocations are held.
    Holding {
        since_s: f64,
    },
    /// Unreachable since `since_s`; allocations grow back towards requests.
    Regrowing {
        since_s: f64,
    },
}

impl LinkState {
    pub fn as_str(&self) -> &'static str {
        match self {
            LinkState::Connected => "connected",
            LinkState::Holding { .. } => "holding",
            LinkState::Regrowing { .. } => "regrowing",
        }
    }
}

/// Fail-safe state machine; time is passed in (no clock reads).
#[derive(Clone, Debug)]
pub struct FailSafe {
    cfg: FailSafeConfig,
    /// Last successful exchange (or creation time).
    last_ok_s: f64,
    /// First failure of the current outage.
    failing_since_s: Option<f64>,
}

impl FailSafe {
    /// Starts Connected as of `now_s` (an agent that never reaches the shaper
    /// holds for `hold_s` from its start, then regrows).
    pub fn new(cfg: FailSafeConfig, now_s: f64) -> Self {
        Self {
            cfg,
            last_ok_s: now_s,
            failing_since_s: None,
        }
    }

    pub fn config(&self) -> &FailSafeConfig {
        &self.cfg
    }

    /// A report reached the shaper and was answered.
    pub fn on_success(&mut self, now_s: f64) {
        self.last_ok_s = now_s;
        self.failing_since_s = None;
    }

    /// A report failed (unreachable, timeout, server error).
    pub fn on_failure(&mut self, now_s: f64) {
        if self.failing_since_s.is_none() {
            self.failing_since_s = Some(now_s);
        }
    }

    pub fn state(&self, now_s: f64) -> LinkState {
        match self.failing_since_s {
            None => LinkState::Connected,
            Some(since_s) if now_s - self.last_ok_s < self.cfg.hold_s => {
                LinkState::Holding { since_s }
            }
            Some(since_s) => LinkState::Regrowing { since_s },
        }
    }

    /// True when an allocation change from `from` to `to` may be applied
    /// now: anything while connected; never a shrink (in any resource)
    /// otherwise.
    pub fn permits_resize(&self, now_s: f64, from: &Resources, to: &Resources) -> bool {
        match self.state(now_s) {
            LinkState::Connected => true,
            _ => to.cpu_cores >= from.cpu_cores && to.mem_bytes >= from.mem_bytes,
        }
    }

    /// True when an eviction may be applied now (only while connected).
    pub fn permits_eviction(&self, now_s: f64) -> bool {
        matches!(self.state(now_s), LinkState::Connected)
    }

    /// While regrowing: the next allocation of a container currently at
    /// `current` whose request is `request`, or `None` when it needs no
    /// change (at or above its request in both resources, or not regrowing).
    /// Each resource is whole MiB / millicores, or the request (QA C9).
    pub fn regrow(
        &self,
        now_s: f64,
        current: &Resources,
        request: &Resources,
    ) -> Option<Resources> {
        if !matches!(self.state(now_s), LinkState::Regrowing { .. }) {
            return None;
        }
        let step = |r: Resource, cur: f64, req: f64| -> f64 {
            if !(cur.is_finite() && req.is_finite()) || cur >= req {
                return cur;
            }
            let next = cur + self.cfg.regrow_fraction * (req - cur);
            if req - next <= self.cfg.snap_fraction * req {
                req
            } else {
                // the kernel's rounding of a plan's target, the request
                // as its ceiling (no floor, no usage: it only grows)
                shaper::limits::bound_target(r, next, 0.0, req, 0.0).0
            }
        };
        let next = Resources::new(
            step(Resource::Cpu, current.cpu_cores, request.cpu_cores),
            step(Resource::Mem, current.mem_bytes, request.mem_bytes),
        );
        if next == *current {
            None
        } else {
            Some(next)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg() -> FailSafeConfig {
        FailSafeConfig {
            hold_s: 30.0,
            regrow_fraction: 0.5,
            snap_fraction: 0.02,
        }
    }

    #[test]
    fn holds_then_regrows_then_recovers() {
        let mut fs = FailSafe::new(cfg(), 0.0);
        fs.on_success(100.0);
        assert_eq!(fs.state(105.0), LinkState::Connected);
        fs.on_failure(110.0);
        assert_eq!(fs.state(110.0), LinkState::Holding { since_s: 110.0 });
        fs.on_failure(120.0);
        assert_eq!(fs.state(129.9), LinkState::Holding { since_s: 110.0 });
        assert_eq!(fs.state(130.0), LinkState::Regrowing { since_s: 110.0 });
        fs.on_success(140.0);
        assert_eq!(fs.state(140.0), LinkState::Connected);
    }

    #[test]
    fn stops_shrinking_at_once() {
        let mut fs = FailSafe::new(cfg(), 0.0);
        let big = Resources::new(2.0, 2e9);
        let small = Resources::new(1.0, 1e9);
        assert!(fs.permits_resize(1.0, &big, &small));
        assert!(fs.permits_eviction(1.0));
        fs.on_failure(2.0);
        assert!(!fs.permits_resize(2.0, &big, &small));
        assert!(
            !fs.permits_resize(2.0, &big, &Resources::new(3.0, 1e9)),
            "a shrink in one resource is a shrink"
        );
        assert!(fs.permits_resize(2.0, &small, &big));
        assert!(!fs.permits_eviction(2.0));
        assert_eq!(
            fs.regrow(2.0, &small, &big),
            None,
            "holding: no regrowth yet"
        );
    }

    #[test]
    fn regrows_gradually_to_the_request() {
        let mut fs = FailSafe::new(cfg(), 0.0);
        fs.on_failure(1.0);
        let request = Resources::new(4.0, 4e9);
        let mut cur = Resources::new(0.0, 0.0);
        let mut steps = 0;
        while let Some(next) = fs.regrow(100.0, &cur, &request) {
            assert!(next.cpu_cores >= cur.cpu_cores && next.mem_bytes >= cur.mem_bytes);
            assert!(next.fits_in(&request));
            cur = next;
            steps += 1;
            assert!(steps < 100);
        }
        assert_eq!(cur, request);
        // Halving the gap with a 2% snap: 0 -> 2 -> 3 -> 3.5 -> 3.75 -> 3.875 -> 4
        // (3.9375 would leave a gap below 2% of the request: snapped).
        assert_eq!(steps, 6);
        // Above the request: left alone (never shrunk).
        assert_eq!(fs.regrow(100.0, &Resources::new(5.0, 5e9), &request), None);
    }

    /// QA C9: regrowth wrote 228658624 bytes (not whole pages; the cgroup
    /// held 228655104) and 0.311421875 cores. Each step is whole steps
    /// of the kernel (MiB) and millicores now, up to the request itself.
    #[test]
    fn regrowth_is_whole_steps_and_millicores() {
        let mut fs = FailSafe::new(
            FailSafeConfig {
                hold_s: 0.0,
                regrow_fraction: 0.25,
                snap_fraction: 0.02,
            },
            0.0,
        );
        fs.on_failure(0.0);
        let mib = 1048576.0;
        // qa-cl-b-steady: 166.1 MiB / 0.053 cores cut, 256 MiB / 0.5 requested
        let request = Resources::new(0.5, 256.0 * mib);
        let mut cur = Resources::new(0.053, 174_149_632.0);
        let mut steps = 0;
        while let Some(next) = fs.regrow(1.0, &cur, &request) {
            // whole steps: what the kernel's rounding leaves as it is
            // (0.237 cores is the f64 nearest 237 millicores)
            for (r, got, req) in [
                (Resource::Mem, next.mem_bytes, request.mem_bytes),
                (Resource::Cpu, next.cpu_cores, request.cpu_cores),
            ] {
                assert!(
                    got == req || shaper::limits::align_up(r, got) == got,
                    "step {steps}: {r} {got} is not whole steps"
                );
            }
            if next.mem_bytes != request.mem_bytes {
                let step = shaper::limits::MEM_STEP_BYTES;
                assert_eq!(next.mem_bytes % step, 0.0, "step {steps}");
            }
            assert!(next.cpu_cores >= cur.cpu_cores && next.mem_bytes >= cur.mem_bytes);
            cur = next;
            steps += 1;
            assert!(steps < 100);
        }
        assert_eq!(cur, request);
        // A request that is not whole steps is reached as it is.
        let odd = Resources::new(0.3333, 100_000_001.0);
        let mut cur = Resources::new(0.1, 50_000_000.0);
        while let Some(next) = fs.regrow(1.0, &cur, &odd) {
            assert!(next.fits_in(&odd), "{next:?}");
            cur = next;
        }
        assert_eq!(cur, odd);
    }

    proptest! {
        #[test]
        fn regrow_never_shrinks_nor_overshoots(
            cur_cpu in 0.0f64..10.0, cur_mem in 0.0f64..1e10,
            req_cpu in 0.0f64..10.0, req_mem in 0.0f64..1e10,
            frac in 0.01f64..1.0,
        ) {
            let mut fs = FailSafe::new(FailSafeConfig { hold_s: 0.0, regrow_fraction: frac, snap_fraction: 0.02 }, 0.0);
            fs.on_failure(0.0);
            let cur = Resources::new(cur_cpu, cur_mem);
            let req = Resources::new(req_cpu, req_mem);
            if let Some(next) = fs.regrow(1.0, &cur, &req) {
                prop_assert!(next.cpu_cores >= cur.cpu_cores && next.mem_bytes >= cur.mem_bytes);
                prop_assert!(next.cpu_cores <= cur.cpu_cores.max(req.cpu_cores));
                prop_assert!(next.mem_bytes <= cur.mem_bytes.max(req.mem_bytes));
                // grown: whole steps, or the request itself
                for (r, n, c, q) in [
                    (Resource::Cpu, next.cpu_cores, cur.cpu_cores, req.cpu_cores),
                    (Resource::Mem, next.mem_bytes, cur.mem_bytes, req.mem_bytes),
                ] {
                    if n > c && n != q {
                        prop_assert_eq!(shaper::limits::align_up(r, n), n, "{} {}", r, n);
                    }
                }
            }
        }
    }
}

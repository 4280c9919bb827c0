//! The memory watch between rounds (`mem_watch_s`).
//!
//! A round sizes a container's memory limit a buffer above its forecast,
//! for the next `interval_s`. Memory that grows faster than the buffer per
//! interval reaches the limit before the next round can raise it: at the
//! default 10 s, a container of 256 MiB cut from a flat start was killed by
//! a ramp of +2 MiB/s. So between rounds the agent reads each shaped
//! container's working set and limit from its cgroup (files, no daemon
//! call) every `mem_watch_s`, and runs the next round at once when one of
//! them has used more than half the headroom it had at the last round:
//!
//! `working set now - at the round > max((limit now - at the round) / 2, 1 MiB)`
//!
//! The early round is an ordinary round (the kernel sees the new sample and
//! sizes from it; nothing is decided here; a recording marks it) between
//! two rounds of the schedule, which keeps its time: the next scheduled
//! round comes when it was due, so a recording's scheduled rounds stay
//! `interval_s` apart and its replay keeps the node's time. A container whose limit is at its ceiling
//! (request x `max_growth`) is not watched: a round could not raise it.
//! Where a round does not raise a limit (a crowded host), the rise that
//! triggers the next early round is half of what headroom is left, and at
//! least 1 MiB, so a container that keeps growing towards that limit
//! triggers a few of them, not one per watch period.

use super::{Agent, Shared};
use crate::cgroup::{MemNow, MemUsage};
use crate::config::Actuation;
use crate::runtime::ContainerRuntime;
use crate::view::NodeView;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A rise smaller than this never triggers an early round (noise on a
/// container whose headroom is already tiny).
const MIN_RISE_BYTES: u64 = 1 << 20;

/// Why a round ran early: the container, and its memory then and at the
/// round before.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EarlyRound {
    pub container: String,
    pub working_set_bytes: u64,
    pub limit_bytes: u64,
    /// Its working set at the round before.
    pub at_round_bytes: u64,
}

#[derive(Clone, Debug)]
struct Watched {
    id: String,
    name: String,
    at_round_bytes: u64,
    ceiling_bytes: f64,
}

/// The containers watched until the next round.
#[derive(Clone, Debug, Default)]
pub(crate) struct MemWatch {
    watched: Vec<Watched>,
}

impl MemWatch {
    /// Watches the containers of `view` (the last round's samples) until the
    /// next round; `max_growth` is the kernel's ceiling factor.
    pub(crate) fn arm(&mut self, view: &NodeView, max_growth: f64) {
        self.watched = view
            .containers
            .iter()
            .filter(|c| c.usage.mem_bytes.is_finite() && c.usage.mem_bytes >= 0.0)
            .map(|c| Watched {
                id: c.meta.id.clone(),
                name: c.meta.name.clone(),
                at_round_bytes: c.usage.mem_bytes as u64,
                ceiling_bytes: c.request.mem_bytes * max_growth,
            })
            .collect();
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.watched.is_empty()
    }

    /// The first watched container (in view order) whose memory now calls
    /// for the next round at once. `usage` reads a container's usage with
    /// its page cache (never below its working set: a container whose
    /// usage has not risen enough is ruled out by that read alone), `now`
    /// its working set, read only for a container that `usage` did not
    /// rule out.
    pub(crate) fn pressed(
        &self,
        mut usage: impl FnMut(&str) -> Option<MemUsage>,
        mut now: impl FnMut(&str) -> Option<MemNow>,
    ) -> Option<EarlyRound> {
        self.watched.iter().find_map(|w| {
            let u = usage(&w.id)?;
            if !w.rise_calls_round(u.usage_bytes, u.limit_bytes?) {
                return None;
            }
            let now = now(&w.id)?;
            let limit = now.limit_bytes?;
            w.rise_calls_round(now.working_set_bytes, limit)
                .then(|| EarlyRound {
                    container: w.name.clone(),
                    working_set_bytes: now.working_set_bytes,
                    limit_bytes: limit,
                    at_round_bytes: w.at_round_bytes,
                })
        })
    }
}

impl Watched {
    /// Whether memory at `bytes` under `limit` has used more than half the
    /// headroom the container had at the round (and at least
    /// [`MIN_RISE_BYTES`]), where a round could raise that limit.
    fn rise_calls_round(&self, bytes: u64, limit: u64) -> bool {
        (limit as f64) < self.ceiling_bytes
            && self.at_round_bytes < limit
            && bytes.saturating_sub(self.at_round_bytes)
                > ((limit - self.at_round_bytes) / 2).max(MIN_RISE_BYTES)
    }
}

/// Warns when the first watched container's memory cannot be read (an
/// agent without the host's `/sys/fs/cgroup`): the watch would never
/// fire. False when nothing is watched yet (nothing checked).
pub(super) async fn check_readable<R: ContainerRuntime + ?Sized>(
    watch: &MemWatch,
    runtime: &Arc<R>,
) -> bool {
    let Some(w) = watch.watched.first() else {
        return false;
    };
    let (id, runtime) = (w.id.clone(), runtime.clone());
    let readable = tokio::task::spawn_blocking(move || runtime.mem_now(&id).is_some())
        .await
        .unwrap_or(false);
    if !readable {
        tracing::warn!(
            container = %w.name,
            "memory watch: cannot read the container's memory cgroup (is the host's /sys/fs/cgroup there?); rounds run only every interval_s"
        );
    }
    true
}

/// What ended the wait between two rounds.
pub(super) enum Wake {
    /// The round's time came.
    Due,
    /// A watched container's memory calls for the round now.
    Early(EarlyRound),
    Shutdown,
}

impl<R: ContainerRuntime + ?Sized> Agent<R> {
    /// The watch runs in shape mode, with `mem_watch_s` > 0. In cluster
    /// mode the early round's report asks the shaper for a round at once.
    pub(super) fn watches_memory(&self) -> bool {
        self.cfg.actuation == Actuation::Shape && self.cfg.mem_watch_s > 0.0
    }
}

/// Waits until `next`, or until `shutdown`; meanwhile, given a `watch`
/// and its period, reads the watched containers' memory every period (off
/// the async runtime: file reads) and counts an early round in `shared`'s
/// metrics.
pub(super) async fn wait_for_round<R: ContainerRuntime + ?Sized>(
    watch: Option<(&MemWatch, Duration)>,
    runtime: &Arc<R>,
    shared: &Shared,
    next: Instant,
    shutdown: &mut Pin<&mut impl Future<Output = ()>>,
) -> Wake {
    let watch = watch.filter(|(w, _)| !w.is_empty());
    loop {
        let wake = match watch {
            Some((_, period)) => next.min(Instant::now() + period),
            None => next,
        };
        tokio::select! {
            _ = shutdown.as_mut() => return Wake::Shutdown,
            _ = tokio::time::sleep_until(wake) => {}
        }
        let Some((w, _)) = watch.filter(|_| Instant::now() < next) else {
            return Wake::Due;
        };
        let (w, runtime) = (w.clone(), runtime.clone());
        let pressed = tokio::task::spawn_blocking(move || {
            w.pressed(|id| runtime.mem_usage(id), |id| runtime.mem_now(id))
        })
        .await
        .ok()
        .flatten();
        if let Some(early) = pressed {
            tracing::info!(
                container = %early.container,
                working_set_mib = early.working_set_bytes as f64 / MIB,
                limit_mib = early.limit_bytes as f64 / MIB,
                at_round_mib = early.at_round_bytes as f64 / MIB,
                "memory watch: half the headroom used; round now"
            );
            shared.metrics.early_round();
            return Wake::Early(early);
        }
    }
}

const MIB: f64 = 1024.0 * 1024.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{ContainerMeta, ContainerReport};
    use shaper::Resources;

    const MIB: u64 = 1 << 20;

    fn view(usage_mib: &[(&str, f64, f64)]) -> NodeView {
        NodeView {
            containers: usage_mib
                .iter()
                .map(|&(id, usage, request)| ContainerReport {
                    meta: ContainerMeta::core(id, id, "app", 0.0),
                    request: Resources::new(1.0, request * MIB as f64),
                    allocation: Resources::new(1.0, request * MIB as f64),
                    usage: Resources::new(0.1, usage * MIB as f64),
                    oom_floor_bytes: 0.0,
                    forecast: None,
                    forecast_source: None,
                    samples: 0,
                    oom_kills: 0,
                    app_failures: 0,
                })
                .collect(),
            ..NodeView::default()
        }
    }

    fn now(ws_mib: u64, limit_mib: Option<u64>) -> Option<MemNow> {
        Some(MemNow {
            working_set_bytes: ws_mib * MIB,
            limit_bytes: limit_mib.map(|l| l * MIB),
        })
    }

    /// `w.pressed` where usage is the working set (no page cache).
    fn pressed(w: &MemWatch, read: impl Fn(&str) -> Option<MemNow>) -> Option<EarlyRound> {
        let usage = |id: &str| {
            read(id).map(|m| MemUsage {
                usage_bytes: m.working_set_bytes,
                limit_bytes: m.limit_bytes,
            })
        };
        w.pressed(usage, &read)
    }

    #[test]
    fn the_working_set_is_read_only_where_usage_rose_enough() {
        let mut w = MemWatch::default();
        w.arm(&view(&[("a", 20.0, 256.0), ("b", 20.0, 256.0)]), 1.0);
        // limit 40 MiB: 30 MiB is the line. a's usage is under it; b's is
        // over it, all of it page cache
        let usage = |id: &str| {
            Some(MemUsage {
                usage_bytes: if id == "a" { 29 } else { 35 } * MIB,
                limit_bytes: Some(40 * MIB),
            })
        };
        let mut read = Vec::new();
        let mut ws = |id: &str| {
            read.push(id.to_string());
            now(21, Some(40))
        };
        assert_eq!(w.pressed(usage, &mut ws), None);
        assert_eq!(read, ["b"], "a was ruled out by its usage");
        // b's working set did rise: the round is called, with it
        let e = w.pressed(usage, |_| now(32, Some(40))).expect("early");
        assert_eq!((e.container.as_str(), e.working_set_bytes), ("b", 32 * MIB));
        // a limit raised by hand between the two reads: judged on the second
        assert_eq!(w.pressed(usage, |_| now(32, Some(80))), None);
    }

    #[test]
    fn a_rise_past_half_the_headroom_calls_the_round() {
        let mut w = MemWatch::default();
        w.arm(&view(&[("a", 20.0, 256.0)]), 1.0);
        // limit 40 MiB: headroom 20 MiB at the round, so 30 MiB is the line
        assert_eq!(pressed(&w, |_| now(30, Some(40))), None);
        let e = pressed(&w, |_| now(31, Some(40))).expect("early");
        assert_eq!(
            (e.container.as_str(), e.working_set_bytes, e.limit_bytes),
            ("a", 31 * MIB, 40 * MIB)
        );
        assert_eq!(e.at_round_bytes, 20 * MIB);
    }

    #[test]
    fn what_a_round_cannot_raise_or_read_is_not_watched() {
        let mut w = MemWatch::default();
        w.arm(&view(&[("a", 20.0, 40.0)]), 1.0);
        // at its ceiling (request x max_growth)
        assert_eq!(pressed(&w, |_| now(39, Some(40))), None);
        w.arm(&view(&[("a", 20.0, 40.0)]), 1.5);
        assert!(pressed(&w, |_| now(39, Some(40))).is_some());
        // no limit, unreadable, or already above its limit at the round
        assert_eq!(pressed(&w, |_| now(39, None)), None);
        assert_eq!(pressed(&w, |_| None), None);
        w.arm(&view(&[("a", 50.0, 256.0)]), 1.0);
        assert_eq!(pressed(&w, |_| now(60, Some(40))), None);
    }

    #[test]
    fn noise_within_a_tiny_headroom_waits_for_the_round() {
        let mut w = MemWatch::default();
        // headroom 1 MiB: half of it is under the 1 MiB floor
        w.arm(&view(&[("a", 39.0, 256.0)]), 1.0);
        assert_eq!(
            pressed(&w, |_| Some(MemNow {
                working_set_bytes: 39 * MIB + MIB / 2 + 1,
                limit_bytes: Some(40 * MIB),
            })),
            None
        );
        assert!(pressed(&w, |_| Some(MemNow {
            working_set_bytes: 40 * MIB + 1,
            limit_bytes: Some(40 * MIB),
        }))
        .is_some());
    }

    #[test]
    fn the_first_pressed_container_in_view_order_is_named() {
        let mut w = MemWatch::default();
        w.arm(&view(&[("a", 10.0, 256.0), ("b", 10.0, 256.0)]), 1.0);
        let e = pressed(&w, |id| {
            if id == "b" {
                now(30, Some(40))
            } else {
                now(11, Some(40))
            }
        })
        .expect("b");
        assert_eq!(e.container, "b");
        assert!(!w.is_empty());
    }
}

//! Stopped containers: one OOM-killed at a limit the agent had cut below
//! its request, which no restart policy starts again, gets its original
//! limits back at once and waits for room as an evicted one does; every
//! managed container that is not running is listed in the view, with why.
//!
//! The agent caused that death (QA D10: a container killed at its 51 MiB
//! cut stayed dead at 51 MiB, and left the recommendations). Restoring
//! the limits is the rule shutdown applies ([`Agent::restore_original`]):
//! a `docker start` then runs it at its request. With `restart_evicted` it
//! is started again when its request fits, through the evictions' queue
//! and path ([`Agent::restart_evicted`]), at its request: the OOM floor of
//! a kill below the request holds its memory there ([`shaper::OomFloor`]).
//! A kill at or above its request is not the agent's doing and is left as
//! the container's restart policy (none) leaves it: listed, not started, so
//! a container that does not fit its own request is not started in a loop.

use super::*;
use crate::journal::JournalRestore;

/// True when a stopped, OOM-killed container was killed by the agent's
/// cut: no restart policy starts it again (`restarts_alone`), and the
/// memory limit it was killed at was below the one it was started with
/// (none: no limit, never below).
pub(super) fn killed_below_original(
    restarts_alone: bool,
    killed_at_mem_bytes: Option<u64>,
    original_mem_bytes: Option<u64>,
) -> bool {
    if restarts_alone {
        return false;
    }
    match (killed_at_mem_bytes, original_mem_bytes) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(killed), Some(original)) => killed < original,
    }
}

/// How a managed container that is not running is listed; `None` while it
/// runs or is being removed. `waiting`: its place in the queue for room
/// (why it waits, and whether it will be started: `restart_evicted` in
/// shape mode).
pub(super) fn stopped_state(
    info: &ContainerInfo,
    waiting: Option<(WaitCause, bool)>,
) -> Option<StoppedState> {
    match (info.state, waiting) {
        (ContainerState::Running | ContainerState::Removing | ContainerState::Unknown, _) => None,
        (_, Some((WaitCause::Evicted, restarts))) => Some(StoppedState::Evicted {
            waiting_for_room: restarts,
        }),
        (_, Some((WaitCause::OomKilled, restarts))) => Some(StoppedState::OomKilled {
            waiting_for_room: restarts,
        }),
        (ContainerState::Exited, None) if info.oom_killed => Some(StoppedState::OomKilled {
            waiting_for_room: false,
        }),
        (ContainerState::Exited, None) => Some(StoppedState::Exited {
            exit_code: info.exit_code,
        }),
        (ContainerState::Created, None) => Some(StoppedState::Created),
        (ContainerState::Paused, None) => Some(StoppedState::Paused),
        (ContainerState::Restarting, None) => Some(StoppedState::Restarting),
        (ContainerState::Dead, None) => Some(StoppedState::Dead),
    }
}

impl<R: ContainerRuntime + ?Sized> Agent<R> {
    /// Shape mode: every container OOM-killed at a limit the agent had cut
    /// below its request, stopped and without a restart policy
    /// ([`killed_below_original`]), gets its original limits back and
    /// joins the queue for room (once per stop: it leaves the queue when it
    /// runs again). A restore that fails is tried again next round, and
    /// before its restart.
    pub(super) async fn reconcile_oom_killed(&mut self, now_s: f64) {
        if self.cfg.actuation != Actuation::Shape {
            return;
        }
        let killed: Vec<(Tracked, Option<u64>)> = self
            .tracked
            .values()
            .filter(|t| t.info.state == ContainerState::Exited && t.info.oom_killed)
            .filter_map(|t| {
                let at = t.limits_at(t.info.finished_s).mem_bytes;
                killed_below_original(t.info.restarts_alone, at, self.original_limits(t).mem_bytes)
                    .then(|| (t.clone(), at))
            })
            .collect();
        if killed.is_empty() {
            return;
        }
        let cap = self.capacity();
        let mut dirty = false;
        for (t, killed_at) in killed {
            let killed_at_mib = killed_at.map(|m| m as f64 / MIB);
            match self.restore_original(&t).await {
                Ok(None) => {}
                Ok(Some(after)) => {
                    dirty = true;
                    self.shared
                        .metrics
                        .action("restore", Outcome::Applied.as_str());
                    let to_mem_mib = after.mem_bytes.map(|m| m as f64 / MIB);
                    tracing::info!(
                        container = %t.info.name,
                        killed_at_mib,
                        to_mem_mib,
                        to_cpu_cores = after.cpu.cores(),
                        "OOM-killed at a limit cut below its request, no restart policy: original limits restored"
                    );
                    self.round_restores.push(JournalRestore {
                        container: t.info.name.clone(),
                        killed_at_mib,
                        to_cpu_cores: after.cpu.cores(),
                        to_mem_mib,
                    });
                }
                Err(e) => {
                    self.shared
                        .metrics
                        .action("restore", Outcome::Failed.as_str());
                    tracing::warn!(container = %t.info.name, killed_at_mib, error = %e, "cannot restore the original limits of a container OOM-killed at a cut; trying again next round");
                }
            }
            if self.state.evicted.iter().any(|e| e.id == t.info.id) {
                continue;
            }
            let at_s = t
                .info
                .finished_s
                .filter(|f| f.is_finite())
                .map_or(now_s, |f| f.min(now_s));
            let request = self.request_of(&t, cap);
            self.state.evicted.push(Eviction {
                id: t.info.id.clone(),
                name: t.info.name.clone(),
                app: t.labels.app.clone(),
                at_s,
                reason: match killed_at_mib {
                    Some(m) => format!("OOM-killed at a {m:.1} MiB limit, below its request"),
                    None => "OOM-killed below its request".to_string(),
                },
                request,
                cause: WaitCause::OomKilled,
            });
            dirty = true;
            let restarts = self.cfg.restart_evicted;
            tracing::info!(
                container = %t.info.name,
                request_mib = request.mem_bytes / MIB,
                request_cpu_cores = request.cpu_cores,
                restart_evicted = restarts,
                "{}",
                if restarts {
                    "OOM-killed at the agent's cut: started again when its request fits"
                } else {
                    "OOM-killed at the agent's cut: left stopped (restart_evicted = false)"
                }
            );
        }
        if dirty {
            self.save_state();
        }
    }

    /// The managed containers that are not running, with why
    /// ([`NodeView::stopped`]).
    pub(super) fn stopped_containers(&self) -> Vec<StoppedContainer> {
        let cap = self.capacity();
        let restarts = self.cfg.actuation == Actuation::Shape && self.cfg.restart_evicted;
        self.tracked
            .values()
            .filter_map(|t| {
                let waiting = self
                    .state
                    .evicted
                    .iter()
                    .find(|e| e.id == t.info.id)
                    .map(|e| (e.cause, restarts));
                Some(StoppedContainer {
                    id: t.info.id.clone(),
                    name: t.info.name.clone(),
                    app: t.labels.app.clone(),
                    state: stopped_state(&t.info, waiting)?,
                    request: self.request_of(t, cap),
                    allocation: self.allocation_of(t, cap),
                })
            })
            .collect()
    }

    /// (evicted, OOM-killed) managed containers not running, for the
    /// gauges.
    pub(super) fn stopped_counts(&self) -> (u64, u64) {
        let evicted = self
            .state
            .evicted
            .iter()
            .filter(|e| e.cause == WaitCause::Evicted)
            .count();
        let oom_killed = self
            .tracked
            .values()
            .filter(|t| t.info.state == ContainerState::Exited && t.info.oom_killed)
            .count();
        (evicted as u64, oom_killed as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn only_a_kill_below_the_original_limit_without_a_restart_policy_counts() {
        // cut to 51 MiB from 256 MiB, no restart policy: the agent's doing
        assert!(killed_below_original(
            false,
            Some(51 * MIB),
            Some(256 * MIB)
        ));
        // a restart policy starts it again by itself
        assert!(!killed_below_original(
            true,
            Some(51 * MIB),
            Some(256 * MIB)
        ));
        // killed at (or above, grown past) the limit it was started with
        assert!(!killed_below_original(
            false,
            Some(256 * MIB),
            Some(256 * MIB)
        ));
        assert!(!killed_below_original(
            false,
            Some(300 * MIB),
            Some(256 * MIB)
        ));
        // started without a limit (manage_unlimited): any limit is a cut
        assert!(killed_below_original(false, Some(51 * MIB), None));
        // no limit when killed: not the agent's cut
        assert!(!killed_below_original(false, None, None));
        assert!(!killed_below_original(false, None, Some(256 * MIB)));
    }

    fn info(state: ContainerState, oom_killed: bool, exit_code: Option<i64>) -> ContainerInfo {
        ContainerInfo {
            id: "c".into(),
            name: "c".into(),
            labels: BTreeMap::new(),
            state,
            started_s: Some(1.0),
            limits: Limits {
                mem_bytes: Some(256 * MIB),
                cpu: CpuLimit::Unlimited,
                mem_swap_bytes: None,
                mem_reservation_bytes: None,
            },
            oom_killed,
            finished_s: Some(2.0),
            exit_code,
            restarts_alone: false,
        }
    }

    #[test]
    fn stopped_states_say_why_and_whether_it_waits() {
        use ContainerState as S;
        let state = |s, oom, code, waiting| stopped_state(&info(s, oom, code), waiting);
        // running (Docker keeps OOMKilled set while it runs again), going away
        assert_eq!(state(S::Running, true, Some(0), None), None);
        assert_eq!(state(S::Removing, false, None, None), None);
        let oom = |waiting_for_room| Some(StoppedState::OomKilled { waiting_for_room });
        assert_eq!(
            state(
                S::Exited,
                true,
                Some(137),
                Some((WaitCause::OomKilled, true))
            ),
            oom(true)
        );
        assert_eq!(
            state(
                S::Exited,
                true,
                Some(137),
                Some((WaitCause::OomKilled, false))
            ),
            oom(false)
        );
        // killed at its own limit: not queued
        assert_eq!(state(S::Exited, true, Some(137), None), oom(false));
        assert_eq!(
            state(
                S::Exited,
                false,
                Some(143),
                Some((WaitCause::Evicted, true))
            ),
            Some(StoppedState::Evicted {
                waiting_for_room: true
            })
        );
        assert_eq!(
            state(S::Exited, false, Some(0), None),
            Some(StoppedState::Exited { exit_code: Some(0) })
        );
        assert_eq!(
            state(S::Created, false, None, None),
            Some(StoppedState::Created)
        );
        assert_eq!(
            state(S::Paused, false, None, None),
            Some(StoppedState::Paused)
        );
        let shown: Vec<String> = [
            oom(true),
            oom(false),
            Some(StoppedState::Evicted {
                waiting_for_room: false,
            }),
            Some(StoppedState::Exited {
                exit_code: Some(137),
            }),
        ]
        .into_iter()
        .flatten()
        .map(|s| s.to_string())
        .collect();
        // in the view's JSON (`/v1/decisions`): the state beside the name
        let c = StoppedContainer {
            id: "c".into(),
            name: "step".into(),
            app: "step".into(),
            state: StoppedState::OomKilled {
                waiting_for_room: true,
            },
            request: Resources::new(0.5, 256.0 * MIB as f64),
            allocation: Resources::new(0.5, 256.0 * MIB as f64),
        };
        let json = serde_json::to_value(&c).expect("json");
        assert_eq!(json["state"], "oom_killed");
        assert_eq!(json["waiting_for_room"], true);
        let back: StoppedContainer = serde_json::from_value(json).expect("parse");
        assert_eq!(back, c);
        assert_eq!(
            shown,
            [
                "oom-killed, waiting for room",
                "oom-killed, stopped",
                "evicted, stopped",
                "exited (137)"
            ]
        );
    }
}

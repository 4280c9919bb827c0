//! What of the state is durable (see [`crate::store`]): a round's actions
//! as stored, the ack results to persist, and restoring a leader's state
//! from the store. Still pure: the server does the I/O.

use super::{ActionRecord, ActionStatus, EvictedApp, PreparedRound, ShaperState, RETAIN_ROUNDS};
use crate::limits::{ReplayGuard, Usage};
use crate::store::{Durable, DurableAction, PendingWrites};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

impl PreparedRound {
    /// The round's number.
    pub fn round(&self) -> u64 {
        self.round
    }

    /// Rounds before this one are forgotten once it is installed.
    pub fn keep_from(&self) -> u64 {
        self.round.saturating_sub(RETAIN_ROUNDS)
    }

    /// The round's actions as stored (before they are handed out).
    pub fn durable_actions(&self) -> Vec<DurableAction> {
        self.records
            .iter()
            .map(|r| DurableAction {
                agent: r.agent.to_string(),
                evicted_app: r.evicted_app.clone(),
                status: r.status.clone(),
            })
            .collect()
    }
}

impl ShaperState {
    /// Ack results since the last call, to persist before answering.
    pub fn take_writes(&mut self) -> PendingWrites {
        std::mem::take(&mut self.writes)
    }

    /// Whole-application evictions acknowledged in the retained rounds,
    /// oldest first.
    pub fn evicted_apps(&self) -> Vec<EvictedApp> {
        let mut v: Vec<EvictedApp> = self
            .counted_app_evictions
            .iter()
            .map(|(round, app)| EvictedApp {
                round: *round,
                app: app.clone(),
            })
            .collect();
        v.sort_by(|a, b| (a.round, &a.app).cmp(&(b.round, &b.app)));
        v
    }

    /// The failure count of an application (`<tenant>/<label>`).
    pub fn app_failures(&self, app: &str) -> u32 {
        self.app_failures.get(app).copied().unwrap_or(0)
    }

    /// Becomes the state of a (new) leader: the cluster's epoch, its last
    /// round, the retained rounds' actions, failure counts and evicted
    /// applications, and the agents' last accepted report sequences from the
    /// store. Agents are forgotten (they re-report),
    /// and rounds wait `warmup_intervals` from `now_s` again. Counters of
    /// this process (acks, refusals) are kept.
    pub fn restore(&mut self, epoch: String, d: Durable, now_s: f64) {
        self.epoch = epoch;
        self.started_s = now_s;
        self.round = d
            .round
            .max(d.rounds.keys().next_back().copied().unwrap_or(0));
        self.agents.clear();
        self.owners.clear();
        self.usage = Usage::default();
        self.replay = ReplayGuard::from_snapshot(d.replay);
        self.writes = PendingWrites::default();
        let mut agents: BTreeMap<String, Arc<str>> = BTreeMap::new();
        let mut counted = HashSet::new();
        self.actions = d
            .rounds
            .into_iter()
            .map(|(round, recs)| {
                let recs = recs
                    .into_iter()
                    .map(|r| {
                        let agent = agents
                            .entry(r.agent.clone())
                            .or_insert_with(|| Arc::from(r.agent.as_str()))
                            .clone();
                        if r.status == ActionStatus::Applied {
                            if let Some(app) = &r.evicted_app {
                                counted.insert((round, app.clone()));
                            }
                        }
                        ActionRecord {
                            agent,
                            evicted_app: r.evicted_app,
                            status: r.status,
                        }
                    })
                    .collect();
                (round, recs)
            })
            .collect();
        self.counted_app_evictions = counted;
        self.app_failures = d.app_failures;
    }

    /// Forgets everything but the counters (a replica that lost the lead).
    pub fn clear_for_follower(&mut self, now_s: f64) {
        let epoch = self.epoch.clone();
        self.restore(epoch, Durable::default(), now_s);
    }
}

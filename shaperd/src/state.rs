//! The central shaper's bookkeeping: who reported what, who is stale, the
//! shaping rounds and the fate of every action. Pure: time is passed in, no
//! I/O, so the stale-agent and round logic is unit-tested without HTTP.
//!
//! A round has three steps so that the (possibly long) `decide()` runs
//! without holding the server's lock: [`ShaperState::snapshot`] builds the
//! cluster view, [`shaper::decide`] plans, [`ShaperState::install`] turns the
//! plan into per-agent actions. [`ShaperState::plan_round`] does all three.
//!
//! Stale agents (silent for `stale_after_intervals`): their host and
//! components stay in the view at their last known allocations (the
//! component is presented with `request = allocation` and no forecast, so
//! `decide()` keeps it exactly where it was), and actions planned for them
//! are dropped: nobody would apply them. An application with components on
//! a stale host is still planned as a whole, so its core components there
//! still count in the all-or-nothing test.

use crate::config::ShaperServerConfig;
use crate::credentials::Identity;
use crate::limits::{report_mem_bytes, Cap, Footprint, Refusal, ReplayGuard, ServerLimits, Usage};
use crate::protocol::{
    self, Ack, AckOutcome, AckRequest, AckResponse, ActionId, ReportRequest, ReportResponse,
    WireAction, API_VERSION,
};
use serde::{Deserialize, Serialize};
use shaper::{AppId, ClusterView, Plan, Resources, ShaperConfig};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

mod acks;
mod app_failures;
mod durable;
mod owners;
mod report;
mod round;
use round::{
    emptied, parse_action_id, split_out_of_scope, split_over_capacity, LazyAction, Pending,
};
pub use round::{RoundMemory, Spares};

/// Rounds for which action records are kept (to match late acks).
pub const RETAIN_ROUNDS: u64 = 4;

/// Why a report or ack was refused (the server answers 400).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid request: {}", .0.join("; "))]
pub struct Invalid(pub Vec<String>);

/// Why no round was planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Too soon after start: agents are still re-reporting.
    Warmup,
    /// No agent has reported.
    NoAgents,
    /// The round's actions could not be stored (nothing handed out).
    Store,
    /// This replica is not the leader.
    NotLeader,
}

/// Fate of an action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ActionStatus {
    /// Issued, not acknowledged yet.
    Pending,
    Applied,
    Failed {
        error: String,
    },
    /// Replaced by a later round before it was acknowledged.
    Superseded,
}

/// One issued action (its round and number are its place in
/// [`ShaperState`]'s action table).
#[derive(Clone, Debug)]
struct ActionRecord {
    agent: Arc<str>,
    /// The application key of an action that is a failure of its
    /// application when applied (a whole-application eviction,
    /// [`shaper::Action::fails_application`]).
    evicted_app: Option<String>,
    status: ActionStatus,
}

#[derive(Clone, Debug)]
struct AgentRecord {
    tenant: Arc<str>,
    footprint: Footprint,
    report: Arc<ReportRequest>,
    first_seen_s: f64,
    last_seen_s: f64,
    reports: u64,
    /// Application ids of `report`'s components, hashed when the report
    /// arrived (off the round path).
    ids: Arc<[AppId]>,
    /// Components of `report` another agent reported first (frozen).
    taken: Arc<[owners::Taken]>,
    pending: Pending,
}

/// Where a component of the view came from: its agent's index in the
/// round's agent list and its index in that agent's report.
#[derive(Clone, Copy, Debug)]
struct Origin {
    agent: u32,
    comp: u32,
}

/// One agent in a round: its latest report, the ids hashed from it, and
/// whether it is stale.
#[derive(Clone, Debug)]
struct SnapAgent {
    name: Arc<str>,
    tenant: Arc<str>,
    report: Arc<ReportRequest>,
    ids: Arc<[AppId]>,
    taken: Arc<[owners::Taken]>,
    stale: bool,
}

/// A cluster view ready for `decide()`, plus what is needed to turn the plan
/// back into per-agent actions.
#[derive(Clone, Debug)]
pub struct RoundInput {
    pub round: u64,
    pub now_s: f64,
    pub view: ClusterView,
    /// Indexed by the view's component ids (dense: `ComponentId(i)` is
    /// the i-th component pushed).
    origins: Vec<Origin>,
    agents: Vec<SnapAgent>,
    live_agents: Vec<Arc<str>>,
    pub stale_agents: Vec<String>,
    /// The applications with recorded failures that are in the view.
    failed_apps_seen: Vec<String>,
    /// Components left out of the view because their application id
    /// collided with another application's (should never happen with
    /// 64-bit hashes; counted to be sure).
    pub collisions: u64,
    /// Containers reported by a second agent: kept in that agent's host
    /// frozen at their allocation (no forecast, never shrunk nor evicted),
    /// so that each host still counts them and no plan acts on them twice.
    pub duplicates: Vec<Duplicate>,
}

/// A container reported by two agents in one round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Duplicate {
    pub container_id: String,
    /// The agent it is planned for (the one that reported it first).
    pub first: Arc<str>,
    /// The agent whose copy is frozen.
    pub again: Arc<str>,
}

/// A round's inputs, taken under the lock (cheap: reference counts).
#[derive(Clone, Debug)]
pub struct RoundSnapshot {
    pub round: u64,
    pub now_s: f64,
    agents: Vec<SnapAgent>,
    app_failures: BTreeMap<String, u32>,
}

/// What a commit replaced, to be dropped outside the lock
/// ([`ShaperState::commit_deferring_drops`]).
#[derive(Debug, Default)]
pub struct Replaced {
    pending: Vec<Pending>,
    records: BTreeMap<u64, Vec<ActionRecord>>,
}

impl Replaced {
    /// Drops everything the commit replaced and returns the replaced
    /// round's plan when nothing else holds it any more (an agent that was
    /// not in the new round still does), so that its action vector can be
    /// reused by the next `decide()` ([`shaper::Decider::recycle`]).
    pub fn into_plan(self) -> Option<Plan> {
        self.into_spares().0
    }

    /// [`Replaced::into_plan`], also handing back the emptied per-agent
    /// action lists and the latest action-record list for the next round
    /// ([`RoundMemory::keep`]). The drops happen here: call it off any
    /// lock.
    pub fn into_spares(self) -> (Option<Plan>, Spares) {
        let Replaced { pending, records } = self;
        let plan = pending.iter().find_map(|p| p.plan.clone());
        let spares = Spares {
            lists: pending.into_iter().map(|p| emptied(p.actions)).collect(),
            records: records.into_values().next_back().map(emptied),
        };
        (plan.and_then(|p| Arc::try_unwrap(p).ok()), spares)
    }
}

/// A planned round turned into per-agent actions, ready to commit.
#[derive(Debug)]
pub struct PreparedRound {
    round: u64,
    now_s: f64,
    /// The applications with recorded failures that were in the view.
    failed_apps_seen: Vec<String>,
    plan: Arc<Plan>,
    per_agent: HashMap<Arc<str>, Vec<LazyAction>>,
    records: Vec<ActionRecord>,
    in_round: HashSet<Arc<str>>,
    outcome: RoundOutcome,
}

/// What a round did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundOutcome {
    pub round: u64,
    pub agents_live: u64,
    pub agents_stale: u64,
    pub components: u64,
    /// Actions handed to agents, by kind: resize, evict_component,
    /// evict_application (one per container).
    pub resize: u64,
    pub evict_component: u64,
    pub evict_application: u64,
    /// Planned actions dropped because their agent is stale.
    pub dropped_for_stale: u64,
    /// Containers reported by a second agent ([`RoundInput::duplicates`]).
    pub duplicates: u64,
}

/// One agent in `GET /v1/status`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentStatus {
    pub agent_id: String,
    pub tenant: String,
    pub stale: bool,
    pub first_seen_s: f64,
    pub last_seen_s: f64,
    pub reports: u64,
    pub components: u64,
    pub capacity: Resources,
    pub pending_actions: u64,
}

/// `GET /v1/status`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub api_version: u32,
    pub epoch: String,
    pub started_s: f64,
    pub round: u64,
    pub agents: Vec<AgentStatus>,
    pub actions_pending: u64,
    pub actions_applied: u64,
    pub actions_failed: u64,
    pub actions_superseded: u64,
    /// Applications the server saw preempted (acknowledged), by
    /// `<tenant>/<label>`.
    pub app_failures: BTreeMap<String, u32>,
    /// Whole-application evictions acknowledged in the retained rounds,
    /// oldest first (carried over to a new leader).
    #[serde(default)]
    pub evicted_apps: Vec<EvictedApp>,
    /// This replica's part in a shaper cluster (set by the server).
    #[serde(default)]
    pub role: Role,
    /// The leader's advertised URL, when known (set by the server).
    #[serde(default)]
    pub leader_url: Option<String>,
}

/// One entry of [`Status::evicted_apps`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictedApp {
    pub round: u64,
    pub app: String,
}

/// A replica's part in a shaper cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Plans rounds and answers agents (the only part of a lone shaper).
    #[default]
    Leader,
    /// Redirects agents to the leader.
    Follower,
}

/// Refused reports and components since start (for `/metrics`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefusalCounters {
    /// Reports or acks whose agent id is not their credential's (403).
    pub forbidden: u64,
    /// Stale or replayed reports (409).
    pub replayed: u64,
    /// Reports refused by a cap, by [`Cap::ALL`] order (429).
    pub limit: [u64; 4],
    /// Components left out because their request exceeds their host.
    pub components_over_capacity: u64,
    /// Components left out because their credential may not report their
    /// application ([`crate::app_scope`]).
    pub components_out_of_scope: u64,
}

/// Timing parameters of the state (from [`ShaperServerConfig`]).
#[derive(Clone, Debug, PartialEq)]
pub struct StateConfig {
    pub interval_s: f64,
    pub stale_after_intervals: u32,
    pub forget_after_intervals: u32,
    pub warmup_intervals: u32,
    /// See [`ShaperServerConfig::early_round_gap_s`].
    pub early_round_gap_s: f64,
    pub max_components_per_report: usize,
    pub limits: ServerLimits,
}

impl From<&ShaperServerConfig> for StateConfig {
    fn from(c: &ShaperServerConfig) -> Self {
        Self {
            interval_s: c.interval_s,
            stale_after_intervals: c.stale_after_intervals,
            forget_after_intervals: c.forget_after_intervals,
            warmup_intervals: c.warmup_intervals,
            early_round_gap_s: c.early_round_gap_s,
            max_components_per_report: c.max_components_per_report,
            limits: c.limits.clone(),
        }
    }
}

/// Counters since start (for `/metrics`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckCounters {
    pub applied: u64,
    pub failed: u64,
    pub unknown: u64,
}

/// The server's state.
#[derive(Debug)]
pub struct ShaperState {
    cfg: StateConfig,
    shaper: ShaperConfig,
    epoch: String,
    started_s: f64,
    round: u64,
    agents: BTreeMap<Arc<str>, AgentRecord>,
    /// Issued actions by round, each round's indexed by action number.
    actions: BTreeMap<u64, Vec<ActionRecord>>,
    app_failures: BTreeMap<String, u32>,
    /// When each application of `app_failures` was last in a round's view
    /// (in memory only; [`app_failures`] prunes by it).
    app_seen_s: HashMap<String, f64>,
    counted_app_evictions: HashSet<(u64, String)>,
    acks: AckCounters,
    usage: Usage,
    replay: ReplayGuard,
    refusals: RefusalCounters,
    /// Ack results not yet persisted ([`ShaperState::take_writes`]).
    writes: crate::store::PendingWrites,
    owners: owners::Owners,
}

impl ShaperState {
    /// A fresh state. `epoch` distinguishes this server instance's action
    /// ids from those of earlier instances (e.g. its start time in ms).
    pub fn new(
        cfg: StateConfig,
        shaper: ShaperConfig,
        epoch: impl Into<String>,
        now_s: f64,
    ) -> Self {
        Self {
            cfg,
            shaper,
            epoch: epoch.into(),
            started_s: now_s,
            round: 0,
            agents: BTreeMap::new(),
            actions: BTreeMap::new(),
            app_failures: BTreeMap::new(),
            app_seen_s: HashMap::new(),
            counted_app_evictions: HashSet::new(),
            acks: AckCounters::default(),
            usage: Usage::default(),
            replay: ReplayGuard::default(),
            refusals: RefusalCounters::default(),
            writes: crate::store::PendingWrites::default(),
            owners: owners::Owners::default(),
        }
    }

    pub fn shaper_config(&self) -> &ShaperConfig {
        &self.shaper
    }

    pub fn interval_s(&self) -> f64 {
        self.cfg.interval_s
    }

    pub fn early_round_gap_s(&self) -> f64 {
        self.cfg.early_round_gap_s
    }

    /// The latest round's actions for `agent_id` (its number and the
    /// actions, as a report's answer carries them); `None` for an agent
    /// not on record.
    pub fn pending_for(&self, agent_id: &str) -> Option<(u64, Vec<WireAction>)> {
        let rec = self.agents.get(agent_id)?;
        Some((rec.pending.round, rec.pending.render(&self.epoch)))
    }

    pub fn round(&self) -> u64 {
        self.round
    }

    pub fn ack_counters(&self) -> AckCounters {
        self.acks
    }

    /// True when an agent last seen at `last_seen_s` is stale at `now_s`.
    pub fn is_stale_at(&self, last_seen_s: f64, now_s: f64) -> bool {
        now_s - last_seen_s > f64::from(self.cfg.stale_after_intervals) * self.cfg.interval_s
    }

    fn is_forgotten_at(&self, last_seen_s: f64, now_s: f64) -> bool {
        self.cfg.forget_after_intervals > 0
            && now_s - last_seen_s
                > f64::from(self.cfg.forget_after_intervals) * self.cfg.interval_s
    }

    /// (live, stale) agent counts at `now_s`.
    pub fn agent_counts(&self, now_s: f64) -> (u64, u64) {
        let stale = self
            .agents
            .values()
            .filter(|a| self.is_stale_at(a.last_seen_s, now_s))
            .count() as u64;
        (self.agents.len() as u64 - stale, stale)
    }

    /// Components across all known agents.
    pub fn component_count(&self) -> u64 {
        self.usage.components_total
    }

    /// What the stored reports hold (agents, components, estimated bytes).
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// Refusals since start.
    pub fn refusal_counters(&self) -> RefusalCounters {
        self.refusals
    }

    /// Counts a refusal decided outside the state (e.g. a 403 in the server).
    pub fn count_refusal(&mut self, r: &Refusal) {
        match r {
            Refusal::Invalid(_) => {}
            Refusal::Forbidden(_) => self.refusals.forbidden += 1,
            Refusal::Replay { .. } => self.refusals.replayed += 1,
            Refusal::Limit { cap, .. } => {
                if let Some(i) = Cap::ALL.iter().position(|c| c == cap) {
                    self.refusals.limit[i] += 1;
                }
            }
        }
    }

    /// The replay guard as stored after a round (see [`crate::store`]).
    pub fn replay_snapshot(&self) -> crate::store::ReplaySnapshot {
        self.replay.snapshot()
    }

    /// Keeps replay-protection entries only for agents for which `keep` is
    /// true (called with the agents that still have a credential).
    pub fn retain_replay_guard(&mut self, keep: impl FnMut(&str) -> bool) {
        self.replay.retain(keep);
    }

    /// Drops at once the records (report and components) of the agents for
    /// which `keep` is false (called with the agents that still have a
    /// credential: a revoked agent is not planned with again); returns
    /// their ids.
    pub fn forget_agents(&mut self, mut keep: impl FnMut(&str) -> bool) -> Vec<Arc<str>> {
        let gone: Vec<Arc<str>> = self.agents.keys().filter(|k| !keep(k)).cloned().collect();
        for k in &gone {
            if let Some(a) = self.agents.remove(k) {
                self.usage.remove(&a.tenant, a.footprint);
                self.owners.remove(k);
            }
        }
        gone
    }

    /// Starts a round: forgets agents silent for `forget_after_intervals`,
    /// numbers the round and takes cheap references to every agent's latest
    /// report. Call [`RoundSnapshot::build`] (outside any lock) next.
    pub fn begin_round(&mut self, now_s: f64) -> Result<RoundSnapshot, SkipReason> {
        if now_s < self.started_s + f64::from(self.cfg.warmup_intervals) * self.cfg.interval_s {
            return Err(SkipReason::Warmup);
        }
        let forgotten: Vec<Arc<str>> = self
            .agents
            .iter()
            .filter(|(_, a)| self.is_forgotten_at(a.last_seen_s, now_s))
            .map(|(k, _)| k.clone())
            .collect();
        for k in forgotten {
            tracing::warn!(agent = %k, "agent silent too long: dropped from the cluster view");
            if let Some(a) = self.agents.remove(&k) {
                self.usage.remove(&a.tenant, a.footprint);
                self.owners.remove(&k);
            }
        }
        if self.agents.is_empty() {
            return Err(SkipReason::NoAgents);
        }
        self.round += 1;
        Ok(RoundSnapshot {
            round: self.round,
            now_s,
            agents: self
                .agents
                .iter()
                .map(|(k, a)| SnapAgent {
                    name: k.clone(),
                    tenant: a.tenant.clone(),
                    report: a.report.clone(),
                    ids: a.ids.clone(),
                    taken: a.taken.clone(),
                    stale: self.is_stale_at(a.last_seen_s, now_s),
                })
                .collect(),
            app_failures: self.app_failures.clone(),
        })
    }

    /// Builds the cluster view for a new round (`begin_round` + `build`).
    pub fn snapshot(&mut self, now_s: f64) -> Result<RoundInput, SkipReason> {
        Ok(self.begin_round(now_s)?.build())
    }

    /// Turns a plan into per-agent pending actions (replacing the previous
    /// round's unacknowledged ones) and returns what was handed out
    /// (`prepare` + `commit`).
    pub fn install(&mut self, input: &RoundInput, plan: &Plan) -> RoundOutcome {
        let prepared = input.prepare(plan.clone());
        self.commit(prepared)
    }

    /// Installs a prepared round: swaps every agent's pending actions and
    /// records the new actions. Cheap: call it under the lock.
    pub fn commit(&mut self, prepared: PreparedRound) -> RoundOutcome {
        self.commit_deferring_drops(prepared).0
    }

    /// [`ShaperState::commit`], handing back what it replaced (the previous
    /// rounds' pending actions, which hold the last references to older
    /// reports, and the forgotten rounds' records) so that the caller can
    /// free it outside the lock: at 1M components that is millions of
    /// deallocations.
    pub fn commit_deferring_drops(&mut self, prepared: PreparedRound) -> (RoundOutcome, Replaced) {
        let PreparedRound {
            round,
            now_s,
            failed_apps_seen,
            plan,
            mut per_agent,
            records,
            in_round,
            outcome,
        } = prepared;
        self.prune_app_failures(&failed_apps_seen, now_s);
        if round < self.round {
            // A newer round was begun meanwhile (cannot happen with one round
            // task, but be safe): keep its actions, drop these.
            tracing::warn!(round, latest = self.round, "stale round dropped");
        }
        self.actions.insert(round, records);
        let mut replaced = Replaced::default();
        for (name, rec) in self.agents.iter_mut() {
            if !in_round.contains(name) {
                continue;
            }
            if let Some(old) = self.actions.get_mut(&rec.pending.round) {
                for l in &rec.pending.actions {
                    if let Some(r) = old.get_mut(l.n as usize) {
                        if r.status == ActionStatus::Pending {
                            r.status = ActionStatus::Superseded;
                        }
                    }
                }
            }
            let old = std::mem::replace(
                &mut rec.pending,
                Pending {
                    round,
                    plan: Some(plan.clone()),
                    actions: per_agent.remove(name).unwrap_or_default(),
                },
            );
            replaced.pending.push(old);
        }
        let keep_from = round.saturating_sub(RETAIN_ROUNDS);
        let kept = self.actions.split_off(&keep_from);
        replaced.records = std::mem::replace(&mut self.actions, kept);
        self.counted_app_evictions.retain(|(r, _)| *r >= keep_from);
        (outcome, replaced)
    }

    /// Snapshot, `decide()`, install: one whole round.
    pub fn plan_round(&mut self, now_s: f64) -> Result<RoundOutcome, SkipReason> {
        let input = self.snapshot(now_s)?;
        let plan = shaper::decide(&input.view, now_s, &self.shaper);
        Ok(self.install(&input, &plan))
    }

    /// The status of one action, while it is remembered.
    pub fn action_status(&self, id: &ActionId) -> Option<ActionStatus> {
        let (round, n) = parse_action_id(&self.epoch, id)?;
        self.actions
            .get(&round)?
            .get(n as usize)
            .map(|r| r.status.clone())
    }

    /// This server instance's id (prefix of its action ids).
    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// Everything `GET /v1/status` shows.
    pub fn status(&self, now_s: f64) -> Status {
        let mut s = Status {
            api_version: API_VERSION,
            epoch: self.epoch.clone(),
            started_s: self.started_s,
            round: self.round,
            agents: self
                .agents
                .iter()
                .map(|(name, a)| AgentStatus {
                    agent_id: name.to_string(),
                    tenant: a.tenant.to_string(),
                    stale: self.is_stale_at(a.last_seen_s, now_s),
                    first_seen_s: a.first_seen_s,
                    last_seen_s: a.last_seen_s,
                    reports: a.reports,
                    components: a.report.components.len() as u64,
                    capacity: a.report.capacity,
                    pending_actions: a.pending.actions.len() as u64,
                })
                .collect(),
            actions_pending: 0,
            actions_applied: 0,
            actions_failed: 0,
            actions_superseded: 0,
            app_failures: self.app_failures.clone(),
            evicted_apps: self.evicted_apps(),
            role: Role::Leader,
            leader_url: None,
        };
        for r in self.actions.values().flatten() {
            match r.status {
                ActionStatus::Pending => s.actions_pending += 1,
                ActionStatus::Applied => s.actions_applied += 1,
                ActionStatus::Failed { .. } => s.actions_failed += 1,
                ActionStatus::Superseded => s.actions_superseded += 1,
            }
        }
        s
    }
}

#[cfg(test)]
mod tests;

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

use super::config::ShaperServerConfig;
use super::credentials::Identity;
use super::limits::{report_mem_bytes, Cap, Footprint, Refusal, ReplayGuard, ServerLimits, Usage};
use super::protocol::{
    self, Ack, AckOutcome, AckRequest, AckResponse, ActionId, ActionKind, RejectedComponent,
    ReportRequest, ReportResponse, WireAction, API_VERSION,
};
use serde::{Deserialize, Serialize};
use shaper::{
    AppFacts, AppId, ClusterView, Component, ComponentAction, ComponentId, HostId, Plan, Resources,
    ShaperConfig, ViewBuilder,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

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

#[derive(Clone, Debug)]
struct ActionRecord {
    agent: Arc<str>,
    round: u64,
    app: String,
    whole_app: bool,
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
    pending: Vec<WireAction>,
    pending_round: u64,
}

/// Where a component of the view came from.
#[derive(Clone, Debug)]
struct Origin {
    agent: Arc<str>,
    container_id: String,
    app: String,
    stale: bool,
}

/// A cluster view ready for `decide()`, plus what is needed to turn the plan
/// back into per-agent actions.
#[derive(Clone, Debug)]
pub struct RoundInput {
    pub round: u64,
    pub now_s: f64,
    epoch: String,
    pub view: ClusterView,
    origins: HashMap<ComponentId, Origin>,
    live_agents: Vec<Arc<str>>,
    pub stale_agents: Vec<String>,
    /// Components left out of the view because their id collided (should
    /// never happen with 64-bit hashes; counted to be sure).
    pub collisions: u64,
}

/// A round's inputs, taken under the lock (cheap: reference counts).
#[derive(Clone, Debug)]
pub struct RoundSnapshot {
    pub round: u64,
    pub now_s: f64,
    epoch: String,
    agents: Vec<(Arc<str>, Arc<ReportRequest>, bool)>,
    app_failures: BTreeMap<String, u32>,
}

/// A planned round turned into per-agent actions, ready to commit.
#[derive(Debug)]
pub struct PreparedRound {
    round: u64,
    per_agent: HashMap<Arc<str>, Vec<WireAction>>,
    records: Vec<(ActionId, ActionRecord)>,
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
}

/// Timing parameters of the state (from [`ShaperServerConfig`]).
#[derive(Clone, Debug, PartialEq)]
pub struct StateConfig {
    pub interval_s: f64,
    pub stale_after_intervals: u32,
    pub forget_after_intervals: u32,
    pub warmup_intervals: u32,
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
    actions: HashMap<ActionId, ActionRecord>,
    app_failures: BTreeMap<String, u32>,
    counted_app_evictions: HashSet<(u64, String)>,
    acks: AckCounters,
    usage: Usage,
    replay: ReplayGuard,
    refusals: RefusalCounters,
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
            actions: HashMap::new(),
            app_failures: BTreeMap::new(),
            counted_app_evictions: HashSet::new(),
            acks: AckCounters::default(),
            usage: Usage::default(),
            replay: ReplayGuard::default(),
            refusals: RefusalCounters::default(),
        }
    }

    pub fn shaper_config(&self) -> &ShaperConfig {
        &self.shaper
    }

    pub fn interval_s(&self) -> f64 {
        self.cfg.interval_s
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
            Refusal::Replay(_) => self.refusals.replayed += 1,
            Refusal::Limit { cap, .. } => {
                if let Some(i) = Cap::ALL.iter().position(|c| c == cap) {
                    self.refusals.limit[i] += 1;
                }
            }
        }
    }

    /// Keeps replay-protection entries only for agents for which `keep` is
    /// true (called with the agents that still have a credential).
    pub fn retain_replay_guard(&mut self, keep: impl FnMut(&str) -> bool) {
        self.replay.retain(keep);
    }

    /// Records the report of the agent `who` authenticated as and returns
    /// its pending actions. Refused, with nothing changed, when the report
    /// speaks for another agent id (403), does not come after the agent's
    /// last accepted report (409), is invalid (400) or would exceed a cap
    /// (429). Components whose request exceeds the host's capacity are left
    /// out and listed in the answer. Applications are keyed by
    /// `<tenant>/<label>` from here on (see [`protocol::app_key`]).
    pub fn report_as(
        &mut self,
        who: &Identity,
        req: ReportRequest,
        now_s: f64,
    ) -> Result<ReportResponse, Refusal> {
        let r = self.report_checked(who, req, now_s);
        if let Err(e) = &r {
            self.count_refusal(e);
        }
        r
    }

    fn report_checked(
        &mut self,
        who: &Identity,
        mut req: ReportRequest,
        now_s: f64,
    ) -> Result<ReportResponse, Refusal> {
        if req.agent_id.as_str() != &*who.agent_id {
            return Err(Refusal::Forbidden(format!(
                "the credential of agent {:?} cannot report as {:?}",
                who.agent_id, req.agent_id
            )));
        }
        req.validate(self.cfg.max_components_per_report)
            .map_err(Refusal::Invalid)?;
        self.replay.check(&who.agent_id, req.boot_id, req.seq)?;
        let (kept, rejected) = split_over_capacity(std::mem::take(&mut req.components), &req);
        req.components = kept;
        for c in &mut req.components {
            c.app = protocol::app_key(&who.tenant, &c.app);
        }
        let new = Footprint {
            components: req.components.len() as u64,
            mem_bytes: report_mem_bytes(&req),
        };
        let existing = self.agents.get_key_value(req.agent_id.as_str());
        let old = existing.map(|(_, a)| (a.tenant.clone(), a.footprint));
        if let Some((old_tenant, _)) = &old {
            if *old_tenant != who.tenant {
                return Err(Refusal::Forbidden(format!(
                    "agent {:?} is on record in tenant {old_tenant:?}, its credential is in tenant {:?}",
                    who.agent_id, who.tenant
                )));
            }
        }
        self.usage.check(
            &self.cfg.limits,
            &who.tenant,
            old.as_ref().map(|o| o.1),
            new,
        )?;
        // Accepted from here on.
        if !rejected.is_empty() {
            self.refusals.components_over_capacity += rejected.len() as u64;
            tracing::warn!(
                agent = %who.agent_id,
                tenant = %who.tenant,
                count = rejected.len(),
                first = %rejected[0].container_id,
                "components whose request exceeds their host's capacity left out"
            );
        }
        let key: Arc<str> = match existing {
            Some((k, _)) => k.clone(),
            None => who.agent_id.clone(),
        };
        self.replay.accept(&key, req.boot_id, req.seq);
        self.usage
            .replace(&who.tenant, old.as_ref().map(|o| o.1), new);
        let acks = std::mem::take(&mut req.acks);
        self.apply_acks(&key, &acks);
        let req = Arc::new(req);
        let rec = self.agents.entry(key).or_insert_with(|| AgentRecord {
            tenant: who.tenant.clone(),
            footprint: new,
            report: req.clone(),
            first_seen_s: now_s,
            last_seen_s: now_s,
            reports: 0,
            pending: Vec::new(),
            pending_round: 0,
        });
        rec.report = req;
        rec.footprint = new;
        rec.last_seen_s = now_s;
        rec.reports += 1;
        Ok(ReportResponse {
            api_version: API_VERSION,
            round: rec.pending_round,
            interval_s: self.cfg.interval_s,
            actions: rec.pending.clone(),
            rejected,
        })
    }

    /// Records acknowledgements sent on their own by the agent `who`
    /// authenticated as (403 when the request names another agent).
    pub fn ack_as(&mut self, who: &Identity, req: &AckRequest) -> Result<AckResponse, Refusal> {
        if req.agent_id.as_str() != &*who.agent_id {
            let e = Refusal::Forbidden(format!(
                "the credential of agent {:?} cannot acknowledge for {:?}",
                who.agent_id, req.agent_id
            ));
            self.count_refusal(&e);
            return Err(e);
        }
        self.ack(req).map_err(|Invalid(e)| Refusal::Invalid(e))
    }

    /// Records acknowledgements (the agent is trusted to be `req.agent_id`:
    /// the server calls [`ShaperState::ack_as`]).
    fn ack(&mut self, req: &AckRequest) -> Result<AckResponse, Invalid> {
        req.validate(self.cfg.max_components_per_report)
            .map_err(Invalid)?;
        let key: Arc<str> = match self.agents.get_key_value(req.agent_id.as_str()) {
            Some((k, _)) => k.clone(),
            None => {
                self.acks.unknown += req.acks.len() as u64;
                return Ok(AckResponse {
                    accepted: 0,
                    unknown: req.acks.len() as u64,
                });
            }
        };
        Ok(self.apply_acks(&key, &req.acks))
    }

    fn apply_acks(&mut self, agent: &Arc<str>, acks: &[Ack]) -> AckResponse {
        let mut out = AckResponse::default();
        let mut done: HashSet<&ActionId> = HashSet::new();
        for ack in acks {
            let rec = match self.actions.get_mut(&ack.action_id) {
                Some(r) if *r.agent == **agent => r,
                _ => {
                    out.unknown += 1;
                    continue;
                }
            };
            out.accepted += 1;
            done.insert(&ack.action_id);
            match &ack.outcome {
                AckOutcome::Applied => {
                    rec.status = ActionStatus::Applied;
                    self.acks.applied += 1;
                    if rec.whole_app
                        && self
                            .counted_app_evictions
                            .insert((rec.round, rec.app.clone()))
                    {
                        *self.app_failures.entry(rec.app.clone()).or_insert(0) += 1;
                    }
                }
                AckOutcome::Failed { error } => {
                    rec.status = ActionStatus::Failed {
                        error: error.clone(),
                    };
                    self.acks.failed += 1;
                }
            }
        }
        self.acks.unknown += out.unknown;
        if !done.is_empty() {
            if let Some(a) = self.agents.get_mut(agent) {
                a.pending.retain(|w| !done.contains(&w.id));
            }
        }
        out
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
            }
        }
        if self.agents.is_empty() {
            return Err(SkipReason::NoAgents);
        }
        self.round += 1;
        Ok(RoundSnapshot {
            round: self.round,
            now_s,
            epoch: self.epoch.clone(),
            agents: self
                .agents
                .iter()
                .map(|(k, a)| {
                    (
                        k.clone(),
                        a.report.clone(),
                        self.is_stale_at(a.last_seen_s, now_s),
                    )
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
        let prepared = input.prepare(plan);
        self.commit(prepared)
    }

    /// Installs a prepared round: swaps every agent's pending actions and
    /// records the new actions. Cheap: call it under the lock.
    pub fn commit(&mut self, prepared: PreparedRound) -> RoundOutcome {
        let PreparedRound {
            round,
            mut per_agent,
            records,
            in_round,
            outcome,
        } = prepared;
        if round < self.round {
            // A newer round was begun meanwhile (cannot happen with one round
            // task, but be safe): keep its actions, drop these.
            tracing::warn!(round, latest = self.round, "stale round dropped");
        }
        self.actions.reserve(records.len());
        for (id, rec) in records {
            self.actions.insert(id, rec);
        }
        for (name, rec) in self.agents.iter_mut() {
            if !in_round.contains(name) {
                continue;
            }
            for old in rec.pending.drain(..) {
                if let Some(r) = self.actions.get_mut(&old.id) {
                    if r.status == ActionStatus::Pending {
                        r.status = ActionStatus::Superseded;
                    }
                }
            }
            rec.pending = per_agent.remove(name).unwrap_or_default();
            rec.pending_round = round;
        }
        let keep_from = round.saturating_sub(RETAIN_ROUNDS);
        if self.actions.values().any(|r| r.round < keep_from) {
            self.actions.retain(|_, r| r.round >= keep_from);
        }
        self.counted_app_evictions.retain(|(r, _)| *r >= keep_from);
        outcome
    }

    /// Snapshot, `decide()`, install: one whole round.
    pub fn plan_round(&mut self, now_s: f64) -> Result<RoundOutcome, SkipReason> {
        let input = self.snapshot(now_s)?;
        let plan = shaper::decide(&input.view, now_s, &self.shaper);
        Ok(self.install(&input, &plan))
    }

    /// The status of one action, while it is remembered.
    pub fn action_status(&self, id: &ActionId) -> Option<ActionStatus> {
        self.actions.get(id).map(|r| r.status.clone())
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
                    pending_actions: a.pending.len() as u64,
                })
                .collect(),
            actions_pending: 0,
            actions_applied: 0,
            actions_failed: 0,
            actions_superseded: 0,
            app_failures: self.app_failures.clone(),
        };
        for r in self.actions.values() {
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

/// Splits components into those that fit their host and those whose
/// request exceeds the host's capacity (left out of the view: no placement
/// can satisfy them, and planning with them would only evict others).
fn split_over_capacity(
    components: Vec<protocol::ComponentReport>,
    req: &ReportRequest,
) -> (Vec<protocol::ComponentReport>, Vec<RejectedComponent>) {
    let cap = req.capacity;
    let mut rejected = Vec::new();
    let kept = components
        .into_iter()
        .filter(|c| {
            let over_cpu = c.request.cpu_cores > cap.cpu_cores;
            let over_mem = c.request.mem_bytes > cap.mem_bytes;
            if over_cpu || over_mem {
                rejected.push(RejectedComponent {
                    container_id: c.container_id.clone(),
                    reason: format!(
                        "request ({:.3} cores, {:.0} bytes) exceeds the host's capacity ({:.3} cores, {:.0} bytes)",
                        c.request.cpu_cores, c.request.mem_bytes, cap.cpu_cores, cap.mem_bytes
                    ),
                });
            }
            !(over_cpu || over_mem)
        })
        .collect();
    (kept, rejected)
}

impl RoundSnapshot {
    /// Builds the cluster view (no lock needed). Stale agents' components
    /// are frozen at their last allocation (see the module docs).
    pub fn build(&self) -> RoundInput {
        let mut apps: ViewBuilder<&str> = ViewBuilder::new(self.now_s);
        let mut origins: HashMap<ComponentId, Origin> =
            HashMap::with_capacity(self.agents.iter().map(|a| a.1.components.len()).sum());
        let mut host_ids: HashSet<HostId> = HashSet::with_capacity(self.agents.len());
        let mut app_ids: HashMap<AppId, &str> = HashMap::new();
        let mut live_agents = Vec::new();
        let mut stale_agents = Vec::new();
        let mut collisions = 0u64;
        for (name, report, stale) in &self.agents {
            let host = protocol::host_id(name);
            if !host_ids.insert(host) {
                tracing::error!(agent = %name, "host id collision: agent left out of this round");
                collisions += report.components.len() as u64;
                continue;
            }
            let stale = *stale;
            if stale {
                stale_agents.push(name.to_string());
            } else {
                live_agents.push(name.clone());
            }
            apps.host(host, report.capacity);
            for c in &report.components {
                let id = protocol::component_id(name, &c.container_id);
                if origins.contains_key(&id) {
                    tracing::error!(agent = %name, container = %c.container_id, "component id collision: left out");
                    collisions += 1;
                    continue;
                }
                let aid = protocol::app_id(&c.app);
                match app_ids.get(&aid) {
                    Some(label) if *label != c.app.as_str() => {
                        tracing::error!(app = %c.app, "application id collision: component left out");
                        collisions += 1;
                        continue;
                    }
                    Some(_) => {}
                    None => {
                        app_ids.insert(aid, c.app.as_str());
                    }
                }
                let facts = AppFacts {
                    id: aid,
                    submitted_s: c.app_submitted_s,
                    priority: c.priority,
                    failures: c
                        .failures
                        .max(self.app_failures.get(&c.app).copied().unwrap_or(0)),
                    expected_remaining_s: c.expected_remaining_s,
                };
                let work_done_s = c.work_done_s.unwrap_or(f64::NAN);
                let comp = if stale {
                    // Last known allocation, frozen: no forecast, request =
                    // allocation, usage capped by it.
                    Component {
                        id,
                        class: c.class,
                        host,
                        request: c.allocation,
                        started_s: c.started_s,
                        allocation: c.allocation,
                        usage: Resources::new(
                            c.usage.cpu_cores.min(c.allocation.cpu_cores),
                            c.usage.mem_bytes.min(c.allocation.mem_bytes),
                        ),
                        forecast: None,
                        protected: c.protected,
                        work_done_s,
                    }
                } else {
                    Component {
                        id,
                        class: c.class,
                        host,
                        request: c.request,
                        started_s: c.started_s,
                        allocation: c.allocation,
                        usage: c.usage,
                        forecast: c.forecast,
                        protected: c.protected,
                        work_done_s,
                    }
                };
                apps.component(c.app.as_str(), facts, comp, None);
                origins.insert(
                    id,
                    Origin {
                        agent: name.clone(),
                        container_id: c.container_id.clone(),
                        app: c.app.clone(),
                        stale,
                    },
                );
            }
        }
        let view = apps.build();
        RoundInput {
            round: self.round,
            now_s: self.now_s,
            epoch: self.epoch.clone(),
            view,
            origins,
            live_agents,
            stale_agents,
            collisions,
        }
    }
}

impl RoundInput {
    /// Turns `plan` into per-agent wire actions with fresh ids (no lock
    /// needed); [`ShaperState::commit`] installs them.
    pub fn prepare(&self, plan: &Plan) -> PreparedRound {
        let mut out = RoundOutcome {
            round: self.round,
            agents_live: self.live_agents.len() as u64,
            agents_stale: self.stale_agents.len() as u64,
            components: self.origins.len() as u64,
            ..RoundOutcome::default()
        };
        let mut per_agent: HashMap<Arc<str>, Vec<WireAction>> = HashMap::new();
        let mut n = 0u64;
        let mut records: Vec<(ActionId, ActionRecord)> = Vec::new();
        let mut push = |origin: &Origin,
                        kind: ActionKind,
                        explanation: &shaper::Explanation,
                        out: &mut RoundOutcome| {
            if origin.stale {
                out.dropped_for_stale += 1;
                return;
            }
            match &kind {
                ActionKind::Resize { .. } => out.resize += 1,
                ActionKind::Evict {
                    whole_app: false, ..
                } => out.evict_component += 1,
                ActionKind::Evict {
                    whole_app: true, ..
                } => out.evict_application += 1,
            }
            let id = ActionId(format!("{}-{}-{}", self.epoch, self.round, n));
            n += 1;
            let summary = match &kind {
                ActionKind::Resize { container_id, from, to } => format!(
                    "resize {container_id} (app {}): cpu {:.3} -> {:.3} cores, mem {:.0} -> {:.0} bytes: {explanation}",
                    origin.app, from.cpu_cores, to.cpu_cores, from.mem_bytes, to.mem_bytes
                ),
                ActionKind::Evict { container_id, whole_app: true } => {
                    format!("evict {container_id}: its whole application {} is preempted: {explanation}", origin.app)
                }
                ActionKind::Evict { container_id, whole_app: false } => {
                    format!("evict {container_id} (elastic component of app {}): {explanation}", origin.app)
                }
            };
            records.push((
                id.clone(),
                ActionRecord {
                    agent: origin.agent.clone(),
                    round: self.round,
                    app: origin.app.clone(),
                    whole_app: matches!(
                        kind,
                        ActionKind::Evict {
                            whole_app: true,
                            ..
                        }
                    ),
                    status: ActionStatus::Pending,
                },
            ));
            per_agent
                .entry(origin.agent.clone())
                .or_default()
                .push(WireAction {
                    id,
                    app: origin.app.clone(),
                    action: kind,
                    explanation: explanation.clone(),
                    summary,
                });
        };
        for action in plan.component_actions() {
            let Some(o) = self.origins.get(&action.component()) else {
                continue;
            };
            let kind = match action {
                ComponentAction::Resize { from, to, .. } => ActionKind::Resize {
                    container_id: o.container_id.clone(),
                    from,
                    to,
                },
                ComponentAction::Evict { whole_app, .. } => ActionKind::Evict {
                    container_id: o.container_id.clone(),
                    whole_app,
                },
            };
            push(o, kind, action.explanation(), &mut out);
        }
        let mut in_round: HashSet<Arc<str>> = self.live_agents.iter().cloned().collect();
        in_round.extend(
            self.stale_agents
                .iter()
                .map(|s| Arc::<str>::from(s.as_str())),
        );
        PreparedRound {
            round: self.round,
            per_agent,
            records,
            in_round,
            outcome: out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::protocol::ComponentReport;
    use shaper::{Class, Forecasts, Predictive};
    use std::sync::atomic::{AtomicU64, Ordering};

    const GB: f64 = 1e9;

    static SEQ: AtomicU64 = AtomicU64::new(1);

    fn who(agent: &str, tenant: &str) -> Identity {
        Identity {
            agent_id: Arc::from(agent),
            tenant: Arc::from(tenant),
            key_id: Arc::from("0000000000000000"),
        }
    }

    /// Reports as the agent the request names, in tenant `t`, with a fresh
    /// sequence number.
    trait ReportAsOwner {
        fn report(&mut self, req: ReportRequest, now_s: f64) -> Result<ReportResponse, Refusal>;
    }

    impl ReportAsOwner for ShaperState {
        fn report(
            &mut self,
            mut req: ReportRequest,
            now_s: f64,
        ) -> Result<ReportResponse, Refusal> {
            req.boot_id = 1;
            req.seq = SEQ.fetch_add(1, Ordering::Relaxed);
            let w = who(&req.agent_id, "t");
            self.report_as(&w, req, now_s)
        }
    }

    fn state(now_s: f64) -> ShaperState {
        let cfg = StateConfig {
            interval_s: 10.0,
            stale_after_intervals: 3,
            forget_after_intervals: 10,
            warmup_intervals: 1,
            max_components_per_report: 1000,
            limits: ServerLimits::default(),
        };
        let shaper = ShaperConfig {
            grace_period_s: 0.0,
            min_relative_change: 0.0,
            ..ShaperConfig::default()
        };
        ShaperState::new(cfg, shaper, "e1", now_s)
    }

    fn comp(
        id: &str,
        app: &str,
        class: Class,
        req_mem: f64,
        use_mem: f64,
        started_s: f64,
    ) -> ComponentReport {
        ComponentReport {
            container_id: id.into(),
            app: app.into(),
            class,
            priority: 0,
            protected: false,
            request: Resources::new(1.0, req_mem),
            allocation: Resources::new(1.0, req_mem),
            usage: Resources::new(0.1, use_mem),
            forecast: Some(Forecasts {
                cpu: Predictive::gaussian(0.1, 0.0),
                mem: Predictive::gaussian(use_mem, 0.0),
            }),
            started_s,
            work_done_s: None,
            app_submitted_s: None,
            failures: 0,
            expected_remaining_s: None,
        }
    }

    fn report(agent: &str, mem_capacity: f64, components: Vec<ComponentReport>) -> ReportRequest {
        ReportRequest {
            agent_id: agent.into(),
            boot_id: 1,
            seq: 0,
            capacity: Resources::new(64.0, mem_capacity),
            components,
            acks: vec![],
        }
    }

    #[test]
    fn warmup_then_rounds() {
        let mut s = state(0.0);
        assert_eq!(s.plan_round(5.0).err(), Some(SkipReason::Warmup));
        assert_eq!(s.plan_round(10.0).err(), Some(SkipReason::NoAgents));
        s.report(
            report(
                "a",
                10.0 * GB,
                vec![comp("c1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
            ),
            11.0,
        )
        .expect("ok");
        let out = s.plan_round(12.0).expect("round");
        assert_eq!(out.round, 1);
        assert_eq!(out.agents_live, 1);
        assert_eq!(out.components, 1);
        // Shrunk towards usage: one resize handed to agent a.
        assert_eq!(out.resize, 1);
        let resp = s
            .report(
                report(
                    "a",
                    10.0 * GB,
                    vec![comp("c1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
                ),
                13.0,
            )
            .expect("ok");
        assert_eq!(resp.round, 1);
        assert_eq!(resp.actions.len(), 1);
        match &resp.actions[0].action {
            ActionKind::Resize {
                container_id, to, ..
            } => {
                assert_eq!(container_id, "c1");
                assert!(to.mem_bytes < 4.0 * GB && to.mem_bytes >= 1.0 * GB);
            }
            other => panic!("expected a resize, got {other:?}"),
        }
    }

    #[test]
    fn agent_becomes_stale_after_n_intervals_and_gets_no_actions() {
        let mut s = state(0.0);
        s.report(
            report(
                "a",
                10.0 * GB,
                vec![comp("a1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
            ),
            1.0,
        )
        .expect("ok");
        s.report(
            report(
                "b",
                10.0 * GB,
                vec![comp("b1", "y", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
            ),
            1.0,
        )
        .expect("ok");
        // 3 intervals = 30 s: at 31.0 both are exactly at the limit (not stale).
        assert_eq!(s.agent_counts(31.0), (2, 0));
        s.report(
            report(
                "b",
                10.0 * GB,
                vec![comp("b1", "y", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
            ),
            31.0,
        )
        .expect("ok");
        assert_eq!(
            s.agent_counts(31.5),
            (1, 1),
            "a silent for 30.5 s > 3 x 10 s"
        );
        let out = s.plan_round(31.5).expect("round");
        assert_eq!(out.agents_stale, 1);
        assert_eq!(out.components, 2, "the stale host's components still count");
        assert_eq!(
            out.dropped_for_stale, 0,
            "stale components are frozen: decide plans no change for them"
        );
        assert_eq!(out.resize, 1, "only b's component is resized");
        let st = s.status(31.5);
        let a = st.agents.iter().find(|x| x.agent_id == "a").expect("a");
        assert!(a.stale);
        assert_eq!(a.pending_actions, 0);
        // a comes back: live again, and planned for.
        s.report(
            report(
                "a",
                10.0 * GB,
                vec![comp("a1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
            ),
            35.0,
        )
        .expect("ok");
        assert_eq!(s.agent_counts(35.0), (2, 0));
        let out = s.plan_round(36.0).expect("round");
        assert_eq!(out.resize, 2);
    }

    #[test]
    fn stale_components_keep_their_last_allocation_in_the_view() {
        let mut s = state(0.0);
        let mut c = comp("a1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0);
        c.allocation = Resources::new(0.5, 3.0 * GB);
        s.report(report("a", 10.0 * GB, vec![c]), 1.0).expect("ok");
        let input = s.snapshot(100.0).expect("round");
        assert_eq!(input.stale_agents, vec!["a".to_string()]);
        let comp = &input.view.apps[0].components[0];
        assert_eq!(comp.allocation, Resources::new(0.5, 3.0 * GB));
        assert_eq!(comp.request, comp.allocation);
        assert!(comp.forecast.is_none());
        let plan = shaper::decide(&input.view, 100.0, s.shaper_config());
        // Whatever the plan says about it, nothing is handed out for a stale agent.
        let out = s.install(&input, &plan);
        assert_eq!(out.resize + out.evict_component + out.evict_application, 0);
    }

    #[test]
    fn silent_agents_are_forgotten_after_the_limit() {
        let mut s = state(0.0);
        s.report(report("a", 10.0 * GB, vec![]), 1.0).expect("ok");
        s.report(report("b", 10.0 * GB, vec![]), 95.0).expect("ok");
        s.plan_round(100.0).expect("round");
        assert_eq!(s.status(100.0).agents.len(), 2);
        s.plan_round(101.5).expect("round");
        let names: Vec<String> = s
            .status(101.5)
            .agents
            .into_iter()
            .map(|a| a.agent_id)
            .collect();
        assert_eq!(
            names,
            vec!["b".to_string()],
            "a silent for 100.5 s > 10 x 10 s"
        );
    }

    #[test]
    fn multi_host_app_is_evicted_everywhere_when_its_core_does_not_fit() {
        let mut s = state(0.0);
        // App "early" (submitted first) fills host b; app "late" has its core
        // on b and an elastic component on a: its core cannot fit, so both of
        // its components go, on both hosts.
        let mut early = comp("e1", "early", Class::Core, 8.0 * GB, 7.5 * GB, 0.0);
        early.app_submitted_s = Some(0.0);
        let mut late_core = comp("l1", "late", Class::Core, 4.0 * GB, 3.0 * GB, 50.0);
        late_core.app_submitted_s = Some(50.0);
        let mut late_el = comp("l2", "late", Class::Elastic, 2.0 * GB, 1.0 * GB, 50.0);
        late_el.app_submitted_s = Some(50.0);
        s.report(report("b", 10.0 * GB, vec![early, late_core]), 11.0)
            .expect("ok");
        s.report(report("a", 10.0 * GB, vec![late_el]), 11.0)
            .expect("ok");
        let out = s.plan_round(12.0).expect("round");
        assert_eq!(out.evict_application, 2, "{out:?}");
        let ra = s.report(report("a", 10.0 * GB, vec![]), 13.0).expect("ok");
        let evicted: Vec<&str> = ra
            .actions
            .iter()
            .filter_map(|w| match &w.action {
                ActionKind::Evict {
                    container_id,
                    whole_app: true,
                } => Some(container_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(evicted, vec!["l2"]);
        // Acking the eviction counts one failure for the application.
        let id = ra
            .actions
            .iter()
            .find(|w| matches!(w.action, ActionKind::Evict { .. }))
            .expect("evict")
            .id
            .clone();
        let resp = s.ack(&AckRequest {
            agent_id: "a".into(),
            acks: vec![Ack {
                action_id: id.clone(),
                outcome: AckOutcome::Applied,
            }],
        });
        assert_eq!(
            resp,
            Ok(AckResponse {
                accepted: 1,
                unknown: 0
            })
        );
        assert_eq!(s.action_status(&id), Some(ActionStatus::Applied));
        assert_eq!(s.status(13.0).app_failures.get("t/late"), Some(&1));
        // An ack from another agent for the same id is not accepted.
        let other = s.ack(&AckRequest {
            agent_id: "b".into(),
            acks: vec![Ack {
                action_id: id,
                outcome: AckOutcome::Applied,
            }],
        });
        assert_eq!(
            other,
            Ok(AckResponse {
                accepted: 0,
                unknown: 1
            })
        );
    }

    #[test]
    fn acked_actions_are_not_redelivered_and_unacked_are_superseded() {
        let mut s = state(0.0);
        let r = || {
            report(
                "a",
                10.0 * GB,
                vec![
                    comp("c1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0),
                    comp("c2", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0),
                ],
            )
        };
        s.report(r(), 10.0).expect("ok");
        s.plan_round(10.0).expect("round");
        let first = s.report(r(), 11.0).expect("ok");
        assert_eq!(first.actions.len(), 2);
        let mut with_ack = r();
        with_ack.acks = vec![Ack {
            action_id: first.actions[0].id.clone(),
            outcome: AckOutcome::Applied,
        }];
        let second = s.report(with_ack, 12.0).expect("ok");
        assert_eq!(second.actions.len(), 1);
        assert_eq!(
            second.actions[0].id, first.actions[1].id,
            "the unacked one is delivered again, same id"
        );
        s.plan_round(20.0).expect("round");
        assert_eq!(
            s.action_status(&first.actions[1].id),
            Some(ActionStatus::Superseded)
        );
        assert_eq!(
            s.action_status(&first.actions[0].id),
            Some(ActionStatus::Applied)
        );
        let third = s.report(r(), 21.0).expect("ok");
        assert!(
            third.actions.iter().all(|w| w.id.0.starts_with("e1-2-")),
            "new round's ids"
        );
    }

    #[test]
    fn invalid_reports_change_nothing() {
        let mut s = state(0.0);
        let mut bad = report(
            "a",
            10.0 * GB,
            vec![comp("c1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
        );
        bad.components[0].request.mem_bytes = -1.0;
        assert!(s.report(bad, 1.0).is_err());
        assert_eq!(s.status(1.0).agents.len(), 0);
    }

    #[test]
    fn impersonation_is_forbidden_and_changes_nothing() {
        let mut s = state(0.0);
        let victim = report(
            "a",
            10.0 * GB,
            vec![comp("a1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
        );
        s.report(victim.clone(), 11.0).expect("ok");
        s.plan_round(12.0).expect("round");
        let before = s.status(12.0);
        let a_before = before.agents[0].clone();
        assert_eq!(a_before.pending_actions, 1);
        // Agent b (tenant t) reports as a: tiny capacity, no components.
        let mut fake = report("a", 1.0, vec![]);
        fake.boot_id = u64::MAX;
        let e = s.report_as(&who("b", "t"), fake, 13.0).expect_err("403");
        assert!(matches!(e, Refusal::Forbidden(_)), "{e}");
        // ... and tries to acknowledge a's action.
        let e = s
            .ack_as(
                &who("b", "t"),
                &AckRequest {
                    agent_id: "a".into(),
                    acks: vec![],
                },
            )
            .expect_err("403");
        assert!(matches!(e, Refusal::Forbidden(_)));
        let after = s.status(13.0);
        assert_eq!(after.agents.len(), 1);
        assert_eq!(
            after.agents[0], a_before,
            "capacity, pending actions unchanged"
        );
        assert_eq!(s.refusal_counters().forbidden, 2);
        // The victim still gets its pending action.
        let mut again = victim;
        again.boot_id = 1;
        again.seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let r = s.report_as(&who("a", "t"), again, 14.0).expect("ok");
        assert_eq!(r.actions.len(), 1);
    }

    #[test]
    fn replayed_or_stale_reports_are_refused() {
        let mut s = state(0.0);
        let w = who("a", "t");
        let mut r = report("a", 10.0 * GB, vec![]);
        r.boot_id = 100;
        r.seq = 101;
        s.report_as(&w, r.clone(), 1.0).expect("ok");
        for (boot, seq) in [(100, 101), (100, 5), (99, 1000)] {
            let mut old = r.clone();
            old.boot_id = boot;
            old.seq = seq;
            old.capacity = Resources::new(1.0, 1.0);
            let e = s.report_as(&w, old, 2.0).expect_err("replay");
            assert!(matches!(e, Refusal::Replay(_)), "{e}");
        }
        assert_eq!(s.status(2.0).agents[0].capacity, r.capacity);
        assert_eq!(s.status(2.0).agents[0].reports, 1);
        assert_eq!(s.refusal_counters().replayed, 3);
        // A new boot starts its own sequence.
        let mut next = r.clone();
        next.boot_id = 200;
        next.seq = 1;
        s.report_as(&w, next, 3.0).expect("new boot");
        // Forgetting the agent does not forget its sequence.
        s.begin_round(1000.0).ok();
        assert!(s.status(1000.0).agents.is_empty());
        let e = s.report_as(&w, r, 1001.0).expect_err("still a replay");
        assert!(matches!(e, Refusal::Replay(_)));
    }

    #[test]
    fn applications_are_keyed_by_tenant_and_oversized_components_are_rejected() {
        let mut s = state(0.0);
        // Tenant A's web fits its host.
        let a = report(
            "a",
            10.0 * GB,
            vec![comp("a-web", "web", Class::Core, 4.0 * GB, 3.0 * GB, 0.0)],
        );
        let mut a = a;
        a.boot_id = 1;
        s.report_as(&who("a", "tenant-a"), a.clone(), 11.0)
            .expect("a");
        // Tenant B's web: one component that cannot fit its tiny host (request
        // over capacity: rejected), two that do not fit together (B's web is
        // preempted, on B's host only).
        let mut b = report(
            "b",
            2.0 * GB,
            vec![
                comp("b-huge", "web", Class::Core, 100.0 * GB, 50.0 * GB, 10.0),
                comp("b-1", "web", Class::Core, 1.5 * GB, 1.5 * GB, 10.0),
                comp("b-2", "web", Class::Core, 1.5 * GB, 1.5 * GB, 10.0),
            ],
        );
        for c in &mut b.components {
            c.app_submitted_s = Some(10.0);
        }
        b.boot_id = 1;
        let rb = s
            .report_as(&who("b", "tenant-b"), b.clone(), 11.0)
            .expect("b");
        assert_eq!(rb.rejected.len(), 1);
        assert_eq!(rb.rejected[0].container_id, "b-huge");
        assert_eq!(s.refusal_counters().components_over_capacity, 1);
        assert_eq!(s.component_count(), 3);
        let out = s.plan_round(12.0).expect("round");
        assert_eq!(out.evict_application, 2, "{out:?}");
        a.seq = 1;
        let ra = s.report_as(&who("a", "tenant-a"), a, 13.0).expect("a");
        assert!(
            ra.actions
                .iter()
                .all(|w| !matches!(w.action, ActionKind::Evict { .. })),
            "no eviction reaches tenant A: {:?}",
            ra.actions
        );
        b.seq = 1;
        let rb = s.report_as(&who("b", "tenant-b"), b, 13.0).expect("b");
        assert!(rb
            .actions
            .iter()
            .all(|w| w.app == "tenant-b/web" && matches!(w.action, ActionKind::Evict { .. })));
        let st = s.status(13.0);
        assert_eq!(
            st.agents
                .iter()
                .find(|x| x.agent_id == "a")
                .map(|x| x.tenant.as_str()),
            Some("tenant-a")
        );
    }

    #[test]
    fn caps_refuse_reports_with_nothing_changed() {
        let mut s = state(0.0);
        s.cfg.limits.max_agents = 2;
        s.cfg.limits.max_components_per_tenant = 3;
        let many = |agent: &str, n: usize| {
            report(
                agent,
                100.0 * GB,
                (0..n)
                    .map(|i| comp(&format!("c{i}"), "x", Class::Elastic, GB, GB, 0.0))
                    .collect(),
            )
        };
        s.report(many("a", 2), 1.0).expect("ok");
        let e = s.report(many("b", 2), 1.0).expect_err("tenant cap");
        assert!(
            matches!(
                e,
                Refusal::Limit {
                    cap: Cap::TenantComponents,
                    ..
                }
            ),
            "{e}"
        );
        s.report(many("b", 1), 1.0).expect("ok");
        let e = s.report(many("c", 0), 1.0).expect_err("agent cap");
        assert!(
            matches!(
                e,
                Refusal::Limit {
                    cap: Cap::Agents,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(s.status(1.0).agents.len(), 2);
        assert_eq!(s.component_count(), 3);
        assert_eq!(s.refusal_counters().limit, [1, 1, 0, 0]);
        // Another tenant is not held back by the first one's cap.
        s.cfg.limits.max_agents = 3;
        let mut d = many("d", 3);
        d.boot_id = 1;
        s.report_as(&who("d", "other"), d, 1.0)
            .expect("other tenant");
        assert_eq!(s.usage().per_tenant.get("other"), Some(&3));
    }
}

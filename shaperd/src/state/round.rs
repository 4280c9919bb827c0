//! Building a round's cluster view from the agents' reports and turning the
//! plan back into per-agent actions (both run outside the server's lock).
//!
//! Actions are kept lazily: a round stores, per agent, the plan (shared)
//! and for each action its number, its place in the plan and the report it
//! was planned from. The wire form (id, container, structured explanation)
//! is rendered when the agent collects it with its next report, so a round
//! at 1M components does not build 1M actions that agents may never fetch;
//! the agent formats the human-readable line (`WireAction::summary`).

use super::{
    ActionRecord, ActionStatus, Duplicate, Origin, PreparedRound, RoundInput, RoundOutcome,
    RoundSnapshot,
};
use crate::protocol::{
    self, ActionId, ActionKind, Mentions, RejectedComponent, ReportRequest, WireAction,
};
use rustc_hash::FxHashMap;
use shaper::{
    shrink_spare, Action, AppFacts, AppId, Component, ComponentId, Explanation, HostId, Plan,
    Reason, Resources, ViewBuilder,
};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// An agent's actions from its latest round, rendered on delivery.
#[derive(Clone, Debug, Default)]
pub(super) struct Pending {
    pub(super) round: u64,
    pub(super) plan: Option<Arc<Plan>>,
    pub(super) actions: Vec<LazyAction>,
}

/// One component action of a plan, not yet rendered.
#[derive(Clone, Debug)]
pub(super) struct LazyAction {
    /// Its number in the round (the last part of its id).
    pub(super) n: u32,
    /// Its index in the plan's actions.
    action: u32,
    /// The report the plan was made from, and the component's index in it.
    report: Arc<ReportRequest>,
    comp: u32,
    /// Who its explanation mentions, for an agent that asked
    /// ([`ReportRequest::mentions`]) when it mentions anyone.
    mentions: Option<Box<Mentions>>,
    /// Its explanation is about another node's component (the core
    /// component of its application that did not fit there): sent
    /// [`Explanation::withheld`].
    foreign: bool,
}

/// `<epoch>-<round>-<n>`: the action id of action `n` of `round`.
fn action_id(epoch: &str, round: u64, n: u32) -> ActionId {
    ActionId(format!("{epoch}-{round}-{n}"))
}

/// The (round, number) of an action id issued by the instance `epoch`
/// (`None` for any other id).
pub(super) fn parse_action_id(epoch: &str, id: &ActionId) -> Option<(u64, u32)> {
    let rest = id.0.strip_prefix(epoch)?.strip_prefix('-')?;
    let (round, n) = rest.split_once('-')?;
    Some((round.parse().ok()?, n.parse().ok()?))
}

impl Pending {
    /// The wire form of the pending actions, in plan order.
    pub(super) fn render(&self, epoch: &str) -> Vec<WireAction> {
        let Some(plan) = &self.plan else {
            return Vec::new();
        };
        self.actions
            .iter()
            .filter_map(|l| l.render(epoch, self.round, plan))
            .collect()
    }
}

impl LazyAction {
    fn render(&self, epoch: &str, round: u64, plan: &Plan) -> Option<WireAction> {
        let c = self.report.components.get(self.comp as usize)?;
        let container_id = c.container_id.clone();
        let (action, explanation) = match plan.actions.get(self.action as usize)? {
            Action::Resize {
                from,
                to,
                explanation,
                ..
            } => (
                ActionKind::Resize {
                    container_id,
                    from: *from,
                    to: *to,
                },
                explanation,
            ),
            Action::EvictComponent { explanation, .. } => (
                ActionKind::Evict {
                    container_id,
                    whole_app: false,
                },
                explanation,
            ),
            Action::EvictApplication { explanation, .. } => (
                ActionKind::Evict {
                    container_id,
                    whole_app: true,
                },
                explanation,
            ),
        };
        Some(WireAction {
            id: action_id(epoch, round, self.n),
            app: c.app.clone(),
            action,
            explanation: if self.foreign {
                explanation.withheld()
            } else {
                explanation.clone()
            },
            mentions: self.mentions.as_deref().cloned(),
        })
    }
}

/// Splits components into those that fit their host and those whose
/// request exceeds the host's capacity (left out of the view: no placement
/// can satisfy them, and planning with them would only evict others).
pub(super) fn split_over_capacity(
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

/// Splits out the components of applications that `scope` does not allow
/// (see [`crate::app_scope`]).
pub(super) fn split_out_of_scope(
    components: Vec<protocol::ComponentReport>,
    scope: &crate::app_scope::AppScope,
    rejected: &mut Vec<RejectedComponent>,
) -> Vec<protocol::ComponentReport> {
    components
        .into_iter()
        .filter(|c| {
            let ok = scope.allows(&c.app);
            if !ok {
                rejected.push(RejectedComponent {
                    container_id: c.container_id.clone(),
                    reason: format!(
                        "application {:?} is not among those this agent's credential may report ({})",
                        c.app,
                        scope.describe()
                    ),
                });
            }
            ok
        })
        .collect()
}

/// What a round leaves for the next one to fill again: its view, the
/// view's origins, the per-agent action lists of the round it replaced and
/// an action-record list no longer remembered. A shaper that plans a
/// round every few seconds keeps them (about twice the memory of one
/// round's view and actions at most) instead of handing them back to the
/// allocator and faulting them in again the next round.
#[derive(Debug, Default)]
pub struct RoundMemory {
    view: shaper::ClusterView,
    origins: Vec<Origin>,
    lists: Vec<Vec<LazyAction>>,
    /// How many lists the last round used: more are not kept.
    lists_used: usize,
    records: Vec<ActionRecord>,
}

/// The emptied lists of what a commit replaced
/// ([`super::Replaced::into_spares`]), for [`RoundMemory::keep`].
#[derive(Debug, Default)]
pub struct Spares {
    pub(super) lists: Vec<Vec<LazyAction>>,
    pub(super) records: Option<Vec<ActionRecord>>,
}

/// `v` emptied, its capacity bounded by what it held ([`shrink_spare`]).
pub(super) fn emptied<T>(mut v: Vec<T>) -> Vec<T> {
    shrink_spare(&mut v);
    v.clear();
    v
}

impl RoundMemory {
    /// Keeps `spares` for the next round's actions: as many lists as the
    /// last round used, and the records list.
    pub fn keep(&mut self, spares: Spares) {
        let room = self.lists_used.saturating_sub(self.lists.len());
        self.lists.extend(spares.lists.into_iter().take(room));
        if let Some(r) = spares.records {
            self.records = r;
        }
    }

    /// Takes back the view and its origins once the round is prepared.
    pub fn keep_view(&mut self, input: RoundInput) {
        let RoundInput {
            view, mut origins, ..
        } = input;
        shrink_spare(&mut origins);
        origins.clear();
        self.view = view;
        self.origins = origins;
    }
}

impl RoundSnapshot {
    /// Builds the cluster view (no lock needed). Stale agents' components
    /// are frozen at their last allocation (see the module docs).
    pub fn build(&self) -> RoundInput {
        self.build_reusing(&mut RoundMemory::default())
    }

    /// [`RoundSnapshot::build`] into the view and origins `memory` kept
    /// ([`RoundMemory::keep_view`]); the view is the same.
    pub fn build_reusing(&self, memory: &mut RoundMemory) -> RoundInput {
        // Keyed by the application's id (a hash of its tenant-qualified
        // key): u64 comparisons, not strings. Ids only break ties in the
        // scheduler order, so the view's application order changes nothing.
        let mut apps: ViewBuilder<AppId> =
            ViewBuilder::reusing(self.now_s, std::mem::take(&mut memory.view));
        let n_components = self.agents.iter().map(|a| a.report.components.len()).sum();
        // Dense ids: host i is the i-th agent, component k the k-th pushed
        // (its origin is `origins[k]`), so that `decide()` indexes hosts
        // directly and actions map back without hashing.
        let mut origins: Vec<Origin> = std::mem::take(&mut memory.origins);
        origins.clear();
        origins.reserve(n_components);
        // Each application's label (to catch id collisions) and the failure
        // count on record for it, looked up once per application.
        let mut app_labels: FxHashMap<AppId, (&str, u32)> = FxHashMap::default();
        let mut live_agents = Vec::new();
        let mut stale_agents = Vec::new();
        let mut collisions = 0u64;
        let mut failed_apps_seen = Vec::new();
        // Tenants numbered for the kernel ([`shaper::Application::tenant`]):
        // its rules compare an application with its own tenant's only.
        let mut tenants: FxHashMap<&str, u32> = FxHashMap::default();
        // Components another agent reported first (QA C12; found as the
        // reports arrived).
        let mut duplicates: Vec<Duplicate> = Vec::new();
        for (ai, agent) in self.agents.iter().enumerate() {
            let next_tenant = tenants.len() as u32;
            let tenant = *tenants.entry(&agent.tenant).or_insert(next_tenant);
            let name = &agent.name;
            let report = &agent.report;
            let host = HostId(ai as u64);
            let stale = agent.stale;
            if stale {
                stale_agents.push(name.to_string());
            } else {
                live_agents.push(name.clone());
            }
            apps.host(host, report.capacity);
            for (ci, (c, &aid)) in report.components.iter().zip(agent.ids.iter()).enumerate() {
                let recorded_failures = match app_labels.entry(aid) {
                    Entry::Occupied(o) if o.get().0 != c.app.as_str() => {
                        tracing::error!(app = %c.app, "application id collision: component left out");
                        collisions += 1;
                        continue;
                    }
                    Entry::Occupied(o) => o.get().1,
                    Entry::Vacant(v) => {
                        let n = self.app_failures.get(&c.app).copied().unwrap_or(0);
                        if n > 0 {
                            failed_apps_seen.push(c.app.clone());
                        }
                        v.insert((c.app.as_str(), n)).1
                    }
                };
                // Indexes fit: agents and components per report are capped
                // far below u32::MAX by the server limits.
                let id = ComponentId(origins.len() as u64);
                origins.push(Origin {
                    agent: ai as u32,
                    comp: ci as u32,
                });
                let facts = AppFacts {
                    id: aid,
                    submitted_s: c.app_submitted_s,
                    priority: c.priority,
                    failures: c.failures.max(recorded_failures),
                    expected_remaining_s: c.expected_remaining_s,
                    tenant,
                };
                let work_done_s = c.work_done_s.unwrap_or(f64::NAN);
                let first = match agent.taken.binary_search_by_key(&(ci as u32), |t| t.0) {
                    Ok(k) => Some(&agent.taken[k].1),
                    Err(_) => None,
                };
                let duplicate = first.is_some();
                if let Some(first) = first {
                    duplicates.push(Duplicate {
                        container_id: c.container_id.clone(),
                        first: first.clone(),
                        again: name.clone(),
                    });
                }
                let comp = if stale || duplicate {
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
                        // a duplicate is never shrunk nor evicted
                        protected: c.protected || duplicate,
                        work_done_s,
                        restarts_alone: c.restarts_alone,
                        mem_floor_bytes: c.mem_floor_bytes,
                        oom_floor_bytes: c.oom_floor_bytes.min(c.allocation.mem_bytes),
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
                        forecast: c.forecast.clone(),
                        protected: c.protected,
                        work_done_s,
                        restarts_alone: c.restarts_alone,
                        mem_floor_bytes: c.mem_floor_bytes,
                        oom_floor_bytes: c.oom_floor_bytes,
                    }
                };
                apps.component(aid, facts, comp, None);
            }
        }
        if let Some(d) = duplicates.first() {
            tracing::error!(
                containers = duplicates.len(),
                container = %d.container_id,
                planned_for = %d.first,
                frozen_for = %d.again,
                "containers reported by two agents (two agents on one host, or a spoofed report): the second copy is frozen"
            );
        }
        let view = apps.build();
        RoundInput {
            round: self.round,
            now_s: self.now_s,
            view,
            origins,
            agents: self.agents.clone(),
            live_agents,
            stale_agents,
            failed_apps_seen,
            collisions,
            duplicates,
        }
    }
}

impl RoundInput {
    /// The agent and container of the view's component `id`.
    pub fn origin(&self, id: ComponentId) -> Option<(&str, &str)> {
        let o = self.origins.get(usize::try_from(id.0).ok()?)?;
        let agent = self.agents.get(o.agent as usize)?;
        let c = agent.report.components.get(o.comp as usize)?;
        Some((&agent.name, &c.container_id))
    }

    /// Whether `e` is about a component of another agent than `receiver`
    /// (its index): a core component that did not fit on another node.
    fn is_foreign(&self, e: &Explanation, receiver: u32) -> bool {
        match e.reason {
            Reason::CoreDidNotFit { component } => usize::try_from(component.0)
                .ok()
                .and_then(|i| self.origins.get(i))
                .is_none_or(|o| o.agent != receiver),
            _ => false,
        }
    }

    /// Who `e` mentions, as agent `receiver` (its index) may know them:
    /// the core component that did not fit, named by its container id when
    /// it is the receiver's, and whether the host without room is the
    /// receiver's node; `None` when `e` mentions neither.
    fn mentions(&self, e: &Explanation, receiver: u32) -> Option<Box<Mentions>> {
        let core = match e.reason {
            Reason::CoreDidNotFit { component } => Some(component),
            _ => None,
        };
        if core.is_none() && e.binding.is_none() {
            return None;
        }
        let container_id = core
            .and_then(|id| self.origins.get(usize::try_from(id.0).ok()?))
            .filter(|o| o.agent == receiver)
            .and_then(|o| {
                let agent = self.agents.get(o.agent as usize)?;
                let c = agent.report.components.get(o.comp as usize)?;
                Some(c.container_id.clone())
            });
        Some(Box::new(Mentions {
            container_id,
            own_host: e
                .binding
                .as_ref()
                .is_some_and(|b| b.host == HostId(u64::from(receiver))),
        }))
    }

    /// Turns `plan` into per-agent actions with fresh numbers (no lock
    /// needed); [`super::ShaperState::commit`] installs them. Actions for
    /// stale agents are dropped (counted).
    pub fn prepare(&self, plan: Plan) -> PreparedRound {
        self.prepare_reusing(plan, &mut RoundMemory::default())
    }

    /// [`RoundInput::prepare`] into the action lists and records `memory`
    /// kept ([`RoundMemory::keep`]); the round is the same.
    pub fn prepare_reusing(&self, plan: Plan, memory: &mut RoundMemory) -> PreparedRound {
        let mut out = RoundOutcome {
            round: self.round,
            agents_live: self.live_agents.len() as u64,
            agents_stale: self.stale_agents.len() as u64,
            components: self.origins.len() as u64,
            duplicates: self.duplicates.len() as u64,
            ..RoundOutcome::default()
        };
        let mut per_agent: Vec<Vec<LazyAction>> = (0..self.agents.len())
            .map(|_| memory.lists.pop().unwrap_or_default())
            .collect();
        memory.lists_used = self.agents.len();
        let mut records: Vec<ActionRecord> = std::mem::take(&mut memory.records);
        records.reserve(plan.actions.len());
        for (ai, action) in plan.actions.iter().enumerate() {
            let (components, whole_app): (&[ComponentId], Option<bool>) = match action {
                Action::Resize { component, .. } => (std::slice::from_ref(component), None),
                Action::EvictComponent { component, .. } => {
                    (std::slice::from_ref(component), Some(false))
                }
                Action::EvictApplication { components, .. } => (components, Some(true)),
            };
            for id in components {
                let Some(o) = usize::try_from(id.0).ok().and_then(|i| self.origins.get(i)) else {
                    continue;
                };
                let Some(agent) = self.agents.get(o.agent as usize) else {
                    continue;
                };
                if agent.stale {
                    out.dropped_for_stale += 1;
                    continue;
                }
                match whole_app {
                    None => out.resize += 1,
                    Some(false) => out.evict_component += 1,
                    Some(true) => out.evict_application += 1,
                }
                let evicted_app = if action.fails_application() {
                    agent
                        .report
                        .components
                        .get(o.comp as usize)
                        .map(|c| c.app.clone())
                } else {
                    None
                };
                let n = records.len() as u32;
                records.push(ActionRecord {
                    agent: agent.name.clone(),
                    evicted_app,
                    status: ActionStatus::Pending,
                });
                let foreign = self.is_foreign(action.explanation(), o.agent);
                let mentions = if agent.report.mentions {
                    self.mentions(action.explanation(), o.agent)
                } else {
                    None
                };
                per_agent[o.agent as usize].push(LazyAction {
                    n,
                    action: ai as u32,
                    report: agent.report.clone(),
                    comp: o.comp,
                    mentions,
                    foreign,
                });
            }
        }
        // An agent without actions gives its (empty) list back at once.
        let per_agent: HashMap<Arc<str>, Vec<LazyAction>> = per_agent
            .into_iter()
            .enumerate()
            .filter_map(|(i, v)| {
                if v.is_empty() {
                    memory.lists.push(v);
                    None
                } else {
                    Some((self.agents[i].name.clone(), v))
                }
            })
            .collect();
        let mut in_round: HashSet<Arc<str>> = self.live_agents.iter().cloned().collect();
        in_round.extend(
            self.stale_agents
                .iter()
                .map(|s| Arc::<str>::from(s.as_str())),
        );
        PreparedRound {
            round: self.round,
            now_s: self.now_s,
            failed_apps_seen: self.failed_apps_seen.clone(),
            plan: Arc::new(plan),
            per_agent,
            records,
            in_round,
            outcome: out,
        }
    }
}

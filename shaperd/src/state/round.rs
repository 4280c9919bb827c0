//! Building a round's cluster view from the agents' reports and turning the
//! plan back into per-agent wire actions (both run outside the server's lock).

use super::{
    ActionRecord, ActionStatus, Origin, PreparedRound, RoundInput, RoundOutcome, RoundSnapshot,
};
use crate::protocol::{self, ActionId, ActionKind, RejectedComponent, ReportRequest, WireAction};
use shaper::{
    AppFacts, AppId, Component, ComponentAction, ComponentId, HostId, Plan, Resources, ViewBuilder,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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

//! The per-round node view the agent builds, the actions it applies, and
//! the [`PlanSource`] abstraction that turns one into the other.
//!
//! Standalone mode uses [`LocalShaper`] (runs `shaper::decide()` on this node
//! alone). Cluster mode plugs in a remote source (agent/src/cluster/) that
//! reports the [`NodeView`] to a central shaper and returns its actions.

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use shaper::{
    Action, AppId, Application, ClusterView, Component, ComponentId, Forecasts, Host, HostId, Plan,
    ShaperConfig,
};
use std::collections::BTreeMap;
use tailor_core::{Class, Resources};

/// One managed, running container as the agent sees it this round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerReport {
    /// Docker container id (full).
    pub id: String,
    pub name: String,
    /// Application name (`tailor.app`, default the container name).
    pub app: String,
    pub class: Class,
    pub priority: i32,
    pub protected: bool,
    /// When its current run started (Unix seconds).
    pub started_s: f64,
    /// What it was started with (or the label override); an unlimited
    /// resource counts as the node's capacity.
    pub request: Resources,
    /// Its current limits (unlimited = the node's capacity).
    pub allocation: Resources,
    /// Latest sample: CPU cores, memory working set bytes (raised to the
    /// OOM floor after an OOM kill).
    pub usage: Resources,
    /// `None` until the models have `min_samples` samples.
    pub forecast: Option<Forecasts>,
    /// Samples seen so far.
    pub samples: u64,
    /// OOM kills seen for this container.
    pub oom_kills: u32,
    /// Failures and preemptions of its application seen by this agent.
    pub app_failures: u32,
}

/// Everything one node reports in one round.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    /// Node name (config `node_name`, default Docker's host name).
    pub node: String,
    /// Round number (1, 2, ...) since the agent started.
    pub round: u64,
    /// When the round's samples were taken (Unix seconds).
    pub at_s: f64,
    /// Capacity available to managed containers.
    pub capacity: Resources,
    /// Running managed containers.
    pub containers: Vec<ContainerReport>,
    /// Managed containers the agent stopped and has not restarted yet, in
    /// eviction order.
    #[serde(default)]
    pub evicted: Vec<String>,
}

impl NodeView {
    /// Sum of the allocations of the running managed containers.
    pub fn allocated(&self) -> Resources {
        self.containers
            .iter()
            .fold(Resources::ZERO, |a, c| a.add(&c.allocation))
    }

    /// Sum of the current usage of the running managed containers.
    pub fn used(&self) -> Resources {
        self.containers
            .iter()
            .fold(Resources::ZERO, |a, c| a.add(&c.usage))
    }

    /// Sum of the requests of the running managed containers.
    pub fn requested(&self) -> Resources {
        self.containers
            .iter()
            .fold(Resources::ZERO, |a, c| a.add(&c.request))
    }
}

/// What to do to one container.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NodeActionKind {
    /// Set its limits to `to`.
    Resize { from: Resources, to: Resources },
    /// Stop it (grace period), remember it, restart it when room returns.
    /// `whole_app`: its whole application is evicted.
    Evict { whole_app: bool },
}

/// One action for this node, with why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeAction {
    /// Id given by a remote plan source (for acknowledgements); `None` for
    /// local plans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_id: Option<String>,
    pub container_id: String,
    pub container_name: String,
    #[serde(flatten)]
    pub kind: NodeActionKind,
    /// Human-readable explanation (the shaper's).
    pub explanation: String,
}

impl NodeAction {
    /// 0 = eviction, 1 = shrink (no resource grows), 2 = growth: the safe
    /// order to apply actions in.
    pub fn order_class(&self) -> u8 {
        match &self.kind {
            NodeActionKind::Evict { .. } => 0,
            NodeActionKind::Resize { from, to } => {
                if to.cpu_cores <= from.cpu_cores && to.mem_bytes <= from.mem_bytes {
                    1
                } else {
                    2
                }
            }
        }
    }
}

/// What happened to one action.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionOutcome {
    pub action: NodeAction,
    /// `applied`, `unchanged` (the limits, after the agent's floors and
    /// rounding, are already what the action asks: no runtime call),
    /// `failed`, `recommended` (dry run), `refused` (the agent's own guards:
    /// protected, unknown container).
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A plan for this node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodePlan {
    /// Actions in any order; the agent applies them evictions first, then
    /// shrinks, then growths.
    pub actions: Vec<NodeAction>,
    /// The shaper's full plan when it was computed locally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Where the plan came from (`local`, `cluster`, `fail-safe`, ...).
    pub source: String,
}

/// Errors of a plan source.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("plan source {source_name}: {message}")]
pub struct PlanSourceError {
    pub source_name: String,
    pub message: String,
}

/// Turns a node view into actions. Implemented by [`LocalShaper`]
/// (standalone) and by the cluster client (cluster mode).
pub trait PlanSource: Send {
    /// Short name for logs and metrics.
    fn name(&self) -> &str;

    /// The actions for this round.
    fn plan<'a>(
        &'a mut self,
        view: &'a NodeView,
    ) -> BoxFuture<'a, Result<NodePlan, PlanSourceError>>;

    /// Told what happened to the actions of the last plan (cluster mode
    /// acknowledges them). Default: nothing.
    fn outcomes<'a>(&'a mut self, _outcomes: &'a [ActionOutcome]) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// The state of the link to a remote planner at `now_s` (cluster mode);
    /// `None` for a local planner.
    fn link_status(&self, _now_s: f64) -> Option<crate::cluster::client::LinkStatus> {
        None
    }
}

/// Standalone mode: `shaper::decide()` over this node alone.
#[derive(Clone, Debug)]
pub struct LocalShaper {
    pub config: ShaperConfig,
}

impl LocalShaper {
    pub fn new(config: ShaperConfig) -> Self {
        Self { config }
    }
}

impl PlanSource for LocalShaper {
    fn name(&self) -> &str {
        "local"
    }

    fn plan<'a>(
        &'a mut self,
        view: &'a NodeView,
    ) -> BoxFuture<'a, Result<NodePlan, PlanSourceError>> {
        Box::pin(async move { Ok(plan_locally(view, &self.config)) })
    }
}

/// The shaper's cluster view of one node: host 0 = this node; applications
/// grouped by `app`, ordered by their first component's start time (FIFO
/// key), then name; component ids = positions in `view.containers`.
pub fn cluster_view(view: &NodeView) -> ClusterView {
    let mut apps: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, c) in view.containers.iter().enumerate() {
        apps.entry(c.app.as_str()).or_default().push(i);
    }
    let mut groups: Vec<(&str, Vec<usize>, f64)> = apps
        .into_iter()
        .map(|(name, idx)| {
            let first = idx
                .iter()
                .map(|&i| view.containers[i].started_s)
                .fold(f64::INFINITY, f64::min);
            (name, idx, first)
        })
        .collect();
    groups.sort_by(|a, b| a.2.total_cmp(&b.2).then_with(|| a.0.cmp(b.0)));
    let applications = groups
        .into_iter()
        .enumerate()
        .map(|(ai, (_, idx, first))| {
            let comps: Vec<Component> = idx
                .iter()
                .map(|&i| {
                    let c = &view.containers[i];
                    Component {
                        id: ComponentId(i as u64),
                        class: c.class,
                        host: HostId(0),
                        request: c.request,
                        started_s: c.started_s,
                        allocation: c.allocation,
                        usage: c.usage,
                        forecast: c.forecast,
                        protected: c.protected,
                        work_done_s: (view.at_s - c.started_s).max(0.0),
                    }
                })
                .collect();
            Application {
                id: AppId(ai as u64),
                submitted_s: if first.is_finite() { first } else { view.at_s },
                priority: idx
                    .iter()
                    .map(|&i| view.containers[i].priority)
                    .max()
                    .unwrap_or(0),
                failures: idx
                    .iter()
                    .map(|&i| view.containers[i].app_failures)
                    .max()
                    .unwrap_or(0),
                expected_remaining_s: None,
                components: comps,
            }
        })
        .collect();
    ClusterView {
        hosts: vec![Host {
            id: HostId(0),
            capacity: view.capacity,
        }],
        apps: applications,
    }
}

/// Runs the shaper on this node and maps its plan back to containers.
pub fn plan_locally(view: &NodeView, config: &ShaperConfig) -> NodePlan {
    let cv = cluster_view(view);
    let plan = shaper::decide(&cv, view.at_s, config);
    let container = |id: ComponentId| view.containers.get(id.0 as usize);
    let mut actions = Vec::new();
    for a in &plan.actions {
        match a {
            Action::Resize {
                component,
                from,
                to,
                explanation,
                ..
            } => {
                if let Some(c) = container(*component) {
                    actions.push(NodeAction {
                        action_id: None,
                        container_id: c.id.clone(),
                        container_name: c.name.clone(),
                        kind: NodeActionKind::Resize {
                            from: *from,
                            to: *to,
                        },
                        explanation: explanation.to_string(),
                    });
                }
            }
            Action::EvictComponent {
                component,
                explanation,
                ..
            } => {
                if let Some(c) = container(*component) {
                    actions.push(NodeAction {
                        action_id: None,
                        container_id: c.id.clone(),
                        container_name: c.name.clone(),
                        kind: NodeActionKind::Evict { whole_app: false },
                        explanation: explanation.to_string(),
                    });
                }
            }
            Action::EvictApplication {
                components,
                explanation,
                ..
            } => {
                for comp in components {
                    if let Some(c) = container(*comp) {
                        actions.push(NodeAction {
                            action_id: None,
                            container_id: c.id.clone(),
                            container_name: c.name.clone(),
                            kind: NodeActionKind::Evict { whole_app: true },
                            explanation: format!("application {} evicted: {explanation}", c.app),
                        });
                    }
                }
            }
        }
    }
    NodePlan {
        actions,
        plan: Some(plan),
        source: "local".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::Predictive;

    const MIB: f64 = 1024.0 * 1024.0;

    fn report(
        id: &str,
        app: &str,
        class: Class,
        started_s: f64,
        mem_use: f64,
        mem_req: f64,
    ) -> ContainerReport {
        ContainerReport {
            id: id.to_string(),
            name: id.to_string(),
            app: app.to_string(),
            class,
            priority: 0,
            protected: false,
            started_s,
            request: Resources::new(1.0, mem_req),
            allocation: Resources::new(1.0, mem_req),
            usage: Resources::new(0.1, mem_use),
            forecast: Some(Forecasts {
                cpu: Predictive::gaussian(0.1, 0.0),
                mem: Predictive::gaussian(mem_use, 0.0),
            }),
            samples: 100,
            oom_kills: 0,
            app_failures: 0,
        }
    }

    #[test]
    fn apps_grouped_in_fifo_order() {
        let view = NodeView {
            node: "n".into(),
            round: 1,
            at_s: 10_000.0,
            capacity: Resources::new(4.0, 1024.0 * MIB),
            containers: vec![
                report("b1", "b", Class::Core, 200.0, 10.0 * MIB, 100.0 * MIB),
                report("a1", "a", Class::Core, 100.0, 10.0 * MIB, 100.0 * MIB),
                report("b2", "b", Class::Elastic, 300.0, 10.0 * MIB, 100.0 * MIB),
            ],
            evicted: vec![],
        };
        let cv = cluster_view(&view);
        assert_eq!(cv.apps.len(), 2);
        assert_eq!(
            cv.apps[0].components[0].id,
            ComponentId(1),
            "app a started first"
        );
        assert_eq!(cv.apps[1].components.len(), 2);
        assert_eq!(cv.apps[1].submitted_s, 200.0);
    }

    #[test]
    fn overloaded_node_evicts_youngest_elastic_of_last_app() {
        let cfg = ShaperConfig {
            grace_period_s: 0.0,
            ..ShaperConfig::default()
        };
        let view = NodeView {
            node: "n".into(),
            round: 1,
            at_s: 10_000.0,
            capacity: Resources::new(8.0, 300.0 * MIB),
            containers: vec![
                report("a1", "a", Class::Core, 100.0, 100.0 * MIB, 200.0 * MIB),
                report("b1", "b", Class::Core, 200.0, 80.0 * MIB, 200.0 * MIB),
                report("b2", "b", Class::Elastic, 300.0, 50.0 * MIB, 200.0 * MIB),
                report("b3", "b", Class::Elastic, 400.0, 50.0 * MIB, 200.0 * MIB),
            ],
            evicted: vec![],
        };
        let plan = plan_locally(&view, &cfg);
        let evicted: Vec<&str> = plan
            .actions
            .iter()
            .filter(|a| matches!(a.kind, NodeActionKind::Evict { .. }))
            .map(|a| a.container_id.as_str())
            .collect();
        assert_eq!(evicted, vec!["b3"], "{:#?}", plan.actions);
    }

    #[test]
    fn order_classes() {
        let mk = |from: Resources, to: Resources| NodeAction {
            action_id: None,
            container_id: "x".into(),
            container_name: "x".into(),
            kind: NodeActionKind::Resize { from, to },
            explanation: String::new(),
        };
        assert_eq!(
            mk(Resources::new(1.0, 10.0), Resources::new(0.5, 5.0)).order_class(),
            1
        );
        assert_eq!(
            mk(Resources::new(1.0, 10.0), Resources::new(0.5, 20.0)).order_class(),
            2
        );
    }
}

//! One node's side of the kernel: from "these containers were sampled" to
//! "these per-container actions, in this order".
//!
//! The node agent (standalone and cluster mode) and the replay of an agent
//! recording both run a [`NodeKernel`]; they differ only in where the
//! [`ContainerSample`]s come from (a container runtime, or a file) and in
//! what happens to the resulting actions.
//!
//! ```
//! use shaper::node::{ContainerMeta, ContainerSample, NodeKernel, Sample};
//! use shaper::{Class, Decider, Resources, ShaperConfig};
//!
//! let cfg = ShaperConfig { grace_period_s: 0.0, k1: 0.05, ..ShaperConfig::uniform() };
//! let model: forecaster::config::ModelConfig =
//!     toml::from_str("kind = \"last\"\ncalibrated = false").expect("model config");
//! let mut kernel = NodeKernel::new(cfg, model, 10.0).expect("kernel");
//! let mut decider = Decider::new();
//! let gib = 1024.0 * 1024.0 * 1024.0;
//! let mut plan = None;
//! for round in 0..4 {
//!     let web = ContainerSample {
//!         meta: ContainerMeta::core("c1", "web", "web", 0.0),
//!         request: Resources::new(2.0, 2.0 * gib),
//!         allocation: Resources::new(2.0, 2.0 * gib),
//!         usage: Resources::new(0.2, 0.25 * gib),
//!         sample: Some(Sample {
//!             cpu_cores: Some(0.2),
//!             mem_bytes: 0.25 * gib,
//!             mem_peak_bytes: None,
//!         }),
//!         app_failures: 0,
//!         oom_kills: 0,
//!     };
//!     let now_s = 100.0 + 10.0 * f64::from(round);
//!     let view = kernel.observe("node-1", now_s, Resources::new(4.0, 8.0 * gib), vec![web]);
//!     plan = Some(kernel.plan(&view, &mut decider));
//! }
//! // After three samples the last-value model forecasts 0.25 GiB: the
//! // container is cut to forecast + buffer.
//! let plan = plan.expect("planned");
//! let a = &plan.actions[0];
//! match a.kind {
//!     shaper::node::NodeActionKind::Resize { to, .. } => assert!(to.mem_bytes < gib),
//!     _ => panic!("expected a resize"),
//! }
//! ```

use crate::config::ShaperConfig;
use crate::decide::Decider;
use crate::model::{AppId, AppSize, Class, ClusterView, Component, ComponentId, Forecasts, HostId};
use crate::models::{horizon_samples, ForecastSource};
use crate::node_models::{CheckpointError, ModelCheckpoint, NodeModels};
use crate::oom::OomFloor;
use crate::order::ComponentAction;
use crate::plan::Plan;
use crate::record::KernelEvent;
use crate::view::{AppFacts, ViewBuilder};
use forecaster::config::ModelConfig;
use forecaster::ForecastError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use tailor_core::Resources;

/// A new usage sample of one container.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Cores used over the last interval; `None` for the first sample of a
    /// cumulative counter (no rate yet).
    pub cpu_cores: Option<f64>,
    /// Memory in use when sampled.
    pub mem_bytes: f64,
    /// Highest memory use since the previous sample (cgroup v2
    /// `memory.peak`, or the max of sub-interval reads), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_peak_bytes: Option<f64>,
}

/// Who a container is and how it is scheduled: the same in a sample and
/// in the node's view (flattened into both on the wire).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerMeta {
    pub id: String,
    pub name: String,
    /// Application key (`tailor.app`, else the container name).
    pub app: String,
    pub class: Class,
    pub priority: i32,
    pub protected: bool,
    pub started_s: f64,
    /// Its runtime's restart policy starts it again, alone, when it dies
    /// (a recording keeps it: a replay of the node then restarts an
    /// OOM-killed container alone, where it was; `decide()` leaves its
    /// application out of the size rules: [`Component::restarts_alone`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restarts_alone: bool,
    /// Its memory reservation (`--memory-reservation`): the least memory
    /// it is planned ([`Component::mem_floor_bytes`]). 0: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mem_floor_bytes: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl ContainerMeta {
    /// A core container of application `app`, started at `started_s`,
    /// with the default scheduling: priority 0, not protected.
    pub fn core(id: &str, name: &str, app: &str, started_s: f64) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            app: app.into(),
            class: Class::Core,
            priority: 0,
            protected: false,
            started_s,
            restarts_alone: false,
            mem_floor_bytes: 0.0,
        }
    }
}

/// One running container as the caller saw it this round, before any
/// kernel rule. This is also what an agent recording stores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerSample {
    #[serde(flatten)]
    pub meta: ContainerMeta,
    /// What it asked for (labels, else the limits it was started with).
    pub request: Resources,
    /// Its limits now.
    pub allocation: Resources,
    /// Latest known usage.
    pub usage: Resources,
    /// This round's sample; `None` when none arrived (models are not fed).
    pub sample: Option<Sample>,
    /// Failures of its application known to the caller.
    pub app_failures: u32,
    /// OOM kills of this container seen so far.
    pub oom_kills: u32,
}

/// One container in a node's view: what it uses, what it may use, and the
/// kernel's forecast. Reported to the central shaper in cluster mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerReport {
    #[serde(flatten)]
    pub meta: ContainerMeta,
    pub request: Resources,
    pub allocation: Resources,
    /// Latest measured usage.
    pub usage: Resources,
    /// Its OOM floor while it holds, up to its ceiling
    /// ([`crate::OomFloor::held_bytes`]): its memory is not planned below
    /// it. 0: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub oom_floor_bytes: f64,
    pub forecast: Option<Forecasts>,
    /// Where the forecast came from (own model, prior, fallback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forecast_source: Option<ForecastSource>,
    /// Samples its models have seen.
    pub samples: u64,
    pub oom_kills: u32,
    pub app_failures: u32,
}

/// One node's view for one round.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    pub node: String,
    pub round: u64,
    pub at_s: f64,
    pub capacity: Resources,
    pub containers: Vec<ContainerReport>,
    /// Containers evicted by the agent and waiting for room (names).
    #[serde(default)]
    pub evicted: Vec<String>,
    /// Managed containers that are not running (evicted, OOM-killed,
    /// exited), with why: listed, not planned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<StoppedContainer>,
}

/// Why a managed container is not running, as its agent tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum StoppedState {
    /// Evicted by the agent to make room; `waiting_for_room`: started
    /// again when its request fits (`restart_evicted`).
    Evicted {
        waiting_for_room: bool,
    },
    /// Its last run was OOM-killed and no restart policy starts it again;
    /// `waiting_for_room` as for an eviction (killed at a limit the agent
    /// had cut below its request).
    OomKilled {
        waiting_for_room: bool,
    },
    /// Exited otherwise (stopped by hand, finished, crashed).
    Exited {
        exit_code: Option<i64>,
    },
    /// Created, never started.
    Created,
    Paused,
    /// Its restart policy is starting it again.
    Restarting,
    Dead,
}

impl std::fmt::Display for StoppedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting = |w: bool| if w { "waiting for room" } else { "stopped" };
        match self {
            StoppedState::Evicted { waiting_for_room } => {
                write!(f, "evicted, {}", waiting(*waiting_for_room))
            }
            StoppedState::OomKilled { waiting_for_room } => {
                write!(f, "oom-killed, {}", waiting(*waiting_for_room))
            }
            StoppedState::Exited {
                exit_code: Some(code),
            } => write!(f, "exited ({code})"),
            StoppedState::Exited { exit_code: None } => f.write_str("exited"),
            StoppedState::Created => f.write_str("created"),
            StoppedState::Paused => f.write_str("paused"),
            StoppedState::Restarting => f.write_str("restarting"),
            StoppedState::Dead => f.write_str("dead"),
        }
    }
}

/// A managed container that is not running ([`NodeView::stopped`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoppedContainer {
    pub id: String,
    pub name: String,
    pub app: String,
    #[serde(flatten)]
    pub state: StoppedState,
    /// What it asked for (labels, else the limits it was started with).
    pub request: Resources,
    /// Its limits now: what a `docker start` runs it at.
    pub allocation: Resources,
}

impl NodeView {
    fn sum(&self, f: impl Fn(&ContainerReport) -> Resources) -> Resources {
        self.containers
            .iter()
            .fold(Resources::ZERO, |a, c| a.add(&f(c)))
    }

    pub fn allocated(&self) -> Resources {
        self.sum(|c| c.allocation)
    }

    pub fn used(&self) -> Resources {
        self.sum(|c| c.usage)
    }

    pub fn requested(&self) -> Resources {
        self.sum(|c| c.request)
    }

    /// Each application's size on this node, by application key, as
    /// `decide()` sees it here ([`ShaperConfig::k1_for`]): its containers,
    /// their memory request, and whether all of them restart alone.
    pub fn app_sizes(&self) -> BTreeMap<&str, AppSize> {
        let mut n = BTreeMap::new();
        for c in &self.containers {
            let e = n.entry(c.meta.app.as_str()).or_insert(AppSize {
                restarts_alone: true,
                ..AppSize::default()
            });
            e.components += 1;
            e.core_components += usize::from(c.meta.class == Class::Core);
            e.mem_bytes += crate::limits::sane(c.request.mem_bytes);
            e.restarts_alone &= c.meta.restarts_alone;
        }
        n
    }
}

/// What to do to one container.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NodeActionKind {
    Resize { from: Resources, to: Resources },
    Evict { whole_app: bool },
}

impl NodeActionKind {
    /// The eviction of a whole application: a failure of it
    /// ([`crate::Action::fails_application`]).
    pub fn fails_application(&self) -> bool {
        matches!(self, NodeActionKind::Evict { whole_app: true })
    }
}

/// One action for one container, with its explanation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeAction {
    /// Set by the central shaper (acknowledged by the agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_id: Option<String>,
    pub container_id: String,
    pub container_name: String,
    #[serde(flatten)]
    pub kind: NodeActionKind,
    pub explanation: String,
}

/// A node's actions, in the kernel's apply order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodePlan {
    pub actions: Vec<NodeAction>,
    /// The plan with full explanations, when computed locally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Where the plan came from (`local`, `cluster`, ...).
    pub source: String,
}

/// The node kernel: per-container models and OOM floors.
pub struct NodeKernel {
    cfg: ShaperConfig,
    horizon: usize,
    models: NodeModels,
    floors: HashMap<String, OomFloor>,
}

impl std::fmt::Debug for NodeKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeKernel")
            .field("horizon", &self.horizon)
            .field("containers", &self.models.len())
            .finish()
    }
}

impl NodeKernel {
    /// A kernel for a node sampled every `interval_s` (one sample a round).
    /// Fails when the model config cannot build a model.
    pub fn new(
        cfg: ShaperConfig,
        model: ModelConfig,
        interval_s: f64,
    ) -> Result<Self, ForecastError> {
        model.build()?;
        Ok(Self {
            horizon: horizon_samples(&cfg, interval_s, interval_s),
            models: NodeModels::new(model, &cfg, interval_s),
            cfg,
            floors: HashMap::new(),
        })
    }

    pub fn config(&self) -> &ShaperConfig {
        &self.cfg
    }

    /// Records an OOM kill of container `id` at memory limit `limit_bytes`
    /// (its request: the one its models last saw). Returns the memory it
    /// holds: the floor up to the request's ceiling
    /// ([`OomFloor::mem_bytes_for`]; the floor itself when the request is
    /// not known yet).
    pub fn oom_kill(&mut self, id: &str, limit_bytes: f64, now_s: f64) -> f64 {
        let request = self.models.request_of(id).map_or(0.0, |r| r.mem_bytes);
        let f = OomFloor::after_kill(limit_bytes, request, now_s, &self.cfg);
        self.floors.insert(id.to_string(), f);
        self.models
            .oom_kill(id, limit_bytes, f.mem_bytes, now_s, &self.cfg);
        if request > 0.0 {
            f.mem_bytes_for(request)
        } else {
            f.mem_bytes
        }
    }

    /// The memory container `id`, of memory request `request_bytes`, is
    /// held at by an OOM floor at `now_s` ([`OomFloor::held_bytes`]; 0
    /// without one): what it needs on top of its request to be started
    /// again.
    pub fn oom_floor_bytes(&self, id: &str, now_s: f64, request_bytes: f64) -> f64 {
        self.floors
            .get(id)
            .map_or(0.0, |f| f.held_bytes(now_s, request_bytes))
    }

    /// Forgets a container that is gone (its history stays under its name
    /// for a successor).
    pub fn forget(&mut self, id: &str) {
        self.models.forget(id);
        self.floors.remove(id);
    }

    /// The containers' model histories, priors and OOM floors that still
    /// hold, for the state directory.
    pub fn checkpoint(&self, now_s: f64) -> ModelCheckpoint {
        let mut ck = self.models.checkpoint(now_s);
        for e in &mut ck.containers {
            e.oom_floor = self.floors.get(&e.id).filter(|f| f.active(now_s)).copied();
        }
        ck
    }

    /// Restores a [`NodeKernel::checkpoint`]; returns the containers it
    /// holds. A floor that is not a sane one is dropped.
    pub fn restore(&mut self, ck: ModelCheckpoint) -> Result<usize, CheckpointError> {
        let floors: Vec<(String, OomFloor)> = ck
            .containers
            .iter()
            .filter_map(|e| Some((e.id.clone(), e.oom_floor?)))
            .filter(|(_, f)| f.is_sane())
            .collect();
        let n = self.models.restore(ck, &self.cfg)?;
        self.floors.extend(floors);
        Ok(n)
    }

    /// Applies one event (what a recording stores of the calls above).
    pub fn apply(&mut self, event: &KernelEvent) {
        match event {
            KernelEvent::OomKill {
                container_id,
                limit_bytes,
                at_s,
            } => {
                self.oom_kill(container_id, *limit_bytes, *at_s);
            }
            KernelEvent::Forget { container_id } => self.forget(container_id),
        }
    }

    /// Feeds this round's samples to the containers' models and returns
    /// the node's view: forecasts (absolute units), OOM floors applied.
    /// Containers are listed in the order given.
    pub fn observe(
        &mut self,
        node: &str,
        now_s: f64,
        capacity: Resources,
        containers: Vec<ContainerSample>,
    ) -> NodeView {
        let mut reports = Vec::with_capacity(containers.len());
        self.models.begin_round(&self.cfg);
        for c in containers {
            let f = self.models.observe(&c, now_s, self.horizon, &self.cfg);
            let oom_floor_bytes = self.oom_floor_bytes(&c.meta.id, now_s, c.request.mem_bytes);
            reports.push(ContainerReport {
                meta: c.meta,
                request: c.request,
                allocation: c.allocation,
                usage: c.usage,
                oom_floor_bytes,
                forecast_source: f.as_ref().map(|f| f.source),
                samples: f.as_ref().map_or(0, |f| f.samples),
                forecast: f.and_then(|f| f.forecast),
                oom_kills: c.oom_kills,
                app_failures: c.app_failures,
            });
        }
        NodeView {
            node: node.to_string(),
            round: 0,
            at_s: now_s,
            capacity,
            containers: reports,
            evicted: Vec::new(),
            stopped: Vec::new(),
        }
    }

    /// The node's plan: `decide()` over its view, as per-container actions
    /// in the apply order.
    pub fn plan(&self, view: &NodeView, decider: &mut Decider) -> NodePlan {
        plan_node(view, &self.cfg, decider)
    }
}

/// A node's view as the cluster view `decide()` reads: one host, one
/// application per application key (ids in key order), one component per
/// container (id = its position in the view).
pub fn node_cluster_view(view: &NodeView) -> ClusterView {
    let names: BTreeSet<&str> = view
        .containers
        .iter()
        .map(|c| c.meta.app.as_str())
        .collect();
    let app_ids: BTreeMap<&str, AppId> = names
        .into_iter()
        .enumerate()
        .map(|(i, n)| (n, AppId(i as u64)))
        .collect();
    let mut b = ViewBuilder::new(view.at_s);
    b.host(HostId(0), view.capacity);
    for (i, c) in view.containers.iter().enumerate() {
        let facts = AppFacts {
            tenant: 0,
            id: app_ids[c.meta.app.as_str()],
            submitted_s: None,
            priority: c.meta.priority,
            failures: c.app_failures,
            expected_remaining_s: None,
        };
        b.component(
            c.meta.app.as_str(),
            facts,
            Component {
                id: ComponentId(i as u64),
                class: c.meta.class,
                host: HostId(0),
                request: c.request,
                started_s: c.meta.started_s,
                allocation: c.allocation,
                usage: c.usage,
                forecast: c.forecast.clone(),
                protected: c.meta.protected,
                work_done_s: f64::NAN,
                restarts_alone: c.meta.restarts_alone,
                mem_floor_bytes: c.meta.mem_floor_bytes,
                oom_floor_bytes: c.oom_floor_bytes,
            },
            None,
        );
    }
    b.build()
}

/// `decide()` over a node's view, as per-container actions in the apply
/// order (application evictions become one action per container).
pub fn plan_node(view: &NodeView, cfg: &ShaperConfig, decider: &mut Decider) -> NodePlan {
    let cv = node_cluster_view(view);
    let plan = decider.decide(&cv, view.at_s, cfg);
    let mut actions = Vec::with_capacity(plan.actions.len());
    // explanations name the node's containers and the node, not their
    // indices in the view
    let container = |c: ComponentId| {
        view.containers
            .get(c.0 as usize)
            .map_or_else(|| c.0.to_string(), |c| c.meta.name.clone())
    };
    let node = |_: HostId| view.node.clone();
    for a in plan.component_actions() {
        let Some(c) = view.containers.get(a.component().0 as usize) else {
            continue;
        };
        let (kind, explanation) = match a {
            ComponentAction::Resize {
                from,
                to,
                explanation,
                ..
            } => (
                NodeActionKind::Resize { from, to },
                explanation.named(&container, &node).to_string(),
            ),
            ComponentAction::Evict {
                whole_app,
                explanation,
                ..
            } => (
                NodeActionKind::Evict { whole_app },
                if whole_app {
                    format!(
                        "application {} evicted: {}",
                        c.meta.app,
                        explanation.named(&container, &node)
                    )
                } else {
                    explanation.named(&container, &node).to_string()
                },
            ),
        };
        actions.push(NodeAction {
            action_id: None,
            container_id: c.meta.id.clone(),
            container_name: c.meta.name.clone(),
            kind,
            explanation,
        });
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
    use crate::config::MemShortfall;
    use crate::model::Predictive;

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
            meta: ContainerMeta {
                class,
                ..ContainerMeta::core(id, id, app, started_s)
            },
            request: Resources::new(1.0, mem_req),
            allocation: Resources::new(1.0, mem_req),
            usage: Resources::new(0.1, mem_use),
            oom_floor_bytes: 0.0,
            forecast: Some(Forecasts {
                cpu: Predictive::gaussian(0.1, 0.0),
                mem: Predictive::gaussian(mem_use, 0.0),
                mem_hold_bytes: 0.0,
                mem_small_hold_bytes: 0.0,
            }),
            forecast_source: None,
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
            stopped: vec![],
        };
        let cv = node_cluster_view(&view);
        assert_eq!(cv.apps.len(), 2);
        assert_eq!(
            cv.apps[0].components[0].id,
            ComponentId(1),
            "app a started first"
        );
        assert_eq!(cv.apps[1].components.len(), 2);
        assert_eq!(cv.apps[1].submitted_s, 200.0);
    }

    /// Node `node` of 8 cores and `mem_bytes` at round 1, t = 10,000 s.
    fn view_of(node: &str, mem_bytes: f64, containers: Vec<ContainerReport>) -> NodeView {
        NodeView {
            node: node.into(),
            round: 1,
            at_s: 10_000.0,
            capacity: Resources::new(8.0, mem_bytes),
            containers,
            evicted: vec![],
            stopped: vec![],
        }
    }

    #[test]
    fn overloaded_node_evicts_youngest_elastic_of_last_app() {
        for mem_shortfall in [MemShortfall::Buffer, MemShortfall::Evict] {
            overloaded_node_evicts(mem_shortfall);
        }
    }

    /// The usage (280 MiB) does not fit the node's 260 MiB, so under
    /// either memory shortfall rule the youngest elastic component of the
    /// last application goes first, and that is enough.
    fn overloaded_node_evicts(mem_shortfall: MemShortfall) {
        let cfg = ShaperConfig {
            grace_period_s: 0.0,
            k1: 0.05,
            mem_shortfall,
            ..ShaperConfig::uniform()
        };
        let view = view_of(
            "n",
            260.0 * MIB,
            vec![
                report("a1", "a", Class::Core, 100.0, 100.0 * MIB, 200.0 * MIB),
                report("b1", "b", Class::Core, 200.0, 80.0 * MIB, 200.0 * MIB),
                report("b2", "b", Class::Elastic, 300.0, 50.0 * MIB, 200.0 * MIB),
                report("b3", "b", Class::Elastic, 400.0, 50.0 * MIB, 200.0 * MIB),
            ],
        );
        let plan = plan_node(&view, &cfg, &mut Decider::new());
        let evicted: Vec<&str> = plan
            .actions
            .iter()
            .filter(|a| matches!(a.kind, NodeActionKind::Evict { .. }))
            .map(|a| a.container_id.as_str())
            .collect();
        assert_eq!(
            evicted,
            vec!["b3"],
            "{}: {:#?}",
            mem_shortfall.as_str(),
            plan.actions
        );
    }

    /// An application evicted because its core component did not fit is
    /// explained with the container's and the node's names.
    #[test]
    fn explanations_name_the_containers_and_the_node() {
        let cfg = ShaperConfig {
            grace_period_s: 0.0,
            ..ShaperConfig::uniform()
        };
        let view = view_of(
            "node-a",
            150.0 * MIB,
            vec![
                report("web", "a", Class::Core, 100.0, 100.0 * MIB, 200.0 * MIB),
                report("db", "b", Class::Core, 200.0, 80.0 * MIB, 200.0 * MIB),
            ],
        );
        let plan = plan_node(&view, &cfg, &mut Decider::new());
        let evict = plan
            .actions
            .iter()
            .find(|a| matches!(a.kind, NodeActionKind::Evict { whole_app: true }))
            .expect("an application evicted");
        assert_eq!(evict.container_name, "db");
        assert!(
            evict.explanation.starts_with(
                "application b evicted: core component db did not fit on host node-a mem"
            ),
            "{}",
            evict.explanation
        );
    }
}

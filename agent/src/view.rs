//! The [`PlanSource`] abstraction that turns a node's view into actions,
//! and the outcome of each action.
//!
//! Standalone mode uses [`LocalShaper`] (the kernel's `plan_node` on this
//! node alone). Cluster mode plugs in a remote source (agent/src/cluster/, talking to the `shaperd` crate)
//! that reports the [`NodeView`] to a central shaper and returns its
//! actions. The view and action types are the kernel's
//! (`shaper::node`), so that a recorded run replays through the same code.

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
pub use shaper::node::{
    ContainerMeta, ContainerReport, ContainerSample, NodeAction, NodeActionKind, NodePlan,
    NodeView, Sample, StoppedContainer, StoppedState,
};
use shaper::{Decider, ShaperConfig};

/// What became of one action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Carried out.
    Applied,
    /// `recommend` mode: recorded, not carried out.
    Recommended,
    /// Already in force after the runtime's rounding: nothing to do.
    Unchanged,
    /// Not allowed (protected, not managed, not running, invalid).
    Refused,
    /// The runtime call failed.
    Failed,
}

impl Outcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Recommended => "recommended",
            Outcome::Unchanged => "unchanged",
            Outcome::Refused => "refused",
            Outcome::Failed => "failed",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One action and what became of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionOutcome {
    pub action: NodeAction,
    pub result: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

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

    /// The actions for this round; `early`: the memory watch runs it
    /// before its time (a cluster's shaper then plans a round at once).
    fn plan<'a>(
        &'a mut self,
        view: &'a NodeView,
        early: bool,
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
#[derive(Debug)]
pub struct LocalShaper {
    pub config: ShaperConfig,
    decider: Decider,
}

impl LocalShaper {
    pub fn new(config: ShaperConfig) -> Self {
        Self {
            config,
            decider: Decider::new(),
        }
    }
}

impl PlanSource for LocalShaper {
    fn name(&self) -> &str {
        "local"
    }

    fn plan<'a>(
        &'a mut self,
        view: &'a NodeView,
        _early: bool,
    ) -> BoxFuture<'a, Result<NodePlan, PlanSourceError>> {
        Box::pin(async move {
            Ok(shaper::node::plan_node(
                view,
                &self.config,
                &mut self.decider,
            ))
        })
    }
}

//! Cluster mode's [`PlanSource`]: the agent loop hands it each round's
//! [`NodeView`]; it reports the node to the central shaper and returns the
//! shaper's actions for this node, or the fail-safe plan when the shaper
//! cannot be reached.
//!
//! Application names: a container without a `tailor.app` label is its own
//! application named after the container (see `labels.rs`). Container names
//! are only unique per host, so such an application (app name = container
//! name, shared with no other container of the node) is reported as
//! `<agent id>/<name>`: two unrelated `redis` containers on two nodes must
//! not become one application spanning both.

use super::client::{ClusterSession, LocalActionKind, RoundSource};
use super::config::ClusterClientConfig;
use super::protocol::{ActionId, ComponentReport};
use super::ClusterError;
use crate::view::{
    ActionOutcome, NodeAction, NodeActionKind, NodePlan, NodeView, Outcome, PlanSource,
    PlanSourceError,
};
use futures_util::future::BoxFuture;
use std::collections::HashMap;

/// [`PlanSource`] backed by a central shaper.
#[derive(Debug)]
pub struct ClusterPlanSource {
    session: ClusterSession,
}

impl ClusterPlanSource {
    /// Reads the token file, builds the client; `now_s` starts the fail-safe
    /// clock (Unix seconds, the agent's clock).
    pub fn new(cfg: &ClusterClientConfig, now_s: f64) -> Result<Self, ClusterError> {
        Ok(Self {
            session: ClusterSession::new(cfg, now_s)?,
        })
    }

    pub fn from_session(session: ClusterSession) -> Self {
        Self { session }
    }

    pub fn session(&self) -> &ClusterSession {
        &self.session
    }
}

/// The components of a node view as reported to the shaper.
pub fn component_reports(agent_id: &str, view: &NodeView) -> Vec<ComponentReport> {
    let mut per_app: HashMap<&str, usize> = HashMap::new();
    for c in &view.containers {
        *per_app.entry(c.meta.app.as_str()).or_insert(0) += 1;
    }
    view.containers
        .iter()
        .map(|c| {
            let node_local = c.meta.app == c.meta.name
                && per_app.get(c.meta.app.as_str()).copied().unwrap_or(0) <= 1;
            ComponentReport {
                container_id: c.meta.id.clone(),
                app: if node_local {
                    format!("{agent_id}/{}", c.meta.name)
                } else {
                    c.meta.app.clone()
                },
                class: c.meta.class,
                priority: c.meta.priority,
                protected: c.meta.protected,
                request: c.request,
                allocation: c.allocation,
                usage: c.usage,
                forecast: c.forecast.clone(),
                started_s: c.meta.started_s,
                work_done_s: None,
                app_submitted_s: None,
                failures: c.app_failures,
                expected_remaining_s: None,
                restarts_alone: c.meta.restarts_alone,
                mem_floor_bytes: c.meta.mem_floor_bytes,
                oom_floor_bytes: c.oom_floor_bytes,
            }
        })
        .collect()
}

impl PlanSource for ClusterPlanSource {
    fn name(&self) -> &str {
        "cluster"
    }

    fn plan<'a>(
        &'a mut self,
        view: &'a NodeView,
        early: bool,
    ) -> BoxFuture<'a, Result<NodePlan, PlanSourceError>> {
        Box::pin(async move {
            let comps = component_reports(self.session.agent_id(), view);
            let names: HashMap<&str, &str> = view
                .containers
                .iter()
                .map(|c| (c.meta.id.as_str(), c.meta.name.as_str()))
                .collect();
            let name_of = |id: &str| names.get(id).map(|n| n.to_string());
            let decision = self
                .session
                .round(view.capacity, &comps, &name_of, view.at_s, early)
                .await;
            let actions = decision
                .actions
                .into_iter()
                .map(|a| NodeAction {
                    action_id: a.id.map(|id| id.0),
                    container_name: names
                        .get(a.container_id.as_str())
                        .map(|s| s.to_string())
                        .unwrap_or_default(),
                    container_id: a.container_id,
                    kind: match a.kind {
                        LocalActionKind::Resize { from, to } => NodeActionKind::Resize { from, to },
                        LocalActionKind::Evict { whole_app } => NodeActionKind::Evict { whole_app },
                    },
                    explanation: a.reason,
                })
                .collect();
            let source = match decision.source {
                RoundSource::Shaper { round } => format!("cluster (round {round})"),
                RoundSource::FailSafe { link, error } => {
                    format!("fail-safe ({}: {error})", link.as_str())
                }
            };
            Ok(NodePlan {
                actions,
                plan: None,
                source,
            })
        })
    }

    fn link_status(&self, now_s: f64) -> Option<super::client::LinkStatus> {
        Some(self.session.link_status(now_s))
    }

    fn outcomes<'a>(&'a mut self, outcomes: &'a [ActionOutcome]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut any = false;
            for o in outcomes {
                let Some(id) = &o.action.action_id else {
                    continue;
                };
                let result = match o.result {
                    Outcome::Applied | Outcome::Unchanged => Ok(()),
                    other => Err(match &o.error {
                        Some(e) => format!("{other}: {e}"),
                        None => other.to_string(),
                    }),
                };
                self.session.record_outcome(&ActionId(id.clone()), result);
                any = true;
            }
            if any {
                let now_s = tailor_core::Clock::now_s(&tailor_core::SystemClock);
                if let Err(e) = self.session.flush_acks(now_s).await {
                    tracing::debug!(error = %e, "acks not delivered now; they go with the next report");
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{ContainerMeta, ContainerReport};
    use shaper::Resources;

    fn c(id: &str, name: &str, app: &str) -> ContainerReport {
        ContainerReport {
            meta: ContainerMeta::core(id, name, app, 1.0),
            request: Resources::new(1.0, 1.0),
            allocation: Resources::new(1.0, 1.0),
            usage: Resources::new(0.5, 0.5),
            oom_floor_bytes: 0.0,
            forecast: None,
            forecast_source: None,
            samples: 0,
            oom_kills: 0,
            app_failures: 2,
        }
    }

    #[test]
    fn unlabelled_apps_are_scoped_to_the_node() {
        let view = NodeView {
            node: "n1".into(),
            containers: vec![
                c("1", "redis", "redis"),
                c("2", "web-a", "web"),
                c("3", "web", "web"),
            ],
            ..NodeView::default()
        };
        let r = component_reports("n1", &view);
        assert_eq!(r[0].app, "n1/redis");
        assert_eq!(
            r[1].app, "web",
            "labelled app shared by several containers stays global"
        );
        assert_eq!(r[2].app, "web");
        assert_eq!(r[0].failures, 2);
        assert_eq!(r[0].container_id, "1");
    }
}

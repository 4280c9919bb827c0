//! [`ClusterSession`]: what the agent loop drives once per interval. It
//! reports the node through a [`ClusterClient`], returns the shaper's
//! actions that were not applied yet (by id: at most once each), queues
//! acknowledgements for the next report, and when the shaper cannot be
//! reached applies the [`FailSafe`] policy: no shrink, no eviction, and
//! after `hold_s` gradual regrowth towards requests.
//!
//! ```text
//! let decision = session.round(capacity, &components, &name_of, now_s, false).await;
//! for a in &decision.actions {
//!     let result = apply(a);                     // Docker update / stop
//!     if let Some(id) = &a.id { session.record_outcome(id, result); }
//! }
//! session.flush_acks(now_s).await;               // optional: ack at once
//! ```

use super::client::{failure_text, ClusterClient, APPLIED_LOG_LEN, MAX_QUEUED_ACKS};
use super::config::ClusterClientConfig;
use super::failsafe::{FailSafe, LinkState};
use super::protocol::{Ack, AckOutcome, AckResponse, ActionId, ActionKind, ComponentReport};
use super::ClusterError;
use serde::{Deserialize, Serialize};
use shaper::Resources;
use std::collections::{HashMap, VecDeque};

/// What to do to one local container.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalAction {
    /// The shaper's id (acknowledge it with [`ClusterSession::record_outcome`]);
    /// `None` for fail-safe regrowth decided locally.
    pub id: Option<ActionId>,
    pub container_id: String,
    pub kind: LocalActionKind,
    /// Human-readable reason.
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LocalActionKind {
    Resize {
        from: Resources,
        to: Resources,
    },
    /// Stop the container; `whole_app`: its application is preempted.
    Evict {
        whole_app: bool,
    },
}

/// Who decided a round's actions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum RoundSource {
    /// The central shaper, round number `round`.
    Shaper { round: u64 },
    /// The local fail-safe policy (the shaper could not be reached).
    FailSafe { link: LinkState, error: String },
}

/// One round's outcome for the agent loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundDecision {
    pub source: RoundSource,
    /// In the order to apply them.
    pub actions: Vec<LocalAction>,
}

/// Client + fail-safe + at-most-once bookkeeping for one agent.
#[derive(Debug)]
pub struct ClusterSession {
    client: ClusterClient,
    failsafe: FailSafe,
    /// Outcomes of actions already applied (or failed), by id.
    done: HashMap<ActionId, AckOutcome>,
    done_order: VecDeque<ActionId>,
    /// Acks not yet delivered to the shaper.
    queued: Vec<Ack>,
    link: LinkCounters,
}

#[derive(Clone, Debug, Default)]
struct LinkCounters {
    last_ok_s: Option<f64>,
    failures: u64,
    /// Failed exchanges since the last answer.
    failing: u64,
    last_error: Option<String>,
    rejected_components: u64,
}

/// The state of an agent's link to the shaper (its `/metrics` and
/// `/healthz`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkStatus {
    pub state: LinkState,
    /// Unix seconds of the last successful report, `None` before the first.
    pub last_ok_s: Option<f64>,
    /// Failed reports since start.
    pub failures: u64,
    /// Why the last report failed, while failing.
    pub last_error: Option<String>,
    /// Components the shaper refused in the last report.
    pub rejected_components: u64,
}

impl ClusterSession {
    pub fn new(cfg: &ClusterClientConfig, now_s: f64) -> Result<Self, ClusterError> {
        let client = ClusterClient::new(cfg)?;
        Ok(Self::with_client(
            client,
            FailSafe::new(cfg.fail_safe.clone(), now_s),
        ))
    }

    pub fn with_client(client: ClusterClient, failsafe: FailSafe) -> Self {
        Self {
            client,
            failsafe,
            done: HashMap::new(),
            done_order: VecDeque::new(),
            queued: Vec::new(),
            link: LinkCounters::default(),
        }
    }

    /// The link's state at `now_s`, for metrics and `/healthz`.
    pub fn link_status(&self, now_s: f64) -> LinkStatus {
        LinkStatus {
            state: self.failsafe.state(now_s),
            last_ok_s: self.link.last_ok_s,
            failures: self.link.failures,
            last_error: self.link.last_error.clone(),
            rejected_components: self.link.rejected_components,
        }
    }

    pub fn agent_id(&self) -> &str {
        self.client.agent_id()
    }

    pub fn link_state(&self, now_s: f64) -> LinkState {
        self.failsafe.state(now_s)
    }

    /// Acks waiting for the next report.
    pub fn queued_acks(&self) -> usize {
        self.queued.len()
    }

    /// Reports the node and returns what to do this round; the reasons
    /// name containers by `name_of` (container id -> name) where it knows
    /// them, and this node by its agent id. `early`: the memory watch runs
    /// this round before its time, and the shaper plans one at once
    /// ([`protocol::ReportRequest::early`]).
    pub async fn round(
        &mut self,
        capacity: Resources,
        components: &[ComponentReport],
        name_of: &(dyn Fn(&str) -> Option<String> + Sync),
        now_s: f64,
        early: bool,
    ) -> RoundDecision {
        let acks = std::mem::take(&mut self.queued);
        match self.client.report(capacity, components, &acks, early).await {
            Ok(resp) => {
                self.link_ok(now_s);
                self.link.last_ok_s = Some(now_s);
                self.link.last_error = None;
                self.link.rejected_components = resp.rejected.len() as u64;
                for r in &resp.rejected {
                    tracing::warn!(container = %r.container_id, reason = %r.reason, "the shaper refused to plan for this container");
                }
                let mut actions = Vec::with_capacity(resp.actions.len());
                for w in resp.actions {
                    if let Some(outcome) = self.done.get(&w.id) {
                        // Applied before but the ack did not arrive (or is in
                        // flight): do not apply again, ack again.
                        self.queued.push(Ack {
                            action_id: w.id.clone(),
                            outcome: outcome.clone(),
                        });
                        continue;
                    }
                    let reason = w.summary_named(name_of, self.client.agent_id());
                    let (container_id, kind) = match w.action {
                        ActionKind::Resize {
                            container_id,
                            from,
                            to,
                        } => (container_id, LocalActionKind::Resize { from, to }),
                        ActionKind::Evict {
                            container_id,
                            whole_app,
                        } => (container_id, LocalActionKind::Evict { whole_app }),
                    };
                    actions.push(LocalAction {
                        id: Some(w.id),
                        container_id,
                        kind,
                        reason,
                    });
                }
                RoundDecision {
                    source: RoundSource::Shaper { round: resp.round },
                    actions,
                }
            }
            Err(e) => {
                // Keep the acks for the next attempt (bounded).
                let mut acks = acks;
                acks.append(&mut self.queued);
                if acks.len() > MAX_QUEUED_ACKS {
                    acks.drain(..acks.len() - MAX_QUEUED_ACKS);
                }
                self.queued = acks;
                self.failsafe.on_failure(now_s);
                self.link.failures += 1;
                self.link.failing += 1;
                let error = failure_text(&e);
                self.link.last_error = Some(error.clone());
                let link = self.failsafe.state(now_s);
                match &e {
                    ClusterError::Rejected {
                        status: 401 | 403, ..
                    } => {
                        let token_file = self.client.token_file().map(|p| p.display().to_string());
                        tracing::warn!(
                            error = %error,
                            token_file = token_file.as_deref().unwrap_or(""),
                            state = link.as_str(),
                            "shaper refused our credentials: fail-safe"
                        );
                    }
                    ClusterError::Rejected { status, .. } if *status < 500 => {
                        tracing::warn!(error = %error, state = link.as_str(), "shaper refused the report: fail-safe");
                    }
                    _ => {
                        tracing::warn!(error = %error, state = link.as_str(), "shaper unreachable: fail-safe");
                    }
                }
                let actions = self.fail_safe_actions(components, now_s);
                RoundDecision {
                    source: RoundSource::FailSafe { link, error },
                    actions,
                }
            }
        }
    }

    /// The shaper answered at `now_s`: the link is connected again. The
    /// first answer after a failure is logged once, at info (the failures
    /// were warned of; QA C14: the last line used to stay "shaper
    /// unreachable" after the link was back).
    fn link_ok(&mut self, now_s: f64) {
        if let LinkState::Holding { since_s } | LinkState::Regrowing { since_s } =
            self.failsafe.state(now_s)
        {
            let down_s = ((now_s - since_s) * 10.0).round() / 10.0;
            tracing::info!(
                shaper = %self.client.current_url(),
                down_s,
                failed_reports = self.link.failing,
                "shaper link back: the shaper plans again"
            );
        }
        self.failsafe.on_success(now_s);
        self.link.failing = 0;
    }

    /// Fail-safe regrowth for `components` at `now_s` (empty unless the
    /// link is in the regrowing state).
    pub fn fail_safe_actions(
        &self,
        components: &[ComponentReport],
        now_s: f64,
    ) -> Vec<LocalAction> {
        components
            .iter()
            .filter_map(|c| {
                self.failsafe.regrow(now_s, &c.allocation, &c.request).map(|to| LocalAction {
                    id: None,
                    container_id: c.container_id.clone(),
                    kind: LocalActionKind::Resize { from: c.allocation, to },
                    reason: format!(
                        "fail-safe: shaper unreachable for more than {} s, growing back towards the request",
                        self.failsafe.config().hold_s
                    ),
                })
            })
            .collect()
    }

    /// Records the outcome of an action returned by [`ClusterSession::round`];
    /// the ack goes with the next report (or [`ClusterSession::flush_acks`]).
    pub fn record_outcome(&mut self, id: &ActionId, result: Result<(), String>) {
        let outcome = match result {
            Ok(()) => AckOutcome::Applied,
            Err(error) => {
                let mut error = error;
                if error.len() > super::protocol::MAX_ERROR_LEN {
                    let mut cut = super::protocol::MAX_ERROR_LEN;
                    while !error.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    error.truncate(cut);
                }
                AckOutcome::Failed { error }
            }
        };
        if self.done.insert(id.clone(), outcome.clone()).is_none() {
            self.done_order.push_back(id.clone());
            if self.done_order.len() > APPLIED_LOG_LEN {
                if let Some(old) = self.done_order.pop_front() {
                    self.done.remove(&old);
                }
            }
        }
        self.queued.push(Ack {
            action_id: id.clone(),
            outcome,
        });
    }

    /// True when the action was already applied or failed here.
    pub fn is_done(&self, id: &ActionId) -> bool {
        self.done.contains_key(id)
    }

    /// Sends queued acks now (`POST /v1/ack`); on failure they stay queued.
    pub async fn flush_acks(&mut self, now_s: f64) -> Result<AckResponse, ClusterError> {
        if self.queued.is_empty() {
            return Ok(AckResponse::default());
        }
        let acks = std::mem::take(&mut self.queued);
        match self.client.ack(acks.clone()).await {
            Ok(r) => {
                self.link_ok(now_s);
                Ok(r)
            }
            Err(e) => {
                let mut acks = acks;
                acks.append(&mut self.queued);
                self.queued = acks;
                Err(e)
            }
        }
    }
}

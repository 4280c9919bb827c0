//! Wire protocol between agents and the central shaper, version 1.
//!
//! Every request carries `Authorization: Bearer <token>` (the scheme is
//! case-insensitive). Reports and acks need the agent's own credential
//! (`tailor1.<key id>.<secret>`, see `shaperd::credentials`), bound to one
//! agent id and one tenant; `/v1/status` and `/metrics` need the operator
//! token (`token_file`).
//!
//! * `POST /v1/report` — body [`ReportRequest`]: the agent's host capacity and
//!   every managed component (request, allocation, usage, forecast,
//!   application label, class, priority, protection, start time), plus the
//!   acknowledgements of actions applied since the previous report, under a
//!   per-boot monotonic `(boot_id, seq)`. Answer: [`ReportResponse`] with the
//!   actions the latest shaping round planned for this agent and that it has
//!   not acknowledged yet, and the components refused (request larger than
//!   the host).
//! * `POST /v1/ack` — body [`AckRequest`]: acknowledgements only (an agent may
//!   ack right after applying instead of waiting for its next report).
//!   Answer: [`AckResponse`].
//! * Errors: a JSON [`ErrorBody`] with status 400 (malformed or invalid),
//!   401 (missing or unknown credential), 403 (the credential belongs to
//!   another agent id), 404, 408 (request not completed in time), 409
//!   (stale or replayed report; `min_boot_id` names the boot to start
//!   from), 413 (body too large), 429 (a cap of the shaper would be
//!   exceeded). A refused request changes nothing.
//!
//! Ids: the shaper works on `u64` ids. Agents speak in names (their agent id,
//! Docker container ids, application labels). An application's id is a
//! fixed 64-bit FNV-1a hash of its key ([`app_id`]), so it is deterministic
//! and survives a server restart; hosts and components are numbered afresh
//! in each round's view (the agent's and the component's place in it), and
//! actions go back to agents by container id, never by those numbers. Applications
//! are keyed by (tenant, label): the server stores and plans a component's
//! application as `<tenant>/<label>` (tenant names contain no `/`), so the
//! same label reported by two agents of one tenant is one application
//! spanning two hosts, and never one spanning two tenants. The `app` of a
//! [`WireAction`] is that tenant-qualified key.
//!
//! Actions carry an [`ActionId`] unique across server restarts (it embeds
//! the server instance's epoch). Agents apply an action at most once per id
//! and acknowledge it; a resize sets absolute limits and an eviction of a
//! container that is already gone counts as applied, so a re-delivered
//! action is harmless. Actions go only to the agent whose report holds the
//! container.
//!
//! Compatibility within version 1: every field added since the first
//! release has a default, so a shaper accepts the reports of older agents;
//! an agent leaves an added field out while it holds its default (so far
//! [`ComponentReport::restarts_alone`] when false,
//! [`ComponentReport::mem_floor_bytes`] and
//! [`ComponentReport::oom_floor_bytes`] when 0, [`ReportRequest::mentions`]
//! and [`ReportRequest::early`] when false, and a forecast's `mem_hold_bytes` and `mem_small_hold_bytes`
//! when 0). A shaper sends an added answer field only to an agent that
//! asked for it ([`WireAction::mentions`]). Messages refuse
//! unknown fields, so an older shaper refuses a report that carries a field
//! it does not know: upgrade the shapers before the agents.
//!
//! Bodies are JSON, or MessagePack when both sides speak it: a body's
//! `Content-Type` names its encoding and an answer follows the request's
//! `Accept` ([`encoding`]). Error bodies are always JSON.
//!
//! Also here, because both sides need them: [`auth`] (bearer tokens read
//! from files whose permissions are checked) and [`ClusterError`].
//!
//! # Example
//!
//! ```
//! // Application ids are a fixed hash of tenant-qualified keys: the same
//! // on every server run, and never shared by two tenants.
//! let web = protocol::app_key("team-a", "web");
//! assert_eq!(web, "team-a/web");
//! assert_eq!(protocol::app_id(&web), protocol::app_id("team-a/web"));
//! assert_ne!(protocol::app_id(&web), protocol::app_id(&protocol::app_key("team-b", "web")));
//! ```

pub mod auth;
pub mod encoding;
mod validate;

pub use encoding::{CodecError, Encoding, Negotiated};

pub use validate::{MAX_CALIBRATION_MULTIPLIER, MAX_REPORTED_VALUE};

use serde::{Deserialize, Serialize};
use shaper::{AppId, Class, Forecasts, Resources};
use std::path::PathBuf;

/// 64-bit FNV-1a (the shaper's application ids).
pub use tailor_core::fnv1a64;

/// The protocol version served under `/v1/`.
pub const API_VERSION: u32 = 1;
/// Longest accepted agent id, container id or application label (bytes).
pub const MAX_NAME_LEN: usize = 256;
/// Longest accepted failure message in an ack (bytes).
pub const MAX_ERROR_LEN: usize = 4096;

/// `POST /v1/report`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportRequest {
    /// The agent's stable name (default: the host name); one agent = one host.
    pub agent_id: String,
    /// Identifies the agent process ("boot"): its start time in Unix
    /// milliseconds, so a later boot has a larger id.
    pub boot_id: u64,
    /// Report counter within the boot; `(boot_id, seq)` must increase from
    /// one accepted report to the next, else the report is refused (409).
    /// A new shaper leader refuses the rest of every boot it restored (the
    /// old leader may have accepted reports after its last stored round):
    /// the agent then starts a new boot (a new `boot_id`, `seq` from 1) and
    /// sends the report again.
    #[serde(default)]
    pub seq: u64,
    /// What the host can give to managed containers.
    pub capacity: Resources,
    /// Every managed, running component on the host.
    pub components: Vec<ComponentReport>,
    /// Outcomes of actions applied since the last report.
    #[serde(default)]
    pub acks: Vec<Ack>,
    /// The agent reads [`WireAction::mentions`]: the shaper fills them in
    /// the actions it answers (an older agent, which would refuse the
    /// field, leaves this out and gets none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mentions: bool,
    /// Sent before its time by the agent's memory watch (a container used
    /// half the memory headroom it had at the last round): the shaper runs
    /// a round at once (at most one per its `early_round_gap_s`) and answers
    /// with that round's actions. An agent that never sends it stays
    /// readable by older shapers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub early: bool,
}

/// One managed component (container) as its agent sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentReport {
    /// Docker container id (unique on its agent).
    pub container_id: String,
    /// Application label (`tailor.app`), global across agents.
    pub app: String,
    pub class: Class,
    /// Application priority (`tailor.priority`), larger is more important.
    #[serde(default)]
    pub priority: i32,
    /// Never shrunk nor evicted (`tailor.protected`).
    #[serde(default)]
    pub protected: bool,
    pub request: Resources,
    pub allocation: Resources,
    pub usage: Resources,
    /// `None` while the agent's models have no answer yet.
    #[serde(default)]
    pub forecast: Option<Forecasts>,
    /// Container start time, Unix seconds.
    pub started_s: f64,
    /// Work done so far in seconds; defaults to the time alive.
    #[serde(default)]
    pub work_done_s: Option<f64>,
    /// Application submission time, Unix seconds; defaults to the earliest
    /// `started_s` of the application's components.
    #[serde(default)]
    pub app_submitted_s: Option<f64>,
    /// How many times the application failed or was preempted (as far as
    /// this agent knows); the server takes the maximum with its own count.
    #[serde(default)]
    pub failures: u32,
    /// Expected remaining run time (SJF order), when known.
    #[serde(default)]
    pub expected_remaining_s: Option<f64>,
    /// Its runtime's restart policy starts it again, alone, when it dies:
    /// its OOM kill does not fail its application.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restarts_alone: bool,
    /// Its memory reservation in bytes (`--memory-reservation`): its memory
    /// is never planned below it. 0 (the default): none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mem_floor_bytes: f64,
    /// Its OOM floor in bytes while it holds (`shaper::OomFloor`): after an
    /// OOM kill its memory is not planned below it, up to its ceiling.
    /// Kept apart from `usage`, which is what was measured. 0 (the
    /// default): none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub oom_floor_bytes: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Answer to `POST /v1/report`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportResponse {
    pub api_version: u32,
    /// The shaping round the actions come from (0: no round planned yet).
    pub round: u64,
    /// The server's round interval; agents should report at this pace.
    pub interval_s: f64,
    /// Actions for this agent, in the order to apply them (evictions, then
    /// shrinks, then growths).
    pub actions: Vec<WireAction>,
    /// Components left out of the cluster view, with why (e.g. a request
    /// larger than the host's capacity).
    #[serde(default)]
    pub rejected: Vec<RejectedComponent>,
}

/// A reported component the shaper refused to plan for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejectedComponent {
    pub container_id: String,
    pub reason: String,
}

/// A unique action id: `<server epoch>-<round>-<index>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ActionId(pub String);

impl std::fmt::Display for ActionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One action for one agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireAction {
    pub id: ActionId,
    /// Application label of the component.
    pub app: String,
    pub action: ActionKind,
    /// Why (structured, from the shaper). The receiver renders it as a
    /// line with [`WireAction::summary`]: a million actions a round are not
    /// formatted by the shaper.
    pub explanation: shaper::Explanation,
    /// Who the explanation mentions (the core component that did not fit,
    /// the host without room), as the receiving agent knows them; sent only
    /// to an agent that asks ([`ReportRequest::mentions`]) and only when
    /// the explanation mentions one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mentions: Option<Mentions>,
}

/// The component and host an action's explanation mentions, for its
/// receiver: its own container and node are named; another node's
/// container and the other node itself are not (a node learns nothing of
/// the others from its actions).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mentions {
    /// The container id of the core component that did not fit, when it
    /// runs on the receiver's node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// The host without room is the receiver's node.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_host: bool,
}

impl WireAction {
    /// The action and its explanation as one human-readable line, with
    /// components and hosts as the shaper's view numbers them.
    pub fn summary(&self) -> String {
        self.summary_named(&|_| None, "")
    }

    /// [`WireAction::summary`] for the receiving agent of node `node`:
    /// containers named by `name_of` (container id -> name) where it knows
    /// them, and with [`WireAction::mentions`] the explanation's component
    /// and host named (another node's as such) instead of numbered.
    pub fn summary_named(&self, name_of: &dyn Fn(&str) -> Option<String>, node: &str) -> String {
        let named = |id: &str| name_of(id).unwrap_or_else(|| id.to_string());
        let e = &self.explanation;
        let e = match &self.mentions {
            None => e.to_string(),
            Some(m) => {
                let component = |_| {
                    m.container_id
                        .as_deref()
                        .map_or_else(|| "(another node's)".to_string(), named)
                };
                let host = |_| {
                    if m.own_host {
                        node.to_string()
                    } else {
                        "(another node)".to_string()
                    }
                };
                e.named(&component, &host).to_string()
            }
        };
        let app = &self.app;
        let container_id = named(self.action.container_id());
        match &self.action {
            ActionKind::Resize { from, to, .. } => format!(
                "resize {container_id} (app {app}): cpu {:.3} -> {:.3} cores, mem {} -> {} bytes: {e}",
                from.cpu_cores,
                to.cpu_cores,
                from.mem_bytes.round(),
                to.mem_bytes.round()
            ),
            ActionKind::Evict {
                whole_app: true, ..
            } => format!("evict {container_id}: its whole application {app} is preempted: {e}"),
            ActionKind::Evict {
                whole_app: false, ..
            } => format!("evict {container_id} (elastic component of app {app}): {e}"),
        }
    }
}

/// What to do to one container.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ActionKind {
    /// Set the container's limits to `to` (absolute, idempotent).
    Resize {
        container_id: String,
        from: Resources,
        to: Resources,
    },
    /// Stop the container. `whole_app` is true when its whole application is
    /// preempted (its other components, possibly on other hosts, go too).
    Evict {
        container_id: String,
        whole_app: bool,
    },
}

impl ActionKind {
    pub fn container_id(&self) -> &str {
        match self {
            ActionKind::Resize { container_id, .. } | ActionKind::Evict { container_id, .. } => {
                container_id
            }
        }
    }

    /// `resize`, `evict_component` or `evict_application`.
    pub fn metric_kind(&self) -> &'static str {
        match self {
            ActionKind::Resize { .. } => "resize",
            ActionKind::Evict {
                whole_app: false, ..
            } => "evict_component",
            ActionKind::Evict {
                whole_app: true, ..
            } => "evict_application",
        }
    }
}

/// `POST /v1/ack`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckRequest {
    pub agent_id: String,
    pub acks: Vec<Ack>,
}

/// The outcome of one action on its agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ack {
    pub action_id: ActionId,
    pub outcome: AckOutcome,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum AckOutcome {
    Applied,
    Failed { error: String },
}

/// Answer to `POST /v1/ack` (also counted for acks inside a report).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckResponse {
    /// Acks matched to an action issued to this agent.
    pub accepted: u64,
    /// Acks for ids the server does not know (e.g. issued before a restart,
    /// or expired): ignored.
    pub unknown: u64,
}

/// Body of every error answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Short machine-readable kind: `unauthorized`, `forbidden`,
    /// `bad_request`, `payload_too_large`, `headers_too_large`,
    /// `not_found`, `method_not_allowed`, `timeout`, `replayed`,
    /// `limit_exceeded`, `internal`.
    pub error: String,
    /// What was wrong, for a human.
    pub message: String,
    /// With a `409 replayed` report: the smallest `boot_id` the shaper
    /// accepts in this agent's next report (its last accepted boot + 1).
    /// An agent whose clock went back starts its new boot there instead of
    /// being refused until its clock catches up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_boot_id: Option<u64>,
}

/// How far ahead of the shaper's wall clock a report's `boot_id` (the
/// agent's start, Unix ms) may be: 24 h. A boot id further ahead is refused
/// (400): accepted, it would lock its agent out until that time, since
/// every later boot must have a larger id.
pub const MAX_BOOT_AHEAD_MS: u64 = 24 * 3600 * 1000;

/// The shaper's key of an application: `<tenant>/<label>`.
pub fn app_key(tenant: &str, app: &str) -> String {
    let mut k = String::with_capacity(tenant.len() + 1 + app.len());
    k.push_str(tenant);
    k.push('/');
    k.push_str(app);
    k
}

/// The shaper's id for an application key (see [`app_key`]).
pub fn app_id(app: &str) -> AppId {
    AppId(fnv1a64(&[b"app", app.as_bytes()]))
}

/// Everything that can go wrong in cluster mode (agent client and shaper
/// server alike).
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "token file {path} is readable by group or others (mode {mode:o}); run `chmod 600 {path}`"
    )]
    TokenFilePermissions { path: PathBuf, mode: u32 },
    #[error("token file {path}: {message}")]
    TokenInvalid { path: PathBuf, message: String },
    #[error("invalid configuration: {0}")]
    Config(#[from] shaper::ConfigErrors),
    #[error("cannot parse {path}: {message}")]
    ConfigParse { path: PathBuf, message: String },
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("server failed: {0}")]
    Serve(String),
    #[error("shaper unreachable: {0}")]
    Unreachable(String),
    #[error("shaper rejected the request with HTTP {status}: {message}")]
    Rejected {
        status: u16,
        message: String,
        /// [`ErrorBody::min_boot_id`] of a `409`.
        min_boot_id: Option<u64>,
    },
    #[error("cannot decode the shaper's answer: {0}")]
    Decode(String),
    #[error("HTTP client setup failed: {0}")]
    Client(String),
    #[error("credentials: {0}")]
    Credentials(String),
    #[error("credentials file {path}: {message}")]
    CredentialsFile { path: PathBuf, message: String },
    #[error("shared state (etcd): {0}")]
    Store(String),
}

/// `error` of the [`ErrorBody`] a follower shaper replica sends with its
/// `307 Temporary Redirect` (`Location`: the same path on the leader).
pub const ERROR_NOT_LEADER: &str = "not_leader";
/// `error` of the `503` a replica sends while no leader is known.
pub const ERROR_NO_LEADER: &str = "no_leader";

#[cfg(test)]
mod tests {
    use super::*;
    use shaper::Predictive;

    fn component(id: &str) -> ComponentReport {
        ComponentReport {
            container_id: id.to_string(),
            app: "web".to_string(),
            class: Class::Core,
            priority: 0,
            protected: false,
            request: Resources::new(1.0, 1e9),
            allocation: Resources::new(1.0, 1e9),
            usage: Resources::new(0.2, 2e8),
            forecast: Some(Forecasts {
                cpu: Predictive::gaussian(0.2, 0.01),
                mem: Predictive::gaussian(2e8, 1e6),
                mem_hold_bytes: 0.0,
                mem_small_hold_bytes: 0.0,
            }),
            started_s: 1000.0,
            work_done_s: None,
            app_submitted_s: None,
            failures: 0,
            expected_remaining_s: None,
            restarts_alone: false,
            mem_floor_bytes: 0.0,
            oom_floor_bytes: 0.0,
        }
    }

    fn report() -> ReportRequest {
        ReportRequest {
            agent_id: "node-1".to_string(),
            boot_id: 1,
            seq: 1,
            capacity: Resources::new(4.0, 8e9),
            components: vec![component("a"), component("b")],
            acks: vec![],
            mentions: false,
            early: false,
        }
    }

    #[test]
    fn the_summary_line_is_rendered_from_the_structured_action() {
        let sizing = |target: f64| shaper::Sizing {
            mean: target / 2.0,
            sigma: 0.0,
            k1_term: target / 2.0,
            k2_term: 0.0,
            band: shaper::Band::default(),
            margin_term: 0.0,
            target,
            bound: shaper::Bound::Buffer,
        };
        let explanation = shaper::Explanation {
            reason: shaper::Reason::Shaped,
            basis: shaper::Basis::Forecast,
            cpu: sizing(0.5),
            mem: sizing(536_870_912.0),
            binding: None,
        };
        let mut w = WireAction {
            id: ActionId("e-1-0".into()),
            app: "t/web".into(),
            action: ActionKind::Resize {
                container_id: "c1".into(),
                from: Resources::new(1.0, 1e9),
                to: Resources::new(0.5, 536_870_912.4),
            },
            explanation,
            mentions: None,
        };
        let line = w.summary();
        assert!(
            line.starts_with(
                "resize c1 (app t/web): cpu 1.000 -> 0.500 cores, mem 1000000000 -> 536870912 bytes: shaped; cpu target 0.5"
            ),
            "{line}"
        );
        // memory amounts in the explanation in MiB
        assert!(
            line.contains("; mem target 512 MiB = mean 256 MiB + k1_term 256 MiB"),
            "{line}"
        );
        w.action = ActionKind::Evict {
            container_id: "c1".into(),
            whole_app: true,
        };
        assert!(w
            .summary()
            .starts_with("evict c1: its whole application t/web is preempted: shaped"));

        // An application eviction for a core component that did not fit:
        // numbered without mentions; with them the receiver's own container
        // and node are named, another node's are not.
        w.explanation.reason = shaper::Reason::CoreDidNotFit {
            component: shaper::ComponentId(4),
        };
        w.explanation.binding = Some(Box::new(shaper::Binding {
            host: shaper::HostId(0),
            resource: shaper::Resource::Mem,
            needed: 2.0,
            free: 1.0,
        }));
        let name_of = |id: &str| (id == "c1").then(|| "web".to_string());
        let line = w.summary_named(&name_of, "node-a");
        assert!(
            line.starts_with("evict web: its whole application t/web is preempted: core component 4 did not fit on host 0 mem"),
            "{line}"
        );
        w.mentions = Some(Mentions {
            container_id: Some("c1".into()),
            own_host: true,
        });
        let line = w.summary_named(&name_of, "node-a");
        assert!(
            line.contains("core component web did not fit on host node-a mem"),
            "{line}"
        );
        w.mentions = Some(Mentions::default());
        let line = w.summary_named(&name_of, "node-a");
        assert!(
            line.contains("core component (another node's) did not fit on host (another node) mem"),
            "{line}"
        );
        // the wire form carries them only when there are any
        let v = serde_json::to_value(&w).expect("serialise");
        assert_eq!(v["mentions"], serde_json::json!({}));
        w.mentions = None;
        let v = serde_json::to_value(&w).expect("serialise");
        assert!(v.get("mentions").is_none(), "{v}");
    }

    #[test]
    fn ids_are_deterministic_and_distinct() {
        assert_eq!(app_id("web"), app_id("web"));
        assert_ne!(app_id("t/web"), app_id("t/db"));
    }

    #[test]
    fn valid_report_roundtrips_and_validates() {
        let r = report();
        assert!(r.validate(100).is_ok());
        let json = serde_json::to_string(&r).expect("serialise");
        let back: ReportRequest = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, r);
    }

    #[test]
    fn invalid_report_lists_every_problem() {
        let mut r = report();
        r.agent_id = String::new();
        r.capacity.cpu_cores = -1.0;
        r.components[1].container_id = "a".to_string();
        r.components[0].usage.mem_bytes = f64::INFINITY;
        if let Some(f) = r.components[1].forecast.as_mut() {
            f.mem_hold_bytes = f64::NAN;
            f.mem_small_hold_bytes = -1.0;
        }
        r.components[1].mem_floor_bytes = -1.0;
        r.components[0].oom_floor_bytes = f64::NAN;
        let errors = r.validate(100).expect_err("invalid");
        assert!(
            errors
                .iter()
                .any(|e| e.contains("components[1].mem_floor_bytes")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("components[0].oom_floor_bytes")),
            "{errors:?}"
        );
        for key in ["mem_hold_bytes", "mem_small_hold_bytes"] {
            assert!(
                errors
                    .iter()
                    .any(|e| e.contains(&format!("components[1].forecast.{key}"))),
                "{errors:?}"
            );
        }
        assert!(
            errors.iter().any(|e| e.contains("agent_id is empty")),
            "{errors:?}"
        );
        assert!(
            errors.iter().any(|e| e.contains("capacity.cpu_cores")),
            "{errors:?}"
        );
        assert!(
            errors.iter().any(|e| e.contains("reported twice")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("components[0].usage.mem_bytes")),
            "{errors:?}"
        );
        assert!(report().validate(1).is_err(), "component limit");
    }

    /// Finite but huge amounts would overflow the shaper's buffers into a
    /// `null` answer: refused, with their key.
    #[test]
    fn huge_amounts_are_refused() {
        let mut r = report();
        r.components[0].request.mem_bytes = 1.7e308;
        if let Some(f) = r.components[1].forecast.as_mut() {
            f.mem = Predictive::gaussian(1e8, 1e308);
        }
        let errors = r.validate(100).expect_err("invalid");
        assert!(
            errors
                .iter()
                .any(|e| e.contains("components[0].request.mem_bytes")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("components[1].forecast.mem.std")),
            "{errors:?}"
        );
        let mut ok = report();
        ok.components[0].request.mem_bytes = MAX_REPORTED_VALUE;
        assert!(ok.validate(100).is_ok());
    }

    #[test]
    fn added_fields_are_optional_both_ways() {
        // an older agent's report, without the fields added since
        let json = r#"{"agent_id":"n","boot_id":1,"capacity":{"cpu_cores":1,"mem_bytes":1},
            "components":[{"container_id":"c","app":"web","class":"core",
            "request":{"cpu_cores":1,"mem_bytes":1e9},"allocation":{"cpu_cores":1,"mem_bytes":1e9},
            "usage":{"cpu_cores":0.1,"mem_bytes":1e8},"started_s":1}]}"#;
        let r: ReportRequest = serde_json::from_str(json).expect("older report");
        assert!(!r.components[0].restarts_alone);
        // a newer agent sends an added field only away from its default
        let mut r = report();
        let v = serde_json::to_value(&r).expect("serialise");
        for key in ["restarts_alone", "mem_floor_bytes", "oom_floor_bytes"] {
            assert!(v["components"][0].get(key).is_none(), "{v}");
        }
        for key in ["mentions", "early"] {
            assert!(v.get(key).is_none(), "{v}");
        }
        for key in ["mem_hold_bytes", "mem_small_hold_bytes"] {
            assert!(v["components"][0]["forecast"].get(key).is_none(), "{v}");
        }
        r.components[0].restarts_alone = true;
        r.components[0].mem_floor_bytes = 2e8;
        r.components[0].oom_floor_bytes = 4e8;
        if let Some(f) = r.components[0].forecast.as_mut() {
            f.mem_hold_bytes = 3e8;
        }
        let v = serde_json::to_value(&r).expect("serialise");
        assert_eq!(v["components"][0]["restarts_alone"], true);
        assert_eq!(v["components"][0]["mem_floor_bytes"], 2e8);
        assert_eq!(v["components"][0]["oom_floor_bytes"], 4e8);
        assert_eq!(v["components"][0]["forecast"]["mem_hold_bytes"], 3e8);
        r.early = true;
        let v = serde_json::to_value(&r).expect("serialise");
        assert_eq!(v["early"], true);
        let back: ReportRequest = serde_json::from_value(v).expect("parse");
        assert_eq!(back, r);
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let json = r#"{"agent_id":"n","capacity":{"cpu_cores":1,"mem_bytes":1},"components":[],"bogus":1}"#;
        assert!(serde_json::from_str::<ReportRequest>(json).is_err());
    }

    #[test]
    fn action_kinds_serialise_with_a_tag() {
        let a = ActionKind::Evict {
            container_id: "c".into(),
            whole_app: true,
        };
        let v = serde_json::to_value(&a).expect("serialise");
        assert_eq!(v["kind"], "evict");
        assert_eq!(a.metric_kind(), "evict_application");
        let ack = Ack {
            action_id: ActionId("e-1-0".into()),
            outcome: AckOutcome::Failed { error: "x".into() },
        };
        let v = serde_json::to_value(&ack).expect("serialise");
        assert_eq!(v["outcome"]["status"], "failed");
    }
}

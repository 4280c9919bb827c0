//! Cluster mode, agent side: the client agents use to report to the central
//! shaper (the `shaperd` crate), and the fail-safe policy agents follow when
//! it cannot be reached.
//!
//! * [`protocol`] (re-exported crate): the versioned JSON wire types
//!   (`POST /v1/report`, `POST /v1/ack`), the deterministic mapping of agent
//!   / container / application names to the shaper's numeric ids, [`auth`]
//!   (bearer tokens read from files whose permissions are checked) and
//!   [`ClusterError`].
//! * [`config`][]: [`ClusterClientConfig`] (the `[cluster]` table of
//!   `agent.toml`).
//! * [`client`]: the agent-side HTTP client.
//! * [`session`]: [`ClusterSession`], which wraps client + fail-safe +
//!   idempotent action bookkeeping.
//! * [`plan_source`]: [`ClusterPlanSource`], the agent loop's `PlanSource`
//!   in cluster mode.
//! * [`failsafe`]: what an agent does while the shaper is unreachable.

pub mod client;
pub mod config;
pub mod failsafe;
pub mod plan_source;
pub mod session;

pub use ::protocol;
pub use ::protocol::{auth, ClusterError};

pub use client::{
    ClusterClient, ClusterSession, LocalAction, LocalActionKind, RoundDecision, RoundSource,
};
pub use config::{ClusterClientConfig, ShaperUrls};
pub use failsafe::{FailSafe, FailSafeConfig, LinkState};
pub use plan_source::ClusterPlanSource;
pub use protocol::{
    Ack, AckOutcome, AckRequest, AckResponse, ActionId, ActionKind, ComponentReport, ReportRequest,
    ReportResponse, WireAction,
};

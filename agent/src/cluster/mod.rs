//! Cluster mode: a central shaper server that plans for many nodes at once,
//! the client agents use to report to it, and the fail-safe policy agents
//! follow when it cannot be reached.
//!
//! * [`protocol`]: the versioned JSON wire types (`POST /v1/report`,
//!   `POST /v1/ack`) and the deterministic mapping of agent / container /
//!   application names to the shaper's numeric ids.
//! * [`config`][]: [`ShaperServerConfig`] (`tailor shaper --config shaper.toml`)
//!   and [`ClusterClientConfig`] (the `[cluster]` table of `agent.toml`).
//! * [`auth`]: bearer tokens read from files whose permissions are checked.
//! * [`credentials`]: per-agent tokens bound to an agent id and a tenant,
//!   stored as SHA-256 hashes in the shaper's credentials file.
//! * [`limits`]: the shaper's caps (agents, components per tenant, total
//!   components and memory) and replay protection of reports.
//! * [`state`]: the server's bookkeeping: agents, staleness, rounds, actions
//!   and their acknowledgements (pure, clock passed in).
//! * [`server`]: the axum server (TLS through rustls when configured).
//! * [`client`]: the agent-side HTTP client and [`client::ClusterSession`],
//!   which wraps client + fail-safe + idempotent action bookkeeping.
//! * [`plan_source`]: [`ClusterPlanSource`], the agent loop's `PlanSource`
//!   in cluster mode.
//! * [`failsafe`]: what an agent does while the shaper is unreachable.
//! * [`metrics`]: Prometheus text for the shaper's `/metrics`.
//! * [`loadgen`]: simulated agents for load tests (`tailor shaper loadgen`).

pub mod auth;
pub mod client;
pub mod config;
pub mod credentials;
pub mod failsafe;
pub mod limits;
pub mod loadgen;
pub mod metrics;
pub mod plan_source;
pub mod protocol;
pub mod server;
pub mod state;

pub use client::{
    ClusterClient, ClusterSession, LocalAction, LocalActionKind, RoundDecision, RoundSource,
};
pub use config::{ClusterClientConfig, ShaperServerConfig};
pub use failsafe::{FailSafe, FailSafeConfig, LinkState};
pub use plan_source::ClusterPlanSource;
pub use protocol::{
    Ack, AckOutcome, AckRequest, AckResponse, ActionId, ActionKind, ComponentReport, ReportRequest,
    ReportResponse, WireAction,
};
pub use server::{ShaperServer, Shared};
pub use state::ShaperState;

use std::path::PathBuf;

/// Everything that can go wrong in cluster mode.
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
    Rejected { status: u16, message: String },
    #[error("cannot decode the shaper's answer: {0}")]
    Decode(String),
    #[error("HTTP client setup failed: {0}")]
    Client(String),
    #[error("credentials: {0}")]
    Credentials(String),
    #[error("credentials file {path}: {message}")]
    CredentialsFile { path: PathBuf, message: String },
}

#[cfg(test)]
mod tests;

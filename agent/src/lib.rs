//! tailor's per-node daemon (sampling, forecasting, actuation through Docker)
//! and, in `cluster`, its client of the central shaper (the server itself is
//! the `shaperd` crate; the wire types are the `protocol` crate).
//!
//! * [`runtime`]: the [`ContainerRuntime`] trait over our own types;
//!   [`docker::DockerRuntime`] implements it with bollard; `fake::FakeRuntime`
//!   (feature `test-util`) in memory for tests of the agent's logic.
//! * [`config`]: `agent.toml` ([`AgentConfig`], [`config::check_toml`]);
//!   [`toml_check`]: key-by-key TOML checking that reports every error at once.
//! * [`labels`]: container labels -> applications and components.
//! * [`view`]: the per-round [`NodeView`], [`NodeAction`]s and the
//!   [`PlanSource`] trait ([`LocalShaper`] in standalone mode; the cluster
//!   client in cluster mode).
//! * [`agent`]: the loop ([`Agent`]), actuation, evictions and restarts.
//! * [`http`], [`metrics`], [`notify`]: operations (HTTP endpoint,
//!   Prometheus text, systemd notifications); [`prom`], [`serve`] and
//!   [`toml_check`] are re-exported from the `service` crate shared with the
//!   central shaper.
//!
//! # Example
//!
//! ```
//! // Every key of agent.toml has a default; [shaper] is the kernel's table.
//! let cfg = agent::config::check_toml("actuation = \"recommend\"\n[shaper]\nk1 = 0.1\n")
//!     .expect("valid config");
//! assert_eq!(cfg.actuation, agent::config::Actuation::Recommend);
//! assert_eq!(cfg.shaper.k1, 0.1);
//! ```

pub mod agent;
pub mod cgroup;
pub mod checkpoint;
pub mod cluster;
pub mod config;
pub mod docker;
mod docker_stats;
#[cfg(any(test, feature = "test-util"))]
pub mod fake;
pub mod http;
pub mod journal;
pub mod labels;
pub mod lock;
pub mod metrics;
pub mod notify;
pub mod podman;
pub mod recommend;
pub mod runtime;
pub mod state;
pub mod text;
pub mod view;

pub use service::{prom, serve, toml_check};

pub use agent::{Agent, RoundReport, Shared};
pub use config::AgentConfig;
pub use runtime::{ContainerRuntime, RuntimeError};
pub use tailor_core::{ConfigError, ConfigErrors};
pub use view::{
    ActionOutcome, ContainerReport, LocalShaper, NodeAction, NodeActionKind, NodePlan, NodeView,
    Outcome, PlanSource, PlanSourceError,
};

/// Errors of the agent.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    PlanSource(PlanSourceError),
    #[error("{0}")]
    Config(#[from] ConfigErrors),
    #[error("cannot build the forecaster: {0}")]
    Forecaster(#[from] forecaster::ForecastError),
    #[error("recording: {0}")]
    Record(#[from] datasets::DatasetError),
    #[error("state lock {path}: {message}")]
    StateLock {
        path: std::path::PathBuf,
        message: String,
    },
    #[error("host lock {path}: {message}")]
    HostLock {
        path: std::path::PathBuf,
        message: String,
    },
    #[error("decision journal {}: {source}", path.display())]
    Journal {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("HTTP endpoint {addr}: {source}")]
    Http {
        addr: String,
        #[source]
        source: std::io::Error,
    },
}

//! tailor's central shaper server: agents report their containers to it and
//! it plans for many nodes at once (`tailor shaper`). The wire types are the
//! `protocol` crate; the agent side (client, fail-safe) is `agent::cluster`.
//!
//! * [`config`][]: [`ShaperServerConfig`] (`tailor shaper --config shaper.toml`).
//! * [`auth`] (from `protocol`): bearer tokens read from files whose
//!   permissions are checked.
//! * [`credentials`]: per-agent tokens bound to an agent id and a tenant,
//!   stored as SHA-256 hashes in the shaper's credentials file.
//! * [`limits`]: the shaper's caps (agents, components per tenant, total
//!   components and memory) and replay protection of reports.
//! * [`state`]: the server's bookkeeping: agents, staleness, rounds, actions
//!   and their acknowledgements (pure, clock passed in).
//! * [`server`]: the axum server (TLS through rustls when configured).
//! * [`metrics`]: Prometheus text for the shaper's `/metrics`.
//! * [`store`], [`etcd`], [`ha`]: durable state, etcd, leader election.
//!
//! # Scale
//!
//! A round builds the view from the agents' latest reports (component and
//! application ids are hashed when a report arrives, not in the round),
//! runs `decide()` with a reused [`shaper::Decider`], and keeps the plan's
//! actions lazily: each agent's wire actions (ids, structured
//! explanations; the agent renders the summary line) are built when it
//! collects them; the previous round's actions (and the reports only they
//! still refer to) are freed off the lock.
//! `cargo bench -p shaperd --bench round`
//! times the phases at 1M components; `scripts/bench-10k.sh` runs the load
//! generator (10,000 agents x 100 containers) against the release binary.
//!
//! # High availability
//!
//! With `[etcd]` in `shaper.toml`, two or more replicas share their state in
//! etcd and elect a leader there ([`ha`], [`etcd`]); the durable state sits
//! behind the [`store::StateStore`] trait ([`store::MemoryStore`] for tests;
//! a lone replica's private store is not written to at all). Only the leader plans and answers agents,
//! followers redirect them (`307` to the leader's `advertise_url`). Round
//! logic stays pure: a round's actions are written before any agent can
//! collect them, acks before they are answered, so a new leader matches
//! acks of the old one's actions, keeps failure counts and never issues an
//! action id twice. Agents' last accepted report sequences are stored with
//! every round, so a new leader refuses a report captured before the last
//! round (not one accepted after it). Not stored: agents' latest reports
//! (they re-report within one interval, during the new leader's warmup).
//!
//! # Example
//!
//! ```
//! // A per-agent credential: the token is shown once, only its hash is kept.
//! let mut file = shaperd::credentials::CredentialsFile::default();
//! let token = file.add("node-1", "team-a", &[], 0.0).expect("valid names");
//! let creds = file.index();
//! let who = creds.verify(&token).expect("known token");
//! assert_eq!(&*who.agent_id, "node-1");
//! assert_eq!(&*who.tenant, "team-a");
//! assert!(creds.verify("tailor1.not.a-token").is_none());
//! ```

pub mod app_scope;
pub mod config;
pub mod credentials;
pub mod etcd;
pub mod ha;
pub mod limits;
pub mod metrics;
pub mod server;
pub mod state;
pub mod store;
mod watch;

pub use ::protocol;
pub use ::protocol::{auth, ClusterError};
pub use service::{prom, serve, toml_check};

pub use config::ShaperServerConfig;
pub use server::{ShaperServer, Shared};
pub use state::ShaperState;

#[cfg(test)]
mod tests;

//! Pure shaping decisions (Pace 2018, chapter 4, Algorithm 3 and eq. 4.3).
//!
//! `decide(view, now_s, config) -> Plan`: cluster view + forecasts +
//! parameters in, a plan out. No clock reads, no I/O: the agent, the central
//! shaper and the simulator all run this one implementation.
//!
//! * [`ShaperConfig`] (`[shaper]` TOML table) with [`ShaperConfig::validate`].
//! * [`decide`] returns a [`Plan`] of [`Action`]s, each with an
//!   [`Explanation`]; apply them in order.
//! * [`component_target`] exposes the per-component target (forecast +
//!   buffer, clamped) for callers that only want a recommendation.

pub mod config;
pub mod decide;
pub mod model;
pub mod plan;
pub mod synthetic;

pub use config::{ConfigError, ConfigErrors, Policy, SchedulerOrder, ShaperConfig, VictimOrder};
pub use decide::{component_target, decide, Target};
pub use model::*;
pub use plan::{Action, Basis, Binding, Bound, Explanation, Plan, PlanSummary, Reason, Sizing};
pub use tailor_core::Calibration;

//! The sizing kernel (Pace 2018, chapter 4, Algorithm 3 and eq. 4.3):
//! everything from "a sample arrived" to "these actions, in this order".
//! The node agent (standalone or cluster), the central shaper and the
//! simulator differ only in their I/O; every rule lives here, once:
//!
//! | rule | where |
//! |---|---|
//! | per-component models: normalisation by the request, warm-up, horizon | [`models`] |
//! | priors from siblings and predecessors for young components | [`prior`] |
//! | floors, ceilings, rounding to millicores and whole MiB | [`limits`] |
//! | the OOM floor after a kill | [`oom`] |
//! | grouping observed components into the view | [`view`] |
//! | scheduler order and the one apply order | [`order`] |
//! | buffers, pessimistic preemption, hysteresis, explanations | [`decide()`] |
//!
//! `decide(view, now_s, config) -> Plan`: cluster view + forecasts +
//! parameters in, a plan out. No clock reads, no I/O.
//!
//! * [`ShaperConfig`] (`[shaper]` TOML table) with [`ShaperConfig::validate`].
//! * [`decide()`] returns a [`Plan`] of [`Action`]s, each with an
//!   [`Explanation`]; apply them in order.
//! * [`component_target`] exposes the per-component target (forecast +
//!   buffer, clamped) for callers that only want a recommendation.
//!
//! ```
//! use shaper::*;
//!
//! // One application alone: no size rule (a lone small app would get
//! // small_app_k1).
//! let cfg: ShaperConfig =
//!     toml::from_str("k1 = 0.05\nk2 = 3.0\nsmall_app_components = 0\n").expect("valid TOML");
//! cfg.validate().expect("valid config");
//! let request = Resources::new(2.0, 4e9);
//! let view = ClusterView {
//!     hosts: vec![Host { id: HostId(0), capacity: Resources::new(8.0, 16e9) }],
//!     apps: vec![Application {
//!         id: AppId(1),
//!         submitted_s: 0.0,
//!         priority: 0,
//!         failures: 0,
//!         expected_remaining_s: None,
//!         tenant: 0,
//!         components: vec![Component {
//!             id: ComponentId(10),
//!             class: Class::Core,
//!             host: HostId(0),
//!             request,
//!             started_s: 0.0,
//!             allocation: request,
//!             usage: Resources::new(0.5, 1e9),
//!             forecast: Some(Forecasts {
//!                 cpu: Predictive::gaussian(0.6, 0.05),
//!                 mem: Predictive::gaussian(1.2e9, 0.1e9),
//!                 mem_hold_bytes: 0.0,
//!                 mem_small_hold_bytes: 0.0,
//!             }),
//!             protected: false,
//!             work_done_s: 3600.0,
//!             restarts_alone: false,
//!             mem_floor_bytes: 0.0,
//!             oom_floor_bytes: 0.0,
//!         }],
//!     }],
//! };
//! let plan = decide(&view, 3600.0, &cfg);
//! // A core component whose kill fails its application gets
//! // core_k1_factor (1.2) x K1 = 0.06 of its request:
//! // cpu: 0.6 + 0.06 * 2 + 3 * 0.05 = 0.87 cores; mem: 1.2e9 + 0.24e9 + 0.3e9,
//! // rounded up to whole MiB (`limits::MEM_STEP_BYTES`).
//! let mib = limits::MEM_STEP_BYTES;
//! match &plan.actions[0] {
//!     Action::Resize { to, .. } => {
//!         assert!((to.cpu_cores - 0.87).abs() < 1e-9);
//!         assert!(to.mem_bytes >= 1.74e9 && to.mem_bytes < 1.74e9 + mib);
//!         assert_eq!(to.mem_bytes % mib, 0.0);
//!     }
//!     other => panic!("expected a resize, got {other}"),
//! }
//! ```

pub mod config;
pub mod decide;
pub mod hold;
pub mod limits;
pub mod model;
pub mod models;
pub mod node;
pub mod node_models;
pub mod oom;
pub mod order;
pub mod plan;
pub mod prior;
pub mod record;
pub mod risk;
pub mod synthetic;
pub mod view;
pub mod workloads;

pub use config::{
    ConfigError, ConfigErrors, CpuShortfall, MemShortfall, Policy, SchedulerOrder, ShaperConfig,
    VictimOrder,
};
pub use decide::{buffer, component_target, decide, Buffer, Decider, Target};
pub use model::*;
pub use models::{horizon_samples, ComponentModels, ForecastSource};
pub use oom::OomFloor;
pub use order::{apply_class, scheduler_key, ComponentAction, SchedulerKey};
pub use plan::{
    Action, Band, BandLevel, Basis, Binding, Bound, Explanation, Plan, PlanSummary, Reason, Sizing,
    WITHHELD_ID,
};
pub use prior::{PairMoments, PriorBook, PriorSettings, RelPrior};
pub use tailor_core::Calibration;
pub use view::{shrink_spare, AppFacts, ViewBuilder};
pub use workloads::VpaWorkloads;

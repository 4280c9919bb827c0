//! Discrete-event, trace-driven simulator of reshaping policies (Pace 2018,
//! chapter 4, section 4.3).
//!
//! [`Engine`] replays a [`datasets::workload::Workload`] on its hosts under a
//! [`shaper::ShaperConfig`] with forecasts from [`Forecasting`]; [`simulate`]
//! and [`replay`] wrap it with a [`SimConfig`] and produce a [`Summary`].
//!
//! # Example
//!
//! ```
//! use datasets::workload::*;
//! use sim::{simulate, SimConfig};
//!
//! let gib = 1024.0 * 1024.0 * 1024.0;
//! let usage = UsageSeries::new(300.0, Shape::constant(0.5), Shape::constant(gib));
//! let wl = Workload {
//!     name: "one app".into(),
//!     hosts: vec![HostSpec { capacity: Resources::new(4.0, 8.0 * gib) }],
//!     apps: vec![AppSpec {
//!         id: 1,
//!         arrival_s: 0.0,
//!         priority: 0,
//!         components: vec![ComponentSpec::new(
//!             Class::Core,
//!             Resources::new(1.0, 2.0 * gib),
//!             3600.0,
//!             usage,
//!         )],
//!     }],
//! };
//! let cfg: SimConfig = toml::from_str("[shaper]\npolicy = \"baseline\"").expect("config");
//! let run = simulate(&wl, &cfg, None).expect("simulation");
//! assert_eq!(run.metrics.apps[0].finished_s, Some(3600.0));
//! ```
//!
//! # Semantics
//!
//! * **Events** live in one binary heap ordered by (time, kind rank,
//!   insertion sequence): at equal times completions come first, then usage
//!   changes, then arrivals, then the shaping round; the scheduler runs once
//!   after every batch of same-time events. Nothing depends on hash-map
//!   order, threads or wall time: a run is a pure function of workload and
//!   config.
//! * **Application scheduler** (reservation-centric): applications queue in
//!   the order of `[shaper].order` (FIFO by submission time, SJF by the
//!   longest component's work, or priority). An application is admitted when
//!   all its **core** components fit by current *allocations* (free =
//!   capacity - sum of allocations), all or nothing; its **elastic**
//!   components then wait as pending and are placed whenever there is room,
//!   in the same order. Strict order by default: the first queued
//!   application that does not fit blocks every later one (`backfill = true`
//!   lets later ones pass). Hosts are chosen by [`Placement`] (first fit by
//!   default, or worst fit = most free memory). A component starts with its
//!   request as allocation. Applications whose core components cannot fit
//!   on the empty cluster are rejected up front; elastic components larger
//!   than every host are dropped.
//! * **Components** run `work_s` seconds of work at full speed. CPU is
//!   time-shared: progress rate = `min(1, alloc_cpu / demand_cpu)`. Usage
//!   follows the component's usage series (by time since start), clipped to
//!   its request (the thesis removes usage above the reservation). An
//!   application completes when all its components completed.
//! * **Memory is finite**: usage above allocation OOM-kills the component.
//!   A core component's kill crashes the application: every component is
//!   killed, all its work (finished components included) is lost, and it is
//!   requeued at its original position with `failures + 1`. An elastic
//!   component's kill loses that component's work; it waits as pending
//!   again (re-queued, never dropped). When a host's memory usage exceeds
//!   its capacity (possible under the optimistic policy, whose allocations
//!   may overcommit a host), the **host OOM killer** kills the component
//!   using the most memory (ties: lowest index) until it fits.
//! * **Shaping round** every `interval_s` (default 300 s, independent of the
//!   series' sample interval): each running component's CPU and memory
//!   forecasters observe the samples since the last round (normalised by
//!   the request), a [`shaper::ClusterView`] is built, [`shaper::decide`]
//!   returns a plan, and the plan is applied in order: application
//!   evictions (work lost, requeued at original priority and submission
//!   time, `failures + 1`), elastic component evictions (work lost,
//!   re-queued as pending), resizes (allocation change takes effect at
//!   once; freed room is offered to the scheduler right after the round).
//!   Forecast horizon = samples covering one interval unless configured.
//! * **Metrics**: see [`Summary`]. "Failed" applications are those that
//!   crashed (core OOM kill) at least once; shaper evictions are counted
//!   apart (`evictions`, `evicted_app_fraction`). Slack per resource =
//!   (allocated - used) / allocated, one sample per running component per
//!   round weighted by the time it ran in that round.

pub mod config;
pub mod engine;
pub mod fonts;
pub mod frontier;
pub mod metrics;
pub mod outdir;
pub mod placement;
pub mod recorded;
pub mod report;
pub mod runner;
pub mod seeded;
pub mod seeds;
pub mod source;
pub mod tune;

pub use config::{ForecasterSource, SimConfig};
pub use engine::{
    Engine, EngineConfig, ForecasterFactory, Forecasting, ModelSite, OptimisticGrowth, Progress,
};
pub use metrics::{oracle_capture, AppOutcome, RunMetrics, Summary, TimePoint, WeightedHist};
pub use placement::Placement;
pub use runner::{baseline_of, oracle_of, replay, simulate, RunResult};
pub use source::WorkloadSource;

/// Errors of the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// One or more configuration problems (all of them, with key paths).
    #[error("invalid simulator config: {0}")]
    Config(#[from] tailor_core::ConfigErrors),
    #[error("unusable workload: {0}")]
    Workload(String),
    #[error("forecaster: {0}")]
    Forecaster(#[from] forecaster::ForecastError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("parsing {path}: {message}")]
    Parse { path: String, message: String },
    #[error(transparent)]
    Dataset(#[from] datasets::DatasetError),
    #[error("plotting: {0}")]
    Plot(String),
    /// Every application was rejected: no figure of the run means anything.
    #[error("no application ran: all {apps} applications of {workload} were rejected (their core components fit on no host)")]
    NothingRan { apps: usize, workload: String },
}

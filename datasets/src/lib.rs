//! Streaming readers for cluster traces and the workload model the simulator consumes.
//!
//! - [`series`]: real usage series from Bitbrains, Google 2019/2011, Alibaba
//!   and plain CSV files ([`series::load_series`]).
//! - [`google2011`]: streaming typed readers for the Google 2011 tables and
//!   the trace-to-workload builder ([`google2011::build_workload`]).
//! - [`google2019`], [`alibaba2018`], [`bitbrains`]: typed rows of the other
//!   traces, read with the same [`TableReader`] (strict or lenient).
//! - [`pool`]: real usage shapes and how components draw their usage
//!   (siblings coherently, as measured by [`coherence`]).
//! - [`google2019`]: also the Google 2019 per-task workload builder
//!   ([`google2019::build_workload`]).
//! - [`alibaba_gpu`]: the Alibaba GPU-cluster instance and pod lists
//!   (gpu-v2025, gpu-v2023; requests and lifetimes, usage from the pool)
//!   and their workload builder ([`alibaba_gpu::build_workload`]).
//! - [`bundled`]: the default workload embedded in the binary
//!   ([`bundled_workload`]).
//! - [`synthetic`]: the seeded thesis-style generator ([`synthetic::generate`]).
//! - [`inspect`]: file summaries for `tailor trace inspect`.
//! - [`recording`]: bounded gzip JSON-lines files (agent recordings).
//! - [`workload`]: the workload model ([`workload::Workload`]).
//! - [`bounds`]: the one range rule every reader applies to the values it
//!   accepts.
//!
//! # Example
//!
//! ```
//! let wl = datasets::bundled_workload().expect("bundled workload");
//! assert!(!wl.hosts.is_empty());
//! assert!(wl.apps.iter().all(|a| !a.components.is_empty()));
//! ```

pub mod alibaba2018;
pub mod alibaba_gpu;
pub mod bitbrains;
pub mod bounds;
pub mod bundled;
pub mod coherence;
pub mod error;
pub mod google2011;
pub mod google2019;
pub mod hosts;
pub mod inspect;
pub mod io;
pub mod pool;
pub mod recording;
pub mod series;
pub mod synthetic;
pub mod workload;

pub use bundled::bundled_workload;
pub use error::DatasetError;
pub use google2011::reader::{Table, TableReader};

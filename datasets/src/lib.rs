//! Streaming readers for cluster traces and the workload model the simulator consumes.
//!
//! - [`series`]: real usage series from Bitbrains, Google 2019/2011, Alibaba
//!   and plain CSV files ([`series::load_series`]).
//! - [`workload`]: the workload model ([`workload::Workload`]).

pub mod error;
pub mod io;
pub mod series;
pub mod workload;

pub use error::DatasetError;

//! Streaming readers for cluster traces and the workload model the simulator consumes.
//!
//! - [`series`]: real usage series from Bitbrains, Google 2019/2011, Alibaba
//!   and plain CSV files ([`series::load_series`]).
//! - [`workload`]: the workload model ([`workload::Workload`]).

pub mod bundled;
pub mod error;
pub mod google2011;
pub mod io;
pub mod pool;
pub mod series;
pub mod synthetic;
pub mod workload;

pub use bundled::bundled_workload;
pub use error::DatasetError;

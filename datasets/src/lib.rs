//! Streaming readers for cluster traces and the workload model the simulator consumes.

pub mod workload;

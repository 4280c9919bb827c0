//! A faithful port of the Kubernetes Vertical Pod Autoscaler recommender
//! (kubernetes/autoscaler, `vertical-pod-autoscaler/pkg/recommender`, read
//! at commit 55c37cd5eb), as a pure library: time is `f64` seconds from any
//! origin, there is no clock read and no I/O.
//!
//! What it does, as the VPA does it:
//!
//! - **One state per workload.** Every container of a workload feeds one
//!   [`AggregateState`]: a decaying histogram of CPU usage and one of memory
//!   peaks ([`VpaAggregate`]).
//! - **Histograms.** Exponential buckets growing 5% (CPU from 0.01 core to
//!   1000 cores, memory from 10 MB to 1 TB); a sample's weight halves every
//!   24 h ([`DecayingHistogram`]). A percentile is the END of the bucket
//!   where the cumulative weight reaches it.
//! - **CPU.** Every sample goes in with weight 0.1 (the VPA since 1.4.0;
//!   [`CpuSampleWeight::Request`] restores the older `max(request, 0.1)`).
//! - **Memory.** Each container adds ONE sample per 24 h interval: the
//!   running peak of that interval, replacing the previous one
//!   ([`ContainerState`]).
//! - **OOM.** A kill records `max(used * 1.2, used + 100 MiB)` as the
//!   interval's peak, `used` being the larger of the memory request at the
//!   kill and the interval's usage peak.
//! - **Recommendation** ([`PodResourceRecommender`]): target = P90 + 15%,
//!   lower bound = P50 + 15% times `(1 + 0.001/confidence)^-2`, upper bound
//!   = P95 + 15% times `(1 + 1/confidence)`, confidence = history length in
//!   days (capped by CPU sample count / 1440 per day); all at least the pod
//!   minimum (25 millicores, 250 MiB). Amounts are integers (millicores,
//!   bytes) at every step, as in Go.
//!
//! Frontier knobs: `target_memory_percentile` (and CPU) and
//! `safety_margin_fraction` in [`VpaRecommenderConfig`] (defaults 0.9 and
//! 0.15).
//!
//! [`VpaForecaster`] puts it behind the crate's [`crate::Forecaster`] trait
//! (model `vpa`; see its docs for units, time and what `std` means).
//!
//! Not ported (Kubernetes plumbing): checkpoints, update policies and
//! controlled resources, quality metrics, the cluster feeder and
//! garbage collection (see [`VpaAggregate::is_expired`]).
//!
//! ```
//! use forecaster::vpa::{VpaAggregate, VpaRecommenderConfig};
//!
//! let mut vpa = VpaAggregate::new(VpaRecommenderConfig::default())?;
//! // Two replicas, sampled every minute for two days.
//! for i in 0..(2 * 1440) {
//!     let t_s = i as f64 * 60.0;
//!     for replica in [1, 2] {
//!         vpa.add_cpu_sample(replica, t_s, 0.4, 1.0)?;
//!         vpa.add_mem_sample(replica, t_s, 600e6 + replica as f64 * 100e6)?;
//!     }
//! }
//! // Replica 2 is OOM-killed at its 1 GB request.
//! vpa.record_oom(2, 2.0 * 86_400.0, 1e9)?;
//! let r = vpa.recommend();
//! assert!(r.cpu.target >= 0.4 * 1.15 && r.cpu.lower <= r.cpu.target);
//! assert!(r.mem.target >= 1.2e9 * 1.15, "the OOM bump counts: {r:?}");
//! assert!(r.mem.upper >= r.mem.target);
//! # Ok::<(), forecaster::ForecastError>(())
//! ```

mod adapter;
mod aggregate_state;
pub mod amount;
mod config;
mod container;
mod decaying_histogram;
mod estimator;
mod histogram;
mod histogram_options;
mod recommender;
mod workload;

pub use adapter::{SharedVpa, VpaForecaster};
pub use aggregate_state::AggregateState;
pub use config::{
    CpuSampleWeight, VpaRecommenderConfig, VpaResource, CPU_HISTOGRAM_FIRST_BUCKET_CORES,
    CPU_HISTOGRAM_MAX_CORES, HISTOGRAM_EPSILON, MEMORY_HISTOGRAM_FIRST_BUCKET_BYTES,
    MEMORY_HISTOGRAM_MAX_BYTES, MIN_SAMPLE_WEIGHT,
};
pub use container::{ContainerState, MemoryUpdate, Peak};
pub use decaying_histogram::{DecayingHistogram, MAX_DECAY_EXPONENT};
pub use estimator::{confidence, Estimator};
pub use histogram::Histogram;
pub use histogram_options::{HistogramOptions, MAX_BUCKETS};
pub use recommender::{Amounts, PodResourceRecommender, RecommendedAmounts};
pub use workload::{Bounds, VpaAggregate, VpaRecommendation};

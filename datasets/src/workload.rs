//! The workload model the simulator consumes.
//!
//! A workload is a set of hosts and a list of applications (jobs), each with
//! an arrival time, a priority and components (tasks). A component has a
//! class (core or elastic), a request, an amount of work (its run time at
//! full allocation) and a usage series over its life.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
pub use tailor_core::{Class, Resources};

/// A host of the simulated cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSpec {
    pub capacity: Resources,
}

/// One resource's usage over a component's life: `values[i] * scale` is the
/// usage during the `i`-th interval after the component starts; past the end
/// the series wraps around (usage shapes come from a pool of real series
/// that may be shorter than the task).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// Shared shape values (typically fractions of the request, or of the
    /// series' own peak); shared between components drawn from one pool
    /// series to keep big workloads small.
    pub values: Arc<[f32]>,
    /// Multiplier turning a value into the resource's unit (cores, bytes).
    pub scale: f64,
    /// Index in `values` the component starts at (lets components share a
    /// pool series at different phases).
    #[serde(default)]
    pub offset: u32,
}

impl Shape {
    /// A constant usage.
    pub fn constant(value: f64) -> Self {
        Self {
            values: Arc::from(vec![1.0f32]),
            scale: value,
            offset: 0,
        }
    }

    /// Usage during interval `i` since the component started (0 for an empty shape).
    pub fn at(&self, i: usize) -> f64 {
        if self.values.is_empty() {
            return 0.0;
        }
        let idx = (i + self.offset as usize) % self.values.len();
        f64::from(self.values[idx]) * self.scale
    }
}

/// A component's CPU (cores) and memory (bytes) usage over its life.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsageSeries {
    /// Seconds between two samples.
    pub interval_s: f64,
    pub cpu_cores: Shape,
    pub mem_bytes: Shape,
}

impl UsageSeries {
    /// Usage at `elapsed_s` seconds after the component started.
    pub fn at(&self, elapsed_s: f64) -> Resources {
        let i = if self.interval_s > 0.0 && elapsed_s > 0.0 {
            (elapsed_s / self.interval_s) as usize
        } else {
            0
        };
        Resources::new(self.cpu_cores.at(i), self.mem_bytes.at(i))
    }
}

/// A component (task) of an application.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComponentSpec {
    pub class: Class,
    pub request: Resources,
    /// Seconds of run time at full CPU allocation.
    pub work_s: f64,
    pub usage: UsageSeries,
}

/// An application (job).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppSpec {
    /// Identifier from the trace (job ID) or the generator.
    pub id: u64,
    /// Submission time in seconds from the workload's origin.
    pub arrival_s: f64,
    /// Larger is more important.
    pub priority: i32,
    pub components: Vec<ComponentSpec>,
}

/// A whole workload: hosts plus applications sorted by arrival time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Human-readable origin, e.g. `google-2011:part-00000` or `synthetic:seed=7`.
    pub name: String,
    pub hosts: Vec<HostSpec>,
    pub apps: Vec<AppSpec>,
}

//! The workload model the simulator consumes.
//!
//! A workload is a set of hosts and a list of applications (jobs), each with
//! an arrival time, a priority and components (tasks). A component has a
//! class (core or elastic), a request, an amount of work (its run time at
//! full allocation) and a usage series over its life.
//!
//! Optional trace detail (absent fields deserialize to their defaults, so
//! older serialized workloads still load):
//! - [`UsageSeries::mem_peak_bytes`]: the memory peak *within* each
//!   interval (Google 2011 `maximum memory usage`, Google 2019
//!   `max_memory_usage`); read it with [`UsageSeries::mem_peak`], which falls
//!   back to the mean series.
//! - [`ComponentSpec::request_changes`]: in-place request changes during a
//!   component's life (Google 2019 `memory_limit`/`cpu_limit` changes); read
//!   the request in force with [`ComponentSpec::request_at`].
//! - [`ComponentSpec::start_delay_s`]: when a component is submitted after
//!   its application's arrival (a Google 2019 task that starts later than
//!   its job's first task, or a later run of a rescheduled task).

use serde::{Deserialize, Serialize};
use std::sync::Arc;
pub use tailor_core::{Class, Resources};

/// A host of the simulated cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSpec {
    pub capacity: Resources,
}

/// One resource's usage over a component's life: `values[i] * scale + bias`
/// is the usage during the `i`-th interval after the component starts; past the end
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
    /// Added to every scaled value (lets a pool draw reach a mean usage
    /// above the shape's mean share of its peak without crossing the
    /// request: the shape is compressed around its mean). Default 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bias: f64,
}

impl Shape {
    /// A constant usage.
    pub fn constant(value: f64) -> Self {
        Self {
            values: Arc::from(vec![1.0f32]),
            scale: value,
            offset: 0,
            bias: 0.0,
        }
    }

    /// `values` times `scale`, starting at index 0, no bias.
    pub fn scaled(values: Arc<[f32]>, scale: f64) -> Self {
        Self {
            values,
            scale,
            offset: 0,
            bias: 0.0,
        }
    }

    /// Usage during interval `i` since the component started (0 for an empty shape).
    pub fn at(&self, i: usize) -> f64 {
        if self.values.is_empty() {
            return 0.0;
        }
        let idx = (i + self.offset as usize) % self.values.len();
        f64::from(self.values[idx]) * self.scale + self.bias
    }
}

/// A component's CPU (cores) and memory (bytes) usage over its life.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsageSeries {
    /// Seconds between two samples.
    pub interval_s: f64,
    /// Mean CPU usage during each interval.
    pub cpu_cores: Shape,
    /// Mean memory usage during each interval.
    pub mem_bytes: Shape,
    /// Peak memory usage *within* each interval (bytes), indexed like
    /// `mem_bytes` (same length and offset when it comes from a trace).
    /// `None` when the source has no in-interval peak: then the peak is the
    /// mean ([`UsageSeries::mem_peak`]). An OOM killer acts on this value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_peak_bytes: Option<Shape>,
}

impl UsageSeries {
    /// A series without in-interval peaks.
    pub fn new(interval_s: f64, cpu_cores: Shape, mem_bytes: Shape) -> Self {
        UsageSeries {
            interval_s,
            cpu_cores,
            mem_bytes,
            mem_peak_bytes: None,
        }
    }

    /// The interval index `elapsed_s` seconds after the component started.
    pub fn index(&self, elapsed_s: f64) -> usize {
        if self.interval_s > 0.0 && elapsed_s > 0.0 {
            (elapsed_s / self.interval_s) as usize
        } else {
            0
        }
    }

    /// Mean usage at `elapsed_s` seconds after the component started.
    pub fn at(&self, elapsed_s: f64) -> Resources {
        let i = self.index(elapsed_s);
        Resources::new(self.cpu_cores.at(i), self.mem_bytes.at(i))
    }

    /// Peak memory (bytes) within interval `i`: the peak series where there
    /// is one, never below the interval's mean; the mean otherwise.
    pub fn mem_peak(&self, i: usize) -> f64 {
        let mean = self.mem_bytes.at(i);
        match &self.mem_peak_bytes {
            Some(p) if !p.values.is_empty() => p.at(i).max(mean),
            _ => mean,
        }
    }

    /// Peak memory (bytes) within the interval containing `elapsed_s`.
    pub fn mem_peak_at(&self, elapsed_s: f64) -> f64 {
        self.mem_peak(self.index(elapsed_s))
    }
}

/// An in-place change of a component's request during its life.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestChange {
    /// Seconds after the component started (its current run) at which the
    /// new request takes effect.
    pub at_elapsed_s: f64,
    /// The request in force from then on (until the next change).
    pub request: Resources,
}

/// A component (task) of an application.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComponentSpec {
    pub class: Class,
    pub request: Resources,
    /// Seconds of run time at full CPU allocation.
    pub work_s: f64,
    pub usage: UsageSeries,
    /// In-place request changes during the component's life, sorted by
    /// strictly increasing `at_elapsed_s` (all > 0); `request` is the
    /// request until the first one. Empty for sources without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_changes: Vec<RequestChange>,
    /// Seconds after the application's arrival at which this component is
    /// submitted (0: at arrival).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_delay_s: f64,
    /// What an OOM kill of this component does.
    #[serde(default, skip_serializing_if = "OomRestart::is_application")]
    pub oom_restart: OomRestart,
    /// The least memory it is ever allocated, in bytes (a recorded
    /// container's `--memory-reservation`: `shaper::Component::mem_floor_bytes`).
    /// 0: none, as in every trace.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mem_floor_bytes: f64,
}

/// What an OOM kill of a component does in the simulator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OomRestart {
    /// The thesis's semantics: a core component's kill crashes its
    /// application, which re-runs from its start; an elastic component
    /// re-runs alone from its start. For batch work, whose usage series is
    /// the work itself.
    #[default]
    Application,
    /// The component alone restarts, waits for room like a pending
    /// component, and continues its usage series at the sample it was
    /// killed in, with its request in force there; its work is not lost.
    /// A service task that its cluster manager restarts (Borg, a restart
    /// policy): its load comes from outside and goes on. The kill counts as
    /// a crash of its application.
    Component,
}

impl OomRestart {
    fn is_application(&self) -> bool {
        *self == OomRestart::Application
    }
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl ComponentSpec {
    /// A component submitted at its application's arrival, with a fixed
    /// request.
    pub fn new(class: Class, request: Resources, work_s: f64, usage: UsageSeries) -> Self {
        ComponentSpec {
            class,
            request,
            work_s,
            usage,
            request_changes: Vec::new(),
            start_delay_s: 0.0,
            oom_restart: OomRestart::Application,
            mem_floor_bytes: 0.0,
        }
    }

    /// The request in force `elapsed_s` seconds after the component started:
    /// the last change at or before `elapsed_s`, else `request`.
    pub fn request_at(&self, elapsed_s: f64) -> Resources {
        let k = self
            .request_changes
            .partition_point(|c| c.at_elapsed_s <= elapsed_s);
        match k {
            0 => self.request,
            k => self.request_changes[k - 1].request,
        }
    }

    /// The largest request the component ever has (initial or changed).
    pub fn max_request(&self) -> Resources {
        self.request_changes.iter().fold(self.request, |m, c| {
            Resources::new(
                m.cpu_cores.max(c.request.cpu_cores),
                m.mem_bytes.max(c.request.mem_bytes),
            )
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(v: &[f32], scale: f64) -> Shape {
        Shape::scaled(Arc::from(v.to_vec()), scale)
    }

    #[test]
    fn peak_falls_back_to_mean_and_never_goes_below_it() {
        let mut u = UsageSeries::new(300.0, Shape::constant(1.0), shape(&[1.0, 2.0, 3.0], 10.0));
        assert_eq!(u.mem_peak(1), 20.0);
        assert_eq!(u.mem_peak_at(650.0), 30.0);
        u.mem_peak_bytes = Some(shape(&[1.5, 1.0, 4.0], 10.0));
        assert_eq!(u.mem_peak(0), 15.0);
        assert_eq!(u.mem_peak(1), 20.0); // peak below mean: the mean
        assert_eq!(u.mem_peak(2), 40.0);
        assert_eq!(u.mem_peak(5), 40.0); // wraps like the mean
    }

    #[test]
    fn request_in_force() {
        let mut c = ComponentSpec::new(
            Class::Core,
            Resources::new(1.0, 100.0),
            10.0,
            UsageSeries::new(300.0, Shape::constant(0.5), Shape::constant(50.0)),
        );
        assert_eq!(c.request_at(1e9), Resources::new(1.0, 100.0));
        c.request_changes = vec![
            RequestChange {
                at_elapsed_s: 600.0,
                request: Resources::new(1.0, 80.0),
            },
            RequestChange {
                at_elapsed_s: 900.0,
                request: Resources::new(2.0, 120.0),
            },
        ];
        assert_eq!(c.request_at(599.0).mem_bytes, 100.0);
        assert_eq!(c.request_at(600.0).mem_bytes, 80.0);
        assert_eq!(c.request_at(1e6).mem_bytes, 120.0);
        assert_eq!(c.max_request(), Resources::new(2.0, 120.0));
    }

    #[test]
    fn old_json_without_new_fields_still_loads() {
        let c = ComponentSpec::new(
            Class::Core,
            Resources::new(1.0, 100.0),
            10.0,
            UsageSeries::new(300.0, Shape::constant(0.5), Shape::constant(50.0)),
        );
        let j = serde_json::to_string(&c).expect("ser");
        assert!(!j.contains("request_changes") && !j.contains("mem_peak_bytes"));
        let back: ComponentSpec = serde_json::from_str(&j).expect("de");
        assert_eq!(back, c);
    }
}

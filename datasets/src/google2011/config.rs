//! [`Google2011Config`]: how the Google 2011 tables become a workload, and
//! its validation.

use super::{GIB, MIB};
use crate::pool::PoolPhase;
use crate::workload::Resources;
use serde::{Deserialize, Serialize};
use tailor_core::ConfigErrors;

/// Jobs already running at trace start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtStart {
    /// Arrive at time 0 with the work observed from the origin on.
    Arrive,
    /// Leave them out.
    Drop,
}

/// Tasks whose last run did not end within the window (or was interrupted
/// by EVICT/LOST), and tasks never scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unfinished {
    /// Work = run time observed up to the window end or interruption;
    /// never-scheduled tasks are dropped.
    Censor,
    /// Draw from the finished-task durations (at least the observed run
    /// time); never-scheduled tasks get an unconditioned draw.
    SampleFinished,
    /// Leave such tasks out.
    Drop,
}

/// The configurable core/elastic rule (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClassRule {
    /// Share of multi-task batch jobs made elastic. Default 0.8 (thesis ch. 3).
    pub elastic_fraction: f64,
    /// Jobs with scheduling class <= this are batch. Default 1 (classes 0
    /// and 1: non-production batch; 2 and 3 are latency-sensitive).
    pub batch_max_scheduling_class: u8,
    /// Share of an elastic job's tasks (lowest indices first) that are core;
    /// at least one task is always core. Default 0.0 (exactly one core task,
    /// like a Spark driver).
    pub core_fraction: f64,
}

impl Default for ClassRule {
    fn default() -> Self {
        ClassRule {
            elastic_fraction: 0.8,
            batch_max_scheduling_class: 1,
            core_fraction: 0.0,
        }
    }
}

/// Configuration of [`build_workload`](super::build_workload). Every field has a documented default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Google2011Config {
    /// Capacity of a machine whose normalised capacity is 1.0 (the largest
    /// machine of the trace). Default 32 cores / 128 GiB (the thesis's hosts).
    pub max_machine: Resources,
    /// Multiplier on every host capacity (below 1 to create contention).
    /// Default 1.0.
    pub host_capacity_scale: f64,
    /// Trace time (µs) mapped to workload time 0. Default 600,000,000 (the
    /// start of the 2011 trace).
    pub origin_us: u64,
    /// Default [`AtStart::Arrive`].
    pub running_at_start: AtStart,
    /// Default [`Unfinished::Censor`].
    pub unfinished: Unfinished,
    pub class_rule: ClassRule,
    /// Floor on a component's work. Default 1 s.
    pub min_work_s: f64,
    /// Floor on requests (the trace has zero requests). Default 0.01 cores / 16 MiB.
    pub min_request: Resources,
    /// Keep only the first N machines by ID (and the tasks first placed on
    /// them). Default: all.
    pub max_hosts: Option<usize>,
    /// Keep only the first N applications by arrival. Default: all.
    pub max_apps: Option<usize>,
    /// Skip and count malformed rows instead of failing. Default false.
    pub lenient: bool,
    /// Seed of every random choice (class hash, pool picks, sampled
    /// durations). Default 0.
    pub seed: u64,
    /// Where the tasks of a job start the job's pool shape (usage from
    /// the pool only). Default [`PoolPhase::Job`]: all at the job's phase.
    pub pool_phase: PoolPhase,
    /// Workload name. Default: `google-2011:<directory name>`.
    pub name: Option<String>,
}

impl Default for Google2011Config {
    fn default() -> Self {
        Google2011Config {
            max_machine: Resources::new(32.0, 128.0 * GIB),
            host_capacity_scale: 1.0,
            origin_us: 600_000_000,
            running_at_start: AtStart::Arrive,
            unfinished: Unfinished::Censor,
            class_rule: ClassRule::default(),
            min_work_s: 1.0,
            min_request: Resources::new(0.01, 16.0 * MIB),
            max_hosts: None,
            max_apps: None,
            lenient: false,
            seed: 0,
            pool_phase: PoolPhase::Job,
            name: None,
        }
    }
}

impl Google2011Config {
    /// Checks every field; reports all problems at once. Ranges:
    /// `max_machine` cores (0, 1e6], bytes (0, 2^60]; `host_capacity_scale`
    /// (0, 1e6]; `min_work_s` [0, 1e9]; `min_request` cores [0, 1e6],
    /// bytes [0, 2^60]; fractions [0, 1]; `max_hosts`, `max_apps` >= 1.
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        check_positive_resources(&mut e, "max_machine", self.max_machine);
        e.check(
            "host_capacity_scale",
            self.host_capacity_scale > 0.0 && self.host_capacity_scale <= 1e6,
            || format!("must be in (0, 1e6], got {}", self.host_capacity_scale),
        );
        check_component_filters(&mut e, self.min_work_s, self.min_request, &self.class_rule);
        e.check("max_hosts", self.max_hosts != Some(0), || {
            "must be at least 1".to_string()
        });
        e.check("max_apps", self.max_apps != Some(0), || {
            "must be at least 1".to_string()
        });
        e.into_result()
    }
}

/// Largest CPU (cores) and memory (bytes, 2^60) amount of a host or
/// request: the shared bounds.
pub use crate::bounds::{MAX_BYTES, MAX_CORES};

/// Adds an error unless both resources are in (0, MAX].
pub(crate) fn check_positive_resources(e: &mut ConfigErrors, key: &str, r: Resources) {
    e.check(
        &format!("{key}.cpu_cores"),
        r.cpu_cores > 0.0 && r.cpu_cores <= MAX_CORES,
        || format!("must be in (0, {MAX_CORES}], got {}", r.cpu_cores),
    );
    e.check(
        &format!("{key}.mem_bytes"),
        r.mem_bytes > 0.0 && r.mem_bytes <= MAX_BYTES,
        || format!("must be in (0, {MAX_BYTES}], got {}", r.mem_bytes),
    );
}

/// The component filters both workload builders share: `min_work_s` in
/// [0, 1e9], `min_request` cores [0, 1e6] and bytes [0, 2^60], and the
/// class rule.
pub(crate) fn check_component_filters(
    e: &mut ConfigErrors,
    min_work_s: f64,
    min_request: Resources,
    class_rule: &ClassRule,
) {
    e.range("min_work_s", min_work_s, 0.0, 1e9);
    e.range(
        "min_request.cpu_cores",
        min_request.cpu_cores,
        0.0,
        MAX_CORES,
    );
    e.range(
        "min_request.mem_bytes",
        min_request.mem_bytes,
        0.0,
        MAX_BYTES,
    );
    e.nested("class_rule", class_rule.validate());
}

impl ClassRule {
    /// `elastic_fraction` and `core_fraction` in [0, 1].
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        e.range("elastic_fraction", self.elastic_fraction, 0.0, 1.0);
        e.range("core_fraction", self.core_fraction, 0.0, 1.0);
        e.into_result()
    }
}

//! What an agent recording holds: everything the node kernel was given and
//! everything it decided, round by round. Replaying the inputs through a
//! fresh [`NodeKernel`](crate::node::NodeKernel) with the recorded
//! configuration must give the recorded decisions (`tailor replay
//! --check-parity`).
//!
//! A recording is a [`Record::Header`] then one [`Record::Round`] per round
//! (the file format, gzip JSON lines, is `datasets::recording`).

use crate::config::ShaperConfig;
use crate::model::Forecasts;
use crate::node::{ContainerSample, NodeAction};
use forecaster::config::ModelConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tailor_core::Resources;

/// Version of the record format.
pub const RECORD_VERSION: u32 = 1;

/// Something the caller told the kernel before this round's samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum KernelEvent {
    /// The container was OOM-killed at this memory limit.
    OomKill {
        container_id: String,
        limit_bytes: f64,
        at_s: f64,
    },
    /// The container is gone: its models and floors are dropped.
    Forget { container_id: String },
}

/// The first record: the configuration the kernel ran with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordingHeader {
    pub version: u32,
    pub node: String,
    /// Seconds between rounds (one sample per container per round).
    pub interval_s: f64,
    /// `shape` or `recommend` (what the agent did with its decisions).
    pub actuation: String,
    /// `standalone` or `cluster` (where decisions came from).
    pub mode: String,
    pub shaper: ShaperConfig,
    pub forecaster: ModelConfig,
    /// The models the agent restored from its checkpoint at start (a
    /// restarted agent); a parity check starts its kernel from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<crate::node_models::ModelCheckpoint>,
}

/// One round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub round: u64,
    pub at_s: f64,
    pub capacity: Resources,
    /// Told to the kernel before the samples, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<KernelEvent>,
    /// The running containers and their samples, as given to the kernel.
    pub containers: Vec<ContainerSample>,
    /// Labels of containers seen for the first time this round.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, BTreeMap<String, String>>,
    /// The kernel's forecasts, one per container (same order).
    pub forecasts: Vec<Option<Forecasts>>,
    /// Where the decisions came from (`local`, `cluster`, `warm-up`).
    pub source: String,
    /// The decisions, in apply order; `None` when no plan was made (the
    /// agent's warm-up rounds).
    pub decisions: Option<Vec<NodeAction>>,
    /// The agent's memory watch ran this round before its time: a replay
    /// of the recording as a workload folds its samples into the next
    /// round's interval.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub early: bool,
}

/// One line of a recording.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    Header(Box<RecordingHeader>),
    Round(RoundRecord),
}

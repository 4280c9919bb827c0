//! One node's per-container models: priors from the node's other
//! containers, inheritance across container re-creation, and checkpoints
//! that survive an agent restart.
//!
//! * Every container pools its samples (relative to its request) under two
//!   prior keys: its lineage (its name: a container recreated under the
//!   same name, or a compose service's replacement, shares it) and its
//!   application (`tailor.app`, else its name). See [`crate::prior`].
//! * A container keeps its last samples (`history_cap`, enough for its
//!   model to be warm). When it disappears its history is kept under its
//!   lineage; a new container with the same name **inherits** it: its models
//!   are rebuilt from it, so it starts warm.
//! * [`NodeModels::checkpoint`] is what the agent writes under its state
//!   directory; [`NodeModels::restore`] reads it back after a restart, and
//!   each container's models are rebuilt from its history when it is seen
//!   again.

use crate::config::ShaperConfig;
use crate::model::{Forecasts, Resources};
use crate::models::{history_cap, rescale_history, ComponentModels, ForecastSource, HeldPeaks};
pub use crate::models::{RelSample, MAX_HISTORY_SAMPLES};
use crate::node::ContainerSample;
use crate::prior::PriorBook;
use crate::risk::RiskCalibration;
use crate::workloads::VpaWorkloads;
use forecaster::config::{ModelConfig, ModelKind};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

/// Most containers (live plus retired lineages) a checkpoint holds.
pub const MAX_CHECKPOINT_CONTAINERS: usize = 100_000;
/// Format version of [`ModelCheckpoint`].
pub const CHECKPOINT_VERSION: u32 = 1;

/// A container's (or a retired lineage's) recent history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Container id (empty for a retired lineage).
    #[serde(default)]
    pub id: String,
    pub lineage: String,
    pub samples: Vec<RelSample>,
    /// A live container's held memory peaks, which reach further back
    /// than its samples (none for a retired lineage: a successor inherits
    /// the history only, as a re-run task does in the simulator).
    #[serde(default, skip_serializing_if = "HeldPeaks::is_none")]
    pub held: HeldPeaks,
    /// A live container's OOM floor while it holds (the node kernel's:
    /// [`crate::NodeKernel::checkpoint`]), so a restart keeps it for the
    /// rest of `oom_memory_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_floor: Option<crate::OomFloor>,
}

/// What [`NodeModels::checkpoint`] saves and [`NodeModels::restore`] reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCheckpoint {
    pub version: u32,
    /// Caller's clock when written (seconds).
    pub at_s: f64,
    pub containers: Vec<HistoryEntry>,
    pub retired: Vec<HistoryEntry>,
    pub prior: PriorBook<String>,
}

/// Where a container's models started from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelOrigin {
    /// Nothing: a new container.
    Fresh,
    /// Its own history from a checkpoint (the agent restarted).
    Restored,
    /// A predecessor's history under the same name (it was recreated).
    Inherited,
}

impl ModelOrigin {
    /// The name used in configs, logs and the API (`fresh`, `restored`,
    /// `inherited`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fresh => "fresh",
            Self::Restored => "restored",
            Self::Inherited => "inherited",
        }
    }
}

/// What the models said about one container this round.
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerForecast {
    pub forecast: Option<Forecasts>,
    pub source: ForecastSource,
    /// Samples its models have seen (inherited ones included).
    pub samples: u64,
    pub origin: ModelOrigin,
}

struct Live {
    models: ComponentModels,
    keys: [String; 2],
    recent: VecDeque<RelSample>,
    origin: ModelOrigin,
    /// The request its models and history are relative to.
    request: Resources,
}

/// Per-container models of one node.
pub struct NodeModels {
    model: ModelConfig,
    warm_samples: usize,
    /// The memory hold in samples ([`crate::models::hold_samples`]).
    mem_hold: usize,
    /// [`crate::models::small_hold_samples`].
    small_hold: usize,
    /// [`crate::models::sibling_hold_samples`].
    sibling_hold: usize,
    history_cap: usize,
    live: HashMap<String, Live>,
    /// Histories and held peaks from a checkpoint, by container id, used
    /// once.
    restored: HashMap<String, (Vec<RelSample>, HeldPeaks)>,
    /// Histories of containers that went away, by lineage.
    retired: HashMap<String, Vec<RelSample>>,
    prior: PriorBook<String>,
    /// Seconds between two samples of a container.
    sample_interval_s: f64,
    /// The caller's time of the first sample seen (the VPA aggregates'
    /// clock starts there).
    origin_s: Option<f64>,
    /// `vpa` models only: each application's workload aggregates, shared
    /// by its containers' models.
    vpa_apps: VpaWorkloads<String>,
    /// Next container number in the VPA aggregates.
    vpa_next: u64,
    /// Memory forecasts' scores, pooled over the node's containers
    /// (`[shaper] memory_risk`).
    risk: RiskCalibration,
}

impl std::fmt::Debug for NodeModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeModels")
            .field("live", &self.live.len())
            .field("retired", &self.retired.len())
            .field("prior_keys", &self.prior.len())
            .finish()
    }
}

fn prior_keys(c: &ContainerSample) -> [String; 2] {
    [
        format!("name:{}", c.meta.name),
        format!("app:{}", c.meta.app),
    ]
}

fn clean(samples: Vec<RelSample>, cap: usize) -> Vec<RelSample> {
    let ok = |x: f64| x.is_finite() && x >= 0.0;
    let mut v: Vec<RelSample> = samples
        .into_iter()
        .filter(|s| ok(s.mem))
        .map(|s| RelSample {
            cpu: s.cpu.filter(|c| ok(*c)),
            mem: s.mem,
        })
        .collect();
    if v.len() > cap {
        v.drain(..v.len() - cap);
    }
    v
}

impl NodeModels {
    /// Models built from `model`, fed one sample every `sample_interval_s`;
    /// each container keeps enough history for its model to be warm again
    /// when rebuilt.
    pub fn new(model: ModelConfig, cfg: &ShaperConfig, sample_interval_s: f64) -> Self {
        let warm_samples = model.warm_samples();
        let history_cap = history_cap(warm_samples, cfg);
        Self {
            model,
            warm_samples,
            mem_hold: crate::models::hold_samples(cfg, sample_interval_s),
            small_hold: crate::models::small_hold_samples(cfg, sample_interval_s),
            sibling_hold: crate::models::sibling_hold_samples(cfg, sample_interval_s),
            history_cap,
            live: HashMap::new(),
            restored: HashMap::new(),
            retired: HashMap::new(),
            prior: PriorBook::new(),
            sample_interval_s,
            origin_s: None,
            vpa_apps: VpaWorkloads::new(cfg.prior_max_keys),
            vpa_next: 0,
            risk: RiskCalibration::new(),
        }
    }

    /// Containers with models.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Feeds container `c`'s sample (memory: its in-interval peak when
    /// known) and forecasts it. `None` when its models cannot be built.
    pub fn observe(
        &mut self,
        c: &ContainerSample,
        now_s: f64,
        horizon: usize,
        cfg: &ShaperConfig,
    ) -> Option<ContainerForecast> {
        let settings = cfg.prior_settings();
        let origin_s = *self.origin_s.get_or_insert(now_s);
        if !self.live.contains_key(&c.meta.id) {
            let keys = prior_keys(c);
            let (origin, history, held) = if let Some((h, p)) = self.restored.remove(&c.meta.id) {
                (ModelOrigin::Restored, h, p)
            } else if let Some(h) = self.retired.remove(&keys[0]) {
                (ModelOrigin::Inherited, h, HeldPeaks::default())
            } else {
                (ModelOrigin::Fresh, Vec::new(), HeldPeaks::default())
            };
            let built = self.build_models(&keys[1], c.request, history.len(), now_s - origin_s);
            let models = match built {
                Ok(m) => {
                    // its own checkpoint keeps its age; a predecessor's
                    // history does not
                    if origin == ModelOrigin::Restored {
                        m.with_held_peaks(held).restoring(&history)
                    } else {
                        m.inheriting(&history)
                    }
                }
                Err(e) => {
                    tracing::error!(container = %c.meta.name, error = %e, "model not built");
                    // keep the history for the next try
                    match origin {
                        ModelOrigin::Restored => {
                            self.restored.insert(c.meta.id.clone(), (history, held));
                        }
                        ModelOrigin::Inherited => {
                            self.retired.insert(keys[0].clone(), history);
                        }
                        ModelOrigin::Fresh => {}
                    }
                    return None;
                }
            };
            let mut live = Live {
                models,
                keys,
                recent: VecDeque::with_capacity(self.history_cap.min(history.len() + 1)),
                origin,
                request: c.request,
            };
            live.recent.extend(history);
            for k in &live.keys {
                self.prior.join(k, now_s, &settings);
            }
            if origin != ModelOrigin::Fresh {
                tracing::info!(
                    container = %c.meta.name,
                    origin = origin.as_str(),
                    samples = live.recent.len(),
                    "container models rebuilt from history"
                );
            }
            self.live.insert(c.meta.id.clone(), live);
        }
        if self
            .live
            .get(&c.meta.id)
            .is_some_and(|l| l.request != c.request)
        {
            self.request_changed(c, now_s - origin_s);
        }
        let live = self.live.get_mut(&c.meta.id)?;
        if let Some(s) = c.sample {
            let mem = s.mem_peak_bytes.map_or(s.mem_bytes, |p| p.max(s.mem_bytes));
            live.models.observe(s.cpu_cores, mem, c.request);
            let rel = RelSample {
                cpu: s
                    .cpu_cores
                    .map(|x| crate::models::normalise(x, c.request.cpu_cores)),
                mem: crate::models::normalise(mem, c.request.mem_bytes),
            };
            if live.recent.len() >= self.history_cap {
                live.recent.pop_front();
            }
            live.recent.push_back(rel);
        }
        if let Some((source, z)) = live.models.take_score(None, c.request.mem_bytes) {
            self.risk.observe(source, z);
        }
        let pending = live.models.take_pending();
        for k in &live.keys {
            self.prior.absorb(k, &pending, now_s, &settings);
        }
        let prior = self.prior.prior(&live.keys, now_s, &settings);
        let (forecast, source) =
            live.models
                .forecast_calibrated(horizon, c.request, cfg, prior.as_ref(), &self.risk);
        Some(ContainerForecast {
            forecast,
            source,
            samples: live.models.observed() as u64,
            origin: live.origin,
        })
    }

    /// Fresh models for a container of application key `app_key` and
    /// request `request`, whose first `history_len` samples are replayed
    /// next; `since_origin_s` is the time since the first sample seen.
    fn build_models(
        &mut self,
        app_key: &str,
        request: Resources,
        history_len: usize,
        since_origin_s: f64,
    ) -> Result<ComponentModels, forecaster::ForecastError> {
        let built = if self.model.kind == ModelKind::Vpa {
            // the history replayed next ends now
            let start_s = since_origin_s - history_len as f64 * self.sample_interval_s;
            let build = self.vpa_next;
            self.vpa_next += 1;
            self.vpa_apps.models(
                &self.model,
                &app_key.to_string(),
                build,
                start_s.max(0.0),
                self.sample_interval_s,
                request,
            )
        } else {
            ComponentModels::build(request, |r, unit| self.model.build_for(r, unit))
        }?;
        Ok(built
            .with_warm_samples(self.warm_samples)
            .with_mem_hold(self.mem_hold)
            .with_small_hold(self.small_hold)
            .with_sibling_hold(self.sibling_hold))
    }

    /// Container `c`'s request changed in place (a limit changed by hand,
    /// adopted as its request): its history and held peaks are rescaled to
    /// the new request and its models follow in place (the VPA) or are
    /// rebuilt from them, keeping its age ([`ComponentModels::continuing`]),
    /// as the simulator does at a trace's request change. If they cannot
    /// be built, the old ones stay.
    fn request_changed(&mut self, c: &ContainerSample, since_origin_s: f64) {
        let Some(live) = self.live.get_mut(&c.meta.id) else {
            return;
        };
        let from = live.request;
        live.request = c.request;
        rescale_history(live.recent.iter_mut(), from, c.request);
        // debug: a container without a limit, counted at the most it used,
        // changes request at each new high (the agent logs a change by hand)
        tracing::debug!(
            container = %c.meta.name,
            from_mem_bytes = from.mem_bytes,
            to_mem_bytes = c.request.mem_bytes,
            from_cpu_cores = from.cpu_cores,
            to_cpu_cores = c.request.cpu_cores,
            samples = live.recent.len(),
            "request changed: models follow it from the rescaled history"
        );
        if live.models.rescale_in_place(from, c.request) {
            return;
        }
        let history: Vec<RelSample> = live.recent.iter().copied().collect();
        let app_key = live.keys[1].clone();
        match self.build_models(&app_key, c.request, history.len(), since_origin_s) {
            Ok(m) => {
                if let Some(live) = self.live.get_mut(&c.meta.id) {
                    live.models = m.continuing(&live.models, &history, from, c.request);
                }
            }
            Err(e) => {
                tracing::error!(container = %c.meta.name, error = %e, "models not rebuilt after a request change");
            }
        }
    }

    /// Starts a round: the memory calibration's quantiles for
    /// `[shaper] memory_risk` are computed from the scores so far.
    pub fn begin_round(&mut self, cfg: &ShaperConfig) {
        self.risk.refresh(cfg.memory_risk);
    }

    /// The request container `id`'s models are relative to (the one of its
    /// last sample), if it is known.
    pub fn request_of(&self, id: &str) -> Option<Resources> {
        self.live.get(id).map(|l| l.request)
    }

    /// Container `id` was OOM-killed at `limit_bytes`; `floor_bytes` is
    /// its OOM floor ([`crate::oom::OomFloor`]). The kill scores its latest
    /// memory forecast (a peak at the limit). Its lineage's and
    /// application's memory high-water marks rise to the floor (relative to
    /// its request), as in the simulator: a recreated container and its
    /// young siblings start above the peak that killed it.
    pub fn oom_kill(
        &mut self,
        id: &str,
        limit_bytes: f64,
        floor_bytes: f64,
        now_s: f64,
        cfg: &ShaperConfig,
    ) {
        let Some(live) = self.live.get_mut(id) else {
            return;
        };
        if let Some((source, z)) = live
            .models
            .take_score(Some(limit_bytes), live.request.mem_bytes)
        {
            self.risk.observe(source, z);
        }
        let rel = crate::models::normalise(floor_bytes, live.request.mem_bytes);
        let age_samples = live.models.age_samples() as u64;
        let jump = live.models.jump_to(rel);
        let settings = cfg.prior_settings();
        for k in &live.keys {
            self.prior
                .raise_mem_high(k, rel, age_samples, jump, now_s, &settings);
        }
    }

    /// A container is gone: its history is kept under its lineage for a
    /// successor (the newest one wins; at most
    /// [`MAX_CHECKPOINT_CONTAINERS`] lineages are kept).
    pub fn forget(&mut self, id: &str) {
        self.restored.remove(id);
        if let Some(live) = self.live.remove(id) {
            let [lineage, _] = live.keys;
            if self.retired.len() < MAX_CHECKPOINT_CONTAINERS || self.retired.contains_key(&lineage)
            {
                self.retired.insert(lineage, live.recent.into());
            }
        }
    }

    /// Everything needed to rebuild the models after a restart.
    pub fn checkpoint(&self, now_s: f64) -> ModelCheckpoint {
        let mut containers: Vec<HistoryEntry> = self
            .live
            .iter()
            .map(|(id, l)| HistoryEntry {
                id: id.clone(),
                lineage: l.keys[0].clone(),
                samples: l.recent.iter().copied().collect(),
                held: l.models.held_peaks(),
                oom_floor: None,
            })
            .collect();
        containers.sort_by(|a, b| a.id.cmp(&b.id));
        let mut retired: Vec<HistoryEntry> = self
            .retired
            .iter()
            .map(|(lineage, s)| HistoryEntry {
                id: String::new(),
                lineage: lineage.clone(),
                samples: s.clone(),
                held: HeldPeaks::default(),
                oom_floor: None,
            })
            .collect();
        retired.sort_by(|a, b| a.lineage.cmp(&b.lineage));
        ModelCheckpoint {
            version: CHECKPOINT_VERSION,
            at_s: now_s,
            containers,
            retired,
            prior: self.prior.clone(),
        }
    }

    /// Takes a checkpoint's histories and priors: a container seen again
    /// gets its models rebuilt from its own history; one recreated under a
    /// retired name inherits that history. Bad values are dropped, sizes
    /// are bounded; an unknown version is refused whole.
    pub fn restore(
        &mut self,
        ck: ModelCheckpoint,
        cfg: &ShaperConfig,
    ) -> Result<usize, CheckpointError> {
        if ck.version != CHECKPOINT_VERSION {
            return Err(CheckpointError::Version(ck.version));
        }
        if ck.containers.len() + ck.retired.len() > MAX_CHECKPOINT_CONTAINERS {
            return Err(CheckpointError::TooLarge(
                ck.containers.len() + ck.retired.len(),
            ));
        }
        if ck.prior.len() > cfg.prior_max_keys {
            return Err(CheckpointError::TooManyPriorKeys(ck.prior.len()));
        }
        let n = ck.containers.len();
        for e in ck.containers {
            self.restored
                .insert(e.id, (clean(e.samples, self.history_cap), e.held));
        }
        for e in ck.retired {
            self.retired
                .insert(e.lineage, clean(e.samples, self.history_cap));
        }
        self.prior = ck.prior;
        Ok(n)
    }
}

/// Why a checkpoint was not restored.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CheckpointError {
    #[error("checkpoint version {0} is not {CHECKPOINT_VERSION}")]
    Version(u32),
    #[error("checkpoint holds {0} containers, more than {MAX_CHECKPOINT_CONTAINERS}")]
    TooLarge(usize),
    #[error("checkpoint holds {0} prior keys, more than [shaper] prior_max_keys")]
    TooManyPriorKeys(usize),
}

#[cfg(test)]
mod tests;

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
use crate::model::Forecasts;
use crate::models::{history_cap, ComponentModels, ForecastSource, HeldPeaks};
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
    /// Its memory request at its latest sample (bytes).
    request_mem_bytes: f64,
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
            let built = if self.model.kind == ModelKind::Vpa {
                // the history replayed below ends now
                let start_s = now_s - origin_s - history.len() as f64 * self.sample_interval_s;
                let build = self.vpa_next;
                self.vpa_next += 1;
                self.vpa_apps.models(
                    &self.model,
                    &keys[1],
                    build,
                    start_s.max(0.0),
                    self.sample_interval_s,
                    c.request,
                )
            } else {
                ComponentModels::build(c.request, |r, unit| self.model.build_for(r, unit))
            };
            let models = match built {
                Ok(m) => {
                    let m = m
                        .with_warm_samples(self.warm_samples)
                        .with_mem_hold(self.mem_hold)
                        .with_small_hold(self.small_hold)
                        .with_sibling_hold(self.sibling_hold);
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
                request_mem_bytes: c.request.mem_bytes,
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
        let live = self.live.get_mut(&c.meta.id)?;
        live.request_mem_bytes = c.request.mem_bytes;
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

    /// Starts a round: the memory calibration's quantiles for
    /// `[shaper] memory_risk` are computed from the scores so far.
    pub fn begin_round(&mut self, cfg: &ShaperConfig) {
        self.risk.refresh(cfg.memory_risk);
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
            .take_score(Some(limit_bytes), live.request_mem_bytes)
        {
            self.risk.observe(source, z);
        }
        let rel = crate::models::normalise(floor_bytes, live.request_mem_bytes);
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
mod tests {
    use super::*;
    use crate::model::Resources;
    use crate::node::{ContainerMeta, Sample};

    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

    fn cfg() -> ShaperConfig {
        ShaperConfig {
            min_history_samples: 3,
            ..ShaperConfig::default()
        }
    }

    fn model() -> ModelConfig {
        toml::from_str("kind = \"peak\"\ncalibrated = false").expect("model config")
    }

    fn sample(id: &str, name: &str, app: &str, mem_gib: f64) -> ContainerSample {
        ContainerSample {
            meta: ContainerMeta::core(id, name, app, 0.0),
            request: Resources::new(1.0, 2.0 * GIB),
            allocation: Resources::new(1.0, 2.0 * GIB),
            usage: Resources::new(0.1, mem_gib * GIB),
            sample: Some(Sample {
                cpu_cores: Some(0.1),
                mem_bytes: mem_gib * GIB,
                mem_peak_bytes: Some(mem_gib * 1.1 * GIB),
            }),
            app_failures: 0,
            oom_kills: 0,
        }
    }

    #[test]
    fn a_young_sibling_gets_the_prior_and_the_peak_is_fed() {
        let cfg = cfg();
        let mut m = NodeModels::new(model(), &cfg, 10.0);
        for t in 0..5 {
            let f = m
                .observe(&sample("a", "web-1", "web", 0.5), f64::from(t), 1, &cfg)
                .expect("models");
            if t >= 2 {
                assert_eq!(f.source, ForecastSource::Own);
                // the peak model saw the in-interval peaks: 0.55 GiB
                let mem = f.forecast.expect("own").mem.mean;
                assert!((mem - 0.55 * GIB).abs() < 1e3, "{mem}");
            }
        }
        let f = m
            .observe(&sample("b", "web-2", "web", 0.5), 5.0, 1, &cfg)
            .expect("models");
        assert_eq!(f.source, ForecastSource::Prior);
        assert_eq!(f.origin, ModelOrigin::Fresh);
        let mem = f.forecast.expect("prior").mem.mean;
        assert!((mem - 0.55 * GIB).abs() < 1e3, "{mem}");
        // a container of another application has no prior
        let f = m
            .observe(&sample("c", "db", "db", 0.5), 5.0, 1, &cfg)
            .expect("models");
        assert_eq!((f.forecast, f.source), (None, ForecastSource::Fallback));
    }

    #[test]
    fn a_kill_holds_the_later_siblings_through_its_age() {
        // `a` is OOM-killed after 4 samples at a 1 GiB limit (floor 1.2
        // GiB); `b`, of the same application, starts later: its memory is
        // sized from the floor through 4 samples of its own (no sibling
        // hold here), then from its own forecast alone, which keeps room
        // for the kill's rise above `a`'s own peak (0.55 GiB to the 1.2 GiB
        // floor) above its own 0.55 GiB peak with `sibling_jump`.
        for jump in [true, false] {
            let cfg = ShaperConfig {
                sibling_hold_s: 0.0,
                sibling_jump: jump,
                ..cfg()
            };
            let mut m = NodeModels::new(model(), &cfg, 10.0);
            for t in 0..4 {
                m.observe(
                    &sample("a", "web-1", "web", 0.5),
                    f64::from(t) * 10.0,
                    1,
                    &cfg,
                )
                .expect("models");
            }
            m.oom_kill("a", GIB, 1.2 * GIB, 40.0, &cfg);
            for n in 1..=6 {
                let now_s = 40.0 + f64::from(n) * 10.0;
                let f = m
                    .observe(&sample("b", "web-2", "web", 0.5), now_s, 1, &cfg)
                    .expect("models")
                    .forecast
                    .expect("forecast");
                let hold = f.mem_hold_bytes;
                let want = if n <= 4 { 1.2 * GIB } else { 0.0 };
                assert!((hold - want).abs() < 1e3, "sample {n}: {hold}");
                if n > 4 {
                    let want = if jump { 1.2 * GIB } else { 0.55 * GIB };
                    // (the priors decay a little in 50 s)
                    assert!(
                        (f.mem.mean - want).abs() < 0.01 * GIB,
                        "{jump} {n}: {}",
                        f.mem.mean / GIB
                    );
                }
            }
        }
    }

    #[test]
    fn vpa_models_of_one_application_share_its_aggregates() {
        let cfg = cfg();
        let vpa = ModelConfig {
            kind: ModelKind::Vpa,
            calibrated: false,
            ..ModelConfig::default()
        };
        let mut m = NodeModels::new(vpa, &cfg, 10.0);
        for t in 0..3 {
            let now = f64::from(t) * 10.0;
            for (id, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
                m.observe(&sample(id, id, app, 0.5), now, 1, &cfg)
                    .expect("vpa models");
            }
        }
        assert_eq!(m.vpa_apps.len(), 2, "web and db");
    }

    #[test]
    fn recreated_containers_inherit_and_checkpoints_restore() {
        let cfg = cfg();
        let mut m = NodeModels::new(model(), &cfg, 10.0);
        for t in 0..4 {
            m.observe(&sample("a", "web", "web", 0.5), f64::from(t), 1, &cfg);
        }
        m.forget("a");
        let f = m
            .observe(&sample("a2", "web", "web", 0.5), 10.0, 1, &cfg)
            .expect("models");
        assert_eq!(f.origin, ModelOrigin::Inherited);
        assert_eq!(f.source, ForecastSource::Own);
        assert_eq!(f.samples, 5);

        let ck = m.checkpoint(11.0);
        let text = serde_json::to_string(&ck).expect("serialises");
        let back: ModelCheckpoint = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, ck);
        let mut fresh = NodeModels::new(model(), &cfg, 10.0);
        assert_eq!(fresh.restore(back, &cfg), Ok(1));
        let f = fresh
            .observe(&sample("a2", "web", "web", 0.5), 20.0, 1, &cfg)
            .expect("models");
        assert_eq!(f.origin, ModelOrigin::Restored);
        assert_eq!(f.source, ForecastSource::Own, "first round after restart");
        assert_eq!(f.samples, 6);
    }

    #[test]
    fn a_restart_keeps_the_held_peaks_older_than_the_history() {
        // A 1.1 GiB peak, then more samples at 0.55 GiB than a checkpoint
        // keeps: the restored models still hold the peak (the day's hold,
        // and a small application's week), as the running ones did. (No
        // sibling hold or jump: the application's prior holds the same
        // peak for young containers.)
        let cfg = ShaperConfig {
            sibling_hold_s: 0.0,
            sibling_jump: false,
            ..cfg()
        };
        let mut m = NodeModels::new(model(), &cfg, 10.0);
        let mut t = 0.0;
        m.observe(&sample("a", "web", "web", 1.0), t, 1, &cfg);
        for _ in 0..m.history_cap + 10 {
            t += 10.0;
            m.observe(&sample("a", "web", "web", 0.5), t, 1, &cfg);
        }
        let mem = |m: &mut NodeModels, t: f64| {
            m.observe(&sample("a", "web", "web", 0.5), t, 1, &cfg)
                .expect("models")
                .forecast
                .expect("warm")
                .mem
                .mean
        };
        assert!((mem(&mut m, t + 10.0) - 1.1 * GIB).abs() < 1e3);
        let ck = m.checkpoint(t + 10.0);
        let held = ck.containers[0].held;
        assert!((held.day_rel - 0.55).abs() < 1e-9, "{held:?}");
        assert!((held.week_rel - 0.55).abs() < 1e-9, "{held:?}");
        let text = serde_json::to_string(&ck).expect("serialises");
        let back: ModelCheckpoint = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, ck);
        let mut restored = NodeModels::new(model(), &cfg, 10.0);
        restored.restore(back, &cfg).expect("restored");
        assert!((mem(&mut restored, t + 20.0) - 1.1 * GIB).abs() < 1e3);
        // without them (a checkpoint of an older agent), the history alone
        let mut older = ck.clone();
        older.containers[0].held = HeldPeaks::default();
        let text = serde_json::to_string(&older).expect("serialises");
        assert!(!text.contains("held"), "{text}");
        let mut restored = NodeModels::new(model(), &cfg, 10.0);
        restored.restore(older, &cfg).expect("restored");
        assert!((mem(&mut restored, t + 20.0) - 0.55 * GIB).abs() < 1e3);
    }

    #[test]
    fn bad_checkpoints_are_refused_or_cleaned() {
        let cfg = cfg();
        let mut m = NodeModels::new(model(), &cfg, 10.0);
        let mut ck = m.checkpoint(0.0);
        ck.version = 99;
        assert_eq!(m.restore(ck, &cfg), Err(CheckpointError::Version(99)));
        let ck = ModelCheckpoint {
            version: CHECKPOINT_VERSION,
            at_s: 0.0,
            containers: vec![HistoryEntry {
                id: "x".into(),
                lineage: "name:x".into(),
                samples: (0..10_000)
                    .map(|i| {
                        let bad = i % 2 == 0;
                        RelSample {
                            cpu: Some(if bad { f64::NAN } else { 0.1 }),
                            mem: if bad { f64::INFINITY } else { 0.25 },
                        }
                    })
                    .collect(),
                held: HeldPeaks {
                    day_rel: f64::NAN,
                    week_rel: -1.0,
                },
            }],
            retired: vec![],
            prior: PriorBook::new(),
        };
        assert_eq!(m.restore(ck, &cfg), Ok(1));
        let f = m
            .observe(&sample("x", "x", "x", 0.5), 1.0, 1, &cfg)
            .expect("models");
        assert_eq!(f.samples as usize, m.history_cap + 1);
        assert!(f.forecast.expect("warm").mem.mean.is_finite());
        let e = serde_json::from_str::<ModelCheckpoint>("{\"version\":1,\"x\":2}");
        assert!(e.is_err());
    }
}

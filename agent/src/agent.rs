//! The agent loop: sample, forecast, plan, actuate, restart, report.
//!
//! One [`Agent::round`]:
//! 1. drain runtime events (OOM kills are counted and handed to the kernel,
//!    whose OOM floor raises the container's next memory allocation);
//! 2. list managed containers, inspect new / changed ones (and every
//!    container every `reinspect_every` rounds);
//! 3. one stats sample per running container (concurrently): CPU cores from
//!    the cumulative counter's delta, memory working set;
//! 4. hand the samples to the kernel's [`NodeKernel`] (off the async
//!    runtime, `spawn_blocking`): it feeds the models, forecasts and builds
//!    the [`NodeView`] (OOM floors applied);
//! 5. ask the [`PlanSource`] for actions (not
//!    during the agent's first `warmup_rounds` rounds: right after an agent
//!    (re)start no container has a forecast, and containers without one
//!    count at their request, which would bounce every shaped container
//!    back to its request or evict to make room for requests);
//! 6. `shape`: apply them in the plan's order (the kernel's apply order:
//!    shrinks, evictions, growths); `recommend`: record them only;
//! 7. restart evicted containers, oldest eviction first, while their
//!    request fits in the room left.
//!
//! A failing call for one container is counted and skipped; a daemon that
//! is down fails the round (the loop backs off and retries).

use crate::config::{Actuation, AgentConfig, ShutdownPolicy};
use crate::labels::{self, ComponentLabels};
use crate::metrics::Metrics;
use crate::runtime::{
    ContainerInfo, ContainerRuntime, ContainerState, CpuLimit, HostInfo, Limits, ResourceUpdate,
    RuntimeError, RuntimeEvent,
};
use crate::state::{Eviction, PersistedState, StateStore};
use crate::view::{
    ActionOutcome, ContainerSample, NodeAction, NodeActionKind, NodePlan, NodeView, Outcome,
    PlanSource, PlanSourceError, Sample,
};
use crate::AgentError;
use datasets::recording::RecordWriter;
use futures_util::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use shaper::node::NodeKernel;
use shaper::record::{KernelEvent, Record, RecordingHeader, RoundRecord, RECORD_VERSION};
use shaper::Plan;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tailor_core::{Clock, Resources};
use tokio::sync::mpsc;

/// How many stats calls run at once. Docker answers a stats call (even
/// `one-shot`) at its stats collector's next tick (every second), so each
/// call waits ~1 s whatever the load: calls in flight together are served by
/// the same tick. With 16 at a time, 200 containers took ~14 s per round
/// (longer than the 10 s interval); 256 keeps a round near one tick per 256
/// containers (an idle socket and an 8 KiB buffer each while waiting).
const STATS_CONCURRENCY: usize = 256;
/// Memory limits are set in whole pages (restored limits of unlimited
/// containers are rounded down to one).
const PAGE: u64 = 4096;
const MIB: f64 = 1024.0 * 1024.0;

/// One round's result: what was seen, decided and done. Served at
/// `/v1/decisions` and printed by `tailor agent --once`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundReport {
    pub round: u64,
    pub at_s: f64,
    pub actuation: Actuation,
    /// Where the plan came from (`local`, `cluster`, ...).
    pub source: String,
    pub view: NodeView,
    /// Every action with its result, in the order applied.
    pub outcomes: Vec<ActionOutcome>,
    /// Evicted containers restarted this round (names).
    pub restarted: Vec<String>,
    /// Per-container problems this round (the round still completed).
    pub errors: Vec<String>,
    /// The shaper's plan when computed locally (with full explanations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
}

/// State shared with the HTTP endpoint.
#[derive(Debug)]
pub struct Shared {
    pub metrics: Metrics,
    pub last: RwLock<Option<RoundReport>>,
    pub interval_s: f64,
    /// Unix seconds when the agent started.
    pub started_unix_s: f64,
}

impl Shared {
    /// The last round's report.
    pub fn last_report(&self) -> Option<RoundReport> {
        self.last.read().ok().and_then(|g| g.clone())
    }
}

/// What the agent knows about one managed container.
#[derive(Clone, Debug)]
struct Tracked {
    info: ContainerInfo,
    labels: ComponentLabels,
    /// (cumulative CPU ns, sample time) of the previous sample.
    last_cpu: Option<(u64, f64)>,
    usage: Resources,
    /// This round's sample, handed to the kernel.
    sample: Option<Sample>,
    oom_kills: u32,
    /// Times (daemon clock) of streamed OOM events not yet matched with an
    /// OOM-killed exit seen by `inspect` (newest last, at most
    /// [`MAX_PENDING_OOMS`]).
    streamed_ooms: Vec<Option<f64>>,
    /// End of an OOM-killed run counted from `inspect` whose streamed event
    /// may still arrive late (then it is not counted again).
    recovered_oom_exit: Option<f64>,
    needs_inspect: bool,
}

/// Streamed OOM events remembered per container for matching.
const MAX_PENDING_OOMS: usize = 8;

/// True when an OOM event at `event_s` and an OOM-killed exit at `exit_s`
/// (both the daemon's clock) are the same kill: the event comes first, the
/// exit within seconds.
fn same_oom(event_s: Option<f64>, exit_s: f64) -> bool {
    event_s.is_none_or(|e| exit_s >= e - 1.0 && exit_s <= e + 10.0)
}

/// The per-node agent over a container runtime `R`.
pub struct Agent<R: ContainerRuntime + ?Sized> {
    cfg: AgentConfig,
    runtime: Arc<R>,
    source: Box<dyn PlanSource>,
    clock: Arc<dyn Clock>,
    shared: Arc<Shared>,
    tracked: BTreeMap<String, Tracked>,
    /// The sizing kernel (models, OOM floors); `None` only while it runs
    /// off the async runtime.
    kernel: Option<NodeKernel>,
    /// What was told to the kernel this round before the samples (recorded).
    round_events: Vec<KernelEvent>,
    /// `[record]`: the recording, while it is on.
    recorder: Option<RecordWriter>,
    /// This round's samples as given to the kernel (kept only when recording).
    round_samples: Vec<ContainerSample>,
    /// Containers whose labels the recording holds already.
    recorded_labels: std::collections::HashSet<String>,
    state: PersistedState,
    store: StateStore,
    host: Option<HostInfo>,
    round: u64,
    events_rx: Option<mpsc::UnboundedReceiver<RuntimeEvent>>,
    events_task: Option<tokio::task::JoinHandle<()>>,
}

impl<R: ContainerRuntime + ?Sized> Drop for Agent<R> {
    fn drop(&mut self) {
        if let Some(t) = self.events_task.take() {
            t.abort();
        }
    }
}

impl<R: ContainerRuntime + ?Sized> Agent<R> {
    /// A new agent. Validates the config and checks that the forecaster can
    /// be built; loads the persisted state.
    pub fn new(
        mut cfg: AgentConfig,
        runtime: Arc<R>,
        source: Box<dyn PlanSource>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, AgentError> {
        cfg.validate()?;
        let forced_recommend = crate::podman::force_recommend(&mut cfg, runtime.as_ref());
        let kernel = NodeKernel::new(cfg.shaper.clone(), cfg.forecaster.clone(), cfg.interval_s)?;
        let recorder = match (cfg.record.enabled, cfg.record_path()) {
            (true, Some(path)) => {
                let mut w = RecordWriter::create(&path, cfg.record.max_bytes)?;
                w.append(&Record::Header(Box::new(RecordingHeader {
                    version: RECORD_VERSION,
                    node: cfg.node_name.clone().unwrap_or_else(|| "node".to_string()),
                    interval_s: cfg.interval_s,
                    actuation: cfg.actuation.as_str().to_string(),
                    mode: cfg.mode.as_str().to_string(),
                    shaper: cfg.shaper.clone(),
                    forecaster: cfg.forecaster.clone(),
                })))?;
                tracing::info!(path = %path.display(), max_bytes = cfg.record.max_bytes, "recording");
                Some(w)
            }
            _ => None,
        };
        let store = StateStore::new(&cfg.state_file);
        let state = store.load();
        let metrics = Metrics::new();
        metrics.runtime_capabilities(runtime.can_update(), forced_recommend);
        let shared = Arc::new(Shared {
            metrics,
            last: RwLock::new(None),
            interval_s: cfg.interval_s,
            started_unix_s: tailor_core::SystemClock.now_s(),
        });
        Ok(Self {
            cfg,
            runtime,
            source,
            clock,
            shared,
            tracked: BTreeMap::new(),
            kernel: Some(kernel),
            round_events: Vec::new(),
            round_samples: Vec::new(),
            recorded_labels: std::collections::HashSet::new(),
            recorder,
            state,
            store,
            host: None,
            round: 0,
            events_rx: None,
            events_task: None,
        })
    }

    /// The state shared with the HTTP endpoint (metrics, last report).
    pub fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    pub fn config(&self) -> &AgentConfig {
        &self.cfg
    }

    /// Evicted containers waiting for room, oldest first.
    pub fn evicted(&self) -> &[Eviction] {
        &self.state.evicted
    }

    /// Subscribes to runtime events in a background task that resubscribes
    /// with backoff (1 s doubling to 30 s) when the stream breaks. Events are
    /// handled at the start of each round. Needs a tokio runtime.
    pub fn start_event_listener(&mut self) {
        if let Some(t) = self.events_task.take() {
            t.abort();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let runtime = self.runtime.clone();
        let shared = self.shared.clone();
        self.events_rx = Some(rx);
        self.events_task = Some(tokio::spawn(async move {
            let mut backoff = Duration::from_secs(1);
            loop {
                let mut events = runtime.events();
                while let Some(ev) = events.next().await {
                    match ev {
                        Ok(ev) => {
                            backoff = Duration::from_secs(1);
                            if tx.send(ev).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            shared.metrics.runtime_error("events");
                            tracing::warn!(error = %e, "runtime event stream failed; resubscribing");
                            break;
                        }
                    }
                }
                if tx.is_closed() {
                    return;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }));
    }

    fn capacity(&self) -> Resources {
        let host = self.host.as_ref();
        let cpu = self
            .cfg
            .capacity
            .cpu_cores
            .unwrap_or_else(|| host.map(|h| f64::from(h.ncpu)).unwrap_or(0.0));
        let mem = self
            .cfg
            .capacity
            .mem_bytes
            .unwrap_or_else(|| host.map(|h| h.mem_total_bytes as f64).unwrap_or(0.0));
        Resources::new(
            (cpu - self.cfg.capacity.reserved_cpu_cores).max(0.0),
            (mem - self.cfg.capacity.reserved_mem_bytes).max(0.0),
        )
    }

    fn drain_events(&mut self, now_s: f64) {
        let Some(rx) = self.events_rx.as_mut() else {
            return;
        };
        let mut events = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            events.push(ev);
        }
        for ev in events {
            let Some(t) = self.tracked.get_mut(ev.id()) else {
                continue;
            };
            match ev {
                RuntimeEvent::Oom { id, at_s } => {
                    if let (Some(e), Some(f)) = (at_s, t.recovered_oom_exit) {
                        if same_oom(Some(e), f) {
                            // counted already: inspect saw the exit before the event came
                            t.recovered_oom_exit = None;
                            continue;
                        }
                    }
                    if t.streamed_ooms.len() == MAX_PENDING_OOMS {
                        t.streamed_ooms.remove(0);
                    }
                    t.streamed_ooms.push(at_s);
                    self.count_oom(&id, now_s, false);
                }
                RuntimeEvent::Die { .. } | RuntimeEvent::Start { .. } => t.needs_inspect = true,
                RuntimeEvent::Destroy { .. } => t.needs_inspect = true,
            }
        }
    }

    /// Counts an OOM kill of a tracked container and makes its next memory
    /// allocation grow: usage floor and request at least
    /// `max(limit + oom_bump_bytes, limit * oom_bump_factor)` for
    /// `oom_memory_s`. `recovered`: found by `inspect`, not by the stream.
    fn count_oom(&mut self, id: &str, now_s: f64, recovered: bool) {
        let Some(t) = self.tracked.get_mut(id) else {
            return;
        };
        t.oom_kills += 1;
        self.shared.metrics.oom_event(recovered);
        let limit = t
            .info
            .limits
            .mem_bytes
            .map(|m| m as f64)
            .unwrap_or(t.usage.mem_bytes);
        let event = KernelEvent::OomKill {
            container_id: id.to_string(),
            limit_bytes: limit,
            at_s: now_s,
        };
        // the kernel records the floor; the same event goes to the recording
        let floor = self
            .kernel
            .as_mut()
            .map_or(limit, |k| k.oom_kill(id, limit, now_s).mem_bytes);
        self.round_events.push(event);
        *self
            .state
            .app_failures
            .entry(t.labels.app.clone())
            .or_default() += 1;
        let how = if recovered {
            "OOM kill found by inspect (missed by the event stream)"
        } else {
            "OOM kill"
        };
        tracing::warn!(
            container = %t.info.name,
            limit_mib = limit / MIB,
            next_floor_mib = floor / MIB,
            "{how}; next memory allocation grows"
        );
    }

    /// One full round. On success the report is also stored for
    /// `/v1/decisions`.
    pub async fn round(&mut self) -> Result<RoundReport, AgentError> {
        let started = Instant::now();
        self.round += 1;
        let now_s = self.clock.now_s();
        self.drain_events(now_s);
        let result = self.round_inner(now_s).await;
        let ok = result.is_ok();
        self.shared.metrics.round(
            ok,
            started.elapsed().as_secs_f64(),
            tailor_core::SystemClock.now_s(),
        );
        match &result {
            Ok(report) => {
                if let Ok(mut last) = self.shared.last.write() {
                    *last = Some(report.clone());
                }
            }
            Err(e) => {
                if let AgentError::Runtime(r) = e {
                    if r.is_unavailable() {
                        self.shared.metrics.docker_up(false);
                    }
                }
            }
        }
        result
    }

    /// Samples and feeds the forecasters only (no plan, no actuation): for
    /// warming up models before `--once`.
    pub async fn sample_only(&mut self) -> Result<NodeView, AgentError> {
        self.round += 1;
        let now_s = self.clock.now_s();
        self.drain_events(now_s);
        let mut errors = Vec::new();
        self.sample(now_s, &mut errors).await?;
        let view = self.build_view(now_s).await;
        self.record_round(&view, "warm-up", None);
        Ok(view)
    }

    async fn sample(&mut self, now_s: f64, errors: &mut Vec<String>) -> Result<(), AgentError> {
        let reinspect = self
            .round
            .is_multiple_of(u64::from(self.cfg.reinspect_every));
        if self.host.is_none() || reinspect {
            match self.runtime.host_info().await {
                Ok(h) => self.host = Some(h),
                Err(e) => {
                    self.shared.metrics.runtime_error("host_info");
                    if self.host.is_none() || e.is_unavailable() {
                        return Err(e.into());
                    }
                }
            }
        }
        let list = match self.runtime.list(&self.cfg.selector.label_filter()).await {
            Ok(l) => l,
            Err(e) => {
                self.shared.metrics.runtime_error("list");
                return Err(e.into());
            }
        };
        self.shared.metrics.docker_up(true);
        let mut dirty = false;
        let listed: BTreeSet<String> = list.iter().map(|s| s.id.clone()).collect();
        for s in &list {
            if !self.cfg.selector.matches(&s.labels) {
                continue;
            }
            let need = match self.tracked.get(&s.id) {
                None => true,
                Some(t) => t.needs_inspect || t.info.state != s.state || reinspect,
            };
            if !need {
                continue;
            }
            match self.runtime.inspect(&s.id).await {
                Ok(info) => dirty |= self.track(info, now_s),
                Err(RuntimeError::NotFound(_)) => {
                    self.tracked.remove(&s.id);
                }
                Err(e) => {
                    self.shared.metrics.runtime_error("inspect");
                    errors.push(format!("inspect {}: {e}", s.name));
                    if e.is_unavailable() {
                        return Err(e.into());
                    }
                }
            }
        }
        // vanished containers
        let gone: Vec<String> = self
            .tracked
            .keys()
            .filter(|id| !listed.contains(*id))
            .cloned()
            .collect();
        for id in gone {
            self.tracked.remove(&id);
            let event = KernelEvent::Forget {
                container_id: id.clone(),
            };
            if let Some(k) = self.kernel.as_mut() {
                k.apply(&event);
            }
            self.round_events.push(event);
            dirty |= self.state.originals.remove(&id).is_some();
            dirty |= self.state.oom_exits.remove(&id).is_some();
        }
        let before = self.state.evicted.len();
        let tracked = &self.tracked;
        self.state.evicted.retain(|e| {
            tracked
                .get(&e.id)
                .is_some_and(|t| t.info.state != ContainerState::Running)
        });
        dirty |= self.state.evicted.len() != before;
        if dirty {
            self.save_state();
        }

        // stats, concurrently
        let running: Vec<String> = self
            .tracked
            .iter()
            .filter(|(_, t)| t.info.state == ContainerState::Running)
            .map(|(id, _)| id.clone())
            .collect();
        let runtime = self.runtime.clone();
        let results: Vec<(String, Result<crate::runtime::ContainerStats, RuntimeError>)> =
            stream::iter(running)
                .map(|id| {
                    let runtime = runtime.clone();
                    async move {
                        let r = runtime.stats(&id).await;
                        (id, r)
                    }
                })
                .buffer_unordered(STATS_CONCURRENCY)
                .collect()
                .await;
        for t in self.tracked.values_mut() {
            t.sample = None;
        }
        let mut unavailable = 0usize;
        let total = results.len();
        for (id, r) in results {
            let Some(t) = self.tracked.get_mut(&id) else {
                continue;
            };
            match r {
                Ok(st) => {
                    let mem = st.working_set_bytes() as f64;
                    let cpu = match t.last_cpu {
                        Some((prev_ns, prev_s)) if st.cpu_total_ns >= prev_ns && now_s > prev_s => {
                            Some((st.cpu_total_ns - prev_ns) as f64 / 1e9 / (now_s - prev_s))
                        }
                        _ => None,
                    };
                    t.last_cpu = Some((st.cpu_total_ns, now_s));
                    t.usage = Resources::new(cpu.unwrap_or(t.usage.cpu_cores), mem);
                    t.sample = Some(Sample {
                        cpu_cores: cpu,
                        mem_bytes: mem,
                        mem_peak_bytes: None,
                    });
                }
                Err(RuntimeError::NotFound(_)) => t.needs_inspect = true,
                Err(e) => {
                    self.shared.metrics.runtime_error("stats");
                    errors.push(format!("stats {}: {e}", t.info.name));
                    if e.is_unavailable() {
                        unavailable += 1;
                    }
                }
            }
        }
        if total > 0 && unavailable == total {
            return Err(RuntimeError::Unavailable("every stats call failed".into()).into());
        }
        Ok(())
    }

    /// Records a freshly inspected container. An OOM-killed last run that
    /// was not counted yet (Docker's `State.OOMKilled` + `FinishedAt`) is
    /// counted here unless a streamed OOM event already did: OOM kills that
    /// happen while the event stream is down are not lost. Returns true
    /// when the persisted state changed.
    fn track(&mut self, info: ContainerInfo, now_s: f64) -> bool {
        let mut dirty = false;
        // a container this agent (or its previous run) already knew
        let known =
            self.tracked.contains_key(&info.id) || self.state.originals.contains_key(&info.id);
        if !known {
            self.state.originals.insert(info.id.clone(), info.limits);
            dirty = true;
        }
        let new_oom_exit = match (info.oom_killed, info.finished_s) {
            (true, Some(f))
                if self
                    .state
                    .oom_exits
                    .get(&info.id)
                    .is_none_or(|&k| (k - f).abs() > 1e-3) =>
            {
                self.state.oom_exits.insert(info.id.clone(), f);
                dirty = true;
                Some(f)
            }
            _ => None,
        };
        let id = info.id.clone();
        let parsed = labels::parse(&info.name, &info.labels);
        match self.tracked.get_mut(&info.id) {
            Some(t) => {
                if t.info.started_s != info.started_s {
                    // restarted: the CPU counter starts again
                    t.last_cpu = None;
                }
                t.info = info;
                t.labels = parsed;
                t.needs_inspect = false;
            }
            None => {
                for (label, problem) in &parsed.problems {
                    tracing::warn!(container = %info.name, label = %label, "{problem}");
                }
                self.tracked.insert(
                    info.id.clone(),
                    Tracked {
                        info,
                        labels: parsed,
                        last_cpu: None,
                        usage: Resources::ZERO,
                        sample: None,
                        oom_kills: 0,
                        streamed_ooms: Vec::new(),
                        recovered_oom_exit: None,
                        needs_inspect: false,
                    },
                );
            }
        }
        if let (Some(f), Some(t)) = (new_oom_exit, self.tracked.get_mut(&id)) {
            if let Some(i) = t.streamed_ooms.iter().position(|&e| same_oom(e, f)) {
                // the stream told us already
                t.streamed_ooms.remove(i);
            } else if known {
                t.recovered_oom_exit = Some(f);
                self.count_oom(&id, now_s, true);
            }
        }
        dirty
    }

    /// The limits a container was started with (its request), as first
    /// seen by this agent or a previous run of it.
    fn original_limits(&self, t: &Tracked) -> Limits {
        self.state
            .originals
            .get(&t.info.id)
            .copied()
            .unwrap_or(t.info.limits)
    }

    fn request_of(&self, t: &Tracked, cap: Resources) -> Resources {
        let orig = self.original_limits(t);
        Resources::new(
            t.labels
                .request_cpu_cores
                .or(orig.cpu.cores())
                .unwrap_or(cap.cpu_cores),
            t.labels
                .request_mem_bytes
                .or(orig.mem_bytes.map(|m| m as f64))
                .unwrap_or(cap.mem_bytes),
        )
    }

    fn allocation_of(t: &Tracked, cap: Resources) -> Resources {
        Resources::new(
            t.info.limits.cpu.cores().unwrap_or(cap.cpu_cores),
            t.info
                .limits
                .mem_bytes
                .map(|m| m as f64)
                .unwrap_or(cap.mem_bytes),
        )
    }

    /// What the agent saw this round, per running container, before any
    /// kernel rule (also what a recording stores).
    fn container_samples(&self, now_s: f64) -> Vec<ContainerSample> {
        let cap = self.capacity();
        self.tracked
            .values()
            .filter(|t| t.info.state == ContainerState::Running)
            .map(|t| ContainerSample {
                id: t.info.id.clone(),
                name: t.info.name.clone(),
                app: t.labels.app.clone(),
                class: t.labels.class,
                priority: t.labels.priority,
                protected: t.labels.protected,
                started_s: t.info.started_s.unwrap_or(now_s),
                request: self.request_of(t, cap),
                allocation: Self::allocation_of(t, cap),
                usage: t.usage,
                sample: t.sample,
                app_failures: self
                    .state
                    .app_failures
                    .get(&t.labels.app)
                    .copied()
                    .unwrap_or(0),
                oom_kills: t.oom_kills,
            })
            .collect()
    }

    /// Appends this round to the recording (when `[record]` is on): the
    /// events and samples given to the kernel, its forecasts, and the
    /// decisions (`None` when no plan was made).
    fn record_round(&mut self, view: &NodeView, source: &str, decisions: Option<&[NodeAction]>) {
        let events = std::mem::take(&mut self.round_events);
        let containers = std::mem::take(&mut self.round_samples);
        let Some(w) = self.recorder.as_mut() else {
            return;
        };
        let mut labels = BTreeMap::new();
        for c in &containers {
            if self.recorded_labels.insert(c.id.clone()) {
                if let Some(t) = self.tracked.get(&c.id) {
                    labels.insert(c.id.clone(), t.info.labels.clone());
                }
            }
        }
        let record = Record::Round(RoundRecord {
            round: view.round,
            at_s: view.at_s,
            capacity: view.capacity,
            events,
            forecasts: view.containers.iter().map(|c| c.forecast).collect(),
            containers,
            labels,
            source: source.to_string(),
            decisions: decisions.map(<[NodeAction]>::to_vec),
        });
        match w.append(&record) {
            Ok(true) => {}
            Ok(false) => {
                // bound reached (logged once by the writer)
                self.recorder = None;
            }
            Err(e) => {
                tracing::error!(error = %e, "recording failed; recording stopped");
                self.recorder = None;
            }
        }
    }

    /// Hands this round's samples to the kernel (off the async runtime):
    /// models are fed, forecasts made, OOM floors applied.
    async fn build_view(&mut self, now_s: f64) -> NodeView {
        let samples = self.container_samples(now_s);
        if self.recorder.is_some() {
            self.round_samples = samples.clone();
        }
        let node = self
            .cfg
            .node_name
            .clone()
            .or_else(|| self.host.as_ref().map(|h| h.name.clone()))
            .unwrap_or_else(|| "node".to_string());
        let capacity = self.capacity();
        let mut view = match self.kernel.take() {
            Some(mut kernel) => {
                let joined = tokio::task::spawn_blocking(move || {
                    let view = kernel.observe(&node, now_s, capacity, samples);
                    (kernel, view)
                })
                .await;
                match joined {
                    Ok((kernel, view)) => {
                        self.kernel = Some(kernel);
                        view
                    }
                    Err(e) => {
                        // a model panicked: its state is lost, rebuild from scratch
                        tracing::error!(error = %e, "kernel task failed; models reset");
                        self.kernel = NodeKernel::new(
                            self.cfg.shaper.clone(),
                            self.cfg.forecaster.clone(),
                            self.cfg.interval_s,
                        )
                        .ok();
                        NodeView {
                            at_s: now_s,
                            capacity: self.capacity(),
                            ..NodeView::default()
                        }
                    }
                }
            }
            None => NodeView {
                at_s: now_s,
                capacity,
                ..NodeView::default()
            },
        };
        view.round = self.round;
        view.evicted = self.state.evicted.iter().map(|e| e.name.clone()).collect();
        view
    }

    async fn round_inner(&mut self, now_s: f64) -> Result<RoundReport, AgentError> {
        let mut errors = Vec::new();
        self.sample(now_s, &mut errors).await?;
        let view = self.build_view(now_s).await;
        if self.round <= u64::from(self.cfg.warmup_rounds) {
            // the agent's own warm-up: models fill up, nothing is planned
            self.record_round(&view, "warm-up", None);
            return Ok(RoundReport {
                round: self.round,
                at_s: now_s,
                actuation: self.cfg.actuation,
                source: "warm-up".to_string(),
                view,
                outcomes: Vec::new(),
                restarted: Vec::new(),
                errors,
                plan: None,
            });
        }
        let planned = self.source.plan(&view).await;
        self.shared
            .metrics
            .shaper_link(self.source.link_status(now_s));
        let plan: NodePlan = match planned {
            Ok(p) => p,
            Err(e) => {
                self.shared.metrics.plan_source_error();
                self.record_round(&view, "error", None);
                return Err(e.into());
            }
        };
        self.record_round(&view, &plan.source, Some(&plan.actions));
        let outcomes = self.apply(&view, &plan.actions, now_s).await;
        self.source.outcomes(&outcomes).await;
        let restarted = if self.cfg.actuation == Actuation::Shape && self.cfg.restart_evicted {
            self.restart_evicted(now_s).await
        } else {
            Vec::new()
        };
        let cap = view.capacity;
        let running = self
            .tracked
            .values()
            .filter(|t| t.info.state == ContainerState::Running);
        let allocated = running
            .clone()
            .fold(Resources::ZERO, |a, t| a.add(&Self::allocation_of(t, cap)));
        self.shared.metrics.node(
            running.count() as u64,
            self.state.evicted.len() as u64,
            cap,
            allocated,
            view.requested(),
            view.used(),
        );
        for o in &outcomes {
            log_outcome(o);
        }
        Ok(RoundReport {
            round: self.round,
            at_s: now_s,
            actuation: self.cfg.actuation,
            source: plan.source,
            view,
            outcomes,
            restarted,
            errors,
            plan: plan.plan,
        })
    }

    /// The runtime update for a planned allocation. Floors and rounding
    /// are the kernel's (the plan is already in millicores and pages); this
    /// only keeps the kind of CPU limit the container was started with.
    fn limits_update(&self, t: &Tracked, to: Resources) -> ResourceUpdate {
        let orig = self.original_limits(t);
        let kind = if matches!(t.info.limits.cpu, CpuLimit::Quota { .. }) {
            t.info.limits.cpu
        } else {
            orig.cpu
        };
        ResourceUpdate {
            mem_bytes: Some(to.mem_bytes.ceil() as u64),
            cpu: Some(kind.with_cores(to.cpu_cores)),
            mem_swap_bytes: None,
        }
    }

    async fn apply(
        &mut self,
        view: &NodeView,
        actions: &[NodeAction],
        now_s: f64,
    ) -> Vec<ActionOutcome> {
        let shape = self.cfg.actuation == Actuation::Shape;
        let mut outcomes = Vec::with_capacity(actions.len());
        let mut failed_apps: BTreeSet<String> = BTreeSet::new();
        let mut dirty = false;
        // the plan's order is the kernel's apply order
        for a in actions {
            let kind = match a.kind {
                NodeActionKind::Evict { .. } => "evict",
                NodeActionKind::Resize { .. } => "resize",
            };
            let outcome = |result: Outcome, error: Option<String>| ActionOutcome {
                action: a.clone(),
                result,
                error,
            };
            let Some(t) = self.tracked.get(&a.container_id).cloned() else {
                self.shared.metrics.action(kind, Outcome::Refused.as_str());
                outcomes.push(outcome(
                    Outcome::Refused,
                    Some("not a managed container".into()),
                ));
                continue;
            };
            if t.info.state != ContainerState::Running {
                self.shared.metrics.action(kind, Outcome::Refused.as_str());
                outcomes.push(outcome(
                    Outcome::Refused,
                    Some("container is not running".into()),
                ));
                continue;
            }
            match &a.kind {
                NodeActionKind::Evict { .. } => {
                    if t.labels.protected {
                        self.shared.metrics.action(kind, Outcome::Refused.as_str());
                        outcomes.push(outcome(
                            Outcome::Refused,
                            Some("protected containers are never evicted".into()),
                        ));
                        continue;
                    }
                    if !shape {
                        self.shared
                            .metrics
                            .action(kind, Outcome::Recommended.as_str());
                        outcomes.push(outcome(Outcome::Recommended, None));
                        continue;
                    }
                    match self
                        .runtime
                        .stop(&a.container_id, self.cfg.stop_grace_s)
                        .await
                    {
                        Ok(()) => {
                            let cap = view.capacity;
                            let request = view
                                .containers
                                .iter()
                                .find(|c| c.id == a.container_id)
                                .map(|c| c.request)
                                .unwrap_or_else(|| self.request_of(&t, cap));
                            self.state.evicted.push(Eviction {
                                id: a.container_id.clone(),
                                name: t.info.name.clone(),
                                app: t.labels.app.clone(),
                                at_s: now_s,
                                reason: a.explanation.clone(),
                                request,
                            });
                            if failed_apps.insert(t.labels.app.clone()) {
                                *self
                                    .state
                                    .app_failures
                                    .entry(t.labels.app.clone())
                                    .or_default() += 1;
                            }
                            if let Some(tm) = self.tracked.get_mut(&a.container_id) {
                                tm.info.state = ContainerState::Exited;
                                tm.needs_inspect = true;
                                tm.last_cpu = None;
                            }
                            dirty = true;
                            tracing::warn!(container = %t.info.name, app = %t.labels.app, reason = %a.explanation, "evicted");
                            self.shared.metrics.action(kind, Outcome::Applied.as_str());
                            outcomes.push(outcome(Outcome::Applied, None));
                        }
                        Err(e) => {
                            self.shared.metrics.runtime_error("stop");
                            self.shared.metrics.action(kind, Outcome::Failed.as_str());
                            outcomes.push(outcome(Outcome::Failed, Some(e.to_string())));
                        }
                    }
                }
                NodeActionKind::Resize { from, to } => {
                    let shrinks = to.cpu_cores < from.cpu_cores || to.mem_bytes < from.mem_bytes;
                    if t.labels.protected && shrinks {
                        self.shared.metrics.action(kind, Outcome::Refused.as_str());
                        outcomes.push(outcome(
                            Outcome::Refused,
                            Some("protected containers are never shrunk".into()),
                        ));
                        continue;
                    }
                    if !to.is_finite() || to.cpu_cores <= 0.0 || to.mem_bytes <= 0.0 {
                        self.shared.metrics.action(kind, Outcome::Refused.as_str());
                        outcomes.push(outcome(
                            Outcome::Refused,
                            Some(format!(
                                "invalid target: {:.3} cores, {:.1} MiB",
                                to.cpu_cores,
                                to.mem_bytes / MIB
                            )),
                        ));
                        continue;
                    }
                    if !shape {
                        self.shared
                            .metrics
                            .action(kind, Outcome::Recommended.as_str());
                        outcomes.push(outcome(Outcome::Recommended, None));
                        continue;
                    }
                    let update = self.limits_update(&t, *to);
                    if update.mem_bytes == t.info.limits.mem_bytes
                        && update.cpu == Some(t.info.limits.cpu)
                    {
                        // after the agent's floors and rounding the limits
                        // are already there: no Docker call
                        self.shared
                            .metrics
                            .action(kind, Outcome::Unchanged.as_str());
                        outcomes.push(outcome(Outcome::Unchanged, None));
                        continue;
                    }
                    match self.runtime.update(&a.container_id, &update).await {
                        Ok(()) => {
                            if let Some(tm) = self.tracked.get_mut(&a.container_id) {
                                if let Some(m) = update.mem_bytes {
                                    tm.info.limits.mem_bytes = Some(m);
                                    tm.info.limits.mem_swap_bytes = Some(
                                        update
                                            .mem_swap_bytes
                                            .unwrap_or(i64::try_from(m).unwrap_or(i64::MAX)),
                                    );
                                }
                                if let Some(c) = update.cpu {
                                    tm.info.limits.cpu = c;
                                }
                            }
                            self.shared.metrics.action(kind, Outcome::Applied.as_str());
                            outcomes.push(outcome(Outcome::Applied, None));
                        }
                        Err(e) => {
                            self.shared.metrics.runtime_error("update");
                            self.shared.metrics.action(kind, Outcome::Failed.as_str());
                            if let Some(tm) = self.tracked.get_mut(&a.container_id) {
                                tm.needs_inspect = true;
                            }
                            outcomes.push(outcome(Outcome::Failed, Some(e.to_string())));
                        }
                    }
                }
            }
        }
        if dirty {
            self.save_state();
        }
        outcomes
    }

    /// The limits a container gets back: what it was started with; an
    /// unlimited resource gets the node's capacity (Docker cannot remove a
    /// limit with `update`).
    fn original_update(&self, t: &Tracked) -> ResourceUpdate {
        let cap = self.capacity();
        let orig = self.original_limits(t);
        let mem = orig
            .mem_bytes
            .unwrap_or_else(|| (cap.mem_bytes as u64 / PAGE) * PAGE);
        let cpu = match orig.cpu {
            CpuLimit::Unlimited => CpuLimit::Nano {
                nano_cpus: (cap.cpu_cores * 1e9).round() as i64,
            },
            c => c,
        };
        // the swap limit it was started with; an originally unlimited
        // memory had unlimited swap
        let swap = match (orig.mem_bytes, orig.mem_swap_bytes) {
            (_, Some(s)) => Some(s),
            (None, None) => Some(-1),
            (Some(_), None) => None,
        };
        ResourceUpdate {
            mem_bytes: Some(mem),
            cpu: Some(cpu),
            mem_swap_bytes: swap,
        }
    }

    async fn restart_evicted(&mut self, now_s: f64) -> Vec<String> {
        let cap = self.capacity();
        let allocated = self
            .tracked
            .values()
            .filter(|t| t.info.state == ContainerState::Running)
            .fold(Resources::ZERO, |a, t| a.add(&Self::allocation_of(t, cap)));
        let mut free = cap.sub(&allocated);
        let mut restarted = Vec::new();
        while let Some(e) = self.state.evicted.first().cloned() {
            if now_s - e.at_s < self.cfg.restart_cooldown_s || !e.request.fits_in(&free) {
                break;
            }
            let Some(t) = self.tracked.get(&e.id).cloned() else {
                self.state.evicted.remove(0);
                continue;
            };
            let update = self.original_update(&t);
            if let Err(err) = self.runtime.update(&e.id, &update).await {
                self.shared.metrics.runtime_error("update");
                tracing::warn!(container = %e.name, error = %err, "cannot restore limits before restart");
            }
            match self.runtime.start(&e.id).await {
                Ok(()) => {
                    self.state.evicted.remove(0);
                    free = free.sub(&e.request);
                    if let Some(tm) = self.tracked.get_mut(&e.id) {
                        tm.info.state = ContainerState::Running;
                        tm.info.limits = Limits {
                            mem_bytes: update.mem_bytes,
                            cpu: update.cpu.unwrap_or(tm.info.limits.cpu),
                            mem_swap_bytes: update.mem_swap_bytes,
                        };
                        tm.needs_inspect = true;
                        tm.last_cpu = None;
                    }
                    self.shared
                        .metrics
                        .action("restart", Outcome::Applied.as_str());
                    tracing::info!(container = %e.name, app = %e.app, evicted_for_s = now_s - e.at_s, "restarted evicted container");
                    restarted.push(e.name.clone());
                }
                Err(err) => {
                    self.shared.metrics.runtime_error("start");
                    self.shared
                        .metrics
                        .action("restart", Outcome::Failed.as_str());
                    tracing::warn!(container = %e.name, error = %err, "cannot restart evicted container");
                    if matches!(err, RuntimeError::NotFound(_)) {
                        self.state.evicted.remove(0);
                        continue;
                    }
                    break;
                }
            }
        }
        if !restarted.is_empty() {
            self.save_state();
        }
        restarted
    }

    fn save_state(&self) {
        if let Err(e) = self.store.save(&self.state) {
            tracing::warn!(path = %self.cfg.state_file.display(), error = %e, "cannot write agent state");
        }
    }

    /// What SIGTERM does (`on_shutdown`): with `restore_requests` every
    /// running managed container whose limits the agent changed gets its
    /// original limits back; `keep_current` changes nothing. Nothing is
    /// stopped either way, and in `recommend` mode nothing was changed.
    /// Returns the containers restored.
    pub async fn shutdown(&mut self) -> Vec<String> {
        let mut restored = Vec::new();
        if self.cfg.actuation != Actuation::Shape
            || self.cfg.on_shutdown != ShutdownPolicy::RestoreRequests
        {
            return restored;
        }
        let running: Vec<Tracked> = self
            .tracked
            .values()
            .filter(|t| t.info.state == ContainerState::Running)
            .cloned()
            .collect();
        for t in running {
            let update = self.original_update(&t);
            let current = ResourceUpdate {
                mem_bytes: t.info.limits.mem_bytes,
                cpu: Some(t.info.limits.cpu),
                mem_swap_bytes: t.info.limits.mem_swap_bytes,
            };
            if update == current {
                continue;
            }
            match self.runtime.update(&t.info.id, &update).await {
                Ok(()) => restored.push(t.info.name.clone()),
                Err(e) => {
                    tracing::warn!(container = %t.info.name, error = %e, "cannot restore request on shutdown")
                }
            }
        }
        tracing::info!(restored = restored.len(), "restored requests on shutdown");
        restored
    }

    /// Runs rounds every `interval_s` until `shutdown` resolves, then
    /// applies the shutdown policy. Failed rounds back off (interval x 2^n,
    /// at most 5 intervals or 30 s). Sends sd_notify READY / WATCHDOG /
    /// STOPPING when run by systemd.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<(), AgentError> {
        self.start_event_listener();
        let heartbeat = Arc::new(std::sync::atomic::AtomicU64::new(
            tailor_core::SystemClock.now_s() as u64,
        ));
        let watchdog = crate::notify::watchdog_period().map(|period| {
            let heartbeat = heartbeat.clone();
            let stale_after_s = (3.0 * self.cfg.interval_s + 30.0).max(period.as_secs_f64()) as u64;
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(period / 2);
                loop {
                    tick.tick().await;
                    let now = tailor_core::SystemClock.now_s() as u64;
                    if now.saturating_sub(heartbeat.load(std::sync::atomic::Ordering::Relaxed))
                        <= stale_after_s
                    {
                        let _ = crate::notify::notify("WATCHDOG=1");
                    } else {
                        tracing::error!("agent loop is stuck; not pinging the systemd watchdog");
                    }
                }
            })
        });
        let _ = crate::notify::notify("READY=1\nSTATUS=sampling");
        tokio::pin!(shutdown);
        let interval = Duration::from_secs_f64(self.cfg.interval_s);
        // back off up to 5 intervals, at most 30 s (never less than one interval)
        let max_backoff = (interval * 5).min(Duration::from_secs(30)).max(interval);
        let mut failures = 0u32;
        let mut next = tokio::time::Instant::now();
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tokio::time::sleep_until(next) => {}
            }
            heartbeat.store(
                tailor_core::SystemClock.now_s() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            let wait = match self.round().await {
                Ok(report) => {
                    if failures > 0 {
                        tracing::info!(after_failures = failures, "round succeeded again");
                    }
                    failures = 0;
                    tracing::debug!(
                        round = report.round,
                        containers = report.view.containers.len(),
                        actions = report.outcomes.len(),
                        "round done"
                    );
                    interval
                }
                Err(e) => {
                    failures += 1;
                    let wait = (interval * 2u32.saturating_pow(failures.min(16))).min(max_backoff);
                    tracing::warn!(error = %e, failures, retry_in_s = wait.as_secs_f64(), "round failed");
                    wait
                }
            };
            next += wait;
            let now = tokio::time::Instant::now();
            if next < now {
                next = now;
            }
        }
        let _ = crate::notify::notify("STOPPING=1");
        if let Some(w) = watchdog {
            w.abort();
        }
        self.shutdown().await;
        Ok(())
    }
}

/// Logs one action's outcome as fields with units.
fn log_outcome(o: &ActionOutcome) {
    let a = &o.action;
    let (kind, from, to) = match &a.kind {
        NodeActionKind::Resize { from, to } => ("resize", Some(*from), Some(*to)),
        NodeActionKind::Evict { whole_app: true } => ("evict_application", None, None),
        NodeActionKind::Evict { whole_app: false } => ("evict", None, None),
    };
    let cores = |r: Option<Resources>| r.map(|r| r.cpu_cores);
    let mib = |r: Option<Resources>| r.map(|r| r.mem_bytes / MIB);
    match o.result {
        Outcome::Applied | Outcome::Recommended => tracing::info!(
            container = %a.container_name,
            action = kind,
            result = %o.result,
            from_cpu_cores = cores(from),
            to_cpu_cores = cores(to),
            from_mem_mib = mib(from),
            to_mem_mib = mib(to),
            explanation = %a.explanation,
            "action"
        ),
        Outcome::Unchanged => {}
        Outcome::Refused | Outcome::Failed => tracing::warn!(
            container = %a.container_name,
            action = kind,
            result = %o.result,
            error = o.error.as_deref().unwrap_or(""),
            "action not applied"
        ),
    }
}

impl From<PlanSourceError> for AgentError {
    fn from(e: PlanSourceError) -> Self {
        AgentError::PlanSource(e)
    }
}

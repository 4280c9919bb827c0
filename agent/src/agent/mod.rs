//! The agent loop: sample, forecast, plan, actuate, restart, report.
//!
//! One [`Agent::round`]:
//! 1. drain runtime events (OOM kills are counted and handed to the kernel,
//!    whose OOM floor raises the container's next memory allocation);
//! 2. list managed containers, inspect new / changed ones (and every
//!    container every `reinspect_every` rounds);
//! 3. one stats sample per running container (concurrently): CPU cores from
//!    the cumulative counter's delta over the time between the runtime's
//!    reads of it, memory working set;
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
//!    request fits in the room left; so too a container OOM-killed at a
//!    limit the agent had cut below its request, which no restart policy
//!    starts again: it got its original limits back at once (before the
//!    view: `stopped.rs`) and waits for room as an evicted one.
//!
//! A failing call for one container is counted and skipped; a daemon that
//! is down fails the round (the loop backs off and retries).

use crate::config::{Actuation, AgentConfig, ShutdownPolicy};
use crate::journal::{Journal, Since};
use crate::labels::{self, ComponentLabels};
use crate::metrics::Metrics;
use crate::recommend::{Recommendations, Shown};
use crate::runtime::{
    mem_limit, ContainerInfo, ContainerRuntime, ContainerState, CpuLimit, HostInfo, Limits,
    ResourceUpdate, RuntimeError, RuntimeEvent, UNLIMITED_MEM_BYTES,
};
use crate::state::{Eviction, PersistedState, SetLimits, StateStore, WaitCause};
use crate::view::{
    ActionOutcome, ContainerMeta, ContainerSample, NodeAction, NodeActionKind, NodePlan, NodeView,
    Outcome, PlanSource, PlanSourceError, Sample, StoppedContainer, StoppedState,
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

mod actuate;
mod hand_changes;
mod observe;
mod oom_pairing;
mod reconcile;
mod stopped;
mod watch;

use actuate::{log3, log_outcome};
pub use watch::EarlyRound;

/// How many stats samples are taken at once. Read from a container's
/// cgroup they take microseconds; where the agent cannot read it, Docker
/// answers a stats call (even
/// `one-shot`) at its stats collector's next tick (every second), so each
/// call waits ~1 s whatever the load: calls in flight together are served by
/// the same tick. With 16 at a time, 200 containers took ~14 s per round
/// (longer than the 10 s interval); 256 keeps a round near one tick per 256
/// containers (an idle socket and an 8 KiB buffer each while waiting).
const STATS_CONCURRENCY: usize = 256;
const MIB: f64 = 1024.0 * 1024.0;
/// The last round's recommendations under the state directory.
pub const RECOMMENDATIONS_FILE: &str = "recommendations.json";

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
    /// Original limits given back this round to containers OOM-killed at
    /// a cut below their request (no restart policy), before the plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restored: Vec<crate::journal::JournalRestore>,
    /// Containers that waited for room restarted this round (names):
    /// evicted, or OOM-killed at a cut below their request.
    pub restarted: Vec<String>,
    /// OOM kills counted since the previous report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oom_kills: Vec<crate::journal::JournalOomKill>,
    /// Per-container problems this round (the round still completed).
    pub errors: Vec<String>,
    /// The shaper's plan when computed locally (with full explanations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Set when the memory watch ran this round before its time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early: Option<EarlyRound>,
}

/// State shared with the HTTP endpoint.
#[derive(Debug)]
pub struct Shared {
    pub metrics: Metrics,
    pub last: RwLock<Option<RoundReport>>,
    pub interval_s: f64,
    /// Unix seconds when the agent started.
    pub started_unix_s: f64,
    /// The decision journal (`/v1/decisions?since=`).
    pub journal: std::sync::Mutex<Journal>,
    /// The last round's recommendations (`/v1/recommendations`).
    pub recommendations: RwLock<Option<Recommendations>>,
    /// `[http] container_metrics`: per-container gauges on `/metrics`, at
    /// most `max_container_series` containers.
    pub container_metrics: Option<usize>,
}

impl Shared {
    /// Shared state with an in-memory journal and no per-container gauges.
    pub fn new(interval_s: f64, started_unix_s: f64) -> Self {
        Self {
            metrics: Metrics::new(),
            last: RwLock::new(None),
            interval_s,
            started_unix_s,
            journal: std::sync::Mutex::new(Journal::open(None, 0)),
            recommendations: RwLock::new(None),
            container_metrics: None,
        }
    }

    /// The last round's recommendations.
    pub fn last_recommendations(&self) -> Option<Recommendations> {
        self.recommendations.read().ok().and_then(|g| g.clone())
    }

    /// Journal entries admitted by `since`, oldest first.
    pub fn decisions_since(&self, since: Option<Since>) -> Vec<crate::journal::JournalEntry> {
        match self.journal.lock() {
            Ok(j) => j.since(since),
            Err(p) => p.into_inner().since(since),
        }
    }

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
    /// The CPU counter of the previous sample (with its times).
    last_cpu: Option<observe::CpuMark>,
    usage: Resources,
    /// The most it used so far (the request estimate of an unlimited
    /// resource).
    max_usage: Resources,
    /// (`nr_throttled`, throttled ns) of the previous sample.
    last_throttle: Option<(u64, u64)>,
    /// The last round in which its CPU was throttled.
    throttled_round: Option<u64>,
    /// The memory high-water mark (since creation) of the previous sample.
    last_peak: Option<u64>,
    /// This round's sample, handed to the kernel.
    sample: Option<Sample>,
    oom_kills: u32,
    /// Times (daemon clock) of streamed OOM events not yet matched with an
    /// OOM-killed exit seen by `inspect` (newest last, at most
    /// [`oom_pairing::MAX_PENDING_OOMS`]).
    streamed_ooms: Vec<Option<f64>>,
    /// End of an OOM-killed run counted from `inspect` whose streamed event
    /// may still arrive late (then it is not counted again).
    recovered_oom_exit: Option<f64>,
    /// Limits the agent replaced, with the time of the change (the agent's
    /// clock just before the runtime call), oldest first, at most
    /// [`MAX_LIMIT_CHANGES`]: an OOM kill reported after the agent resized
    /// the container is counted at the limit it was killed at
    /// ([`Tracked::limits_at`]).
    replaced_limits: Vec<(f64, Limits)>,
    needs_inspect: bool,
}

impl Tracked {
    /// The limits in force at `at_s` (Unix seconds): those the first
    /// change after `at_s` replaced, else the current ones (also when
    /// `at_s` is unknown).
    fn limits_at(&self, at_s: Option<f64>) -> Limits {
        at_s.filter(|a| a.is_finite())
            .and_then(|a| {
                self.replaced_limits
                    .iter()
                    .find(|(changed_s, _)| a < *changed_s)
                    .map(|(_, before)| *before)
            })
            .unwrap_or(self.info.limits)
    }

    /// Records that the agent changed the limits to `after` at `changed_s`.
    fn limits_changed(&mut self, after: Limits, changed_s: f64) {
        if after == self.info.limits {
            return;
        }
        if self.replaced_limits.len() == MAX_LIMIT_CHANGES {
            self.replaced_limits.remove(0);
        }
        self.replaced_limits.push((changed_s, self.info.limits));
        self.info.limits = after;
    }
}

/// Limit changes remembered per container (see [`Tracked::limits_at`]):
/// events are drained every round, so the last few cover a kill reported
/// late.
const MAX_LIMIT_CHANGES: usize = 4;

/// A container throttled within this many rounds keeps its CPU limit
/// (resizes still apply their memory part).
const THROTTLE_HOLD_ROUNDS: u64 = 3;

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
    /// Shown recommendation targets (hysteresis).
    shown: Shown,
    /// What was told to the kernel this round before the samples (recorded).
    round_events: Vec<KernelEvent>,
    /// OOM kills counted since the last report (for the journal).
    round_kills: Vec<crate::journal::JournalOomKill>,
    /// Original limits restored since the last report (for the journal).
    round_restores: Vec<crate::journal::JournalRestore>,
    /// `[record]`: the recording, while it is on.
    recorder: Option<RecordWriter>,
    /// This round's samples as given to the kernel (kept only when recording).
    round_samples: Vec<ContainerSample>,
    /// Containers whose labels the recording holds already.
    recorded_labels: std::collections::HashSet<String>,
    state: PersistedState,
    /// Whether the loaded state wrote limits ahead of its updates: then a
    /// container's limits unlike any the agent set or found were changed
    /// by hand while no agent ran (`observe::changed_while_stopped`).
    checks_changes_while_stopped: bool,
    store: StateStore,
    /// Held while the agent lives: one agent per state file, and one
    /// shaping agent per host (`crate::lock`).
    _locks: [Option<crate::lock::FileLock>; 2],
    host: Option<HostInfo>,
    round: u64,
    events_rx: Option<mpsc::UnboundedReceiver<RuntimeEvent>>,
    events_task: Option<tokio::task::JoinHandle<()>>,
    /// Why the next round runs early (the memory watch), for its report.
    early: Option<EarlyRound>,
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
        cfg.apply_agent_defaults();
        let state_lock = match cfg.state_dir() {
            Some(_) => Some(crate::lock::FileLock::state(&cfg.state_file)?),
            None => None,
        };
        let forced_recommend = crate::podman::force_recommend(&mut cfg, runtime.as_ref());
        let host_lock =
            if cfg.actuation == Actuation::Shape && !cfg.host_lock.as_os_str().is_empty() {
                Some(crate::lock::FileLock::host(
                    &cfg.host_lock,
                    &cfg.state_file,
                )?)
            } else {
                None
            };
        let mut kernel =
            NodeKernel::new(cfg.shaper.clone(), cfg.forecaster.clone(), cfg.interval_s)?;
        let restored = cfg
            .state_dir()
            .and_then(|dir| crate::checkpoint::restore(&dir, &mut kernel));
        let recorder = match (cfg.record.enabled, cfg.record_path()) {
            (true, Some(path)) => {
                if let Some(kept) = datasets::recording::rotate_previous(&path)? {
                    tracing::info!(path = %kept.display(), "the previous run's recording kept");
                }
                let mut w = RecordWriter::create(&path, cfg.record.max_bytes)?;
                w.append(&Record::Header(Box::new(RecordingHeader {
                    version: RECORD_VERSION,
                    node: cfg.node_name.clone().unwrap_or_else(|| "node".to_string()),
                    interval_s: cfg.interval_s,
                    actuation: cfg.actuation.as_str().to_string(),
                    mode: cfg.mode.as_str().to_string(),
                    shaper: cfg.shaper.clone(),
                    forecaster: cfg.forecaster.clone(),
                    models: restored,
                })))?;
                tracing::info!(path = %path.display(), max_bytes = cfg.record.max_bytes, "recording");
                Some(w)
            }
            _ => None,
        };
        let store = StateStore::new(&cfg.state_file);
        let mut state = store.load();
        let checks_changes_while_stopped = state.writes_ahead;
        state.writes_ahead = true;
        let journal = Journal::open(cfg.state_dir().as_deref(), cfg.journal_max_bytes);
        let shared = Arc::new(Shared {
            journal: std::sync::Mutex::new(journal),
            container_metrics: cfg
                .http
                .container_metrics
                .then_some(cfg.http.max_container_series),
            ..Shared::new(cfg.interval_s, tailor_core::SystemClock.now_s())
        });
        shared
            .metrics
            .runtime_capabilities(runtime.can_update(), forced_recommend);
        Ok(Self {
            cfg,
            runtime,
            source,
            clock,
            shared,
            tracked: BTreeMap::new(),
            kernel: Some(kernel),
            shown: Shown::default(),
            round_events: Vec::new(),
            round_kills: Vec::new(),
            round_restores: Vec::new(),
            round_samples: Vec::new(),
            recorded_labels: std::collections::HashSet::new(),
            recorder,
            state,
            checks_changes_while_stopped,
            store,
            _locks: [state_lock, host_lock],
            host: None,
            round: 0,
            events_rx: None,
            events_task: None,
            early: None,
        })
    }

    /// The state shared with the HTTP endpoint (metrics, last report).
    pub fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    pub fn config(&self) -> &AgentConfig {
        &self.cfg
    }

    /// Containers waiting for room (evicted, or OOM-killed at a cut below
    /// their request), oldest first.
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

    /// Journals the round's decisions and publishes its recommendations
    /// (also to `recommendations.json` in the state directory, for
    /// `tailor recommendations --state-dir`).
    fn publish(&mut self, report: &RoundReport) {
        if let Ok(mut j) = self.shared.journal.lock() {
            j.append(&crate::journal::RoundDecisions {
                round: report.round,
                at_s: report.at_s,
                actuation: report.actuation.as_str(),
                source: &report.source,
                outcomes: &report.outcomes,
                restored: &report.restored,
                restarted: &report.restarted,
                oom_kills: &report.oom_kills,
                early: report.early.as_ref(),
            });
        }
        let by_name: BTreeMap<&str, &Tracked> = self
            .tracked
            .values()
            .map(|t| (t.info.name.as_str(), t))
            .collect();
        let recs = crate::recommend::build(report, &self.cfg.shaper, &mut self.shown, |name| {
            by_name.get(name).map_or((false, false), |t| {
                let l = t.info.limits;
                (l.cpu == CpuLimit::Unlimited, l.mem_bytes.is_none())
            })
        });
        if let Some(dir) = self.cfg.state_dir() {
            let written = serde_json::to_vec_pretty(&recs)
                .map_err(std::io::Error::other)
                .and_then(|b| crate::checkpoint::write_atomic(&dir, RECOMMENDATIONS_FILE, &b));
            if let Err(e) = written {
                tracing::warn!(path = %dir.join(RECOMMENDATIONS_FILE).display(), error = %e, "cannot write recommendations");
            }
            if (self.round - 1).is_multiple_of(crate::checkpoint::CHECKPOINT_EVERY_ROUNDS) {
                self.save_models(report.at_s);
            }
        }
        if let Ok(mut r) = self.shared.recommendations.write() {
            *r = Some(recs);
        }
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

    /// One full round. On success the report is also stored for
    /// `/v1/decisions`.
    pub async fn round(&mut self) -> Result<RoundReport, AgentError> {
        let started = Instant::now();
        self.round += 1;
        let now_s = self.clock.now_s();
        self.drain_events(now_s);
        // taken after the round: its recording says it ran early
        let mut result = self.round_inner(now_s).await;
        let early = self.early.take();
        if let Ok(report) = &mut result {
            report.early = early;
        }
        let ok = result.is_ok();
        self.shared.metrics.round(
            ok,
            started.elapsed().as_secs_f64(),
            tailor_core::SystemClock.now_s(),
        );
        match &result {
            Ok(report) => {
                self.publish(report);
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

    /// Writes the models checkpoint (`models.json` in the state directory)
    /// now; rounds write it every
    /// [`crate::checkpoint::CHECKPOINT_EVERY_ROUNDS`]. `--once --apply`
    /// ends with it: the agent started next forecasts from these models
    /// instead of taking every container it cut back to its request.
    pub fn save_models(&self, at_s: f64) {
        if let (Some(dir), Some(k)) = (self.cfg.state_dir(), &self.kernel) {
            crate::checkpoint::save(&dir, k, at_s);
        }
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

    async fn round_inner(&mut self, now_s: f64) -> Result<RoundReport, AgentError> {
        let mut errors = Vec::new();
        self.sample(now_s, &mut errors).await?;
        // before the view: it lists them as waiting for room
        self.reconcile_oom_killed(now_s).await;
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
                restored: std::mem::take(&mut self.round_restores),
                restarted: Vec::new(),
                oom_kills: std::mem::take(&mut self.round_kills),
                errors,
                plan: None,
                early: None,
            });
        }
        let planned = self.source.plan(&view, self.early.is_some()).await;
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
        // The host's own capacity (the view's CPU may be stretched to the
        // requests: `observe::planning_capacity`).
        let cap = self.capacity();
        let running = self
            .tracked
            .values()
            .filter(|t| t.info.state == ContainerState::Running);
        let allocated = running
            .clone()
            .fold(Resources::ZERO, |a, t| a.add(&self.allocation_of(t, cap)));
        let (evicted, oom_killed) = self.stopped_counts();
        self.shared.metrics.node(
            crate::metrics::ContainerCounts {
                running: running.count() as u64,
                evicted,
                oom_killed,
            },
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
            restored: std::mem::take(&mut self.round_restores),
            restarted,
            oom_kills: std::mem::take(&mut self.round_kills),
            errors,
            plan: plan.plan,
            early: None,
        })
    }

    fn save_state(&self) {
        if let Err(e) = self.store.save(&self.state) {
            tracing::warn!(path = %self.cfg.state_file.display(), error = %e, "cannot write agent state");
        }
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
        let mut watch = watch::MemWatch::default();
        let mut watch_checked = false;
        loop {
            let watching = self
                .watches_memory()
                .then(|| (&watch, Duration::from_secs_f64(self.cfg.mem_watch_s)));
            let mut early_round = false;
            match watch::wait_for_round(watching, &self.runtime, &self.shared, next, &mut shutdown)
                .await
            {
                watch::Wake::Shutdown => break,
                watch::Wake::Due => {}
                watch::Wake::Early(early) => {
                    // between two rounds of the schedule, which keeps its
                    // time: a recording's intervals stay `interval_s` long
                    early_round = true;
                    self.early = Some(early);
                }
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
                    if self.watches_memory() {
                        watch.arm(&report.view, self.cfg.shaper.max_growth);
                        if !watch_checked {
                            watch_checked = watch::check_readable(&watch, &self.runtime).await;
                        }
                    }
                    tracing::debug!(
                        round = report.round,
                        containers = report.view.containers.len(),
                        actions = report.outcomes.len(),
                        "round done"
                    );
                    if early_round {
                        // the scheduled round is still due at `next`
                        Duration::ZERO
                    } else {
                        interval
                    }
                }
                Err(e) => {
                    failures += 1;
                    watch = watch::MemWatch::default();
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

impl From<PlanSourceError> for AgentError {
    fn from(e: PlanSourceError) -> Self {
        AgentError::PlanSource(e)
    }
}

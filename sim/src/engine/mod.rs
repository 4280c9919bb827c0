//! The discrete-event engine.
//!
//! See the crate documentation for the semantics; this module keeps the
//! state in flat vectors indexed by position (host index = `HostId`,
//! component arena index = `ComponentId`, application index = `AppId`), so
//! nothing in the results depends on hash-map iteration order.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap, HashSet};
use std::ops::Bound;
use std::time::Instant;

use datasets::workload::{ComponentSpec, OomRestart, Shape, Workload};
use forecaster::{ForecastError, Forecaster};
use rayon::prelude::*;
use shaper::{
    scheduler_key, AppFacts, AppId, Class, ClusterView, Component, ComponentAction, ComponentId,
    ComponentModels, Decider, Forecasts, Host, HostId, OomFloor, Plan, Policy, PriorBook, Resource,
    Resources, SchedulerKey, ShaperConfig, ViewBuilder,
};

use shaper::models::{
    history_cap, hold_samples, normalise, rescale_history, sibling_hold_samples,
    small_hold_samples, RelSample,
};
use shaper::risk::RiskCalibration;

use crate::metrics::{AppOutcome, ComponentDays, RunMetrics, TimePoint};
use crate::placement::{fits, FreeTree, Placement, UnfitCache};
use crate::SimError;

mod event_loop;
mod lifecycle;
mod oracle;
mod round;
mod sched;

/// Builds one resource's model of one component (see [`ModelSite`]); the
/// `f64` is the absolute units per observed unit (the component's request).
pub type ForecasterFactory =
    dyn Fn(&ModelSite, Resource, f64) -> Result<Box<dyn Forecaster>, ForecastError> + Sync;

/// Where a model is built: what a factory needs to share state between the
/// components of one application (the faithful VPA's workload aggregate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelSite {
    /// The component's application (its index in the workload).
    pub app: u32,
    /// A number unique to this model (one per resource of each build of
    /// a component's models) within the run.
    pub build: u64,
    /// Simulated time of the model's first sample (seconds).
    pub start_s: f64,
    /// Seconds between two of its samples.
    pub interval_s: f64,
}

/// Where the forecasts the shaper sees come from.
#[derive(Clone, Copy)]
pub enum Forecasting<'a> {
    /// No forecasts: every component keeps its request (the baseline needs none).
    Off,
    /// Each component's true future usage (`forecaster::Oracle`, built
    /// from window peaks in bounded memory): the exact peak of the next
    /// horizon samples, std 0.
    Oracle,
    /// A real online model per component and resource.
    Model(&'a ForecasterFactory),
}

impl Forecasting<'_> {
    fn is_on(&self) -> bool {
        !matches!(self, Forecasting::Off)
    }
}

/// Engine parameters (the top-level keys of `SimConfig`).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    /// Seconds between two shaping rounds.
    pub interval_s: f64,
    /// Strict order (false, default): the first queued application that does
    /// not fit blocks every later one. True: later ones may pass it.
    pub backfill: bool,
    pub placement: Placement,
    /// Stop the simulation at this simulated time (None: run until every
    /// application completed).
    pub max_time_s: Option<f64>,
    /// An application restarted (killed or evicted: a failure) more than
    /// this many times is abandoned: it counts as failed and is not run
    /// again. Components stopped at the same instant are one restart.
    /// Every run then ends, even under a policy that kills or evicts an
    /// application on every restart.
    pub max_restarts: u32,
    /// What an OOM kill or an eviction does for every component (None: each component's
    /// own `ComponentSpec::oom_restart`).
    pub oom_restart: Option<OomRestart>,
    /// Update forecasters in parallel (rayon); results are identical.
    pub parallel_forecasts: bool,
    /// What an optimistic growth that does not fit its host does.
    pub optimistic_growth: OptimisticGrowth,
    /// Samples a model needs before it forecasts with its fitted model
    /// rather than its fallback (GP: history + min_train). Only counted in
    /// the metrics (`warm_forecast_fraction`, `oom_kills_warm`); 0 = always.
    pub warm_samples: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            interval_s: 300.0,
            backfill: false,
            placement: Placement::FirstFit,
            max_time_s: None,
            max_restarts: 1000,
            oom_restart: None,
            parallel_forecasts: true,
            optimistic_growth: OptimisticGrowth::HostOom,
            warm_samples: 0,
        }
    }
}

/// The optimistic policy's semantics when a growth does not fit the free
/// (unallocated) room of its host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptimisticGrowth {
    /// The growth is applied (the host is overcommitted); the host OOM
    /// killer acts when the summed usage exceeds physical memory.
    #[default]
    HostOom,
    /// The thesis's semantics: the growth is refused, and the component is
    /// killed when its usage crosses the allocation it kept.
    Refuse,
}

/// Progress of a run, handed to the caller's callback every shaping round.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now_s: f64,
    pub apps_done: usize,
    pub apps_total: usize,
}

/// Total order on f64 (for keys and event times).
#[derive(Clone, Copy, Debug, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Scheduler key (the kernel's order), then the app index: smallest first.
type Key = (SchedulerKey, u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum EvKind {
    Finish {
        comp: u32,
        gen: u32,
    },
    Sample {
        comp: u32,
        inst: u32,
    },
    Arrival {
        app: u32,
    },
    /// A component with a start delay is submitted (its application was
    /// admitted `start_delay_s` before; `inst`: the incarnation then).
    Submit {
        comp: u32,
        inst: u32,
    },
    Round,
}

impl EvKind {
    /// Same-time order: completions free room first, then usage changes,
    /// then arrivals, then the shaping round.
    fn rank(&self) -> u8 {
        match self {
            EvKind::Finish { .. } => 0,
            EvKind::Sample { .. } => 1,
            EvKind::Arrival { .. } | EvKind::Submit { .. } => 2,
            EvKind::Round => 3,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Ev {
    t: OrdF64,
    rank: u8,
    seq: u64,
    kind: EvKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CState {
    /// Its application is not running.
    Idle,
    /// Elastic, its application runs, waiting for room.
    Pending,
    Running,
    Done,
    /// Can never fit on any host (elastic only): ignored.
    Dropped,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AState {
    NotArrived,
    Queued,
    Running,
    Done,
    Rejected,
    /// Over `max_restarts`: given up.
    Abandoned,
}

struct CompFc {
    models: ComponentModels,
    /// Samples fed so far.
    fed: u64,
    /// Oracle only: index of the first sample its future starts at.
    base: u64,
    /// It joined its prior keys (once per incarnation).
    joined: bool,
    /// The request its models are relative to.
    request: Resources,
}

/// The keys a simulated component pools its samples under, most specific
/// first: its own earlier incarnations (a restart after a kill or an
/// eviction), its application's other components, then its cohort: the
/// components of the same priority and class whose memory request is within
/// a factor of two (the simulator's stand-in for "the same image").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum PriorKey {
    Lineage(u32),
    App(u32),
    Cohort(i32, bool, i32),
}

fn prior_keys(comp: usize, c: &Comp, priority: i32) -> [PriorKey; 3] {
    let bucket = if c.request.mem_bytes > 0.0 {
        c.request.mem_bytes.log2().floor().clamp(-1e6, 1e6) as i32
    } else {
        i32::MIN
    };
    [
        PriorKey::Lineage(comp as u32),
        PriorKey::App(c.app),
        PriorKey::Cohort(priority, c.class == Class::Core, bucket),
    ]
}

struct Comp {
    app: u32,
    spec: u32,
    class: Class,
    request: Resources,
    work_s: f64,
    state: CState,
    host: u32,
    host_slot: u32,
    started_s: f64,
    alloc: Resources,
    usage: Resources,
    /// Peak memory within the current sample's interval (what the OOM
    /// killer checks), at least `usage.mem_bytes`.
    mem_peak: f64,
    /// Sample index of the current run, from its start.
    sample: u64,
    /// Samples of its usage series lived by earlier runs: a component
    /// restarted in place ([`OomRestart::Component`]) continues there; 0
    /// for a run from the series' start.
    offset: u64,
    remaining_s: f64,
    rate: f64,
    progress_t: f64,
    inst: u32,
    fin_gen: u32,
    fc: Option<Box<CompFc>>,
    /// Its last samples before it was stopped to run again (a kill, an
    /// eviction, its application's reset), relative to the request then:
    /// its next run's models are rebuilt from them ([`Engine::hand_down`]).
    history: Vec<RelSample>,
    forecast: Option<Forecasts>,
    /// Memory floor after an OOM kill (the kernel's rule, as in the agent).
    oom_floor: Option<OomFloor>,
    /// Its latest forecast came from a model past its warm-up.
    warm: bool,
}

struct AppSt {
    first: u32,
    n: u32,
    state: AState,
    key: Key,
    failures: u32,
    /// Instants at which it was killed or evicted (components stopped at
    /// the same instant are one restart), towards `max_restarts`.
    restarts: u32,
    /// The latest of those instants.
    last_restart_s: f64,
    crashes: u32,
    evictions: u32,
    queued_since: f64,
    queued_s: f64,
    done: u32,
    pending: Vec<u32>,
    finished_s: Option<f64>,
}

struct HostSt {
    cap: Resources,
    alloc: Resources,
    usage: Resources,
    comps: Vec<u32>,
}

/// Usage of a component `i` samples after its start, clipped to its request
/// (thesis footnote 1: usage above the reservation is removed).
fn usage_at(spec: &ComponentSpec, request: &Resources, i: u64) -> Resources {
    let i = i as usize;
    Resources::new(
        clip(spec.usage.cpu_cores.at(i), request.cpu_cores),
        clip(spec.usage.mem_bytes.at(i), request.mem_bytes),
    )
}

/// Peak memory within sample `i`'s interval, clipped to the request like
/// the mean, and never below it.
fn mem_peak_at(spec: &ComponentSpec, request: &Resources, i: u64) -> f64 {
    clip(spec.usage.mem_peak(i as usize), request.mem_bytes)
        .max(clip(spec.usage.mem_bytes.at(i as usize), request.mem_bytes))
}

fn clip(v: f64, max: f64) -> f64 {
    if v.is_finite() {
        v.clamp(0.0, max.max(0.0))
    } else {
        0.0
    }
}

fn is_constant(s: &Shape) -> bool {
    s.values.len() <= 1
}

fn sane_res(r: Resources) -> Resources {
    let f = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    Resources::new(f(r.cpu_cores), f(r.mem_bytes))
}

/// One simulation over a workload.
pub struct Engine<'w> {
    wl: &'w Workload,
    cfg: EngineConfig,
    shaper: ShaperConfig,
    horizon: usize,
    hosts: Vec<HostSt>,
    tree: FreeTree,
    /// Requests known to fit nowhere (scheduler shortcut, exact).
    unfit: UnfitCache,
    free_pos_cpu: f64,
    free_pos_mem: f64,
    apps: Vec<AppSt>,
    comps: Vec<Comp>,
    arrival_order: Vec<u32>,
    next_arrival: usize,
    heap: BinaryHeap<Reverse<Ev>>,
    seq: u64,
    /// Model builds so far ([`ModelSite::build`]).
    model_builds: std::sync::atomic::AtomicU64,
    now: f64,
    dirty: bool,
    queue: BTreeSet<Key>,
    elastic_wait: BTreeSet<Key>,
    remaining_apps: usize,
    last_round_s: f64,
    view: ClusterView,
    decider: Decider,
    plan: Plan,
    /// Siblings' and predecessors' pooled usage (the kernel's priors).
    prior: PriorBook<PriorKey>,
    /// Memory forecasts' scores, pooled over every component (`[shaper]
    /// memory_risk`, [`shaper::risk`]).
    risk: RiskCalibration,
    m: RunMetrics,
    /// Rounds between the timeline's points ([`crate::metrics::push_point`]).
    timeline_stride: u64,
    /// The last round found no component running and no application
    /// queued (the timeline's last point may be an earlier round's).
    idle_last_round: bool,
    util_weight: f64,
    /// Sum of every host's memory allocation, and when it was last
    /// integrated into `m.mem_alloc_byte_s`.
    alloc_mem_total: f64,
    alloc_mem_t: f64,
    /// Per component: the 24 h windows counted so far.
    comp_days: Vec<ComponentDays>,
}

impl<'w> Engine<'w> {
    /// Prepares a run. Errors on an unusable configuration or workload.
    pub fn new(
        wl: &'w Workload,
        cfg: EngineConfig,
        shaper: ShaperConfig,
    ) -> Result<Self, SimError> {
        if !(cfg.interval_s.is_finite() && cfg.interval_s > 0.0) {
            return Err(SimError::Config(tailor_core::ConfigErrors::single(
                "interval_s",
                format!("must be > 0, got {}", cfg.interval_s),
            )));
        }
        if wl.hosts.is_empty() {
            return Err(SimError::Workload(format!(
                "workload {:?} has no host",
                wl.name
            )));
        }
        // Horizon: cover one shaping interval with the shortest usage interval.
        let min_usage_interval = wl
            .apps
            .iter()
            .flat_map(|a| a.components.iter())
            .map(|c| c.usage.interval_s)
            .filter(|u| u.is_finite() && *u > 0.0)
            .fold(f64::INFINITY, f64::min);
        let horizon = shaper::horizon_samples(&shaper, cfg.interval_s, min_usage_interval);
        let hosts: Vec<HostSt> = wl
            .hosts
            .iter()
            .map(|h| HostSt {
                cap: sane_res(h.capacity),
                alloc: Resources::ZERO,
                usage: Resources::ZERO,
                comps: Vec::new(),
            })
            .collect();
        let biggest = hosts.iter().fold(Resources::ZERO, |m, h| {
            Resources::new(
                m.cpu_cores.max(h.cap.cpu_cores),
                m.mem_bytes.max(h.cap.mem_bytes),
            )
        });
        let mut tree = FreeTree::with_scale(hosts.len(), biggest);
        let (mut fc, mut fm) = (0.0, 0.0);
        for (i, h) in hosts.iter().enumerate() {
            tree.set(i, h.cap);
            fc += h.cap.cpu_cores;
            fm += h.cap.mem_bytes;
        }
        let view = ClusterView {
            hosts: hosts
                .iter()
                .enumerate()
                .map(|(i, h)| Host {
                    id: HostId(i as u64),
                    capacity: h.cap,
                })
                .collect(),
            apps: Vec::new(),
        };
        let mut e = Engine {
            wl,
            cfg,
            shaper,
            horizon,
            hosts,
            tree,
            unfit: UnfitCache::default(),
            free_pos_cpu: fc,
            free_pos_mem: fm,
            apps: Vec::with_capacity(wl.apps.len()),
            comps: Vec::new(),
            arrival_order: Vec::new(),
            next_arrival: 0,
            heap: BinaryHeap::new(),
            seq: 0,
            model_builds: std::sync::atomic::AtomicU64::new(0),
            now: 0.0,
            dirty: false,
            queue: BTreeSet::new(),
            elastic_wait: BTreeSet::new(),
            remaining_apps: 0,
            last_round_s: 0.0,
            view,
            decider: Decider::new(),
            plan: Plan::default(),
            prior: PriorBook::new(),
            risk: RiskCalibration::new(),
            m: RunMetrics {
                apps: Vec::with_capacity(wl.apps.len()),
                ..RunMetrics::default()
            },
            timeline_stride: 1,
            idle_last_round: false,
            util_weight: 0.0,
            alloc_mem_total: 0.0,
            alloc_mem_t: 0.0,
            comp_days: Vec::new(),
        };
        e.load();
        e.comp_days = vec![ComponentDays::default(); e.comps.len()];
        Ok(e)
    }

    /// Builds app and component state; rejects what can never fit.
    fn load(&mut self) {
        let wl = self.wl;
        let order = self.shaper.order;
        for (ai, spec) in wl.apps.iter().enumerate() {
            let first = self.comps.len() as u32;
            let arrival = if spec.arrival_s.is_finite() {
                spec.arrival_s
            } else {
                0.0
            };
            let expected = spec.components.iter().map(|c| c.work_s).fold(0.0, f64::max);
            let key: Key = (
                scheduler_key(order, arrival, Some(expected), spec.priority, ai as u64),
                ai as u32,
            );
            for (j, c) in spec.components.iter().enumerate() {
                let work = if c.work_s.is_finite() && c.work_s > 0.0 {
                    c.work_s
                } else {
                    0.0
                };
                self.comps.push(Comp {
                    app: ai as u32,
                    spec: j as u32,
                    class: c.class,
                    request: sane_res(c.request),
                    work_s: work,
                    state: CState::Idle,
                    host: 0,
                    host_slot: 0,
                    started_s: 0.0,
                    alloc: Resources::ZERO,
                    usage: Resources::ZERO,
                    mem_peak: 0.0,
                    sample: 0,
                    offset: 0,
                    remaining_s: work,
                    rate: 1.0,
                    progress_t: 0.0,
                    inst: 0,
                    fin_gen: 0,
                    fc: None,
                    history: Vec::new(),
                    forecast: None,
                    oom_floor: None,
                    warm: false,
                });
            }
            self.apps.push(AppSt {
                first,
                n: spec.components.len() as u32,
                state: AState::NotArrived,
                key,
                failures: 0,
                restarts: 0,
                last_restart_s: f64::NEG_INFINITY,
                crashes: 0,
                evictions: 0,
                queued_since: arrival,
                queued_s: 0.0,
                done: 0,
                pending: Vec::new(),
                finished_s: None,
            });
            self.m.apps.push(AppOutcome {
                id: spec.id,
                arrival_s: arrival,
                finished_s: None,
                queued_s: 0.0,
                crashes: 0,
                evictions: 0,
                rejected: false,
                abandoned: false,
            });
        }
        // Rejection: core components that cannot be placed together on the
        // empty cluster; elastic components bigger than every host are dropped.
        let mut scratch = self.tree.clone();
        for ai in 0..self.apps.len() {
            let (first, n) = (self.apps[ai].first as usize, self.apps[ai].n as usize);
            let mut placed: Vec<(usize, Resources)> = Vec::new();
            let mut ok = n > 0;
            for c in first..first + n {
                let req = self.comps[c].request;
                if self.comps[c].class == Class::Core && self.start_delay_s(c) > 0.0 {
                    // Submitted later, alone: it must fit some host.
                    if !self.hosts.iter().any(|h| req.fits_in(&h.cap)) {
                        ok = false;
                        break;
                    }
                    continue;
                }
                match self.comps[c].class {
                    Class::Core => match scratch.find(&req, self.cfg.placement) {
                        Some(h) => {
                            let cap = self.hosts[h].cap;
                            let used = placed
                                .iter()
                                .filter(|(ph, _)| *ph == h)
                                .fold(req, |acc, (_, r)| acc.add(r));
                            scratch.set(h, cap.sub(&used));
                            placed.push((h, req));
                        }
                        None => {
                            ok = false;
                            break;
                        }
                    },
                    Class::Elastic => {
                        if !self.hosts.iter().any(|h| req.fits_in(&h.cap)) {
                            self.comps[c].state = CState::Dropped;
                            self.apps[ai].done += 1;
                            self.m.components_dropped += 1;
                        }
                    }
                }
            }
            for (h, _) in &placed {
                scratch.set(*h, self.hosts[*h].cap);
            }
            if ok {
                self.remaining_apps += 1;
                self.arrival_order.push(ai as u32);
            } else {
                self.apps[ai].state = AState::Rejected;
                self.m.apps[ai].rejected = true;
                tracing::debug!(
                    app = self.wl.apps[ai].id,
                    "rejected: core components never fit"
                );
            }
        }
        let apps = &self.apps;
        self.arrival_order.sort_by(|&a, &b| {
            apps[a as usize]
                .queued_since
                .total_cmp(&apps[b as usize].queued_since)
                .then(a.cmp(&b))
        });
    }

    fn push(&mut self, t: f64, kind: EvKind) {
        self.seq += 1;
        self.heap.push(Reverse(Ev {
            t: OrdF64(t),
            rank: kind.rank(),
            seq: self.seq,
            kind,
        }));
    }

    fn push_next_arrival(&mut self) {
        if let Some(&a) = self.arrival_order.get(self.next_arrival) {
            self.next_arrival += 1;
            let t = self.apps[a as usize].queued_since;
            self.push(t, EvKind::Arrival { app: a });
        }
    }
}

/// First element of `set` strictly after `after` (or the first one).
fn next_after(set: &BTreeSet<Key>, after: Option<Key>) -> Option<Key> {
    match after {
        None => set.iter().next().copied(),
        Some(k) => set
            .range((Bound::Excluded(k), Bound::Unbounded))
            .next()
            .copied(),
    }
}

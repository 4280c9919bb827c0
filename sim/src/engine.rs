//! The discrete-event engine.
//!
//! See the crate documentation for the semantics; this module keeps the
//! state in flat vectors indexed by position (host index = `HostId`,
//! component arena index = `ComponentId`, application index = `AppId`), so
//! nothing in the results depends on hash-map iteration order.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap};
use std::ops::Bound;
use std::time::Instant;

use datasets::workload::{ComponentSpec, Shape, Workload};
use forecaster::{ForecastError, Forecaster};
use rayon::prelude::*;
use shaper::{
    scheduler_key, AppFacts, AppId, Class, ClusterView, Component, ComponentAction, ComponentId,
    ComponentModels, Decider, Forecasts, Host, HostId, OomFloor, Plan, Policy, Resource, Resources,
    SchedulerKey, ShaperConfig, ViewBuilder,
};

use shaper::models::normalise;

use crate::metrics::{AppOutcome, RunMetrics, TimePoint};
use crate::placement::{fits, FreeTree, Placement, UnfitCache};
use crate::SimError;

/// Builds one forecaster (one per component and resource).
pub type ForecasterFactory = dyn Fn(Resource) -> Result<Box<dyn Forecaster>, ForecastError> + Sync;

/// Where the forecasts the shaper sees come from.
#[derive(Clone, Copy)]
pub enum Forecasting<'a> {
    /// No forecasts: every component keeps its request (the baseline needs none).
    Off,
    /// `forecaster::baselines::Oracle` fed with each component's true future
    /// usage: the exact peak of the next horizon samples, std 0.
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
    Finish { comp: u32, gen: u32 },
    Sample { comp: u32, inst: u32 },
    Arrival { app: u32 },
    Round,
}

impl EvKind {
    /// Same-time order: completions free room first, then usage changes,
    /// then arrivals, then the shaping round.
    fn rank(&self) -> u8 {
        match self {
            EvKind::Finish { .. } => 0,
            EvKind::Sample { .. } => 1,
            EvKind::Arrival { .. } => 2,
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
}

struct CompFc {
    models: ComponentModels,
    /// Samples fed so far.
    fed: u64,
    /// Oracle only: index of the first sample its future starts at.
    base: u64,
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
    sample: u64,
    remaining_s: f64,
    rate: f64,
    progress_t: f64,
    inst: u32,
    fin_gen: u32,
    fc: Option<Box<CompFc>>,
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
    now: f64,
    dirty: bool,
    queue: BTreeSet<Key>,
    elastic_wait: BTreeSet<Key>,
    remaining_apps: usize,
    last_round_s: f64,
    view: ClusterView,
    decider: Decider,
    plan: Plan,
    m: RunMetrics,
    util_weight: f64,
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
            now: 0.0,
            dirty: false,
            queue: BTreeSet::new(),
            elastic_wait: BTreeSet::new(),
            remaining_apps: 0,
            last_round_s: 0.0,
            view,
            decider: Decider::new(),
            plan: Plan::default(),
            m: RunMetrics {
                apps: Vec::with_capacity(wl.apps.len()),
                cpu_slack: Default::default(),
                mem_slack: Default::default(),
                timeline: Vec::new(),
                oom_kills: 0,
                host_oom_kills: 0,
                evictions: 0,
                app_evictions: 0,
                component_evictions: 0,
                work_lost_s: 0.0,
                components_dropped: 0,
                resizes: 0,
                refused_growths: 0,
                events: 0,
                rounds: 0,
                forecast_updates: 0,
                forecasts_shown: 0,
                forecasts_warm: 0,
                oom_kills_warm: 0,
                forecast_wall_s: 0.0,
                decide_wall_s: 0.0,
                wall_s: 0.0,
                end_s: 0.0,
                mean_used_cpu_frac: 0.0,
                mean_used_mem_frac: 0.0,
                mean_alloc_cpu_frac: 0.0,
                mean_alloc_mem_frac: 0.0,
            },
            util_weight: 0.0,
        };
        e.load();
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
                    sample: 0,
                    remaining_s: work,
                    rate: 1.0,
                    progress_t: 0.0,
                    inst: 0,
                    fin_gen: 0,
                    fc: None,
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

    /// Runs to completion (or `max_time_s`) and returns the metrics.
    pub fn run(
        mut self,
        forecasting: Forecasting<'_>,
        progress: Option<&(dyn Fn(Progress) + Sync)>,
    ) -> Result<RunMetrics, SimError> {
        let wall = Instant::now();
        let forecasting = if self.shaper.policy == Policy::Baseline {
            Forecasting::Off
        } else {
            forecasting
        };
        self.push_next_arrival();
        if self.remaining_apps > 0 {
            let first_t = self.heap.peek().map_or(0.0, |e| e.0.t.0);
            let t0 = ((first_t / self.cfg.interval_s).floor() + 1.0) * self.cfg.interval_s;
            self.last_round_s = first_t;
            self.push(t0, EvKind::Round);
        }
        let total = self.remaining_apps;
        while self.remaining_apps > 0 {
            if self.dirty && self.heap.peek().is_none_or(|e| e.0.t.0 > self.now) {
                self.schedule_pass();
            }
            let Some(Reverse(ev)) = self.heap.pop() else {
                break;
            };
            if let Some(max) = self.cfg.max_time_s {
                if ev.t.0 > max {
                    self.now = max;
                    break;
                }
            }
            self.now = self.now.max(ev.t.0);
            self.m.events += 1;
            match ev.kind {
                EvKind::Arrival { app } => {
                    self.push_next_arrival();
                    self.enqueue(app as usize);
                }
                EvKind::Finish { comp, gen } => self.on_finish(comp as usize, gen),
                EvKind::Sample { comp, inst } => self.on_sample(comp as usize, inst),
                EvKind::Round => {
                    self.round(forecasting)?;
                    if let Some(cb) = progress {
                        cb(Progress {
                            now_s: self.now,
                            apps_done: total - self.remaining_apps,
                            apps_total: total,
                        });
                    }
                    if self.remaining_apps > 0 {
                        let t = self.now + self.cfg.interval_s;
                        self.push(t, EvKind::Round);
                    }
                }
            }
        }
        self.m.end_s = self.now;
        if self.util_weight > 0.0 {
            let w = self.util_weight;
            self.m.mean_used_cpu_frac /= w;
            self.m.mean_used_mem_frac /= w;
            self.m.mean_alloc_cpu_frac /= w;
            self.m.mean_alloc_mem_frac /= w;
        }
        for (ai, a) in self.apps.iter().enumerate() {
            let o = &mut self.m.apps[ai];
            o.finished_s = a.finished_s;
            o.queued_s = a.queued_s
                + if a.state == AState::Queued {
                    (self.now - a.queued_since).max(0.0)
                } else {
                    0.0
                };
            o.crashes = a.crashes;
            o.evictions = a.evictions;
        }
        self.m.wall_s = wall.elapsed().as_secs_f64();
        Ok(self.m)
    }

    // ----- scheduler -----

    fn enqueue(&mut self, a: usize) {
        let app = &mut self.apps[a];
        app.state = AState::Queued;
        app.queued_since = self.now;
        let key = app.key;
        self.queue.insert(key);
        self.dirty = true;
    }

    /// Admits queued applications and places pending elastic components, in
    /// scheduler order (merged walk over both sets). In strict mode the
    /// first queued application that does not fit blocks every later entry,
    /// elastic components of later applications included.
    fn schedule_pass(&mut self) {
        self.dirty = false;
        let strict = !self.cfg.backfill;
        let mut q_cur: Option<Key> = None;
        let mut e_cur: Option<Key> = None;
        let mut blocked_at: Option<Key> = None;
        loop {
            let qn = if strict && blocked_at.is_some() {
                None
            } else {
                next_after(&self.queue, q_cur)
            };
            let mut en = next_after(&self.elastic_wait, e_cur);
            if let (true, Some(b), Some(e)) = (strict, blocked_at, en) {
                if e > b {
                    en = None;
                }
            }
            let (key, from_queue) = match (qn, en) {
                (None, None) => break,
                (Some(q), None) => (q, true),
                (None, Some(e)) => (e, false),
                (Some(q), Some(e)) => {
                    if q < e {
                        (q, true)
                    } else {
                        (e, false)
                    }
                }
            };
            let a = key.1 as usize;
            if from_queue {
                q_cur = Some(key);
                if self.try_admit(a) {
                    self.queue.remove(&key);
                    if self.apps[a].state == AState::Running {
                        self.place_pending(a);
                    }
                    // Its leftover pending components are retried when the
                    // walk reaches its key in `elastic_wait`; skip that.
                    if e_cur.is_none_or(|e| e < key) {
                        e_cur = Some(key);
                    }
                } else if blocked_at.is_none() {
                    blocked_at = Some(key);
                }
            } else {
                e_cur = Some(key);
                self.place_pending(a);
            }
        }
    }

    /// Places every core component of `a` (all or nothing), then queues its
    /// elastic components as pending. True when admitted.
    fn try_admit(&mut self, a: usize) -> bool {
        let (first, n) = (self.apps[a].first as usize, self.apps[a].n as usize);
        // Quick necessary conditions.
        let mut need = Resources::ZERO;
        let max = self.tree.max_free();
        for c in first..first + n {
            if self.comps[c].class == Class::Core {
                let r = self.comps[c].request;
                if !fits(&r, max.cpu_cores, max.mem_bytes) || self.unfit.known_unfit(&r, &self.tree)
                {
                    return false;
                }
                need = need.add(&r);
            }
        }
        if !fits(&need, self.free_pos_cpu, self.free_pos_mem) {
            return false;
        }
        // Tentative placement, undone afterwards either way by restoring the
        // exact previous host state (so the unfit cache stays valid: no host
        // gains room it did not have before).
        let saved_pos = (self.free_pos_cpu, self.free_pos_mem);
        let mut saved: Vec<(usize, Resources)> = Vec::new();
        let mut placed: Vec<(usize, usize)> = Vec::new();
        let mut ok = true;
        for c in first..first + n {
            if self.comps[c].class != Class::Core {
                continue;
            }
            let r = self.comps[c].request;
            // Records a failure only while nothing is tentatively reserved.
            let found = if self.unfit.known_unfit(&r, &self.tree) {
                None
            } else {
                self.tree.find(&r, self.cfg.placement)
            };
            match found {
                Some(h) => {
                    if !saved.iter().any(|(sh, _)| *sh == h) {
                        saved.push((h, self.hosts[h].alloc));
                    }
                    self.hosts[h].alloc = self.hosts[h].alloc.add(&r);
                    let free = self.host_free(h);
                    self.tree.set(h, free);
                    placed.push((c, h));
                }
                None => {
                    if placed.is_empty() {
                        // Nothing tentative yet: a failure of the real state.
                        self.unfit.record(r);
                    }
                    ok = false;
                    break;
                }
            }
        }
        for &(h, alloc) in saved.iter().rev() {
            self.hosts[h].alloc = alloc;
            let free = self.host_free(h);
            self.tree.set(h, free);
        }
        (self.free_pos_cpu, self.free_pos_mem) = saved_pos;
        if !ok {
            return false;
        }
        let app = &mut self.apps[a];
        app.state = AState::Running;
        app.queued_s += (self.now - app.queued_since).max(0.0);
        for c in first..first + n {
            if self.comps[c].class == Class::Elastic && self.comps[c].state == CState::Idle {
                self.comps[c].state = CState::Pending;
                self.apps[a].pending.push(c as u32);
            }
        }
        for (c, h) in placed {
            self.start(c, h);
            if self.apps[a].state != AState::Running {
                // The host OOM killer crashed it while starting (optimistic
                // overcommit); it is queued again.
                break;
            }
        }
        true
    }

    /// A host for a component needing `r` (None when none fits); remembers
    /// failures so that equal or larger requests skip the tree search until
    /// room appears.
    fn find_host(&mut self, r: &Resources) -> Option<usize> {
        if self.unfit.known_unfit(r, &self.tree) {
            return None;
        }
        let found = self.tree.find(r, self.cfg.placement);
        if found.is_none() {
            self.unfit.record(*r);
        }
        found
    }

    /// Places the pending elastic components of running app `a` that fit.
    fn place_pending(&mut self, a: usize) {
        if self.apps[a].state != AState::Running {
            return;
        }
        let pending = std::mem::take(&mut self.apps[a].pending);
        let mut left = Vec::with_capacity(pending.len());
        for c in pending {
            let c = c as usize;
            if self.comps[c].state != CState::Pending {
                continue;
            }
            let r = self.comps[c].request;
            match self.find_host(&r) {
                Some(h) => self.start(c, h),
                None => left.push(c as u32),
            }
            if self.apps[a].state != AState::Running {
                // Starting a component triggered the host OOM killer and
                // crashed this application.
                return;
            }
        }
        let key = self.apps[a].key;
        if left.is_empty() {
            self.elastic_wait.remove(&key);
        } else {
            self.elastic_wait.insert(key);
        }
        self.apps[a].pending = left;
    }

    // ----- host bookkeeping -----

    fn host_free(&self, h: usize) -> Resources {
        self.hosts[h].cap.sub(&self.hosts[h].alloc)
    }

    /// Adds `delta` to host `h`'s allocation sum (negative frees).
    fn reserve(&mut self, h: usize, delta: Resources) {
        let before = self.host_free(h);
        self.hosts[h].alloc = self.hosts[h].alloc.add(&delta);
        let after = self.host_free(h);
        self.free_pos_cpu += after.cpu_cores.max(0.0) - before.cpu_cores.max(0.0);
        self.free_pos_mem += after.mem_bytes.max(0.0) - before.mem_bytes.max(0.0);
        self.tree.set(h, after);
        if after.cpu_cores > before.cpu_cores || after.mem_bytes > before.mem_bytes {
            self.unfit.gained(h);
        }
    }

    /// Starts component `c` on host `h` with its request as allocation. Its
    /// forecasters are built at its first shaping round (a component that
    /// finishes before one never needs them).
    fn start(&mut self, c: usize, h: usize) {
        let request = self.comps[c].request;
        self.reserve(h, request);
        let spec =
            &self.wl.apps[self.comps[c].app as usize].components[self.comps[c].spec as usize];
        let now = self.now;
        let slot = self.hosts[h].comps.len() as u32;
        self.hosts[h].comps.push(c as u32);
        let comp = &mut self.comps[c];
        comp.state = CState::Running;
        comp.host = h as u32;
        comp.host_slot = slot;
        comp.started_s = now;
        comp.alloc = comp.request;
        comp.sample = 0;
        comp.usage = usage_at(spec, &comp.request, 0);
        comp.remaining_s = comp.work_s;
        comp.progress_t = now;
        comp.rate = 0.0;
        comp.fc = None;
        comp.forecast = None;
        comp.warm = false;
        let usage = comp.usage;
        let inst = comp.inst;
        self.hosts[h].usage = self.hosts[h].usage.add(&usage);
        self.reschedule_finish(c);
        let u = spec.usage.interval_s;
        if u.is_finite()
            && u > 0.0
            && !(is_constant(&spec.usage.cpu_cores) && is_constant(&spec.usage.mem_bytes))
        {
            self.push(
                now + u,
                EvKind::Sample {
                    comp: c as u32,
                    inst,
                },
            );
        }
        self.check_host_overload(h);
    }

    /// Brings `c`'s progress up to now, recomputes its rate and, when it
    /// changed, its completion event.
    fn reschedule_finish(&mut self, c: usize) {
        let now = self.now;
        let comp = &mut self.comps[c];
        comp.remaining_s = (comp.remaining_s - comp.rate * (now - comp.progress_t)).max(0.0);
        comp.progress_t = now;
        let demand = comp.usage.cpu_cores;
        let rate = if demand <= 0.0 || comp.alloc.cpu_cores >= demand {
            1.0
        } else {
            (comp.alloc.cpu_cores / demand).max(0.0)
        };
        if rate == comp.rate && comp.fin_gen > 0 {
            return;
        }
        comp.rate = rate;
        comp.fin_gen = comp.fin_gen.wrapping_add(1);
        let gen = comp.fin_gen;
        if rate > 0.0 {
            let t = now + comp.remaining_s / rate;
            self.push(
                t,
                EvKind::Finish {
                    comp: c as u32,
                    gen,
                },
            );
        }
    }

    /// Removes running component `c` from its host (frees allocation and usage).
    fn detach(&mut self, c: usize) {
        let h = self.comps[c].host as usize;
        let slot = self.comps[c].host_slot as usize;
        let host = &mut self.hosts[h];
        host.comps.swap_remove(slot);
        if let Some(&moved) = host.comps.get(slot) {
            self.comps[moved as usize].host_slot = slot as u32;
        }
        let usage = self.comps[c].usage;
        self.hosts[h].usage = self.hosts[h].usage.sub(&usage);
        if self.hosts[h].comps.is_empty() {
            self.hosts[h].usage = Resources::ZERO;
        }
        let alloc = self.comps[c].alloc;
        self.reserve(h, Resources::ZERO.sub(&alloc));
        if self.hosts[h].comps.is_empty() {
            let before = self.host_free(h);
            self.hosts[h].alloc = Resources::ZERO;
            let after = self.host_free(h);
            self.free_pos_cpu += after.cpu_cores.max(0.0) - before.cpu_cores.max(0.0);
            self.free_pos_mem += after.mem_bytes.max(0.0) - before.mem_bytes.max(0.0);
            self.tree.set(h, after);
            self.unfit.gained(h);
        }
        let comp = &mut self.comps[c];
        comp.inst = comp.inst.wrapping_add(1);
        comp.fin_gen = comp.fin_gen.wrapping_add(1);
        comp.fc = None;
        comp.forecast = None;
        comp.alloc = Resources::ZERO;
        comp.usage = Resources::ZERO;
        self.dirty = true;
    }

    /// Work done by running component `c` so far (seconds at full speed).
    fn work_done(&self, c: usize) -> f64 {
        let comp = &self.comps[c];
        let rem = (comp.remaining_s - comp.rate * (self.now - comp.progress_t)).max(0.0);
        (comp.work_s - rem).max(0.0)
    }

    // ----- events -----

    fn on_finish(&mut self, c: usize, gen: u32) {
        if self.comps[c].state != CState::Running || self.comps[c].fin_gen != gen {
            return;
        }
        self.detach(c);
        self.comps[c].state = CState::Done;
        self.comps[c].remaining_s = 0.0;
        let a = self.comps[c].app as usize;
        self.apps[a].done += 1;
        if self.apps[a].done >= self.apps[a].n {
            let key = self.apps[a].key;
            self.elastic_wait.remove(&key);
            self.apps[a].state = AState::Done;
            self.apps[a].finished_s = Some(self.now);
            self.remaining_apps -= 1;
        }
    }

    fn on_sample(&mut self, c: usize, inst: u32) {
        if self.comps[c].state != CState::Running || self.comps[c].inst != inst {
            return;
        }
        let spec =
            &self.wl.apps[self.comps[c].app as usize].components[self.comps[c].spec as usize];
        let u = spec.usage.interval_s;
        let comp = &mut self.comps[c];
        comp.sample += 1;
        let new_usage = usage_at(spec, &comp.request, comp.sample);
        let old_usage = comp.usage;
        // Progress at the old rate up to now, then switch usage.
        comp.remaining_s = (comp.remaining_s - comp.rate * (self.now - comp.progress_t)).max(0.0);
        comp.progress_t = self.now;
        comp.usage = new_usage;
        let next_t = comp.started_s + (comp.sample + 1) as f64 * u;
        let h = comp.host as usize;
        let alloc_mem = comp.alloc.mem_bytes;
        self.hosts[h].usage = self.hosts[h].usage.sub(&old_usage).add(&new_usage);
        self.push(
            next_t,
            EvKind::Sample {
                comp: c as u32,
                inst,
            },
        );
        self.reschedule_finish(c);
        if new_usage.mem_bytes > alloc_mem * (1.0 + 1e-9) {
            self.oom_kill(c);
        }
        if new_usage.mem_bytes > old_usage.mem_bytes {
            self.check_host_overload(h);
        }
    }

    /// The host OOM killer: while the host's memory usage exceeds its
    /// capacity, kill the component using the most memory (ties: lowest
    /// component index).
    fn check_host_overload(&mut self, h: usize) {
        while self.hosts[h].usage.mem_bytes > self.hosts[h].cap.mem_bytes * (1.0 + 1e-9) {
            let victim = self.hosts[h].comps.iter().copied().max_by(|&a, &b| {
                self.comps[a as usize]
                    .usage
                    .mem_bytes
                    .total_cmp(&self.comps[b as usize].usage.mem_bytes)
                    .then(b.cmp(&a))
            });
            let Some(v) = victim else { break };
            self.m.host_oom_kills += 1;
            self.oom_kill(v as usize);
        }
    }

    /// An OOM kill of component `c`: a core component crashes its
    /// application; an elastic one loses its work and waits for room again.
    fn oom_kill(&mut self, c: usize) {
        self.m.oom_kills += 1;
        self.comps[c].oom_floor = Some(OomFloor::after_kill(
            self.comps[c].alloc.mem_bytes,
            self.now,
            &self.shaper,
        ));
        if self.comps[c].warm {
            self.m.oom_kills_warm += 1;
        }
        let a = self.comps[c].app as usize;
        match self.comps[c].class {
            Class::Core => {
                self.apps[a].crashes += 1;
                self.apps[a].failures += 1;
                self.reset_app(a);
            }
            Class::Elastic => {
                // Counts towards the shaper's failure limit: a component
                // replays its usage from the start when it restarts, so an
                // app whose forecasts miss a spike would otherwise lose the
                // same work forever.
                self.apps[a].failures += 1;
                self.lose_elastic(c);
            }
        }
    }

    /// Kills every component of `a`, throws its work away and requeues it at
    /// its original position (submission time / priority).
    fn reset_app(&mut self, a: usize) {
        let (first, n) = (self.apps[a].first as usize, self.apps[a].n as usize);
        let mut done = 0;
        for c in first..first + n {
            match self.comps[c].state {
                CState::Running => {
                    self.m.work_lost_s += self.work_done(c);
                    self.detach(c);
                }
                CState::Done => self.m.work_lost_s += self.comps[c].work_s,
                CState::Dropped => {
                    done += 1;
                    continue;
                }
                CState::Idle | CState::Pending => {}
            }
            let comp = &mut self.comps[c];
            comp.state = CState::Idle;
            comp.remaining_s = comp.work_s;
            comp.inst = comp.inst.wrapping_add(1);
        }
        let app = &mut self.apps[a];
        app.pending.clear();
        app.done = done;
        let key = app.key;
        self.elastic_wait.remove(&key);
        self.enqueue(a);
    }

    /// Elastic component `c` loses its work and waits for room again.
    fn lose_elastic(&mut self, c: usize) {
        self.m.work_lost_s += self.work_done(c);
        self.detach(c);
        let comp = &mut self.comps[c];
        comp.state = CState::Pending;
        comp.remaining_s = comp.work_s;
        let a = comp.app as usize;
        self.apps[a].pending.push(c as u32);
        let key = self.apps[a].key;
        self.elastic_wait.insert(key);
        self.dirty = true;
    }

    // ----- shaping round -----

    fn round(&mut self, forecasting: Forecasting<'_>) -> Result<(), SimError> {
        self.m.rounds += 1;
        if forecasting.is_on() {
            let t = Instant::now();
            self.update_forecasts(forecasting)?;
            self.m.forecast_wall_s += t.elapsed().as_secs_f64();
        }
        let t = Instant::now();
        self.build_view();
        self.decider
            .decide_into(&self.view, self.now, &self.shaper, &mut self.plan);
        self.m.decide_wall_s += t.elapsed().as_secs_f64();
        let plan = std::mem::take(&mut self.plan);
        self.apply(&plan);
        self.plan = plan;
        self.sample_metrics();
        self.dirty = true;
        Ok(())
    }

    fn update_forecasts(&mut self, forecasting: Forecasting<'_>) -> Result<(), SimError> {
        let wl = self.wl;
        let now = self.now;
        let h = self.horizon;
        let kernel = &self.shaper;
        let warm_samples = self.cfg.warm_samples;
        // (forecaster updates, forecasts shown, of which warm)
        type Counts = (u64, u64, u64);
        let update = |c: &mut Comp| -> Result<Counts, SimError> {
            if c.state != CState::Running {
                return Ok((0, 0, 0));
            }
            let spec = &wl.apps[c.app as usize].components[c.spec as usize];
            let u = spec.usage.interval_s;
            // Current sample: the sample events' counter, or (for constant
            // series, which have no sample events) the elapsed time, with a
            // tolerance so that float rounding never lags a boundary.
            let cur = if u.is_finite() && u > 0.0 {
                c.sample
                    .max(((now - c.started_s) / u + 1e-6).floor().max(0.0) as u64)
            } else {
                0
            };
            let req = c.request;
            let is_oracle = matches!(forecasting, Forecasting::Oracle);
            if c.fc.is_none() {
                // Built at the component's first round: the model sees every
                // sample since the start below, exactly as if it had been
                // built at start; an oracle starts at the current sample.
                c.fc = match forecasting {
                    Forecasting::Off => None,
                    Forecasting::Oracle => {
                        Some(Box::new(oracle_fc_from(spec, &req, c.work_s, cur, h)?))
                    }
                    Forecasting::Model(f) => Some(Box::new(CompFc {
                        models: ComponentModels::build(f)?,
                        fed: 0,
                        base: 0,
                    })),
                };
            }
            let Some(fc) = c.fc.as_mut() else {
                return Ok((0, 0, 0));
            };
            if is_oracle && cur + h as u64 + 1 >= fc.base + oracle_len(c.work_s, u, h) {
                // Past the future the oracle was built with (the component
                // ran slower than at full speed): rebuild it from here.
                **fc = oracle_fc_from(spec, &req, c.work_s, cur, h)?;
            }
            let mut n = 0u64;
            while fc.fed <= cur {
                let v = usage_at(spec, &req, fc.fed);
                fc.models.observe(Some(v.cpu_cores), v.mem_bytes, req);
                fc.fed += 1;
                n += 2;
            }
            c.forecast = fc.models.forecast(h, req, kernel);
            c.warm = c.forecast.is_some() && (is_oracle || fc.models.observed() >= warm_samples);
            let shown = u64::from(c.forecast.is_some());
            Ok((n + 2 * shown, shown, u64::from(c.warm)))
        };
        let add = |a: Counts, b: Counts| (a.0 + b.0, a.1 + b.1, a.2 + b.2);
        let (n, shown, warm): Counts = if self.cfg.parallel_forecasts {
            self.comps
                .par_iter_mut()
                .map(update)
                .try_reduce(|| (0, 0, 0), |a, b| Ok(add(a, b)))?
        } else {
            let mut s = (0, 0, 0);
            for c in self.comps.iter_mut() {
                s = add(s, update(c)?);
            }
            s
        };
        self.m.forecasts_shown += shown;
        self.m.forecasts_warm += warm;
        self.m.forecast_updates += n;
        Ok(())
    }

    fn build_view(&mut self) {
        let now = self.now;
        let mut b: ViewBuilder<u32> = ViewBuilder::new(now);
        for h in &self.view.hosts {
            b.host(h.id, h.capacity);
        }
        for (ai, a) in self.apps.iter().enumerate() {
            if a.state != AState::Running {
                continue;
            }
            let spec = &self.wl.apps[ai];
            let range = a.first as usize..(a.first + a.n) as usize;
            // Expected remaining time (SJF): the longest remaining component.
            let remaining = self.comps[range.clone()]
                .iter()
                .map(|comp| match comp.state {
                    CState::Running => {
                        (comp.remaining_s - comp.rate * (now - comp.progress_t)).max(0.0)
                    }
                    CState::Pending | CState::Idle => comp.work_s,
                    CState::Done | CState::Dropped => 0.0,
                })
                .fold(0.0, f64::max);
            let facts = AppFacts {
                id: AppId(ai as u64),
                submitted_s: Some(self.m.apps[ai].arrival_s),
                priority: spec.priority,
                failures: a.failures,
                expected_remaining_s: Some(remaining),
            };
            for c in range {
                let comp = &self.comps[c];
                if comp.state != CState::Running {
                    continue;
                }
                let rem = (comp.remaining_s - comp.rate * (now - comp.progress_t)).max(0.0);
                b.component(
                    ai as u32,
                    facts,
                    Component {
                        id: ComponentId(c as u64),
                        class: comp.class,
                        host: HostId(u64::from(comp.host)),
                        request: comp.request,
                        started_s: comp.started_s,
                        allocation: comp.alloc,
                        usage: comp.usage,
                        forecast: comp.forecast,
                        protected: false,
                        work_done_s: comp.work_s - rem,
                    },
                    comp.oom_floor.as_ref(),
                );
            }
        }
        self.view = b.build();
    }

    /// Carries out the plan in the kernel's apply order.
    fn apply(&mut self, plan: &Plan) {
        let mut resized: Vec<usize> = Vec::new();
        for act in plan.component_actions() {
            match act {
                ComponentAction::Evict {
                    app,
                    whole_app: true,
                    ..
                } => {
                    // One action per component: the first resets the app.
                    let a = app.0 as usize;
                    if a < self.apps.len() && self.apps[a].state == AState::Running {
                        self.m.evictions += 1;
                        self.m.app_evictions += 1;
                        self.apps[a].evictions += 1;
                        self.apps[a].failures += 1;
                        self.reset_app(a);
                    }
                }
                ComponentAction::Evict {
                    component,
                    whole_app: false,
                    ..
                } => {
                    let c = component.0 as usize;
                    if c < self.comps.len() && self.comps[c].state == CState::Running {
                        self.m.evictions += 1;
                        self.m.component_evictions += 1;
                        if self.comps[c].class == Class::Core {
                            // The shaper never evicts a lone core component;
                            // if it did, the application could not go on.
                            let a = self.comps[c].app as usize;
                            self.apps[a].evictions += 1;
                            self.apps[a].failures += 1;
                            self.reset_app(a);
                        } else {
                            let a = self.comps[c].app as usize;
                            self.apps[a].failures += 1;
                            self.lose_elastic(c);
                        }
                    }
                }
                ComponentAction::Resize { component, to, .. } => {
                    let c = component.0 as usize;
                    if c >= self.comps.len() || self.comps[c].state != CState::Running {
                        continue;
                    }
                    let to = sane_res(to);
                    let from = self.comps[c].alloc;
                    if to == from {
                        continue;
                    }
                    let h = self.comps[c].host as usize;
                    let delta = to.sub(&from);
                    if self.shaper.policy == Policy::Optimistic
                        && self.cfg.optimistic_growth == OptimisticGrowth::Refuse
                        && !to.fits_in(&from)
                    {
                        let free = self.host_free(h);
                        let tol = 1e-9;
                        if delta.cpu_cores > free.cpu_cores + tol * self.hosts[h].cap.cpu_cores
                            || delta.mem_bytes > free.mem_bytes + tol * self.hosts[h].cap.mem_bytes
                        {
                            self.m.refused_growths += 1;
                            continue;
                        }
                    }
                    self.reserve(h, delta);
                    self.comps[c].alloc = to;
                    self.m.resizes += 1;
                    if to.cpu_cores < from.cpu_cores || to.mem_bytes < from.mem_bytes {
                        self.dirty = true;
                    }
                    self.reschedule_finish(c);
                    resized.push(c);
                }
            }
        }
        for c in resized {
            let comp = &self.comps[c];
            if comp.state == CState::Running
                && comp.usage.mem_bytes > comp.alloc.mem_bytes * (1.0 + 1e-9)
            {
                self.oom_kill(c);
            }
        }
    }

    fn sample_metrics(&mut self) {
        let now = self.now;
        let w_round = (now - self.last_round_s).max(0.0);
        self.last_round_s = now;
        let mut n_running = 0usize;
        for comp in &self.comps {
            if comp.state != CState::Running {
                continue;
            }
            n_running += 1;
            let w = (now - comp.started_s).min(w_round).max(0.0);
            if w <= 0.0 {
                continue;
            }
            if comp.alloc.cpu_cores > 0.0 {
                self.m.cpu_slack.add(
                    (comp.alloc.cpu_cores - comp.usage.cpu_cores) / comp.alloc.cpu_cores,
                    w,
                );
            }
            if comp.alloc.mem_bytes > 0.0 {
                self.m.mem_slack.add(
                    (comp.alloc.mem_bytes - comp.usage.mem_bytes) / comp.alloc.mem_bytes,
                    w,
                );
            }
        }
        let (mut cap, mut used, mut alloc) = (Resources::ZERO, Resources::ZERO, Resources::ZERO);
        for h in &self.hosts {
            cap = cap.add(&h.cap);
            used = used.add(&h.usage);
            alloc = alloc.add(&h.alloc);
        }
        let frac = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let p = TimePoint {
            t_s: now,
            queued_apps: self.queue.len(),
            running_apps: self
                .apps
                .iter()
                .filter(|a| a.state == AState::Running)
                .count(),
            running_components: n_running,
            used_cpu_frac: frac(used.cpu_cores, cap.cpu_cores),
            used_mem_frac: frac(used.mem_bytes, cap.mem_bytes),
            alloc_cpu_frac: frac(alloc.cpu_cores, cap.cpu_cores),
            alloc_mem_frac: frac(alloc.mem_bytes, cap.mem_bytes),
        };
        if w_round > 0.0 {
            self.util_weight += w_round;
            self.m.mean_used_cpu_frac += p.used_cpu_frac * w_round;
            self.m.mean_used_mem_frac += p.used_mem_frac * w_round;
            self.m.mean_alloc_cpu_frac += p.alloc_cpu_frac * w_round;
            self.m.mean_alloc_mem_frac += p.alloc_mem_frac * w_round;
        }
        self.m.timeline.push(p);
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

/// Samples of future an oracle is built with: the component's run at full
/// speed plus the horizon, with room for a 2x slowdown.
fn oracle_len(work_s: f64, u: f64, h: usize) -> u64 {
    let full = if u.is_finite() && u > 0.0 {
        (work_s / u).ceil()
    } else {
        1.0
    };
    (2.0 * full.clamp(1.0, 1e7)) as u64 + h as u64 + 2
}

/// An oracle pair whose future starts at sample `from` (the samples before
/// it count as already observed).
fn oracle_fc_from(
    spec: &ComponentSpec,
    req: &Resources,
    work_s: f64,
    from: u64,
    h: usize,
) -> Result<CompFc, SimError> {
    let len = oracle_len(work_s, spec.usage.interval_s, h);
    let (mut cpu, mut mem) = (
        Vec::with_capacity(len as usize),
        Vec::with_capacity(len as usize),
    );
    for i in from..from + len {
        let v = usage_at(spec, req, i);
        cpu.push(normalise(v.cpu_cores, req.cpu_cores));
        mem.push(normalise(v.mem_bytes, req.mem_bytes));
    }
    Ok(CompFc {
        models: ComponentModels::always_warm(
            Box::new(forecaster::baselines::Oracle::new(cpu)?),
            Box::new(forecaster::baselines::Oracle::new(mem)?),
        ),
        fed: from,
        base: from,
    })
}

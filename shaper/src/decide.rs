//! `decide()`: one shaping round.
//!
//! Layout for speed: hosts are indexed by position once (dense ids map
//! directly, others through one sorted table and a binary search); every
//! component gets one flat [`Slot`] (no per-component allocation, no hash
//! maps); sort keys are packed integers.

use crate::config::{Policy, ShaperConfig, VictimOrder};
use crate::limits::{bound_target, sane};
use crate::model::{
    Application, Class, ClusterView, Component, Host, Predictive, Resource, Resources,
};
use crate::order::{fkey, prio_desc, scheduler_order};
use crate::plan::{Action, Basis, Binding, Bound, Explanation, Plan, PlanSummary, Reason, Sizing};

const UNKNOWN: u32 = u32::MAX;
const NO_VICTIM: u32 = u32::MAX;
const NO_NEXT: u32 = u32::MAX;
/// Relative tolerance when checking that a demand fits a host's free room,
/// so that float rounding in long sums never evicts anything.
const FIT_TOLERANCE: f64 = 1e-9;

/// A component's target allocation and how it was computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    /// Planned allocation before hysteresis and protection.
    pub alloc: Resources,
    pub basis: Basis,
    pub cpu: Sizing,
    pub mem: Sizing,
}

fn usable(p: &Predictive) -> bool {
    p.mean.is_finite() && p.std.is_finite()
}

/// The target allocation of one component under `cfg` at `now_s`:
/// `mean + k1 * request + (upper(k2) - mean)` per resource, raised to the
/// floor, cut to the ceiling (`request * max_growth`), raised to current
/// usage. Components in the grace period, without a usable forecast, or in an
/// application over the failure limit target their request (same clamps);
/// under the baseline policy the target is exactly the request.
pub fn component_target(
    app: &Application,
    c: &Component,
    now_s: f64,
    cfg: &ShaperConfig,
) -> Target {
    let basis = if cfg.policy == Policy::Baseline {
        Basis::Baseline
    } else if !matches!(
        (now_s - c.started_s).partial_cmp(&cfg.grace_period_s),
        Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
    ) {
        // also catches NaN start times: conservative
        Basis::GracePeriod
    } else if app.failures >= cfg.failure_limit {
        Basis::FailureLimit
    } else {
        match &c.forecast {
            Some(f) if usable(&f.cpu) && usable(&f.mem) => Basis::Forecast,
            _ => Basis::NoForecast,
        }
    };
    let growth = if cfg.max_growth.is_finite() && cfg.max_growth >= 1.0 {
        cfg.max_growth
    } else {
        1.0
    };
    let k1 = sane(cfg.k1);
    let k2 = sane(cfg.k2);
    let one = |r: Resource| -> Sizing {
        let req = sane(c.request.get(r));
        let usage = sane(c.usage.get(r));
        if basis == Basis::Baseline {
            return Sizing {
                mean: 0.0,
                sigma: 0.0,
                k1_term: 0.0,
                k2_term: 0.0,
                target: req,
                bound: Bound::Buffer,
            };
        }
        let (mean, sigma, k1_term, k2_term, raw) = match (&c.forecast, basis) {
            (Some(f), Basis::Forecast) => {
                let p = f.get(r);
                let k1_term = k1 * req;
                let k2_term = p.band_above(k2);
                (p.mean, p.std, k1_term, k2_term, p.mean + k1_term + k2_term)
            }
            _ => (0.0, 0.0, 0.0, 0.0, req),
        };
        let floor = match r {
            Resource::Cpu => cfg.min_cpu_cores,
            Resource::Mem => cfg.min_mem_bytes,
        };
        let (t, bound) = bound_target(r, raw, floor, req * growth, usage);
        Sizing {
            mean,
            sigma,
            k1_term,
            k2_term,
            target: t,
            bound,
        }
    };
    let cpu = one(Resource::Cpu);
    let mem = one(Resource::Mem);
    Target {
        alloc: Resources::new(cpu.target, mem.target),
        basis,
        cpu,
        mem,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not decided yet (pessimistic planning).
    Pending,
    /// Kept at `eff`.
    Kept,
    /// Kept whatever the room: protected, or a core component of an
    /// application that has a protected component.
    Forced,
    /// Its application is evicted.
    AppEvicted,
    /// Evicted elastic component.
    Victim,
    /// Would be evicted but the eviction cap was hit.
    Deferred,
    /// Host not in the view: left alone.
    Unplaced,
}

/// Everything the planning needs about one component, so that after the
/// first (sequential) pass over the view only these 32-byte slots are read.
#[derive(Clone, Copy, Debug)]
struct Slot {
    host: u32,
    victim: u32,
    /// Next elastic slot of the same application in keep order.
    next: u32,
    state: State,
    core: bool,
    protected: bool,
    changed: bool,
    /// Allocation in force after the plan.
    eff: Resources,
}

#[derive(Clone, Copy, Debug)]
struct Victim {
    /// The application (view index).
    app: u32,
    /// The component that did not fit (global slot index).
    slot: u32,
    whole_app: bool,
    deferred: bool,
    binding: Binding,
}

struct HostIndex {
    dense: bool,
    base: u64,
    n: u64,
    sorted: Vec<(u64, u32)>,
}

impl HostIndex {
    fn new(hosts: &[Host]) -> Self {
        let n = hosts.len() as u64;
        let base = hosts.first().map(|h| h.id.0).unwrap_or(0);
        // A host whose capacity is not a pair of finite numbers >= 0 is a
        // bad report: its components are left alone rather than evicted.
        let valid = |h: &Host| {
            h.capacity.is_finite() && h.capacity.cpu_cores >= 0.0 && h.capacity.mem_bytes >= 0.0
        };
        let invalid = hosts.iter().filter(|h| !valid(h)).count();
        if invalid > 0 {
            tracing::warn!(
                hosts = invalid,
                "hosts with invalid capacity: their components are left alone"
            );
        }
        let dense = invalid == 0
            && hosts
                .iter()
                .enumerate()
                .all(|(i, h)| base.checked_add(i as u64) == Some(h.id.0));
        let mut sorted = Vec::new();
        if !dense {
            sorted = hosts
                .iter()
                .enumerate()
                .map(|(i, h)| (h.id.0, if valid(h) { i as u32 } else { UNKNOWN }))
                .collect();
            sorted.sort_unstable();
            let before = sorted.len();
            sorted.dedup_by_key(|e| e.0);
            if sorted.len() != before {
                tracing::warn!(
                    duplicates = before - sorted.len(),
                    "duplicate host ids in view: first one wins"
                );
            }
        }
        Self {
            dense,
            base,
            n,
            sorted,
        }
    }

    fn get(&self, id: u64) -> u32 {
        if self.dense {
            let d = id.wrapping_sub(self.base);
            if d < self.n {
                d as u32
            } else {
                UNKNOWN
            }
        } else {
            match self.sorted.binary_search_by_key(&id, |e| e.0) {
                Ok(i) => self.sorted[i].1,
                Err(_) => UNKNOWN,
            }
        }
    }
}

fn rel_change(to: f64, from: f64) -> f64 {
    if to == from {
        0.0
    } else if from > 0.0 {
        (to - from).abs() / from
    } else {
        f64::INFINITY
    }
}

/// Applies protection and hysteresis: returns (allocation in force after
/// the plan, changed, skipped by hysteresis).
fn settle(planned: Resources, c: &Component, cfg: &ShaperConfig) -> (Resources, bool, bool) {
    let cur = c.allocation;
    let cur_ok = cur.is_finite() && cur.cpu_cores >= 0.0 && cur.mem_bytes >= 0.0;
    if !cur_ok {
        return (planned, true, false);
    }
    let mut p = planned;
    if c.protected {
        p = Resources::new(
            p.cpu_cores.max(cur.cpu_cores),
            p.mem_bytes.max(cur.mem_bytes),
        );
    }
    if p == cur {
        return (cur, false, false);
    }
    if cfg.policy == Policy::Baseline {
        return (p, true, false);
    }
    let usage = Resources::new(sane(c.usage.cpu_cores), sane(c.usage.mem_bytes));
    // Growths the hysteresis never holds back: any resource already short
    // of its usage, and any memory growth at all (memory is not
    // compressible: a held-back growth towards the forecast peak is an OOM
    // kill waiting to happen, CPU only slows down).
    let need_growth = p.mem_bytes > cur.mem_bytes
        || Resource::ALL
            .iter()
            .any(|&r| cur.get(r) < usage.get(r) && p.get(r) > cur.get(r));
    let m = if cfg.min_relative_change.is_finite() {
        cfg.min_relative_change
    } else {
        0.0
    };
    let small = Resource::ALL
        .iter()
        .all(|&r| rel_change(p.get(r), cur.get(r)) < m);
    if small && !need_growth {
        (cur, false, true)
    } else {
        (p, true, false)
    }
}

fn fits(free: &Resources, need: &Resources, tol: &Resources) -> Option<Resource> {
    if free.cpu_cores - need.cpu_cores < -tol.cpu_cores {
        Some(Resource::Cpu)
    } else if free.mem_bytes - need.mem_bytes < -tol.mem_bytes {
        Some(Resource::Mem)
    } else {
        None
    }
}

/// One shaping round: the cluster view, the time and the parameters in, the
/// plan out. Pure and deterministic (same inputs, same plan; the order of
/// hosts and applications in the view does not change which actions are
/// planned).
///
/// `cfg` should have passed [`ShaperConfig::validate`]; with an invalid
/// config `decide` still never panics and returns finite allocations.
pub fn decide(view: &ClusterView, now_s: f64, cfg: &ShaperConfig) -> Plan {
    decide_with(view, now_s, cfg, &mut Scratch::default(), Vec::new())
}

/// Buffers reused from one round to the next by a [`Decider`].
#[derive(Debug, Default)]
struct Scratch {
    app_info: Vec<AppInfo>,
    slots: Vec<Slot>,
    shrink_slots: Vec<u32>,
    growths: Vec<Action>,
    growth_slots: Vec<u32>,
    app_elastic: Vec<(u64, u64, u32)>,
    global_elastic: Vec<GlobalKey>,
}

/// [`decide`] for callers that plan round after round (the central shaper,
/// the simulator): it keeps its working buffers between rounds, and
/// [`Decider::decide_into`] also reuses the previous plan's memory, so a
/// large cluster does not pay for fresh pages every round. Same plans as
/// [`decide`].
#[derive(Debug, Default)]
pub struct Decider {
    scratch: Scratch,
}

impl Decider {
    pub fn new() -> Self {
        Self::default()
    }

    /// Same as [`decide`].
    pub fn decide(&mut self, view: &ClusterView, now_s: f64, cfg: &ShaperConfig) -> Plan {
        decide_with(view, now_s, cfg, &mut self.scratch, Vec::new())
    }

    /// Same as [`decide`], writing the plan over `plan` (whose action
    /// vector is reused).
    pub fn decide_into(
        &mut self,
        view: &ClusterView,
        now_s: f64,
        cfg: &ShaperConfig,
        plan: &mut Plan,
    ) {
        let actions = std::mem::take(&mut plan.actions);
        *plan = decide_with(view, now_s, cfg, &mut self.scratch, actions);
    }
}

fn decide_with(
    view: &ClusterView,
    now_s: f64,
    cfg: &ShaperConfig,
    scratch: &mut Scratch,
    mut actions: Vec<Action>,
) -> Plan {
    let apps = &view.apps;
    let hosts = HostIndex::new(&view.hosts);
    let n_comp: usize = apps.iter().map(|a| a.components.len()).sum();
    let mut summary = PlanSummary {
        hosts: view.hosts.len() as u64,
        apps: apps.len() as u64,
        components: n_comp as u64,
        ..PlanSummary::default()
    };
    let pessimistic = cfg.policy == Policy::Pessimistic;
    let interleaved = cfg.victim_order == VictimOrder::OldestFirstKeep;
    let order = scheduler_order(apps, cfg.order);

    // 1. One sequential pass over the view (reading it in scheduler order
    //    costs 3-4x more in cache and TLB misses): targets, protection,
    //    hysteresis, the candidate resizes (with their explanations), and the
    //    elastic keep orders. Slots are in view order; the planning visits
    //    them application by application (a few cache lines each).
    let mut pos_of_app: Vec<u32> = Vec::new();
    if pessimistic && !interleaved {
        pos_of_app = vec![0; apps.len()];
        for (pos, &ai) in order.iter().enumerate() {
            pos_of_app[ai as usize] = pos as u32;
        }
    }
    let Scratch {
        app_info,
        slots,
        shrink_slots,
        growths,
        growth_slots,
        app_elastic,
        global_elastic,
    } = scratch;
    // Per application (view index): its slots and elastic keep order.
    app_info.clear();
    app_info.reserve(apps.len());
    let mut any_protected = false;
    slots.clear();
    slots.reserve(n_comp);
    // Reserved for the worst case up front (untouched capacity costs no
    // memory): no reallocation copies of large action vectors. The shrinks
    // vector becomes the plan.
    actions.clear();
    actions.reserve(n_comp);
    let mut shrinks = actions;
    shrink_slots.clear();
    shrink_slots.reserve(n_comp);
    growths.clear();
    growths.reserve(n_comp);
    growth_slots.clear();
    growth_slots.reserve(n_comp);
    app_elastic.clear();
    global_elastic.clear();
    let initial = if pessimistic {
        State::Pending
    } else {
        State::Kept
    };
    for (ai, app) in apps.iter().enumerate() {
        let base = slots.len() as u32;
        let mut has_protected = false;
        app_elastic.clear();
        for (j, c) in app.components.iter().enumerate() {
            let g = base + j as u32;
            let host = hosts.get(c.host.0);
            let core = c.class == Class::Core;
            if host == UNKNOWN {
                summary.unknown_host_components += 1;
                slots.push(Slot {
                    host,
                    victim: NO_VICTIM,
                    next: NO_NEXT,
                    state: State::Unplaced,
                    core,
                    protected: c.protected,
                    changed: false,
                    eff: c.allocation,
                });
                continue;
            }
            has_protected |= c.protected;
            let t = component_target(app, c, now_s, cfg);
            let (eff, changed, skipped) = settle(t.alloc, c, cfg);
            summary.skipped_by_hysteresis += u64::from(skipped);
            slots.push(Slot {
                host,
                victim: NO_VICTIM,
                next: NO_NEXT,
                state: initial,
                core,
                protected: c.protected,
                changed,
                eff,
            });
            if changed {
                let reason = if c.protected {
                    Reason::Protected
                } else {
                    Reason::Shaped
                };
                let action = Action::Resize {
                    app: app.id,
                    component: c.id,
                    host: c.host,
                    from: c.allocation,
                    to: eff,
                    explanation: Explanation {
                        reason,
                        basis: t.basis,
                        cpu: t.cpu,
                        mem: t.mem,
                        binding: None,
                    },
                };
                if eff.fits_in(&c.allocation) {
                    shrinks.push(action);
                    shrink_slots.push(g);
                } else {
                    growths.push(action);
                    growth_slots.push(g);
                }
            }
            if pessimistic && !core && !c.protected {
                if interleaved {
                    app_elastic.push((fkey(c.started_s), c.id.0, g));
                } else {
                    let k0 = match cfg.victim_order {
                        VictimOrder::LowestPriorityFirst => prio_desc(app.priority),
                        _ => fkey(-if c.work_done_s.is_finite() {
                            c.work_done_s
                        } else {
                            0.0
                        }),
                    };
                    let pos = u64::from(pos_of_app[ai]);
                    global_elastic.push((k0, pos, fkey(c.started_s), c.id.0, g));
                }
            }
        }
        any_protected |= has_protected;
        // Thread the elastic keep order (oldest first) through the slots.
        app_elastic.sort_unstable();
        let mut elastic_head = NO_NEXT;
        for &(_, _, g) in app_elastic.iter().rev() {
            slots[g as usize].next = elastic_head;
            elastic_head = g;
        }
        app_info.push(AppInfo {
            start: base,
            end: slots.len() as u32,
            elastic_head,
            pinned: has_protected,
        });
    }
    if summary.unknown_host_components > 0 {
        tracing::warn!(
            components = summary.unknown_host_components,
            "components on hosts missing from the view: left alone"
        );
    }

    // 2. Pessimistic planning over the slots.
    let mut victims: Vec<Victim> = Vec::new();
    if pessimistic {
        global_elastic.sort_unstable();
        let global = if interleaved {
            None
        } else {
            Some(&global_elastic[..])
        };
        victims = plan_pessimistic(view, &order, app_info, any_protected, global, slots);
        summary.deferred_components = apply_eviction_cap(apps, app_info, slots, &mut victims, cfg);
    }

    // 3. Emit: shrinks, application evictions, component evictions, growths.
    //    The shrinks vector becomes the plan (compacted in place) so that
    //    the bulk of the actions is never copied.
    let component_of = |ai: u32, g: u32| -> (&Application, &Component) {
        let app = &apps[ai as usize];
        (
            app,
            &app.components[(g - app_info[ai as usize].start) as usize],
        )
    };
    let mut evictions: Vec<Action> = Vec::new();
    for v in victims.iter().filter(|v| !v.deferred && v.whole_app) {
        let (app, culprit) = component_of(v.app, v.slot);
        let t = component_target(app, culprit, now_s, cfg);
        summary.evicted_apps += 1;
        summary.evicted_components += app.components.len() as u64;
        evictions.push(Action::EvictApplication {
            app: app.id,
            components: app.components.iter().map(|c| c.id).collect(),
            explanation: Explanation {
                reason: Reason::CoreDidNotFit {
                    component: culprit.id,
                },
                basis: t.basis,
                cpu: t.cpu,
                mem: t.mem,
                binding: Some(Box::new(v.binding)),
            },
        });
    }
    for v in victims.iter().filter(|v| !v.deferred && !v.whole_app) {
        let (app, c) = component_of(v.app, v.slot);
        let t = component_target(app, c, now_s, cfg);
        summary.evicted_components += 1;
        evictions.push(Action::EvictComponent {
            app: app.id,
            component: c.id,
            host: c.host,
            explanation: Explanation {
                reason: Reason::ElasticDidNotFit {
                    victim_order: cfg.victim_order,
                },
                basis: t.basis,
                cpu: t.cpu,
                mem: t.mem,
                binding: Some(Box::new(v.binding)),
            },
        });
    }
    // Deferred victims only ever shrink: they go with the shrinks.
    let fix_deferred = |g: u32, a: &mut Action| -> bool {
        let s = &slots[g as usize];
        if let Action::Resize {
            to, explanation, ..
        } = a
        {
            *to = s.eff;
            explanation.reason = Reason::EvictionDeferred;
            explanation.binding = victims.get(s.victim as usize).map(|v| Box::new(v.binding));
        }
        s.changed
    };
    let mut actions = shrinks;
    let mut i = 0usize;
    actions.retain_mut(|a| {
        let g = shrink_slots[i];
        i += 1;
        match slots[g as usize].state {
            State::Kept | State::Forced => true,
            State::Deferred => fix_deferred(g, a),
            _ => false,
        }
    });
    if summary.deferred_components > 0 {
        for (a, &g) in growths.iter_mut().zip(growth_slots.iter()) {
            if slots[g as usize].state == State::Deferred && fix_deferred(g, a) {
                actions.push(a.clone());
            }
        }
    }
    // Evictions after the shrinks (both only free room, so this order is as
    // safe as the other one and spares moving every shrink once more).
    let n_evictions = evictions.len();
    actions.extend(evictions);
    actions.extend(
        growths
            .drain(..)
            .zip(growth_slots.drain(..))
            .filter(|(_, g)| matches!(slots[*g as usize].state, State::Kept | State::Forced))
            .map(|(a, _)| a),
    );
    summary.resized = (actions.len() - n_evictions) as u64;
    tracing::debug!(
        policy = cfg.policy.as_str(),
        resized = summary.resized,
        evicted_apps = summary.evicted_apps,
        evicted_components = summary.evicted_components,
        deferred = summary.deferred_components,
        "shaping round planned"
    );
    Plan {
        policy: cfg.policy,
        now_s,
        actions,
        summary,
    }
}

/// Cluster-wide elastic keep-order key: (victim-order key, scheduler
/// position, start time, component id, slot).
type GlobalKey = (u64, u64, u64, u64, u32);

/// Per application: everything the planning needs in one cache line.
#[derive(Clone, Copy, Debug)]
struct AppInfo {
    /// Its slots are `start..end`.
    start: u32,
    end: u32,
    /// First elastic slot in keep order (oldest first), linked by
    /// `Slot::next`; `NO_NEXT` when none (or not pessimistic).
    elastic_head: u32,
    /// Has a protected component: its core components are forced.
    pinned: bool,
}

/// Thesis Algorithm 3 over the slots; returns the victims in decision order.
fn plan_pessimistic(
    view: &ClusterView,
    order: &[u32],
    app_info: &[AppInfo],
    any_pinned: bool,
    // Cluster-wide elastic keep order (slot last) for the victim orders
    // other than the thesis's; `None` for the thesis's per-app order.
    global: Option<&[GlobalKey]>,
    slots: &mut [Slot],
) -> Vec<Victim> {
    let mut free: Vec<Resources> = view
        .hosts
        .iter()
        .map(|h| Resources::new(sane(h.capacity.cpu_cores), sane(h.capacity.mem_bytes)))
        .collect();
    let tol: Vec<Resources> = free
        .iter()
        .map(|c| Resources::new(c.cpu_cores * FIT_TOLERANCE, c.mem_bytes * FIT_TOLERANCE))
        .collect();
    let range = |ai: u32| {
        let a = &app_info[ai as usize];
        a.start as usize..a.end as usize
    };

    // Forced allocations first: protected components, and the core
    // components of applications that have a protected component (evicting
    // such an application would kill its protected component). Taken in
    // scheduler order so that the float sums do not depend on the view's
    // order.
    for &ai in order.iter().filter(|_| any_pinned) {
        let protected_app = app_info[ai as usize].pinned;
        for s in &mut slots[range(ai)] {
            if s.state == State::Pending && (s.protected || (protected_app && s.core)) {
                let f = &mut free[s.host as usize];
                *f = f.sub(&s.eff);
                s.state = State::Forced;
            }
        }
    }

    let mut victims: Vec<Victim> = Vec::new();
    let mut undo: Vec<(u32, Resources)> = Vec::new();
    for (pos, &ai) in order.iter().enumerate() {
        // Touch the data of the applications a few places ahead so that
        // their cache misses overlap with this one's work (a plain load;
        // `black_box` keeps it).
        if let Some(&ahead) = order.get(pos + 8) {
            std::hint::black_box(app_info[ahead as usize].start);
        }
        if let Some(&ahead) = order.get(pos + 4) {
            let a = app_info[ahead as usize];
            if a.start < a.end {
                std::hint::black_box(slots[a.start as usize].host);
                std::hint::black_box(slots[(a.end - 1) as usize].host);
            }
        }
        let r = range(ai);
        // Core components: all or nothing across every host.
        undo.clear();
        let mut failed: Option<(usize, Binding)> = None;
        for g in r.clone() {
            let s = &slots[g];
            if !s.core || s.state != State::Pending {
                continue;
            }
            let h = s.host as usize;
            if let Some(res) = fits(&free[h], &s.eff, &tol[h]) {
                let host = view.hosts[h].id;
                failed = Some((
                    g,
                    Binding {
                        host,
                        resource: res,
                        needed: s.eff.get(res),
                        free: free[h].get(res),
                    },
                ));
                break;
            }
            undo.push((h as u32, free[h]));
            free[h] = free[h].sub(&s.eff);
        }
        if let Some((culprit, binding)) = failed {
            for &(h, before) in undo.iter().rev() {
                free[h as usize] = before;
            }
            let vi = victims.len() as u32;
            victims.push(Victim {
                app: ai,
                slot: culprit as u32,
                whole_app: true,
                deferred: false,
                binding,
            });
            for s in &mut slots[r] {
                if s.state == State::Pending {
                    s.state = State::AppEvicted;
                    s.victim = vi;
                }
            }
            continue;
        }
        for s in &mut slots[r] {
            if s.core && s.state == State::Pending {
                s.state = State::Kept;
            }
        }
        if global.is_none() {
            // Elastic components, oldest first (thesis line 25).
            let mut g = app_info[ai as usize].elastic_head;
            while g != NO_NEXT {
                keep_or_evict(ai, g, slots, &mut free, &tol, &mut victims, view);
                g = slots[g as usize].next;
            }
        }
    }

    if let Some(global) = global {
        // Every application's core components are placed; now the elastic
        // components cluster-wide in keep order.
        for &(_, pos, _, _, g) in global {
            if slots[g as usize].state == State::Pending {
                keep_or_evict(
                    order[pos as usize],
                    g,
                    slots,
                    &mut free,
                    &tol,
                    &mut victims,
                    view,
                );
            }
        }
    }
    victims
}

fn keep_or_evict(
    ai: u32,
    g: u32,
    slots: &mut [Slot],
    free: &mut [Resources],
    tol: &[Resources],
    victims: &mut Vec<Victim>,
    view: &ClusterView,
) {
    let s = &mut slots[g as usize];
    let h = s.host as usize;
    match fits(&free[h], &s.eff, &tol[h]) {
        None => {
            free[h] = free[h].sub(&s.eff);
            s.state = State::Kept;
        }
        Some(r) => {
            s.state = State::Victim;
            s.victim = victims.len() as u32;
            victims.push(Victim {
                app: ai,
                slot: g,
                whole_app: false,
                deferred: false,
                binding: Binding {
                    host: view.hosts[h].id,
                    resource: r,
                    needed: s.eff.get(r),
                    free: free[h].get(r),
                },
            });
        }
    }
}

/// `max_evictions_per_round`: when the victims would exceed the cap (counted
/// in components, every component of an evicted application included), the
/// latest decisions (least important by the scheduler and victim orders) are
/// evicted first while the budget lasts; a victim that does not fit in what
/// remains of the budget is deferred: it keeps its current allocation (shrunk
/// to its target when that is smaller, never grown). Returns the number of
/// deferred components.
fn apply_eviction_cap(
    apps: &[Application],
    app_info: &[AppInfo],
    slots: &mut [Slot],
    victims: &mut [Victim],
    cfg: &ShaperConfig,
) -> u64 {
    let Some(cap) = cfg.max_evictions_per_round else {
        return 0;
    };
    let cost = |v: &Victim| {
        if v.whole_app {
            apps[v.app as usize].components.len() as u64
        } else {
            1
        }
    };
    let total: u64 = victims.iter().map(cost).sum();
    if total <= u64::from(cap) {
        return 0;
    }
    let mut budget = u64::from(cap);
    for v in victims.iter_mut().rev() {
        let c = cost(v);
        if c <= budget {
            budget -= c;
        } else {
            v.deferred = true;
        }
    }
    let mut deferred = 0u64;
    for (vi, v) in victims.iter().enumerate() {
        if !v.deferred {
            continue;
        }
        deferred += cost(v);
        let app = &apps[v.app as usize];
        let first = app_info[v.app as usize].start as usize;
        for (j, c) in app.components.iter().enumerate() {
            let s = &mut slots[first + j];
            let mine =
                s.victim == vi as u32 && matches!(s.state, State::AppEvicted | State::Victim);
            if !mine {
                continue;
            }
            let cur = c.allocation;
            // s.eff is the planned allocation after hysteresis; never grow.
            let capped = Resources::from_fn(|r| {
                let x = cur.get(r);
                if x.is_finite() && x >= 0.0 {
                    x.min(s.eff.get(r))
                } else {
                    s.eff.get(r)
                }
            });
            let (eff, changed, _) = settle(capped, c, cfg);
            s.eff = eff;
            s.changed = changed;
            s.state = State::Deferred;
        }
    }
    tracing::warn!(
        cap,
        would_evict = total,
        deferred,
        "max_evictions_per_round reached: victims deferred"
    );
    deferred
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AppId, ComponentId, Forecasts, HostId};

    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

    fn comp(
        id: u64,
        class: Class,
        host: u64,
        started_s: f64,
        req: (f64, f64),
        fc: (f64, f64),
    ) -> Component {
        let request = Resources::new(req.0, req.1);
        Component {
            id: ComponentId(id),
            class,
            host: HostId(host),
            request,
            started_s,
            allocation: request,
            usage: Resources::new(fc.0 * 0.9, fc.1 * 0.9),
            forecast: Some(Forecasts {
                cpu: Predictive::point(fc.0),
                mem: Predictive::point(fc.1),
            }),
            protected: false,
            work_done_s: 0.0,
        }
    }

    fn app(id: u64, submitted_s: f64, components: Vec<Component>) -> Application {
        Application {
            id: AppId(id),
            submitted_s,
            priority: 0,
            failures: 0,
            expected_remaining_s: None,
            components,
        }
    }

    fn host(id: u64, cpu: f64, mem: f64) -> Host {
        Host {
            id: HostId(id),
            capacity: Resources::new(cpu, mem),
        }
    }

    /// Defaults without floors (these tests use small byte counts).
    fn unfloored() -> ShaperConfig {
        ShaperConfig {
            min_cpu_cores: 0.0,
            min_mem_bytes: 0.0,
            ..ShaperConfig::default()
        }
    }

    fn cfg0() -> ShaperConfig {
        ShaperConfig {
            k1: 0.0,
            k2: 0.0,
            min_relative_change: 0.0,
            ..unfloored()
        }
    }

    /// The thesis's situation: a full host, the first application's core
    /// component spikes, something must go: the youngest elastic component
    /// of the last application goes, no core component is killed.
    #[test]
    fn spike_evicts_youngest_elastic_of_last_app() {
        let view = ClusterView {
            hosts: vec![host(0, 8.0, 16.0 * GIB)],
            apps: vec![
                app(
                    1,
                    0.0,
                    vec![comp(
                        10,
                        Class::Core,
                        0,
                        0.0,
                        (4.0, 8.0 * GIB),
                        (2.0, 7.0 * GIB),
                    )],
                ),
                app(
                    2,
                    100.0,
                    vec![
                        comp(
                            20,
                            Class::Core,
                            0,
                            100.0,
                            (2.0, 4.0 * GIB),
                            (1.0, 3.0 * GIB),
                        ),
                        comp(
                            21,
                            Class::Elastic,
                            0,
                            100.0,
                            (2.0, 4.0 * GIB),
                            (1.0, 3.0 * GIB),
                        ),
                        comp(
                            22,
                            Class::Elastic,
                            0,
                            200.0,
                            (2.0, 4.0 * GIB),
                            (1.0, 3.0 * GIB),
                        ),
                    ],
                ),
            ],
        };
        // Calm: 7 + 3 + 3 + 3 = 16 GiB fits exactly: nothing evicted.
        let plan = decide(&view, 10_000.0, &cfg0());
        assert_eq!(plan.evictions().count(), 0, "{:#?}", plan.actions);
        // Spike: app 1's core now forecasts 8 GiB -> 17 GiB needed.
        let mut spiked = view.clone();
        spiked.apps[0].components[0].forecast = Some(Forecasts {
            cpu: Predictive::point(2.0),
            mem: Predictive::point(8.0 * GIB),
        });
        let plan = decide(&spiked, 10_000.0, &cfg0());
        let ev: Vec<&Action> = plan.evictions().collect();
        assert_eq!(ev.len(), 1, "{:#?}", plan.actions);
        match ev[0] {
            Action::EvictComponent {
                app,
                component,
                host,
                explanation,
            } => {
                assert_eq!(*app, AppId(2));
                assert_eq!(*component, ComponentId(22), "youngest elastic goes");
                assert_eq!(*host, HostId(0));
                let b = explanation.binding.as_deref().copied().expect("binding");
                assert_eq!(b.resource, Resource::Mem);
                assert!((b.needed - 3.0 * GIB).abs() < 1.0);
                assert!((b.free - 2.0 * GIB).abs() < 1.0);
                assert!(matches!(
                    explanation.reason,
                    Reason::ElasticDidNotFit { .. }
                ));
                let text = explanation.to_string();
                assert!(text.contains("on host 0 mem"), "{text}");
            }
            other => panic!("expected a component eviction, got {other:?}"),
        }
        // The spiking core is grown, the others keep running.
        assert!(plan
            .resizes()
            .any(|a| matches!(a, Action::Resize { component, to, .. }
            if *component == ComponentId(10) && (to.mem_bytes - 8.0 * GIB).abs() < 1.0)));
    }

    #[test]
    fn core_that_does_not_fit_evicts_whole_app_across_hosts() {
        let view = ClusterView {
            hosts: vec![host(0, 4.0, 100.0), host(1, 4.0, 100.0)],
            apps: vec![
                app(
                    1,
                    0.0,
                    vec![comp(10, Class::Core, 1, 0.0, (4.0, 100.0), (3.0, 80.0))],
                ),
                app(
                    2,
                    1.0,
                    vec![
                        comp(20, Class::Core, 0, 0.0, (2.0, 50.0), (1.0, 10.0)),
                        comp(21, Class::Core, 1, 0.0, (2.0, 50.0), (1.0, 30.0)),
                        comp(22, Class::Elastic, 0, 0.0, (2.0, 50.0), (1.0, 10.0)),
                    ],
                ),
            ],
        };
        let plan = decide(&view, 10_000.0, &cfg0());
        let ev: Vec<&Action> = plan.evictions().collect();
        assert_eq!(ev.len(), 1, "{:#?}", plan.actions);
        match ev[0] {
            Action::EvictApplication {
                app,
                components,
                explanation,
            } => {
                assert_eq!(*app, AppId(2));
                assert_eq!(
                    components,
                    &vec![ComponentId(20), ComponentId(21), ComponentId(22)]
                );
                assert_eq!(
                    explanation.reason,
                    Reason::CoreDidNotFit {
                        component: ComponentId(21)
                    }
                );
                let b = explanation.binding.as_deref().copied().expect("binding");
                assert_eq!((b.host, b.resource), (HostId(1), Resource::Mem));
            }
            other => panic!("expected an application eviction, got {other:?}"),
        }
        // No resize for evicted components.
        assert!(plan.resizes().all(|a| a.app() == AppId(1)));
    }

    #[test]
    fn buffer_terms_and_clamps() {
        let mut c = comp(1, Class::Core, 0, 0.0, (4.0, 1000.0), (1.0, 400.0));
        c.forecast = Some(Forecasts {
            cpu: Predictive::gaussian(1.0, 0.1),
            mem: Predictive::gaussian(400.0, 50.0),
        });
        c.usage = Resources::new(0.5, 300.0);
        let a = app(1, 0.0, vec![c.clone()]);
        let cfg = ShaperConfig {
            k1: 0.05,
            k2: 3.0,
            ..unfloored()
        };
        let t = component_target(&a, &c, 10_000.0, &cfg);
        assert_eq!(t.basis, Basis::Forecast);
        assert!((t.cpu.k1_term - 0.2).abs() < 1e-12);
        assert!((t.cpu.k2_term - 0.3).abs() < 1e-12);
        assert!((t.alloc.cpu_cores - 1.5).abs() < 1e-12);
        assert!((t.alloc.mem_bytes - (400.0 + 50.0 + 150.0)).abs() < 1e-9);
        assert_eq!(t.cpu.bound, Bound::Buffer);
        // Ceiling: request.
        let mut big = c.clone();
        big.forecast = Some(Forecasts {
            cpu: Predictive::point(9.0),
            mem: Predictive::point(10.0),
        });
        let t = component_target(&a, &big, 10_000.0, &cfg);
        assert_eq!(t.alloc.cpu_cores, 4.0);
        assert_eq!(t.cpu.bound, Bound::Ceiling);
        // Growth allowed above the request.
        let t = component_target(
            &a,
            &big,
            10_000.0,
            &ShaperConfig {
                max_growth: 3.0,
                ..cfg.clone()
            },
        );
        assert!((t.alloc.cpu_cores - 9.2).abs() < 1e-12);
        // Usage floor.
        let mut hot = big.clone();
        hot.usage = Resources::new(0.1, 500.0);
        let t = component_target(&a, &hot, 10_000.0, &cfg);
        assert_eq!(t.alloc.mem_bytes, 500.0);
        assert_eq!(t.mem.bound, Bound::Usage);
        // Grace period, failure limit, no forecast: request.
        let t = component_target(&a, &c, 100.0, &cfg);
        assert_eq!((t.basis, t.alloc), (Basis::GracePeriod, c.request));
        let failing = Application {
            failures: 3,
            ..a.clone()
        };
        let t = component_target(&failing, &c, 10_000.0, &cfg);
        assert_eq!((t.basis, t.alloc), (Basis::FailureLimit, c.request));
        let mut blind = c.clone();
        blind.forecast = None;
        let t = component_target(&a, &blind, 10_000.0, &cfg);
        assert_eq!((t.basis, t.alloc), (Basis::NoForecast, c.request));
    }

    #[test]
    fn hysteresis_skips_small_changes_but_not_needed_growth() {
        let mut c = comp(1, Class::Core, 0, 0.0, (4.0, 1000.0), (2.0, 500.0));
        c.allocation = Resources::new(2.05, 510.0);
        c.usage = Resources::new(1.0, 400.0);
        let view = ClusterView {
            hosts: vec![host(0, 8.0, 4000.0)],
            apps: vec![app(1, 0.0, vec![c.clone()])],
        };
        let cfg = ShaperConfig {
            k1: 0.0,
            k2: 0.0,
            min_relative_change: 0.05,
            ..unfloored()
        };
        let plan = decide(&view, 10_000.0, &cfg);
        assert_eq!(plan.actions.len(), 0);
        assert_eq!(plan.summary.skipped_by_hysteresis, 1);
        // Usage above the current allocation: the growth is applied.
        let mut view2 = view.clone();
        view2.apps[0].components[0].allocation = Resources::new(2.05, 490.0);
        view2.apps[0].components[0].usage = Resources::new(1.0, 495.0);
        let plan = decide(&view2, 10_000.0, &cfg);
        assert_eq!(plan.resizes().count(), 1, "{:#?}", plan.actions);
        // A small memory growth towards the forecast (usage still below the
        // allocation) is applied too: memory growths are never held back.
        let mut view3 = view.clone();
        view3.apps[0].components[0].allocation = Resources::new(2.05, 495.0);
        view3.apps[0].components[0].usage = Resources::new(1.0, 400.0);
        let plan = decide(&view3, 10_000.0, &cfg);
        assert_eq!(plan.resizes().count(), 1, "{:#?}", plan.actions);
        assert_eq!(plan.summary.skipped_by_hysteresis, 0);
    }

    #[test]
    fn protected_is_never_shrunk_nor_evicted() {
        let mut p = comp(1, Class::Elastic, 0, 0.0, (4.0, 100.0), (1.0, 10.0));
        p.protected = true;
        let view = ClusterView {
            hosts: vec![host(0, 4.0, 100.0)],
            apps: vec![
                app(
                    1,
                    0.0,
                    vec![comp(10, Class::Core, 0, 0.0, (4.0, 100.0), (3.5, 95.0))],
                ),
                app(2, 1.0, vec![p]),
            ],
        };
        let plan = decide(&view, 10_000.0, &cfg0());
        // The protected one (4 cores) is forced; app 1 no longer fits.
        assert!(
            plan.actions.iter().all(|a| a.app() != AppId(2)),
            "{:#?}",
            plan.actions
        );
        assert!(
            matches!(plan.evictions().next(), Some(Action::EvictApplication { app, .. }) if *app == AppId(1))
        );
    }

    #[test]
    fn optimistic_and_baseline_never_evict() {
        let view = ClusterView {
            hosts: vec![host(0, 1.0, 10.0)],
            apps: vec![
                app(
                    1,
                    0.0,
                    vec![comp(10, Class::Core, 0, 0.0, (4.0, 100.0), (3.0, 90.0))],
                ),
                app(
                    2,
                    1.0,
                    vec![comp(20, Class::Core, 0, 0.0, (4.0, 100.0), (3.0, 90.0))],
                ),
            ],
        };
        for policy in [Policy::Optimistic, Policy::Baseline] {
            let plan = decide(&view, 10_000.0, &ShaperConfig { policy, ..cfg0() });
            assert_eq!(plan.evictions().count(), 0, "{policy}");
        }
        let plan = decide(
            &view,
            10_000.0,
            &ShaperConfig {
                policy: Policy::Optimistic,
                ..cfg0()
            },
        );
        assert_eq!(plan.resizes().count(), 2);
        let mut shrunk = view.clone();
        shrunk.apps[0].components[0].allocation = Resources::new(1.0, 1.0);
        let plan = decide(
            &shrunk,
            10_000.0,
            &ShaperConfig {
                policy: Policy::Baseline,
                ..cfg0()
            },
        );
        assert_eq!(plan.resizes().count(), 1);
        assert!(
            matches!(plan.resizes().next(), Some(Action::Resize { to, .. }) if *to == Resources::new(4.0, 100.0))
        );
    }

    #[test]
    fn unknown_host_is_left_alone_and_sparse_ids_work() {
        let view = ClusterView {
            hosts: vec![host(700, 8.0, 100.0), host(5, 8.0, 100.0)],
            apps: vec![app(
                1,
                0.0,
                vec![
                    comp(10, Class::Core, 5, 0.0, (4.0, 100.0), (1.0, 10.0)),
                    comp(11, Class::Core, 700, 0.0, (4.0, 100.0), (1.0, 10.0)),
                    comp(12, Class::Core, 6, 0.0, (4.0, 100.0), (1.0, 10.0)),
                ],
            )],
        };
        let plan = decide(&view, 10_000.0, &cfg0());
        assert_eq!(plan.summary.unknown_host_components, 1);
        assert_eq!(plan.resizes().count(), 2);
        assert_eq!(plan.evictions().count(), 0);
    }

    #[test]
    fn host_with_invalid_capacity_is_left_alone() {
        let mut view = ClusterView {
            hosts: vec![host(0, 4.0, 100.0), host(1, f64::NAN, 100.0)],
            apps: vec![app(
                1,
                0.0,
                vec![
                    comp(10, Class::Core, 1, 0.0, (4.0, 100.0), (3.0, 80.0)),
                    comp(11, Class::Elastic, 0, 0.0, (4.0, 100.0), (3.0, 80.0)),
                ],
            )],
        };
        let plan = decide(&view, 10_000.0, &cfg0());
        assert_eq!(plan.summary.unknown_host_components, 1);
        assert_eq!(plan.evictions().count(), 0, "{:#?}", plan.actions);
        assert!(plan
            .actions
            .iter()
            .all(|a| !matches!(a, Action::Resize { component, .. } if component.0 == 10)));
        view.hosts[1].capacity.cpu_cores = -1.0;
        let plan = decide(&view, 10_000.0, &cfg0());
        assert_eq!(plan.summary.unknown_host_components, 1);
    }

    #[test]
    fn plan_round_trips_through_json() {
        let view = ClusterView {
            hosts: vec![host(0, 4.0, 100.0)],
            apps: vec![
                app(
                    1,
                    0.0,
                    vec![comp(10, Class::Core, 0, 0.0, (4.0, 100.0), (3.0, 80.0))],
                ),
                app(
                    2,
                    1.0,
                    vec![comp(20, Class::Core, 0, 0.0, (4.0, 100.0), (3.0, 80.0))],
                ),
            ],
        };
        let plan = decide(&view, 10_000.0, &cfg0());
        assert_eq!(plan.actions.len(), 2);
        let json = serde_json::to_string(&plan).expect("serialises");
        assert!(json.contains("\"action\":\"evict_application\""), "{json}");
        let back: Plan = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, plan);
    }
}

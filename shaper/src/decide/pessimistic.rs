//! Pessimistic planning (thesis Algorithm 3) and the eviction cap.

use super::squeeze::{give_buffers, mem_need, merge_squeezed, Squeeze, Squeezed};
use super::*;
use crate::AppSize;

/// Cluster-wide elastic keep-order key: (victim-order key, scheduler
/// position, start time, component id, slot).
pub(super) type GlobalKey = (u64, u64, u64, u64, u32);

/// Per application: everything the planning needs in one cache line.
#[derive(Clone, Copy, Debug)]
pub(super) struct AppInfo {
    /// Its slots are `start..end`.
    pub(super) start: u32,
    pub(super) end: u32,
    /// First elastic slot in keep order (oldest first), linked by
    /// `Slot::next`; `NO_NEXT` when none (or not pessimistic).
    pub(super) elastic_head: u32,
    /// Has a protected component: its core components are forced.
    pub(super) pinned: bool,
    /// Its components' constant buffer terms and smallness, by class.
    pub(super) rules: AppRules,
}

/// A component's constant buffer term and whether the size rules count it
/// as small, the same for every component of one class in an application.
#[derive(Clone, Copy, Debug)]
pub(super) struct ClassRules {
    pub(super) k1: f64,
    pub(super) small: bool,
}

/// The [`ClassRules`] of an application's elastic and core components.
#[derive(Clone, Copy, Debug)]
pub(super) struct AppRules {
    elastic: ClassRules,
    core: ClassRules,
}

impl AppRules {
    /// The rules of an application of size `size` whose K1 is `app_k1`
    /// ([`ShaperConfig::k1_for`]): [`ShaperConfig::k1_for_class`] and
    /// [`ShaperConfig::is_small`] for each class.
    pub(super) fn new(cfg: &ShaperConfig, size: AppSize, app_k1: f64) -> Self {
        let rules = |class| ClassRules {
            k1: cfg.k1_for_class(size, app_k1, class),
            small: cfg.is_small(size, class),
        };
        Self {
            elastic: rules(Class::Elastic),
            core: rules(Class::Core),
        }
    }

    /// The rules of a component of class `class`.
    pub(super) fn of(&self, class: Class) -> ClassRules {
        match class {
            Class::Core => self.core,
            Class::Elastic => self.elastic,
        }
    }
}

/// Touches the data of the applications a few places after `pos` in
/// `order`, so that their cache misses overlap with the work on `pos` (a
/// plain load; `black_box` keeps it): walks in scheduler order read the
/// slots out of memory order.
#[inline(always)]
fn touch_ahead(order: &[u32], pos: usize, app_info: &[AppInfo], slots: &[Slot]) {
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
}

/// Thesis Algorithm 3 over the slots; returns the victims in decision order.
pub(super) fn plan_pessimistic(
    view: &ClusterView,
    order: &[u32],
    app_info: &[AppInfo],
    // Cluster-wide elastic keep order (slot last) for the victim orders
    // other than the thesis's; `None` for the thesis's per-app order.
    global: Option<&[GlobalKey]>,
    slots: &mut [Slot],
    cfg: &ShaperConfig,
    squeezed: &mut Vec<Squeezed>,
) -> Vec<Victim> {
    let cpu_shared = cfg.cpu_shortfall == CpuShortfall::Share;
    let mut share = cpu_shared.then(|| Squeeze {
        cfg,
        cpu_floor: align_up(
            Resource::Cpu,
            sane(cfg.min_cpu_cores).max(MIN_SHARE_CPU_CORES),
        ),
        app_info,
        out: squeezed,
    });
    let mut free: Vec<Resources> = view
        .hosts
        .iter()
        .map(|h| Resources::new(sane(h.capacity.cpu_cores), sane(h.capacity.mem_bytes)))
        .collect();
    let tol: Vec<Resources> = free
        .iter()
        .map(|c| Resources::new(c.cpu_cores * FIT_TOLERANCE, c.mem_bytes * FIT_TOLERANCE))
        .collect();
    // `mem_shortfall = buffer`: every component's memory need, placed in
    // the first pass; buffers are given out in a second. The need is
    // rounded up to whole steps (MiB) here, so that it is what the first pass
    // finds room for, and a cut limit (need + a share rounded down) is
    // whole steps that fit.
    let need: Option<Vec<f64>> = (cfg.mem_shortfall == MemShortfall::Buffer).then(|| {
        let mut n = vec![0.0; slots.len()];
        for (ai, a) in app_info.iter().enumerate() {
            let app = &view.apps[ai];
            // An application over the failure limit keeps its requests:
            // all of its target is need, none of it a buffer to cut.
            let unshaped = app.failures >= cfg.failure_limit;
            for (j, g) in (a.start as usize..a.end as usize).enumerate() {
                n[g] = if unshaped {
                    f64::INFINITY
                } else {
                    align_up(Resource::Mem, mem_need(&app.components[j], cfg))
                };
            }
        }
        n
    });
    let range = |ai: u32| {
        let a = &app_info[ai as usize];
        a.start as usize..a.end as usize
    };

    // Forced allocations first: protected components, and the core
    // components of applications that have a protected component (evicting
    // such an application would kill its protected component). Taken in
    // scheduler order so that the float sums do not depend on the view's
    // order.
    let any_pinned = app_info.iter().any(|a| a.pinned);
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
        touch_ahead(order, pos, app_info, slots);
        let r = range(ai);
        // Core components: all or nothing across every host.
        undo.clear();
        let mut failed: Option<(usize, Binding)> = None;
        for g in r.clone() {
            if !slots[g].core || slots[g].state != State::Pending {
                continue;
            }
            let h = slots[g].host as usize;
            if let Some(q) = share.as_mut() {
                q.apply(view, ai, g, &free[h], slots);
            }
            let d = demand(&slots[g], g, need.as_deref());
            if let Some(res) = fits(&free[h], &d, &tol[h], cpu_shared) {
                let host = view.hosts[h].id;
                failed = Some((
                    g,
                    Binding {
                        host,
                        resource: res,
                        needed: d.get(res),
                        free: free[h].get(res),
                    },
                ));
                break;
            }
            undo.push((h as u32, free[h]));
            free[h] = free[h].sub(&d);
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
                if matches!(s.state, State::Pending | State::Squeezed) {
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
                keep_or_evict(
                    ai,
                    g,
                    slots,
                    &mut free,
                    &tol,
                    &mut victims,
                    view,
                    &mut share,
                    need.as_deref(),
                );
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
                    &mut share,
                    need.as_deref(),
                );
            }
        }
    }
    if let Some(need) = &need {
        give_buffers(view, app_info, need, slots, &free, cfg, squeezed);
    }
    merge_squeezed(squeezed);
    victims
}

/// Keeps elastic slot `g` if it fits on its host (`share`: after squeezing
/// its CPU), else makes it a victim.
#[allow(clippy::too_many_arguments)]
pub(super) fn keep_or_evict(
    ai: u32,
    g: u32,
    slots: &mut [Slot],
    free: &mut [Resources],
    tol: &[Resources],
    victims: &mut Vec<Victim>,
    view: &ClusterView,
    share: &mut Option<Squeeze<'_>>,
    need: Option<&[f64]>,
) {
    let h = slots[g as usize].host as usize;
    if let Some(q) = share.as_mut() {
        q.apply(view, ai, g as usize, &free[h], slots);
    }
    let s = &mut slots[g as usize];
    let d = demand(s, g as usize, need);
    match fits(&free[h], &d, &tol[h], share.is_some()) {
        None => {
            free[h] = free[h].sub(&d);
            if s.state == State::Pending {
                s.state = State::Kept;
            }
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
                    needed: d.get(r),
                    free: free[h].get(r),
                },
            });
        }
    }
}

/// What slot `g` takes of its host in the first pass: its planned
/// allocation, or with `mem_shortfall = buffer` (`need` given) its memory
/// need in place of its memory target (buffers come in the second pass).
fn demand(s: &Slot, g: usize, need: Option<&[f64]>) -> Resources {
    match need {
        Some(n) => Resources::new(s.eff.cpu_cores, n[g].min(s.eff.mem_bytes)),
        None => s.eff,
    }
}

/// `max_evictions_per_round`: when the victims would exceed the cap (counted
/// in components, every component of an evicted application included), the
/// latest decisions (least important by the scheduler and victim orders) are
/// evicted first while the budget lasts; a victim that does not fit in what
/// remains of the budget is deferred: it keeps its current allocation (shrunk
/// to its target when that is smaller, never grown). Returns the number of
/// deferred components.
pub(super) fn apply_eviction_cap(
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

//! `decide()`: one shaping round.
//!
//! Layout for speed: hosts are indexed by position once (dense ids map
//! directly, others through one sorted table and a binary search); every
//! component gets one flat `Slot` (no per-component allocation, no hash
//! maps); sort keys are packed integers.

use crate::config::{CpuShortfall, MemShortfall, Policy, ShaperConfig, VictimOrder};
use crate::limits::{align_down, align_up, bound_target, ceiling, sane, MEM_STEP_BYTES};
use crate::model::{
    Application, Class, ClusterView, Component, Host, Predictive, Resource, Resources,
};
use crate::order::{fkey, prio_desc, scheduler_order};
use crate::plan::{
    Action, Band, BandLevel, Basis, Binding, Bound, Explanation, Plan, PlanSummary, Reason, Sizing,
};

const UNKNOWN: u32 = u32::MAX;
const NO_VICTIM: u32 = u32::MAX;
const NO_NEXT: u32 = u32::MAX;
/// Relative tolerance when checking that a demand fits a host's free room,
/// so that float rounding in long sums never evicts anything.
const FIT_TOLERANCE: f64 = 1e-9;
/// The smallest CPU limit a squeezed component gets (`cpu_shortfall =
/// share`): Docker's smallest `--cpus`.
const MIN_SHARE_CPU_CORES: f64 = 0.01;

mod pessimistic;
mod squeeze;
mod target;
#[cfg(test)]
mod tests;

use pessimistic::{apply_eviction_cap, plan_pessimistic, AppInfo, AppRules, GlobalKey};
use squeeze::Squeezed;
use target::settle;
pub use target::{buffer, component_target, risk_to_level, target_with_k1, Buffer, Target};

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
    /// Kept, with its CPU cut to what was left on its host
    /// (`cpu_shortfall = share`).
    Squeezed,
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
    /// Its loss fails its application: a core component that does not
    /// restart alone. Placed all or nothing with its application's other
    /// such components; every other component (elastic, or restarting
    /// alone: a service's task) is kept or evicted alone, oldest first,
    /// and its buffer is cut before these.
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

/// The resource that does not fit, if any; `share`: CPU always fits (it is
/// squeezed instead).
fn fits(free: &Resources, need: &Resources, tol: &Resources, share: bool) -> Option<Resource> {
    if !share && free.cpu_cores - need.cpu_cores < -tol.cpu_cores {
        Some(Resource::Cpu)
    } else if free.mem_bytes - need.mem_bytes < -tol.mem_bytes {
        Some(Resource::Mem)
    } else {
        None
    }
}

/// The resize of `c` to `to`, explained by its target `t`.
fn resize_action(
    app: &Application,
    c: &Component,
    to: Resources,
    t: &Target,
    binding: Option<Box<Binding>>,
) -> Action {
    Action::Resize {
        app: app.id,
        component: c.id,
        host: c.host,
        from: c.allocation,
        to,
        explanation: Explanation {
            reason: if c.protected {
                Reason::Protected
            } else {
                Reason::Shaped
            },
            basis: t.basis,
            cpu: t.cpu,
            mem: t.mem,
            binding,
        },
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
    squeezed: Vec<Squeezed>,
    squeezed_shrinks: Vec<Action>,
    squeezed_growths: Vec<Action>,
    /// Each application's memory request (view order) and a sorted copy,
    /// when the application-memory rule is on.
    app_mem_bytes: Vec<f64>,
    app_mem_sorted: Vec<f64>,
}

/// [`decide`] for callers that plan round after round (the central shaper,
/// the simulator): it keeps its working buffers between rounds, and
/// [`Decider::decide_into`] also reuses the previous plan's memory, so a
/// large cluster does not pay for fresh pages every round. Same plans as
/// [`decide`].
#[derive(Debug, Default)]
pub struct Decider {
    scratch: Scratch,
    /// An emptied action vector of an earlier plan ([`Decider::recycle`]),
    /// which the next [`Decider::decide`] writes its plan into.
    spare: Vec<Action>,
}

impl Decider {
    pub fn new() -> Self {
        Self::default()
    }

    /// Same as [`decide`] (the plan's action vector is the one last given
    /// to [`Decider::recycle`], if any).
    pub fn decide(&mut self, view: &ClusterView, now_s: f64, cfg: &ShaperConfig) -> Plan {
        let actions = std::mem::take(&mut self.spare);
        decide_with(view, now_s, cfg, &mut self.scratch, actions)
    }

    /// Gives back the action vector of a plan that is no longer needed:
    /// the next [`Decider::decide`] writes over it instead of allocating
    /// (at 1M components, a fresh vector costs the first touch of its
    /// pages, about a tenth of `decide()`'s time). Clearing it before the
    /// call keeps the drops of its actions outside any lock around the
    /// `Decider`. The larger of it and the spare already held is kept.
    pub fn recycle(&mut self, mut actions: Vec<Action>) {
        actions.clear();
        if actions.capacity() > self.spare.capacity() {
            self.spare = actions;
        }
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
        squeezed,
        squeezed_shrinks,
        squeezed_growths,
        app_mem_bytes,
        app_mem_sorted,
    } = scratch;
    // The application-memory rule: each application's memory request and
    // the view's reference, once a round (nothing when the rule is off).
    app_mem_bytes.clear();
    let mut app_mem_ref_gib = 0.0;
    let mut tenant_refs: Vec<(u32, f64)> = Vec::new();
    if cfg.app_mem_rule() {
        app_mem_bytes.extend(apps.iter().map(Application::mem_request_bytes));
        app_mem_ref_gib = app_mem_refs(cfg, apps, app_mem_bytes, app_mem_sorted, &mut tenant_refs);
    }
    // Per application (view index): its slots and elastic keep order.
    app_info.clear();
    app_info.reserve(apps.len());
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
    squeezed.clear();
    let initial = if pessimistic {
        State::Pending
    } else {
        State::Kept
    };
    for (ai, app) in apps.iter().enumerate() {
        let base = slots.len() as u32;
        let mut has_protected = false;
        app_elastic.clear();
        let size = app.size(app_mem_bytes.get(ai).copied().unwrap_or(0.0));
        let ref_gib = tenant_refs
            .binary_search_by_key(&app.tenant, |r| r.0)
            .map_or(app_mem_ref_gib, |i| tenant_refs[i].1);
        let k1 = cfg.k1_for(size, ref_gib);
        let rules = AppRules::new(cfg, size, k1);
        for (j, c) in app.components.iter().enumerate() {
            let g = base + j as u32;
            let host = hosts.get(c.host.0);
            let core = c.class == Class::Core && !c.restarts_alone;
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
            let r = rules.of(c.class);
            let t = target_with_k1(app, c, now_s, cfg, r.k1, r.small);
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
                let action = resize_action(app, c, eff, &t, None);
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
            rules,
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
        victims = plan_pessimistic(view, &order, app_info, global, slots, cfg, squeezed);
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
    let target_of = |ai: u32, app: &Application, c: &Component| {
        let r = app_info[ai as usize].rules.of(c.class);
        target_with_k1(app, c, now_s, cfg, r.k1, r.small)
    };
    let mut evictions: Vec<Action> = Vec::new();
    for v in victims.iter().filter(|v| !v.deferred && v.whole_app) {
        let (app, culprit) = component_of(v.app, v.slot);
        let t = target_of(v.app, app, culprit);
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
        let t = target_of(v.app, app, c);
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
    // Squeezed components: their planned resize is replaced by one to the
    // squeezed allocation (a shrink with the shrinks, a growth at the end).
    // The records are in slot order, as are the planned resizes of the
    // first pass: a merge walk finds a component's planned resize, whose
    // explanation holds its target (no second `component_target`).
    squeezed_shrinks.clear();
    squeezed_growths.clear();
    let (mut si, mut gi) = (0usize, 0usize);
    for q in squeezed.iter() {
        let s = &slots[q.slot as usize];
        if s.state != State::Squeezed || !s.changed {
            continue;
        }
        let (app, c) = component_of(q.app, q.slot);
        while shrink_slots.get(si).is_some_and(|&g| g < q.slot) {
            si += 1;
        }
        while growth_slots.get(gi).is_some_and(|&g| g < q.slot) {
            gi += 1;
        }
        let planned = if shrink_slots.get(si) == Some(&q.slot) {
            Some(&shrinks[si])
        } else if growth_slots.get(gi) == Some(&q.slot) {
            Some(&growths[gi])
        } else {
            None
        };
        let mut t = match planned.map(Action::explanation) {
            Some(e) => Target {
                alloc: Resources::new(e.cpu.target, e.mem.target),
                basis: e.basis,
                cpu: e.cpu,
                mem: e.mem,
            },
            None => target_of(q.app, app, c),
        };
        let mut binding = None;
        // Memory last: when both were cut, it is the binding one (what
        // could have evicted).
        for (resource, cut) in [(Resource::Cpu, q.cpu), (Resource::Mem, q.mem)] {
            let Some((needed, free)) = cut else {
                continue;
            };
            let (count, sizing) = match resource {
                Resource::Cpu => (&mut summary.squeezed_cpu, &mut t.cpu),
                Resource::Mem => (&mut summary.squeezed_mem, &mut t.mem),
            };
            *count += 1;
            sizing.bound = Bound::HostShare;
            binding = Some(Binding {
                host: c.host,
                resource,
                needed,
                free,
            });
        }
        let action = resize_action(app, c, s.eff, &t, binding.map(Box::new));
        if s.eff.fits_in(&c.allocation) {
            squeezed_shrinks.push(action);
        } else {
            squeezed_growths.push(action);
        }
    }
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
    actions.append(squeezed_shrinks);
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
    actions.append(squeezed_growths);
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

/// The application-memory rule's reference ([`ShaperConfig::app_mem_ref_in`])
/// of the view's applications, whose memory requests are `app_mem_bytes`:
/// returned when they all belong to one tenant (a node, the simulator, a
/// one-tenant cluster); with several, one reference per tenant over its own
/// applications, as `(tenant, reference)` sorted by tenant in `per_tenant`
/// (QA C2: one tenant's 2 TiB application raised every other tenant's
/// buffers to their requests).
fn app_mem_refs(
    cfg: &ShaperConfig,
    apps: &[Application],
    app_mem_bytes: &[f64],
    sorted: &mut Vec<f64>,
    per_tenant: &mut Vec<(u32, f64)>,
) -> f64 {
    per_tenant.clear();
    let first = apps.first().map_or(0, |a| a.tenant);
    if apps.iter().all(|a| a.tenant == first) {
        sorted.clear();
        sorted.extend_from_slice(app_mem_bytes);
        return cfg.app_mem_ref_in(sorted);
    }
    let mut by_tenant: Vec<(u32, f64)> = apps
        .iter()
        .zip(app_mem_bytes)
        .map(|(a, &m)| (a.tenant, m))
        .collect();
    by_tenant.sort_by_key(|x| x.0);
    for group in by_tenant.chunk_by(|x, y| x.0 == y.0) {
        sorted.clear();
        sorted.extend(group.iter().map(|x| x.1));
        per_tenant.push((group[0].0, cfg.app_mem_ref_in(sorted)));
    }
    0.0
}

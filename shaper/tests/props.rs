//! Property tests over random clusters (pessimistic unless stated).
//!
//! "Forced" components are the protected ones and the core components of
//! applications that have a protected component: they are kept whatever the
//! room. The capacity invariant is therefore: on every host, the planned
//! allocations of the non-forced kept components fit in what the forced ones
//! leave, `sum(non-forced) <= max(0, capacity - sum(forced))`.

use proptest::prelude::*;
use shaper::*;
use std::collections::{HashMap, HashSet};

const NOW_S: f64 = 2000.0;

#[derive(Clone, Debug)]
struct Case {
    view: ClusterView,
    cfg: ShaperConfig,
}

type CompRaw = (
    bool,
    u32,
    (f64, f64),
    f64,
    (f64, f64),
    (f64, f64),
    Option<(f64, f64, f64, f64)>,
    bool,
    f64,
);

fn comp_strategy() -> impl Strategy<Value = CompRaw> {
    (
        proptest::bool::weighted(0.5),
        0u32..100,
        (0.1f64..8.0, 0.1f64..32.0),
        0.0f64..2000.0,
        (0.0f64..1.5, 0.0f64..1.5),
        (0.0f64..1.2, 0.0f64..1.2),
        proptest::option::weighted(0.85, (0.0f64..1.3, 0.0f64..1.3, 0.0f64..0.3, 0.0f64..0.3)),
        proptest::bool::weighted(0.06),
        0.0f64..1e4,
    )
}

type AppRaw = (f64, i32, u32, Option<f64>, Vec<CompRaw>);

fn app_strategy() -> impl Strategy<Value = AppRaw> {
    (
        0.0f64..1000.0,
        -2i32..3,
        0u32..4,
        proptest::option::of(0.0f64..1e4),
        proptest::collection::vec(comp_strategy(), 1..6),
    )
}

fn cfg_strategy() -> impl Strategy<Value = ShaperConfig> {
    (
        0.0f64..0.2,
        0.0f64..3.0,
        0usize..3,
        0usize..3,
        0.0f64..0.2,
        1.0f64..2.0,
        proptest::bool::ANY,
        proptest::bool::ANY,
        prop_oneof![Just(1.0f64), 0.05f64..1.0],
        proptest::bool::ANY,
    )
        .prop_map(
            |(k1, k2, o, v, m, g, floors, share, shrink, buffer)| ShaperConfig {
                policy: Policy::Pessimistic,
                k1,
                k2,
                order: [
                    SchedulerOrder::Fifo,
                    SchedulerOrder::Sjf,
                    SchedulerOrder::Priority,
                ][o],
                victim_order: [
                    VictimOrder::OldestFirstKeep,
                    VictimOrder::LowestPriorityFirst,
                    VictimOrder::LeastWorkLost,
                ][v],
                min_relative_change: m,
                max_growth: g,
                cpu_shortfall: if share {
                    CpuShortfall::Share
                } else {
                    CpuShortfall::Evict
                },
                mem_shortfall: if buffer {
                    MemShortfall::Buffer
                } else {
                    MemShortfall::Evict
                },
                min_cpu_cores: if floors { 0.2 } else { 0.0 },
                min_mem_bytes: if floors { 0.5 } else { 0.0 },
                mem_shrink_max_fraction: shrink,
                ..ShaperConfig::uniform()
            },
        )
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec((1.0f64..16.0, 1.0f64..64.0), 1..6),
        proptest::bool::ANY,
        proptest::collection::vec(app_strategy(), 0..12),
        cfg_strategy(),
    )
        .prop_map(|(hosts_raw, sparse, apps_raw, cfg)| {
            let host_id = |i: usize| {
                if sparse {
                    1000 - 37 * i as u64
                } else {
                    i as u64
                }
            };
            let hosts: Vec<Host> = hosts_raw
                .iter()
                .enumerate()
                .map(|(i, &(c, m))| Host {
                    id: HostId(host_id(i)),
                    capacity: Resources::new(c, m),
                })
                .collect();
            let mut next_comp = 0u64;
            let apps = apps_raw
                .into_iter()
                .enumerate()
                .map(|(ai, (sub, priority, failures, rem, comps))| Application {
                    tenant: 0,
                    id: AppId(ai as u64 * 7 + 3),
                    submitted_s: sub,
                    priority,
                    failures,
                    expected_remaining_s: rem,
                    components: comps
                        .into_iter()
                        .map(
                            |(
                                core,
                                pick,
                                (rc, rm),
                                started_s,
                                (ac, am),
                                (uc, um),
                                fc,
                                protected,
                                work,
                            )| {
                                next_comp += 1;
                                let host = if pick < 97 {
                                    HostId(host_id(pick as usize % hosts.len()))
                                } else {
                                    HostId(99_999)
                                };
                                Component {
                                    id: ComponentId(next_comp),
                                    class: if core { Class::Core } else { Class::Elastic },
                                    host,
                                    request: Resources::new(rc, rm),
                                    started_s,
                                    allocation: Resources::new(rc * ac, rm * am),
                                    usage: Resources::new(rc * uc, rm * um),
                                    forecast: fc.map(|(mc, mm, sc, sm)| Forecasts {
                                        cpu: Predictive::gaussian(rc * mc, rc * sc),
                                        mem: Predictive::gaussian(rm * mm, rm * sm),
                                        mem_hold_bytes: 0.0,
                                        mem_small_hold_bytes: 0.0,
                                    }),
                                    protected,
                                    work_done_s: work,
                                    restarts_alone: false,
                                    // a reservation on a quarter of them,
                                    // some above the request
                                    mem_floor_bytes: if pick % 4 == 0 {
                                        rm * f64::from(pick % 12) / 10.0
                                    } else {
                                        0.0
                                    },
                                    // an OOM floor on some, some
                                    // above the ceiling
                                    oom_floor_bytes: if pick % 5 == 1 {
                                        rm * f64::from(pick % 15) / 10.0
                                    } else {
                                        0.0
                                    },
                                }
                            },
                        )
                        .collect(),
                })
                .collect();
            Case {
                view: ClusterView { hosts, apps },
                cfg,
            }
        })
}

/// What each component ends with after the plan: `None` when evicted.
fn outcome(view: &ClusterView, plan: &Plan) -> HashMap<ComponentId, Option<Resources>> {
    let mut out: HashMap<ComponentId, Option<Resources>> = HashMap::new();
    for a in &view.apps {
        for c in &a.components {
            out.insert(c.id, Some(c.allocation));
        }
    }
    for act in &plan.actions {
        match act {
            Action::Resize { component, to, .. } => {
                out.insert(*component, Some(*to));
            }
            Action::EvictComponent { component, .. } => {
                out.insert(*component, None);
            }
            Action::EvictApplication { components, .. } => {
                for c in components {
                    out.insert(*c, None);
                }
            }
        }
    }
    out
}

fn known_hosts(view: &ClusterView) -> HashMap<HostId, Resources> {
    view.hosts.iter().map(|h| (h.id, h.capacity)).collect()
}

fn forced_set(view: &ClusterView) -> HashSet<ComponentId> {
    let hosts = known_hosts(view);
    let mut f = HashSet::new();
    for a in &view.apps {
        let pinned = a
            .components
            .iter()
            .any(|c| c.protected && hosts.contains_key(&c.host));
        for c in &a.components {
            if hosts.contains_key(&c.host) && (c.protected || (pinned && c.class == Class::Core)) {
                f.insert(c.id);
            }
        }
    }
    f
}

fn json_close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-12 * (1.0 + x.abs()),
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_close(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_close(v, w)))
        }
        _ => a == b,
    }
}

fn tol(x: f64) -> f64 {
    1e-7 * (1.0 + x.abs())
}

fn order_pos(view: &ClusterView, order: SchedulerOrder) -> HashMap<AppId, usize> {
    let mut idx: Vec<usize> = (0..view.apps.len()).collect();
    let key = |a: &Application| -> (f64, f64, u64) {
        let first = match order {
            SchedulerOrder::Fifo => a.submitted_s,
            SchedulerOrder::Sjf => a.expected_remaining_s.unwrap_or(f64::INFINITY),
            SchedulerOrder::Priority => -f64::from(a.priority),
        };
        (first, a.submitted_s, a.id.0)
    };
    idx.sort_by(|&i, &j| {
        let (a, b) = (key(&view.apps[i]), key(&view.apps[j]));
        a.0.total_cmp(&b.0)
            .then(a.1.total_cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    idx.iter()
        .enumerate()
        .map(|(pos, &i)| (view.apps[i].id, pos))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn planned_allocations_fit_every_host(case in case_strategy()) {
        let Case { view, cfg } = case;
        let plan = decide(&view, NOW_S, &cfg);
        let out = outcome(&view, &plan);
        let forced = forced_set(&view);
        let hosts = known_hosts(&view);
        let mut forced_sum: HashMap<HostId, Resources> = HashMap::new();
        let mut other_sum: HashMap<HostId, Resources> = HashMap::new();
        for a in &view.apps {
            for c in &a.components {
                if !hosts.contains_key(&c.host) { continue; }
                if let Some(Some(r)) = out.get(&c.id) {
                    let m = if forced.contains(&c.id) { &mut forced_sum } else { &mut other_sum };
                    let e = m.entry(c.host).or_default();
                    *e = e.add(r);
                }
            }
        }
        // `share`: a component that does not fit still gets the CPU floor,
        // so a host's CPU may be overcommitted by at most one floor per
        // non-forced component on it.
        let share = cfg.cpu_shortfall == CpuShortfall::Share;
        let mut squeezed_floor: HashMap<HostId, f64> = HashMap::new();
        for a in view.apps.iter().filter(|_| share) {
            for c in &a.components {
                if !forced.contains(&c.id) && matches!(out.get(&c.id), Some(Some(_))) {
                    *squeezed_floor.entry(c.host).or_default() += cfg.min_cpu_cores.max(0.01);
                }
            }
        }
        for (h, cap) in &hosts {
            let f = forced_sum.get(h).copied().unwrap_or_default();
            let o = other_sum.get(h).copied().unwrap_or_default();
            for r in Resource::ALL {
                let mut room = (cap.get(r) - f.get(r)).max(0.0);
                if r == Resource::Cpu {
                    room += squeezed_floor.get(h).copied().unwrap_or(0.0);
                }
                prop_assert!(o.get(r) <= room + tol(cap.get(r)),
                    "host {:?} {}: non-forced {} > room {} (cap {}, forced {})", h, r, o.get(r), room, cap.get(r), f.get(r));
            }
        }
    }

    #[test]
    fn kept_components_never_below_usage(case in case_strategy(), optimistic in proptest::bool::ANY) {
        let Case { view, mut cfg } = case;
        if optimistic { cfg.policy = Policy::Optimistic; }
        let plan = decide(&view, NOW_S, &cfg);
        let out = outcome(&view, &plan);
        let hosts = known_hosts(&view);
        // `share` (pessimistic): CPU may be cut below usage, but only on a
        // host whose CPU is planned in full (up to one CPU step per
        // component of rounding, and the floors).
        let share = cfg.policy == Policy::Pessimistic && cfg.cpu_shortfall == CpuShortfall::Share;
        let mut planned_cpu: HashMap<HostId, (f64, f64)> = HashMap::new();
        for a in &view.apps {
            for c in &a.components {
                if let Some(Some(r)) = out.get(&c.id) {
                    let e = planned_cpu.entry(c.host).or_default();
                    e.0 += r.cpu_cores;
                    e.1 += 0.001;
                }
            }
        }
        for a in &view.apps {
            for c in &a.components {
                if !hosts.contains_key(&c.host) { continue; }
                if let Some(Some(r)) = out.get(&c.id) {
                    for res in Resource::ALL {
                        if share && res == Resource::Cpu && r.cpu_cores < c.usage.cpu_cores {
                            let (sum, slack) = planned_cpu[&c.host];
                            let cap = hosts[&c.host].cpu_cores;
                            prop_assert!(sum + slack >= cap - tol(cap),
                                "component {:?} squeezed below usage on a host with CPU left: {} of {}", c.id, sum, cap);
                            continue;
                        }
                        prop_assert!(r.get(res) >= c.usage.get(res) - tol(c.usage.get(res)),
                            "component {:?} {}: allocation {} < usage {}", c.id, res, r.get(res), c.usage.get(res));
                    }
                }
            }
        }
        if optimistic {
            prop_assert_eq!(plan.evictions().count(), 0);
        }
    }

    /// A memory reservation is never cut, nor an OOM floor (up to the
    /// ceiling): a component kept by the plan ends with at least them,
    /// except a victim whose eviction
    /// the cap deferred, which keeps what it had.
    #[test]
    fn kept_components_keep_their_memory_reservation_and_oom_floor(case in case_strategy()) {
        let Case { view, cfg } = case;
        let plan = decide(&view, NOW_S, &cfg);
        let out = outcome(&view, &plan);
        let hosts = known_hosts(&view);
        for a in &view.apps {
            for c in &a.components {
                if !hosts.contains_key(&c.host) || plan.summary.deferred_components > 0 {
                    continue;
                }
                if let Some(Some(r)) = out.get(&c.id) {
                    let floor = c.mem_floor_bytes;
                    prop_assert!(r.mem_bytes >= floor - tol(floor),
                        "component {:?}: memory {} below its reservation {}", c.id, r.mem_bytes, floor);
                    // and its OOM floor, up to its ceiling
                    let oom = c.oom_floor_bytes.min(c.request.mem_bytes * cfg.max_growth.max(1.0));
                    prop_assert!(r.mem_bytes >= oom - tol(oom),
                        "component {:?}: memory {} below its OOM floor {}", c.id, r.mem_bytes, oom);
                }
            }
        }
    }

    #[test]
    fn nothing_evicted_when_everything_fits(case in case_strategy()) {
        let Case { mut view, cfg } = case;
        // Give every host room for the largest thing any of its components
        // could be planned at (usage and a reservation in whole pages).
        let mut need: HashMap<HostId, Resources> = HashMap::new();
        for a in &view.apps {
            for c in &a.components {
                let big = Resources::from_fn(|r| {
                    let floor = match r { Resource::Cpu => cfg.min_cpu_cores, Resource::Mem => cfg.min_mem_bytes };
                    let reserved = match r { Resource::Cpu => 0.0, Resource::Mem => c.mem_floor_bytes };
                    (c.request.get(r) * cfg.max_growth)
                        .max(limits::align_up(r, c.usage.get(r)))
                        .max(c.allocation.get(r))
                        .max(floor)
                        .max(limits::align_up(r, reserved))
                });
                let e = need.entry(c.host).or_default();
                *e = e.add(&big);
            }
        }
        for h in &mut view.hosts {
            h.capacity = need.get(&h.id).copied().unwrap_or_default().add(&Resources::new(1.0, 1.0));
        }
        let plan = decide(&view, NOW_S, &cfg);
        prop_assert_eq!(plan.evictions().count(), 0, "{:#?}", plan.evictions().collect::<Vec<_>>());
    }

    #[test]
    fn apps_are_never_partly_kept(case in case_strategy()) {
        let Case { view, cfg } = case;
        let plan = decide(&view, NOW_S, &cfg);
        let class: HashMap<ComponentId, Class> =
            view.apps.iter().flat_map(|a| a.components.iter().map(|c| (c.id, c.class))).collect();
        let forced = forced_set(&view);
        let mut evicted_apps = HashSet::new();
        for act in plan.evictions() {
            match act {
                Action::EvictComponent { component, .. } => {
                    prop_assert_eq!(class[component], Class::Elastic, "core component evicted alone");
                    prop_assert!(!forced.contains(component));
                }
                Action::EvictApplication { app, components, .. } => {
                    let a = view.apps.iter().find(|a| a.id == *app).expect("app exists");
                    let all: Vec<ComponentId> = a.components.iter().map(|c| c.id).collect();
                    prop_assert_eq!(components, &all, "an app eviction lists every component");
                    prop_assert!(all.iter().all(|c| !forced.contains(c)), "forced component evicted");
                    evicted_apps.insert(*app);
                }
                Action::Resize { .. } => {}
            }
        }
        for act in plan.actions.iter() {
            if let Action::Resize { app, .. } | Action::EvictComponent { app, .. } = act {
                prop_assert!(!evicted_apps.contains(app), "action on a component of an evicted app");
            }
        }
    }

    /// Every eviction is justified by the room left by forced components and
    /// by what was kept *before* it (earlier applications in scheduler order,
    /// and for elastic components the ones before them in keep order), never
    /// by later applications.
    #[test]
    fn earlier_apps_never_preempted_for_later_ones(case in case_strategy()) {
        let Case { view, cfg } = case;
        let plan = decide(&view, NOW_S, &cfg);
        let out = outcome(&view, &plan);
        let forced = forced_set(&view);
        let hosts = known_hosts(&view);
        let pos = order_pos(&view, cfg.order);
        let interleaved = cfg.victim_order == VictimOrder::OldestFirstKeep;
        let kept = |c: &Component| -> Option<Resources> {
            if !hosts.contains_key(&c.host) || forced.contains(&c.id) { return None; }
            out.get(&c.id).copied().flatten()
        };
        let base = |h: HostId| -> Resources {
            let mut f = hosts[&h];
            for a in &view.apps { for c in &a.components {
                if c.host == h && forced.contains(&c.id) {
                    if let Some(Some(r)) = out.get(&c.id) { f = f.sub(r); }
                }
            }}
            f
        };
        for act in plan.evictions() {
            let (app, binding, culprit) = match act {
                Action::EvictApplication { app, explanation, .. } => {
                    let Reason::CoreDidNotFit { component } = explanation.reason else {
                        return Err(TestCaseError::fail("app eviction without CoreDidNotFit"));
                    };
                    (*app, explanation.binding.as_deref().copied().expect("binding"), component)
                }
                Action::EvictComponent { app, component, explanation, .. } => {
                    (*app, explanation.binding.as_deref().copied().expect("binding"), *component)
                }
                Action::Resize { .. } => continue,
            };
            let r = binding.resource;
            prop_assert!(binding.needed > binding.free, "evicted although it fitted: {:?}", binding);
            let a = view.apps.iter().find(|a| a.id == app).expect("app");
            let p = pos[&app];
            let c = a.components.iter().find(|c| c.id == culprit).expect("culprit");
            prop_assert_eq!(c.host, binding.host);
            // Upper bound on what the algorithm may have subtracted before
            // this decision, from earlier apps only.
            let mut free_lo = base(binding.host);
            for b in &view.apps {
                let before = pos[&b.id] < p;
                for d in &b.components {
                    if d.host != binding.host { continue; }
                    let Some(k) = kept(d) else { continue };
                    let counts = if c.class == Class::Core {
                        before && (interleaved || d.class == Class::Core)
                    } else if interleaved {
                        before || (b.id == app && (d.class == Class::Core
                            || (d.started_s, d.id.0) < (c.started_s, c.id.0)))
                    } else {
                        // global elastic pass: every kept core, and elastics
                        // earlier in the global keep order (bounded by all
                        // kept elastics)
                        true
                    };
                    if counts { free_lo = free_lo.sub(&k); }
                }
                if c.class == Class::Core && b.id == app {
                    // the app's own cores tentatively taken before the culprit
                    for d in b.components.iter().take_while(|d| d.id != culprit) {
                        if d.class == Class::Core && d.host == binding.host && !forced.contains(&d.id) {
                            let t = component_target(b, d, NOW_S, &cfg).alloc;
                            free_lo = free_lo.sub(&Resources::from_fn(|x| t.get(x).max(d.allocation.get(x))));
                        }
                    }
                }
            }
            prop_assert!(binding.free >= free_lo.get(r) - tol(hosts[&binding.host].get(r)),
                "free {} at decision is below what earlier apps alone leave ({})", binding.free, free_lo.get(r));
        }
    }

    #[test]
    fn plan_is_deterministic_and_input_order_free(case in case_strategy(), rot in 0usize..7) {
        let Case { view, cfg } = case;
        let a = decide(&view, NOW_S, &cfg);
        let b = decide(&view, NOW_S, &cfg);
        prop_assert_eq!(&a, &b);
        let mut shuffled = view.clone();
        let nh = shuffled.hosts.len();
        shuffled.hosts.rotate_left(rot % nh);
        shuffled.hosts.reverse();
        if !shuffled.apps.is_empty() {
            let na = shuffled.apps.len();
            shuffled.apps.rotate_left(rot % na);
        }
        let c = decide(&shuffled, NOW_S, &cfg);
        // Same evictions in the same (decision) order; same resizes (listed
        // in view order, so compared as sets).
        let ev = |p: &Plan| p.evictions().cloned().collect::<Vec<_>>();
        prop_assert_eq!(ev(&a), ev(&c));
        let rs = |p: &Plan| {
            let mut v: Vec<(u64, String)> = p.resizes().map(|r| match r {
                Action::Resize { component, .. } => (component.0, format!("{r:?}")),
                _ => unreachable!(),
            }).collect();
            v.sort();
            v
        };
        prop_assert_eq!(rs(&a), rs(&c));
        // Shrinks, then evictions, then growths.
        let mut phase = 0;
        for act in &c.actions {
            let p = match act {
                Action::Resize { from, to, .. } if to.fits_in(from) => 0,
                Action::Resize { .. } => 2,
                _ => 1,
            };
            prop_assert!(p >= phase, "action out of order: {:?}", act.kind());
            phase = p;
        }
    }

    #[test]
    fn eviction_cap_is_respected_and_deferred_never_grow(case in case_strategy(), cap in 0u32..4) {
        let Case { view, cfg } = case;
        let free = decide(&view, NOW_S, &cfg);
        let capped_cfg = ShaperConfig { max_evictions_per_round: Some(cap), ..cfg.clone() };
        let capped = decide(&view, NOW_S, &capped_cfg);
        prop_assert!(capped.summary.evicted_components <= u64::from(cap));
        if free.summary.evicted_components <= u64::from(cap) {
            prop_assert_eq!(&free.actions, &capped.actions);
        } else {
            prop_assert_eq!(
                capped.summary.evicted_components + capped.summary.deferred_components,
                free.summary.evicted_components
            );
        }
        for act in capped.resizes() {
            if let Action::Resize { from, to, explanation, .. } = act {
                if explanation.reason == Reason::EvictionDeferred {
                    prop_assert!(to.fits_in(from), "deferred victim grown: {:?} -> {:?}", from, to);
                }
            }
        }
        // Every would-be victim of the uncapped plan is either evicted or
        // deferred under the cap; nothing else is evicted.
        let victims = |p: &Plan| -> HashSet<ComponentId> {
            let mut s = HashSet::new();
            for a in p.evictions() {
                match a {
                    Action::EvictComponent { component, .. } => { s.insert(*component); }
                    Action::EvictApplication { components, .. } => s.extend(components.iter().copied()),
                    Action::Resize { .. } => {}
                }
            }
            s
        };
        prop_assert!(victims(&capped).is_subset(&victims(&free)));
    }

    /// Every resize of a plan lies within its component's bounds
    /// (`limits::component_bounds`, kept at its current allocation): an
    /// agent that holds a central shaper's plan to them (QA C8) never
    /// changes what the kernel plans under the same `[shaper]` config.
    #[test]
    fn resizes_lie_within_the_component_bounds(case in case_strategy()) {
        let Case { view, cfg } = case;
        let plan = decide(&view, NOW_S, &cfg);
        let comps: HashMap<ComponentId, &Component> = view
            .apps
            .iter()
            .flat_map(|a| a.components.iter().map(|c| (c.id, c)))
            .collect();
        for a in &plan.actions {
            let Action::Resize { component, to, .. } = a else { continue };
            let c = comps[component];
            for r in Resource::ALL {
                let b = limits::component_bounds(r, c.request.get(r), c.usage.get(r), c.mem_floor_bytes, &cfg)
                    .keeping(c.allocation.get(r));
                let x = to.get(r);
                prop_assert_eq!(b.clamp(x), (x, None), "{:?} {}: {:?}", component, r, b);
            }
        }
    }

    #[test]
    fn baseline_sets_requests(case in case_strategy()) {
        let Case { view, mut cfg } = case;
        cfg.policy = Policy::Baseline;
        let plan = decide(&view, NOW_S, &cfg);
        prop_assert_eq!(plan.evictions().count(), 0);
        let out = outcome(&view, &plan);
        let hosts = known_hosts(&view);
        for a in &view.apps {
            for c in &a.components {
                if !hosts.contains_key(&c.host) { continue; }
                let got = out[&c.id].expect("kept");
                let want = if c.protected {
                    Resources::from_fn(|r| c.request.get(r).max(c.allocation.get(r)))
                } else {
                    c.request
                };
                prop_assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn plan_json_round_trip(case in case_strategy()) {
        let Case { view, cfg } = case;
        let plan = decide(&view, NOW_S, &cfg);
        let json = serde_json::to_string(&plan).expect("serialises");
        let back: Plan = serde_json::from_str(&json).expect("parses");
        // serde_json may lose the last bit of a float: compare structurally
        // with a relative tolerance.
        let a = serde_json::to_value(&plan).expect("value");
        let b = serde_json::to_value(&back).expect("value");
        prop_assert!(json_close(&a, &b), "{a}\n!=\n{b}");
        prop_assert_eq!(back.actions.len(), plan.actions.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// A `Decider` reused across rounds (with its plan memory, or with the
    /// action vector of an earlier plan given back) plans exactly what
    /// `decide` plans.
    #[test]
    fn decider_reuse_matches_decide(a in case_strategy(), b in case_strategy(), optimistic in proptest::bool::ANY) {
        let mut d = Decider::new();
        let mut plan = Plan { policy: Policy::Baseline, now_s: 0.0, actions: Vec::new(), summary: PlanSummary::default() };
        let mut cfg_b = b.cfg.clone();
        if optimistic { cfg_b.policy = Policy::Optimistic; }
        for (view, cfg) in [(&a.view, &a.cfg), (&b.view, &cfg_b), (&a.view, &a.cfg)] {
            d.decide_into(view, NOW_S, cfg, &mut plan);
            prop_assert_eq!(&plan, &decide(view, NOW_S, cfg));
            prop_assert_eq!(d.decide(view, NOW_S, cfg), plan.clone());
            // Given back with its actions still in it (recycle clears it).
            d.recycle(plan.actions.clone());
            let recycled = d.decide(view, NOW_S, cfg);
            prop_assert_eq!(&recycled, &plan);
            d.recycle(recycled.actions);
        }
    }
}

//! Property tests: every allocation a plan sets is whole steps (millicores,
//! 4 KiB pages), on crowded hosts too, where limits are cut to a host's
//! share (QA D8), and the cuts still fit their hosts.
//!
//! The views are in real units (cores, bytes) and nothing in them is
//! aligned: capacities, requests, usage, forecasts, reservations and floors
//! are arbitrary floats. An allocation a resize leaves as it was (the
//! hysteresis or protection keeps the current one, which the runtime set)
//! is not the plan's, and the ceiling (`request * max_growth`) is kept as
//! given (see `shaper::limits`).

use proptest::prelude::*;
use shaper::limits::align_up;
use shaper::*;
use std::collections::{HashMap, HashSet};

const NOW_S: f64 = 2000.0;
const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

/// (core, host pick, request (cores, bytes), started, allocation and
/// usage as fractions of the request, forecast (means, stds as fractions
/// of the request, calibration widening), hold fraction, reservation
/// fraction, protected)
type CompRaw = (
    bool,
    u32,
    (f64, f64),
    f64,
    (f64, f64),
    (f64, f64),
    Option<(f64, f64, f64, f64, f64)>,
    Option<f64>,
    Option<f64>,
    bool,
);

fn comp_strategy() -> impl Strategy<Value = CompRaw> {
    (
        proptest::bool::weighted(0.5),
        0u32..100,
        (0.05f64..4.0, 64.0 * MIB..4.0 * GIB),
        0.0f64..2000.0,
        (0.2f64..1.5, 0.2f64..1.5),
        (0.0f64..1.2, 0.0f64..1.2),
        proptest::option::weighted(
            0.9,
            (
                0.0f64..1.3,
                0.0f64..1.3,
                0.0f64..0.3,
                0.0f64..0.3,
                1.0f64..4.0,
            ),
        ),
        proptest::option::weighted(0.2, 0.0f64..1.5),
        proptest::option::weighted(0.2, 0.0f64..1.2),
        proptest::bool::weighted(0.06),
    )
}

fn cfg_strategy() -> impl Strategy<Value = ShaperConfig> {
    (
        (0.0f64..0.3, 0.0f64..3.0),
        0.0f64..0.2,
        1.0f64..2.0,
        proptest::bool::ANY,
        proptest::bool::weighted(0.8),
        proptest::bool::ANY,
        prop_oneof![Just(1.0f64), 0.05f64..1.0],
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |((k1, k2), m, g, share, buffer, floors, shrink, optimistic)| ShaperConfig {
                policy: if optimistic {
                    Policy::Optimistic
                } else {
                    Policy::Pessimistic
                },
                k1,
                k2,
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
                // floors that are no whole steps
                min_cpu_cores: if floors { 0.0137 } else { 0.0 },
                min_mem_bytes: if floors { 33_333_333.3 } else { 0.0 },
                mem_shrink_max_fraction: shrink,
                ..ShaperConfig::uniform()
            },
        )
}

fn case_strategy() -> impl Strategy<Value = (ClusterView, ShaperConfig)> {
    (
        proptest::collection::vec((1.0f64..16.0, 1.0 * GIB..24.0 * GIB), 1..4),
        proptest::collection::vec(proptest::collection::vec(comp_strategy(), 1..5), 0..10),
        cfg_strategy(),
    )
        .prop_map(|(hosts_raw, apps_raw, cfg)| {
            let hosts: Vec<Host> = hosts_raw
                .iter()
                .enumerate()
                .map(|(i, &(c, m))| Host {
                    id: HostId(i as u64),
                    capacity: Resources::new(c, m),
                })
                .collect();
            let mut next = 0u64;
            let apps = apps_raw
                .into_iter()
                .enumerate()
                .map(|(ai, comps)| Application {
                    tenant: 0,
                    id: AppId(ai as u64),
                    submitted_s: ai as f64,
                    priority: 0,
                    failures: 0,
                    expected_remaining_s: None,
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
                                hold,
                                reserve,
                                protected,
                            )| {
                                next += 1;
                                Component {
                                    id: ComponentId(next),
                                    class: if core { Class::Core } else { Class::Elastic },
                                    host: HostId(u64::from(pick) % hosts.len() as u64),
                                    request: Resources::new(rc, rm),
                                    started_s,
                                    allocation: Resources::new(rc * ac, rm * am),
                                    usage: Resources::new(rc * uc, rm * um),
                                    forecast: fc.map(|(mc, mm, sc, sm, widen)| {
                                        let mut mem = Predictive::gaussian(rm * mm, rm * sm);
                                        if widen > 2.0 {
                                            let mut cal = Calibration::gaussian();
                                            for u in &mut cal.upper {
                                                *u *= widen as f32;
                                            }
                                            mem.calibration = Some(std::sync::Arc::new(cal));
                                        }
                                        Forecasts {
                                            cpu: Predictive::gaussian(rc * mc, rc * sc),
                                            mem,
                                            mem_hold_bytes: hold.map_or(0.0, |h| rm * h),
                                            mem_small_hold_bytes: 0.0,
                                        }
                                    }),
                                    protected,
                                    work_done_s: 0.0,
                                    restarts_alone: false,
                                    mem_floor_bytes: reserve.map_or(0.0, |r| rm * r),
                                    // an OOM floor, never whole pages
                                    oom_floor_bytes: hold.map_or(0.0, |h| rm * h * 0.9 + 1.0),
                                }
                            },
                        )
                        .collect(),
                })
                .collect();
            (ClusterView { hosts, apps }, cfg)
        })
}

/// The component a resize sets.
fn a_component(a: &Action) -> Option<ComponentId> {
    match a {
        Action::Resize { component, .. } => Some(*component),
        _ => None,
    }
}

/// `x` is a whole number of steps of `r` (to float error).
fn aligned(r: Resource, x: f64) -> bool {
    let n = x / shaper::limits::step(r);
    (n - n.round()).abs() < 1e-6
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn planned_allocations_are_whole_steps(case in case_strategy()) {
        let (view, cfg) = case;
        let plan = decide(&view, NOW_S, &cfg);
        for a in plan.resizes() {
            let Action::Resize { from, to, explanation, .. } = a else { continue };
            let c = view.apps.iter().flat_map(|a| &a.components).find(|c| Some(c.id) == a_component(a));
            let Some(c) = c else { continue };
            for r in Resource::ALL {
                // the ceiling is the request (times `max_growth`) as given
                let ceiling = shaper::limits::ceiling(c.request.get(r), cfg.max_growth);
                let x = to.get(r);
                prop_assert!(
                    x == from.get(r) || x == ceiling || aligned(r, x),
                    "{r} {x} is no whole steps ({a})"
                );
                // and the target it explains
                let t = explanation.sizing(r).target;
                prop_assert!(t == ceiling || aligned(r, t), "{r} target {t} is no whole steps ({a})");
            }
        }
    }

    /// The capacity invariant of `props.rs` in real units: on every host
    /// the non-forced kept components fit in what the forced ones leave
    /// (with `share`, plus one CPU floor per component), whole pages and
    /// all.
    #[test]
    fn whole_steps_still_fit_every_host(case in case_strategy()) {
        let (view, mut cfg) = case;
        cfg.policy = Policy::Pessimistic;
        let plan = decide(&view, NOW_S, &cfg);
        let mut out: HashMap<ComponentId, Option<Resources>> = HashMap::new();
        for a in &view.apps {
            for c in &a.components {
                out.insert(c.id, Some(c.allocation));
            }
        }
        for act in &plan.actions {
            match act {
                Action::Resize { component, to, .. } => { out.insert(*component, Some(*to)); }
                Action::EvictComponent { component, .. } => { out.insert(*component, None); }
                Action::EvictApplication { components, .. } => {
                    for c in components { out.insert(*c, None); }
                }
            }
        }
        let mut forced: HashSet<ComponentId> = HashSet::new();
        for a in &view.apps {
            let pinned = a.components.iter().any(|c| c.protected);
            for c in &a.components {
                if c.protected || (pinned && c.class == Class::Core) {
                    forced.insert(c.id);
                }
            }
        }
        let share = cfg.cpu_shortfall == CpuShortfall::Share;
        let cpu_floor = align_up(Resource::Cpu, cfg.min_cpu_cores.max(0.01));
        for h in &view.hosts {
            let (mut f, mut o, mut floors) = (Resources::ZERO, Resources::ZERO, 0.0);
            for c in view.apps.iter().flat_map(|a| &a.components).filter(|c| c.host == h.id) {
                let Some(Some(r)) = out.get(&c.id) else { continue };
                if forced.contains(&c.id) {
                    f = f.add(r);
                } else {
                    o = o.add(r);
                    if share {
                        floors += cpu_floor;
                    }
                }
            }
            for r in Resource::ALL {
                let cap = h.capacity.get(r);
                let mut room = (cap - f.get(r)).max(0.0);
                if r == Resource::Cpu {
                    room += floors;
                }
                prop_assert!(
                    o.get(r) <= room + 1e-7 * (1.0 + cap),
                    "host {:?} {r}: non-forced {} > room {room} (cap {cap}, forced {})",
                    h.id, o.get(r), f.get(r)
                );
            }
        }
    }
}

//! Hand-worked scenarios. Units: CPU cores and GiB (as bytes).

use shaper::*;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const NOW_S: f64 = 10_000.0;

fn comp(
    id: u64,
    class: Class,
    host: u64,
    started_s: f64,
    req: (f64, f64),
    fc: (f64, f64),
) -> Component {
    let request = Resources::new(req.0, req.1 * GIB);
    Component {
        id: ComponentId(id),
        class,
        host: HostId(host),
        request,
        started_s,
        allocation: request,
        usage: Resources::new(fc.0 * 0.5, fc.1 * 0.5 * GIB),
        forecast: Some(Forecasts {
            cpu: Predictive::point(fc.0),
            mem: Predictive::point(fc.1 * GIB),
            mem_hold_bytes: 0.0,
            mem_small_hold_bytes: 0.0,
        }),
        protected: false,
        work_done_s: NOW_S - started_s,
        restarts_alone: false,
        mem_floor_bytes: 0.0,
        oom_floor_bytes: 0.0,
    }
}

fn app(id: u64, submitted_s: f64, priority: i32, components: Vec<Component>) -> Application {
    Application {
        tenant: 0,
        id: AppId(id),
        submitted_s,
        priority,
        failures: 0,
        expected_remaining_s: None,
        components,
    }
}

fn host(id: u64, cpu: f64, mem_gib: f64) -> Host {
    Host {
        id: HostId(id),
        capacity: Resources::new(cpu, mem_gib * GIB),
    }
}

/// No buffer, no hysteresis: allocations are the point forecasts.
fn exact() -> ShaperConfig {
    ShaperConfig {
        k1: 0.0,
        k2: 0.0,
        min_relative_change: 0.0,
        ..ShaperConfig::uniform()
    }
}

fn evicted_components(plan: &Plan) -> Vec<u64> {
    let mut v: Vec<u64> = plan
        .evictions()
        .flat_map(|a| match a {
            Action::EvictComponent { component, .. } => vec![component.0],
            Action::EvictApplication { components, .. } => components.iter().map(|c| c.0).collect(),
            Action::Resize { .. } => vec![],
        })
        .collect();
    v.sort_unstable();
    v
}

fn evicted_apps(plan: &Plan) -> Vec<u64> {
    plan.evictions()
        .filter_map(|a| match a {
            Action::EvictApplication { app, .. } => Some(app.0),
            _ => None,
        })
        .collect()
}

/// Thesis section 4.2.2: three FIFO applications share a 16 GiB host; the
/// first one's core component spikes by 2 GiB. The pessimistic shaper
/// evicts the youngest elastic component of the last application (the
/// least work lost) instead of letting the kernel kill a core component;
/// the optimistic one plans nothing and leaves the host overcommitted.
#[test]
fn thesis_spike_evicts_youngest_elastic_of_last_application() {
    let calm = ClusterView {
        hosts: vec![host(0, 16.0, 16.0)],
        apps: vec![
            app(
                1,
                0.0,
                0,
                vec![comp(10, Class::Core, 0, 0.0, (4.0, 6.0), (2.0, 4.0))],
            ),
            app(
                2,
                10.0,
                0,
                vec![
                    comp(20, Class::Core, 0, 10.0, (2.0, 4.0), (1.0, 3.0)),
                    comp(21, Class::Elastic, 0, 10.0, (2.0, 4.0), (1.0, 2.0)),
                ],
            ),
            app(
                3,
                20.0,
                0,
                vec![
                    comp(30, Class::Core, 0, 20.0, (2.0, 4.0), (1.0, 3.0)),
                    comp(31, Class::Elastic, 0, 20.0, (2.0, 4.0), (1.0, 2.0)),
                    comp(32, Class::Elastic, 0, 3000.0, (2.0, 4.0), (1.0, 2.0)),
                ],
            ),
        ],
    };
    // 4 + 3 + 2 + 3 + 2 + 2 = 16 GiB: fits exactly.
    let plan = decide(&calm, NOW_S, &exact());
    assert!(evicted_components(&plan).is_empty(), "{plan:#?}");

    let mut spike = calm.clone();
    spike.apps[0].components[0].forecast = Some(Forecasts {
        cpu: Predictive::point(2.0),
        mem: Predictive::point(6.0 * GIB),
        mem_hold_bytes: 0.0,
        mem_small_hold_bytes: 0.0,
    });
    let plan = decide(&spike, NOW_S, &exact());
    assert_eq!(evicted_components(&plan), vec![32], "{plan:#?}");
    assert!(evicted_apps(&plan).is_empty());
    let ev = plan.evictions().next().expect("one eviction");
    let text = ev.to_string();
    eprintln!("{text}");
    assert!(
        text.contains("evict component 32 of app 3 on host 0"),
        "{text}"
    );
    assert!(
        text.contains(
            "elastic component did not fit (victim order oldest_first_keep) on host 0 mem"
        ),
        "{text}"
    );

    // Optimistic: same forecasts, no eviction, 18 GiB planned on 16.
    let plan = decide(
        &spike,
        NOW_S,
        &ShaperConfig {
            policy: Policy::Optimistic,
            ..exact()
        },
    );
    assert!(evicted_components(&plan).is_empty());
}

/// Two applications on a 9 GiB host: A (earlier, priority 0) with a core
/// of 3 GiB and an elastic of `a_elastic` GiB; B (later, priority 5) with a
/// core of 3 GiB and an elastic of `b_elastic` GiB.
fn contention(a_elastic: f64, b_elastic: f64) -> ClusterView {
    ClusterView {
        hosts: vec![host(0, 8.0, 9.0)],
        apps: vec![
            app(
                1,
                0.0,
                0,
                vec![
                    comp(10, Class::Core, 0, 0.0, (2.0, 4.0), (1.0, 3.0)),
                    comp(11, Class::Elastic, 0, 9000.0, (2.0, 4.0), (1.0, a_elastic)),
                ],
            ),
            app(
                2,
                50.0,
                5,
                vec![
                    comp(20, Class::Core, 0, 50.0, (2.0, 4.0), (1.0, 3.0)),
                    comp(21, Class::Elastic, 0, 50.0, (2.0, 4.0), (1.0, b_elastic)),
                ],
            ),
        ],
    }
}

fn with_order(v: VictimOrder) -> ShaperConfig {
    ShaperConfig {
        victim_order: v,
        ..exact()
    }
}

#[test]
fn thesis_order_can_kill_a_later_app_for_an_earlier_elastic() {
    // 3 + 4 (A's elastic, kept first) + 3 (B's core) = 10 > 9: all of B goes.
    let view = contention(4.0, 2.0);
    let plan = decide(&view, NOW_S, &exact());
    assert_eq!(evicted_apps(&plan), vec![2], "{plan:#?}");
    assert_eq!(evicted_components(&plan), vec![20, 21]);
    // Cores first (3 + 3), then elastics: only A's 4 GiB elastic goes.
    for v in [VictimOrder::LowestPriorityFirst, VictimOrder::LeastWorkLost] {
        let plan = decide(&view, NOW_S, &with_order(v));
        assert_eq!(evicted_components(&plan), vec![11], "{v:?}: {plan:#?}");
    }
}

#[test]
fn victim_orders_pick_different_elastics() {
    // Room for the two cores and one 3 GiB elastic.
    let view = contention(3.0, 3.0);
    // Thesis: A's elastic is kept with A, B's elastic goes.
    assert_eq!(
        evicted_components(&decide(&view, NOW_S, &exact())),
        vec![21]
    );
    // Borg-like: B has the higher priority, A's elastic goes.
    assert_eq!(
        evicted_components(&decide(
            &view,
            NOW_S,
            &with_order(VictimOrder::LowestPriorityFirst)
        )),
        vec![11]
    );
    // Least work lost: B's elastic has run since t=50 (work 9950 s), A's
    // since t=9000 (1000 s): A's goes...
    assert_eq!(
        evicted_components(&decide(
            &view,
            NOW_S,
            &with_order(VictimOrder::LeastWorkLost)
        )),
        vec![11]
    );
    // ...unless B's elastic has done less work (e.g. it was restarted).
    let mut v2 = view.clone();
    v2.apps[1].components[1].work_done_s = 10.0;
    assert_eq!(
        evicted_components(&decide(&v2, NOW_S, &with_order(VictimOrder::LeastWorkLost))),
        vec![21]
    );
}

#[test]
fn scheduler_orders_pick_different_survivors() {
    // One host, two single-core applications, room for one.
    let mut a = app(
        1,
        0.0,
        0,
        vec![comp(10, Class::Core, 0, 0.0, (4.0, 8.0), (3.0, 6.0))],
    );
    a.expected_remaining_s = Some(5000.0);
    let mut b = app(
        2,
        100.0,
        9,
        vec![comp(20, Class::Core, 0, 0.0, (4.0, 8.0), (3.0, 6.0))],
    );
    b.expected_remaining_s = Some(60.0);
    let view = ClusterView {
        hosts: vec![host(0, 8.0, 10.0)],
        apps: vec![a, b],
    };
    let fifo = decide(&view, NOW_S, &exact());
    assert_eq!(evicted_apps(&fifo), vec![2]);
    let sjf = decide(
        &view,
        NOW_S,
        &ShaperConfig {
            order: SchedulerOrder::Sjf,
            ..exact()
        },
    );
    assert_eq!(evicted_apps(&sjf), vec![1]);
    let prio = decide(
        &view,
        NOW_S,
        &ShaperConfig {
            order: SchedulerOrder::Priority,
            ..exact()
        },
    );
    assert_eq!(evicted_apps(&prio), vec![1]);
    let ex = fifo.evictions().next().expect("eviction").explanation();
    assert_eq!(
        ex.reason,
        Reason::CoreDidNotFit {
            component: ComponentId(20)
        }
    );
    let b = ex.binding.as_deref().copied().expect("binding");
    assert_eq!((b.host, b.resource), (HostId(0), Resource::Mem));
    assert!(
        (b.needed - 6.0 * GIB).abs() < 1.0 && (b.free - 4.0 * GIB).abs() < 1.0,
        "{b:?}"
    );
}

#[test]
fn eviction_cap_defers_the_more_important_victims() {
    // Host of 10 GiB, four single-elastic apps of 3 GiB after one 3 GiB core
    // app: room for two elastics; two must go.
    let mut apps = vec![app(
        1,
        0.0,
        0,
        vec![comp(10, Class::Core, 0, 0.0, (1.0, 4.0), (0.5, 3.0))],
    )];
    for i in 0..4u64 {
        apps.push(app(
            2 + i,
            10.0 + i as f64,
            0,
            vec![comp(
                20 + i,
                Class::Elastic,
                0,
                10.0,
                (1.0, 4.0),
                (0.5, 3.0),
            )],
        ));
    }
    let view = ClusterView {
        hosts: vec![host(0, 8.0, 10.0)],
        apps,
    };
    let free = decide(&view, NOW_S, &exact());
    assert_eq!(evicted_components(&free), vec![22, 23]);
    let capped = decide(
        &view,
        NOW_S,
        &ShaperConfig {
            max_evictions_per_round: Some(1),
            ..exact()
        },
    );
    // The latest decision (the last app's elastic) is evicted; the other
    // would-be victim is kept, shrunk to its target, never grown.
    assert_eq!(evicted_components(&capped), vec![23]);
    assert_eq!(capped.summary.deferred_components, 1);
    let deferred: Vec<&Action> = capped
        .resizes()
        .filter(|a| a.explanation().reason == Reason::EvictionDeferred)
        .collect();
    assert_eq!(deferred.len(), 1, "{capped:#?}");
    match deferred[0] {
        Action::Resize {
            component,
            from,
            to,
            explanation,
            ..
        } => {
            assert_eq!(*component, ComponentId(22));
            assert!(to.fits_in(from));
            assert!((to.mem_bytes - 3.0 * GIB).abs() < 1.0);
            assert!(explanation.binding.is_some());
        }
        other => panic!("unexpected {other:?}"),
    }
    // Cap 0: nothing is evicted at all.
    let none = decide(
        &view,
        NOW_S,
        &ShaperConfig {
            max_evictions_per_round: Some(0),
            ..exact()
        },
    );
    assert!(evicted_components(&none).is_empty());
    assert_eq!(none.summary.deferred_components, 2);
}

#[test]
fn protected_component_pins_its_application() {
    // App 1 (earlier) would normally win; app 2 has a protected elastic
    // component, so its core is kept whatever the room and app 1 goes.
    let mut p = comp(21, Class::Elastic, 0, 0.0, (2.0, 4.0), (1.0, 1.0));
    p.protected = true;
    p.allocation = Resources::new(2.0, 4.0 * GIB);
    let view = ClusterView {
        hosts: vec![host(0, 8.0, 10.0)],
        apps: vec![
            app(
                1,
                0.0,
                0,
                vec![comp(10, Class::Core, 0, 0.0, (4.0, 8.0), (2.0, 5.0))],
            ),
            app(
                2,
                10.0,
                0,
                vec![comp(20, Class::Core, 0, 0.0, (4.0, 8.0), (2.0, 4.0)), p],
            ),
        ],
    };
    let plan = decide(&view, NOW_S, &exact());
    assert_eq!(evicted_apps(&plan), vec![1], "{plan:#?}");
    // The protected component is not shrunk (its forecast says 1 GiB).
    assert!(plan
        .actions
        .iter()
        .all(|a| !matches!(a, Action::Resize { component, .. } if component.0 == 21)));
}

#[test]
fn unshaped_components_keep_their_request() {
    let mut young = comp(10, Class::Core, 0, NOW_S - 60.0, (4.0, 8.0), (1.0, 1.0));
    young.allocation = Resources::new(1.0, 1.0 * GIB);
    let mut failing_app = app(
        2,
        0.0,
        0,
        vec![comp(20, Class::Core, 0, 0.0, (4.0, 8.0), (1.0, 1.0))],
    );
    failing_app.failures = 3;
    failing_app.components[0].allocation = Resources::new(1.0, 1.0 * GIB);
    let view = ClusterView {
        hosts: vec![host(0, 16.0, 32.0)],
        apps: vec![app(1, 0.0, 0, vec![young]), failing_app],
    };
    let plan = decide(&view, NOW_S, &ShaperConfig::uniform());
    let bases: Vec<(u64, Basis, Resources)> = plan
        .resizes()
        .map(|a| match a {
            Action::Resize {
                component,
                to,
                explanation,
                ..
            } => (component.0, explanation.basis, *to),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        bases,
        vec![
            (10, Basis::GracePeriod, Resources::new(4.0, 8.0 * GIB)),
            (20, Basis::FailureLimit, Resources::new(4.0, 8.0 * GIB))
        ]
    );
}

#[test]
fn calibrated_band_sets_the_dynamic_term() {
    // A calibration that doubles the Gaussian band above the mean.
    let mut cal = Calibration::gaussian();
    for u in cal.upper.iter_mut() {
        *u *= 2.0;
    }
    let mut c = comp(10, Class::Core, 0, 0.0, (4.0, 8.0), (1.0, 2.0));
    c.forecast = Some(Forecasts {
        cpu: Predictive {
            mean: 1.0,
            std: 0.1,
            calibration: Some(std::sync::Arc::new(cal)),
        },
        mem: Predictive::gaussian(2.0 * GIB, 0.1 * GIB),
        mem_hold_bytes: 0.0,
        mem_small_hold_bytes: 0.0,
    });
    let a = app(1, 0.0, 0, vec![c.clone()]);
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 3.0,
        ..ShaperConfig::uniform()
    };
    let t = component_target(&a, &c, NOW_S, &cfg);
    assert!((t.cpu.k2_term - 0.6).abs() < 1e-6, "{:?}", t.cpu);
    assert!((t.cpu.k1_term - 0.2).abs() < 1e-12);
    assert!((t.alloc.cpu_cores - 1.8).abs() < 1e-6);
    assert!((t.mem.k2_term - 0.3 * GIB).abs() < 1.0);
    // rounded up to a whole step
    let want = (2.0 + 0.4 + 0.3) * GIB;
    let step = shaper::limits::MEM_STEP_BYTES;
    assert!(t.alloc.mem_bytes >= want && t.alloc.mem_bytes - want < step);
}

#[test]
fn explanations_read_well() {
    let spike = contention(4.0, 2.0);
    let plan = decide(
        &spike,
        NOW_S,
        &ShaperConfig {
            k1: 0.05,
            k2: 2.0,
            min_relative_change: 0.0,
            ..ShaperConfig::uniform()
        },
    );
    let texts: Vec<String> = plan.actions.iter().map(|a| a.to_string()).collect();
    assert!(
        texts.iter().any(|t| t.starts_with(
            "evict app 2 (2 components) (core component 20 did not fit on host 0 mem: needed"
        )),
        "{texts:#?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("resize app 1 component 10 on host 0")
                && t.contains("k1_term 0.1")
                && t.contains("mean 1")),
        "{texts:#?}"
    );
}

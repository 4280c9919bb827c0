//! Unit tests of `decide()`.

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
fn the_memory_margin_scales_with_the_forecast_not_the_request() {
    let mut c = comp(1, Class::Core, 0, 0.0, (4.0, 1000.0), (1.0, 400.0));
    c.forecast = Some(Forecasts {
        cpu: Predictive::gaussian(1.0, 0.1),
        mem: Predictive::gaussian(400.0, 50.0),
    });
    let a = app(1, 0.0, vec![c.clone()]);
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 1.0,
        mem_margin: 0.2,
        ..unfloored()
    };
    let t = component_target(&a, &c, 10_000.0, &cfg);
    // memory: 400 + 0.05 * 1000 + 50 + 0.2 * 400; CPU has no margin
    assert!((t.mem.margin_term - 80.0).abs() < 1e-9, "{:?}", t.mem);
    assert!(
        (t.alloc.mem_bytes - 580.0).abs() < 1e-9,
        "{}",
        t.alloc.mem_bytes
    );
    assert_eq!(t.cpu.margin_term, 0.0);
    assert!((t.alloc.cpu_cores - 1.3).abs() < 1e-12);
    assert!(t.mem.to_string().contains("margin_term 80"), "{}", t.mem);
    // Twice the level, twice the margin; the K1 term stays with the request.
    let mut twice = c.clone();
    twice.forecast = Some(Forecasts {
        cpu: Predictive::gaussian(1.0, 0.1),
        mem: Predictive::gaussian(800.0, 50.0),
    });
    let t2 = component_target(&a, &twice, 10_000.0, &cfg);
    assert!((t2.mem.margin_term - 160.0).abs() < 1e-9);
    assert_eq!(t2.mem.k1_term, t.mem.k1_term);
    // Risk-targeted memory ignores it.
    let risk = ShaperConfig {
        memory_risk: Some(0.01),
        ..cfg.clone()
    };
    assert_eq!(
        component_target(&a, &c, 10_000.0, &risk).mem.margin_term,
        0.0
    );
    // Off by default: the sizing line is unchanged.
    let off = component_target(
        &a,
        &c,
        10_000.0,
        &ShaperConfig {
            mem_margin: 0.0,
            ..cfg
        },
    );
    assert!(!off.mem.to_string().contains("margin"), "{}", off.mem);
}

#[test]
fn memory_risk_sizes_memory_from_the_predictive_tail() {
    let mut c = comp(1, Class::Core, 0, 0.0, (4.0, 1000.0), (1.0, 400.0));
    c.forecast = Some(Forecasts {
        cpu: Predictive::gaussian(1.0, 0.1),
        mem: Predictive::gaussian(400.0, 50.0),
    });
    c.usage = Resources::new(0.5, 300.0);
    let a = app(1, 0.0, vec![c.clone()]);
    // 1 - Phi(2) = 2.275%: memory = mean + 2 sigma, no K1 term; CPU keeps
    // the K1/K2 buffer.
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 3.0,
        memory_risk: Some(0.022_750_131_948_179_2),
        ..unfloored()
    };
    assert!((risk_to_level(0.022_750_131_948_179_2) - 2.0).abs() < 1e-9);
    let t = component_target(&a, &c, 10_000.0, &cfg);
    assert!(
        (t.alloc.mem_bytes - 500.0).abs() < 1e-6,
        "{}",
        t.alloc.mem_bytes
    );
    assert_eq!(t.mem.k1_term, 0.0);
    assert!((t.alloc.cpu_cores - 1.5).abs() < 1e-12);
    // A smaller risk never gives a smaller allocation.
    let mut last = 0.0;
    for risk in [0.25, 0.1, 0.01, 1e-3, 1e-5, 1e-9] {
        let t = component_target(
            &a,
            &c,
            10_000.0,
            &ShaperConfig {
                memory_risk: Some(risk),
                ..cfg.clone()
            },
        );
        assert!(t.alloc.mem_bytes >= last, "risk {risk}");
        last = t.alloc.mem_bytes;
    }
    // A calibrated predictive: the tail multiplier is the calibration's.
    let calibrated = Forecasts {
        cpu: Predictive::gaussian(1.0, 0.1),
        mem: Predictive {
            calibration: Some(std::sync::Arc::new(tailor_core::Calibration::gaussian())),
            ..Predictive::gaussian(400.0, 50.0)
        },
    };
    c.forecast = Some(calibrated);
    let t = component_target(&a, &c, 10_000.0, &cfg);
    assert!(
        (t.alloc.mem_bytes - 500.0).abs() < 1.0,
        "{}",
        t.alloc.mem_bytes
    );
}

/// Both `mem_shortfall` modes: on a host with room, `buffer` changes
/// nothing (a buffer of a few bytes on a 4,000-byte host is not cut to
/// whole pages).
#[test]
fn hysteresis_skips_small_changes_but_not_needed_growth() {
    for mem_shortfall in [MemShortfall::Evict, MemShortfall::Buffer] {
        hysteresis_case(mem_shortfall);
    }
}

fn hysteresis_case(mem_shortfall: MemShortfall) {
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
        mem_shortfall,
        ..unfloored()
    };
    let plan = decide(&view, 10_000.0, &cfg);
    assert_eq!(plan.actions.len(), 0, "{mem_shortfall:?}");
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
fn a_memory_shrink_takes_a_bounded_fraction_a_round() {
    // Request 1 GiB, forecast 0.1 GiB: the target is ~0.1 GiB.
    let c = comp(1, Class::Core, 0, 0.0, (1.0, GIB), (0.5, 0.1 * GIB));
    let view = ClusterView {
        hosts: vec![host(0, 8.0, 8.0 * GIB)],
        apps: vec![app(1, 0.0, vec![c])],
    };
    // f = 0.02 is below the 5% hysteresis: the whole change is judged,
    // then the shrink is bounded (it is not skipped for being small).
    for f in [1.0, 0.25, 0.02] {
        let cfg = ShaperConfig {
            mem_shrink_max_fraction: f,
            min_relative_change: 0.05,
            ..cfg0()
        };
        let plan = decide(&view, 10_000.0, &cfg);
        let to = match plan.resizes().next() {
            Some(Action::Resize { to, .. }) => *to,
            other => panic!("f = {f}: expected a resize, got {other:?}"),
        };
        let pages = |b: f64| (b / 4096.0).ceil() * 4096.0;
        assert_eq!(
            to.mem_bytes,
            pages((1.0 - f) * GIB).max(pages(0.1 * GIB)),
            "f = {f}"
        );
        // CPU is not bounded.
        assert!(to.cpu_cores <= 0.5 + 1e-9, "f = {f}: {to:?}");
    }
    // Growths are never held back.
    let mut grow = view.clone();
    grow.apps[0].components[0].allocation = Resources::new(1.0, 0.05 * GIB);
    let cfg = ShaperConfig {
        mem_shrink_max_fraction: 0.1,
        ..cfg0()
    };
    let plan = decide(&grow, 10_000.0, &cfg);
    match plan.resizes().next() {
        Some(Action::Resize { to, .. }) => assert!(to.mem_bytes >= 0.1 * GIB),
        other => panic!("expected a growth, got {other:?}"),
    };
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

/// Host 0 with `capacity`, and two applications (submitted at 0 and 10 s)
/// of one core component each, requesting 2 cores and 4 GiB, with
/// forecasts `fc_a` and `fc_b` (usage 90% of them).
fn two_apps_on_one_host(capacity: (f64, f64), fc_a: (f64, f64), fc_b: (f64, f64)) -> ClusterView {
    let one = |id: u64, submitted_s: f64, fc| {
        app(
            id,
            submitted_s,
            vec![comp(10 * id, Class::Core, 0, 0.0, (2.0, 4.0 * GIB), fc)],
        )
    };
    ClusterView {
        hosts: vec![host(0, capacity.0, capacity.1)],
        apps: vec![one(1, 0.0, fc_a), one(2, 10.0, fc_b)],
    }
}

/// A host short of CPU only: `evict` (the thesis) evicts the later
/// application; `share` keeps it, with its CPU cut to what is left and
/// the binding named; memory still evicts under `share`.
#[test]
fn cpu_shortfall_shares_cpu_and_evicts_only_for_memory() {
    let view = |mem_b: f64| two_apps_on_one_host((2.0, 8.0 * GIB), (1.5, 2.0 * GIB), (1.0, mem_b));
    let evict = ShaperConfig {
        cpu_shortfall: CpuShortfall::Evict,
        ..cfg0()
    };
    let plan = decide(&view(2.0 * GIB), 1000.0, &evict);
    assert_eq!(plan.summary.evicted_apps, 1);
    assert_eq!(plan.actions[1].app(), AppId(2));

    let share = ShaperConfig {
        cpu_shortfall: CpuShortfall::Share,
        ..cfg0()
    };
    let plan = decide(&view(2.0 * GIB), 1000.0, &share);
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_cpu, 1);
    let squeezed = plan
        .resizes()
        .find(|a| a.app() == AppId(2))
        .expect("app 2 resized");
    let Action::Resize {
        to, explanation, ..
    } = squeezed
    else {
        unreachable!()
    };
    assert!((to.cpu_cores - 0.5).abs() < 1e-9, "{to:?}");
    assert_eq!(to.mem_bytes, 2.0 * GIB);
    assert_eq!(explanation.cpu.bound, Bound::HostShare);
    let b = explanation.binding.as_deref().expect("binding");
    assert_eq!(b.resource, Resource::Cpu);
    assert!((b.needed - 1.0).abs() < 1e-9 && (b.free - 0.5).abs() < 1e-9);
    assert!(explanation.to_string().contains("left on the host"));

    // Memory that does not fit evicts, whatever `cpu_shortfall` says.
    let plan = decide(&view(7.0 * GIB), 1000.0, &share);
    assert_eq!(plan.summary.evicted_apps, 1);
    let Some(Action::EvictApplication { explanation, .. }) = plan.evictions().next() else {
        panic!("no eviction: {plan:#?}")
    };
    assert_eq!(
        explanation.binding.as_deref().map(|b| b.resource),
        Some(Resource::Mem)
    );
}

/// A host whose memory fits every component's need (current usage and
/// forecast mean) but not every buffer: `evict` (the thesis) evicts the
/// later application; `buffer` keeps it, places the needs first and gives
/// the buffers out in scheduler order, so the later application's buffer
/// is cut to what is left (explained, binding named); when the needs
/// themselves do not fit, `buffer` evicts as before.
#[test]
fn mem_shortfall_buffer_cuts_buffers_before_evicting() {
    // Forecast means 3 GiB and `mean_b` (usage 90% of that), K1 = 0.25 of
    // a 4 GiB request: memory targets 4 GiB each (the request).
    let view = |mean_b: f64, host_b: f64| {
        two_apps_on_one_host((8.0, host_b), (1.0, 3.0 * GIB), (1.0, mean_b))
    };
    let cfg = |m: MemShortfall| ShaperConfig {
        k1: 0.25,
        mem_shortfall: m,
        ..cfg0()
    };
    let plan = decide(
        &view(3.5 * GIB, 7.5 * GIB),
        1000.0,
        &cfg(MemShortfall::Evict),
    );
    assert_eq!(plan.summary.evicted_apps, 1, "{plan:#?}");
    assert_eq!(plan.actions.last().map(|a| a.app()), Some(AppId(2)));

    let plan = decide(
        &view(3.5 * GIB, 7.5 * GIB),
        1000.0,
        &cfg(MemShortfall::Buffer),
    );
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 1);
    let to_of = |plan: &Plan, id: u64| {
        plan.resizes().find_map(|a| match a {
            Action::Resize {
                component,
                to,
                explanation,
                ..
            } if *component == ComponentId(id) => Some((*to, explanation.clone())),
            _ => None,
        })
    };
    // App 1 keeps its whole memory target (it comes first); app 2 gets
    // the remaining 3.5 GiB: its need, none of its buffer.
    let (to, _) = to_of(&plan, 10).expect("app 1 resized (CPU)");
    assert_eq!(to.mem_bytes, 4.0 * GIB);
    let (to, explanation) = to_of(&plan, 20).expect("app 2 resized");
    assert_eq!(to.mem_bytes, 3.5 * GIB);
    assert_eq!(explanation.mem.bound, Bound::HostShare);
    let b = explanation.binding.as_deref().expect("binding");
    assert_eq!(b.resource, Resource::Mem);
    assert_eq!((b.needed, b.free), (4.0 * GIB, 3.5 * GIB));
    assert!(explanation.to_string().contains("left on the host"));

    // Needs of 3 + 3.6 GiB on 6.9 GiB: both fit, and the 0.3 GiB left
    // goes to the earlier application's buffer.
    let plan = decide(
        &view(3.6 * GIB, 6.9 * GIB),
        1000.0,
        &cfg(MemShortfall::Buffer),
    );
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 2);
    let mem_of = |id: u64| to_of(&plan, id).expect("resized").0.mem_bytes;
    assert!((mem_of(10) - 3.3 * GIB).abs() < 4096.0);
    assert!((mem_of(20) - 3.6 * GIB).abs() < 4096.0);

    // Needs over the host (3 + 3.6 GiB on 6.5): the later application
    // goes, as under `evict`.
    let plan = decide(
        &view(3.6 * GIB, 6.5 * GIB),
        1000.0,
        &cfg(MemShortfall::Buffer),
    );
    assert_eq!(plan.summary.evicted_apps, 1, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 0);
}

/// `share` never leaves a squeezed component without CPU: on a host with
/// no CPU left it gets the floor (Docker's smallest `--cpus`).
#[test]
fn a_squeezed_component_keeps_the_cpu_floor() {
    let view = ClusterView {
        hosts: vec![host(0, 2.0, 8.0 * GIB)],
        apps: vec![
            app(
                1,
                0.0,
                vec![comp(
                    10,
                    Class::Core,
                    0,
                    0.0,
                    (2.0, 1.0 * GIB),
                    (2.0, 1.0 * GIB),
                )],
            ),
            app(
                2,
                10.0,
                vec![comp(
                    20,
                    Class::Core,
                    0,
                    0.0,
                    (2.0, 1.0 * GIB),
                    (1.0, 1.0 * GIB),
                )],
            ),
        ],
    };
    let plan = decide(&view, 1000.0, &cfg0());
    assert_eq!(plan.evictions().count(), 0);
    let to = plan
        .resizes()
        .find_map(|a| match a {
            Action::Resize { component, to, .. } if *component == ComponentId(20) => Some(*to),
            _ => None,
        })
        .expect("component 20 resized");
    assert_eq!(to.cpu_cores, MIN_SHARE_CPU_CORES);
}

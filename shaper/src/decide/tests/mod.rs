//! Unit tests of `decide()`: planning and evictions here; targets and
//! hysteresis in `sizing`, hosts short of CPU or memory in `shortfall`.

use super::*;
use crate::model::{AppId, ComponentId, Forecasts, HostId};

mod shortfall;
mod sizing;

pub(super) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// The kernel's memory step (a whole MiB, `limits::MEM_STEP_BYTES`):
/// tests whose arithmetic is in small numbers count memory in steps, as
/// the kernel allocates it.
pub(super) const STEP: f64 = crate::limits::MEM_STEP_BYTES;

pub(super) fn comp(
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
            mem_hold_bytes: 0.0,
            mem_small_hold_bytes: 0.0,
        }),
        protected: false,
        work_done_s: 0.0,
        restarts_alone: false,
        mem_floor_bytes: 0.0,
        oom_floor_bytes: 0.0,
    }
}

pub(super) fn app(id: u64, submitted_s: f64, components: Vec<Component>) -> Application {
    Application {
        tenant: 0,
        id: AppId(id),
        submitted_s,
        priority: 0,
        failures: 0,
        expected_remaining_s: None,
        components,
    }
}

pub(super) fn host(id: u64, cpu: f64, mem: f64) -> Host {
    Host {
        id: HostId(id),
        capacity: Resources::new(cpu, mem),
    }
}

/// Defaults without floors (these tests use small byte counts).
pub(super) fn unfloored() -> ShaperConfig {
    ShaperConfig {
        min_cpu_cores: 0.0,
        min_mem_bytes: 0.0,
        ..ShaperConfig::uniform()
    }
}

pub(super) fn cfg0() -> ShaperConfig {
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
        mem_hold_bytes: 0.0,
        mem_small_hold_bytes: 0.0,
    });
    let plan = decide(&spiked, 10_000.0, &cfg0());
    let ev: Vec<&Action> = plan.evictions().collect();
    assert_eq!(ev.len(), 1, "{:#?}", plan.actions);
    // Dropping an elastic component is not a failure of its application,
    // nor is a resize, in every form a caller applies.
    assert!(plan.actions.iter().all(|a| !a.fails_application()));
    assert!(plan.component_actions().all(|a| !a.fails_application()));
    assert!(!crate::node::NodeActionKind::Evict { whole_app: false }.fails_application());
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

/// Two hosts; app 1 holds 80 of host 1's 100 memory units, where app
/// 2's core component 21 forecasts 30 (its 20 and 22 on host 0 fit).
fn host_1_short() -> ClusterView {
    ClusterView {
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
    }
}

#[test]
fn core_that_does_not_fit_evicts_whole_app_across_hosts() {
    let view = host_1_short();
    let plan = decide(&view, 10_000.0, &cfg0());
    let ev: Vec<&Action> = plan.evictions().collect();
    assert_eq!(ev.len(), 1, "{:#?}", plan.actions);
    // Evicting the whole application is a failure of it, once per
    // component as callers apply it.
    assert!(ev[0].fails_application());
    let failing = plan.component_actions().filter(|a| a.fails_application());
    assert_eq!(failing.count(), 3);
    assert!(crate::node::NodeActionKind::Evict { whole_app: true }.fails_application());
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
fn a_service_task_that_does_not_fit_is_evicted_alone() {
    // `host_1_short` with app 2's components all core and restarting
    // alone (a service's tasks): the task that does not fit goes alone,
    // and the service keeps the others; that is not a failure of it.
    let mut view = host_1_short();
    for c in &mut view.apps[1].components {
        c.class = Class::Core;
        c.restarts_alone = true;
    }
    let plan = decide(&view, 10_000.0, &cfg0());
    let ev: Vec<&Action> = plan.evictions().collect();
    assert_eq!(ev.len(), 1, "{:#?}", plan.actions);
    match ev[0] {
        Action::EvictComponent {
            app,
            component,
            host,
            explanation,
        } => {
            assert_eq!(
                (*app, *component, *host),
                (AppId(2), ComponentId(21), HostId(1))
            );
            let b = explanation.binding.as_deref().copied().expect("binding");
            assert_eq!((b.host, b.resource), (HostId(1), Resource::Mem));
        }
        other => panic!("expected one task's eviction, got {other:?}"),
    }
    assert!(!ev[0].fails_application());
    // Its other tasks are kept (and resized).
    let resized: Vec<ComponentId> = plan
        .resizes()
        .filter(|a| a.app() == AppId(2))
        .map(|a| match a {
            Action::Resize { component, .. } => *component,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(resized, vec![ComponentId(20), ComponentId(22)]);
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

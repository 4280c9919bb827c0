//! Unit tests of `decide()`: a component's target (buffer terms, margin, risk),
//! hysteresis and bounded shrinks.

use super::*;

/// A core component (request 4 cores, 1000 steps) with Gaussian forecasts
/// of 1 core (sigma 0.1) and 400 steps (sigma 50).
fn forecast_component() -> Component {
    let mut c = comp(
        1,
        Class::Core,
        0,
        0.0,
        (4.0, 1000.0 * STEP),
        (1.0, 400.0 * STEP),
    );
    c.forecast = Some(Forecasts {
        cpu: Predictive::gaussian(1.0, 0.1),
        mem: Predictive::gaussian(400.0 * STEP, 50.0 * STEP),
        mem_hold_bytes: 0.0,
        mem_small_hold_bytes: 0.0,
    });
    c
}

#[test]
fn buffer_terms_and_clamps() {
    let mut c = forecast_component();
    c.usage = Resources::new(0.5, 300.0 * STEP);
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
    assert_eq!(t.alloc.mem_bytes, (400.0 + 50.0 + 150.0) * STEP);
    assert_eq!(t.cpu.bound, Bound::Buffer);
    // Ceiling: request.
    let mut big = c.clone();
    big.forecast = Some(Forecasts {
        cpu: Predictive::point(9.0),
        mem: Predictive::point(10.0 * STEP),
        mem_hold_bytes: 0.0,
        mem_small_hold_bytes: 0.0,
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
    // Usage floor, above the ceiling too, in whole steps.
    let mut hot = big.clone();
    hot.usage = Resources::new(0.1, 500.5 * STEP);
    let t = component_target(&a, &hot, 10_000.0, &cfg);
    assert_eq!(t.alloc.mem_bytes, 501.0 * STEP);
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
    let c = forecast_component();
    let a = app(1, 0.0, vec![c.clone()]);
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 1.0,
        mem_margin: 0.2,
        ..unfloored()
    };
    let t = component_target(&a, &c, 10_000.0, &cfg);
    // memory: 400 + 0.05 * 1000 + 50 + 0.2 * 400; CPU has no margin
    assert_eq!(t.mem.margin_term, 80.0 * STEP, "{:?}", t.mem);
    assert_eq!(t.alloc.mem_bytes, 580.0 * STEP);
    assert_eq!(t.cpu.margin_term, 0.0);
    assert!((t.alloc.cpu_cores - 1.3).abs() < 1e-12);
    // 80 steps, in bytes (as the explanation writes 1e6 and over)
    let margin = format!("margin_term {:.4e}", 80.0 * STEP);
    assert!(t.mem.to_string().contains(&margin), "{}", t.mem);
    // Twice the level, twice the margin; the K1 term stays with the request.
    let mut twice = c.clone();
    twice.forecast = Some(Forecasts {
        cpu: Predictive::gaussian(1.0, 0.1),
        mem: Predictive::gaussian(800.0 * STEP, 50.0 * STEP),
        mem_hold_bytes: 0.0,
        mem_small_hold_bytes: 0.0,
    });
    let t2 = component_target(&a, &twice, 10_000.0, &cfg);
    assert_eq!(t2.mem.margin_term, 160.0 * STEP);
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
fn a_small_applications_components_get_the_small_app_buffer() {
    let c = forecast_component();
    let lone = app(1, 0.0, vec![c.clone()]);
    let pair = app(1, 0.0, vec![c.clone(), c.clone()]);
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 1.0,
        small_app_components: 2,
        small_app_k1: 0.3,
        ..unfloored()
    };
    // memory: 400 + 0.3 * 1000 + 50 alone; 400 + 0.05 * 1000 + 50 in a pair
    let t = component_target(&lone, &c, 10_000.0, &cfg);
    assert_eq!(t.mem.k1_term, 300.0 * STEP, "{:?}", t.mem);
    assert_eq!(t.alloc.mem_bytes, 750.0 * STEP, "{:?}", t.alloc);
    let t = component_target(&pair, &c, 10_000.0, &cfg);
    assert_eq!(t.mem.k1_term, 50.0 * STEP, "{:?}", t.mem);
    assert_eq!(t.alloc.mem_bytes, 500.0 * STEP, "{:?}", t.alloc);
    // A large application with one core component: the core one is its
    // small failure set and gets the small-application buffer, in the
    // target and in the plan; the elastic ones keep K1.
    let mut core = c.clone();
    core.class = Class::Core;
    let mut elastic = c.clone();
    elastic.class = Class::Elastic;
    let mut comps = vec![core.clone()];
    comps.extend((0..3).map(|_| elastic.clone()));
    for (i, x) in comps.iter_mut().enumerate() {
        x.id = ComponentId(i as u64);
    }
    let job = app(1, 0.0, comps);
    let k1_term = |x: &Component| component_target(&job, x, 10_000.0, &cfg).mem.k1_term;
    assert_eq!(k1_term(&job.components[0]), 300.0 * STEP);
    assert_eq!(k1_term(&job.components[1]), 50.0 * STEP);
    let view = ClusterView {
        hosts: vec![host(c.host.0, 100.0, 1e6 * STEP)],
        apps: vec![job.clone()],
    };
    let plan = decide(&view, 10_000.0, &cfg);
    for (id, want) in [(0, 300.0), (1, 50.0)] {
        let e = resize_explanation(&plan, id);
        assert_eq!(e.mem.k1_term, want * STEP, "{id}: {:?}", e.mem);
    }
}

#[test]
fn the_k1_term_follows_what_a_kill_costs_in_the_target_and_the_plan() {
    // A job of 5 components (not small), 2 core and 3 elastic: a core kill
    // fails it (1.2 K1), an elastic kill loses one task's work (0.4 K1).
    // Its service twin restarts each task alone: K1 for all.
    let c = forecast_component();
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 1.0,
        small_app_components: 2,
        small_app_k1: 0.3,
        core_k1_factor: 1.2,
        elastic_k1_factor: 0.4,
        ..unfloored()
    };
    let comps: Vec<Component> = (0..5)
        .map(|i| Component {
            id: ComponentId(i),
            class: if i < 2 { Class::Core } else { Class::Elastic },
            ..c.clone()
        })
        .collect();
    let job = app(1, 0.0, comps.clone());
    let service = app(
        2,
        0.0,
        comps
            .iter()
            .map(|x| Component {
                id: ComponentId(x.id.0 + 10),
                class: Class::Core,
                restarts_alone: true,
                ..x.clone()
            })
            .collect(),
    );
    let close = |bytes: f64, steps: f64| (bytes / STEP - steps).abs() < 1e-9;
    let k1_term =
        |a: &Application, x: &Component| component_target(a, x, 10_000.0, &cfg).mem.k1_term;
    assert!(close(k1_term(&job, &job.components[0]), 60.0));
    assert!(close(k1_term(&job, &job.components[4]), 20.0));
    assert!(close(k1_term(&service, &service.components[0]), 50.0));
    let view = ClusterView {
        hosts: vec![host(c.host.0, 100.0, 1e6 * STEP)],
        apps: vec![job, service],
    };
    let plan = decide(&view, 10_000.0, &cfg);
    for (id, want) in [
        (0, 60.0),
        (1, 60.0),
        (2, 20.0),
        (4, 20.0),
        (10, 50.0),
        (14, 50.0),
    ] {
        let e = resize_explanation(&plan, id);
        assert!(close(e.mem.k1_term, want), "{id}: {:?}", e.mem);
    }
}

/// `young_core_k1`: a core component younger than `young_core_s` gets it
/// as its K1 term, in the target and the plan; its elastic sibling, a
/// service's task (restarts alone) and an older core component do not.
#[test]
fn a_young_core_component_gets_the_young_k1_in_the_target_and_the_plan() {
    let c = forecast_component();
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 1.0,
        small_app_components: 0,
        core_k1_factor: 1.0,
        elastic_k1_factor: 1.0,
        young_core_k1: 0.15,
        young_core_s: 3600.0,
        ..unfloored()
    };
    let now = 10_000.0;
    let at = |i: u64, class: Class, started_s: f64, restarts_alone: bool| Component {
        id: ComponentId(i),
        class,
        started_s,
        restarts_alone,
        ..c.clone()
    };
    let job = app(
        1,
        0.0,
        vec![
            at(0, Class::Core, now - 1000.0, false),
            at(1, Class::Elastic, now - 1000.0, false),
            at(2, Class::Core, now - 3600.0, false),
            at(3, Class::Core, now - 1000.0, true),
        ],
    );
    let close = |bytes: f64, steps: f64| (bytes / STEP - steps).abs() < 1e-9;
    for (i, want) in [(0, 150.0), (1, 50.0), (2, 50.0), (3, 50.0)] {
        let t = component_target(&job, &job.components[i], now, &cfg);
        assert!(close(t.mem.k1_term, want), "{i}: {:?}", t.mem);
    }
    let view = ClusterView {
        hosts: vec![host(c.host.0, 100.0, 1e6 * STEP)],
        apps: vec![job],
    };
    let plan = decide(&view, now, &cfg);
    let e = resize_explanation(&plan, 0);
    assert!(close(e.mem.k1_term, 150.0), "{:?}", e.mem);
}

#[test]
fn an_applications_k1_follows_its_memory_in_the_target_and_the_plan() {
    // Each component requests 1000 steps; the reference is e x 1000 steps,
    // so a lone component's application gets 0.25 x ln(e) = 0.25, a pair's
    // 0.25 x ln(e / 2), four components' the floor k1 = 0.05.
    let c = forecast_component();
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 1.0,
        app_mem_ref_gib: std::f64::consts::E * 1000.0 * STEP / GIB,
        app_k1_slope: 0.25,
        ..unfloored()
    };
    let with = |n: u64| {
        let comps = (0..n)
            .map(|i| {
                let mut x = c.clone();
                x.id = ComponentId(i + 1);
                x
            })
            .collect();
        app(1, 0.0, comps)
    };
    let expected = [(1, 250.0), (2, 250.0 * (1.0 - 2f64.ln())), (4, 50.0)];
    for (n, k1_term) in expected {
        let a = with(n);
        let t = component_target(&a, &a.components[0], 10_000.0, &cfg);
        assert!(
            (t.mem.k1_term / STEP - k1_term).abs() < 1e-6,
            "{n}: {:?}",
            t.mem
        );
        // decide() works the application's K1 out once: the same terms.
        let view = ClusterView {
            hosts: vec![host(0, 64.0, 1e6 * STEP)],
            apps: vec![a.clone()],
        };
        let plan = decide(&view, 10_000.0, &cfg);
        let sizes: Vec<f64> = plan
            .actions
            .iter()
            .filter_map(|x| match x {
                Action::Resize { explanation, .. } => Some(explanation.mem.k1_term),
                _ => None,
            })
            .collect();
        assert_eq!(sizes.len(), n as usize, "{n}: {:#?}", plan.actions);
        for k in sizes {
            assert!((k / STEP - k1_term).abs() < 1e-6, "{n}: {k}");
        }
    }
}

#[test]
fn a_relative_reference_follows_the_views_memory_weighted_median() {
    // A: four components of 1000 steps, B: one. The memory-weighted median
    // application is A (4000 steps); with app_mem_ref_rel = e / 4 the
    // reference is e x 1000 steps: B gets 0.25 x ln(e) = 0.25, A the floor.
    let c = forecast_component();
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 1.0,
        app_mem_ref_rel: std::f64::consts::E / 4.0,
        app_k1_slope: 0.25,
        ..unfloored()
    };
    cfg.validate().expect("valid");
    let comps = |first: u64, n: u64| -> Vec<Component> {
        (first..first + n)
            .map(|i| {
                let mut x = c.clone();
                x.id = ComponentId(i);
                x
            })
            .collect()
    };
    let view = ClusterView {
        hosts: vec![host(0, 64.0, 1e6 * STEP)],
        apps: vec![app(1, 0.0, comps(1, 4)), app(2, 0.0, comps(10, 1))],
    };
    let plan = decide(&view, 10_000.0, &cfg);
    let mut k1_terms: Vec<(u64, f64)> = plan
        .actions
        .iter()
        .filter_map(|x| match x {
            Action::Resize {
                component,
                explanation,
                ..
            } => Some((component.0, explanation.mem.k1_term)),
            _ => None,
        })
        .collect();
    k1_terms.sort_by_key(|&(id, _)| id);
    assert_eq!(k1_terms.len(), 5, "{:#?}", plan.actions);
    for (id, k) in k1_terms {
        let want = if id == 10 { 250.0 } else { 50.0 };
        assert!((k / STEP - want).abs() < 1e-6, "component {id}: {k}");
    }
    // Alone, B is its own view's median: 0.25 x ln(e / 4) < k1, the floor.
    let b = app(2, 0.0, comps(10, 1));
    let t = component_target(&b, &b.components[0], 10_000.0, &cfg);
    assert!((t.mem.k1_term / STEP - 50.0).abs() < 1e-6, "{:?}", t.mem);
}

#[test]
fn the_size_rules_leave_a_service_at_k1_but_a_lone_task_is_small() {
    // A service of two tasks whose kills restart them alone keeps k1; a
    // batch task alone is a small application under both size rules; a
    // lone service task too under the small-application rule (its kill
    // takes the whole service down), not under the memory rule.
    let mut alone = forecast_component();
    alone.restarts_alone = true;
    let mut twin = alone.clone();
    twin.id = ComponentId(4);
    let mut batch = forecast_component();
    batch.id = ComponentId(2);
    let mut lone = alone.clone();
    lone.id = ComponentId(3);
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 1.0,
        small_app_components: 3,
        small_app_k1: 0.3,
        // STEP GiB: reference / request (1000 steps) = 1 GiB / 1000 B
        app_mem_ref_gib: STEP,
        app_k1_slope: 0.05,
        ..unfloored()
    };
    cfg.validate().expect("valid");
    let view = ClusterView {
        hosts: vec![host(0, 64.0, 1e6 * STEP)],
        apps: vec![
            app(1, 0.0, vec![alone.clone(), twin]),
            app(2, 0.0, vec![batch]),
            app(3, 0.0, vec![lone]),
        ],
    };
    assert!(view.apps[0].restarts_alone() && !view.apps[1].restarts_alone());
    let plan = decide(&view, 10_000.0, &cfg);
    let k1_term = |id: u64| {
        plan.actions
            .iter()
            .find_map(|x| match x {
                Action::Resize {
                    component,
                    explanation,
                    ..
                } if component.0 == id => Some(explanation.mem.k1_term),
                _ => None,
            })
            .expect("resized")
    };
    // 0.05 x 1000 steps for the service's tasks; the batch task: the
    // larger of 0.3 and 0.05 x ln(1 GiB / 1000 B) = 0.69, x 1000 steps;
    // the lone service task 0.3 x 1000 steps.
    let k1_steps = |id: u64| k1_term(id) / STEP;
    assert!((k1_steps(1) - 50.0).abs() < 1e-6, "{}", k1_steps(1));
    assert!((k1_steps(4) - 50.0).abs() < 1e-6, "{}", k1_steps(4));
    // (its target, above its request, is not a resize)
    let batch_k1 = 0.05 * (GIB / 1000.0f64).ln();
    let t = component_target(&view.apps[1], &view.apps[1].components[0], 10_000.0, &cfg);
    assert!(
        (t.mem.k1_term / STEP - 1000.0 * batch_k1).abs() < 1e-6,
        "{:?}",
        t.mem
    );
    assert!((k1_steps(3) - 300.0).abs() < 1e-6, "{}", k1_steps(3));
    let t = component_target(&view.apps[0], &alone, 10_000.0, &cfg);
    assert!((t.mem.k1_term / STEP - 50.0).abs() < 1e-6, "{:?}", t.mem);
    // An application with one component of each kind is one a kill can
    // fail: the rules apply.
    let mixed = app(3, 0.0, vec![alone.clone(), forecast_component()]);
    assert!(!mixed.restarts_alone());
}

#[test]
fn a_small_applications_components_are_sized_from_the_longer_hold() {
    // Every component's forecast: 400 bytes, its week's peak 700. A lone
    // service task and the one core component of a job with elastic ones
    // are small and sized from 700; a service of two tasks, the job's
    // elastic components and a large configuration's lone task from 400.
    let week = |mut c: Component, id: u64, class: Class, alone: bool| {
        c.id = ComponentId(id);
        c.class = class;
        c.restarts_alone = alone;
        if let Some(f) = c.forecast.as_mut() {
            f.mem_small_hold_bytes = 700.0 * STEP;
        }
        c
    };
    let c = forecast_component();
    let cfg = ShaperConfig {
        k1: 0.05,
        k2: 1.0,
        small_app_components: 3,
        small_app_k1: 0.1,
        ..unfloored()
    };
    let view = ClusterView {
        hosts: vec![host(0, 64.0, 1e6 * STEP)],
        apps: vec![
            app(1, 0.0, vec![week(c.clone(), 1, Class::Core, true)]),
            app(
                2,
                0.0,
                vec![
                    week(c.clone(), 2, Class::Core, true),
                    week(c.clone(), 3, Class::Core, true),
                ],
            ),
            app(
                3,
                0.0,
                vec![
                    week(c.clone(), 4, Class::Core, false),
                    week(c.clone(), 5, Class::Elastic, false),
                    week(c.clone(), 6, Class::Elastic, false),
                    week(c.clone(), 7, Class::Elastic, false),
                ],
            ),
        ],
    };
    let mem = |cfg: &ShaperConfig, id: u64| {
        decide(&view, 10_000.0, cfg)
            .resizes()
            .find_map(|x| match x {
                Action::Resize { component, to, .. } if component.0 == id => Some(to.mem_bytes),
                _ => None,
            })
            .expect("resized")
    };
    // 700 + 0.1 x 1000 + 50 when small; 400 + 0.05 x 1000 + 50 if not
    for (id, want) in [(1, 850.0), (2, 500.0), (3, 500.0), (4, 850.0), (5, 500.0)] {
        assert_eq!(mem(&cfg, id), want * STEP, "{id}");
    }
    let none_small = ShaperConfig {
        small_app_components: 0,
        ..cfg.clone()
    };
    assert_eq!(mem(&none_small, 1), 500.0 * STEP);
}

#[test]
fn memory_risk_sizes_memory_from_the_predictive_tail() {
    let mut c = forecast_component();
    c.usage = Resources::new(0.5, 300.0 * STEP);
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
    assert_eq!(t.alloc.mem_bytes, 500.0 * STEP);
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
            ..Predictive::gaussian(400.0 * STEP, 50.0 * STEP)
        },
        mem_hold_bytes: 0.0,
        mem_small_hold_bytes: 0.0,
    };
    c.forecast = Some(calibrated);
    let t = component_target(&a, &c, 10_000.0, &cfg);
    assert!(
        (t.alloc.mem_bytes - 500.0 * STEP).abs() <= STEP,
        "{}",
        t.alloc.mem_bytes
    );
}

/// Both `mem_shortfall` modes: on a host with room, `buffer` changes
/// nothing.
#[test]
fn hysteresis_skips_small_changes_but_not_needed_growth() {
    for mem_shortfall in [MemShortfall::Evict, MemShortfall::Buffer] {
        hysteresis_case(mem_shortfall);
    }
}

fn hysteresis_case(mem_shortfall: MemShortfall) {
    let mut c = comp(
        1,
        Class::Core,
        0,
        0.0,
        (4.0, 1000.0 * STEP),
        (2.0, 500.0 * STEP),
    );
    c.allocation = Resources::new(2.05, 510.0 * STEP);
    c.usage = Resources::new(1.0, 400.0 * STEP);
    let view = ClusterView {
        hosts: vec![host(0, 8.0, 4000.0 * STEP)],
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
    view2.apps[0].components[0].allocation = Resources::new(2.05, 490.0 * STEP);
    view2.apps[0].components[0].usage = Resources::new(1.0, 495.0 * STEP);
    let plan = decide(&view2, 10_000.0, &cfg);
    assert_eq!(plan.resizes().count(), 1, "{:#?}", plan.actions);
    // A small memory growth towards the forecast (usage still below the
    // allocation) is applied too: memory growths are never held back.
    let mut view3 = view.clone();
    view3.apps[0].components[0].allocation = Resources::new(2.05, 495.0 * STEP);
    view3.apps[0].components[0].usage = Resources::new(1.0, 400.0 * STEP);
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
        let steps = |b: f64| (b / STEP).ceil() * STEP;
        assert_eq!(
            to.mem_bytes,
            steps((1.0 - f) * GIB).max(steps(0.1 * GIB)),
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

/// The explanation of component `id`'s resize in `plan`.
fn resize_explanation(plan: &Plan, id: u64) -> Explanation {
    plan.resizes()
        .find_map(|a| match a {
            Action::Resize {
                component,
                explanation,
                ..
            } if *component == ComponentId(id) => Some(explanation.clone()),
            _ => None,
        })
        .expect("resized")
}

/// QA C7: a memory target creeping up by two 4 KiB pages a round (the
/// calibrated band of a flat 60 MiB container widening) was a resize in
/// every round. Whole MiB change the limit once per MiB crossed: over 256
/// rounds (2 MiB of creep), at most 3 resizes, and the allocation never
/// falls below the target.
#[test]
fn a_memory_target_creeping_by_pages_changes_the_limit_once_per_step() {
    let (kib, mib) = (1024.0, 1024.0 * 1024.0);
    let mut c = comp(1, Class::Core, 0, 0.0, (1.0, 256.0 * mib), (0.1, 0.0));
    let cfg = ShaperConfig {
        min_relative_change: 0.05,
        ..cfg0()
    };
    let mut resizes = 0;
    for round in 0..256u32 {
        let mean = 60.0 * mib + f64::from(round) * 8.0 * kib;
        c.forecast = Some(Forecasts {
            cpu: Predictive::point(0.1),
            mem: Predictive::point(mean),
            mem_hold_bytes: 0.0,
            mem_small_hold_bytes: 0.0,
        });
        c.usage = Resources::new(0.05, 0.9 * mean);
        let view = ClusterView {
            hosts: vec![host(0, 8.0, 4.0 * GIB)],
            apps: vec![app(1, 0.0, vec![c.clone()])],
        };
        let plan = decide(&view, 10_000.0 + f64::from(round), &cfg);
        if let Some(Action::Resize { to, .. }) = plan.resizes().next() {
            if round > 0 {
                resizes += 1;
            }
            c.allocation = *to;
        }
        assert!(
            c.allocation.mem_bytes >= mean,
            "round {round}: {} < {mean}",
            c.allocation.mem_bytes
        );
        assert_eq!(c.allocation.mem_bytes % STEP, 0.0, "round {round}");
    }
    assert!((1..=3).contains(&resizes), "{resizes} resizes");
}

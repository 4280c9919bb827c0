use super::*;
use crate::config::{ForecasterSource, SimConfig};
use shaper::Policy;

fn pt(fam: Family, failed: f64, mem: f64) -> Point {
    Point {
        forecaster: fam,
        sizing: Sizing::K1k2,
        params: BTreeMap::new(),
        failed_app_fraction: failed,
        oom_component_day_fraction: failed / 2.0,
        mem_alloc_gib_h: mem,
        oracle_capture: oracle_capture(100.0, 50.0, mem),
        ci95: None,
    }
}

fn frontier(points: Vec<Point>) -> Frontier {
    Frontier {
        baseline: BaselineFigures {
            failed_app_fraction: 0.0,
            mem_alloc_gib_h: 100.0,
        },
        oracle_mem_alloc_gib_h: 50.0,
        points,
        workload: "w".into(),
        policy: "pessimistic".into(),
        seeds: vec![0],
    }
}

#[test]
fn reserved_memory_and_component_days_are_exact() {
    use datasets::workload::*;
    let gib = 1024.0 * 1024.0 * 1024.0;
    let usage = UsageSeries::new(300.0, Shape::constant(0.5), Shape::constant(gib));
    let comp = |work_s: f64| {
        ComponentSpec::new(
            Class::Core,
            Resources::new(1.0, 2.0 * gib),
            work_s,
            usage.clone(),
        )
    };
    let wl = Workload {
        name: "two apps".into(),
        hosts: vec![HostSpec {
            capacity: Resources::new(4.0, 8.0 * gib),
        }],
        apps: vec![
            AppSpec {
                id: 1,
                arrival_s: 0.0,
                priority: 0,
                components: vec![comp(3600.0)],
            },
            AppSpec {
                id: 2,
                arrival_s: 86_000.0,
                priority: 0,
                components: vec![comp(1800.0)],
            },
        ],
    };
    let cfg: SimConfig = toml::from_str("[shaper]\npolicy = \"baseline\"").expect("config");
    let s = simulate(&wl, &cfg, None).expect("run").summary;
    // 2 GiB for 1 h + 2 GiB for 0.5 h
    assert!(
        (s.mem_alloc_gib_h - 3.0).abs() < 1e-9,
        "{}",
        s.mem_alloc_gib_h
    );
    // the second app spans the first day boundary: 1 + 2 component-days
    let m = simulate(&wl, &cfg, None).expect("run").metrics;
    assert_eq!(m.component_days, 3);
    assert_eq!(m.oom_component_days, 0);
    assert_eq!(s.oom_component_day_fraction, 0.0);
    assert!((s.cluster_mem_slack - (s.mean_alloc_mem_frac - s.mean_used_mem_frac)).abs() < 1e-12);
}

#[test]
fn the_default_budget_measure_follows_what_a_kill_costs() {
    use datasets::workload::*;
    let usage = UsageSeries::new(300.0, Shape::constant(0.5), Shape::constant(1e9));
    let comp = |r: OomRestart| ComponentSpec {
        oom_restart: r,
        ..ComponentSpec::new(Class::Core, Resources::new(1.0, 2e9), 600.0, usage.clone())
    };
    let wl = |rs: &[OomRestart]| Workload {
        name: "w".into(),
        hosts: Vec::new(),
        apps: vec![AppSpec {
            id: 1,
            arrival_s: 0.0,
            priority: 0,
            components: rs.iter().map(|&r| comp(r)).collect(),
        }],
    };
    let (alone, app) = (OomRestart::Component, OomRestart::Application);
    let m = BudgetMeasure::for_workload;
    // services (every task restarts alone): OOM-hit component-days
    assert_eq!(
        m(&wl(&[alone, alone]), None),
        BudgetMeasure::OomComponentDays
    );
    // one batch component is enough for failed applications
    assert_eq!(m(&wl(&[alone, app]), None), BudgetMeasure::FailedApps);
    assert_eq!(m(&wl(&[]), None), BudgetMeasure::FailedApps);
    // the config's override wins over the workload's own semantics
    assert_eq!(m(&wl(&[app]), Some(alone)), BudgetMeasure::OomComponentDays);
    assert_eq!(m(&wl(&[alone]), Some(app)), BudgetMeasure::FailedApps);
}

#[test]
fn capture_is_zero_at_baseline_one_at_oracle() {
    assert_eq!(oracle_capture(100.0, 50.0, 100.0), 0.0);
    assert_eq!(oracle_capture(100.0, 50.0, 50.0), 1.0);
    assert_eq!(oracle_capture(100.0, 50.0, 75.0), 0.5);
    assert!(oracle_capture(100.0, 100.0, 90.0).is_nan());
}

#[test]
fn pareto_keeps_only_undominated_points() {
    let f = frontier(vec![
        pt(Family::Gp, 0.0, 90.0),
        pt(Family::Gp, 0.01, 95.0), // dominated by the first
        pt(Family::Gp, 0.02, 70.0),
        pt(Family::Gp, 0.02, 80.0), // same failure, less reclaim
        pt(Family::Vpa, 0.0, 85.0),
    ]);
    let front: Vec<f64> = f
        .pareto(Family::Gp, BudgetMeasure::FailedApps)
        .iter()
        .map(|p| p.mem_alloc_gib_h)
        .collect();
    assert_eq!(front, vec![90.0, 70.0]);
    let best = f
        .best_within(&|x| x.is_tailor(), BudgetMeasure::FailedApps, 0.01)
        .map(|p| p.mem_alloc_gib_h);
    assert_eq!(best, Some(90.0));
    let vpa = f
        .best_within(&|x| x == Family::Vpa, BudgetMeasure::FailedApps, 0.001)
        .map(|p| p.mem_alloc_gib_h);
    assert_eq!(vpa, Some(85.0));
    // the other measure: gp at 0.02 failed has 1% OOM days
    let best = f
        .best_within(&|x| x.is_tailor(), BudgetMeasure::OomComponentDays, 0.01)
        .map(|p| p.mem_alloc_gib_h);
    assert_eq!(best, Some(70.0));
    let md = markdown(&f, BudgetMeasure::FailedApps, "tailor frontier");
    assert!(md.contains("| 0.10% |"), "{md}");
    let csv = f.to_csv(BudgetMeasure::FailedApps);
    assert_eq!(csv.lines().count(), 6);
    assert!(
        csv.lines().nth(2).is_some_and(|l| l.contains(",false,")),
        "{csv}"
    );
}

#[test]
fn grid_validation_names_every_bad_list() {
    let g = FrontierGrid {
        k1: vec![-1.0],
        k2: vec![],
        memory_risk: vec![0.9],
        sibling_hold_s: vec![-1.0],
        mem_margin: vec![f64::NAN],
        small_app_k1: vec![-0.1],
        app_k1_slope: Vec::new(),
        core_k1_factor: Vec::new(),
        elastic_k1_factor: Vec::new(),
        vpa_percentile: vec![1.0],
        vpa_margin: vec![0.1; MAX_LIST + 1],
        families: Family::SWEPT.to_vec(),
    };
    let e = g.validate().expect_err("invalid").to_string();
    for k in [
        "k1",
        "k2",
        "memory_risk",
        "sibling_hold_s",
        "mem_margin",
        "small_app_k1",
        "vpa_percentile",
        "vpa_margin",
    ] {
        assert!(e.contains(k), "{k} missing: {e}");
    }
    assert!(FrontierGrid::default().validate().is_ok());
    let only_vpa = FrontierGrid {
        k1: vec![],
        k2: vec![],
        families: vec![Family::Vpa],
        ..FrontierGrid::default()
    };
    assert!(only_vpa.validate().is_ok());
}

#[test]
fn specs_put_no_buffer_on_the_vpa() {
    let base = SimConfig::default();
    let grid = FrontierGrid {
        k1: vec![0.1],
        k2: vec![2.0],
        memory_risk: vec![0.01],
        sibling_hold_s: Vec::new(),
        mem_margin: Vec::new(),
        small_app_k1: Vec::new(),
        app_k1_slope: Vec::new(),
        core_k1_factor: Vec::new(),
        elastic_k1_factor: Vec::new(),
        vpa_percentile: vec![0.9],
        vpa_margin: vec![0.15, 0.3],
        families: vec![Family::Gp, Family::Vpa],
    };
    let specs = point_specs(&base, &grid).expect("specs");
    assert_eq!(specs.len(), 2 + 2 + 2);
    assert_eq!(specs[0].cfg.shaper.policy, Policy::Baseline);
    assert_eq!(specs[1].cfg.forecaster_source, ForecasterSource::Oracle);
    assert_eq!((specs[1].cfg.shaper.k1, specs[1].cfg.shaper.k2), (0.0, 0.0));
    let risk = specs
        .iter()
        .find(|s| s.sizing == Sizing::MemoryRisk)
        .expect("risk point");
    assert_eq!(risk.cfg.shaper.memory_risk, Some(0.01));
    for v in specs.iter().filter(|s| s.family == Family::Vpa) {
        assert_eq!((v.cfg.shaper.k1, v.cfg.shaper.k2), (0.0, 0.0));
        assert!(!v.cfg.forecaster.calibrated);
        assert_eq!(v.cfg.forecaster.kind, ModelKind::Vpa);
        assert_eq!(v.cfg.forecaster.vpa.target_memory_percentile, 0.9);
        assert!(v.cfg.shaper.memory_risk.is_none());
    }
    let mut b = base.clone();
    b.shaper.policy = Policy::Baseline;
    assert!(point_specs(&b, &grid).is_err());
}

#[test]
fn a_swept_sibling_hold_multiplies_the_tailor_points_only() {
    let base = SimConfig::default();
    let grid = FrontierGrid {
        k1: vec![0.1, 0.2],
        k2: vec![1.0],
        memory_risk: vec![0.01],
        sibling_hold_s: vec![0.0, 7200.0],
        mem_margin: Vec::new(),
        small_app_k1: Vec::new(),
        app_k1_slope: Vec::new(),
        core_k1_factor: Vec::new(),
        elastic_k1_factor: Vec::new(),
        vpa_percentile: vec![0.9],
        vpa_margin: vec![0.15],
        families: vec![Family::Last, Family::Vpa],
    };
    let specs = point_specs(&base, &grid).expect("specs");
    // baseline + oracle + 2 holds x (2 K1 + 1 risk) + 1 VPA
    assert_eq!(specs.len(), 2 + 2 * 3 + 1);
    for h in [0.0, 7200.0] {
        let n = specs
            .iter()
            .filter(|s| s.family == Family::Last && s.params.get("sibling_hold_s") == Some(&h))
            .inspect(|s| assert_eq!(s.cfg.shaper.sibling_hold_s, h))
            .count();
        assert_eq!(n, 3, "hold {h}");
    }
    let vpa = specs.iter().find(|s| s.family == Family::Vpa).expect("vpa");
    assert!(!vpa.params.contains_key("sibling_hold_s"));
    // Not swept: the config's value, and no param.
    let plain = point_specs(
        &base,
        &FrontierGrid {
            sibling_hold_s: Vec::new(),
            ..grid.clone()
        },
    )
    .expect("specs");
    assert!(plain
        .iter()
        .all(|s| !s.params.contains_key("sibling_hold_s")));
    assert_eq!(plain.len(), 2 + 3 + 1);
}

#[test]
fn a_swept_margin_multiplies_the_k1k2_points_only() {
    let mut base = SimConfig::default();
    base.shaper.mem_margin = 0.5;
    let grid = FrontierGrid {
        k1: vec![0.1, 0.2],
        k2: vec![1.0],
        memory_risk: vec![0.01],
        sibling_hold_s: Vec::new(),
        mem_margin: vec![0.0, 0.2],
        small_app_k1: Vec::new(),
        app_k1_slope: Vec::new(),
        core_k1_factor: Vec::new(),
        elastic_k1_factor: Vec::new(),
        vpa_percentile: vec![0.9],
        vpa_margin: vec![0.15],
        families: vec![Family::Peak, Family::Vpa],
    };
    let specs = point_specs(&base, &grid).expect("specs");
    // baseline + oracle + 2 margins x 2 K1 + 1 risk + 1 VPA
    assert_eq!(specs.len(), 2 + 2 * 2 + 1 + 1);
    for x in [0.0, 0.2] {
        let n = specs
            .iter()
            .filter(|s| s.family == Family::Peak && s.params.get("mem_margin") == Some(&x))
            .inspect(|s| {
                assert_eq!(s.sizing, Sizing::K1k2);
                assert_eq!(s.cfg.shaper.mem_margin, x);
            })
            .count();
        assert_eq!(n, 2, "margin {x}");
    }
    // The oracle and the VPA never carry tailor's margin; the risk point
    // keeps the config's (memory_risk sizes memory without it).
    assert_eq!(specs[1].cfg.shaper.mem_margin, 0.0);
    let vpa = specs.iter().find(|s| s.family == Family::Vpa).expect("vpa");
    assert_eq!(vpa.cfg.shaper.mem_margin, 0.0);
    assert!(!vpa.params.contains_key("mem_margin"));
    let risk = specs
        .iter()
        .find(|s| s.sizing == Sizing::MemoryRisk)
        .expect("risk point");
    assert!(!risk.params.contains_key("mem_margin"));
}

/// Two K1s, one K2, two small-application K1s for `last`; one VPA point.
fn small_app_grid() -> FrontierGrid {
    FrontierGrid {
        k1: vec![0.1, 0.2],
        k2: vec![0.0],
        memory_risk: Vec::new(),
        sibling_hold_s: Vec::new(),
        mem_margin: Vec::new(),
        small_app_k1: vec![0.3, 0.5],
        app_k1_slope: Vec::new(),
        core_k1_factor: Vec::new(),
        elastic_k1_factor: Vec::new(),
        vpa_percentile: vec![0.9],
        vpa_margin: vec![0.15],
        families: vec![Family::Last, Family::Vpa],
    }
}

#[test]
fn a_swept_small_app_k1_multiplies_the_k1k2_points_and_needs_small_apps() {
    let mut base = SimConfig {
        shaper: shaper::ShaperConfig::uniform(),
        ..SimConfig::default()
    };
    let grid = small_app_grid();
    // No application is small in the uniform form: the sweep would be
    // empty words.
    let e = point_specs(&base, &grid).expect_err("refused");
    assert!(e.to_string().contains("small_app_components"), "{e}");
    base.shaper.small_app_components = 50;
    let specs = point_specs(&base, &grid).expect("specs");
    // baseline + oracle + 2 small-app K1 x 2 K1 + 1 VPA
    assert_eq!(specs.len(), 2 + 2 * 2 + 1);
    for x in [0.3, 0.5] {
        let n = specs
            .iter()
            .filter(|s| s.family == Family::Last && s.params.get("small_app_k1") == Some(&x))
            .inspect(|s| assert_eq!(s.cfg.shaper.small_app_k1, x))
            .count();
        assert_eq!(n, 2, "small_app_k1 {x}");
    }
    // The oracle and the VPA get no buffer, small application or not.
    assert_eq!(specs[1].cfg.shaper.small_app_components, 0);
    let vpa = specs.iter().find(|s| s.family == Family::Vpa).expect("vpa");
    assert_eq!(vpa.cfg.shaper.small_app_components, 0);
    assert!(!vpa.params.contains_key("small_app_k1"));
}

#[test]
fn a_swept_app_k1_slope_multiplies_the_k1k2_points_and_needs_a_reference() {
    let mut base = SimConfig {
        shaper: shaper::ShaperConfig::uniform(),
        ..SimConfig::default()
    };
    // The small-applications sweep's grid with the slope swept too.
    let grid = FrontierGrid {
        app_k1_slope: vec![0.15, 0.25, 0.35],
        ..small_app_grid()
    };
    base.shaper.small_app_components = 5;
    let e = point_specs(&base, &grid).expect_err("refused");
    assert!(e.to_string().contains("app_mem_ref_gib"), "{e}");
    base.shaper.app_mem_ref_gib = 2000.0;
    let specs = point_specs(&base, &grid).expect("specs");
    // baseline + oracle + 2 small-app K1 x 3 slopes x 2 K1 + 1 VPA
    assert_eq!(specs.len(), 2 + 2 * 3 * 2 + 1);
    for small in [0.3, 0.5] {
        for slope in [0.15, 0.25, 0.35] {
            let n = specs
                .iter()
                .filter(|s| {
                    s.params.get("small_app_k1") == Some(&small)
                        && s.params.get("app_k1_slope") == Some(&slope)
                })
                .inspect(|s| {
                    assert_eq!(s.cfg.shaper.small_app_k1, small);
                    assert_eq!(s.cfg.shaper.app_k1_slope, slope);
                    assert_eq!(s.cfg.shaper.app_mem_ref_gib, 2000.0);
                })
                .count();
            assert_eq!(n, 2, "small {small} slope {slope}");
        }
    }
    // The oracle and the VPA get no buffer by application memory.
    assert_eq!(specs[1].cfg.shaper.app_mem_ref_gib, 0.0);
    let vpa = specs.iter().find(|s| s.family == Family::Vpa).expect("vpa");
    assert_eq!(vpa.cfg.shaper.app_mem_ref_gib, 0.0);
    assert!(!vpa.params.contains_key("app_k1_slope"));
    // A reference relative to the view enables the sweep too; the oracle
    // and the VPA clear it as well.
    base.shaper.app_mem_ref_gib = 0.0;
    base.shaper.app_mem_ref_rel = 0.5;
    let rel = point_specs(&base, &grid).expect("specs");
    assert_eq!(rel.len(), specs.len());
    assert_eq!(rel[1].cfg.shaper.app_mem_ref_rel, 0.0);
    let vpa = rel.iter().find(|s| s.family == Family::Vpa).expect("vpa");
    assert_eq!(vpa.cfg.shaper.app_mem_ref_rel, 0.0);
    assert!(rel
        .iter()
        .filter(|s| s.params.contains_key("app_k1_slope"))
        .all(|s| s.cfg.shaper.app_mem_ref_rel == 0.5));
    // A slope out of range is refused by its key.
    let bad = FrontierGrid {
        app_k1_slope: vec![-1.0],
        core_k1_factor: vec![0.5],
        elastic_k1_factor: vec![1.5],
        ..grid
    };
    let e = point_specs(&base, &bad).expect_err("refused");
    for k in ["app_k1_slope", "core_k1_factor", "elastic_k1_factor"] {
        assert!(e.to_string().contains(k), "{k}: {e}");
    }
}

#[test]
fn swept_kill_cost_factors_multiply_the_k1k2_points() {
    let base = SimConfig::default();
    let grid = FrontierGrid {
        k1: vec![0.05],
        k2: vec![1.0],
        memory_risk: Vec::new(),
        core_k1_factor: vec![1.0, 1.2],
        elastic_k1_factor: vec![0.2, 0.4, 1.0],
        families: vec![Family::Last, Family::Vpa],
        vpa_percentile: vec![0.9],
        vpa_margin: vec![0.15],
        ..FrontierGrid::default()
    };
    let specs = point_specs(&base, &grid).expect("specs");
    // baseline + oracle + 2 x 3 factor pairs + 1 VPA
    assert_eq!(specs.len(), 2 + 6 + 1);
    for core in [1.0, 1.2] {
        for elastic in [0.2, 0.4, 1.0] {
            let n = specs
                .iter()
                .filter(|s| {
                    s.params.get("core_k1_factor") == Some(&core)
                        && s.params.get("elastic_k1_factor") == Some(&elastic)
                })
                .inspect(|s| {
                    assert_eq!(s.family, Family::Last);
                    assert_eq!(s.cfg.shaper.core_k1_factor, core);
                    assert_eq!(s.cfg.shaper.elastic_k1_factor, elastic);
                })
                .count();
            assert_eq!(n, 1, "core {core} elastic {elastic}");
        }
    }
    let vpa = specs.iter().find(|s| s.family == Family::Vpa).expect("vpa");
    assert!(!vpa.params.contains_key("core_k1_factor"));
    assert!(!vpa.params.contains_key("elastic_k1_factor"));
}

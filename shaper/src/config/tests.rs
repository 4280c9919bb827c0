//! Unit tests of the `[shaper]` table: parsing, ranges, and the buffer
//! rules' arithmetic (small applications, application memory).

use super::*;
use crate::model::{AppSize, Class};

/// An application of `components` running components holding `mem_bytes`
/// of memory request, whose kill fails it whole.
fn size(components: usize, mem_bytes: f64) -> AppSize {
    AppSize {
        components,
        core_components: components,
        mem_bytes,
        restarts_alone: false,
    }
}

#[test]
fn default_is_valid_and_documented_values() {
    let c = ShaperConfig::default();
    assert!(c.validate().is_ok());
    assert_eq!(c.policy, Policy::Pessimistic);
    assert_eq!((c.k1, c.k2), (0.05, 1.0));
    assert_eq!((c.small_app_components, c.small_app_k1), (5, 0.6));
    assert_eq!(
        (c.app_mem_ref_rel, c.app_mem_ref_gib, c.app_k1_slope),
        (0.2, 0.0, 0.3)
    );
    assert!(c.app_mem_rule());
    assert_eq!((c.sibling_hold_s, c.mem_hold_s), (1200.0, 86_400.0));
    assert_eq!(c.small_app_mem_hold_s, 604_800.0);
    assert_eq!(c.small_hold_s(), 604_800.0);
    assert!(c.sibling_jump);
    assert_eq!(c.grace_period_s, 600.0);
    assert_eq!(c.max_evictions_per_round, None);
    // The thesis's form: one K1/K2 for every component, no size rule.
    let u = ShaperConfig::uniform();
    assert!(u.validate().is_ok());
    assert_eq!(
        (u.k1, u.k2, u.small_app_components, u.sibling_hold_s),
        (0.3, 3.0, 0, 0.0)
    );
    assert!(!u.sibling_jump);
    assert!(!u.app_mem_rule());
    assert_eq!(u.small_hold_s(), 0.0, "no application is small");
}

#[test]
fn empty_table_is_default() {
    let c: ShaperConfig = toml::from_str("").expect("empty table parses");
    assert_eq!(c, ShaperConfig::default());
}

#[test]
fn tune_snippet_parses_inside_a_table() {
    #[derive(Deserialize)]
    struct Outer {
        shaper: ShaperConfig,
    }
    let o: Outer = toml::from_str("[shaper]\nk1 = 0.01\nk2 = 2.0\n").expect("parses");
    assert_eq!(o.shaper.k1, 0.01);
    assert_eq!(o.shaper.k2, 2.0);
    assert_eq!(o.shaper.policy, Policy::Pessimistic);
}

#[test]
fn full_table_round_trips() {
    let c = ShaperConfig {
        policy: Policy::Optimistic,
        order: SchedulerOrder::Priority,
        victim_order: VictimOrder::LeastWorkLost,
        max_evictions_per_round: Some(7),
        ..ShaperConfig::default()
    };
    let s = toml::to_string(&c).expect("serialises");
    let back: ShaperConfig = toml::from_str(&s).expect("parses back");
    assert_eq!(back, c);
    assert!(s.contains("victim_order = \"least_work_lost\""), "{s}");
}

#[test]
fn unknown_key_rejected() {
    let r: Result<ShaperConfig, _> = toml::from_str("k3 = 1.0\n");
    let err = r.expect_err("unknown key must fail").to_string();
    assert!(err.contains("k3"), "{err}");
}

#[test]
fn all_errors_reported_at_once_with_keys() {
    let c = ShaperConfig {
        k1: -1.0,
        k2: f64::NAN,
        grace_period_s: -5.0,
        failure_limit: 0,
        max_growth: 0.5,
        min_relative_change: 1.5,
        min_cpu_cores: -0.1,
        min_mem_bytes: f64::INFINITY,
        ..ShaperConfig::default()
    };
    let e = c.validate().expect_err("invalid");
    assert_eq!(
        e.keys(),
        vec![
            "k1",
            "k2",
            "grace_period_s",
            "failure_limit",
            "max_growth",
            "min_relative_change",
            "min_cpu_cores",
            "min_mem_bytes"
        ]
    );
    let p = e.prefixed("shaper");
    assert_eq!(p.0[0].key, "shaper.k1");
    let text = p.to_string();
    assert!(text.starts_with("8 configuration error(s)"), "{text}");
    assert!(text.contains("shaper.max_growth"), "{text}");
}

#[test]
fn absurd_values_are_refused() {
    let c = ShaperConfig {
        k1: 1e300,
        k2: 1e9,
        mem_margin: 1e300,
        small_app_components: u32::MAX,
        small_app_k1: f64::NAN,
        app_mem_ref_gib: f64::INFINITY,
        app_k1_slope: -1.0,
        app_mem_ref_rel: f64::NAN,
        grace_period_s: 1e300,
        failure_limit: u32::MAX,
        max_growth: f64::MAX,
        min_cpu_cores: 1e300,
        min_mem_bytes: 1e300,
        small_app_mem_hold_s: -1.0,
        young_core_k1: -0.1,
        young_core_s: f64::NAN,
        ..ShaperConfig::default()
    };
    let e = c.validate().expect_err("invalid");
    assert_eq!(
        e.keys(),
        vec![
            "k1",
            "k2",
            "mem_margin",
            "small_app_components",
            "small_app_k1",
            "young_core_k1",
            "young_core_s",
            "app_mem_ref_gib",
            "app_k1_slope",
            "app_mem_ref_rel",
            "grace_period_s",
            "failure_limit",
            "max_growth",
            "min_cpu_cores",
            "min_mem_bytes",
            "small_app_mem_hold_s"
        ]
    );
}

/// `young_core_k1` raises the K1 of a component whose kill fails its
/// application, and of no other, while it is younger than `young_core_s`.
#[test]
fn a_young_core_component_gets_the_young_k1() {
    let c: ShaperConfig =
        toml::from_str("young_core_k1 = 0.15\nyoung_core_s = 3600.0\n").expect("parses");
    c.validate().expect("valid");
    assert_eq!(c.young_k1(0.06, Class::Core, false, 0.0), 0.15);
    assert_eq!(c.young_k1(0.06, Class::Core, false, 3599.0), 0.15);
    assert_eq!(c.young_k1(0.06, Class::Core, false, 3600.0), 0.06);
    // a larger K1 (a small application's) is kept
    assert_eq!(c.young_k1(0.6, Class::Core, false, 0.0), 0.6);
    // an elastic component, or one that restarts alone: its kill fails nothing
    assert_eq!(c.young_k1(0.02, Class::Elastic, false, 0.0), 0.02);
    assert_eq!(c.young_k1(0.06, Class::Core, true, 0.0), 0.06);
    // no age: not young
    assert_eq!(c.young_k1(0.06, Class::Core, false, f64::NAN), 0.06);
    // off by default
    assert_eq!(
        ShaperConfig::default().young_k1(0.06, Class::Core, false, 0.0),
        0.06
    );
}

#[test]
fn a_small_application_gets_its_own_k1() {
    let o: ShaperConfig =
        toml::from_str("k1 = 0.1\nsmall_app_components = 50\nsmall_app_k1 = 0.3\n")
            .expect("parses");
    o.validate().expect("valid");
    let r = 0.0;
    assert_eq!(o.k1_for(size(1, 0.0), r), 0.3);
    assert_eq!(o.k1_for(size(49, 0.0), r), 0.3);
    assert_eq!(o.k1_for(size(50, 0.0), r), 0.1);
    // Off in the uniform form: every application gets k1.
    assert_eq!(ShaperConfig::uniform().k1_for(size(0, 0.0), r), 0.3);
    let d = ShaperConfig {
        k1: 0.1,
        ..ShaperConfig::uniform()
    };
    assert_eq!(d.k1_for(size(0, 0.0), r), 0.1);
}

#[test]
fn an_applications_k1_falls_with_the_log_of_its_memory() {
    let o: ShaperConfig =
        toml::from_str("k1 = 0.05\napp_mem_ref_gib = 1000.0\napp_k1_slope = 0.25\n")
            .expect("parses");
    o.validate().expect("valid");
    let r = o.app_mem_ref_in(&mut []);
    assert_eq!(r, 1000.0);
    let gib = (1u64 << 30) as f64;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    // e times smaller than the reference: one slope more.
    assert!(close(
        o.k1_for(size(10, 1000.0 / std::f64::consts::E * gib), r),
        0.25
    ));
    assert!(close(o.k1_for(size(10, 10.0 * gib), r), 0.25 * 100f64.ln()));
    // At or above the reference, and where the log term is below k1: k1.
    assert_eq!(o.k1_for(size(10, 1000.0 * gib), r), 0.05);
    assert_eq!(o.k1_for(size(10, 900.0 * gib), r), 0.05);
    assert_eq!(o.k1_for(size(10, 1e9 * gib), r), 0.05);
    // No memory at all: the largest K1, never infinite.
    assert_eq!(o.k1_for(size(1, 0.0), r), MAX_K1);
    // With small applications too, the larger of the two rules.
    let both = ShaperConfig {
        small_app_components: 5,
        small_app_k1: 0.6,
        ..o.clone()
    };
    assert_eq!(both.k1_for(size(1, 500.0 * gib), r), 0.6);
    assert!(close(
        both.k1_for(size(1, 0.5 * gib), r),
        0.25 * 2000f64.ln()
    ));
    assert_eq!(both.k1_for(size(5, 2000.0 * gib), r), 0.05);
    // Neither rule for an application whose components restart alone
    // (one kill does not fail it): k1 whatever its size and memory, but a
    // lone task's kill takes the whole service down: the small K1, still
    // not the memory rule.
    for (n, m) in [(2, 500.0 * gib), (2, 0.5 * gib), (4, 0.0)] {
        let alone = AppSize {
            restarts_alone: true,
            ..size(n, m)
        };
        assert_eq!(both.k1_for(alone, r), 0.05);
    }
    for m in [500.0 * gib, 0.5 * gib, 0.0] {
        let lone = AppSize {
            restarts_alone: true,
            ..size(1, m)
        };
        assert_eq!(both.k1_for(lone, r), 0.6);
        let no_small = ShaperConfig {
            small_app_components: 0,
            ..both.clone()
        };
        assert_eq!(no_small.k1_for(lone, r), 0.05);
    }
    // The few core components of an application with elastic ones get at
    // least the small-application K1 (their kill fails all 2,000
    // components); with one K1 for every class, its elastic ones, an
    // all-core application's and a service's keep the application's.
    let one_k1 = ShaperConfig {
        core_k1_factor: 1.0,
        elastic_k1_factor: 1.0,
        ..both.clone()
    };
    let job = AppSize {
        core_components: 1,
        ..size(2000, 2000.0 * gib)
    };
    let k1 = one_k1.k1_for(job, r);
    assert_eq!(k1, 0.05);
    assert_eq!(one_k1.k1_for_class(job, k1, Class::Core), 0.6);
    assert_eq!(one_k1.k1_for_class(job, k1, Class::Elastic), 0.05);
    assert_eq!(one_k1.k1_for_class(size(2000, 1.0), k1, Class::Core), 0.05);
    let many_core = AppSize {
        core_components: 5,
        ..job
    };
    assert_eq!(one_k1.k1_for_class(many_core, k1, Class::Core), 0.05);
    let service = AppSize {
        restarts_alone: true,
        ..job
    };
    assert_eq!(one_k1.k1_for_class(service, k1, Class::Core), 0.05);
    // Off (the uniform form): the memory is not looked at.
    assert_eq!(ShaperConfig::uniform().app_mem_ref_in(&mut [gib]), 0.0);
    assert_eq!(ShaperConfig::uniform().k1_for(size(1, 1.0), r), 0.3);
}

#[test]
fn the_buffer_follows_what_a_kill_costs() {
    // The shipped factors: a core kill that fails its application gets
    // 1.2 K1, an elastic kill (its task's work alone) 0.4 K1.
    let o: ShaperConfig = toml::from_str("k1 = 0.05\n").expect("parses");
    o.validate().expect("valid");
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    let gib = (1u64 << 30) as f64;
    let r = 0.0;
    let job = AppSize {
        core_components: 1,
        ..size(2000, 2000.0 * gib)
    };
    let k1 = o.k1_for(job, r);
    assert_eq!(k1, 0.05);
    // The job's one core task: the small-application K1, as before.
    assert_eq!(o.k1_for_class(job, k1, Class::Core), 0.6);
    assert!(close(o.k1_for_class(job, k1, Class::Elastic), 0.02));
    assert!(!o.is_small(job, Class::Elastic));
    // An all-core application: every kill fails it.
    let rigid = size(2000, 2000.0 * gib);
    assert!(close(o.k1_for_class(rigid, k1, Class::Core), 0.06));
    // A larger application K1 (the size rules) stands for core
    // components; an elastic one never gets more than 0.4 K1, even in a
    // small application, and is not sized as small.
    assert_eq!(o.k1_for_class(size(3, gib), 0.6, Class::Core), 0.6);
    assert!(close(
        o.k1_for_class(size(3, gib), 0.6, Class::Elastic),
        0.02
    ));
    assert!(o.is_small(size(3, gib), Class::Core));
    assert!(!o.is_small(size(3, gib), Class::Elastic));
    // Nor above the application's own K1.
    let low = ShaperConfig {
        small_app_k1: 0.01,
        ..o.clone()
    };
    assert_eq!(low.k1_for_class(size(3, gib), 0.01, Class::Elastic), 0.01);
    // A service's task restarts alone: its kill fails nothing, K1 stands.
    let service = AppSize {
        restarts_alone: true,
        ..rigid
    };
    assert_eq!(o.k1_for_class(service, k1, Class::Core), 0.05);
    // The factor's product is capped like any K1.
    let big = ShaperConfig {
        k1: MAX_K1,
        core_k1_factor: 100.0,
        ..o.clone()
    };
    assert_eq!(big.k1_for_class(rigid, MAX_K1, Class::Core), MAX_K1);
    // Out of range: named by key.
    let bad = ShaperConfig {
        core_k1_factor: 0.5,
        elastic_k1_factor: 1.5,
        ..o.clone()
    };
    let e = bad.validate().expect_err("out of range").to_string();
    assert!(
        e.contains("core_k1_factor") && e.contains("elastic_k1_factor"),
        "{e}"
    );
}

#[test]
fn a_relative_reference_is_a_multiple_of_the_memory_weighted_median() {
    // Half the memory (1 + 4 + 5 = 10 of 20) is in applications of at
    // most 5.
    assert_eq!(weighted_median(&mut [10.0, 1.0, 4.0, 5.0]), 5.0);
    assert_eq!(weighted_median(&mut [10.0, 1.0, 4.0, 4.0]), 10.0);
    assert_eq!(weighted_median(&mut [1.0, 1.0, 1.0, 1.0]), 1.0);
    assert_eq!(weighted_median(&mut [0.0, 3.0, 0.0]), 3.0);
    assert_eq!(weighted_median(&mut [100.0, 1.0, 1.0]), 100.0);
    assert_eq!(weighted_median(&mut []), 0.0);
    assert_eq!(weighted_median(&mut [0.0, 0.0]), 0.0);
    let gib = (1u64 << 30) as f64;
    let o: ShaperConfig = toml::from_str(
        "k1 = 0.05\napp_mem_ref_rel = 0.5\napp_k1_slope = 0.25\nsmall_app_components = 0\n",
    )
    .expect("parses");
    o.validate().expect("valid");
    assert!(o.app_mem_rule());
    let mut view = [4.0 * gib, 10.0 * gib, 1.0 * gib, 5.0 * gib];
    let r = o.app_mem_ref_in(&mut view);
    assert_eq!(r, 2.5);
    // The same workload at 100 times the scale: the same buffers.
    let mut big = [400.0 * gib, 1000.0 * gib, 100.0 * gib, 500.0 * gib];
    let big_r = o.app_mem_ref_in(&mut big);
    assert_eq!(big_r, 250.0);
    for m in [1.0, 4.0, 10.0] {
        let k = o.k1_for(size(3, m * gib), r);
        assert!((k - o.k1_for(size(3, 100.0 * m * gib), big_r)).abs() < 1e-12);
        assert!(
            (k - 0.05f64.max(0.25 * (2.5 / m).ln())).abs() < 1e-12,
            "{m}: {k}"
        );
    }
    // A view with no memory at all: no reference, every app gets k1.
    assert_eq!(o.app_mem_ref_in(&mut [0.0, 0.0]), 0.0);
    assert_eq!(o.k1_for(size(3, 0.0), 0.0), 0.05);
    // An absolute reference, when set, replaces the relative one (the
    // default): a `[shaper]` table that sets only `app_mem_ref_gib` is
    // valid and means it.
    let both = ShaperConfig {
        app_mem_ref_gib: 100.0,
        ..o.clone()
    };
    both.validate()
        .expect("the absolute reference replaces the relative");
    assert_eq!(both.app_mem_ref_in(&mut [4.0 * gib, 10.0 * gib]), 100.0);
    let abs: ShaperConfig = toml::from_str("app_mem_ref_gib = 30.0\n").expect("parses");
    abs.validate().expect("valid");
    assert_eq!(abs.app_mem_ref_in(&mut [gib]), 30.0);
}

#[test]
fn single_error_only_names_its_key() {
    let c = ShaperConfig {
        k2: -0.5,
        ..ShaperConfig::default()
    };
    let e = c.validate().expect_err("invalid");
    assert_eq!(e.keys(), vec!["k2"]);
}

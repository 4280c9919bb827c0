//! Unit tests of one component's models: holds, priors, inheritance.

use super::*;
use forecaster::baselines::LastValue;

fn last(_: Resource, _: f64) -> Result<Box<dyn Forecaster>, ForecastError> {
    Ok(Box::new(LastValue::default()))
}

#[test]
fn normalised_in_absolute_out() {
    let cfg = ShaperConfig {
        min_history_samples: 2,
        ..ShaperConfig::default()
    };
    let req = Resources::new(2.0, 1e9);
    let mut m = ComponentModels::build(Resources::new(1.0, 1.0), last).expect("models");
    m.observe(None, 5e8, req);
    assert!(
        m.forecast_with(1, req, &cfg, None).0.is_none(),
        "cpu has no sample yet"
    );
    m.observe(Some(1.0), 6e8, req);
    assert!(
        m.forecast_with(1, req, &cfg, None).0.is_none(),
        "one cpu sample < 2"
    );
    m.observe(Some(1.5), 7e8, req);
    let f = m.forecast_with(1, req, &cfg, None).0.expect("ready");
    assert!((f.cpu.mean - 1.5).abs() < 1e-9);
    assert!((f.mem.mean - 7e8).abs() < 1.0);
    // the same relative history at another request scales with it
    let f2 = m
        .forecast_with(1, Resources::new(4.0, 2e9), &cfg, None)
        .0
        .expect("ready");
    assert!((f2.mem.mean - 1.4e9).abs() < 1.0);
}

#[test]
fn prior_until_warm_then_own() {
    let cfg = ShaperConfig {
        min_history_samples: 2,
        ..ShaperConfig::default()
    };
    let req = Resources::new(1.0, 1e9);
    let level = crate::prior::Level {
        mean: 0.5,
        between_var: 0.01,
        within_var: 0.01,
        high: 0.0,
        jump: 0.0,
    };
    let prior = RelPrior {
        cpu: level,
        mem: level,
        kill: Default::default(),
    };
    let mut m = ComponentModels::build(req, last)
        .expect("models")
        .with_warm_samples(4);
    let (f, src) = m.forecast_with(1, req, &cfg, Some(&prior));
    assert_eq!(src, ForecastSource::Prior);
    assert!((f.expect("prior").mem.mean - 5e8).abs() < 1.0);
    let (f, src) = m.forecast_with(1, req, &cfg, None);
    assert_eq!((f, src), (None, ForecastSource::Fallback));
    for _ in 0..2 {
        m.observe(Some(0.2), 2e8, req);
    }
    // no prior, past min_history but not warm: the model's fallback
    assert_eq!(
        m.forecast_with(1, req, &cfg, None).1,
        ForecastSource::Fallback
    );
    // with the prior: the level's update, precision 100 + 2 * 100
    let (f, src) = m.forecast_with(1, req, &cfg, Some(&prior));
    assert_eq!(src, ForecastSource::Prior);
    let want = (50.0 + 200.0 * 0.2) / 300.0 * 1e9;
    assert!((f.expect("mixture").mem.mean - want).abs() < 1.0);
    // prior switched off: the fallback
    let off = ShaperConfig {
        prior: false,
        ..cfg.clone()
    };
    assert_eq!(
        m.forecast_with(1, req, &off, Some(&prior)).1,
        ForecastSource::Fallback
    );
    for _ in 0..2 {
        m.observe(Some(0.2), 2e8, req);
    }
    let (f, src) = m.forecast_with(1, req, &cfg, Some(&prior));
    assert_eq!(src, ForecastSource::Own);
    assert!((f.expect("own").mem.mean - 2e8).abs() < 1.0);
    let pending = m.take_pending();
    assert_eq!(pending.mem.w, 4.0);
    assert!(m.take_pending().is_empty());
}

#[test]
fn a_small_applications_hold_keeps_a_peak_the_days_hold_has_let_go() {
    let cfg = ShaperConfig {
        min_history_samples: 1,
        mem_hold_s: 600.0,
        small_app_mem_hold_s: 2100.0,
        ..ShaperConfig::default()
    };
    assert_eq!(small_hold_samples(&cfg, 300.0), 7);
    let off = |c: ShaperConfig| small_hold_samples(&c, 300.0);
    assert_eq!(
        off(ShaperConfig {
            small_app_mem_hold_s: 600.0,
            ..cfg.clone()
        }),
        0,
        "not longer than the day's hold"
    );
    assert_eq!(
        off(ShaperConfig {
            small_app_components: 0,
            ..cfg.clone()
        }),
        0,
        "no application can be small"
    );
    let req = Resources::new(1.0, 1e9);
    let mut m = ComponentModels::build(req, last)
        .expect("models")
        .with_mem_hold(2)
        .with_small_hold(7);
    m.observe(Some(0.1), 9e8, req);
    for i in 1..=8 {
        m.observe(Some(0.1), 2e8, req);
        let f = m.forecast_with(1, req, &cfg, None).0.expect("forecast");
        let day = if i < 2 { 9e8 } else { 2e8 };
        assert!((f.mem.mean - day).abs() < 1.0, "{i}: {}", f.mem.mean);
        // reported only while above the day's hold
        let week = if (2..7).contains(&i) { 9e8 } else { 0.0 };
        assert!(
            (f.mem_small_hold_bytes - week).abs() < 1.0,
            "{i}: {}",
            f.mem_small_hold_bytes
        );
    }
}

#[test]
fn memory_is_held_at_recent_peaks_and_at_the_siblings_high_water_mark() {
    let cfg = ShaperConfig {
        min_history_samples: 1,
        mem_hold_s: 900.0,
        ..ShaperConfig::default()
    };
    assert_eq!(hold_samples(&cfg, 300.0), 3);
    assert_eq!(hold_samples(&cfg, f64::INFINITY), 0);
    let req = Resources::new(1.0, 1e9);
    let mut m = ComponentModels::build(req, last)
        .expect("models")
        .with_mem_hold(3);
    m.observe(Some(0.1), 9e8, req);
    let mem = |m: &ComponentModels, cfg: &ShaperConfig, p: Option<&RelPrior>| {
        m.forecast_with(1, req, cfg, p)
            .0
            .expect("forecast")
            .mem
            .mean
    };
    for _ in 0..2 {
        m.observe(Some(0.1), 2e8, req);
        assert!((mem(&m, &cfg, None) - 9e8).abs() < 1.0, "held");
    }
    m.observe(Some(0.1), 2e8, req);
    assert!((mem(&m, &cfg, None) - 2e8).abs() < 1.0, "released");
    // a young component starts at its siblings' high-water mark
    let level = crate::prior::Level {
        mean: 0.3,
        between_var: 0.01,
        within_var: 0.01,
        high: 0.7,
        jump: 0.0,
    };
    let prior = RelPrior {
        cpu: level,
        mem: level,
        kill: Default::default(),
    };
    let young = ComponentModels::build(req, last)
        .expect("models")
        .with_warm_samples(10);
    assert!(
        (mem(&young, &cfg, Some(&prior)) - 3e8).abs() < 1.0,
        "no hold"
    );
    let young = young.with_mem_hold(3);
    assert!((mem(&young, &cfg, Some(&prior)) - 7e8).abs() < 1.0);

    // Once its own model is warm, only for its first sibling-hold
    // samples (`[shaper] sibling_hold_s`).
    let cfg = ShaperConfig {
        sibling_hold_s: 900.0,
        ..cfg
    };
    assert_eq!(sibling_hold_samples(&cfg, 300.0), 3);
    // held at recent peaks (1 sample) and, for 3 samples, at the
    // siblings' mark
    let fresh = || {
        ComponentModels::build(req, last)
            .expect("models")
            .with_mem_hold(1)
            .with_sibling_hold(3)
    };
    let mut own = fresh();
    for n in 1..=4 {
        own.observe(Some(0.1), 2e8, req);
        let (f, src) = own.forecast_with(1, req, &cfg, Some(&prior));
        assert_eq!(src, ForecastSource::Own);
        let want = if n < 3 { 7e8 } else { 2e8 };
        assert!((f.expect("own").mem.mean - want).abs() < 1.0, "sample {n}");
    }

    // A sibling killed with 4 samples seen, at a mark of 0.9, holds a
    // component at that mark (`mem_hold_bytes`) for its forecasts
    // with up to 4 + 3 samples seen.
    let killed = RelPrior {
        kill: crate::prior::KillMark {
            mem_rel: 0.9,
            age_samples: 4,
        },
        ..prior
    };
    let mut own = fresh();
    for n in 1..=8 {
        own.observe(Some(0.1), 2e8, req);
        let f = own
            .forecast_with(1, req, &cfg, Some(&killed))
            .0
            .expect("own");
        let hold = if n <= 7 { 9e8 } else { 0.0 };
        assert!((f.mem_hold_bytes - hold).abs() < 1.0, "sample {n}");
        // sized from the hold, not needing it: the forecast is as
        // without the kill (the siblings' mark while young)
        let mean = if n < 3 { 7e8 } else { 2e8 };
        assert!((f.mem.mean - mean).abs() < 1.0, "sample {n}");
    }

    // A successor rebuilt from 8 samples of a predecessor's history
    // is warm, but 0 samples old: the same kill holds it through its
    // own 7th sample. Its own restored checkpoint keeps its age.
    let history = vec![
        RelSample {
            cpu: Some(0.1),
            mem: 0.2
        };
        8
    ];
    let mut heir = fresh().inheriting(&history);
    assert_eq!((heir.observed(), heir.age_samples()), (8, 0));
    for n in 1..=8 {
        heir.observe(Some(0.1), 2e8, req);
        let f = heir
            .forecast_with(1, req, &cfg, Some(&killed))
            .0
            .expect("warm from its history");
        let hold = if n <= 7 { 9e8 } else { 0.0 };
        assert!((f.mem_hold_bytes - hold).abs() < 1.0, "sample {n}");
    }
    let restored = fresh().restoring(&history);
    assert_eq!(restored.age_samples(), 8);
    let f = restored
        .forecast_with(1, req, &cfg, Some(&killed))
        .0
        .expect("warm");
    assert_eq!(f.mem_hold_bytes, 0.0);
}

#[test]
fn horizon_defaults_to_one_round_and_a_minute() {
    let cfg = ShaperConfig::default();
    assert_eq!(horizon_samples(&cfg, 300.0, 300.0), 1);
    assert_eq!(horizon_samples(&cfg, 300.0, 60.0), 5);
    assert_eq!(horizon_samples(&cfg, 10.0, 10.0), 6);
    assert_eq!(horizon_samples(&cfg, 10.0, f64::INFINITY), 1);
    let cfg = ShaperConfig {
        horizon_samples: Some(6),
        ..ShaperConfig::default()
    };
    assert_eq!(horizon_samples(&cfg, 10.0, 10.0), 6);
}

#[test]
fn past_the_sibling_hold_memory_keeps_room_for_the_siblings_largest_jump() {
    let cfg = ShaperConfig {
        min_history_samples: 1,
        sibling_hold_s: 300.0,
        ..ShaperConfig::default()
    };
    let req = Resources::new(1.0, 1e9);
    // A jump is pooled as how far a sample rose above the held peak of
    // the ones before it; the first sample is no jump.
    let mut m = ComponentModels::build(req, last)
        .expect("models")
        .with_mem_hold(10);
    for mem in [4e8, 3e8, 4.5e8, 3e8] {
        m.observe(Some(0.1), mem, req);
    }
    assert!((m.take_pending().mem.jump - 0.05).abs() < 1e-12);
    m.observe(Some(0.1), 7e8, req);
    assert!((m.take_pending().mem.jump - 0.25).abs() < 1e-12);

    let prior = |jump: f64| {
        let level = crate::prior::Level {
            mean: 0.3,
            between_var: 0.01,
            within_var: 0.01,
            high: 0.8,
            jump,
        };
        RelPrior {
            cpu: level,
            mem: level,
            kill: Default::default(),
        }
    };
    let mut own = ComponentModels::build(req, last)
        .expect("models")
        .with_mem_hold(10)
        .with_sibling_hold(1);
    own.observe(Some(0.1), 3e8, req);
    own.observe(Some(0.1), 2e8, req);
    let mem = |cfg: &ShaperConfig, jump: f64| {
        let (f, src) = own.forecast_with(1, req, cfg, Some(&prior(jump)));
        assert_eq!(src, ForecastSource::Own);
        f.expect("own").mem.mean
    };
    // its own held peak (0.3), plus the siblings' largest jump...
    assert!((mem(&cfg, 0.0) - 3e8).abs() < 1.0);
    assert!((mem(&cfg, 0.2) - 5e8).abs() < 1.0);
    // ...within the siblings' high-water mark
    assert!((mem(&cfg, 0.9) - 8e8).abs() < 1.0);
    let off = ShaperConfig {
        sibling_jump: false,
        ..cfg.clone()
    };
    assert!((mem(&off, 0.2) - 3e8).abs() < 1.0);
}

#[test]
fn continuing_models_keep_the_age_and_the_absolute_peaks() {
    let cfg = ShaperConfig {
        min_history_samples: 2,
        ..ShaperConfig::default()
    };
    let old = Resources::new(2.0, 2e9);
    let new = Resources::new(1.0, 1e9);
    let built = |req| {
        ComponentModels::build(req, last)
            .expect("models")
            .with_mem_hold(10)
    };
    // a 1.6e9 peak, then 0.4e9 for 8 samples: 9 samples old, peak held
    let mut before = built(old);
    before.observe(Some(0.5), 1.6e9, old);
    for _ in 0..8 {
        before.observe(Some(0.5), 0.4e9, old);
    }
    let mut history = vec![
        RelSample {
            cpu: Some(0.25),
            mem: 0.2
        };
        4
    ];
    rescale_history(history.iter_mut(), old, new);
    assert_eq!(
        history[0],
        RelSample {
            cpu: Some(0.5),
            mem: 0.4
        }
    );
    let mut m = built(new).continuing(&before, &history, old, new);
    assert_eq!((m.observed(), m.age_samples()), (4, 9));
    let f = m.forecast_with(1, new, &cfg, None).0.expect("warm");
    assert!((f.mem.mean - 1.6e9).abs() < 1.0, "{}", f.mem.mean);
    assert!((f.cpu.mean - 0.5).abs() < 1e-9);
    // the peak expires when it would have without the change: once 10
    // samples are newer than it
    m.observe(Some(0.5), 0.4e9, new);
    assert!(
        (m.forecast_with(1, new, &cfg, None)
            .0
            .expect("warm")
            .mem
            .mean
            - 1.6e9)
            .abs()
            < 1.0
    );
    m.observe(Some(0.5), 0.4e9, new);
    let f = m.forecast_with(1, new, &cfg, None).0.expect("warm");
    assert!((f.mem.mean - 0.4e9).abs() < 1.0, "{}", f.mem.mean);
    // younger than its history: the history is its age
    let m = built(new).continuing(&built(old), &history, old, new);
    assert_eq!(m.age_samples(), 4);
    // a request that is not a positive number counts as 1
    let mut odd = [RelSample {
        cpu: None,
        mem: 3.0,
    }];
    rescale_history(odd.iter_mut(), Resources::new(0.0, f64::NAN), new);
    assert!((odd[0].mem - 3e-9).abs() < 1e-20, "{}", odd[0].mem);
}

//! Unit tests of one node's models: priors, inheritance, checkpoints.

use super::*;
use crate::node::{ContainerMeta, Sample};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn cfg() -> ShaperConfig {
    ShaperConfig {
        min_history_samples: 3,
        ..ShaperConfig::default()
    }
}

fn model() -> ModelConfig {
    toml::from_str("kind = \"peak\"\ncalibrated = false").expect("model config")
}

fn sample(id: &str, name: &str, app: &str, mem_gib: f64) -> ContainerSample {
    ContainerSample {
        meta: ContainerMeta::core(id, name, app, 0.0),
        request: Resources::new(1.0, 2.0 * GIB),
        allocation: Resources::new(1.0, 2.0 * GIB),
        usage: Resources::new(0.1, mem_gib * GIB),
        sample: Some(Sample {
            cpu_cores: Some(0.1),
            mem_bytes: mem_gib * GIB,
            mem_peak_bytes: Some(mem_gib * 1.1 * GIB),
        }),
        app_failures: 0,
        oom_kills: 0,
    }
}

#[test]
fn a_young_sibling_gets_the_prior_and_the_peak_is_fed() {
    let cfg = cfg();
    let mut m = NodeModels::new(model(), &cfg, 10.0);
    for t in 0..5 {
        let f = m
            .observe(&sample("a", "web-1", "web", 0.5), f64::from(t), 1, &cfg)
            .expect("models");
        if t >= 2 {
            assert_eq!(f.source, ForecastSource::Own);
            // the peak model saw the in-interval peaks: 0.55 GiB
            let mem = f.forecast.expect("own").mem.mean;
            assert!((mem - 0.55 * GIB).abs() < 1e3, "{mem}");
        }
    }
    let f = m
        .observe(&sample("b", "web-2", "web", 0.5), 5.0, 1, &cfg)
        .expect("models");
    assert_eq!(f.source, ForecastSource::Prior);
    assert_eq!(f.origin, ModelOrigin::Fresh);
    let mem = f.forecast.expect("prior").mem.mean;
    assert!((mem - 0.55 * GIB).abs() < 1e3, "{mem}");
    // a container of another application has no prior
    let f = m
        .observe(&sample("c", "db", "db", 0.5), 5.0, 1, &cfg)
        .expect("models");
    assert_eq!((f.forecast, f.source), (None, ForecastSource::Fallback));
}

#[test]
fn a_kill_holds_the_later_siblings_through_its_age() {
    // `a` is OOM-killed after 4 samples at a 1 GiB limit (floor 1.2
    // GiB); `b`, of the same application, starts later: its memory is
    // sized from the floor through 4 samples of its own (no sibling
    // hold here), then from its own forecast alone, which keeps room
    // for the kill's rise above `a`'s own peak (0.55 GiB to the 1.2 GiB
    // floor) above its own 0.55 GiB peak with `sibling_jump`.
    for jump in [true, false] {
        let cfg = ShaperConfig {
            sibling_hold_s: 0.0,
            sibling_jump: jump,
            ..cfg()
        };
        let mut m = NodeModels::new(model(), &cfg, 10.0);
        for t in 0..4 {
            m.observe(
                &sample("a", "web-1", "web", 0.5),
                f64::from(t) * 10.0,
                1,
                &cfg,
            )
            .expect("models");
        }
        m.oom_kill("a", GIB, 1.2 * GIB, 40.0, &cfg);
        for n in 1..=6 {
            let now_s = 40.0 + f64::from(n) * 10.0;
            let f = m
                .observe(&sample("b", "web-2", "web", 0.5), now_s, 1, &cfg)
                .expect("models")
                .forecast
                .expect("forecast");
            let hold = f.mem_hold_bytes;
            let want = if n <= 4 { 1.2 * GIB } else { 0.0 };
            assert!((hold - want).abs() < 1e3, "sample {n}: {hold}");
            if n > 4 {
                let want = if jump { 1.2 * GIB } else { 0.55 * GIB };
                // (the priors decay a little in 50 s)
                assert!(
                    (f.mem.mean - want).abs() < 0.01 * GIB,
                    "{jump} {n}: {}",
                    f.mem.mean / GIB
                );
            }
        }
    }
}

#[test]
fn vpa_models_of_one_application_share_its_aggregates() {
    let cfg = cfg();
    let vpa = ModelConfig {
        kind: ModelKind::Vpa,
        calibrated: false,
        ..ModelConfig::default()
    };
    let mut m = NodeModels::new(vpa, &cfg, 10.0);
    for t in 0..3 {
        let now = f64::from(t) * 10.0;
        for (id, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
            m.observe(&sample(id, id, app, 0.5), now, 1, &cfg)
                .expect("vpa models");
        }
    }
    assert_eq!(m.vpa_apps.len(), 2, "web and db");
}

#[test]
fn recreated_containers_inherit_and_checkpoints_restore() {
    let cfg = cfg();
    let mut m = NodeModels::new(model(), &cfg, 10.0);
    for t in 0..4 {
        m.observe(&sample("a", "web", "web", 0.5), f64::from(t), 1, &cfg);
    }
    m.forget("a");
    let f = m
        .observe(&sample("a2", "web", "web", 0.5), 10.0, 1, &cfg)
        .expect("models");
    assert_eq!(f.origin, ModelOrigin::Inherited);
    assert_eq!(f.source, ForecastSource::Own);
    assert_eq!(f.samples, 5);

    let ck = m.checkpoint(11.0);
    let text = serde_json::to_string(&ck).expect("serialises");
    let back: ModelCheckpoint = serde_json::from_str(&text).expect("parses");
    assert_eq!(back, ck);
    let mut fresh = NodeModels::new(model(), &cfg, 10.0);
    assert_eq!(fresh.restore(back, &cfg), Ok(1));
    let f = fresh
        .observe(&sample("a2", "web", "web", 0.5), 20.0, 1, &cfg)
        .expect("models");
    assert_eq!(f.origin, ModelOrigin::Restored);
    assert_eq!(f.source, ForecastSource::Own, "first round after restart");
    assert_eq!(f.samples, 6);
}

/// [`cfg`] without the sibling hold and jump (the application's prior
/// would hold the same peak for a young container).
fn no_sibling_rules() -> ShaperConfig {
    ShaperConfig {
        sibling_hold_s: 0.0,
        sibling_jump: false,
        ..cfg()
    }
}

/// Container `a` of `web`: a 1.1 GiB peak, then `n` samples peaking at
/// 0.55 GiB, 10 s apart; the time of the last one.
fn peak_then_flat(m: &mut NodeModels, cfg: &ShaperConfig, n: usize) -> f64 {
    let mut t = 0.0;
    m.observe(&sample("a", "web", "web", 1.0), t, 1, cfg);
    for _ in 0..n {
        t += 10.0;
        m.observe(&sample("a", "web", "web", 0.5), t, 1, cfg);
    }
    t
}

#[test]
fn a_restart_keeps_the_held_peaks_older_than_the_history() {
    // A 1.1 GiB peak, then more samples at 0.55 GiB than a checkpoint
    // keeps: the restored models still hold the peak (the day's hold,
    // and a small application's week), as the running ones did. (No
    // sibling hold or jump: the application's prior holds the same
    // peak for young containers.)
    let cfg = no_sibling_rules();
    let mut m = NodeModels::new(model(), &cfg, 10.0);
    let n = m.history_cap + 10;
    let t = peak_then_flat(&mut m, &cfg, n);
    let mem = |m: &mut NodeModels, t: f64| {
        m.observe(&sample("a", "web", "web", 0.5), t, 1, &cfg)
            .expect("models")
            .forecast
            .expect("warm")
            .mem
            .mean
    };
    assert!((mem(&mut m, t + 10.0) - 1.1 * GIB).abs() < 1e3);
    let ck = m.checkpoint(t + 10.0);
    let held = ck.containers[0].held;
    assert!((held.day_rel - 0.55).abs() < 1e-9, "{held:?}");
    assert!((held.week_rel - 0.55).abs() < 1e-9, "{held:?}");
    let text = serde_json::to_string(&ck).expect("serialises");
    let back: ModelCheckpoint = serde_json::from_str(&text).expect("parses");
    assert_eq!(back, ck);
    let mut restored = NodeModels::new(model(), &cfg, 10.0);
    restored.restore(back, &cfg).expect("restored");
    assert!((mem(&mut restored, t + 20.0) - 1.1 * GIB).abs() < 1e3);
    // without them (a checkpoint of an older agent), the history alone
    let mut older = ck.clone();
    older.containers[0].held = HeldPeaks::default();
    let text = serde_json::to_string(&older).expect("serialises");
    assert!(!text.contains("held"), "{text}");
    let mut restored = NodeModels::new(model(), &cfg, 10.0);
    restored.restore(older, &cfg).expect("restored");
    assert!((mem(&mut restored, t + 20.0) - 0.55 * GIB).abs() < 1e3);
}

#[test]
fn bad_checkpoints_are_refused_or_cleaned() {
    let cfg = cfg();
    let mut m = NodeModels::new(model(), &cfg, 10.0);
    let mut ck = m.checkpoint(0.0);
    ck.version = 99;
    assert_eq!(m.restore(ck, &cfg), Err(CheckpointError::Version(99)));
    let ck = ModelCheckpoint {
        version: CHECKPOINT_VERSION,
        at_s: 0.0,
        containers: vec![HistoryEntry {
            id: "x".into(),
            lineage: "name:x".into(),
            samples: (0..10_000)
                .map(|i| {
                    let bad = i % 2 == 0;
                    RelSample {
                        cpu: Some(if bad { f64::NAN } else { 0.1 }),
                        mem: if bad { f64::INFINITY } else { 0.25 },
                    }
                })
                .collect(),
            held: HeldPeaks {
                day_rel: f64::NAN,
                week_rel: -1.0,
            },
            oom_floor: None,
        }],
        retired: vec![],
        prior: PriorBook::new(),
    };
    assert_eq!(m.restore(ck, &cfg), Ok(1));
    let f = m
        .observe(&sample("x", "x", "x", 0.5), 1.0, 1, &cfg)
        .expect("models");
    assert_eq!(f.samples as usize, m.history_cap + 1);
    assert!(f.forecast.expect("warm").mem.mean.is_finite());
    let e = serde_json::from_str::<ModelCheckpoint>("{\"version\":1,\"x\":2}");
    assert!(e.is_err());
}

#[test]
fn a_request_changed_in_place_keeps_the_absolute_sizes() {
    // A 1.1 GiB peak at a 2 GiB request, then 0.55 GiB peaks; the request
    // is cut to 1.2 GiB by hand. The held peak stays 1.1 GiB: read
    // against the new request as it was recorded (0.55 of it), it would
    // be 0.66 GiB and the next peak like the first would be killed.
    let cfg = no_sibling_rules();
    let mut m = NodeModels::new(model(), &cfg, 10.0);
    let t = peak_then_flat(&mut m, &cfg, 20);
    let mut cut = sample("a", "web", "web", 0.5);
    cut.request = Resources::new(0.5, 1.2 * GIB);
    let f = m.observe(&cut, t + 10.0, 1, &cfg).expect("models");
    let mem = f.forecast.expect("warm").mem.mean;
    assert!((mem - 1.1 * GIB).abs() < 1e3, "{}", mem / GIB);
    assert_eq!(f.samples, 22, "the history is kept");
    // the history is now relative to the new request, so a successor
    // or a restart reads it at the right size
    let ck = m.checkpoint(t + 10.0);
    let last = ck.containers[0].samples.last().expect("history").mem;
    assert!((last - 0.55 / 1.2).abs() < 1e-9, "{last}");
    let first = ck.containers[0].samples[0].mem;
    assert!((first - 1.1 / 1.2).abs() < 1e-9, "{first}");
    let cpu = ck.containers[0].samples[1].cpu.expect("cpu");
    assert!((cpu - 0.2).abs() < 1e-9, "{cpu}");
}

//! The node kernel after an OOM kill: the floor bounds the memory target
//! and is named as such, the usage stays what was measured, and the floor
//! survives a checkpoint (QA soak findings D6 and D7).

use shaper::node::{ContainerMeta, ContainerSample, NodeKernel, NodeView, Sample};
use shaper::{Action, Bound, Decider, Resources, ShaperConfig};

const MIB: f64 = 1024.0 * 1024.0;

fn kernel() -> NodeKernel {
    let cfg = ShaperConfig {
        grace_period_s: 0.0,
        ..ShaperConfig::default()
    };
    let model = toml::from_str("kind = \"last\"\ncalibrated = false").expect("model config");
    NodeKernel::new(cfg, model, 10.0).expect("kernel")
}

/// A container of request 256 MiB using `mem_mib`, at `allocation_mib`.
fn sample(mem_mib: f64, allocation_mib: f64) -> ContainerSample {
    ContainerSample {
        meta: ContainerMeta::core("c1", "step", "step", 0.0),
        request: Resources::new(1.0, 256.0 * MIB),
        allocation: Resources::new(1.0, allocation_mib * MIB),
        usage: Resources::new(0.01, mem_mib * MIB),
        sample: Some(Sample {
            cpu_cores: Some(0.01),
            mem_bytes: mem_mib * MIB,
            mem_peak_bytes: Some(mem_mib * MIB),
        }),
        app_failures: 0,
        oom_kills: 0,
    }
}

fn observe(k: &mut NodeKernel, now_s: f64, s: ContainerSample) -> NodeView {
    k.observe("n", now_s, Resources::new(4.0, 4096.0 * MIB), vec![s])
}

/// Warms a kernel on a flat 20 MiB and kills its container at a 49 MiB cut
/// at `killed_s`; returns the memory it holds.
fn killed(k: &mut NodeKernel, killed_s: f64) -> f64 {
    for i in 0..30 {
        observe(k, f64::from(i) * 10.0, sample(20.0, 49.0));
    }
    k.oom_kill("c1", 49.0 * MIB, killed_s)
}

#[test]
fn an_oom_floor_bounds_the_target_and_is_not_usage() {
    let mut k = kernel();
    let held = killed(&mut k, 300.0);
    // a kill below the request holds the request
    assert_eq!(held, 256.0 * MIB);
    let view = observe(&mut k, 310.0, sample(20.0, 49.0));
    let c = &view.containers[0];
    assert_eq!(c.usage.mem_bytes, 20.0 * MIB, "usage is what was measured");
    assert_eq!(view.used().mem_bytes, 20.0 * MIB);
    assert_eq!(c.oom_floor_bytes, 256.0 * MIB);
    let plan = k.plan(&view, &mut Decider::new());
    let full = plan.plan.as_ref().expect("a local plan");
    let Some(Action::Resize {
        to, explanation, ..
    }) = full.resizes().next()
    else {
        panic!("a resize: {:?}", full.actions);
    };
    assert_eq!(explanation.mem.bound, Bound::OomFloor);
    assert_eq!(to.mem_bytes, 256.0 * MIB);
    let text = &plan.actions[0].explanation;
    assert!(text.contains("raised to its OOM floor"), "{text}");
    assert!(!text.contains("current usage"), "{text}");
}

#[test]
fn the_oom_floor_ends_after_oom_memory_s() {
    let mut k = kernel();
    killed(&mut k, 300.0);
    let later = 300.0 + k.config().oom_memory_s + 10.0;
    let view = observe(&mut k, later, sample(20.0, 256.0));
    assert_eq!(view.containers[0].oom_floor_bytes, 0.0);
}

#[test]
fn the_oom_floor_survives_a_checkpoint() {
    let mut k = kernel();
    killed(&mut k, 300.0);
    let ck = k.checkpoint(320.0);
    let text = serde_json::to_string(&ck).expect("serialise");
    let mut back = kernel();
    back.restore(serde_json::from_str(&text).expect("parse"))
        .expect("restore");
    let view = observe(&mut back, 330.0, sample(20.0, 49.0));
    assert_eq!(view.containers[0].oom_floor_bytes, 256.0 * MIB);
    // a floor that no longer holds is not saved
    let late = k.checkpoint(300.0 + k.config().oom_memory_s + 1.0);
    assert!(late.containers.iter().all(|e| e.oom_floor.is_none()));
    // nor restored when it is not a sane one
    let mut bad = ck.clone();
    for e in &mut bad.containers {
        if let Some(f) = e.oom_floor.as_mut() {
            f.mem_bytes = f64::NAN;
        }
    }
    let mut back = kernel();
    back.restore(bad).expect("restore");
    let view = observe(&mut back, 330.0, sample(20.0, 49.0));
    assert_eq!(view.containers[0].oom_floor_bytes, 0.0);
}

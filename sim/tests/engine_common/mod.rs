//! The small hand-built workloads and the configuration that the engine's
//! integration tests share.

use std::sync::Arc;

use datasets::workload::{AppSpec, ComponentSpec, HostSpec, Shape, UsageSeries, Workload};
use shaper::Policy;
use sim::{ForecasterSource, SimConfig};
use tailor_core::{Class, Resources};

/// The memory unit of these workloads: sizes are written in MiB, so that
/// allocations are whole steps of the kernel (MiB).
pub const MIB: f64 = 1_048_576.0;

pub fn shape(values: &[f32], scale: f64) -> Shape {
    Shape::scaled(Arc::from(values.to_vec()), scale)
}

pub fn comp(
    class: Class,
    cpu: f64,
    mem: f64,
    work_s: f64,
    cpu_use: &[f32],
    mem_use: &[f32],
) -> ComponentSpec {
    ComponentSpec::new(
        class,
        Resources::new(cpu, mem * MIB),
        work_s,
        UsageSeries::new(300.0, shape(cpu_use, cpu), shape(mem_use, mem * MIB)),
    )
}

pub fn app(id: u64, arrival_s: f64, components: Vec<ComponentSpec>) -> AppSpec {
    AppSpec {
        id,
        arrival_s,
        priority: 0,
        components,
    }
}

pub fn one_host(cpu: f64, mem: f64, apps: Vec<AppSpec>) -> Workload {
    Workload {
        name: "test".into(),
        hosts: vec![HostSpec {
            capacity: Resources::new(cpu, mem * MIB),
        }],
        apps,
    }
}

pub fn cfg(policy: Policy, source: ForecasterSource) -> SimConfig {
    // Written for one K1/K2 for every component and the GP.
    let mut c = SimConfig {
        shaper: shaper::ShaperConfig::uniform(),
        ..SimConfig::default()
    };
    c.forecaster.kind = forecaster::config::ModelKind::Gp;
    c.shaper.policy = policy;
    c.forecaster_source = source;
    c.parallel_forecasts = false;
    // These workloads are a few MiB: no byte floors.
    c.shaper.min_mem_bytes = 0.0;
    c.shaper.min_cpu_cores = 0.0;
    c
}

/// A host of 100 memory; apps reserve 40, use 10 for 30 minutes, then 38.
pub fn spike_workload(n: u64) -> Workload {
    let mut mem = vec![0.25f32; 6];
    mem.extend(std::iter::repeat_n(0.95f32, 30));
    let apps = (0..n)
        .map(|i| {
            app(
                i,
                i as f64,
                vec![comp(Class::Core, 1.0, 40.0, 7200.0, &[0.5], &mem)],
            )
        })
        .collect();
    one_host(16.0, 100.0, apps)
}

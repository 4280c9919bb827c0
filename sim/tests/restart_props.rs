//! Property: components that restart in place after an OOM kill
//! (`OomRestart::Component`, the Google 2019 services) never lose work and
//! never finish before their work is done, whatever kills them.

use std::sync::Arc;

use datasets::workload::{
    AppSpec, ComponentSpec, HostSpec, OomRestart, Shape, UsageSeries, Workload,
};
use proptest::prelude::*;
use shaper::Policy;
use sim::{simulate, ForecasterSource, SimConfig};
use tailor_core::{Class, Resources};

const GIB: f64 = 1_073_741_824.0;

/// A service task: memory series of `mem` (fractions of a 1 GiB request),
/// `samples` 300 s samples of work.
fn task(mem: &[f32], samples: usize) -> ComponentSpec {
    let mut c = ComponentSpec::new(
        Class::Core,
        Resources::new(1.0, GIB),
        samples as f64 * 300.0,
        UsageSeries::new(
            300.0,
            Shape::scaled(Arc::from(vec![0.5f32]), 1.0),
            Shape::scaled(Arc::from(mem.to_vec()), GIB),
        ),
    );
    c.oom_restart = OomRestart::Component;
    c
}

fn workload() -> impl Strategy<Value = Workload> {
    let series = prop::collection::vec(
        prop::sample::select(vec![0.1f32, 0.2, 0.3, 0.9, 1.0]),
        4..30,
    );
    let app = prop::collection::vec((series, 2usize..30), 1..4);
    (prop::collection::vec(app, 1..6), 1usize..3).prop_map(|(apps, hosts)| Workload {
        name: "restart-props".into(),
        hosts: vec![
            HostSpec {
                capacity: Resources::new(8.0, 4.0 * GIB),
            };
            hosts
        ],
        apps: apps
            .into_iter()
            .enumerate()
            .map(|(i, tasks)| AppSpec {
                id: i as u64,
                arrival_s: 60.0 * i as f64,
                priority: 0,
                components: tasks.iter().map(|(m, n)| task(m, *n)).collect(),
            })
            .collect(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn a_task_restarted_in_place_keeps_its_work(wl in workload()) {
        // Optimistic shaping with no buffer: every spike above the running
        // peak is a kill (or a host OOM), and nothing is evicted.
        let mut c = SimConfig::default();
        c.shaper.policy = Policy::Optimistic;
        c.forecaster_source = ForecasterSource::Model;
        c.forecaster.kind = forecaster::config::ModelKind::Last;
        c.shaper.k1 = 0.0;
        c.shaper.k2 = 0.0;
        c.parallel_forecasts = false;
        let r = simulate(&wl, &c, None).expect("run");
        let s = &r.summary;
        prop_assert_eq!(s.apps_completed, wl.apps.len(), "{:?}", s);
        prop_assert_eq!(s.work_lost_s, 0.0, "{:?}", s);
        for (a, spec) in r.metrics.apps.iter().zip(&wl.apps) {
            let longest = spec.components.iter().map(|c| c.work_s).fold(0.0, f64::max);
            let took = a.finished_s.expect("completed") - a.arrival_s;
            // CPU is never short (0.5 of 1 core), so a task runs at full
            // speed whenever it runs: it cannot finish before its work.
            prop_assert!(took >= longest - 1e-6, "{} < {}: {:?}", took, longest, a);
        }
    }
}

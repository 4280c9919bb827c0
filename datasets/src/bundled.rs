//! The default workload shipped inside the binary.
//!
//! `data/google-2011-slice/` holds every Google 2011 task_events part-0 row
//! of the tasks first placed on 80 machines chosen by a seeded hash among the
//! machines present at trace start (the job_events rows of their jobs and the
//! machine_events rows of those machines; rows copied byte for byte by
//! `cargo run -p datasets --example make_bundle`). The files are embedded
//! with `include_bytes!`, so [`bundled_workload`] works from any directory.
//! Usage series come from the bundled pool ([`crate::pool::UsagePool::bundled`]).

use crate::google2011::{
    build_workload_from, BuildReport, Google2011Config, Google2011Sources, Input,
};
use crate::pool::UsagePool;
use crate::workload::Workload;
use crate::DatasetError;

macro_rules! slice_file {
    ($rel:literal) => {
        Input::Static {
            name: concat!("data/google-2011-slice/", $rel).to_string(),
            bytes: include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../data/google-2011-slice/",
                $rel
            )),
        }
    };
}

/// The embedded trace slice as builder sources.
pub fn bundled_sources() -> Google2011Sources {
    Google2011Sources {
        task_events: vec![slice_file!("task_events/part-00000-of-00500.csv.gz")],
        job_events: vec![slice_file!("job_events/part-00000-of-00500.csv.gz")],
        machine_events: vec![slice_file!("machine_events/part-00000-of-00001.csv.gz")],
        task_usage: Vec::new(),
    }
}

/// The configuration [`bundled_workload`] uses: the builder defaults
/// (hosts sized against a 32-core / 128 GiB largest machine, censored
/// unfinished tasks, 80% of multi-task batch jobs elastic).
pub fn bundled_config() -> Google2011Config {
    Google2011Config {
        name: Some("google-2011:bundled-slice-80-machines".to_string()),
        ..Google2011Config::default()
    }
}

/// The default workload for `tailor replay` with no arguments: the
/// embedded Google 2011 slice built with [`bundled_config`].
pub fn bundled_workload() -> Result<Workload, DatasetError> {
    bundled_workload_with(&bundled_config()).map(|(w, _)| w)
}

/// The embedded slice built with another configuration (e.g. a different
/// `host_capacity_scale` or class rule), with the build report.
pub fn bundled_workload_with(
    cfg: &Google2011Config,
) -> Result<(Workload, BuildReport), DatasetError> {
    let pool = UsagePool::bundled()?;
    build_workload_from(&bundled_sources(), cfg, &pool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Class;

    #[test]
    fn bundled_workload_is_sane() {
        let (w, r) = bundled_workload_with(&bundled_config()).expect("bundled");
        assert_eq!(w.hosts.len(), 80);
        assert!(
            w.apps.len() >= 100 && w.apps.len() <= 1000,
            "{} apps",
            w.apps.len()
        );
        let comps: usize = w.apps.iter().map(|a| a.components.len()).sum();
        assert!((500..=5000).contains(&comps), "{comps} components");
        assert_eq!(r.tasks_kept as usize, comps);
        assert!(w.apps.windows(2).all(|p| p[0].arrival_s <= p[1].arrival_s));
        for a in &w.apps {
            assert!(a.arrival_s >= 0.0 && a.arrival_s <= r.window_end_s);
            assert!(a.components.iter().any(|c| c.class == Class::Core));
            for c in &a.components {
                assert!(c.work_s >= 1.0 && c.work_s.is_finite());
                assert!(c.request.cpu_cores > 0.0 && c.request.mem_bytes > 0.0);
                let u = c.usage.at(600.0);
                assert!(
                    u.cpu_cores <= c.request.cpu_cores + 1e-9
                        && u.mem_bytes <= c.request.mem_bytes + 1e-3
                );
            }
        }
        assert!(r.elastic_apps > 0);
        // Deterministic.
        assert_eq!(bundled_workload().expect("again"), w);
    }
}

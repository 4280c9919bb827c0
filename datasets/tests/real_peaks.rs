//! In-interval memory peaks and request changes on the real traces in
//! ../shared/data (skipped when absent).

mod common;
use common::shared;

use datasets::google2011::{build_workload_from, Google2011Config, Google2011Sources};
use datasets::google2019::{build_workload_from_files, task_files, Google2019Config};
use datasets::pool::UsagePool;

#[test]
fn google2011_task_usage_components_carry_max_memory() {
    let Some(d) = shared() else { return };
    let sources = Google2011Sources::from_dir(&d.join("google-2011")).expect("sources");
    let pool = UsagePool::bundled().expect("pool");
    let (w, r) = build_workload_from(&sources, &Google2011Config::default(), &pool).expect("build");
    // Trace usage = the one-window series of the sample (pool shapes are longer).
    let trace: Vec<_> = w
        .apps
        .iter()
        .flat_map(|a| &a.components)
        .filter(|c| c.usage.mem_bytes.values.len() == 1)
        .collect();
    assert!(trace.len() as u64 >= r.usage_from_trace / 2, "{r:?}");
    let mut above = 0;
    for c in &trace {
        assert!(c.usage.mem_peak_bytes.is_some());
        assert!(c.usage.mem_peak(0) >= c.usage.mem_bytes.at(0));
        if c.usage.mem_peak(0) > c.usage.mem_bytes.at(0) * 1.001 {
            above += 1;
        }
    }
    println!(
        "{} trace-usage components, {above} with a peak > mean",
        trace.len()
    );
    assert!(above > trace.len() / 10, "{above} of {}", trace.len());
}

#[test]
fn google2019_instance_usage_directory() {
    let Some(d) = shared() else { return };
    let files = task_files(&d.join("google-2019/instance_usage")).expect("files");
    assert_eq!(files.len(), 19);
    let (w, r) = build_workload_from_files(&files, &Google2019Config::default()).expect("build");
    println!("{r:?}");
    assert_eq!((r.apps, r.tasks, r.skipped_files), (2, 19, 0));
    assert!(r.components >= 19);
    // SOURCES.md: job 113812204462's tasks here change memory limits in place.
    assert!(r.request_changes >= 20, "{r:?}");
    assert!(r.windows_peak_over_request > 0);
    for a in &w.apps {
        assert!(a.components.iter().any(|c| c.start_delay_s == 0.0));
        for c in &a.components {
            assert!(c.usage.mem_peak_bytes.is_some());
            assert!(c.work_s >= 300.0);
            assert!(c
                .request_changes
                .windows(2)
                .all(|p| p[0].at_elapsed_s < p[1].at_elapsed_s));
        }
    }
    // The whole google-2019 folder: the 5 tasks of instance_usage_job113 join
    // the same job; the cluster aggregate is not a task file and is skipped.
    let files = task_files(&d.join("google-2019")).expect("files");
    let (w, r) = build_workload_from_files(&files, &Google2019Config::default()).expect("build");
    assert_eq!((r.apps, r.tasks, r.skipped_files), (2, 24, 1), "{r:?}");
    assert_eq!(w.apps.len(), 2);
}

//! The Alibaba GPU workload builder on the full lists in
//! ../shared/data/alibaba-gpu-lifecycle (skipped when absent): the counts
//! of `SOURCES.md`.

mod common;
use common::shared;

use datasets::alibaba_gpu::{build_workload_with_report, AlibabaGpuConfig};
use datasets::workload::OomRestart;

#[test]
fn full_gpu_v2025_instance_list() {
    let Some(d) = shared() else { return };
    let p = d.join("alibaba-gpu-lifecycle/gpu-v2025/disaggregated_DLRM_trace.csv");
    let (w, r) = build_workload_with_report(&p, &AlibabaGpuConfig::default()).expect("build");
    assert_eq!(r.rows, 16_485 + 7_386, "CN + HN instances");
    assert_eq!(r.apps, 156);
    assert_eq!(w.apps.len(), 156);
    assert_eq!(
        r.without_start,
        23_871 - 16_591,
        "instances without a creation time"
    );
    assert_eq!(
        r.without_end,
        23_871 - 14_993,
        "instances without a deletion time"
    );
    assert_eq!(r.trace_end_s, 2_677_541.0);
    assert_eq!(r.components + r.skipped_no_work, r.rows);
    assert_eq!(r.formats(), "gpu-v2025");
    assert!(w
        .apps
        .iter()
        .flat_map(|a| &a.components)
        .all(|c| c.oom_restart == OomRestart::Component));
    assert!(r.hosts >= 1 && r.nodes == 0);
    assert!(r.capacity_cpu_cores >= 1.25 * r.peak_request_cpu_cores);
    assert!(r.capacity_mem_gib >= 1.25 * r.peak_request_mem_gib);
}

#[test]
fn full_gpu_v2023_pod_list_and_nodes() {
    let Some(d) = shared() else { return };
    let dir = d.join("alibaba-gpu-lifecycle/gpu-v2023");
    let (w, r) = build_workload_with_report(&dir, &AlibabaGpuConfig::default()).expect("build");
    assert_eq!(r.rows, 8_152, "pods");
    assert_eq!(r.apps + r.skipped_no_work, 8_152, "one application per pod");
    assert_eq!((r.nodes, r.hosts), (1_523, 1_523));
    assert_eq!(w.hosts.len(), 1_523);
    assert_eq!(r.skipped_files, 0);
    assert_eq!(r.trace_end_s, 12_902_960.0);
    let count = |p: i32| w.apps.iter().filter(|a| a.priority == p).count();
    // LS 4,647, BE 3,398 (less the pods without work), Burstable, Guaranteed
    assert!(count(2) + count(0) >= 4_647 + 3_398 - r.skipped_no_work as usize);
    assert_eq!(count(3), 7);
    assert!(count(1) > 0);
}

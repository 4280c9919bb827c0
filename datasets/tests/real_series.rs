//! `load_series` on the real files in ../shared/data (skipped when absent).

mod common;
use common::shared;

use datasets::series::{detect_format, load_series, SeriesFormat};

#[test]
fn bitbrains_vm() {
    let Some(d) = shared() else { return };
    let p = d.join("bitbrains-rnd/2013-7/1.csv");
    assert_eq!(detect_format(&p).expect("detect"), SeriesFormat::Bitbrains);
    let s = load_series(&p, None).expect("load");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].name, "1:CPU usage [MHZ]");
    assert!(
        (8249..=8262).contains(&s[0].values.len()),
        "{}",
        s[0].values.len()
    );
    assert!((s[0].values[0] - 87.7799835).abs() < 1e-9);
    let m = load_series(&p, Some("Memory usage [KB]")).expect("mem");
    assert!((m[0].values[0] - 1034592.8).abs() < 1e-6);
}

#[test]
fn google2019_instance() {
    let Some(d) = shared() else { return };
    let p = d.join("google-2019/instance_usage_job113/22-300000000-2531793000000.csv");
    assert_eq!(
        detect_format(&p).expect("detect"),
        SeriesFormat::Google2019InstanceUsage
    );
    let s = load_series(&p, None).expect("load");
    assert_eq!(s.len(), 1);
    assert_eq!(
        s[0].name,
        "22-300000000-2531793000000/113812204462-22:avg_cpu_usage"
    );
    assert_eq!(s[0].values.len(), 6203);
    assert!((s[0].values[0] - 0.020233154296875).abs() < 1e-12);
    let m = load_series(&p, Some("avg_memory_usage")).expect("mem");
    assert!((m[0].values[0] - 0.007324218749999999).abs() < 1e-12);
}

#[test]
fn google2011_derived() {
    let Some(d) = shared() else { return };
    let p = d.join("google-2011/derived/data_resource_usage_5Minutes_6176858948.csv");
    assert_eq!(
        detect_format(&p).expect("detect"),
        SeriesFormat::Google2011Derived
    );
    let s = load_series(&p, None).expect("load");
    assert_eq!(s[0].values.len(), 8352);
    assert!((s[0].values[0] - 0.668380975723).abs() < 1e-12);
    let m = load_series(&p, Some("canonical_memory_usage")).expect("mem");
    assert!((m[0].values[0] - 0.158745795488).abs() < 1e-12);
    let by_index = load_series(&p, Some("4")).expect("idx");
    assert_eq!(by_index, m);
}

#[test]
fn gcd_vms_archive() {
    let Some(d) = shared() else { return };
    let p = d.join("google-2011/derived/GCD_VMs.tar.gz");
    let s = load_series(&p, Some("mem")).expect("load");
    assert_eq!(s.len(), 1600);
    assert!(s.iter().all(|x| x.values.len() == 288));
    assert!(s
        .iter()
        .all(|x| x.name.starts_with("vm_") && x.name.ends_with(":mem")));
}

#[test]
fn alibaba_container_usage() {
    let Some(d) = shared() else { return };
    let p = d.join("alibaba-2018/container_usage.sample10000.csv");
    assert_eq!(
        detect_format(&p).expect("detect"),
        SeriesFormat::AlibabaContainerUsage
    );
    let s = load_series(&p, None).expect("load");
    let lens: Vec<(String, usize)> = s.iter().map(|x| (x.name.clone(), x.values.len())).collect();
    let want = [
        ("(empty container_id)", 3503),
        ("c_1", 1018),
        ("c_10", 1024),
        ("c_100", 1025),
        ("c_1000", 261),
        ("c_10000", 1015),
        ("c_10001", 1013),
        ("c_10002", 993),
        ("c_10003", 148),
    ];
    assert_eq!(lens.len(), want.len());
    for ((name, n), (w, wn)) in lens.iter().zip(want) {
        assert_eq!(
            name,
            &format!("container_usage.sample10000/{w}:cpu_util_percent")
        );
        assert_eq!(*n, wn);
    }
}

#[test]
fn plain_multi_column_csv() {
    let Some(d) = shared() else { return };
    let p = d.join("azure-v2/vm_cpu_readings_month_aggregated_cpu_mem.csv");
    let s = load_series(&p, None).expect("load");
    assert_eq!(
        s[0].name,
        "vm_cpu_readings_month_aggregated_cpu_mem:cpu_usage"
    );
    assert_eq!(s[0].values.len(), 8640);
}

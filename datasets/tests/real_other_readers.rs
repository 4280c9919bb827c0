//! Typed readers for Google 2019, Alibaba 2018 and Bitbrains on the real
//! files in ../shared/data (skipped when absent), plus no-panic properties.

mod common;
use common::shared;

use datasets::alibaba2018::{ContainerMeta, ContainerUsage, MachineMeta};
use datasets::bitbrains::VmSample;
use datasets::google2019::InstanceUsage;
use datasets::{Table, TableReader};
use std::collections::HashSet;
use std::path::Path;

fn read_all<T: Table>(p: &Path) -> Vec<T> {
    TableReader::<T>::open(p, false)
        .expect("open")
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn google2019_instances() {
    let Some(d) = shared() else { return };
    let dir = d.join("google-2019/instance_usage_job113");
    for (file, rows) in [
        ("22-300000000-2531793000000.csv", 6203),
        ("81-300000000-2678700000000.csv", 5942),
        ("82-300000000-1909049000000.csv", 5427),
        ("85-300000000-2678700000000.csv", 5212),
        ("115-300000000-2678700000000.csv", 5111),
    ] {
        let v: Vec<InstanceUsage> = read_all(&dir.join(file));
        assert_eq!(v.len(), rows, "{file}");
        assert!(v
            .iter()
            .all(|r| r.collection_id == 113812204462 && r.priority == Some(200)));
    }
    let v: Vec<InstanceUsage> = read_all(&dir.join("22-300000000-2531793000000.csv"));
    assert_eq!(v[0].time_us, 300_000_000);
    assert_eq!(v[0].unique_id.as_deref(), Some("113812204462-22"));
    assert_eq!(v[0].alloc_instance_index, Some(-1));
    assert_eq!(v[0].avg_cpu_usage, Some(0.020233154296875));
    assert_eq!(v[0].cpu_usage_percentiles[0], Some(0.013656616210937));
}

#[test]
fn alibaba_tables() {
    let Some(d) = shared() else { return };
    let a = d.join("alibaba-2018");
    let usage: Vec<ContainerUsage> = read_all(&a.join("container_usage.sample10000.csv"));
    assert_eq!(usage.len(), 10_000);
    assert_eq!(
        usage.iter().filter(|u| u.container_id.is_none()).count(),
        3503
    );
    assert_eq!(
        usage.iter().map(|u| u.time_s).fold(f64::INFINITY, f64::min),
        86_510.0
    );
    assert_eq!(
        usage.iter().map(|u| u.time_s).fold(0.0, f64::max),
        777_570.0
    );
    let meta: Vec<ContainerMeta> = read_all(&a.join("container_meta.first20000rows.csv"));
    assert_eq!(meta.len(), 20_000);
    assert_eq!(
        meta.iter()
            .map(|m| m.container_id.as_str())
            .collect::<HashSet<_>>()
            .len(),
        3861
    );
    assert_eq!(meta[0].cpu_request, Some(400.0));
    let machines: Vec<MachineMeta> = read_all(&a.join("machine_meta.csv"));
    assert_eq!(machines.len(), 17_592);
    assert_eq!(
        machines
            .iter()
            .map(|m| m.machine_id.as_str())
            .collect::<HashSet<_>>()
            .len(),
        4034
    );
    assert_eq!(machines[0].cpu_num, Some(96.0));
}

#[test]
fn bitbrains_vms() {
    let Some(d) = shared() else { return };
    for i in 1..=10 {
        let v: Vec<VmSample> = read_all(&d.join(format!("bitbrains-rnd/2013-7/{i}.csv")));
        assert!((8249..=8262).contains(&v.len()), "{i}.csv: {}", v.len());
        assert!(v.windows(2).all(|w| w[1].time_s > w[0].time_s));
    }
    let v: Vec<VmSample> = read_all(&d.join("bitbrains-rnd/2013-7/1.csv"));
    assert_eq!(v[0].time_s, 1_372_629_804);
    assert_eq!(v[0].cpu_cores, 2.0);
    assert_eq!(v[0].mem_usage_kb, 1034592.8);
}

/// The 60 VMs of `bitbrains-rnd/2013-7` as one workload: the counts of
/// SOURCES.md (VM 54 is on for one row; the two collection gaps split
/// the VMs that run through them).
#[test]
fn bitbrains_workload_from_the_full_month() {
    let Some(d) = shared() else { return };
    let dir = d.join("bitbrains-rnd/2013-7");
    let cfg = datasets::bitbrains::BitbrainsConfig::default();
    let (w, r) = datasets::bitbrains::build_workload_with_report(&dir, &cfg).expect("build");
    assert_eq!((r.files, r.skipped_files, r.skipped_rows), (60, 0, 0));
    assert_eq!(r.rows, 508_142);
    assert_eq!((r.vms_never_on, r.apps), (0, 60));
    assert_eq!(w.apps.len(), 60);
    assert_eq!(r.components, 116, "{r:?}");
    assert!(r.duplicate_rows > 0, "VMs 20 and 54 repeat timestamps");
    // a month of 300 s windows
    assert!(
        (29.0 * 86_400.0..31.0 * 86_400.0).contains(&r.trace_end_s),
        "{r:?}"
    );
    assert!(w.hosts.len() as f64 * 8.0 * 511.0 >= 1.25 * r.peak_request_mem_gib);
}

#[test]
fn bitbrains_bad_row_names_line() {
    let text = "Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\tCPU usage [%];\tMemory capacity provisioned [KB];\tMemory usage [KB];\tDisk read throughput [KB/s];\tDisk write throughput [KB/s];\tNetwork received throughput [KB/s];\tNetwork transmitted throughput [KB/s]\n\
                1;\t2;\t3;\t4;\t5;\t6;\t7;\t8;\t9;\t10;\t11\n\
                2;\t2;\tx;\t4;\t5;\t6;\t7;\t8;\t9;\t10;\t11\n";
    let mut r = TableReader::<VmSample>::from_reader(
        "vm.csv",
        std::io::Cursor::new(text.as_bytes().to_vec()),
        false,
    )
    .expect("r");
    assert_eq!(r.next().expect("row").expect("ok").net_tx_kb_per_s, 11.0);
    let e = r.next().expect("row").expect_err("bad");
    assert!(e.to_string().starts_with("vm.csv:3: CPU capacity"), "{e}");
}

proptest::proptest! {
    #[test]
    fn other_readers_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048), lenient in proptest::prelude::any::<bool>()) {
        fn drain<T: Table>(data: &[u8], lenient: bool) {
            if let Ok(mut r) = TableReader::<T>::from_reader("f", std::io::Cursor::new(data.to_vec()), lenient) {
                for _ in 0..10_000 {
                    if r.next().is_none() {
                        break;
                    }
                }
            }
        }
        drain::<InstanceUsage>(&bytes, lenient);
        drain::<ContainerUsage>(&bytes, lenient);
        drain::<ContainerMeta>(&bytes, lenient);
        drain::<MachineMeta>(&bytes, lenient);
        drain::<VmSample>(&bytes, lenient);
    }

    #[test]
    fn load_series_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1024), name in "(a\\.csv|b\\.tar\\.gz|c\\.txt)") {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join(name);
        std::fs::write(&p, &bytes).expect("write");
        let _ = datasets::series::load_series(&p, None);
        let _ = datasets::series::load_series(&p, Some("1"));
    }
}

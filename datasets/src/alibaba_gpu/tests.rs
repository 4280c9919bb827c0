use super::*;
use proptest::prelude::*;
use std::sync::{Arc, OnceLock};

const V2025: &str = "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,creation_time,scheduled_time,deletion_time";
const V2023: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time";
const NODES: &str = "sn,cpu_milli,memory_mib,gpu,model";

fn pool() -> &'static UsagePool {
    static POOL: OnceLock<UsagePool> = OnceLock::new();
    POOL.get_or_init(|| UsagePool::bundled().expect("bundled pool"))
}

/// A gpu-v2025 row: app, cpu (vCPU), memory (GiB), creation, deletion
/// (empty strings for none).
fn inst(sn: u32, app: &str, cpu: f64, mem: f64, c: &str, d: &str) -> String {
    let s = if c.is_empty() { "" } else { c };
    format!("instance_{sn},CN,{app},{cpu},{cpu},0,0,0,0,{mem},{mem},10.0,10.0,8,{c},{s},{d}")
}

/// A gpu-v2023 row: name, cpu_milli, memory_mib, qos, creation, deletion,
/// scheduled.
fn pod(name: &str, cpu: u32, mem: u32, qos: &str, c: &str, d: &str, s: &str) -> String {
    let phase = if s.is_empty() { "Pending" } else { "Running" };
    format!("{name},{cpu},{mem},1,1000,,{qos},{phase},{c},{d},{s}")
}

fn write(dir: &Path, name: &str, header: &str, rows: &[String]) -> PathBuf {
    let p = dir.join(name);
    let mut text = header.to_string();
    for r in rows {
        text.push('\n');
        text.push_str(r);
    }
    text.push('\n');
    std::fs::write(&p, text).expect("write");
    p
}

fn build(
    path: &Path,
    cfg: &AlibabaGpuConfig,
) -> Result<(Workload, AlibabaGpuReport), DatasetError> {
    build_workload_from(path, cfg, pool())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn detects_formats_by_header() {
    assert_eq!(format_of_header(V2025), Some(AlibabaGpuFormat::GpuV2025));
    assert_eq!(format_of_header(V2023), Some(AlibabaGpuFormat::GpuV2023));
    assert_eq!(
        format_of_header(NODES),
        Some(AlibabaGpuFormat::GpuV2023Nodes)
    );
    // a byte-order mark, a CR and spaces around names are tolerated
    assert_eq!(
        format_of_header(&format!("\u{feff}{}\r", V2023.replace(',', ", "))),
        Some(AlibabaGpuFormat::GpuV2023)
    );
    assert_eq!(format_of_header("name,cpu_milli"), None);
    assert_eq!(format_of_header(""), None);
    // columns in another order are another format
    assert_eq!(format_of_header("cpu_milli,sn,memory_mib,gpu,model"), None);
    let d = tempfile::tempdir().expect("tmp");
    let p = write(d.path(), "x.csv", V2025, &[]);
    assert_eq!(
        detect_format(&p).expect("read"),
        Some(AlibabaGpuFormat::GpuV2025)
    );
}

#[test]
fn groups_apps_with_start_delays_empty_times_and_trace_end() {
    let d = tempfile::tempdir().expect("tmp");
    let p = write(
        d.path(),
        "dlrm.csv",
        V2025,
        &[
            // app_b arrives at 50: its instance 0 at 200, instance 1 at 50
            inst(0, "app_b", 4.0, 32.0, "200.5", "400"),
            inst(1, "app_b", 2.0, 16.0, "50", ""),
            // app_a existed before the trace: arrival 0
            inst(2, "app_a", 12.0, 120.0, "", "75"),
            inst(3, "app_a", 12.0, 120.0, "", ""),
            // no work: created at the trace end, never deleted
            inst(4, "app_a", 12.0, 120.0, "1000", ""),
            // app_c: only a zero-work instance; left out
            inst(5, "app_c", 1.0, 1.0, "300", "300"),
            // NaN (as the trace's README writes absent times) is empty
            inst(6, "app_a", 12.0, 120.0, "NaN", "nan"),
        ],
    );
    let (w, r) = build(&p, &AlibabaGpuConfig::default()).expect("build");
    assert_eq!(w.name, "alibaba-gpu:dlrm.csv");
    assert_eq!((r.files_v2025, r.files_v2023, r.rows), (1, 0, 7));
    assert_eq!(
        (r.without_start, r.without_end, r.skipped_no_work),
        (3, 4, 2)
    );
    assert_eq!(r.trace_end_s, 1000.0);
    assert_eq!(r.formats(), "gpu-v2025");
    assert_eq!((r.apps, r.components), (2, 5));
    // ids in arrival order
    let ids: Vec<(u64, f64)> = w.apps.iter().map(|a| (a.id, a.arrival_s)).collect();
    assert_eq!(ids, vec![(0, 0.0), (1, 50.0)]);
    let a = &w.apps[0];
    assert_eq!(a.priority, 0);
    let works: Vec<f64> = a.components.iter().map(|c| c.work_s).collect();
    assert_eq!(
        works,
        vec![75.0, 1000.0, 1000.0],
        "deleted at 75; censored at the trace end"
    );
    assert!(a.components.iter().all(|c| c.start_delay_s == 0.0));
    assert!(a
        .components
        .iter()
        .all(|c| c.oom_restart == OomRestart::Component && c.class == Class::Core));
    assert!(close(a.components[0].request.mem_bytes, 120.0 * GIB));
    assert_eq!(a.components[0].request.cpu_cores, 12.0);
    let b = &w.apps[1];
    // file order kept; delays from the app's arrival
    let delays: Vec<f64> = b.components.iter().map(|c| c.start_delay_s).collect();
    assert_eq!(delays, vec![150.5, 0.0]);
    assert_eq!(b.components[0].work_s, 199.5);
    assert_eq!(b.components[1].work_s, 950.0);
}

#[test]
fn homogeneous_hosts_hold_the_peak_request() {
    let d = tempfile::tempdir().expect("tmp");
    // CPU peak 3 x 10 = 30 cores (all three overlap); memory peak 100 GiB
    // (the 100 GiB instance alone: it ends when the others start).
    let p = write(
        d.path(),
        "dlrm.csv",
        V2025,
        &[
            inst(0, "a", 10.0, 8.0, "100", "200"),
            inst(1, "a", 10.0, 8.0, "100", "200"),
            inst(2, "a", 10.0, 8.0, "100", "200"),
            inst(3, "b", 1.0, 100.0, "0", "100"),
        ],
    );
    let (w, r) = build(&p, &AlibabaGpuConfig::default()).expect("build");
    assert_eq!(r.peak_request_cpu_cores, 30.0);
    assert!(close(r.peak_request_mem_gib, 100.0));
    // capacity 8 x largest: 80 cores, 800 GiB; count ceil(30 x 1.25 / 80) = 1
    assert_eq!(w.hosts.len(), 1);
    assert_eq!(w.hosts[0].capacity.cpu_cores, 80.0);
    assert!(close(w.hosts[0].capacity.mem_bytes, 800.0 * GIB));
    // a smaller host: ceil(30 x 1.25 / 10) = 4 in CPU, ceil(100 x 1.25 / 128) = 1 in memory
    let cfg = AlibabaGpuConfig {
        host_capacity: Some(Resources::new(10.0, 128.0 * GIB)),
        ..Default::default()
    };
    let (w, r) = build(&p, &cfg).expect("build");
    assert_eq!((w.hosts.len(), r.hosts, r.nodes), (4, 4, 0));
    assert_eq!(r.capacity_cpu_cores, 40.0);
    // memory binds: ceil(100 x 2 / 64) = 4 > ceil(30 x 2 / 100) = 1
    let cfg = AlibabaGpuConfig {
        host_capacity: Some(Resources::new(100.0, 64.0 * GIB)),
        headroom: 2.0,
        ..Default::default()
    };
    assert_eq!(build(&p, &cfg).expect("build").0.hosts.len(), 4);
    let cfg = AlibabaGpuConfig {
        hosts: Some(7),
        ..Default::default()
    };
    let (w, _) = build(&p, &cfg).expect("build");
    assert_eq!(w.hosts.len(), 7);
    assert_eq!(w.hosts[0].capacity.cpu_cores, 80.0);
    // a host count beyond the bound is an error naming the file
    let cfg = AlibabaGpuConfig {
        host_capacity: Some(Resources::new(1e-4, 1.0)),
        ..Default::default()
    };
    let msg = build(&p, &cfg).expect_err("too many hosts").to_string();
    assert!(msg.contains("dlrm.csv") && msg.contains("100000"), "{msg}");
}

#[test]
fn node_list_gives_hosts_and_qos_gives_priorities() {
    let d = tempfile::tempdir().expect("tmp");
    let pods = write(
        d.path(),
        "openb_pod_list_default.csv",
        V2023,
        &[
            pod("p0", 12000, 16384, "LS", "0", "100", "0"),
            pod("p1", 500, 1024, "BE", "10", "20", "12"),
            pod("p2", 1000, 2048, "Guaranteed", "5", "50", ""),
            pod("p3", 1000, 2048, "Burstable", "5", "60", "5"),
            pod("p4", 0, 0, "BE", "5", "60", "5"),
        ],
    );
    write(
        d.path(),
        NODE_LIST_FILE,
        NODES,
        &[
            "node-0,32000,262144,0,".to_string(),
            "node-1,96000,393216,8,V100M32".to_string(),
        ],
    );
    let (w, r) = build(&pods, &AlibabaGpuConfig::default()).expect("build");
    assert_eq!((r.nodes, r.hosts, r.files_v2023), (2, 2, 1));
    assert_eq!(r.unscheduled, 1);
    assert_eq!(w.hosts[1].capacity, Resources::new(96.0, 393216.0 * MIB));
    assert_eq!(w.apps.len(), 5, "one application per pod");
    let by: Vec<(u64, f64, i32)> = w
        .apps
        .iter()
        .map(|a| (a.id, a.arrival_s, a.priority))
        .collect();
    // arrival order, ties in file order
    assert_eq!(
        by,
        vec![
            (0, 0.0, 2),
            (1, 5.0, 3),
            (2, 5.0, 1),
            (3, 5.0, 0),
            (4, 10.0, 0)
        ]
    );
    for a in &w.apps {
        assert_eq!(a.components.len(), 1);
        let c = &a.components[0];
        assert_eq!(c.oom_restart, OomRestart::Application);
        assert_eq!(c.start_delay_s, 0.0);
    }
    let c = &w.apps[0].components[0];
    assert_eq!(c.request, Resources::new(12.0, 16384.0 * MIB));
    assert_eq!(c.work_s, 100.0);
    // a zero request is floored at min_request
    assert_eq!(
        w.apps[3].components[0].request,
        Resources::new(0.01, 16.0 * MIB)
    );
    // the directory gives the same workload (the node list is not an input list)
    let (wd, rd) = build(d.path(), &AlibabaGpuConfig::default()).expect("dir");
    assert_eq!((wd.apps.len(), wd.hosts.len(), rd.skipped_files), (5, 2, 0));
    // host_capacity or hosts set: homogeneous hosts instead of the node list
    let cfg = AlibabaGpuConfig {
        hosts: Some(3),
        ..Default::default()
    };
    let (w, r) = build(&pods, &cfg).expect("build");
    assert_eq!((w.hosts.len(), r.nodes), (3, 0));
    assert_eq!(w.hosts[0].capacity.cpu_cores, 96.0, "8 x 12 cores");
    // a broken node list is an error naming it
    write(
        d.path(),
        NODE_LIST_FILE,
        NODES,
        &["node-0,0,262144,0,".to_string()],
    );
    let msg = build(&pods, &AlibabaGpuConfig::default())
        .expect_err("zero capacity")
        .to_string();
    assert!(
        msg.contains(&format!("{NODE_LIST_FILE}:2: cpu_milli")),
        "{msg}"
    );
}

#[test]
fn directory_merges_lists_and_skips_other_csvs() {
    let d = tempfile::tempdir().expect("tmp");
    write(
        d.path(),
        "a_dlrm.csv",
        V2025,
        &[
            inst(0, "app_0", 4.0, 32.0, "100", "400"),
            inst(1, "app_0", 4.0, 32.0, "", "400"),
        ],
    );
    write(
        d.path(),
        "b_pods.csv",
        V2023,
        &[
            pod("app_0", 1000, 1024, "LS", "50", "60", "50"),
            pod("p1", 1000, 1024, "LS", "0", "60", "0"),
        ],
    );
    std::fs::write(d.path().join("c_other.csv"), "a,b\n1,2\n").expect("write");
    std::fs::write(d.path().join("notes.txt"), "not a csv").expect("write");
    let (w, r) = build(d.path(), &AlibabaGpuConfig::default()).expect("build");
    assert_eq!((r.files_v2025, r.files_v2023, r.skipped_files), (1, 1, 1));
    assert_eq!(r.formats(), "gpu-v2025+gpu-v2023");
    assert_eq!(r.nodes, 0, "no node list: homogeneous hosts");
    let ids: Vec<u64> = w.apps.iter().map(|a| a.id).collect();
    assert_eq!(ids, vec![0, 1, 2], "unique, sequential");
    // ties at 0: file order (the instance list sorts first)
    assert_eq!(w.apps[0].components.len(), 2);
    assert_eq!(w.apps[1].priority, 2);
    assert_eq!(w.apps[2].arrival_s, 50.0);
    // a directory without any list
    let e = tempfile::tempdir().expect("tmp");
    std::fs::write(e.path().join("c_other.csv"), "a,b\n1,2\n").expect("write");
    let msg = build(e.path(), &AlibabaGpuConfig::default())
        .expect_err("no list")
        .to_string();
    assert!(
        msg.starts_with(&e.path().display().to_string()) && msg.contains("no gpu-v2025"),
        "{msg}"
    );
}

#[test]
fn every_error_names_file_line_and_column() {
    let d = tempfile::tempdir().expect("tmp");
    let ok = inst(0, "a", 1.0, 1.0, "0", "10");
    let cases: Vec<(String, &str)> = vec![
        (
            inst(1, "a", -1.0, 1.0, "0", "10"),
            "cpu_request: -1 is negative",
        ),
        (
            inst(1, "a", 1.0, f64::NAN, "0", "10"),
            "memory_request: \"NaN\" is not a finite",
        ),
        (
            inst(1, "a", 1.0, f64::INFINITY, "0", "10"),
            "memory_request: \"inf\" is not a finite",
        ),
        (
            inst(1, "a", 1.0, 1.0, "0", "1e300"),
            "deletion_time: 1e300 s is past",
        ),
        (
            inst(1, "a", 1.0, 1.0, "-5", "10"),
            "creation_time: -5 is negative",
        ),
        (
            inst(1, "a", 1.0, 1.0, "20", "10"),
            "deletion_time: 10 s is before creation_time 20 s",
        ),
        (
            inst(1, "a", 1.0, 1.0, "x", "10"),
            "creation_time: \"x\" is not a finite number",
        ),
        (
            inst(1, "", 1.0, 1.0, "0", "10"),
            "app_name: mandatory field is empty",
        ),
        (
            inst(1, "a", 1e7, 1.0, "0", "10"),
            "cpu_request: 10000000 is above",
        ),
        (
            "instance_1,CN,a,1".to_string(),
            "row has 4 fields, expected 17",
        ),
    ];
    for (i, (bad, want)) in cases.iter().enumerate() {
        let name = format!("bad{i}.csv");
        let p = write(d.path(), &name, V2025, &[ok.clone(), bad.clone()]);
        let msg = build(&p, &AlibabaGpuConfig::default())
            .expect_err(want)
            .to_string();
        assert!(msg.contains(&format!("{name}:3: ")), "{msg}");
        assert!(msg.contains(want), "{msg} does not contain {want}");
    }
    let p = write(
        d.path(),
        "qos.csv",
        V2023,
        &[
            pod("p0", 1, 1, "LS", "0", "1", "0"),
            pod("p1", 1, 1, "Gold", "0", "1", "0"),
        ],
    );
    let msg = build(&p, &AlibabaGpuConfig::default())
        .expect_err("qos")
        .to_string();
    assert!(
        msg.contains("qos.csv:3: qos: unknown value \"Gold\""),
        "{msg}"
    );
    // the file as a whole
    let p = write(d.path(), "header.csv", "a,b,c", &["1,2,3".to_string()]);
    let msg = build(&p, &AlibabaGpuConfig::default())
        .expect_err("header")
        .to_string();
    assert!(msg.contains("header.csv: unknown header"), "{msg}");
    let p = write(d.path(), "empty.csv", V2025, &[]);
    let msg = build(&p, &AlibabaGpuConfig::default())
        .expect_err("empty")
        .to_string();
    assert!(msg.contains("empty.csv: no usable row"), "{msg}");
    let p = write(
        d.path(),
        "nowork.csv",
        V2025,
        &[inst(0, "a", 1.0, 1.0, "5", "5")],
    );
    let msg = build(&p, &AlibabaGpuConfig::default())
        .expect_err("no work")
        .to_string();
    assert!(msg.contains("nowork.csv: no usable row"), "{msg}");
    let p = write(d.path(), "nodes.csv", NODES, &["n,1,1,0,".to_string()]);
    let msg = build(&p, &AlibabaGpuConfig::default())
        .expect_err("nodes")
        .to_string();
    assert!(msg.contains("nodes.csv: a gpu-v2023 node list"), "{msg}");
    let msg = build(&d.path().join("missing.csv"), &AlibabaGpuConfig::default())
        .expect_err("missing")
        .to_string();
    assert!(msg.contains("missing.csv"), "{msg}");
}

#[test]
fn lenient_skips_and_counts_malformed_rows() {
    let d = tempfile::tempdir().expect("tmp");
    let p = write(
        d.path(),
        "pods.csv",
        V2023,
        &[
            pod("p0", 1000, 1024, "LS", "0", "100", "0"),
            pod("p1", 1000, 1024, "Gold", "0", "100", "0"),
            pod("p2", 1000, 1024, "BE", "50", "40", "50"),
            "p3,1000".to_string(),
            pod("p4", 1000, 1024, "BE", "10", "1e99", "10"),
            pod("p5", 1000, 1024, "BE", "10", "20", "10"),
        ],
    );
    let cfg = AlibabaGpuConfig {
        lenient: true,
        ..Default::default()
    };
    let (w, r) = build(&p, &cfg).expect("lenient");
    assert_eq!((r.rows, r.skipped_rows, w.apps.len()), (2, 4, 2));
    // the skipped rows' times do not count towards the trace end
    assert_eq!(r.trace_end_s, 100.0);
    assert!(build(&p, &AlibabaGpuConfig::default()).is_err());
    // lenient, and nothing left: still an error naming the file
    let p = write(d.path(), "bad.csv", V2023, &["x".to_string()]);
    let msg = build(&p, &cfg).expect_err("nothing usable").to_string();
    assert!(msg.contains("bad.csv: no usable row"), "{msg}");
}

#[test]
fn config_validation_gathers_every_error() {
    let cfg = AlibabaGpuConfig {
        hosts: Some(0),
        headroom: 0.5,
        min_request: Resources::new(f64::NAN, -1.0),
        host_capacity: Some(Resources::new(0.0, f64::INFINITY)),
        ..Default::default()
    };
    let Err(DatasetError::Config(e)) = cfg.validate() else {
        panic!("expected a config error");
    };
    let keys = e.keys();
    for k in [
        "hosts",
        "headroom",
        "min_request.cpu_cores",
        "min_request.mem_bytes",
        "host_capacity.cpu_cores",
        "host_capacity.mem_bytes",
    ] {
        assert!(keys.contains(&k), "{k} missing from {keys:?}");
    }
    assert_eq!(e.len(), 6);
    let big = AlibabaGpuConfig {
        hosts: Some(MAX_HOSTS + 1),
        headroom: 101.0,
        ..Default::default()
    };
    assert!(matches!(big.validate(), Err(DatasetError::Config(e)) if e.len() == 2));
    assert!(AlibabaGpuConfig::default().validate().is_ok());
    // the builder refuses an invalid config before reading anything
    assert!(matches!(
        build(Path::new("/nonexistent"), &cfg),
        Err(DatasetError::Config(_))
    ));
    // unknown keys are refused; absent ones take their defaults
    let parsed: AlibabaGpuConfig =
        serde_json::from_str(r#"{"seed": 3, "pool_phase": "task", "hosts": 5}"#).expect("json");
    assert_eq!(
        (
            parsed.seed,
            parsed.pool_phase,
            parsed.hosts,
            parsed.headroom
        ),
        (3, PoolPhase::Task, Some(5), 1.25)
    );
    assert!(serde_json::from_str::<AlibabaGpuConfig>(r#"{"sed": 3}"#).is_err());
}

#[test]
fn pool_usage_is_deterministic_per_seed() {
    let d = tempfile::tempdir().expect("tmp");
    let rows: Vec<String> = (0..12)
        .map(|i| inst(i, &format!("app_{}", i % 4), 8.0, 64.0, "", ""))
        .chain(std::iter::once(inst(99, "app_x", 8.0, 64.0, "0", "86400")))
        .collect();
    let p = write(d.path(), "dlrm.csv", V2025, &rows);
    let with_seed = |seed: u64| {
        let cfg = AlibabaGpuConfig {
            seed,
            ..Default::default()
        };
        build(&p, &cfg).expect("build").0
    };
    let a = with_seed(0);
    assert_eq!(a, with_seed(0), "same seed, same workload");
    let b = with_seed(1);
    assert_ne!(a.apps, b.apps, "another seed, other usage");
    // only the usage differs
    for (x, y) in a.apps.iter().zip(&b.apps) {
        assert_eq!(x.components.len(), y.components.len());
        for (cx, cy) in x.components.iter().zip(&y.components) {
            assert_eq!((cx.request, cx.work_s), (cy.request, cy.work_s));
        }
    }
    // siblings share their application's shape (same pool series)
    let c = &a.apps[0].components;
    assert!(Arc::ptr_eq(
        &c[0].usage.mem_bytes.values,
        &c[1].usage.mem_bytes.values
    ));
    // usage stays within the request
    for comp in a.apps.iter().flat_map(|a| &a.components) {
        for i in 0..comp.usage.mem_bytes.values.len() {
            assert!(comp.usage.mem_peak(i) <= comp.request.mem_bytes * (1.0 + 1e-6));
        }
    }
    // the app name, not the row order, keys the usage: a file with the
    // apps in another order gives each app the same usage
    let mut rev = rows.clone();
    rev.reverse();
    let q = write(d.path(), "rev.csv", V2025, &rev);
    let r = build(&q, &AlibabaGpuConfig::default()).expect("build").0;
    let x = a
        .apps
        .iter()
        .find(|a| a.arrival_s == 0.0 && a.components.len() == 1);
    let y = r
        .apps
        .iter()
        .find(|a| a.arrival_s == 0.0 && a.components.len() == 1);
    assert_eq!(
        x.map(|a| &a.components[0].usage),
        y.map(|a| &a.components[0].usage)
    );
}

#[test]
fn shipped_slice_loads() {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/alibaba-gpu-slice"
    ));
    let (w, r) = build(&dir.join("gpu-v2025"), &AlibabaGpuConfig::default()).expect("v2025");
    assert_eq!((r.rows, r.apps, r.skipped_files), (314, 9, 0));
    assert!(r.without_start > 0 && r.without_end > 0);
    assert!(r.rows - r.without_start > 0 && r.rows - r.without_end > 0);
    assert_eq!(r.trace_end_s, 172_246.0);
    assert!(w
        .apps
        .iter()
        .flat_map(|a| &a.components)
        .any(|c| c.start_delay_s > 0.0));
    let (w, r) = build(&dir.join("gpu-v2023"), &AlibabaGpuConfig::default()).expect("v2023");
    assert_eq!((r.rows, r.apps, r.nodes), (200, 200, 1523));
    assert_eq!(w.hosts.len(), 1523);
    let mut prio: Vec<i32> = w.apps.iter().map(|a| a.priority).collect();
    prio.sort_unstable();
    prio.dedup();
    assert_eq!(prio, vec![0, 1, 2, 3], "every QoS class");
    assert!(r.unscheduled > 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Arbitrary bytes after a valid header never panic, strict or
    /// lenient: the build succeeds or fails with an error naming the file.
    #[test]
    fn arbitrary_rows_after_a_valid_header_never_panic(
        header in prop::sample::select(vec![V2025, V2023]),
        body in prop::collection::vec(any::<u8>(), 0..600),
        lenient in any::<bool>(),
    ) {
        let d = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let p = d.path().join("in.csv");
        let mut bytes = header.as_bytes().to_vec();
        bytes.push(b'\n');
        bytes.extend_from_slice(&body);
        std::fs::write(&p, &bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let cfg = AlibabaGpuConfig { lenient, ..Default::default() };
        if let Err(e) = build(&p, &cfg) {
            prop_assert!(e.to_string().contains("in.csv"), "{e}");
        }
    }

    /// Near-valid rows (numbers of every kind, empty fields, text) too.
    #[test]
    fn row_like_input_never_panics(
        v2025 in any::<bool>(),
        rows in prop::collection::vec(
            prop::collection::vec(
                prop_oneof![
                    Just(String::new()),
                    any::<i64>().prop_map(|v| v.to_string()),
                    any::<f64>().prop_map(|v| v.to_string()),
                    Just("NaN".to_string()),
                    Just("1e309".to_string()),
                    Just("LS".to_string()),
                    "[a-z0-9 .\"]{0,6}",
                ],
                9..19,
            ),
            0..20,
        ),
        lenient in any::<bool>(),
    ) {
        let d = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let header = if v2025 { V2025 } else { V2023 };
        let body: Vec<String> = rows.iter().map(|r| r.join(",")).collect();
        let p = write(d.path(), "in.csv", header, &body);
        let cfg = AlibabaGpuConfig { lenient, ..Default::default() };
        if let Err(e) = build(&p, &cfg) {
            prop_assert!(e.to_string().contains("in.csv"), "{e}");
        }
    }
}

use super::*;

const HEADER: &str = "time,unique_id,collection_id,instance_index,priority,scheduling_class,machine_id,alloc_collection_id,alloc_instance_index,collection_type,avg_cpu_usage,avg_memory_usage,max_cpu_usage,max_memory_usage,random_sample_cpu_usage,assigned_memory,sample_rate,p0_cpu_usage,p10_cpu_usage,p20_cpu_usage,p30_cpu_usage,p40_cpu_usage,p50_cpu_usage,p60_cpu_usage,p70_cpu_usage,p80_cpu_usage,p90_cpu_usage,p91_cpu_usage,p92_cpu_usage,p93_cpu_usage,p94_cpu_usage,p95_cpu_usage,p96_cpu_usage,p97_cpu_usage,p98_cpu_usage,p99_cpu_usage,memory_limit,cpu_limit,abstract_usage,abstract_limit";

/// A row: time (s), job, task, machine, avg cpu, avg mem, max mem, mem limit, cpu limit.
#[allow(clippy::too_many_arguments)]
fn row(
    t_s: u64,
    job: u64,
    task: u64,
    m: u64,
    cpu: f64,
    mem: f64,
    peak: f64,
    ml: f64,
    cl: f64,
) -> String {
    let pct = vec!["0.0"; 19].join(",");
    format!(
        "{},{job}-{task},{job},{task},200,3,{m},0,-1,0,{cpu},{mem},{cpu},{peak},{cpu},0.0,1.0,{pct},{ml},{cl},0.0,0.0",
        t_s * 1_000_000
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

fn write(dir: &Path, rel: &str, lines: &[String]) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    let mut text = HEADER.to_string();
    for l in lines {
        text.push('\n');
        text.push_str(l);
    }
    text.push('\n');
    std::fs::write(p, text).expect("write");
}

#[test]
fn runs_gaps_peaks_and_request_changes() {
    let d = tempfile::tempdir().expect("tmp");
    // Job 7, task 0: windows at 300, 600, (gap of one window: 900 held), 1200
    // with a limit change at 1200; then down for 2 h; a second run at 9000.
    write(
        d.path(),
        "7/0-x.csv",
        &[
            row(300, 7, 0, 1, 0.01, 0.001, 0.002, 0.004, 0.02),
            row(600, 7, 0, 1, 0.02, 0.002, 0.003, 0.004, 0.02),
            row(1200, 7, 0, 1, 0.03, 0.003, 0.003, 0.008, 0.02),
            row(9000, 7, 0, 2, 0.01, 0.001, 0.001, 0.008, 0.02),
            row(9300, 7, 0, 2, 0.01, 0.001, 0.001, 0.008, 0.02),
        ],
    );
    // Job 7, task 1 starts later; job 9 (other folder), one task.
    write(
        d.path(),
        "7/1-x.csv",
        &[row(900, 7, 1, 3, 0.01, 0.001, 0.001, 0.004, 0.02)],
    );
    write(
        d.path(),
        "9/0-x.csv",
        &[row(600, 9, 0, 4, 0.01, 0.001, 0.001, 0.004, 0.02)],
    );
    // Not an instance_usage file: skipped.
    std::fs::write(d.path().join("other.csv"), "avg_cpu,avg_mem\n0.1,0.2\n").expect("w");
    let cfg = Google2019Config::default();
    let files = task_files(d.path()).expect("files");
    let (w, r) = build_workload_from_files(&files, &cfg).expect("build");
    assert_eq!((r.files, r.skipped_files, r.tasks), (3, 1, 3));
    assert_eq!(w.hosts.len(), 4, "one host per machine id seen");
    assert_eq!(w.apps.len(), 2);
    let a = &w.apps[0];
    assert_eq!((a.id, a.arrival_s, a.priority), (7, 0.0, 200));
    assert_eq!(w.apps[1].arrival_s, 300.0);
    assert_eq!(a.components.len(), 3, "two runs of task 0 and task 1");
    let delays: Vec<f64> = a.components.iter().map(|c| c.start_delay_s).collect();
    assert_eq!(delays, vec![0.0, 600.0, 8700.0]);
    let c = &a.components[0];
    let gib = 128.0 * GIB;
    assert_eq!(c.work_s, 1200.0);
    assert_eq!(c.usage.mem_bytes.values.len(), 4);
    assert!(
        close(c.usage.at(0.0).mem_bytes, 0.001 * gib),
        "{} vs {}",
        c.usage.at(0.0).mem_bytes,
        0.001 * gib
    );
    assert!(
        close(c.usage.mem_peak(0), 0.002 * gib),
        "{} vs {}",
        c.usage.mem_peak(0),
        0.002 * gib
    );
    // Window 2 (900 s) had no row: holds window 1.
    assert!(
        close(c.usage.at(600.0).mem_bytes, 0.002 * gib),
        "{} vs {}",
        c.usage.at(600.0).mem_bytes,
        0.002 * gib
    );
    assert_eq!(r.filled_windows, 1);
    assert!(
        close(c.request.mem_bytes, 0.004 * gib),
        "{} vs {}",
        c.request.mem_bytes,
        0.004 * gib
    );
    assert_eq!(c.request_changes.len(), 1);
    assert_eq!(c.request_changes[0].at_elapsed_s, 900.0);
    // a service's task: an OOM kill restarts it alone, where it was
    assert_eq!(c.oom_restart, OomRestart::Component);
    assert!(
        close(c.request_at(1000.0).mem_bytes, 0.008 * gib),
        "{} vs {}",
        c.request_at(1000.0).mem_bytes,
        0.008 * gib
    );
    assert_eq!(r.request_changes, 1);
    assert_eq!(a.components[2].work_s, 600.0);
    // Fixed host count.
    let cfg = Google2019Config {
        hosts: Some(2),
        host_capacity_scale: 0.5,
        ..Default::default()
    };
    let (w, _) = build_workload_from_files(&files, &cfg).expect("build");
    assert_eq!(w.hosts.len(), 2);
    assert_eq!(w.hosts[0].capacity.cpu_cores, 16.0);
}

#[test]
fn malformed_rows_name_file_and_line() {
    let d = tempfile::tempdir().expect("tmp");
    let mut bad = row(600, 9, 0, 4, 0.01, 0.001, 0.001, 0.004, 0.02);
    bad = bad.replacen("600000000", "6x0", 1);
    write(
        d.path(),
        "9/0.csv",
        &[row(300, 9, 0, 4, 0.01, 0.001, 0.001, 0.004, 0.02), bad],
    );
    let files = task_files(d.path()).expect("files");
    let err = build_workload_from_files(&files, &Google2019Config::default()).expect_err("bad row");
    let msg = err.to_string();
    assert!(msg.contains("0.csv:3: time"), "{msg}");
    let lenient = Google2019Config {
        lenient: true,
        ..Default::default()
    };
    let (_, r) = build_workload_from_files(&files, &lenient).expect("lenient");
    assert_eq!(r.skipped_rows, 1);
    assert!(build_workload(&d.path().join("none"), &lenient).is_err());
    // a directory whose files hold a header and no row: named
    let empty = tempfile::tempdir().expect("tmp");
    write(empty.path(), "9/0.csv", &[]);
    let msg = build_workload(empty.path(), &lenient)
        .expect_err("no task")
        .to_string();
    assert!(
        msg.starts_with(&empty.path().display().to_string()),
        "{msg}"
    );
    assert!(msg.contains("no Google 2019 task"), "{msg}");
    let bad_cfg = Google2019Config {
        interval_s: 1.0,
        max_gap_s: 1e9,
        ..Default::default()
    };
    assert!(matches!(
        build_workload_from_files(&files, &bad_cfg),
        Err(DatasetError::Config(e)) if e.len() == 2
    ));
}

/// A usage or limit of 1e300 (infinite once stored: the task would show
/// 0% used) is an error naming the file, the line and the column.
#[test]
fn usage_above_the_largest_accepted_is_an_error() {
    let ok = row(300, 9, 0, 4, 0.01, 0.001, 0.001, 0.004, 0.02);
    for (i, (mem, peak, ml), col) in [
        (0, (1e300, 0.001, 0.004), "avg_memory_usage"),
        (1, (0.001, 1e300, 0.004), "max_memory_usage"),
        (2, (0.001, 0.001, 1e300), "memory_limit"),
    ] {
        let d = tempfile::tempdir().expect("tmp");
        let bad = row(600, 9, 0, 4, 0.01, mem, peak, ml, 0.02);
        write(d.path(), "9/0.csv", &[ok.clone(), bad]);
        let files = task_files(d.path()).expect("files");
        let msg = build_workload_from_files(&files, &Google2019Config::default())
            .expect_err("1e300")
            .to_string();
        assert!(
            msg.contains(&format!("0.csv:3: {col}: ")),
            "case {i}: {msg}"
        );
        assert!(
            msg.contains("is above the largest accepted"),
            "case {i}: {msg}"
        );
    }
    // the largest accepted still reads
    let d = tempfile::tempdir().expect("tmp");
    let top = row(
        600,
        9,
        0,
        4,
        0.01,
        MAX_NORMALISED,
        MAX_NORMALISED,
        0.004,
        0.02,
    );
    write(d.path(), "9/0.csv", &[ok, top]);
    let files = task_files(d.path()).expect("files");
    assert!(build_workload_from_files(&files, &Google2019Config::default()).is_ok());
}

#[test]
fn bundled_slice_loads() {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/google-2019-slice"
    ));
    let files = task_files(dir).expect("files");
    assert_eq!(files.len(), 5);
    let (w, r) = build_workload_from_files(&files, &Google2019Config::default()).expect("build");
    assert_eq!(w.apps.len(), 2);
    assert_eq!(r.tasks, 5);
    assert!(r.request_changes >= 2, "{r:?}");
    assert!(w
        .apps
        .iter()
        .flat_map(|a| &a.components)
        .any(|c| c.start_delay_s > 0.0));
    for c in w.apps.iter().flat_map(|a| &a.components) {
        for i in 0..c.usage.mem_bytes.values.len() {
            assert!(c.usage.mem_peak(i) >= c.usage.mem_bytes.at(i));
        }
    }
}

/// QA E12: a negative usage or limit is an error naming the file, the line
/// and the column, as in every other reader (it was read as 0). The -1 the
/// trace writes in the CPU-histogram columns of a window without one still
/// reads, and so does a limit of 0.
#[test]
fn a_negative_usage_is_an_error_like_in_the_other_readers() {
    let ok = row(300, 9, 0, 4, 0.01, 0.001, 0.001, 0.004, 0.02);
    for (i, (cpu, mem, ml), col) in [
        (0, (0.01, -1.0, 0.004), "avg_memory_usage: -1 is negative"),
        (1, (-0.5, 0.001, 0.004), "avg_cpu_usage: -0.5 is negative"),
        (2, (0.01, 0.001, -0.004), "memory_limit: -0.004 is negative"),
    ] {
        let d = tempfile::tempdir().expect("tmp");
        let bad = row(600, 9, 0, 4, cpu, mem, 0.001, ml, 0.02);
        write(d.path(), "9/0.csv", &[ok.clone(), bad]);
        let files = task_files(d.path()).expect("files");
        let msg = build_workload_from_files(&files, &Google2019Config::default())
            .expect_err("negative")
            .to_string();
        assert!(msg.contains(&format!("0.csv:3: {col}")), "case {i}: {msg}");
    }
    let d = tempfile::tempdir().expect("tmp");
    let no_histogram = row(600, 9, 0, 4, 0.01, 0.001, 0.001, 0.0, 0.02)
        .replace(&vec!["0.0"; 19].join(","), &vec!["-1.0"; 19].join(","));
    write(d.path(), "9/0.csv", &[ok, no_histogram]);
    let files = task_files(d.path()).expect("files");
    assert!(build_workload_from_files(&files, &Google2019Config::default()).is_ok());
}

use super::*;
use proptest::prelude::*;

const KB_PER_GIB: f64 = 1024.0 * 1024.0;

fn header() -> String {
    VmSample::COLUMNS.join(";\t")
}

/// A row: time (Unix s), cores, memory provisioned (GiB), memory used
/// (GiB), CPU used (fraction of the cores). 2,600 MHz a core.
fn row(t: u64, cores: f64, mem_gib: f64, used_gib: f64, cpu_frac: f64) -> String {
    let cap = cores * 2600.0;
    format!(
        "{t};\t{cores};\t{cap};\t{};\t{};\t{};\t{};\t0.0;\t0.0;\t0.0;\t0.0",
        cap * cpu_frac,
        cpu_frac * 100.0,
        mem_gib * KB_PER_GIB,
        used_gib * KB_PER_GIB
    )
}

fn off(t: u64) -> String {
    format!("{t};\t0;\t0.0;\t0.0;\t0.0;\t0.0;\t0.0;\t0.0;\t0.0;\t0.0;\t0.0")
}

fn write(dir: &Path, name: &str, rows: &[String]) -> PathBuf {
    let p = dir.join(name);
    let mut text = header();
    for r in rows {
        text.push('\n');
        text.push_str(r);
    }
    text.push('\n');
    std::fs::write(&p, text).expect("write");
    p
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

const T0: u64 = 1_372_629_804;

#[test]
fn off_rows_and_gaps_split_a_vm_into_runs_of_one_application() {
    let d = tempfile::tempdir().expect("tmp");
    let mut rows = vec![off(T0), off(T0 + 300)];
    // run 1: 3 rows from T0 + 600
    for k in 0..3 {
        rows.push(row(T0 + 600 + 300 * k, 2.0, 4.0, 1.0 + k as f64, 0.5));
    }
    // a 2-hour gap (> max_gap_s 3,600): run 2, with a duplicate time
    rows.push(row(T0 + 600 + 600 + 7200, 2.0, 4.0, 0.5, 0.25));
    rows.push(row(T0 + 600 + 600 + 7200, 2.0, 4.0, 3.5, 0.25));
    rows.push(row(T0 + 600 + 600 + 7500, 2.0, 4.0, 0.5, 0.25));
    let p = write(d.path(), "7.csv", &rows);
    let (w, r) = build_workload_with_report(&p, &BitbrainsConfig::default()).expect("build");
    assert_eq!(w.name, "bitbrains:7.csv");
    assert_eq!(
        (r.files, r.rows, r.off_rows, r.duplicate_rows),
        (1, 8, 2, 1)
    );
    assert_eq!((r.apps, r.components, r.vms_never_on), (1, 2, 0));
    let app = &w.apps[0];
    assert_eq!(app.arrival_s, 0.0, "time 0 is the first on row");
    assert_eq!(app.priority, 0);
    let (a, b) = (&app.components[0], &app.components[1]);
    assert_eq!(a.start_delay_s, 0.0);
    assert_eq!(b.start_delay_s, 600.0 + 7200.0);
    assert_eq!(a.work_s, 900.0);
    assert_eq!(b.work_s, 600.0);
    assert_eq!(a.request, Resources::new(2.0, 4.0 * GIB));
    assert_eq!(a.oom_restart, OomRestart::Component);
    assert_eq!(a.class, Class::Core);
    for k in 0..3 {
        assert!(close(a.usage.mem_peak(k), (1.0 + k as f64) * GIB));
        assert!(close(a.usage.at(k as f64 * 300.0).cpu_cores, 1.0));
    }
    // the first of the duplicate rows is kept
    assert!(close(b.usage.mem_peak(0), 0.5 * GIB));
    assert!(close(r.trace_end_s, 600.0 + 7200.0 + 600.0));
}

#[test]
fn windows_average_rows_fill_gaps_and_follow_request_changes() {
    let d = tempfile::tempdir().expect("tmp");
    let rows = vec![
        row(T0, 1.0, 2.0, 1.0, 0.2),
        row(T0 + 100, 1.0, 2.0, 1.5, 0.4),
        // window 1 has no row: holds window 0
        row(T0 + 600, 1.0, 3.0, 2.5, 0.1),
        // more than provisioned: cut to it
        row(T0 + 900, 1.0, 3.0, 5.0, 2.0),
    ];
    let p = write(d.path(), "1.csv", &rows);
    let (w, r) = build_workload_with_report(&p, &BitbrainsConfig::default()).expect("build");
    let c = &w.apps[0].components[0];
    assert_eq!(c.work_s, 1200.0);
    assert!(close(c.usage.mem_peak(0), 1.25 * GIB));
    assert!(close(c.usage.at(0.0).cpu_cores, 0.3));
    assert!(close(c.usage.mem_peak(1), 1.25 * GIB));
    assert!(close(c.usage.mem_peak(2), 2.5 * GIB));
    assert!(close(c.usage.mem_peak(3), 3.0 * GIB));
    assert!(close(c.usage.at(900.0).cpu_cores, 1.0));
    assert_eq!((r.windows, r.filled_windows), (4, 1));
    assert_eq!((r.clamped_mem_windows, r.clamped_cpu_windows), (1, 1));
    assert_eq!(r.request_changes, 1);
    assert_eq!(c.request_changes.len(), 1);
    assert_eq!(c.request_changes[0].at_elapsed_s, 600.0);
    assert_eq!(c.request_at(700.0), Resources::new(1.0, 3.0 * GIB));
    assert_eq!(c.max_request(), Resources::new(1.0, 3.0 * GIB));
    // the host holds the largest request x 8
    assert_eq!(w.hosts.len(), 1);
    assert_eq!(w.hosts[0].capacity, Resources::new(8.0, 24.0 * GIB));
}

#[test]
fn a_directory_is_one_workload_in_arrival_order() {
    let d = tempfile::tempdir().expect("tmp");
    write(d.path(), "2.csv", &[row(T0 + 3000, 4.0, 8.0, 1.0, 0.1)]);
    write(d.path(), "1.csv", &[row(T0 + 6000, 1.0, 1.0, 0.5, 0.1)]);
    write(d.path(), "3.csv", &[off(T0), off(T0 + 300)]);
    std::fs::write(d.path().join("notes.csv"), "a,b\n1,2\n").expect("write");
    std::fs::write(d.path().join("README.txt"), "x").expect("write");
    let (w, r) = build_workload_with_report(d.path(), &BitbrainsConfig::default()).expect("build");
    assert_eq!((r.files, r.skipped_files, r.vms_never_on), (3, 1, 1));
    assert_eq!(w.apps.len(), 2);
    assert_eq!(r.origin_unix_s, T0 + 3000);
    assert_eq!(w.apps[0].arrival_s, 0.0);
    assert_eq!(w.apps[0].components[0].request.cpu_cores, 4.0);
    assert_eq!((w.apps[0].id, w.apps[1].id), (0, 1));
    assert_eq!(w.apps[1].arrival_s, 3000.0);
    // no usable VM at all
    let e = tempfile::tempdir().expect("tmp");
    write(e.path(), "9.csv", &[off(T0)]);
    let err =
        build_workload_with_report(e.path(), &BitbrainsConfig::default()).expect_err("no on row");
    assert!(err.to_string().contains("no VM with an on row"), "{err}");
}

#[test]
fn every_error_names_the_file_and_line() {
    let d = tempfile::tempdir().expect("tmp");
    let cfg = BitbrainsConfig::default();
    // not a VM file
    let p = d.path().join("x.csv");
    std::fs::write(&p, "a,b\n").expect("write");
    let e = build_workload_with_report(&p, &cfg).expect_err("header");
    assert!(
        e.to_string().contains("x.csv") && e.to_string().contains("Bitbrains header"),
        "{e}"
    );
    // rows a day apart at a 60 s grid: 1,441 windows a row, over the cap
    let far: Vec<String> = (0..14_000u64)
        .map(|k| row(T0 + 86_400 * k, 1.0, 1.0, 0.5, 0.1))
        .collect();
    let p = write(d.path(), "far.csv", &far);
    let fine = BitbrainsConfig {
        interval_s: 60.0,
        max_gap_s: 86_400.0,
        ..BitbrainsConfig::default()
    };
    let e = build_workload_with_report(&p, &fine).expect_err("too many windows");
    assert!(
        e.to_string().contains("far.csv") && e.to_string().contains("usage windows"),
        "{e}"
    );
    // an empty directory
    let empty = tempfile::tempdir().expect("tmp");
    let e = build_workload_with_report(empty.path(), &cfg).expect_err("empty");
    assert!(e.to_string().contains("no Bitbrains VM file"), "{e}");
    // bad values, each on line 3
    for (bad, what) in [
        (
            format!("{T0};\t-1;\t1;\t1;\t1;\t1;\t1;\t0;\t0;\t0;\t0"),
            "CPU cores",
        ),
        (
            format!("{T0};\t1;\t1;\t1;\t1;\t1e30;\t1;\t0;\t0;\t0;\t0"),
            "Memory capacity",
        ),
        (row(99_999_999_999, 1.0, 1.0, 0.5, 0.1), "Timestamp"),
        (format!("{T0};\t1;\t1"), "fields"),
        (
            format!("{T0};\tx;\t1;\t1;\t1;\t1;\t1;\t0;\t0;\t0;\t0"),
            "CPU cores",
        ),
    ] {
        let p = write(d.path(), "5.csv", &[row(T0, 1.0, 1.0, 0.5, 0.1), bad]);
        let e = build_workload_with_report(&p, &cfg).expect_err("bad row");
        let s = e.to_string();
        assert!(s.contains("5.csv:3"), "{s}");
        assert!(s.contains(what), "{what}: {s}");
        // lenient skips and counts it
        let lenient = BitbrainsConfig {
            lenient: true,
            ..BitbrainsConfig::default()
        };
        let (_, r) = build_workload_with_report(&p, &lenient).expect("lenient");
        assert_eq!((r.rows, r.skipped_rows), (1, 1), "{what}");
    }
}

#[test]
fn config_validation_gathers_every_error() {
    let cfg = BitbrainsConfig {
        interval_s: 10.0,
        max_gap_s: 1e9,
        hosts: Some(0),
        host_capacity: Some(Resources::new(0.0, -1.0)),
        headroom: 0.5,
        min_request: Resources::new(f64::NAN, 0.0),
        ..BitbrainsConfig::default()
    };
    let e = cfg.validate().expect_err("invalid").to_string();
    for key in [
        "interval_s",
        "max_gap_s",
        "hosts",
        "host_capacity.cpu_cores",
        "host_capacity.mem_bytes",
        "headroom",
        "min_request.cpu_cores",
    ] {
        assert!(e.contains(key), "{key}: {e}");
    }
    let d = tempfile::tempdir().expect("tmp");
    let p = write(d.path(), "1.csv", &[row(T0, 1.0, 1.0, 0.5, 0.1)]);
    assert!(build_workload_with_report(&p, &cfg).is_err());
    // a serialised config rejects unknown keys
    let e =
        serde_json::from_str::<BitbrainsConfig>(r#"{"interval": 300}"#).expect_err("unknown key");
    assert!(e.to_string().contains("interval"), "{e}");
}

#[test]
fn shipped_slice_loads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/bitbrains-slice");
    let (w, r) = build_workload_with_report(&dir, &BitbrainsConfig::default()).expect("slice");
    // 1.csv: a collection gap splits it in two; 44.csv and 14.csv: off
    // rows before the VM starts
    assert_eq!((r.files, r.apps, r.components), (3, 3, 4));
    assert_eq!(r.off_rows, 66 + 8);
    assert_eq!(r.skipped_rows, 0);
    assert!(w.apps.iter().all(|a| a
        .components
        .iter()
        .all(|c| c.usage.mem_peak(0) <= c.request.mem_bytes)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any rows after a valid header build or fail with an error, and a
    /// built workload keeps usage within its requests and its work on the
    /// grid.
    #[test]
    fn arbitrary_rows_never_panic_and_usage_stays_within_the_request(
        rows in prop::collection::vec(
            (0u64..200_000, 0u8..4, 0.0f64..64.0, 0.0f64..80.0, 0.0f64..1.5),
            1..40,
        )
    ) {
        let d = tempfile::tempdir().expect("tmp");
        let text: Vec<String> = rows
            .iter()
            .map(|&(t, cores, mem, used, cpu)| {
                if cores == 0 { off(T0 + t) } else { row(T0 + t, f64::from(cores), mem, used, cpu) }
            })
            .collect();
        let p = write(d.path(), "1.csv", &text);
        if let Ok((w, r)) = build_workload_with_report(&p, &BitbrainsConfig::default()) {
            prop_assert_eq!(r.apps, 1);
            for c in &w.apps[0].components {
                prop_assert!(c.work_s > 0.0 && (c.work_s / 300.0).fract() == 0.0);
                let n = (c.work_s / 300.0) as usize;
                for k in 0..n {
                    let req = c.request_at(k as f64 * 300.0);
                    let u = c.usage.at(k as f64 * 300.0);
                    prop_assert!(u.mem_bytes <= req.mem_bytes * (1.0 + 1e-6));
                    prop_assert!(u.cpu_cores <= req.cpu_cores * (1.0 + 1e-6));
                }
            }
        }
    }
}

/// QA E14: rows out of time order and rows repeating a time are counted
/// (and warned about per file), not taken without a word; they are not
/// refused, as the real files repeat times (2013-7/20.csv, 54.csv).
#[test]
fn rows_out_of_order_and_repeated_times_are_counted() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = write(
        dir.path(),
        "back.csv",
        &[
            row(T0 + 300, 2.0, 4.0, 1.0, 0.5),
            row(T0 + 300, 2.0, 4.0, 1.0, 0.5),
            row(T0, 2.0, 4.0, 1.0, 0.5),
            row(T0 + 600, 2.0, 4.0, 1.0, 0.5),
            row(T0 + 300, 2.0, 4.0, 1.0, 0.5),
        ],
    );
    let (w, r) = build_workload_with_report(&p, &BitbrainsConfig::default()).expect("built");
    assert_eq!((r.rows, r.out_of_order_rows, r.duplicate_rows), (5, 2, 2));
    // sorted and deduplicated: three windows from T0
    assert!(close(w.apps[0].components[0].work_s, 900.0));
    let p = write(
        dir.path(),
        "fine.csv",
        &[
            row(T0, 2.0, 4.0, 1.0, 0.5),
            row(T0 + 300, 2.0, 4.0, 1.0, 0.5),
        ],
    );
    let (_, r) = build_workload_with_report(&p, &BitbrainsConfig::default()).expect("built");
    assert_eq!((r.out_of_order_rows, r.duplicate_rows), (0, 0));
}

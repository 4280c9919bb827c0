use super::*;
use std::io::Write;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    let mut f = std::fs::File::create(&p).expect("create");
    f.write_all(text.as_bytes()).expect("write");
    p
}

#[test]
fn detects_formats_from_first_line() {
    assert_eq!(
        detect_from_first_line("Timestamp [ms];\tCPU cores;\tCPU usage [MHZ]"),
        SeriesFormat::Bitbrains
    );
    assert_eq!(
        detect_from_first_line("time,unique_id,collection_id,instance_index,avg_cpu_usage"),
        SeriesFormat::Google2019InstanceUsage
    );
    assert_eq!(
        detect_from_first_line("c_1,m_2,3,4,5,,,,0,0,2"),
        SeriesFormat::AlibabaContainerUsage
    );
    assert_eq!(
        detect_from_first_line(",m_108,696330,20,56,,,,0,0,2"),
        SeriesFormat::AlibabaContainerUsage
    );
    let derived = (0..18)
        .map(|i| format!("{i}.5"))
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(
        detect_from_first_line(&derived),
        SeriesFormat::Google2011Derived
    );
    assert_eq!(detect_from_first_line("0.5"), SeriesFormat::Csv);
}

#[test]
fn bitbrains_by_header_name() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = write(
        &dir,
        "7.csv",
        "Timestamp [ms];\tCPU usage [MHZ];\tMemory usage [KB]\n1;\t10.5;\t100\n2;\t11;\t200\n",
    );
    let cpu = load_series(&p, None).expect("load");
    assert_eq!(
        cpu,
        vec![NamedSeries {
            name: "7:CPU usage [MHZ]".into(),
            column: "CPU usage [MHZ]".into(),
            values: vec![10.5, 11.0]
        }]
    );
    let mem = load_series(&p, Some("memory usage [kb]")).expect("load");
    assert_eq!(mem[0].values, vec![100.0, 200.0]);
    let err = load_series(&p, Some("nope")).expect_err("missing column");
    assert!(err.to_string().contains("no column"), "{err}");
}

#[test]
fn alibaba_groups_per_container_and_sorts_by_time() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = write(
        &dir,
        "cu.csv",
        ",m_1,5,20,56,,,,0,0,2\nc_1,m_2,20,3,40,,,,0,0,1\nc_1,m_2,10,4,41,,,,0,0,1\nc_2,m_2,10,9,42,,,,0,0,1\n",
    );
    let s = load_series(&p, None).expect("load");
    assert_eq!(s.len(), 3);
    assert_eq!(s[0].name, "cu/(empty container_id):cpu_util_percent");
    assert_eq!(s[1].name, "cu/c_1:cpu_util_percent");
    assert_eq!(s[1].values, vec![4.0, 3.0]);
    let m = load_series(&p, Some("mem_util_percent")).expect("load");
    assert_eq!(m[1].values, vec![41.0, 40.0]);
}

#[test]
fn binary_data_is_refused_without_echoing_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("blob.csv");
    std::fs::write(&p, [0x35u8, 0xff, 0xfe, 0x00, 0x6b, b'\n', 0x01]).expect("write");
    let e = detect_format(&p).expect_err("binary").to_string();
    assert!(e.contains("binary data") && !e.contains('\u{FFFD}'), "{e}");
}

#[test]
fn google2011_task_usage_is_one_series_per_task_in_time_order() {
    let dir = tempfile::tempdir().expect("tmp");
    // raw trace rows (no header): task (7, 0) out of order, then (7, 1)
    let row = |start: u64, job: u64, task: u64, cpu: f64, mem: f64| {
        format!(
            "{start},{},{job},{task},99,{cpu},{mem},0.1,,,0.2,0,0,0.5,0,1.1,0.01,0,1,\n",
            start + 300_000_000
        )
    };
    let text = [
        row(900_000_000, 7, 0, 0.3, 0.03),
        row(600_000_000, 7, 0, 0.2, 0.02),
        row(600_000_000, 7, 1, 0.5, 0.05),
    ]
    .concat();
    let p = write(&dir, "part-00000-of-00500.csv", &text);
    assert_eq!(
        detect_format(&p).expect("detect"),
        SeriesFormat::Google2011TaskUsage { has_header: false }
    );
    let cpu = load_series(&p, None).expect("load");
    assert_eq!(cpu.len(), 2);
    assert_eq!(cpu[0].name, "part-00000-of-00500/7/0:cpu_rate");
    assert_eq!(cpu[0].values, vec![0.2, 0.3]);
    assert_eq!(cpu[1].values, vec![0.5]);
    let mem = load_series(&p, Some("canonical_memory")).expect("mem");
    assert_eq!(mem[0].column, "canonical_memory");
    assert_eq!(mem[0].values, vec![0.02, 0.03]);
    // the shipped sample's header
    let header = GOOGLE2011_TASK_USAGE_COLUMNS.join(",") + "\n";
    let q = write(&dir, "with-header.csv", &(header + &text));
    assert_eq!(
        detect_format(&q).expect("detect"),
        SeriesFormat::Google2011TaskUsage { has_header: true }
    );
    assert_eq!(
        load_series(&q, None).expect("load"),
        cpu_renamed(&cpu, "with-header")
    );
}

fn cpu_renamed(series: &[NamedSeries], stem: &str) -> Vec<NamedSeries> {
    series
        .iter()
        .map(|s| NamedSeries {
            name: s.name.replace("part-00000-of-00500", stem),
            ..s.clone()
        })
        .collect()
}

#[test]
fn plain_csv_with_and_without_header() {
    let dir = tempfile::tempdir().expect("tmp");
    let a = write(&dir, "a.csv", "load\n1\n2.5\n\n3\n");
    assert_eq!(
        load_series(&a, None).expect("a")[0],
        NamedSeries {
            name: "a".into(),
            column: "load".into(),
            values: vec![1.0, 2.5, 3.0]
        }
    );
    let b = write(&dir, "b.csv", "1\n2\n");
    assert_eq!(load_series(&b, None).expect("b")[0].values, vec![1.0, 2.0]);
    let c = write(&dir, "c.csv", "timestamp,cpu_usage,mem\n0,5,6\n300,7,8\n");
    let s = load_series(&c, None).expect("c");
    assert_eq!(s[0].name, "c:cpu_usage");
    assert_eq!(s[0].values, vec![5.0, 7.0]);
    assert_eq!(
        load_series(&c, Some("2")).expect("c2")[0].values,
        vec![6.0, 8.0]
    );
}

#[test]
fn bad_value_names_file_and_line() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = write(&dir, "bad.csv", "x\n1\n2\nabc\n");
    let err = load_series(&p, None).expect_err("bad");
    let msg = err.to_string();
    assert!(msg.contains("bad.csv:4:"), "{msg}");
    let empty = write(&dir, "empty.csv", "");
    assert!(load_series(&empty, None).is_err());
    let nan = write(&dir, "nan.csv", "1\nNaN\n");
    assert!(load_series(&nan, None)
        .expect_err("nan")
        .to_string()
        .contains("nan.csv:2:"));
}

#[test]
fn gzip_detected_by_content() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("s.csv.gz");
    let f = std::fs::File::create(&p).expect("create");
    let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    gz.write_all(b"1\n2\n3\n").expect("write");
    gz.finish().expect("finish");
    let s = load_series(&p, None).expect("load");
    assert_eq!(s[0].name, "s");
    assert_eq!(s[0].values, vec![1.0, 2.0, 3.0]);
}

#[test]
fn gcd_tar_members() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("vms.tar.gz");
    let f = std::fs::File::create(&p).expect("create");
    let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for (name, body) in [
        ("GCD_VMs/vm_1_0", "10.5 20\n11 21\n"),
        ("GCD_VMs/vm_2_3", "1 2\n"),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, body.as_bytes())
            .expect("append");
    }
    b.into_inner().expect("tar").finish().expect("gz");
    let cpu = load_series(&p, None).expect("cpu");
    assert_eq!(cpu.len(), 2);
    assert_eq!(
        cpu[0],
        NamedSeries {
            name: "vm_1_0:cpu".into(),
            column: "cpu".into(),
            values: vec![10.5, 11.0]
        }
    );
    let mem = load_series(&p, Some("mem")).expect("mem");
    assert_eq!(mem[1].values, vec![2.0]);
}

/// QA E7: a series value above its column's largest accepted is an error
/// naming the file, the line and the column (a plain CSV: 2^60; the
/// Alibaba [0, 100] columns: 100; GCD_VMs: percent, up to 1e5), and an
/// Alibaba time out of [0, 400 days] is refused.
#[test]
fn values_above_the_shared_bound_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = write(&dir, "huge.csv", "cpu\n1\n1e300\n2\n");
    let e = load_series(&p, None).expect_err("1e300").to_string();
    assert!(
        e.contains("huge.csv:3: cpu: 1e300 is above the largest accepted"),
        "{e}"
    );
    let ali = |name: &str, t: &str, cpu: &str| {
        write(
            &dir,
            name,
            &format!(",m_1,100,10,50,,,,0,0,2\n,m_1,{t},{cpu},50,,,,0,0,2\n"),
        )
    };
    let e = load_series(&ali("a1.csv", "200", "150"), None)
        .expect_err("150 %")
        .to_string();
    assert!(
        e.contains("a1.csv:2: cpu_util_percent: 150 is above the largest accepted, 100"),
        "{e}"
    );
    let e = load_series(&ali("a2.csv", "18446744073709551616", "10"), None)
        .expect_err("2^64 s")
        .to_string();
    assert!(
        e.contains("a2.csv:2: time_stamp: 1.8446744073709552e19 is above"),
        "{e}"
    );
    let e = load_series(&ali("a3.csv", "-1", "10"), None)
        .expect_err("-1 s")
        .to_string();
    assert!(e.contains("a3.csv:2: time_stamp: -1 is negative"), "{e}");
    assert_eq!(
        load_series(&ali("a4.csv", "200", "100"), None).expect("100 %")[0].values,
        vec![10.0, 100.0]
    );
}

/// QA E7: GCD_VMs values are percent (the archive's memory reaches 215 %):
/// 215 is read, 1e300 is refused naming the member and the line.
#[test]
fn gcd_values_are_bounded_percentages() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("vms.tar.gz");
    let f = std::fs::File::create(&p).expect("create");
    let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for (name, body) in [
        ("GCD_VMs/vm_1_0", "10.5 215.3\n11 21\n"),
        ("GCD_VMs/vm_2_3", "1 2\n1e300 50\n"),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, body.as_bytes())
            .expect("append");
    }
    b.into_inner().expect("tar").finish().expect("gz");
    let mem = load_series(&p, Some("mem")).expect("mem");
    assert_eq!(mem[0].values, vec![215.3, 21.0]);
    let e = load_series(&p, None).expect_err("1e300").to_string();
    assert!(
        e.contains("vm_2_3:2: cpu: 1e300 is above the largest accepted, 100000"),
        "{e}"
    );
}

/// QA E13: a short or long row is an error naming the file and the line,
/// whichever column is read (a truncated row was used as if complete when
/// the column read was in it).
#[test]
fn ragged_rows_are_refused_whichever_column_is_read() {
    let dir = tempfile::tempdir().expect("tmp");
    let short = write(&dir, "short.csv", "cpu,mem\n1,2\n3\n5,6\n");
    for col in ["cpu", "mem"] {
        let e = load_series(&short, Some(col))
            .expect_err("short")
            .to_string();
        assert!(e.contains("short.csv:3: row has 1 fields"), "{col}: {e}");
    }
    let long = write(&dir, "long.csv", "cpu,mem\n1,2\n3,4,5,6\n");
    let e = load_series(&long, Some("cpu"))
        .expect_err("long")
        .to_string();
    assert!(
        e.contains("long.csv:3: row has 4 fields, expected 2 (as the header)"),
        "{e}"
    );
    let headless = write(&dir, "headless.csv", "1,2\n3,4\n5\n");
    let e = load_series(&headless, Some("0"))
        .expect_err("short")
        .to_string();
    assert!(
        e.contains("headless.csv:3: row has 1 fields, expected 2 (as the first row)"),
        "{e}"
    );
}

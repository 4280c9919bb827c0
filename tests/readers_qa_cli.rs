//! The QA pass's reader defects (notes/qa-cli.md E4, E7, E13, E14) as a
//! user meets them on the command line: bad values in an agent recording
//! and ragged series rows are refused naming the file and the line, GCD_VMs
//! values are labelled as the percentages they are, and a Bitbrains file
//! whose times go back replays with a warning that says so.

mod cli_common;
use cli_common::{tailor, write};

use std::path::{Path, PathBuf};

/// A 20-round recording `name` whose round 5 (line 7) has a memory
/// request of `mem_bytes`.
fn recording(dir: &Path, name: &str, mem_bytes: f64) -> PathBuf {
    use datasets::recording::RecordWriter;
    use shaper::node::{ContainerMeta, ContainerSample, Sample};
    use shaper::record::{Record, RecordingHeader, RoundRecord, RECORD_VERSION};
    use shaper::Resources;
    let path = dir.join(name);
    let mut w = RecordWriter::create(&path, 1 << 20).expect("create");
    w.append(&Record::Header(Box::new(RecordingHeader {
        version: RECORD_VERSION,
        node: "n".into(),
        interval_s: 10.0,
        actuation: "shape".into(),
        mode: "standalone".into(),
        shaper: Default::default(),
        forecaster: Default::default(),
        models: None,
    })))
    .expect("header");
    let gib = 1024.0 * 1024.0 * 1024.0;
    for i in 0..20u64 {
        let request = if i == 5 { mem_bytes } else { gib };
        w.append(&Record::Round(RoundRecord {
            round: i,
            at_s: 1000.0 + 10.0 * i as f64,
            capacity: Resources::new(2.0, 4.0 * gib),
            events: vec![],
            containers: vec![ContainerSample {
                meta: ContainerMeta::core("a", "a", "web", 900.0),
                request: Resources::new(1.0, request),
                allocation: Resources::new(1.0, gib),
                usage: Resources::new(0.1, 0.3 * gib),
                sample: Some(Sample {
                    cpu_cores: Some(0.1),
                    mem_bytes: 0.3 * gib,
                    mem_peak_bytes: None,
                }),
                app_failures: 0,
                oom_kills: 0,
            }],
            labels: Default::default(),
            forecasts: vec![None],
            source: "local".into(),
            decisions: None,
            early: false,
        }))
        .expect("round");
    }
    w.finish().expect("finish");
    path
}

/// E4: a request of 1e300 bytes in a recording is refused naming the file,
/// the line and the key (the replay printed a memory slack of 1e300 %).
#[test]
fn a_recording_with_an_absurd_request_is_refused_naming_line_and_key() {
    let dir = tempfile::tempdir().expect("tmp");
    let good = recording(dir.path(), "good.jsonl.gz", 2.0 * 1024.0 * 1024.0 * 1024.0);
    let (ok, _, err) = tailor(&[
        "replay",
        "--quiet",
        "--workload",
        &format!("recorded:{}", good.display()),
    ]);
    assert!(ok, "{err}");
    let bad = recording(dir.path(), "bad.jsonl.gz", 1e300);
    let (ok, out, err) = tailor(&[
        "replay",
        "--quiet",
        "--workload",
        &format!("recorded:{}", bad.display()),
    ]);
    assert!(!ok, "accepted: {out}");
    assert!(
        err.contains("bad.jsonl.gz")
            && err.contains(
                "line 7: containers[0].request.mem_bytes: 1e300 is above the largest accepted"
            ),
        "{err}"
    );
}

/// E13: a truncated or long row is refused whichever column is read.
#[test]
fn forecast_refuses_ragged_rows() {
    let dir = tempfile::tempdir().expect("tmp");
    let short = write(dir.path(), "ragged2.csv", "cpu,mem\n1,2\n3\n5,6\n7,8\n");
    let long = write(
        dir.path(),
        "ragged3.csv",
        "cpu,mem\n1,2\n3,4,5,6\n5,6\n7,8\n",
    );
    for (file, line, fields) in [(&short, 3, 1), (&long, 3, 4)] {
        let (ok, out, err) = tailor(&[
            "forecast",
            "--model",
            "last",
            "--column",
            "cpu",
            "--input",
            file.as_str(),
        ]);
        assert!(!ok, "accepted: {out}");
        assert!(
            err.contains(&format!(
                "{file}:{line}: row has {fields} fields, expected 2"
            )),
            "{err}"
        );
    }
}

/// E7: GCD_VMs values are percentages: labelled so, and 1e300 is refused
/// naming the member and the line.
#[test]
fn gcd_values_are_percent_and_bounded() {
    let dir = tempfile::tempdir().expect("tmp");
    let tar_of = |name: &str, body: &str| {
        let p = dir.path().join(name);
        let f = std::fs::File::create(&p).expect("create");
        let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "GCD_VMs/vm_1_0", body.as_bytes())
            .expect("append");
        b.into_inner().expect("tar").finish().expect("gz");
        p.to_str().expect("utf8").to_string()
    };
    let body: String = (0..20).map(|i| format!("{} 50\n", 10 + i % 3)).collect();
    let good = tar_of("GCD_ok.tar.gz", &body);
    let (ok, out, err) = tailor(&["forecast", "--model", "last", "--input", good.as_str()]);
    assert!(ok, "{err}");
    assert!(
        out.contains("resource / unit     cpu / % (not converted)"),
        "{out}"
    );
    let huge = tar_of("GCD_huge.tar.gz", &format!("{body}1e300 50\n"));
    let (ok, out, err) = tailor(&["forecast", "--model", "last", "--input", huge.as_str()]);
    assert!(!ok, "accepted: {out}");
    assert!(
        err.contains("vm_1_0:21: cpu: 1e300 is above the largest accepted"),
        "{err}"
    );
}

/// E14: a Bitbrains file whose times go back and repeat still replays
/// (the real files repeat times), with a warning naming the file and the
/// lines.
#[test]
fn a_bitbrains_file_out_of_time_order_replays_with_a_warning() {
    let dir = tempfile::tempdir().expect("tmp");
    let header = "Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\tCPU usage [%];\tMemory capacity provisioned [KB];\tMemory usage [KB];\tDisk read throughput [KB/s];\tDisk write throughput [KB/s];\tNetwork received throughput [KB/s];\tNetwork transmitted throughput [KB/s]";
    let row = |t: u64| format!("{t};\t2;\t5200;\t520;\t10;\t4194304;\t1048576;\t0;\t0;\t0;\t0");
    let text = format!(
        "{header}\n{}\n{}\n{}\n",
        row(1_372_629_904),
        row(1_372_629_904),
        row(1_372_629_804)
    );
    let file = write(dir.path(), "backwards.csv", &text);
    let (ok, _, err) = tailor(&[
        "replay",
        "--quiet",
        "--workload",
        &format!("bitbrains:{file}"),
    ]);
    assert!(ok, "{err}");
    assert!(
        err.contains("backwards.csv: 1 rows earlier than the row before them (first at line 4), sorted by time; 1 rows repeating a time already seen (first at line 3), dropped"),
        "{err}"
    );
}

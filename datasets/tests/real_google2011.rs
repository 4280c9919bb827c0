//! Google 2011 readers and builder on the real files in ../shared/data
//! (skipped when absent), and the in-repo slice (always).

mod common;
use common::shared;

use datasets::google2011::reader::{
    JobEvent, MachineEvent, MachineEventType, TableReader, TaskEvent, TaskEventType, TaskUsage,
};
use datasets::google2011::{
    build_workload, build_workload_from, Google2011Config, Google2011Sources, Unfinished,
};
use datasets::pool::UsagePool;
use datasets::workload::Class;
use std::path::{Path, PathBuf};

fn repo_slice() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/google-2011-slice"
    ))
    .to_path_buf()
}

#[test]
fn task_events_part0_counts() {
    let Some(d) = shared() else { return };
    let p = d.join("google-2011/task_events/part-00000-of-00500.csv.gz");
    let mut counts = [0u64; 9];
    let mut r = TableReader::<TaskEvent>::open(&p, false).expect("open");
    let mut max_t = 0;
    while let Some(ev) = r.next_row().expect("row") {
        counts[ev.event_type.code() as usize] += 1;
        max_t = max_t.max(ev.time_us);
    }
    assert_eq!(r.rows(), 450_146);
    assert_eq!(r.skipped(), 0);
    assert_eq!(
        &counts[..6],
        &[201_491, 189_994, 4_338, 581, 43_237, 10_505]
    );
    assert_eq!(max_t, 5_611_086_346);
}

#[test]
fn job_and_machine_events_counts() {
    let Some(d) = shared() else { return };
    let jobs = TableReader::<JobEvent>::open(
        &d.join("google-2011/job_events/part-00000-of-00500.csv.gz"),
        false,
    )
    .expect("open")
    .collect::<Result<Vec<_>, _>>()
    .expect("rows");
    assert_eq!(jobs.len(), 10_704);
    assert_eq!(jobs.iter().map(|j| j.time_us).max(), Some(5_598_884_349));
    let mut counts = [0usize; 3];
    for m in TableReader::<MachineEvent>::open(
        &d.join("google-2011/machine_events/part-00000-of-00001.csv.gz"),
        false,
    )
    .expect("open")
    {
        let m = m.expect("row");
        counts[match m.event_type {
            MachineEventType::Add => 0,
            MachineEventType::Remove => 1,
            MachineEventType::Update => 2,
        }] += 1;
    }
    assert_eq!(counts, [21_443, 8_957, 7_380]);
}

#[test]
fn task_usage_sample() {
    let Some(d) = shared() else { return };
    let rows = TableReader::<TaskUsage>::open(
        &d.join("google-2011/task_usage/part-00000-of-00500.first10000rows.with-header.csv"),
        false,
    )
    .expect("open")
    .collect::<Result<Vec<_>, _>>()
    .expect("rows");
    assert_eq!(rows.len(), 10_000);
    assert!(rows.iter().all(|u| u.start_time_us == 600_000_000));
    assert_eq!(
        (rows[0].job_id, rows[0].task_index, rows[0].machine_id),
        (3418309, 0, 4155527081)
    );
    assert_eq!(rows[0].cpu_rate, Some(0.001562));
}

#[test]
fn real_part0_workload_with_task_usage() {
    let Some(d) = shared() else { return };
    let g = d.join("google-2011");
    let sources = Google2011Sources::from_dir(&g).expect("sources");
    assert_eq!(sources.task_usage.len(), 1);
    let cfg = Google2011Config {
        max_hosts: Some(500),
        ..Google2011Config::default()
    };
    let pool = UsagePool::bundled().expect("pool");
    let (w, r) = build_workload_from(&sources, &cfg, &pool).expect("build");
    assert_eq!(r.task_event_rows, 450_146);
    assert_eq!(w.hosts.len(), 500);
    assert!(r.tasks_kept > 1_000, "{r:?}");
    assert_eq!(
        r.tasks_kept
            + r.dropped_other_host
            + r.dropped_no_request
            + r.dropped_never_scheduled
            + r.dropped_unfinished,
        r.tasks_seen
    );
    assert_eq!(r.usage_from_trace + r.usage_from_pool, r.tasks_kept);
    assert!(
        r.usage_from_trace > 0,
        "task_usage sample joins some kept tasks: {r:?}"
    );
    assert!((r.window_end_s - 5011.086346).abs() < 1e-6);
    assert!(w
        .apps
        .iter()
        .all(|a| a.components.iter().any(|c| c.class == Class::Core)));
}

#[test]
fn build_workload_on_repo_slice_directory() {
    // The in-repo slice is a trace directory too; always available.
    let w = build_workload(&repo_slice(), &Google2011Config::default()).expect("build");
    assert_eq!(w.name, "google-2011:google-2011-slice");
    assert_eq!(w.hosts.len(), 80);
    let bundled = datasets::bundled_workload().expect("bundled");
    assert_eq!(bundled.apps, w.apps);
    // The rules change the outcome as documented.
    let sampled = build_workload(
        &repo_slice(),
        &Google2011Config {
            unfinished: Unfinished::SampleFinished,
            seed: 3,
            ..Google2011Config::default()
        },
    )
    .expect("sampled");
    let dropped = build_workload(
        &repo_slice(),
        &Google2011Config {
            unfinished: Unfinished::Drop,
            ..Google2011Config::default()
        },
    )
    .expect("dropped");
    let n =
        |w: &datasets::workload::Workload| w.apps.iter().map(|a| a.components.len()).sum::<usize>();
    assert!(n(&dropped) < n(&w));
    assert_eq!(n(&sampled), n(&w));
    let rigid = build_workload(
        &repo_slice(),
        &Google2011Config {
            class_rule: datasets::google2011::ClassRule {
                elastic_fraction: 0.0,
                ..Default::default()
            },
            ..Google2011Config::default()
        },
    )
    .expect("rigid");
    assert!(rigid
        .apps
        .iter()
        .all(|a| a.components.iter().all(|c| c.class == Class::Core)));
    assert!(w
        .apps
        .iter()
        .any(|a| a.components.iter().any(|c| c.class == Class::Elastic)));
}

#[test]
fn invalid_config_lists_every_problem() {
    let cfg = Google2011Config {
        host_capacity_scale: 0.0,
        max_hosts: Some(0),
        class_rule: datasets::google2011::ClassRule {
            elastic_fraction: 2.0,
            ..Default::default()
        },
        ..Google2011Config::default()
    };
    let msg = cfg.validate().expect_err("invalid").to_string();
    assert!(
        msg.contains("host_capacity_scale")
            && msg.contains("max_hosts")
            && msg.contains("elastic_fraction"),
        "{msg}"
    );
    let from_toml: Result<Google2011Config, _> = serde_json::from_str(r#"{"bogus": 1}"#);
    assert!(from_toml.is_err());
}

#[test]
fn lenient_mode_counts_bad_rows() {
    let text = "0,,1,0,5,1,u,0,9,0.1,0.1,,\nbad row\n10,,1,0,5,4,u,0,9,,,,\n";
    let mut r = TableReader::<TaskEvent>::from_reader(
        "x.csv",
        std::io::Cursor::new(text.as_bytes().to_vec()),
        true,
    )
    .expect("reader");
    let rows: Vec<TaskEvent> = r.by_ref().collect::<Result<_, _>>().expect("lenient");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].event_type, TaskEventType::Finish);
    assert_eq!(r.skipped(), 1);
}

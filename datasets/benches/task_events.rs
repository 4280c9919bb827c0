//! Parsing throughput of task_events from .csv.gz on one core.
//!
//! Uses Google 2011 task_events part 0 (450,146 rows) from ../shared/data
//! when present, else the in-repo slice concatenated 200 times (gzip
//! multi-member). Reports rows/s via criterion's element throughput.
//!
//! `CARGO_TARGET_DIR=/work/target-datasets cargo bench -p datasets --bench task_events`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use datasets::google2011::reader::{TableReader, TaskEvent};
use std::path::Path;

fn input() -> (String, Vec<u8>) {
    let shared = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/google-2011/task_events/part-00000-of-00500.csv.gz"
    ));
    if let Ok(bytes) = std::fs::read(shared) {
        return ("part-00000 (shared data)".into(), bytes);
    }
    let slice = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/google-2011-slice/task_events/part-00000-of-00500.csv.gz"
    ));
    let one = std::fs::read(slice).unwrap_or_default();
    ("in-repo slice x200".into(), one.repeat(200))
}

fn count_rows(bytes: &[u8]) -> u64 {
    let mut r =
        TableReader::<TaskEvent>::from_reader("bench", std::io::Cursor::new(bytes.to_vec()), false)
            .unwrap_or_else(|e| panic!("{e}"));
    let mut n = 0u64;
    let mut cpu = 0.0;
    while let Some(ev) = r.next_row().unwrap_or_else(|e| panic!("{e}")) {
        n += 1;
        cpu += ev.cpu_request.unwrap_or(0.0);
    }
    std::hint::black_box(cpu);
    n
}

fn bench(c: &mut Criterion) {
    let (label, bytes) = input();
    let rows = count_rows(&bytes);
    let mut g = c.benchmark_group("task_events_csv_gz");
    g.sample_size(10);
    g.throughput(Throughput::Elements(rows));
    g.bench_function(format!("parse {label}, {rows} rows"), |b| {
        b.iter(|| count_rows(&bytes))
    });
    g.bench_function("gunzip only", |b| b.iter(|| gunzip_only(&bytes)));
    g.bench_function("gunzip + csv split", |b| {
        b.iter(|| split_only(&bytes, true))
    });
    g.bench_function("gunzip + csv split, quoting off", |b| {
        b.iter(|| split_only(&bytes, false))
    });
    g.finish();
}

/// Decompression alone (the floor of any .csv.gz reader).
fn gunzip_only(bytes: &[u8]) -> u64 {
    let mut r = datasets::io::maybe_gunzip(std::io::Cursor::new(bytes.to_vec()))
        .unwrap_or_else(|e| panic!("{e}"));
    std::io::copy(&mut r, &mut std::io::sink()).unwrap_or_else(|e| panic!("{e}"))
}

/// Decompression + CSV splitting, no field parsing.
fn split_only(bytes: &[u8], quoting: bool) -> u64 {
    let r = datasets::io::maybe_gunzip(std::io::Cursor::new(bytes.to_vec()))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .quoting(quoting)
        .from_reader(r);
    let mut rec = csv::ByteRecord::new();
    let mut n = 0u64;
    while csv
        .read_byte_record(&mut rec)
        .unwrap_or_else(|e| panic!("{e}"))
    {
        n += 1;
    }
    n
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Rows/s of the task_events reader on one file, `N` passes (default 3).
//! Prints wall-clock and process CPU time (from /proc/self/stat on Linux),
//! because on a loaded machine wall time overstates the cost.
//!
//! `cargo run --release -p datasets --example parse_rate -- FILE.csv.gz [N]`

use datasets::google2011::reader::{TableReader, TaskEvent};

fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0) // USER_HZ = 100 on Linux
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: parse_rate FILE [N]")?;
    let n: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    let bytes = std::fs::read(&path)?;
    let (w0, c0) = (std::time::Instant::now(), cpu_seconds());
    let mut rows = 0u64;
    for _ in 0..n {
        let mut r = TableReader::<TaskEvent>::from_reader(
            path.as_str(),
            std::io::Cursor::new(bytes.clone()),
            false,
        )?;
        while let Some(ev) = r.next_row()? {
            rows += 1;
            std::hint::black_box(&ev);
        }
    }
    let wall = w0.elapsed().as_secs_f64();
    println!(
        "{rows} rows in {wall:.3} s wall: {:.0} rows/s",
        rows as f64 / wall
    );
    if let (Some(a), Some(b)) = (c0, cpu_seconds()) {
        println!(
            "process CPU time {:.2} s: {:.0} rows/s per CPU-second",
            b - a,
            rows as f64 / (b - a)
        );
    }
    Ok(())
}

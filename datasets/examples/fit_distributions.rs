//! Fits the synthetic generator's empirical distributions from Google 2011
//! task_events + job_events part 0 and writes
//! `data/google-2011-distributions.json.gz`.
//!
//! `cargo run --release -p datasets --example fit_distributions -- [GOOGLE_2011_DIR] [OUT_FILE]`

use datasets::google2011::{Google2011Sources, Input};
use datasets::synthetic::fit_google2011;
use std::io::Write;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "../shared/data/google-2011".into()),
    );
    let out = PathBuf::from(
        std::env::args()
            .nth(2)
            .unwrap_or_else(|| "data/google-2011-distributions.json.gz".into()),
    );
    let sources = Google2011Sources {
        task_events: vec![Input::File(
            dir.join("task_events/part-00000-of-00500.csv.gz"),
        )],
        job_events: vec![Input::File(
            dir.join("job_events/part-00000-of-00500.csv.gz"),
        )],
        ..Default::default()
    };
    let mut d = fit_google2011(&sources, 600_000_000, 5000)?;
    d.source = "google-2011 task_events + job_events part-00000-of-00500 (jobs submitted after the trace start)".into();
    let round = |v: &mut Vec<f64>| v.iter_mut().for_each(|x| *x = (*x * 1e6).round() / 1e6);
    round(&mut d.interarrival_s);
    round(&mut d.duration_s);
    for j in &mut d.jobs {
        j.cpu = (j.cpu * 1e6).round() / 1e6;
        j.mem = (j.mem * 1e6).round() / 1e6;
    }
    let json = serde_json::to_string(&d)?;
    let mut gz =
        flate2::write::GzEncoder::new(std::fs::File::create(&out)?, flate2::Compression::best());
    gz.write_all(json.as_bytes())?;
    gz.finish()?;
    let mean_tasks = d.jobs.iter().map(|j| f64::from(j.tasks)).sum::<f64>() / d.jobs.len() as f64;
    println!(
        "{} job records (mean {:.1} tasks), inter-arrival median {:.2} s, duration median {:.0} s p90 {:.0} s -> {}",
        d.jobs.len(),
        mean_tasks,
        d.interarrival_s[100],
        d.duration_s[100],
        d.duration_s[180],
        out.display()
    );
    Ok(())
}

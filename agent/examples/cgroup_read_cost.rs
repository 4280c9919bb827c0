//! CPU cost of reading running containers' cgroup files directly, as a
//! round's stats sample ([`agent::cgroup::Cgroups::stats`]) and as the
//! memory watch between rounds reads them (its first read,
//! [`agent::cgroup::Cgroups::mem_usage`], and the working set,
//! [`agent::cgroup::Cgroups::mem_now`]): every Docker container whose cgroup is found, REPS times each.
//! Prints microseconds per container and read.
//!
//! ```sh
//! docker run -d --rm --memory 64m tailor-test:latest sleep 600   # a few
//! cargo run --release -p agent --example cgroup_read_cost -- [REPS]
//! ```

use agent::cgroup::{Cgroups, Layout};
use std::time::Instant;

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let ids: Vec<String> = [
        "/sys/fs/cgroup/memory/docker",
        "/sys/fs/cgroup/system.slice",
    ]
    .iter()
    .filter_map(|d| std::fs::read_dir(d).ok())
    .flatten()
    .filter_map(|e| {
        let name = e.ok()?.file_name().to_string_lossy().into_owned();
        let id = name
            .strip_prefix("docker-")
            .and_then(|n| n.strip_suffix(".scope"))
            .unwrap_or(&name)
            .to_string();
        (id.len() == 64).then_some(id)
    })
    .collect();
    if ids.is_empty() {
        eprintln!("no Docker container cgroup found: start a few containers first");
        std::process::exit(1);
    }
    let cg = Cgroups::new(Layout::Docker);
    for (what, f) in [
        ("stats", &|id: &str| cg.stats(id).is_some() as usize as f64),
        ("mem_now", &|id: &str| {
            cg.mem_now(id).is_some() as usize as f64
        }),
        ("mem_usage", &|id: &str| {
            cg.mem_usage(id).is_some() as usize as f64
        }),
    ] as [(&str, &dyn Fn(&str) -> f64); 3]
    {
        let t0 = Instant::now();
        let mut found = 0.0;
        for _ in 0..reps {
            for id in &ids {
                found += f(id);
            }
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / (reps * ids.len()) as f64;
        println!(
            "{what}: {} containers x {reps}: {us:.2} us per read ({:.0}% found)",
            ids.len(),
            100.0 * found / (reps * ids.len()) as f64
        );
    }
}

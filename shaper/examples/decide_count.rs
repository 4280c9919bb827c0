//! Counts the work of `decide()`: `decide_count [components] [reps]`.
//!
//! Builds `synthetic_view(components, 42)` (default 1,000,000), one plan
//! and one `Decider`, as `benches/decide.rs`'s `pessimistic_reuse` does,
//! runs one warm-up `decide_into`, then `reps` (default 10) more, each in
//! [`timed_call`], and prints the plan's summary and the calls' wall times.
//! Under callgrind, only the timed calls are counted (instructions are
//! load-insensitive, unlike time):
//!
//! ```sh
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*timed_call*' \
//!     target/release/examples/decide_count 100000 1
//! ```
//!
//! With `PLAN_HASH` set, it also prints a hash of the last plan's `Debug`
//! text (every action and explanation), to check that two builds plan the
//! same; `VARIANT` picks another configuration: `k1` (0.3), `cpu_evict`,
//! `lwl` (least work lost), `opt` (optimistic), `evict` (memory).

use shaper::synthetic::{synthetic_view, NOW_S};
use shaper::*;
use std::hash::{Hash, Hasher};
use std::hint::black_box;
use std::time::Instant;

/// One `decide_into`: what callgrind counts (`--toggle-collect=*timed_call*`).
#[inline(never)]
fn timed_call(
    decider: &mut Decider,
    view: &ClusterView,
    cfg: &ShaperConfig,
    plan: &mut Plan,
) -> usize {
    decider.decide_into(black_box(view), black_box(NOW_S), cfg, plan);
    black_box(plan.actions.len())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let view = synthetic_view(n, 42);
    let mut cfg = ShaperConfig::default();
    match std::env::var("VARIANT").as_deref() {
        Ok("k1") => cfg.k1 = 0.3,
        Ok("cpu_evict") => cfg.cpu_shortfall = CpuShortfall::Evict,
        Ok("lwl") => cfg.victim_order = VictimOrder::LeastWorkLost,
        Ok("opt") => cfg.policy = Policy::Optimistic,
        Ok("evict") => cfg.mem_shortfall = MemShortfall::Evict,
        _ => {}
    }
    let mut decider = Decider::new();
    let mut plan = decide(&view, NOW_S, &cfg);
    decider.decide_into(black_box(&view), black_box(NOW_S), &cfg, &mut plan);
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        timed_call(&mut decider, &view, &cfg, &mut plan);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    if std::env::var_os("PLAN_HASH").is_some() {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        format!("{plan:?}").hash(&mut h);
        println!("plan_hash={:016x}", h.finish());
    }
    println!(
        "components={n} reps={reps} actions={} summary={:?} min_ms={:.1} median_ms={:.1}",
        plan.actions.len(),
        plan.summary,
        times.first().copied().unwrap_or(f64::NAN),
        times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
    );
}

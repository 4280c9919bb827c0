//! Times `decide()` on a synthetic view:
//! `decide_scale [components] [reps] [policy] [random|sorted] [first|steady] [fresh|reuse] [buffer|evict] [k1]`.
//! `first`: the view as built (every allocation = request: the first round
//! after start-up, ~53% of components resized); `steady`: the plan of one
//! round is applied to the view first (resizes and evictions) and the
//! forecast means then move by up to +-10%, so the timed rounds see
//! allocations already shaped (the usual round of a running shaper, where
//! hysteresis skips the small changes).
//! `buffer|evict`: `[shaper] mem_shortfall` (default: the config's); `k1`:
//! `[shaper] k1` (default: the config's; 0.3, packaging/shaper.toml's,
//! leaves no host room for every buffer).
//! Prints wall and thread CPU time per call, then the plan's counts.

use shaper::synthetic::{synthetic_view, NOW_S};
use shaper::*;
use std::time::Instant;

/// This thread's CPU time (user + system) in seconds, from
/// /proc/thread-self/stat (Linux; clock ticks of 10 ms). `None` elsewhere.
fn thread_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let policy: Policy = args.get(3).and_then(|s| s.parse().ok()).unwrap_or_default();
    let t = Instant::now();
    let mut view = synthetic_view(n, 42);
    // `sorted`: applications listed in submission order (as a FIFO
    // scheduler's running list usually is), so the planning reads the view
    // sequentially; default: random order (the worst case).
    let sorted = args.get(4).is_some_and(|s| s == "sorted");
    if sorted {
        view.apps
            .sort_by(|a, b| a.submitted_s.total_cmp(&b.submitted_s));
    }
    eprintln!("built view of {n} components in {:?}", t.elapsed());
    let mut cfg = ShaperConfig {
        policy,
        ..ShaperConfig::default()
    };
    match args.get(7).map(String::as_str) {
        Some("evict") => cfg.mem_shortfall = MemShortfall::Evict,
        Some("buffer") => cfg.mem_shortfall = MemShortfall::Buffer,
        _ => {}
    }
    if let Some(k1) = args.get(8).and_then(|s| s.parse().ok()) {
        cfg.k1 = k1;
    }
    let steady = args.get(5).is_some_and(|s| s == "steady");
    if steady {
        let first = decide(&view, NOW_S, &cfg);
        apply(&mut view, &first);
        // The forecasts move between rounds: means scaled by a
        // deterministic factor in [0.9, 1.1).
        for app in &mut view.apps {
            for c in &mut app.components {
                let u =
                    (c.id.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
                if let Some(f) = &mut c.forecast {
                    f.cpu.mean *= 0.9 + 0.2 * u;
                    f.mem.mean *= 1.1 - 0.2 * u;
                }
            }
        }
    }
    // `reuse`: one `Decider` and one plan reused across the calls (a
    // long-running shaper); default: a fresh `decide()` per call.
    let reuse = args.get(6).is_some_and(|s| s == "reuse");
    let mut decider = Decider::new();
    let mut kept = Plan {
        policy,
        now_s: NOW_S,
        actions: Vec::new(),
        summary: PlanSummary::default(),
    };
    let mut best = f64::INFINITY;
    let mut cpu_total = 0.0;
    let mut summary = PlanSummary::default();
    for _ in 0..reps {
        let c0 = thread_cpu_s();
        let t = Instant::now();
        let fresh;
        let plan = if reuse {
            decider.decide_into(&view, NOW_S, &cfg, &mut kept);
            &kept
        } else {
            fresh = decide(&view, NOW_S, &cfg);
            &fresh
        };
        let dt = t.elapsed().as_secs_f64();
        let cpu = match (c0, thread_cpu_s()) {
            (Some(a), Some(b)) => b - a,
            _ => f64::NAN,
        };
        cpu_total += cpu;
        best = best.min(dt);
        eprintln!(
            "decide: wall {:.1} ms, cpu {:.0} ms, {} actions",
            dt * 1e3,
            cpu * 1e3,
            plan.actions.len()
        );
        summary = plan.summary;
    }
    let s = &summary;
    println!(
        "components={n} policy={policy} apps={} round={} {} mem_shortfall={:?} best_wall_ms={:.1} mean_cpu_ms={:.0} resized={} squeezed_cpu={} squeezed_mem={} evicted_apps={} evicted_components={}",
        if sorted { "sorted" } else { "random" },
        if steady { "steady" } else { "first" },
        if reuse { "reuse" } else { "fresh" },
        cfg.mem_shortfall,
        best * 1e3,
        cpu_total / reps as f64 * 1e3,
        s.resized,
        s.squeezed_cpu,
        s.squeezed_mem,
        s.evicted_apps,
        s.evicted_components
    );
}

/// Applies a plan to the view: resizes set allocations, evictions remove.
fn apply(view: &mut ClusterView, plan: &Plan) {
    use std::collections::{HashMap, HashSet};
    let mut to: HashMap<ComponentId, Resources> = HashMap::new();
    let mut gone: HashSet<ComponentId> = HashSet::new();
    for a in &plan.actions {
        match a {
            Action::Resize {
                component, to: r, ..
            } => {
                to.insert(*component, *r);
            }
            Action::EvictComponent { component, .. } => {
                gone.insert(*component);
            }
            Action::EvictApplication { components, .. } => gone.extend(components.iter().copied()),
        }
    }
    for app in &mut view.apps {
        app.components.retain(|c| !gone.contains(&c.id));
        for c in &mut app.components {
            if let Some(r) = to.get(&c.id) {
                c.allocation = *r;
            }
        }
    }
    view.apps.retain(|a| !a.components.is_empty());
}

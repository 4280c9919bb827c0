//! CPU cost of the agent's rounds without Docker: N containers on the
//! in-memory fake runtime, a manual clock advanced by `interval_s` per
//! round, synthetic usage (memory following a slow wave with noise, CPU a
//! noisy small load), the default forecaster unless `--config` says
//! otherwise. Prints the process CPU time (user + sys, all threads, from
//! /proc/self/stat) per round over the measured rounds and what that is as
//! a share of one core at the configured interval. The fake runtime's own
//! cost is included but small (no HTTP, no JSON).
//!
//! ```sh
//! cargo run --release -p agent --example round_cost -- [CONTAINERS] [WARMUP_ROUNDS] [ROUNDS] [--config FILE] [--phases]
//! ```
//!
//! `--phases` additionally reports how the forecasters alone cost on the
//! same series (observe + forecast per container and resource), by driving
//! `ModelConfig::build()` models directly on the main thread.

use agent::config::check_toml;
use agent::fake::FakeRuntime;
use agent::runtime::CpuLimit;
use agent::{Agent, AgentConfig, LocalShaper};
use std::sync::Arc;
use tailor_core::ManualClock;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// xorshift64*: deterministic noise without a dependency.
struct Rng(u64);
impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// CPU seconds (user + sys, all threads) of this process so far.
fn cpu_s() -> f64 {
    agent::prom::ProcessStats::read("self").map_or(0.0, |p| p.cpu_seconds)
}

/// Usage of container `i` at round `r`: (memory bytes, CPU cores).
fn usage(i: usize, r: u64, rng: &mut Rng) -> (u64, f64) {
    let period = 12.0 + (i % 7) as f64 * 3.0;
    let phase = i as f64 * 0.37;
    let wave = (r as f64 / period * std::f64::consts::TAU + phase).sin();
    let mem_mib = 24.0 + 8.0 * wave + 2.0 * rng.next_f64();
    let cpu = (0.02 + 0.01 * wave + 0.01 * rng.next_f64()).max(0.0);
    ((mem_mib * MIB as f64) as u64, cpu)
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut config_file = None;
    let mut phases = false;
    if let Some(p) = args.iter().position(|a| a == "--config") {
        config_file = args.get(p + 1).cloned();
        args.drain(p..(p + 2).min(args.len()));
    }
    if let Some(p) = args.iter().position(|a| a == "--phases") {
        phases = true;
        args.remove(p);
    }
    let num = |i: usize, d: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let n = num(0, 200) as usize;
    let warmup = num(1, 40);
    let rounds = num(2, 60);

    let text = match &config_file {
        Some(path) => std::fs::read_to_string(path).unwrap_or_else(|e| {
            eprintln!("cannot read {path}: {e}");
            std::process::exit(2)
        }),
        None => "state_file = \"\"\nactuation = \"recommend\"\n[http]\nlisten = \"\"\n".to_string(),
    };
    let cfg: AgentConfig = check_toml(&text).unwrap_or_else(|e| {
        eprintln!("bad config: {e}");
        std::process::exit(2)
    });
    let interval_s = cfg.interval_s;
    let forecaster = cfg.forecaster.clone();

    let fake = FakeRuntime::new(64, 512 * GIB);
    for i in 0..n {
        let app = format!("app{}", i % 20);
        fake.add(
            &format!("c{i:04}"),
            &[("tailor.enable", "true"), ("tailor.app", app.as_str())],
            Some(64 * MIB),
            CpuLimit::Nano {
                nano_cpus: 200_000_000,
            },
            0.0,
        );
    }
    let clock = Arc::new(ManualClock::new(1_000.0));
    let source = Box::new(LocalShaper::new(cfg.shaper.clone()));
    let mut agent =
        Agent::new(cfg, Arc::new(fake.clone()), source, clock.clone()).unwrap_or_else(|e| {
            eprintln!("cannot build the agent: {e}");
            std::process::exit(2)
        });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut r = 0u64;
    let mut step = |agent: &mut Agent<FakeRuntime>, rng: &mut Rng| {
        r += 1;
        clock.advance(interval_s);
        for i in 0..n {
            let (mem, cpu) = usage(i, r, rng);
            fake.set_usage(&format!("c{i:04}"), mem, (cpu * interval_s * 1e9) as u64);
        }
        rt.block_on(agent.round())
            .map(|rep| rep.view.containers.len())
    };
    for _ in 0..warmup {
        if let Err(e) = step(&mut agent, &mut rng) {
            eprintln!("round failed: {e}");
        }
    }
    let c0 = cpu_s();
    let t0 = std::time::Instant::now();
    let mut seen = 0usize;
    for _ in 0..rounds {
        match step(&mut agent, &mut rng) {
            Ok(k) => seen = k,
            Err(e) => eprintln!("round failed: {e}"),
        }
    }
    let used_s = cpu_s() - c0;
    let wall_s = t0.elapsed().as_secs_f64();
    let per_round_ms = used_s / rounds as f64 * 1e3;
    println!(
        "containers={n} running_in_view={seen} warmup_rounds={warmup} rounds={rounds} forecaster={} cpu_ms_per_round={per_round_ms:.2} wall_ms_per_round={:.2} pct_of_one_core_at_{interval_s}s={:.3}",
        forecaster.kind,
        wall_s / rounds as f64 * 1e3,
        per_round_ms / 1e3 / interval_s * 100.0
    );

    if phases {
        // the forecasters alone, on the same kind of series
        type Pair = (
            Box<dyn forecaster::Forecaster>,
            Box<dyn forecaster::Forecaster>,
        );
        let mut models: Vec<Pair> = (0..n)
            .map(|_| {
                (
                    forecaster.build().expect("forecaster"),
                    forecaster.build().expect("forecaster"),
                )
            })
            .collect();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let feed = |models: &mut [Pair], r: u64, rng: &mut Rng| {
            for (i, (c, m)) in models.iter_mut().enumerate() {
                let (mem, cpu) = usage(i, r, rng);
                let _ = c.observe(cpu);
                let _ = m.observe(mem as f64);
                let _ = c.forecast(6);
                let _ = m.forecast(6);
            }
        };
        for r in 1..=warmup {
            feed(&mut models, r, &mut rng);
        }
        let c0 = cpu_s();
        for r in warmup + 1..=warmup + rounds {
            feed(&mut models, r, &mut rng);
        }
        let f_ms = (cpu_s() - c0) / rounds as f64 * 1e3;
        println!(
            "forecasters only: cpu_ms_per_round={f_ms:.2} ({:.0}% of the round)",
            100.0 * f_ms / per_round_ms.max(1e-9)
        );
    }
}

//! The thesis's qualitative findings (Pace 2018, section 4.3) reproduced by
//! the simulator on three workloads: the bundled Google 2011 slice (always
//! available, embedded in the binary), the thesis-style synthetic workload
//! (generated, always available) and the Google 2011 part-0 trace (when
//! `../shared/data` exists; CI always has it).
//!
//! # The setup, and why
//!
//! * **Contention** (`capacity_scale`): the findings are about a cluster
//!   where reservations make applications queue. Every workload runs on a
//!   cluster shrunk to a fraction of its hosts' capacity.
//! * **Time stretch** (`stretch`): arrivals and work are slowed down
//!   `stretch` times; usage keeps its 5-minute samples, so a component
//!   reads `stretch` times more of its real usage series. Without it almost
//!   no component lives long enough for a forecasting model: the part-0
//!   trace covers about 93 minutes and the synthetic durations are fitted
//!   on it, while the GP needs `history + min_train` samples (15 here, 75
//!   minutes) before it replaces its last-value fallback. Without a stretch
//!   the GP made 0% of the forecasts on all three workloads (measured with
//!   `warm_forecast_fraction`), so the "GP" findings would have been the
//!   fallback's. The thesis's applications ran "from a few dozens of
//!   seconds to several weeks".
//! * **GP as in the thesis's experiments** (section 4.4: "both models
//!   consider a small history of the ten past observations"): history
//!   h = 10, N = h = 10 training patterns, instead of the library's
//!   default (h = N = 20).
//! * **No hysteresis** (`min_relative_change = 0`), as in the thesis:
//!   every planned resize is applied, so the runs show the buffer's effect
//!   alone.
//!
//! Setups: bundled slice x2 stretch, half capacity; synthetic (seed 1,
//! 1,000 applications) x8 stretch, 30% capacity; part 0 (first 1,500
//! applications) x2 stretch, 20% capacity. The oracle runs use K1 = 0 on
//! the synthetic and part-0 workloads (perfect information needs no
//! buffer; with K1 = 5% the oracle's allocations keep enough headroom that
//! the optimistic policy overloads no host there).
//!
//! The GP checks also show that the GP itself acts: a sizeable share of the
//! forecasts come from the fitted GP (`warm_forecast_fraction`), and where
//! stated, the effect also shows in the OOM kills of components whose
//! forecast came from the fitted GP, per such forecast.

use datasets::workload::Workload;
use shaper::{CpuShortfall, MemShortfall, Policy};
use sim::{simulate, ForecasterSource, SimConfig, Summary};

/// Shrinks and stretches a workload (see the module documentation).
fn thesis_setup(mut wl: Workload, stretch: f64, capacity_scale: f64) -> Workload {
    sim::source::stretch_time(&mut wl, stretch).expect("stretch");
    sim::source::scale_capacity(&mut wl, capacity_scale).expect("capacity scale");
    wl
}

fn bundled() -> Workload {
    thesis_setup(datasets::bundled_workload().expect("bundled"), 2.0, 0.5)
}

fn synthetic() -> Workload {
    synthetic_stretched(SYNTHETIC_STRETCH)
}

/// The synthetic workload (seed 1) on the contended cluster, its time
/// stretched `stretch` times.
fn synthetic_stretched(stretch: f64) -> Workload {
    let cfg = datasets::synthetic::SyntheticConfig {
        seed: 1,
        apps: SYNTHETIC_APPS,
        ..Default::default()
    };
    let wl = datasets::synthetic::generate(&cfg).expect("synthetic");
    thesis_setup(wl, stretch, SYNTHETIC_CAPACITY)
}

const SYNTHETIC_APPS: usize = 1000;
const SYNTHETIC_STRETCH: f64 = 8.0;
const SYNTHETIC_CAPACITY: f64 = 0.3;

fn google_part0() -> Option<Workload> {
    let dir = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/google-2011"
    ));
    if !dir.exists() {
        eprintln!("skipped: ../shared/data not found");
        return None;
    }
    let cfg = datasets::google2011::Google2011Config {
        max_apps: Some(PART0_APPS),
        ..Default::default()
    };
    let wl = datasets::google2011::build_workload(dir, &cfg).expect("google 2011 part 0");
    Some(thesis_setup(wl, PART0_STRETCH, PART0_CAPACITY))
}

const PART0_APPS: usize = 1500;
const PART0_STRETCH: f64 = 2.0;
const PART0_CAPACITY: f64 = 0.2;

fn config(policy: Policy, source: ForecasterSource, k1: f64, k2: f64) -> SimConfig {
    // The thesis: one K1/K2 for every component (no size rule, no sibling
    // hold) and the GP.
    let mut c = SimConfig {
        shaper: shaper::ShaperConfig::uniform(),
        ..SimConfig::default()
    };
    c.forecaster.kind = forecaster::config::ModelKind::Gp;
    c.shaper.policy = policy;
    c.shaper.k1 = k1;
    c.shaper.k2 = k2;
    c.forecaster_source = source;
    c.shaper.min_relative_change = 0.0;
    // The thesis's buffer alone: no memory hold on top of the forecast.
    c.shaper.mem_hold_s = 0.0;
    // The thesis's Algorithm 3: CPU that does not fit evicts like memory
    // (tailor's default squeezes it instead), and the OOM floor of the
    // figures in docs/results.md, "Thesis findings" (one hour).
    c.shaper.cpu_shortfall = CpuShortfall::Evict;
    c.shaper.mem_shortfall = MemShortfall::Evict;
    c.shaper.oom_memory_s = 3600.0;
    c.forecaster.gp.history = 10;
    c.forecaster.gp.train_size = Some(10);
    c
}

fn run(wl: &Workload, policy: Policy, source: ForecasterSource, k1: f64, k2: f64) -> Summary {
    let s = simulate(wl, &config(policy, source, k1, k2), None)
        .expect("simulation")
        .summary;
    eprintln!(
        "{} {}+{} k1={k1} k2={k2}: turnaround mean {:.0} s, mem slack mean {:.3} median {:.3}, failed {:.4}, evicted {:.4}, oom {} (host {}, warm {}), warm forecasts {:.3} ({}), evictions {}, completed {}/{}",
        wl.name,
        s.policy,
        s.forecaster,
        s.turnaround_mean_s,
        s.mem_slack_mean,
        s.mem_slack_median,
        s.failed_app_fraction,
        s.evicted_app_fraction,
        s.oom_kills,
        s.host_oom_kills,
        s.oom_kills_warm,
        s.warm_forecast_fraction,
        s.forecasts_warm,
        s.evictions,
        s.apps_completed,
        s.apps - s.apps_rejected
    );
    s
}

/// Oracle findings: pessimistic fails nothing and beats the baseline's
/// turnaround; optimistic fails applications; the baseline wastes memory
/// and shaping cuts it.
fn check_oracle(wl: &Workload, k1: f64) {
    let base = run(wl, Policy::Baseline, ForecasterSource::Oracle, k1, 3.0);
    let pes = run(wl, Policy::Pessimistic, ForecasterSource::Oracle, k1, 3.0);
    let opt = run(wl, Policy::Optimistic, ForecasterSource::Oracle, k1, 3.0);
    // The thesis's optimistic semantics: a growth that does not fit is
    // refused, and the component dies when its usage crosses what it kept.
    let mut c = config(Policy::Optimistic, ForecasterSource::Oracle, k1, 3.0);
    c.optimistic_growth = sim::OptimisticGrowth::Refuse;
    let refused = simulate(wl, &c, None).expect("simulation");
    eprintln!(
        "{}: optimistic (refuse) + oracle: failed {:.4}, oom {}, refused growths {}",
        wl.name,
        refused.summary.failed_app_fraction,
        refused.summary.oom_kills,
        refused.metrics.refused_growths
    );
    assert!(
        refused.summary.failed_app_fraction > 0.0,
        "{:?}",
        refused.summary
    );
    assert!(refused.metrics.refused_growths > 0);
    // Every run completes every admissible application.
    for s in [&base, &pes, &opt, &refused.summary] {
        assert_eq!(s.apps_completed, s.apps - s.apps_rejected, "{s:?}");
    }
    // Oracle + pessimistic: no failed application, faster than the baseline.
    assert_eq!(pes.failed_app_fraction, 0.0, "{pes:?}");
    assert_eq!(pes.oom_kills, 0);
    let ratio = base.turnaround_mean_s / pes.turnaround_mean_s;
    assert!(ratio > 1.0, "oracle+pessimistic turnaround ratio {ratio}");
    // Oracle + optimistic (host OOM semantics): unplanned growth
    // overcommits hosts; the host OOM killer acts only when summed usage
    // exceeds physical memory, which may not happen (reported, not asserted).
    eprintln!(
        "{}: optimistic (host_oom) + oracle: failed {:.4}, host oom {}",
        wl.name, opt.failed_app_fraction, opt.host_oom_kills
    );
    // The baseline wastes memory; shaping cuts it.
    assert!(
        base.mem_slack_median > 0.25,
        "baseline median memory slack {}",
        base.mem_slack_median
    );
    assert!(
        pes.mem_slack_median < 0.5 * base.mem_slack_median,
        "{} vs {}",
        pes.mem_slack_median,
        base.mem_slack_median
    );
    assert!(pes.mem_slack_mean < base.mem_slack_mean);
}

/// OOM kills of components forecast by the fitted model, per such forecast.
fn warm_kill_rate(s: &Summary) -> f64 {
    s.oom_kills_warm as f64 / s.forecasts_warm.max(1) as f64
}

/// GP findings: K1 = 0 fails more applications than K1 = 5% (K2 = 3), and
/// K2 = 3 fewer than K2 = 0 (K1 = 5%); the fitted GP makes at least
/// `min_warm` of the forecasts. `warm_k2`: the K2 effect must also show in
/// the fitted GP's own kill rate (the K1 effect always must).
fn check_gp(wl: &Workload, min_warm: f64, warm_k2: bool) {
    let gp = ForecasterSource::Model;
    let k1_0 = run(wl, Policy::Pessimistic, gp, 0.0, 3.0);
    let k1_5 = run(wl, Policy::Pessimistic, gp, 0.05, 3.0);
    let k2_0 = run(wl, Policy::Pessimistic, gp, 0.05, 0.0);
    for s in [&k1_0, &k1_5, &k2_0] {
        assert!(
            s.warm_forecast_fraction >= min_warm,
            "the fitted GP made only {} of the forecasts",
            s.warm_forecast_fraction
        );
    }
    assert!(
        k1_0.failed_app_fraction > k1_5.failed_app_fraction,
        "K1=0 {} vs K1=5% {}",
        k1_0.failed_app_fraction,
        k1_5.failed_app_fraction
    );
    assert!(
        k1_5.failed_app_fraction < k2_0.failed_app_fraction,
        "K2=3 {} vs K2=0 {}",
        k1_5.failed_app_fraction,
        k2_0.failed_app_fraction
    );
    assert!(
        warm_kill_rate(&k1_0) > warm_kill_rate(&k1_5),
        "fitted-GP kill rate K1=0 {} vs K1=5% {}",
        warm_kill_rate(&k1_0),
        warm_kill_rate(&k1_5)
    );
    if warm_k2 {
        assert!(
            warm_kill_rate(&k2_0) > warm_kill_rate(&k1_5),
            "fitted-GP kill rate K2=0 {} vs K2=3 {}",
            warm_kill_rate(&k2_0),
            warm_kill_rate(&k1_5)
        );
    }
}

#[test]
fn oracle_findings_on_bundled_slice() {
    check_oracle(&bundled(), 0.05);
}

#[test]
fn gp_buffer_findings_on_bundled_slice() {
    check_gp(&bundled(), 0.4, true);
}

#[test]
fn oracle_findings_on_synthetic() {
    check_oracle(&synthetic(), 0.0);
}

#[test]
fn gp_buffer_findings_on_synthetic() {
    check_gp(&synthetic(), 0.25, false);
}

#[test]
fn oracle_findings_on_google_2011_part0() {
    if let Some(wl) = google_part0() {
        check_oracle(&wl, 0.0);
    }
}

/// Too heavy to run beside the rest of the suite (about 55,000 components
/// living for hours, each with two GP models: ~2 minutes alone, in the
/// optimized dev profile or in release). `scripts/test.sh` runs it alone:
/// `cargo test --test replay_thesis -- --ignored`.
#[test]
#[ignore = "heavy: scripts/test.sh runs it alone with --ignored"]
fn gp_buffer_findings_on_google_2011_part0() {
    if let Some(wl) = google_part0() {
        check_gp(&wl, 0.25, false);
    }
}

/// Issue 14's check of the two optimistic semantics, on a contended
/// synthetic cluster whose components live long (the synthetic workload of
/// the checks above, seed 1, 1,000 applications, 30% of the hosts'
/// capacity, time stretched 100 times: the thesis's applications ran for
/// up to weeks, and a long life is what brings a component's memory to
/// grow on a host that others have filled). The replay's own oracle
/// (`sim::oracle_of` the shipped defaults: exact forecasts, no buffer)
/// under the thesis's optimistic semantics (`optimistic_growth =
/// "refuse"`) fails at least 10% of the applications; under the
/// pessimistic policy, none.
#[test]
fn refusing_optimistic_oracle_fails_a_tenth_of_a_contended_cluster_pessimistic_none() {
    let wl = synthetic_stretched(100.0);
    let pes = sim::oracle_of(&SimConfig::default());
    assert_eq!(pes.shaper.policy, Policy::Pessimistic);
    let mut opt = pes.clone();
    opt.shaper.policy = Policy::Optimistic;
    opt.optimistic_growth = sim::OptimisticGrowth::Refuse;
    let o = simulate(&wl, &opt, None).expect("optimistic").summary;
    let p = simulate(&wl, &pes, None).expect("pessimistic").summary;
    eprintln!(
        "contended synthetic x100: oracle + optimistic (refuse): failed {:.4}, oom {}; oracle + pessimistic: failed {:.4}, oom {}, evictions {}",
        o.failed_app_fraction, o.oom_kills, p.failed_app_fraction, p.oom_kills, p.evictions
    );
    assert!(o.failed_app_fraction >= 0.10, "{o:?}");
    assert_eq!(p.failed_app_fraction, 0.0, "{p:?}");
    assert_eq!(p.oom_kills, 0, "{p:?}");
    for s in [&o, &p] {
        assert_eq!(s.apps_completed, s.apps - s.apps_rejected, "{s:?}");
    }
}

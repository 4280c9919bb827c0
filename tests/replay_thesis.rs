//! The thesis's qualitative findings (Pace 2018, section 4.3) reproduced on
//! the bundled Google 2011 slice (always available, embedded in the binary)
//! with host capacities halved so that the cluster is contended, and on the
//! Google 2011 part-0 trace when `../shared/data` exists (first applications
//! only, to stay fast in debug builds).

use datasets::google2011::Google2011Config;
use datasets::workload::Workload;
use shaper::Policy;
use sim::{simulate, ForecasterSource, SimConfig, Summary};

fn contended_bundled() -> Workload {
    let cfg = Google2011Config {
        host_capacity_scale: 0.5,
        ..datasets::bundled::bundled_config()
    };
    datasets::bundled::bundled_workload_with(&cfg)
        .expect("bundled workload")
        .0
}

fn run(wl: &Workload, policy: Policy, source: ForecasterSource, k1: f64, k2: f64) -> Summary {
    let mut c = SimConfig::default();
    c.shaper.policy = policy;
    c.shaper.k1 = k1;
    c.shaper.k2 = k2;
    c.forecaster_source = source;
    // No hysteresis: the shaper skips growths below min_relative_change
    // unless they are needed to stay above *current* usage, so a growth
    // towards a forecast peak that the request ceiling caps within 5% of the
    // current allocation is skipped and even an oracle OOMs.
    c.shaper.min_relative_change = 0.0;
    let s = simulate(wl, &c, None).expect("simulation").summary;
    eprintln!(
        "{} {}+{} k1={k1} k2={k2}: turnaround mean {:.0} s, mem slack mean {:.3} median {:.3}, failed {:.4}, evicted {:.4}, oom {} (host {}), evictions {}, completed {}/{}",
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
        s.evictions,
        s.apps_completed,
        s.apps - s.apps_rejected
    );
    s
}

fn check_oracle(wl: &Workload, expect_optimistic_failures: bool) {
    let base = run(wl, Policy::Baseline, ForecasterSource::Oracle, 0.05, 3.0);
    let pes = run(wl, Policy::Pessimistic, ForecasterSource::Oracle, 0.05, 3.0);
    let opt = run(wl, Policy::Optimistic, ForecasterSource::Oracle, 0.05, 3.0);
    // Every run completes every admissible application.
    for s in [&base, &pes, &opt] {
        assert_eq!(s.apps_completed, s.apps - s.apps_rejected, "{s:?}");
    }
    // Oracle + pessimistic: no failed application, faster than the baseline.
    assert_eq!(pes.failed_app_fraction, 0.0, "{pes:?}");
    assert_eq!(pes.oom_kills, 0);
    let ratio = base.turnaround_mean_s / pes.turnaround_mean_s;
    assert!(ratio > 1.0, "oracle+pessimistic turnaround ratio {ratio}");
    // Oracle + optimistic: the host OOM killer fails applications (when the
    // cluster is contended enough for unplanned growth to overload a host).
    if expect_optimistic_failures {
        assert!(opt.failed_app_fraction > 0.0, "{opt:?}");
    }
    assert!(opt.failed_app_fraction >= pes.failed_app_fraction);
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

#[test]
fn oracle_findings_on_bundled_slice() {
    check_oracle(&contended_bundled(), true);
}

#[test]
fn gp_buffer_findings_on_bundled_slice() {
    let wl = contended_bundled();
    let gp = ForecasterSource::Model;
    let k1_0 = run(&wl, Policy::Pessimistic, gp, 0.0, 3.0);
    let k1_5 = run(&wl, Policy::Pessimistic, gp, 0.05, 3.0);
    let k2_0 = run(&wl, Policy::Pessimistic, gp, 0.05, 0.0);
    // K1 = 0 fails more applications than K1 = 5% (same K2 = 3).
    assert!(
        k1_0.failed_app_fraction > k1_5.failed_app_fraction,
        "K1=0 {} vs K1=5% {}",
        k1_0.failed_app_fraction,
        k1_5.failed_app_fraction
    );
    // K2 = 3 fails fewer than K2 = 0 at K1 = 5%.
    assert!(
        k1_5.failed_app_fraction < k2_0.failed_app_fraction,
        "K2=3 {} vs K2=0 {}",
        k1_5.failed_app_fraction,
        k2_0.failed_app_fraction
    );
}

#[test]
fn oracle_findings_on_google_2011_part0() {
    let dir = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/google-2011"
    ));
    if !dir.exists() {
        eprintln!("skipped: ../shared/data not found");
        return;
    }
    let cfg = Google2011Config {
        max_apps: Some(1500),
        host_capacity_scale: 0.25,
        ..Default::default()
    };
    let wl = datasets::google2011::build_workload(dir, &cfg).expect("google 2011 part 0");
    // The first 1,500 applications of part 0 on a quarter-size cluster do
    // not contend enough for the optimistic policy to overload a host.
    check_oracle(&wl, false);
}

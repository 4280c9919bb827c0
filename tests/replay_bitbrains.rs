//! The Bitbrains VMs replayed with their own usage (docs/results.md, "Bitbrains
//! VMs"), when `../shared/data/bitbrains-rnd/2013-7` exists (CI always has
//! it; skipped, and said so, without it): the baseline fails none, the
//! oracle gives back most of the provisioned memory, and tailor's points
//! (`last`, K1 = 0.05, K2 = 0 and the shipped defaults' K2 = 1; every VM
//! is a lone service task, a small application whose constant buffer is
//! `small_app_k1` whatever K1 is and whose memory is held a week) stay
//! within 0.5% of OOM-hit VM-days and reclaim more than the faithful
//! VPA's best point (P90 + 30%, its own knobs), which is over that budget.

use sim::frontier::{point_specs, run_frontier, Family, FrontierGrid};
use sim::seeded::SeededWorkloads;
use sim::{SimConfig, WorkloadSource};

#[test]
fn tailor_beats_the_faithful_vpa_on_the_bitbrains_vms() {
    let dir = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/bitbrains-rnd/2013-7"
    ));
    if !dir.exists() {
        eprintln!("skipped: {} not found", dir.display());
        return;
    }
    let src: WorkloadSource = format!("bitbrains:{}", dir.display())
        .parse()
        .expect("source");
    let wl = src.load().expect("workload");
    assert_eq!(wl.apps.len(), 60);
    let grid = FrontierGrid {
        k1: vec![0.05],
        k2: vec![0.0, 1.0],
        memory_risk: Vec::new(),
        vpa_percentile: vec![0.9],
        vpa_margin: vec![0.3],
        families: vec![Family::Last, Family::Vpa],
        ..FrontierGrid::default()
    };
    let specs = point_specs(&SimConfig::default(), &grid).expect("specs");
    let f = run_frontier(SeededWorkloads::one(wl, 0), &specs, None).expect("frontier");
    assert_eq!(f.baseline.failed_app_fraction, 0.0);
    let saving = f.baseline.mem_alloc_gib_h - f.oracle_mem_alloc_gib_h;
    assert!(
        saving > 0.9 * f.baseline.mem_alloc_gib_h,
        "the oracle gives back {saving} of {} GiB-h",
        f.baseline.mem_alloc_gib_h
    );
    let point = |fam: Family, k2: f64| {
        f.points
            .iter()
            .find(|p| {
                p.forecaster == fam && (fam == Family::Vpa || p.params.get("k2") == Some(&k2))
            })
            .unwrap_or_else(|| panic!("no {fam:?} point"))
    };
    let vpa = point(Family::Vpa, 0.0);
    eprintln!("vpa {vpa:?}");
    assert!(vpa.oom_component_day_fraction > 0.005, "{vpa:?}");
    for k2 in [0.0, 1.0] {
        let tailor = point(Family::Last, k2);
        eprintln!("tailor, K2 = {k2}: {tailor:?}");
        assert!(tailor.oom_component_day_fraction <= 0.005, "{tailor:?}");
        assert!(tailor.mem_alloc_gib_h < vpa.mem_alloc_gib_h);
        // 22.4% and 21.9% at commit a16c82b, 1 VM failed; the shipped
        // defaults failed 7 with a one-day hold (docs/results.md, "A small
        // application holds its memory for a week")
        assert!(
            tailor.failed_app_fraction <= 1.0 / 60.0 + 1e-9,
            "{tailor:?}"
        );
        assert!(tailor.oracle_capture > 0.2, "{tailor:?}");
    }
}

//! Repeated runs over seeds (`--seeds N`): means with 95% confidence
//! intervals.
//!
//! A workload's random choices (the synthetic generator; for Google 2011
//! workloads, the bundled slice included, the class hash, the usage-pool
//! draws and the sampled durations; for Alibaba GPU workloads, the
//! usage-pool draws) all derive from one seed. Run `i` of
//! `N` (i = 0..N) uses seed `base + i`, where `base` is the `SEED` of
//! `synthetic:SEED` or the configuration's `seed` (default 0) for the
//! others. The engine draws no random number (placement ties are broken by
//! host index), so these are all the random choices of a run. Google 2019
//! and recorded workloads have none: repeating them gives the same run.
//!
//! The interval is Student's t: `mean +- t(0.975, n - 1) * s / sqrt(n)`,
//! with `s` the sample standard deviation; it is 0 wide for one run.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::metrics::Summary;
use crate::SimError;

/// Most seeds one command runs (each seed is a full simulation per point).
pub const MAX_SEEDS: usize = 100;

/// Checks `--seeds N`: 1 <= N <= [`MAX_SEEDS`].
pub fn check_seeds(n: usize) -> Result<(), SimError> {
    if (1..=MAX_SEEDS).contains(&n) {
        Ok(())
    } else {
        Err(SimError::Config(tailor_core::ConfigErrors::single(
            "seeds",
            format!("--seeds must be in [1, {MAX_SEEDS}], got {n}"),
        )))
    }
}

/// The seeds of `n` runs from `base`: `base, base + 1, ...`; an error
/// when the last would be past `u64::MAX` (no silent wrap to 0).
pub fn seed_list(base: u64, n: usize) -> Result<Vec<u64>, SimError> {
    let last = (n as u64).checked_sub(1).and_then(|k| base.checked_add(k));
    if n > 0 && last.is_none() {
        return Err(SimError::Config(tailor_core::ConfigErrors::single(
            "seeds",
            format!(
                "--seeds {n} from seed {base} runs past the largest seed ({}); use a base seed of at most {}",
                u64::MAX,
                u64::MAX - (n as u64 - 1)
            ),
        )));
    }
    Ok((0..n as u64).map(|i| base + i).collect())
}

/// Mean and 95% interval half-width of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanCi {
    pub mean: f64,
    /// Half-width of the 95% t-interval (0 for one value; NaN when empty).
    pub ci95: f64,
    pub n: usize,
}

impl MeanCi {
    /// Non-finite values are left out (e.g. a turnaround ratio without
    /// completed applications).
    pub fn of(values: &[f64]) -> MeanCi {
        let xs: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let n = xs.len();
        if n == 0 {
            return MeanCi {
                mean: f64::NAN,
                ci95: f64::NAN,
                n,
            };
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return MeanCi { mean, ci95: 0.0, n };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        MeanCi {
            mean,
            ci95: t975(n - 1) * (var / n as f64).sqrt(),
            n,
        }
    }

    /// `mean ± ci` with `f` formatting both numbers. A half-width that is
    /// float noise (at most 1e-9 of the mean: runs that agree) shows as
    /// `f(0)`, not as `0.000000000`.
    pub fn display(&self, f: impl Fn(f64) -> String) -> String {
        self.display_within(f, f64::NEG_INFINITY, f64::INFINITY)
    }

    /// [`display`](Self::display) of a quantity that cannot leave
    /// `[lo, hi]` (a share, a count): when the t-interval crosses a bound,
    /// `mean [a, b]` with the interval clipped to the bounds, rather than a
    /// half-width that reaches below zero.
    pub fn display_within(&self, f: impl Fn(f64) -> String, lo: f64, hi: f64) -> String {
        if self.n <= 1 || !self.ci95.is_finite() {
            return f(self.mean);
        }
        let ci = if self.ci95 <= 1e-9 * self.mean.abs() {
            0.0
        } else {
            self.ci95
        };
        let (a, b) = (self.mean - ci, self.mean + ci);
        if a < lo || b > hi {
            format!("{} [{}, {}]", f(self.mean), f(a.max(lo)), f(b.min(hi)))
        } else {
            format!("{} ± {}", f(self.mean), f(ci))
        }
    }
}

/// The range a figure of [`SUMMARY_FIELDS`] cannot leave: `[0, 1]` for
/// shares, `[0, inf)` for amounts, unbounded for differences.
pub fn field_bounds(name: &str) -> (f64, f64) {
    match name {
        "failed_app_fraction" | "oom_component_day_fraction" | "evicted_app_fraction" => (0.0, 1.0),
        "mem_alloc_gib_h" | "turnaround_ratio" | "turnaround_mean_s" | "work_lost_s" => {
            (0.0, f64::INFINITY)
        }
        _ => (f64::NEG_INFINITY, f64::INFINITY),
    }
}

/// The 0.975 quantile of Student's t with `dof` degrees of freedom (>= 1).
pub fn t975(dof: usize) -> f64 {
    StudentsT::new(0.0, 1.0, dof.max(1) as f64)
        .map(|t| t.inverse_cdf(0.975))
        .unwrap_or(f64::NAN)
}

/// Reads one figure of a [`Summary`].
pub type Figure = fn(&Summary) -> f64;

/// The figures of [`Summary`] that `--seeds` reports, with their names.
pub const SUMMARY_FIELDS: [(&str, Figure); 14] = [
    ("failed_app_fraction", |s| s.failed_app_fraction),
    ("oom_component_day_fraction", |s| {
        s.oom_component_day_fraction
    }),
    ("mem_alloc_gib_h", |s| s.mem_alloc_gib_h),
    ("mem_reclaimed_gib_h", |s| {
        s.mem_reclaimed_gib_h.unwrap_or(f64::NAN)
    }),
    ("oracle_capture", |s| s.oracle_capture.unwrap_or(f64::NAN)),
    ("turnaround_ratio", |s| {
        s.turnaround_ratio.unwrap_or(f64::NAN)
    }),
    ("turnaround_mean_s", |s| s.turnaround_mean_s),
    ("mem_slack_mean", |s| s.mem_slack_mean),
    ("mem_slack_median", |s| s.mem_slack_median),
    ("cpu_slack_mean", |s| s.cpu_slack_mean),
    ("cluster_mem_slack", |s| s.cluster_mem_slack),
    ("cluster_cpu_slack", |s| s.cluster_cpu_slack),
    ("evicted_app_fraction", |s| s.evicted_app_fraction),
    ("work_lost_s", |s| s.work_lost_s),
];

/// One [`MeanCi`] per entry of [`SUMMARY_FIELDS`], over `runs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryStats {
    pub seeds: Vec<u64>,
    pub stats: std::collections::BTreeMap<String, MeanCi>,
}

impl SummaryStats {
    pub fn of(seeds: &[u64], runs: &[&Summary]) -> SummaryStats {
        let stats = SUMMARY_FIELDS
            .iter()
            .map(|(name, f)| {
                let v: Vec<f64> = runs.iter().map(|s| f(s)).collect();
                (name.to_string(), MeanCi::of(&v))
            })
            .collect();
        SummaryStats {
            seeds: seeds.to_vec(),
            stats,
        }
    }

    /// The statistic named `name` shown by [`MeanCi::display_within`] in
    /// its [`field_bounds`].
    pub fn show(&self, name: &str, f: impl Fn(f64) -> String) -> String {
        let (lo, hi) = field_bounds(name);
        self.get(name).display_within(f, lo, hi)
    }

    /// The statistic named `name` (NaN mean when unknown).
    pub fn get(&self, name: &str) -> MeanCi {
        self.stats.get(name).copied().unwrap_or(MeanCi {
            mean: f64::NAN,
            ci95: f64::NAN,
            n: 0,
        })
    }
}

/// The first run's summary with every figure of [`SUMMARY_FIELDS`]
/// replaced by its mean over `runs` (`None` when `runs` is empty). Counts
/// and labels stay the first run's.
pub fn mean_summary(runs: &[&Summary]) -> Option<Summary> {
    let first = runs.first()?;
    let st = SummaryStats::of(&[], runs);
    let m = |k: &str| st.get(k).mean;
    let mut s = (*first).clone();
    s.failed_app_fraction = m("failed_app_fraction");
    s.oom_component_day_fraction = m("oom_component_day_fraction");
    s.mem_alloc_gib_h = m("mem_alloc_gib_h");
    s.mem_reclaimed_gib_h = Some(m("mem_reclaimed_gib_h")).filter(|r| r.is_finite());
    s.oracle_capture = Some(m("oracle_capture")).filter(|r| r.is_finite());
    s.turnaround_ratio = Some(m("turnaround_ratio")).filter(|r| r.is_finite());
    s.turnaround_mean_s = m("turnaround_mean_s");
    s.mem_slack_mean = m("mem_slack_mean");
    s.mem_slack_median = m("mem_slack_median");
    s.cpu_slack_mean = m("cpu_slack_mean");
    s.cluster_mem_slack = m("cluster_mem_slack");
    s.cluster_cpu_slack = m("cluster_cpu_slack");
    s.evicted_app_fraction = m("evicted_app_fraction");
    s.work_lost_s = m("work_lost_s");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        assert!((t975(1) - 12.706).abs() < 1e-3);
        assert!((t975(2) - 4.303).abs() < 1e-3);
        assert!((t975(9) - 2.262).abs() < 1e-3);
        assert!((t975(1000) - 1.962).abs() < 1e-3);
    }

    #[test]
    fn mean_and_interval() {
        let m = MeanCi::of(&[1.0, 2.0, 3.0]);
        assert_eq!(m.mean, 2.0);
        // s = 1, t(0.975, 2) = 4.303
        assert!((m.ci95 - 4.302_652_7 / 3f64.sqrt()).abs() < 1e-6, "{m:?}");
        assert_eq!(MeanCi::of(&[5.0]).ci95, 0.0);
        assert_eq!(MeanCi::of(&[5.0, f64::NAN]).n, 1);
        assert!(MeanCi::of(&[]).mean.is_nan());
        assert_eq!(MeanCi::of(&[4.0, 4.0, 4.0]).ci95, 0.0);
    }

    /// QA E15: float noise is no interval, and a share's or an amount's
    /// interval does not reach below zero.
    #[test]
    fn display_hides_noise_and_clips_at_bounds() {
        let f = |x: f64| format!("{x:.1}");
        let noise = MeanCi {
            mean: 6076.3,
            ci95: 1.06e-11,
            n: 3,
        };
        assert_eq!(noise.display(f), "6076.3 ± 0.0");
        let lost = MeanCi {
            mean: 11600.0,
            ci95: 37745.8,
            n: 3,
        };
        assert_eq!(lost.display(f), "11600.0 ± 37745.8");
        assert_eq!(
            lost.display_within(f, 0.0, f64::INFINITY),
            "11600.0 [0.0, 49345.8]"
        );
        let pct = |x: f64| format!("{:.2}%", 100.0 * x);
        let failed = MeanCi {
            mean: 0.0018,
            ci95: 0.0040,
            n: 3,
        };
        let (lo, hi) = field_bounds("failed_app_fraction");
        assert_eq!(failed.display_within(pct, lo, hi), "0.18% [0.00%, 0.58%]");
        let inside = MeanCi {
            mean: 0.5,
            ci95: 0.1,
            n: 3,
        };
        assert_eq!(inside.display_within(pct, lo, hi), "50.00% ± 10.00%");
        assert_eq!(field_bounds("mem_reclaimed_gib_h").0, f64::NEG_INFINITY);
    }

    #[test]
    fn seed_lists_and_bounds() {
        assert_eq!(seed_list(7, 3).expect("fits"), vec![7, 8, 9]);
        assert_eq!(seed_list(u64::MAX, 1).expect("fits"), vec![u64::MAX]);
        assert_eq!(
            seed_list(u64::MAX - 2, 3).expect("fits"),
            vec![u64::MAX - 2, u64::MAX - 1, u64::MAX]
        );
        let err = seed_list(u64::MAX, 2).expect_err("wraps").to_string();
        assert!(
            err.contains("seeds: --seeds 2 from seed 18446744073709551615 runs past"),
            "{err}"
        );
        assert!(check_seeds(0).is_err());
        assert!(check_seeds(MAX_SEEDS + 1).is_err());
        assert!(check_seeds(3).is_ok());
    }
}

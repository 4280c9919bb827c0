//! The savings frontier (`tailor frontier`): how much reserved memory each
//! forecaster family reclaims against the baseline, at what failure cost.
//!
//! Every point is one simulation of the same workload under the base
//! configuration's policy:
//!
//! - `gp`, `arima`, `peak`, `last`: the thesis's buffer over K1 x K2
//!   (sizing `k1k2`), and risk-targeted memory over `memory_risk` values
//!   (sizing `memory_risk`; K1/K2 of the base config still size CPU);
//! - `vpa`: the faithful VPA recommender over its own knobs, the target
//!   memory percentile and the safety margin (sizing `vpa`), uncalibrated
//!   and with K1 = K2 = 0 and no memory hold (`mem_hold_s = 0`) so nothing
//!   is added on top of its target;
//! - `oracle`: exact future usage, K1 = K2 = 0 (the reference reclaim);
//! - `baseline`: every component at its request (the reference cost).
//!
//! `oracle_capture = (baseline - point) / (baseline - oracle)` in reserved
//! GiB-hours ([`crate::Summary::mem_alloc_gib_h`]): 0 for the baseline, 1
//! for the oracle. With several seeds every figure is the mean over seeds
//! (capture from the means) with a 95% t-interval ([`crate::seeds`]).
//!
//! All points of all seeds run in parallel (rayon, one simulation per
//! task, forecasters updated serially inside it).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use datasets::workload::{OomRestart, Workload};
use forecaster::config::ModelKind;
use plotters::coord::Shift;
use plotters::prelude::*;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tailor_core::ConfigErrors;

use crate::metrics::{oracle_capture, Summary};
use crate::runner::simulate;
use crate::seeded::SeededWorkloads;
use crate::seeds::MeanCi;
use crate::SimError;

mod grid;
mod report;
pub use grid::{point_specs, FrontierGrid, PointSpec};
pub use report::{budget_rows, markdown, write_outputs};

/// Default K1 values of the frontier.
pub const DEFAULT_K1: [f64; 7] = [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4];
/// Default K2 values of the frontier.
pub const DEFAULT_K2: [f64; 4] = [0.0, 1.0, 2.0, 3.0];
/// Default `memory_risk` values.
pub const DEFAULT_MEMORY_RISK: [f64; 3] = [0.0001, 0.001, 0.01];
/// Default VPA target memory percentiles.
pub const DEFAULT_VPA_PERCENTILE: [f64; 4] = [0.5, 0.8, 0.9, 0.95];
/// Default VPA safety margins.
pub const DEFAULT_VPA_MARGIN: [f64; 3] = [0.0, 0.15, 0.3];
/// Most values in one swept list.
pub const MAX_LIST: usize = 32;
/// Most simulations of one frontier (points x seeds).
pub const MAX_RUNS: usize = 20_000;
/// The failure budgets of the summary.
pub const BUDGETS: [f64; 3] = [0.001, 0.005, 0.01];

/// A forecaster family of the frontier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Baseline,
    Oracle,
    Gp,
    Arima,
    Peak,
    Last,
    Vpa,
}

impl Family {
    /// The swept families (baseline and oracle always run).
    pub const SWEPT: [Family; 5] = [
        Family::Gp,
        Family::Arima,
        Family::Peak,
        Family::Last,
        Family::Vpa,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            Family::Baseline => "baseline",
            Family::Oracle => "oracle",
            Family::Gp => "gp",
            Family::Arima => "arima",
            Family::Peak => "peak",
            Family::Last => "last",
            Family::Vpa => "vpa",
        }
    }

    fn model_kind(&self) -> Option<ModelKind> {
        match self {
            Family::Gp => Some(ModelKind::Gp),
            Family::Arima => Some(ModelKind::Arima),
            Family::Peak => Some(ModelKind::Peak),
            Family::Last => Some(ModelKind::Last),
            Family::Vpa => Some(ModelKind::Vpa),
            Family::Baseline | Family::Oracle => None,
        }
    }

    /// tailor's own families (what "tailor best" is the best of).
    pub fn is_tailor(&self) -> bool {
        matches!(
            self,
            Family::Gp | Family::Arima | Family::Peak | Family::Last
        )
    }

    fn color(&self) -> RGBColor {
        match self {
            Family::Baseline => RGBColor(0, 0, 0),
            Family::Oracle => RGBColor(120, 120, 120),
            Family::Gp => RGBColor(31, 119, 180),
            Family::Arima => RGBColor(44, 160, 44),
            Family::Peak => RGBColor(148, 103, 189),
            Family::Last => RGBColor(140, 86, 75),
            Family::Vpa => RGBColor(214, 39, 40),
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a point sizes memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sizing {
    /// Allocation = request (the baseline).
    Request,
    /// The thesis's buffer: forecast + K1 x request + K2 x sigma.
    K1k2,
    /// `[shaper] memory_risk`: the calibrated predictive quantile.
    MemoryRisk,
    /// The VPA recommender's own knobs.
    Vpa,
}

/// Which failure measure the budgets and the x axis use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetMeasure {
    /// Share of applications that crashed at least once (batch traces,
    /// Google 2011).
    #[default]
    FailedApps,
    /// Share of component-days with at least one OOM kill (services,
    /// Google 2019).
    OomComponentDays,
}

impl BudgetMeasure {
    pub fn of(&self, p: &Point) -> f64 {
        match self {
            BudgetMeasure::FailedApps => p.failed_app_fraction,
            BudgetMeasure::OomComponentDays => p.oom_component_day_fraction,
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            BudgetMeasure::FailedApps => "failed applications",
            BudgetMeasure::OomComponentDays => "OOM-hit component-days",
        }
    }

    /// The measure that suits a workload: OOM-hit component-days when
    /// every component restarts alone after an OOM kill (services: the
    /// `oom_restart` override when set, else each component's own), failed
    /// applications otherwise (batch work, where one kill re-runs the
    /// application; also an empty workload).
    pub fn for_workload(w: &Workload, oom_restart: Option<OomRestart>) -> Self {
        let restarts_alone = |r: OomRestart| r == OomRestart::Component;
        let services = match oom_restart {
            Some(r) => restarts_alone(r),
            None => {
                let mut cs = w.apps.iter().flat_map(|a| &a.components).peekable();
                cs.peek().is_some() && cs.all(|c| restarts_alone(c.oom_restart))
            }
        };
        if services {
            BudgetMeasure::OomComponentDays
        } else {
            BudgetMeasure::FailedApps
        }
    }
}

/// 95% interval half-widths of a point's figures over seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointCi {
    pub failed_app_fraction: f64,
    pub oom_component_day_fraction: f64,
    pub mem_alloc_gib_h: f64,
    pub oracle_capture: f64,
}

/// One point of the frontier (means over seeds).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub forecaster: Family,
    pub sizing: Sizing,
    pub params: BTreeMap<String, f64>,
    pub failed_app_fraction: f64,
    pub oom_component_day_fraction: f64,
    pub mem_alloc_gib_h: f64,
    /// `(baseline - this) / (baseline - oracle)` in reserved GiB-hours;
    /// null (NaN) when the oracle reclaims nothing.
    pub oracle_capture: f64,
    /// With several seeds only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci95: Option<PointCi>,
}

impl Point {
    /// `k=v` pairs of its parameters.
    pub fn params_label(&self) -> String {
        if self.params.is_empty() {
            return "-".to_string();
        }
        self.params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The baseline's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BaselineFigures {
    pub failed_app_fraction: f64,
    pub mem_alloc_gib_h: f64,
}

/// A finished frontier (the `--json` object).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Frontier {
    pub baseline: BaselineFigures,
    pub oracle_mem_alloc_gib_h: f64,
    pub points: Vec<Point>,
    pub workload: String,
    pub policy: String,
    pub seeds: Vec<u64>,
}

/// Checks a frontier of `points` points over `seeds` seeds against
/// [`MAX_RUNS`] simulations (before any workload is built).
pub fn check_runs(points: usize, seeds: usize) -> Result<(), SimError> {
    let total = points.saturating_mul(seeds);
    if total > MAX_RUNS {
        return Err(SimError::Config(ConfigErrors::single(
            "frontier",
            format!("{total} simulations (points x seeds) exceed the limit of {MAX_RUNS}; sweep fewer values or seeds"),
        )));
    }
    Ok(())
}

/// Runs every point of `specs` on every seed's workload, seed by seed (the
/// points of one seed in parallel; one workload in memory at a time).
/// `progress(done, total)` after each simulation, possibly from several
/// threads.
pub fn run_frontier(
    workloads: SeededWorkloads<'_>,
    specs: &[PointSpec],
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<Frontier, SimError> {
    if specs.len() < 2 || specs[0].family != Family::Baseline || specs[1].family != Family::Oracle {
        return Err(SimError::Workload(
            "frontier: the specs must start with the baseline and the oracle (point_specs)"
                .to_string(),
        ));
    }
    let seeds = workloads.seeds().to_vec();
    let workload = workloads.first().name.clone();
    check_runs(specs.len(), seeds.len())?;
    let total = specs.len() * seeds.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    // seed by seed (one workload in memory), the points of a seed in
    // parallel
    let mut runs: Vec<Summary> = Vec::with_capacity(total);
    workloads.for_each(|_, wl| -> Result<(), SimError> {
        let seed_runs: Vec<Summary> = specs
            .par_iter()
            .map(|spec| {
                let s = simulate(wl, &spec.cfg, None)?.summary;
                let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                if let Some(cb) = progress {
                    cb(n, total);
                }
                Ok(s)
            })
            .collect::<Result<_, SimError>>()?;
        // QA: a frontier of a workload in which nothing ran is all zeros
        seed_runs[0].check_ran()?;
        runs.extend(seed_runs);
        Ok(())
    })?;
    let at = |w: usize, p: usize| &runs[w * specs.len() + p];
    let nw = seeds.len();
    let over = |p: usize, f: &dyn Fn(&Summary) -> f64| -> MeanCi {
        MeanCi::of(&(0..nw).map(|w| f(at(w, p))).collect::<Vec<_>>())
    };
    let mem = |s: &Summary| s.mem_alloc_gib_h;
    let base_mem = over(0, &mem).mean;
    let oracle_mem = over(1, &mem).mean;
    let points = specs
        .iter()
        .enumerate()
        .map(|(p, spec)| {
            let failed = over(p, &|s| s.failed_app_fraction);
            let days = over(p, &|s| s.oom_component_day_fraction);
            let m = over(p, &mem);
            let cap_seeds = MeanCi::of(
                &(0..nw)
                    .map(|w| {
                        oracle_capture(
                            at(w, 0).mem_alloc_gib_h,
                            at(w, 1).mem_alloc_gib_h,
                            at(w, p).mem_alloc_gib_h,
                        )
                    })
                    .collect::<Vec<_>>(),
            );
            Point {
                forecaster: spec.family,
                sizing: spec.sizing,
                params: spec.params.clone(),
                failed_app_fraction: failed.mean,
                oom_component_day_fraction: days.mean,
                mem_alloc_gib_h: m.mean,
                oracle_capture: match spec.family {
                    Family::Baseline => 0.0,
                    Family::Oracle if oracle_capture(base_mem, oracle_mem, m.mean).is_finite() => {
                        1.0
                    }
                    _ => oracle_capture(base_mem, oracle_mem, m.mean),
                },
                ci95: (nw > 1).then_some(PointCi {
                    failed_app_fraction: failed.ci95,
                    oom_component_day_fraction: days.ci95,
                    mem_alloc_gib_h: m.ci95,
                    oracle_capture: cap_seeds.ci95,
                }),
            }
        })
        .collect();
    Ok(Frontier {
        baseline: BaselineFigures {
            failed_app_fraction: over(0, &|s| s.failed_app_fraction).mean,
            mem_alloc_gib_h: base_mem,
        },
        oracle_mem_alloc_gib_h: oracle_mem,
        points,
        workload,
        policy: specs[1].cfg.shaper.policy.as_str().to_string(),
        seeds,
    })
}

impl Frontier {
    /// Memory reclaimed by `p` against the baseline, GiB-hours.
    pub fn reclaimed_gib_h(&self, p: &Point) -> f64 {
        self.baseline.mem_alloc_gib_h - p.mem_alloc_gib_h
    }

    /// The Pareto frontier of `family`: its points that no other point of
    /// the family beats on both failure (lower) and reclaim (higher),
    /// sorted by failure.
    pub fn pareto(&self, family: Family, measure: BudgetMeasure) -> Vec<&Point> {
        let mut pts: Vec<&Point> = self
            .points
            .iter()
            .filter(|p| p.forecaster == family)
            .filter(|p| measure.of(p).is_finite() && p.mem_alloc_gib_h.is_finite())
            .collect();
        pts.sort_by(|a, b| {
            measure
                .of(a)
                .total_cmp(&measure.of(b))
                .then(a.mem_alloc_gib_h.total_cmp(&b.mem_alloc_gib_h))
        });
        let mut out: Vec<&Point> = Vec::new();
        let mut best = f64::INFINITY;
        for p in pts {
            if p.mem_alloc_gib_h < best {
                best = p.mem_alloc_gib_h;
                out.push(p);
            }
        }
        out
    }

    /// The point of the families accepted by `which` that reclaims most
    /// within `budget` (failure measure <= budget).
    pub fn best_within(
        &self,
        which: &dyn Fn(Family) -> bool,
        measure: BudgetMeasure,
        budget: f64,
    ) -> Option<&Point> {
        self.points
            .iter()
            .filter(|p| which(p.forecaster))
            .filter(|p| measure.of(p) <= budget + 1e-12 && p.mem_alloc_gib_h.is_finite())
            .min_by(|a, b| a.mem_alloc_gib_h.total_cmp(&b.mem_alloc_gib_h))
    }

    /// Families present, in a fixed order.
    pub fn families(&self) -> Vec<Family> {
        let mut f: Vec<Family> = self.points.iter().map(|p| p.forecaster).collect();
        f.sort();
        f.dedup();
        f
    }

    /// `points.csv`: one row per point.
    pub fn to_csv(&self, measure: BudgetMeasure) -> String {
        let mut keys: Vec<&String> = self.points.iter().flat_map(|p| p.params.keys()).collect();
        keys.sort();
        keys.dedup();
        let mut s = String::from("forecaster,sizing");
        for k in &keys {
            let _ = write!(s, ",{k}");
        }
        s.push_str(",failed_app_fraction,oom_component_day_fraction,mem_alloc_gib_h,reclaimed_gib_h,oracle_capture,on_frontier,failed_app_fraction_ci95,oom_component_day_fraction_ci95,mem_alloc_gib_h_ci95,oracle_capture_ci95\n");
        let fronts: Vec<Vec<&Point>> = self
            .families()
            .into_iter()
            .map(|f| self.pareto(f, measure))
            .collect();
        let num = |v: f64| {
            if v.is_finite() {
                v.to_string()
            } else {
                String::new()
            }
        };
        for p in &self.points {
            let sizing = serde_json::to_value(p.sizing)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let _ = write!(s, "{},{sizing}", p.forecaster);
            for k in &keys {
                let _ = write!(
                    s,
                    ",{}",
                    p.params.get(*k).map_or(String::new(), |v| num(*v))
                );
            }
            let on = fronts.iter().any(|f| f.iter().any(|q| std::ptr::eq(*q, p)));
            let ci = |f: fn(&PointCi) -> f64| p.ci95.as_ref().map_or(String::new(), |c| num(f(c)));
            let _ = writeln!(
                s,
                ",{},{},{},{},{},{on},{},{},{},{}",
                num(p.failed_app_fraction),
                num(p.oom_component_day_fraction),
                num(p.mem_alloc_gib_h),
                num(self.reclaimed_gib_h(p)),
                num(p.oracle_capture),
                ci(|c| c.failed_app_fraction),
                ci(|c| c.oom_component_day_fraction),
                ci(|c| c.mem_alloc_gib_h),
                ci(|c| c.oracle_capture),
            );
        }
        s
    }
}

#[cfg(test)]
mod tests;

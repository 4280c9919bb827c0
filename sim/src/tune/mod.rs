//! K1 x K2 sweep (thesis Fig. 4.4): every grid cell is one simulation of the
//! same workload, run in parallel (rayon, one cell per task); the baseline
//! runs once. The best cell maximises the turnaround ratio among those whose
//! failed-application share is within a budget (ties: lower mean memory
//! slack, then smaller K1, then smaller K2).

use std::fmt::Write as _;
use std::path::Path;

use datasets::workload::Workload;
use plotters::coord::Shift;
use plotters::prelude::*;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use shaper::ShaperConfig;

use crate::config::SimConfig;
use crate::frontier::{MAX_LIST, MAX_RUNS};
use crate::metrics::Summary;
use crate::runner::{baseline_of, simulate};
use crate::seeded::SeededWorkloads;
use crate::seeds::{mean_summary, SummaryStats};
use crate::SimError;

mod heatmap;
use heatmap::heatmap;
pub use heatmap::HeatMetric;

/// The thesis's K1 values (fractions of the request).
pub const DEFAULT_K1: [f64; 6] = [0.0, 0.01, 0.05, 0.1, 0.2, 0.5];
/// The thesis's K2 values (sigmas).
pub const DEFAULT_K2: [f64; 4] = [0.0, 1.0, 2.0, 3.0];

/// One cell of the grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub k1: f64,
    pub k2: f64,
    pub summary: Summary,
    /// With several seeds: `summary` holds the means, this the means and
    /// 95% intervals of every figure (see [`crate::seeds`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds: Option<SummaryStats>,
}

/// A finished sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Grid {
    pub workload: String,
    pub k1: Vec<f64>,
    pub k2: Vec<f64>,
    pub baseline: Summary,
    /// Row-major: `cells[i2 * k1.len() + i1]`.
    pub cells: Vec<Cell>,
    /// The seeds of a multi-seed sweep (empty for one run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeds: Vec<u64>,
}

impl Grid {
    pub fn cell(&self, i1: usize, i2: usize) -> &Cell {
        &self.cells[i2 * self.k1.len() + i1]
    }

    /// The best cell whose failed-application share is <= `max_failed_fraction`.
    pub fn best(&self, max_failed_fraction: f64) -> Option<&Cell> {
        let score = |c: &Cell| c.summary.turnaround_ratio.unwrap_or(f64::NEG_INFINITY);
        self.cells
            .iter()
            .filter(|c| c.summary.failed_app_fraction <= max_failed_fraction + 1e-12)
            .max_by(|a, b| {
                score(a)
                    .total_cmp(&score(b))
                    .then(
                        b.summary
                            .mem_slack_mean
                            .total_cmp(&a.summary.mem_slack_mean),
                    )
                    .then(b.k1.total_cmp(&a.k1))
                    .then(b.k2.total_cmp(&a.k2))
            })
    }
}

/// Checks the K1 and K2 lists of a sweep over `seeds` seeds: not empty, at
/// most [`MAX_LIST`] values each and [`MAX_RUNS`] simulations (cells x
/// seeds) in all, as `frontier`'s, each value within its configuration
/// range.
pub fn check_grid(k1: &[f64], k2: &[f64], seeds: usize) -> Result<(), SimError> {
    if k1.is_empty() || k2.is_empty() {
        return Err(SimError::Config(tailor_core::ConfigErrors::single(
            "k1/k2",
            "tune: K1 and K2 lists must not be empty",
        )));
    }
    let mut errs = tailor_core::ConfigErrors::new();
    for (name, values) in [("k1", k1), ("k2", k2)] {
        errs.check(name, values.len() <= MAX_LIST, || {
            format!("tune: at most {MAX_LIST} values, got {}", values.len())
        });
    }
    let runs = k1.len().saturating_mul(k2.len()).saturating_mul(seeds);
    errs.check("seeds", runs <= MAX_RUNS, || {
        format!("tune: {runs} simulations (cells x seeds) exceed the limit of {MAX_RUNS}; sweep fewer values or seeds")
    });
    for (name, v) in k1
        .iter()
        .map(|v| ("k1", v))
        .chain(k2.iter().map(|v| ("k2", v)))
    {
        let max = if name == "k1" {
            shaper::config::MAX_K1
        } else {
            shaper::config::MAX_K2
        };
        errs.range(name, *v, 0.0, max);
    }
    Ok(errs.into_result()?)
}

/// Runs the sweep. `progress` is called after every finished cell with
/// (cells done, cells total); it may be called from several threads.
pub fn run_grid(
    wl: &Workload,
    base: &SimConfig,
    k1: &[f64],
    k2: &[f64],
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<Grid, SimError> {
    check_grid(k1, k2, 1)?;
    let mut cell_cfg = base.clone();
    // One cell per core: no nested parallelism inside a cell.
    cell_cfg.parallel_forecasts = false;
    let baseline = simulate(wl, &baseline_of(&cell_cfg), None)?.summary;
    let total = k1.len() * k2.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let cells: Result<Vec<Cell>, SimError> = (0..total)
        .into_par_iter()
        .map(|idx| {
            let (i1, i2) = (idx % k1.len(), idx / k1.len());
            let mut c = cell_cfg.clone();
            c.shaper.k1 = k1[i1];
            c.shaper.k2 = k2[i2];
            let mut summary = simulate(wl, &c, None)?.summary;
            summary.set_baseline(baseline.turnaround_mean_s);
            let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            if let Some(p) = progress {
                p(n, total);
            }
            Ok(Cell {
                k1: k1[i1],
                k2: k2[i2],
                summary,
                seeds: None,
            })
        })
        .collect();
    Ok(Grid {
        workload: wl.name.clone(),
        k1: k1.to_vec(),
        k2: k2.to_vec(),
        baseline,
        cells: cells?,
        seeds: Vec::new(),
    })
}

/// [`run_grid`] once per seed, seed by seed (one workload in memory at a
/// time): every cell's summary holds the means over seeds (the pick uses
/// them), and its `seeds` the 95% intervals. One seed: [`run_grid`] as
/// is. `progress` counts the cells of all seeds.
pub fn run_grid_seeds(
    workloads: SeededWorkloads<'_>,
    base: &SimConfig,
    k1: &[f64],
    k2: &[f64],
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<Grid, SimError> {
    let seeds = workloads.seeds().to_vec();
    check_grid(k1, k2, seeds.len())?;
    let per = k1.len() * k2.len();
    let total = per * seeds.len();
    let mut grids = Vec::with_capacity(seeds.len());
    workloads.for_each(|_, wl| -> Result<(), SimError> {
        let offset = grids.len() * per;
        let cb = |done: usize, _: usize| {
            if let Some(p) = progress {
                p(offset + done, total);
            }
        };
        grids.push(run_grid(wl, base, k1, k2, Some(&cb))?);
        Ok(())
    })?;
    if grids.len() == 1 {
        return Ok(grids.remove(0));
    }
    let mean = |xs: Vec<&Summary>| {
        mean_summary(&xs).ok_or_else(|| SimError::Workload("tune: no run".to_string()))
    };
    let baseline = mean(grids.iter().map(|g| &g.baseline).collect())?;
    let mut cells = Vec::with_capacity(per);
    for c in 0..per {
        let runs: Vec<&Summary> = grids.iter().map(|g| &g.cells[c].summary).collect();
        cells.push(Cell {
            k1: grids[0].cells[c].k1,
            k2: grids[0].cells[c].k2,
            seeds: Some(SummaryStats::of(&seeds, &runs)),
            summary: mean(runs)?,
        });
    }
    Ok(Grid {
        workload: grids[0].workload.clone(),
        k1: k1.to_vec(),
        k2: k2.to_vec(),
        baseline,
        cells,
        seeds,
    })
}

/// The grid as CSV (one row per cell).
pub fn to_csv(g: &Grid) -> String {
    let mut s = String::from(
        "k1,k2,turnaround_ratio,turnaround_mean_s,turnaround_median_s,mem_slack_mean,mem_slack_median,cpu_slack_mean,failed_app_fraction,evicted_app_fraction,oom_kills,evictions,work_lost_s,apps_completed,wall_s\n",
    );
    for c in &g.cells {
        let m = &c.summary;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            c.k1,
            c.k2,
            m.turnaround_ratio.map_or(String::new(), |r| r.to_string()),
            m.turnaround_mean_s,
            m.turnaround_median_s,
            m.mem_slack_mean,
            m.mem_slack_median,
            m.cpu_slack_mean,
            m.failed_app_fraction,
            m.evicted_app_fraction,
            m.oom_kills,
            m.evictions,
            m.work_lost_s,
            m.apps_completed,
            m.wall_s
        );
    }
    s
}

#[derive(Serialize)]
struct Snippet<'a> {
    shaper: &'a ShaperConfig,
}

/// A TOML `[shaper]` table (a full `shaper::ShaperConfig`) with the best
/// K1/K2, preceded by comments saying where it comes from.
pub fn snippet(
    g: &Grid,
    base: &ShaperConfig,
    best: &Cell,
    max_failed_fraction: f64,
) -> Result<String, SimError> {
    let mut cfg = base.clone();
    cfg.k1 = best.k1;
    cfg.k2 = best.k2;
    let body = toml::to_string(&Snippet { shaper: &cfg }).map_err(|e| {
        SimError::Config(tailor_core::ConfigErrors::single(
            "shaper",
            format!("serialising the [shaper] snippet: {e}"),
        ))
    })?;
    let s = &best.summary;
    Ok(format!(
        "# written by `tailor tune` on workload {}: best (K1, K2) with failed applications <= {:.2}%\n\
         # turnaround ratio {:.2}x vs baseline, memory slack mean {:.1}%, failed apps {:.2}%, forecaster {}\n{}",
        g.workload,
        100.0 * max_failed_fraction,
        s.turnaround_ratio.unwrap_or(f64::NAN),
        100.0 * s.mem_slack_mean,
        100.0 * s.failed_app_fraction,
        s.forecaster,
        body
    ))
}

/// Warnings about where the chosen (`k1`, `k2`) lies in a grid swept over
/// `k1s` x `k2s`: on the largest value of an axis, or on its smallest when
/// that is above 0 (K1 and K2 cannot go below 0), the best value may lie
/// outside the swept range; one value only says nothing about the others.
pub fn edge_warnings(k1s: &[f64], k2s: &[f64], k1: f64, k2: f64) -> Vec<String> {
    let mut out = Vec::new();
    for (name, values, v, flag) in [("K1", k1s, k1, "--k1"), ("K2", k2s, k2, "--k2")] {
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        if values.len() < 2 {
            out.push(format!(
                "{name} was swept at one value only ({v}): the pick says nothing about other {name} values; pass several with {flag}"
            ));
        } else if v >= max {
            out.push(format!(
                "the pick lies on the edge of the grid: {name} = {v} is the largest {name} swept, so a larger {name} may be better; extend {flag} above {max}"
            ));
        } else if v <= min && min > 0.0 {
            out.push(format!(
                "the pick lies on the edge of the grid: {name} = {v} is the smallest {name} swept, so a smaller {name} may be better; extend {flag} below {min} (down to 0)"
            ));
        }
    }
    out
}

/// What [`write_outputs`] found besides the files it wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneOutputs {
    /// The best cell under the failure budget, if any.
    pub best: Option<Cell>,
    /// [`edge_warnings`] of the best cell (also in `report.md`).
    pub warnings: Vec<String>,
    /// Plots that could not be drawn (also in `report.md`).
    pub problems: Vec<String>,
}

/// Writes `grid.csv`, `grid.json`, the heatmaps (SVG + PNG), `report.md`
/// and, when a cell meets the budget, `best.toml` into `dir`. Plots never
/// fail the sweep: their problems are returned and listed in the report.
/// All or nothing ([`crate::outdir::Staged`]); an older `best.toml` is
/// removed when no cell meets the budget.
pub fn write_outputs(
    dir: &Path,
    g: &Grid,
    base: &ShaperConfig,
    max_failed_fraction: f64,
) -> Result<TuneOutputs, SimError> {
    let mut files = crate::outdir::Staged::new(dir)?;
    files.write("grid.csv", to_csv(g))?;
    let json = serde_json::to_string_pretty(g)
        .map_err(|e| SimError::Plot(format!("serialising grid: {e}")))?;
    files.write("grid.json", json)?;
    let best = g.best(max_failed_fraction).cloned();
    let mut problems = Vec::new();
    match crate::fonts::ensure_registered() {
        Err(e) => problems.push(format!("heatmaps not drawn: {e}")),
        Ok(()) => {
            for m in HeatMetric::ALL {
                let name = format!("{}.svg", m.file_stem());
                let svg = files.path_for(&name)?;
                if let Err(e) = heatmap(
                    SVGBackend::new(&svg, HEATMAP_PX).into_drawing_area(),
                    g,
                    m,
                    best.as_ref(),
                    max_failed_fraction,
                ) {
                    problems.push(format!("{}: {e}", files.dest(&name).display()));
                    files.abandon(&name);
                }
                let name = format!("{}.png", m.file_stem());
                let png = files.path_for(&name)?;
                if let Err(e) = heatmap(
                    BitMapBackend::new(&png, HEATMAP_PX).into_drawing_area(),
                    g,
                    m,
                    best.as_ref(),
                    max_failed_fraction,
                ) {
                    problems.push(format!("{}: {e}", files.dest(&name).display()));
                    files.abandon(&name);
                }
            }
        }
    }
    let warnings = best
        .as_ref()
        .map(|b| edge_warnings(&g.k1, &g.k2, b.k1, b.k2))
        .unwrap_or_default();
    match &best {
        Some(b) => files.write("best.toml", snippet(g, base, b, max_failed_fraction)?)?,
        // no cell meets the budget: an older best.toml must not stay
        None => files.abandon("best.toml"),
    }
    let out = TuneOutputs {
        best,
        warnings,
        problems,
    };
    files.write("report.md", markdown(g, max_failed_fraction, &out))?;
    files.commit()?;
    Ok(out)
}

/// Size of every heatmap, pixels.
const HEATMAP_PX: (u32, u32) = (960, 560);

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2}%", 100.0 * x)
    } else {
        "-".to_string()
    }
}

fn ratio(x: Option<f64>) -> String {
    x.filter(|r| r.is_finite())
        .map_or("-".to_string(), |r| format!("{r:.2}x"))
}

/// `report.md` of a sweep: setup, pick, edge warnings, heatmaps, the grid
/// and the definitions of every metric as the simulator computes it.
pub fn markdown(g: &Grid, max_failed_fraction: f64, out: &TuneOutputs) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Tune report: {}\n", g.workload);
    if let Some(c) = g.cells.first() {
        let s = &c.summary;
        let _ = writeln!(
            md,
            "Policy **{}**, forecaster **{}**, {} hosts, {} applications. {} cells: K1 in {:?} x K2 in {:?}, each one full simulation; the baseline (every component at its request, no evictions) ran once.\n",
            s.policy,
            s.forecaster,
            s.hosts,
            s.apps,
            g.cells.len(),
            g.k1,
            g.k2
        );
    }
    let b = &g.baseline;
    let _ = writeln!(
        md,
        "Baseline: mean turnaround {:.0} s, mean memory slack {}, failed applications {}.\n",
        b.turnaround_mean_s,
        pct(b.mem_slack_mean),
        pct(b.failed_app_fraction)
    );
    let _ = writeln!(md, "## Pick\n");
    match &out.best {
        Some(c) => {
            let s = &c.summary;
            let _ = writeln!(
                md,
                "**K1 = {}, K2 = {}**: turnaround ratio {}, mean memory slack {}, failed applications {} (budget: at most {}). Written as a `[shaper]` table to [best.toml](best.toml).\n",
                c.k1,
                c.k2,
                ratio(s.turnaround_ratio),
                pct(s.mem_slack_mean),
                pct(s.failed_app_fraction),
                pct(max_failed_fraction)
            );
        }
        None => {
            let _ = writeln!(
                md,
                "No cell has at most {} failed applications: nothing chosen, no best.toml.\n",
                pct(max_failed_fraction)
            );
        }
    }
    for w in &out.warnings {
        let _ = writeln!(md, "> **Warning:** {w}\n");
    }
    let _ = writeln!(
        md,
        "## Heatmaps\n\nK1 across, K2 up; each cell shows its value; bright (yellow) is better, dark (purple) worse; the colour bar gives the scale; the chosen cell is outlined in red.\n"
    );
    for m in HeatMetric::ALL {
        let _ = writeln!(
            md,
            "### {}\n\n![{}]({}.png)\n",
            m.title(),
            m.title(),
            m.file_stem()
        );
    }
    let _ = writeln!(md, "## Grid\n");
    let _ = writeln!(
        md,
        "| K1 | K2 | turnaround ratio | mean turnaround (s) | mem slack mean / median | cpu slack mean | failed apps | evicted apps | OOM kills | evictions | work lost (s) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &g.cells {
        let s = &c.summary;
        let mark = if out
            .best
            .as_ref()
            .is_some_and(|b| b.k1 == c.k1 && b.k2 == c.k2)
        {
            " (chosen)"
        } else {
            ""
        };
        let _ = writeln!(
            md,
            "| {}{mark} | {} | {} | {:.0} | {} / {} | {} | {} | {} | {} | {} | {:.0} |",
            c.k1,
            c.k2,
            ratio(s.turnaround_ratio),
            s.turnaround_mean_s,
            pct(s.mem_slack_mean),
            pct(s.mem_slack_median),
            pct(s.cpu_slack_mean),
            pct(s.failed_app_fraction),
            pct(s.evicted_app_fraction),
            s.oom_kills,
            s.evictions,
            s.work_lost_s
        );
    }
    let _ = writeln!(md, "\n## Metric definitions\n");
    for line in [
        "**K1, K2**: the safety buffer of every component, per resource: `beta = K1 * request + K2 * sigma`, with sigma the forecast's predictive standard deviation (for a calibrated forecaster, the calibrated upper band at level K2 minus the mean). Allocation = forecast mean + beta, raised to the floor and to current usage, cut to the request.",
        "**Turnaround** (s): from an application's submission to its completion, time in the queue and restarts after crashes or evictions included. Means and medians are over the applications that completed.",
        "**Turnaround ratio**: the baseline's mean turnaround divided by this cell's (> 1: applications finish sooner than under the baseline). The baseline gives every component its request and never evicts.",
        "**Memory (CPU) slack**: `(allocated - used) / allocated` of one running component, sampled every shaping round and weighted by the time the component ran in that round; mean and median over all those samples. Lower means tighter allocations.",
        "**Failed applications**: the share of the applications (those not rejected up front because their core components never fit) that crashed at least once: a core component was OOM-killed, either for using more memory than its allocation or by the host's OOM killer. Shaper evictions are not failures.",
        "**Evicted applications**: the share of the applications the shaper evicted whole at least once (they are requeued at their original position).",
        "**OOM kills**: components killed for memory (own allocation or host OOM killer). **Evictions**: whole applications plus elastic components evicted by the shaper.",
        "**Work lost** (s): work at full speed thrown away by kills and evictions (a crashed application loses the work of all its components).",
        "**Pick**: the highest turnaround ratio among the cells whose failed-application share is within the budget (`--max-failed-fraction`); ties go to the lower mean memory slack, then the smaller K1, then the smaller K2.",
    ] {
        let _ = writeln!(md, "- {line}");
    }
    if !out.problems.is_empty() {
        let _ = writeln!(md, "\n## Plot problems\n");
        for p in &out.problems {
            let _ = writeln!(md, "- {p}");
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::heatmap::*;
    use super::*;

    const K1: [f64; 4] = [0.0, 0.05, 0.1, 0.5];
    const K2: [f64; 3] = [1.0, 2.0, 3.0];

    #[test]
    fn inner_pick_has_no_edge_warning() {
        assert!(edge_warnings(&K1, &K2, 0.05, 2.0).is_empty());
        // K1 = 0 is the smallest possible value: not an edge to extend
        assert!(edge_warnings(&K1, &K2, 0.0, 2.0).is_empty());
    }

    #[test]
    fn pick_on_an_edge_is_warned_about() {
        let w = edge_warnings(&K1, &K2, 0.5, 2.0);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("K1 = 0.5 is the largest") && w[0].contains("--k1"),
            "{w:?}"
        );
        let w = edge_warnings(&K1, &K2, 0.1, 1.0);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("K2 = 1 is the smallest") && w[0].contains("below 1"),
            "{w:?}"
        );
        let w = edge_warnings(&K1, &K2, 0.5, 3.0);
        assert_eq!(w.len(), 2, "{w:?}");
        let w = edge_warnings(&[0.1], &K2, 0.1, 2.0);
        assert!(w[0].contains("one value only"), "{w:?}");
    }

    #[test]
    fn tick_labels_sit_on_cell_centres_only() {
        let v = [0.0, 0.05, 0.5];
        assert_eq!(centres(3), vec![0.5, 1.5, 2.5]);
        let labels: Vec<String> = centres(3).iter().map(|&x| tick_label(&v, x)).collect();
        assert_eq!(labels, ["0", "0.05", "0.5"]);
        assert_eq!(tick_label(&v, 1.0), "");
        assert_eq!(tick_label(&v, 3.5), "");
    }

    #[test]
    fn brighter_is_better_in_both_directions() {
        let (lo_hi, _) = cell_color(HeatMetric::TurnaroundRatio, 1.0, 1.0, 2.0);
        let (hi_hi, dark_text) = cell_color(HeatMetric::TurnaroundRatio, 2.0, 1.0, 2.0);
        let luma = |c: RGBColor| 0.3 * c.0 as f64 + 0.59 * c.1 as f64 + 0.11 * c.2 as f64;
        assert!(luma(hi_hi) > luma(lo_hi) + 100.0);
        assert!(dark_text, "black text on the bright end");
        let (low_failed, _) = cell_color(HeatMetric::FailedFraction, 0.0, 0.0, 0.2);
        let (high_failed, _) = cell_color(HeatMetric::FailedFraction, 0.2, 0.0, 0.2);
        assert!(luma(low_failed) > luma(high_failed) + 100.0);
    }
}

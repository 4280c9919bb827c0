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
use crate::metrics::Summary;
use crate::runner::{baseline_of, simulate};
use crate::SimError;

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

/// Runs the sweep. `progress` is called after every finished cell with
/// (cells done, cells total); it may be called from several threads.
pub fn run_grid(
    wl: &Workload,
    base: &SimConfig,
    k1: &[f64],
    k2: &[f64],
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<Grid, SimError> {
    if k1.is_empty() || k2.is_empty() {
        return Err(SimError::Config(tailor_core::ConfigErrors::single(
            "k1/k2",
            "tune: K1 and K2 lists must not be empty",
        )));
    }
    let mut errs = tailor_core::ConfigErrors::new();
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
    errs.into_result()?;
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
            })
        })
        .collect();
    Ok(Grid {
        workload: wl.name.clone(),
        k1: k1.to_vec(),
        k2: k2.to_vec(),
        baseline,
        cells: cells?,
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

/// Which metric a heatmap shows.
#[derive(Clone, Copy, Debug)]
pub enum HeatMetric {
    TurnaroundRatio,
    MemSlackMean,
    FailedFraction,
}

impl HeatMetric {
    pub const ALL: [HeatMetric; 3] = [
        HeatMetric::TurnaroundRatio,
        HeatMetric::MemSlackMean,
        HeatMetric::FailedFraction,
    ];

    pub fn file_stem(&self) -> &'static str {
        match self {
            HeatMetric::TurnaroundRatio => "heatmap_turnaround_ratio",
            HeatMetric::MemSlackMean => "heatmap_mem_slack",
            HeatMetric::FailedFraction => "heatmap_failed_fraction",
        }
    }

    fn title(&self) -> &'static str {
        match self {
            HeatMetric::TurnaroundRatio => "turnaround ratio vs baseline (higher is better)",
            HeatMetric::MemSlackMean => "mean memory slack (lower is better)",
            HeatMetric::FailedFraction => "failed applications (lower is better)",
        }
    }

    fn value(&self, s: &Summary) -> f64 {
        match self {
            HeatMetric::TurnaroundRatio => s.turnaround_ratio.unwrap_or(f64::NAN),
            HeatMetric::MemSlackMean => s.mem_slack_mean,
            HeatMetric::FailedFraction => s.failed_app_fraction,
        }
    }

    fn higher_is_better(&self) -> bool {
        matches!(self, HeatMetric::TurnaroundRatio)
    }

    fn fmt(&self, v: f64) -> String {
        if !v.is_finite() {
            return "-".to_string();
        }
        match self {
            HeatMetric::TurnaroundRatio => format!("{v:.2}x"),
            _ => format!("{:.1}%", 100.0 * v),
        }
    }
}

fn heatmap<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    g: &Grid,
    m: HeatMetric,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (nx, ny) = (g.k1.len(), g.k2.len());
    let vals: Vec<f64> = g.cells.iter().map(|c| m.value(&c.summary)).collect();
    let finite = vals.iter().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    let k1 = g.k1.clone();
    let k2 = g.k2.clone();
    let mut chart = ChartBuilder::on(&root)
        .caption(m.title(), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0f64..nx as f64, 0.0f64..ny as f64)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(nx)
        .y_labels(ny)
        .x_desc("K1 (fraction of the request)")
        .y_desc("K2 (sigmas)")
        .x_label_formatter(&|x| {
            let i = (x - 0.5).round();
            if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < k1.len() {
                format!("{}", k1[i as usize])
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| {
            let i = (y - 0.5).round();
            if (y - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < k2.len() {
                format!("{}", k2[i as usize])
            } else {
                String::new()
            }
        })
        .x_label_offset(0)
        .draw()
        .map_err(|e| err(&e))?;
    for i2 in 0..ny {
        for i1 in 0..nx {
            let v = vals[i2 * nx + i1];
            // Bright cells are better (as in the thesis's Fig. 4.4).
            let t = if v.is_finite() && hi > lo {
                (v - lo) / (hi - lo)
            } else {
                0.5
            };
            let good = if m.higher_is_better() { t } else { 1.0 - t };
            let shade = (40.0 + 215.0 * good) as u8;
            let color = RGBColor(shade, shade, (shade as f64 * 0.6 + 60.0) as u8);
            let (x, y) = (i1 as f64, i2 as f64);
            chart
                .draw_series([Rectangle::new([(x, y), (x + 1.0, y + 1.0)], color.filled())])
                .map_err(|e| err(&e))?;
            let text_color = if good > 0.5 { BLACK } else { WHITE };
            chart
                .draw_series([Text::new(
                    m.fmt(v),
                    (x + 0.3, y + 0.55),
                    ("sans-serif", 15).into_font().color(&text_color),
                )])
                .map_err(|e| err(&e))?;
        }
    }
    root.present().map_err(|e| err(&e))
}

/// Writes `grid.csv`, `grid.json`, the heatmaps (SVG + PNG) and, when a
/// cell meets the budget, `best.toml` into `dir`. Returns the best cell and
/// the plot problems (plots never fail the sweep).
pub fn write_outputs(
    dir: &Path,
    g: &Grid,
    base: &ShaperConfig,
    max_failed_fraction: f64,
) -> Result<(Option<Cell>, Vec<String>), SimError> {
    let io = |source: std::io::Error| SimError::Io {
        path: dir.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    std::fs::write(dir.join("grid.csv"), to_csv(g)).map_err(io)?;
    let json = serde_json::to_string_pretty(g)
        .map_err(|e| SimError::Plot(format!("serialising grid: {e}")))?;
    std::fs::write(dir.join("grid.json"), json).map_err(io)?;
    let mut problems = Vec::new();
    for m in HeatMetric::ALL {
        let svg = dir.join(format!("{}.svg", m.file_stem()));
        if let Err(e) = heatmap(SVGBackend::new(&svg, (800, 520)).into_drawing_area(), g, m) {
            problems.push(format!("{}: {e}", svg.display()));
        }
        let png = dir.join(format!("{}.png", m.file_stem()));
        if let Err(e) = heatmap(
            BitMapBackend::new(&png, (800, 520)).into_drawing_area(),
            g,
            m,
        ) {
            problems.push(format!("{}: {e}", png.display()));
        }
    }
    let best = g.best(max_failed_fraction).cloned();
    if let Some(b) = &best {
        std::fs::write(
            dir.join("best.toml"),
            snippet(g, base, b, max_failed_fraction)?,
        )
        .map_err(io)?;
    }
    Ok((best, problems))
}

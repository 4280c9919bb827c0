//! Markdown report and plots (plotters, SVG + PNG) for one or more runs of
//! the same workload: turnaround CDFs, slack box plots, queue length over
//! time, and a summary table.

use std::fmt::Write as _;
use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::metrics::{quantile, Summary};
use crate::runner::RunResult;
use crate::SimError;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

type PlotResult = Result<(), String>;

/// Legend name: the short name, with K1/K2 when shaping.
fn label(s: &Summary) -> String {
    if s.policy == "baseline" {
        short_label(s)
    } else {
        format!("{} (K1={}, K2={})", short_label(s), s.k1, s.k2)
    }
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Draws one line per run (`curves[i]` for `runs[i]`) with a legend.
fn draw_lines<'a, DB, X>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>,
    runs: &[&RunResult],
    curves: Vec<Vec<(f64, f64)>>,
    legend_at: SeriesLabelPosition,
) -> PlotResult
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
{
    for (i, (pts, r)) in curves.into_iter().zip(runs).enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(err)?
            .label(label(&r.summary))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(legend_at)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// Short run name: `baseline` or `policy+forecaster`.
fn short_label(s: &Summary) -> String {
    if s.policy == "baseline" {
        "baseline".to_string()
    } else {
        format!("{}+{}", s.policy, s.forecaster)
    }
}

fn turnaround_cdf<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    runs: &[&RunResult],
) -> PlotResult {
    root.fill(&WHITE).map_err(err)?;
    let curves: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| {
            let mut v: Vec<f64> = r
                .metrics
                .apps
                .iter()
                .filter_map(|a| a.turnaround_s())
                .map(|t| t.max(1.0))
                .collect();
            v.sort_by(f64::total_cmp);
            v
        })
        .collect();
    let xmax = curves
        .iter()
        .flat_map(|c| c.last().copied())
        .fold(10.0, f64::max)
        * 1.2;
    let mut chart = ChartBuilder::on(&root)
        .caption("Application turnaround (CDF)", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d((1.0f64..xmax).log_scale(), 0.0f64..1.0f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("turnaround (s, log scale)")
        .y_desc("fraction of applications")
        .draw()
        .map_err(err)?;
    let lines: Vec<Vec<(f64, f64)>> = curves
        .iter()
        .map(|c| {
            let n = c.len().max(1) as f64;
            c.iter()
                .enumerate()
                .map(|(k, &x)| (x, (k + 1) as f64 / n))
                .collect()
        })
        .collect();
    draw_lines(&mut chart, runs, lines, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(err)
}

/// Box plots (p5, p25, median, p75, p95; mean as a triangle) of memory and
/// CPU slack per run.
fn slack_boxes<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    runs: &[&RunResult],
) -> PlotResult {
    root.fill(&WHITE).map_err(err)?;
    let halves = root.split_evenly((1, 2));
    for (pi, (area, what)) in halves.iter().zip(["memory", "CPU"]).enumerate() {
        let n = runs.len();
        let names: Vec<String> = runs.iter().map(|r| short_label(&r.summary)).collect();
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{what} slack (allocated - used) / allocated"),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(45)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0f64..1.0f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(n.max(1))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
                    names[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .disable_x_mesh()
            .draw()
            .map_err(err)?;
        for (i, r) in runs.iter().enumerate() {
            let h = if pi == 0 {
                &r.metrics.mem_slack
            } else {
                &r.metrics.cpu_slack
            };
            if h.total_weight() <= 0.0 {
                continue;
            }
            let [p5, p25, p50, p75, p95] = h.box_stats();
            let x = i as f64;
            let color = COLORS[i % COLORS.len()];
            chart
                .draw_series([Rectangle::new(
                    [(x - 0.3, p25), (x + 0.3, p75)],
                    color.mix(0.35).filled(),
                )])
                .map_err(err)?;
            chart
                .draw_series([
                    PathElement::new(vec![(x - 0.3, p50), (x + 0.3, p50)], BLACK.stroke_width(2)),
                    PathElement::new(vec![(x, p5), (x, p25)], BLACK.stroke_width(1)),
                    PathElement::new(vec![(x, p75), (x, p95)], BLACK.stroke_width(1)),
                    PathElement::new(vec![(x - 0.15, p5), (x + 0.15, p5)], BLACK.stroke_width(1)),
                    PathElement::new(
                        vec![(x - 0.15, p95), (x + 0.15, p95)],
                        BLACK.stroke_width(1),
                    ),
                ])
                .map_err(err)?;
            chart
                .draw_series([TriangleMarker::new(
                    (x, h.mean().clamp(0.0, 1.0)),
                    6,
                    RED.filled(),
                )])
                .map_err(err)?;
        }
    }
    root.present().map_err(err)
}

fn queue_over_time<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    runs: &[&RunResult],
) -> PlotResult {
    root.fill(&WHITE).map_err(err)?;
    let tmax = runs
        .iter()
        .flat_map(|r| r.metrics.timeline.last().map(|p| p.t_s))
        .fold(1.0, f64::max);
    let qmax = runs
        .iter()
        .flat_map(|r| r.metrics.timeline.iter().map(|p| p.queued_apps))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Applications waiting in the scheduler queue",
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0f64..tmax / 3600.0, 0.0f64..qmax * 1.1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("simulated time (h)")
        .y_desc("queued applications")
        .draw()
        .map_err(err)?;
    let lines: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .map(|r| {
            r.metrics
                .timeline
                .iter()
                .map(|p| (p.t_s / 3600.0, p.queued_apps as f64))
                .collect()
        })
        .collect();
    draw_lines(&mut chart, runs, lines, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)
}

/// Draws `$f` into `$dir/$name.svg` and `.png`, collecting problems.
macro_rules! plot_both {
    ($problems:expr, $out:expr, $name:literal, $size:expr, $runs:expr, $f:ident) => {{
        let svg_path = $out.path_for(concat!($name, ".svg"))?;
        if let Err(e) = $f(SVGBackend::new(&svg_path, $size).into_drawing_area(), $runs) {
            $problems.push(format!(concat!($name, ".svg: {}"), e));
            $out.abandon(concat!($name, ".svg"));
        }
        let png_path = $out.path_for(concat!($name, ".png"))?;
        if let Err(e) = $f(
            BitMapBackend::new(&png_path, $size).into_drawing_area(),
            $runs,
        ) {
            $problems.push(format!(concat!($name, ".png: {}"), e));
            $out.abandon(concat!($name, ".png"));
        }
    }};
}

/// Writes `report.md`, `summary.json` and the plots into `dir` (created if
/// needed). Plot failures do not fail the report: they are listed in it. Text uses
/// the embedded font ([`crate::fonts`]). All or nothing: see
/// [`crate::outdir::Staged`].
pub fn write_report(dir: &Path, workload: &str, runs: &[&RunResult]) -> Result<(), SimError> {
    let mut out = crate::outdir::Staged::new(dir)?;
    let mut problems: Vec<String> = Vec::new();
    if let Err(e) = crate::fonts::ensure_registered() {
        problems.push(format!("plot text: {e}"));
    }
    plot_both!(
        problems,
        out,
        "turnaround_cdf",
        (900, 550),
        runs,
        turnaround_cdf
    );
    plot_both!(problems, out, "slack_box", (1100, 500), runs, slack_boxes);
    plot_both!(
        problems,
        out,
        "queue_length",
        (900, 500),
        runs,
        queue_over_time
    );
    let summaries: Vec<&Summary> = runs.iter().map(|r| &r.summary).collect();
    let json = serde_json::to_string_pretty(&summaries)
        .map_err(|e| SimError::Plot(format!("serialising summaries: {e}")))?;
    out.write("summary.json", json)?;
    out.write("report.md", markdown(workload, runs, &problems))?;
    out.commit()
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1}%", 100.0 * x)
    } else {
        "-".to_string()
    }
}

fn secs(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.0}")
    } else {
        "-".to_string()
    }
}

/// The Markdown body of the report.
pub fn markdown(workload: &str, runs: &[&RunResult], problems: &[String]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Replay report: {workload}\n");
    if let Some(r) = runs.first() {
        let s = &r.summary;
        let _ = writeln!(
            md,
            "{} hosts, {} applications ({} rejected: core components never fit). Shaping every {} s.\n",
            s.hosts, s.apps, s.apps_rejected, r.config.interval_s
        );
    }
    let _ = writeln!(
        md,
        "| run | completed | turnaround mean (s) | median (s) | p95 (s) | ratio vs baseline | mem slack mean / median | cpu slack mean / median | failed apps | evicted apps | OOM kills | evictions | work lost (s) | reserved memory (GiB-h) | reclaimed (GiB-h, share of the oracle's) | wall (s) |"
    );
    let _ = writeln!(
        md,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in runs {
        let s = &r.summary;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} / {} | {} / {} | {} | {} | {} | {} | {} | {:.1} | {} | {:.2} |",
            label(s),
            s.apps_completed,
            secs(s.turnaround_mean_s),
            secs(s.turnaround_median_s),
            secs(s.turnaround_p95_s),
            s.turnaround_ratio
                .map_or("-".to_string(), |x| format!("{x:.2}x")),
            pct(s.mem_slack_mean),
            pct(s.mem_slack_median),
            pct(s.cpu_slack_mean),
            pct(s.cpu_slack_median),
            pct(s.failed_app_fraction),
            pct(s.evicted_app_fraction),
            s.oom_kills,
            s.evictions,
            secs(s.work_lost_s),
            s.mem_alloc_gib_h,
            match (s.mem_reclaimed_gib_h, s.oracle_capture) {
                (Some(r), Some(c)) => format!("{r:.1} ({})", pct(c)),
                (Some(r), None) => format!("{r:.1}"),
                _ => "-".to_string(),
            },
            s.wall_s
        );
    }
    let _ = writeln!(
        md,
        "\n## Turnaround\n\n![turnaround CDF](turnaround_cdf.svg)\n"
    );
    for r in runs {
        let mut t: Vec<f64> = r
            .metrics
            .apps
            .iter()
            .filter_map(|a| a.turnaround_s())
            .collect();
        t.sort_by(f64::total_cmp);
        let _ = writeln!(
            md,
            "- {}: p25 {} s, median {} s, p75 {} s, p99 {} s",
            label(&r.summary),
            secs(quantile(&t, 0.25)),
            secs(quantile(&t, 0.5)),
            secs(quantile(&t, 0.75)),
            secs(quantile(&t, 0.99))
        );
    }
    let _ = writeln!(md, "\n## Slack\n\n![slack box plots](slack_box.svg)\n");
    let _ = writeln!(md, "Boxes: p25-p75, line: median, whiskers: p5-p95, triangle: mean (time-weighted, per component per round).\n");
    let _ = writeln!(md, "## Queue\n\n![queue length](queue_length.svg)\n");
    let _ = writeln!(md, "## Speed\n");
    for r in runs {
        let s = &r.summary;
        let _ = writeln!(
            md,
            "- {}: {} events in {:.2} s ({:.0} events/s), {} forecaster updates ({:.0}/s of run wall time; {:.2} s in forecasting, {:.2} s in decide())",
            label(s),
            s.events,
            s.wall_s,
            s.events_per_s,
            s.forecast_updates,
            s.forecast_updates_per_s,
            s.forecast_wall_s,
            s.decide_wall_s
        );
    }
    if !problems.is_empty() {
        let _ = writeln!(md, "\n## Plot problems\n");
        for p in problems {
            let _ = writeln!(md, "- {p}");
        }
    }
    md
}

//! The K1 x K2 heatmaps `tune` draws: one metric per chart, tick labels,
//! a colour bar and the chosen cell marked.

use super::*;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

    pub(super) fn title(&self) -> &'static str {
        match self {
            HeatMetric::TurnaroundRatio => "turnaround ratio vs baseline (higher is better)",
            HeatMetric::MemSlackMean => "mean memory slack (lower is better)",
            HeatMetric::FailedFraction => "failed applications (lower is better)",
        }
    }

    /// Colour-bar heading.
    fn short_name(&self) -> &'static str {
        match self {
            HeatMetric::TurnaroundRatio => "ratio",
            HeatMetric::MemSlackMean => "mem slack",
            HeatMetric::FailedFraction => "failed apps",
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

    /// Colour-bar label: enough decimals to tell ticks `span` apart.
    fn fmt_bar(&self, v: f64, span: f64) -> String {
        let digits = if span > 0.0 && span.is_finite() {
            (-(span / 5.0).log10()).ceil().clamp(0.0, 6.0) as usize
        } else {
            2
        };
        match self {
            HeatMetric::TurnaroundRatio => format!("{v:.digits$}x", digits = digits.max(2)),
            _ => format!(
                "{:.digits$}%",
                100.0 * v,
                digits = digits.saturating_sub(2).max(1)
            ),
        }
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

/// Colour of a cell: viridis, bright = better (as the thesis's Fig. 4.4).
pub(super) fn cell_color(m: HeatMetric, v: f64, lo: f64, hi: f64) -> (RGBColor, bool) {
    let t = if v.is_finite() && hi > lo {
        ((v - lo) / (hi - lo)).clamp(0.0, 1.0)
    } else {
        0.5
    };
    let good = if m.higher_is_better() { t } else { 1.0 - t };
    // Text on the bright (yellow-green) half is black, on the dark half white.
    (ViridisRGB::get_color(good), good > 0.55)
}

/// Index of `v` in `values` (exact: the grid's cells carry its values).
pub(super) fn index_of(values: &[f64], v: f64) -> Option<usize> {
    values.iter().position(|x| x.to_bits() == v.to_bits())
}

/// Cell centres 0.5, 1.5, ...: the only tick positions of a heatmap axis.
pub(super) fn centres(n: usize) -> Vec<f64> {
    (0..n).map(|i| i as f64 + 0.5).collect()
}

/// A heatmap axis: `n` cells of width 1 over `0..n`, with ticks at the cell
/// centres only (plotters' own f64 axis picks "nice" ticks, which miss them).
#[derive(Clone, Copy, Debug)]
struct CellAxis(usize);

impl Ranged for CellAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let n = self.0.max(1) as f64;
        let span = f64::from(limit.1 - limit.0);
        limit.0 + (span * v / n).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new() // no light mesh lines
        } else {
            centres(self.0)
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        0.0..self.0 as f64
    }
}

/// Tick label of a centre `x` (value of the cell it is the centre of).
pub(super) fn tick_label(values: &[f64], x: f64) -> String {
    let i = (x - 0.5).round();
    if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < values.len() {
        format!("{}", values[i as usize])
    } else {
        String::new()
    }
}

/// One heatmap: the grid (K1 across, K2 up) with each cell's value, K1/K2
/// tick labels, a colour bar, and the chosen cell outlined in red.
pub(super) fn heatmap<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    g: &Grid,
    m: HeatMetric,
    best: Option<&Cell>,
    max_failed_fraction: f64,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (nx, ny) = (g.k1.len(), g.k2.len());
    if g.cells.len() != nx * ny {
        return Err(format!(
            "grid holds {} cells, expected {nx} x {ny}",
            g.cells.len()
        ));
    }
    let vals: Vec<f64> = g.cells.iter().map(|c| m.value(&c.summary)).collect();
    let finite = vals.iter().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    let (w, h) = root.dim_in_pixel();
    let (top, note) = root.split_vertically(h.saturating_sub(26));
    let (main, bar) = top.split_horizontally(w.saturating_sub(150));

    let (k1, k2) = (g.k1.clone(), g.k2.clone());
    let mut chart = ChartBuilder::on(&main)
        .caption(m.title(), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(60)
        .build_cartesian_2d(CellAxis(nx), CellAxis(ny))
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("K1 (fraction of the request)")
        .y_desc("K2 (sigmas)")
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .x_label_formatter(&|x| tick_label(&k1, *x))
        .y_label_formatter(&|y| tick_label(&k2, *y))
        .draw()
        .map_err(|e| err(&e))?;
    let best_at = best.and_then(|b| Some((index_of(&g.k1, b.k1)?, index_of(&g.k2, b.k2)?)));
    let centred = Pos::new(HPos::Center, VPos::Center);
    for i2 in 0..ny {
        for i1 in 0..nx {
            let v = vals[i2 * nx + i1];
            let (color, dark_text) = cell_color(m, v, lo, hi);
            let (x, y) = (i1 as f64, i2 as f64);
            chart
                .draw_series([Rectangle::new([(x, y), (x + 1.0, y + 1.0)], color.filled())])
                .map_err(|e| err(&e))?;
            let text_color = if dark_text { BLACK } else { WHITE };
            let chosen = best_at == Some((i1, i2));
            chart
                .draw_series([Text::new(
                    m.fmt(v),
                    (x + 0.5, if chosen { y + 0.58 } else { y + 0.5 }),
                    ("sans-serif", 16)
                        .into_font()
                        .color(&text_color)
                        .pos(centred),
                )])
                .map_err(|e| err(&e))?;
            if chosen {
                chart
                    .draw_series([
                        Rectangle::new(
                            [(x + 0.03, y + 0.04), (x + 0.97, y + 0.96)],
                            RED.stroke_width(4),
                        ),
                        Rectangle::new(
                            [(x + 0.03, y + 0.04), (x + 0.97, y + 0.96)],
                            WHITE.stroke_width(1),
                        ),
                    ])
                    .map_err(|e| err(&e))?;
                chart
                    .draw_series([Text::new(
                        "chosen",
                        (x + 0.5, y + 0.3),
                        ("sans-serif", 13)
                            .into_font()
                            .color(&text_color)
                            .pos(centred),
                    )])
                    .map_err(|e| err(&e))?;
            }
        }
    }

    // Colour bar: the metric's range, bright = better.
    let (blo, bhi) = if lo.is_finite() && hi > lo {
        (lo, hi)
    } else if lo.is_finite() {
        (lo - 0.5 * lo.abs().max(0.01), hi + 0.5 * hi.abs().max(0.01))
    } else {
        (0.0, 1.0)
    };
    let mut cb = ChartBuilder::on(&bar)
        .caption(m.short_name(), ("sans-serif", 15))
        .margin_top(40)
        .margin_bottom(62)
        .margin_left(8)
        .margin_right(4)
        .right_y_label_area_size(70)
        .build_cartesian_2d(0.0f64..1.0f64, blo..bhi)
        .map_err(|e| err(&e))?;
    cb.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(6)
        .label_style(("sans-serif", 13))
        .y_label_formatter(&|v| m.fmt_bar(*v, bhi - blo))
        .draw()
        .map_err(|e| err(&e))?;
    const STEPS: usize = 64;
    let step = (bhi - blo) / STEPS as f64;
    cb.draw_series((0..STEPS).map(|k| {
        let a = blo + k as f64 * step;
        let (c, _) = cell_color(m, a + 0.5 * step, lo, hi);
        Rectangle::new([(0.0, a), (1.0, a + step)], c.filled())
    }))
    .map_err(|e| err(&e))?;
    cb.draw_series([Rectangle::new(
        [(0.0, blo), (1.0, bhi)],
        BLACK.stroke_width(1),
    )])
    .map_err(|e| err(&e))?;

    let text = match best {
        Some(b) => format!(
            "red box: chosen cell K1 = {}, K2 = {} (best turnaround ratio with failed apps <= {:.2}%)",
            b.k1,
            b.k2,
            100.0 * max_failed_fraction
        ),
        None => format!(
            "no cell has failed apps <= {:.2}%: nothing chosen",
            100.0 * max_failed_fraction
        ),
    };
    note.draw(&Text::new(
        text,
        (14, 4),
        ("sans-serif", 14).into_font().color(&BLACK),
    ))
    .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

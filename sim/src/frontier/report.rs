//! The frontier's outputs: the Markdown summary, the SVG/PNG plot and the
//! files `--out` writes.

use super::*;

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2}%", 100.0 * x)
    } else {
        "-".to_string()
    }
}

fn describe(f: &Frontier, p: Option<&Point>) -> String {
    match p {
        None => "none within budget".to_string(),
        Some(p) => format!(
            "{} {} ({}): {:.1} GiB-h, {} of the oracle's",
            p.forecaster,
            serde_json::to_value(p.sizing)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            p.params_label(),
            f.reclaimed_gib_h(p),
            pct(p.oracle_capture)
        ),
    }
}

/// One row of the budget table: (budget, tailor's best, the VPA's best).
pub fn budget_rows(
    f: &Frontier,
    measure: BudgetMeasure,
) -> Vec<(f64, Option<&Point>, Option<&Point>)> {
    BUDGETS
        .iter()
        .map(|&b| {
            (
                b,
                f.best_within(&|x| x.is_tailor(), measure, b),
                f.best_within(&|x| x == Family::Vpa, measure, b),
            )
        })
        .collect()
}

/// `frontier.md`: setup, the budget table (tailor's best vs the VPA's),
/// every family's Pareto frontier and the definitions.
pub fn markdown(f: &Frontier, measure: BudgetMeasure, command: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Savings frontier: {}\n", f.workload);
    let _ = writeln!(
        md,
        "Command: `{command}`\n\nPolicy **{}**, {} points, seeds {:?}{}. Failure measure: **{}**.\n",
        f.policy,
        f.points.len(),
        f.seeds,
        if f.seeds.len() > 1 {
            " (figures are means over seeds; ± is the 95% t-interval)"
        } else {
            ""
        },
        measure.label()
    );
    let _ = writeln!(
        md,
        "Baseline: {:.1} GiB-h reserved, {} failed applications. Oracle (K1 = K2 = 0): {:.1} GiB-h, so at most {:.1} GiB-h ({}) can be reclaimed.\n",
        f.baseline.mem_alloc_gib_h,
        pct(f.baseline.failed_app_fraction),
        f.oracle_mem_alloc_gib_h,
        f.baseline.mem_alloc_gib_h - f.oracle_mem_alloc_gib_h,
        pct(if f.baseline.mem_alloc_gib_h > 0.0 {
            1.0 - f.oracle_mem_alloc_gib_h / f.baseline.mem_alloc_gib_h
        } else {
            f64::NAN
        })
    );
    let _ = writeln!(md, "![frontier](frontier.png)\n");
    let _ = writeln!(md, "## Best reclaim within a failure budget\n");
    let tailor: Vec<String> = f
        .families()
        .into_iter()
        .filter(Family::is_tailor)
        .map(|fam| fam.to_string())
        .collect();
    let _ = writeln!(
        md,
        "| budget ({}) | tailor best ({}) | VPA best | tailor - VPA (GiB-h) |",
        measure.label(),
        if tailor.is_empty() {
            "none swept".to_string()
        } else {
            tailor.join(", ")
        }
    );
    let _ = writeln!(md, "|---|---|---|---|");
    for (b, t, v) in budget_rows(f, measure) {
        let diff = match (t, v) {
            (Some(t), Some(v)) => format!("{:+.1}", v.mem_alloc_gib_h - t.mem_alloc_gib_h),
            (Some(t), None) => format!("{:+.1} (no VPA point)", f.reclaimed_gib_h(t)),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {diff} |",
            pct(b),
            describe(f, t),
            describe(f, v)
        );
    }
    let _ = writeln!(md, "\n## Best per family within each budget\n");
    let _ = write!(md, "| family |");
    for b in BUDGETS {
        let _ = write!(md, " <= {} |", pct(b));
    }
    let _ = writeln!(md);
    let _ = writeln!(md, "|---|{}", "---|".repeat(BUDGETS.len()));
    for fam in f.families() {
        let _ = write!(md, "| {fam} |");
        for b in BUDGETS {
            let cell = f
                .best_within(&|x| x == fam, measure, b)
                .map_or("-".to_string(), |p| {
                    format!(
                        "{:.1} GiB-h ({}), {}",
                        f.reclaimed_gib_h(p),
                        pct(p.oracle_capture),
                        p.params_label()
                    )
                });
            let _ = write!(md, " {cell} |");
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "\n## Pareto frontiers\n");
    for fam in f.families() {
        let _ = writeln!(md, "### {fam}\n");
        let _ = writeln!(
            md,
            "| sizing | params | failed apps | OOM component-days | reserved GiB-h | reclaimed GiB-h | oracle capture |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for p in f.pareto(fam, measure) {
            let ci = p.ci95.as_ref();
            let pm = |v: f64, c: Option<f64>, fmt: &dyn Fn(f64) -> String| match c {
                Some(c) if c.is_finite() => format!("{} ± {}", fmt(v), fmt(c)),
                _ => fmt(v),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {:.1} | {} |",
                serde_json::to_value(p.sizing)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                p.params_label(),
                pm(
                    p.failed_app_fraction,
                    ci.map(|c| c.failed_app_fraction),
                    &pct
                ),
                pm(
                    p.oom_component_day_fraction,
                    ci.map(|c| c.oom_component_day_fraction),
                    &pct
                ),
                pm(
                    p.mem_alloc_gib_h,
                    ci.map(|c| c.mem_alloc_gib_h),
                    &|v| format!("{v:.1}")
                ),
                f.reclaimed_gib_h(p),
                pm(p.oracle_capture, ci.map(|c| c.oracle_capture), &pct),
            );
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "## Definitions\n");
    for line in [
        "**Reserved GiB-h**: every running component's memory allocation integrated over simulated time. **Reclaimed**: the baseline's reserved GiB-h minus the point's (negative when restarts after failures cost more than the savings).",
        "**Oracle capture**: `(baseline - point) / (baseline - oracle)` in reserved GiB-h; the oracle runs with exact future usage and K1 = K2 = 0.",
        "**Failed applications**: share of the applications that crashed at least once (a core component OOM-killed).",
        "**OOM-hit component-days**: per component, the 24 h windows of simulated time it ran in; the share of them with at least one OOM kill of that component (Autopilot's measure).",
        "**Pareto frontier** of a family: its points that no other point of the family beats on both failure (lower) and reclaim (higher).",
        "**Sizing**: `k1k2` = forecast + K1 x request + K2 x sigma; `memory_risk` = the calibrated predictive quantile for that per-round probability of crossing the allocation (CPU still by K1/K2); `vpa` = the faithful VPA recommender's target (its percentile and safety margin), nothing on top.",
    ] {
        let _ = writeln!(md, "- {line}");
    }
    md
}

/// Size of the frontier plot, pixels.
const PLOT_PX: (u32, u32) = (1100, 700);

fn plot<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    f: &Frontier,
    measure: BudgetMeasure,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let xs: Vec<f64> = f
        .points
        .iter()
        .map(|p| measure.of(p))
        .filter(|v| v.is_finite())
        .collect();
    let oracle_reclaim = f.baseline.mem_alloc_gib_h - f.oracle_mem_alloc_gib_h;
    // The budgets are the interesting region: show up to 5% failures at
    // most, at least up to 1.2%.
    let x_max = xs.iter().copied().fold(0.0, f64::max).clamp(0.012, 0.05) * 1.05;
    let clipped = xs.iter().filter(|&&x| x > x_max).count();
    // The y range covers the points shown only.
    let ys: Vec<f64> = f
        .points
        .iter()
        .filter(|p| measure.of(p) <= x_max)
        .map(|p| f.reclaimed_gib_h(p))
        .filter(|v| v.is_finite())
        .collect();
    let y_hi = ys
        .iter()
        .copied()
        .fold(oracle_reclaim.max(0.0), f64::max)
        .max(1e-6)
        * 1.08;
    let y_lo = ys.iter().copied().fold(0.0, f64::min);
    let y_lo = if y_lo < 0.0 { y_lo * 1.08 } else { 0.0 };
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Savings frontier: {} (policy {})", f.workload, f.policy),
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..x_max * 100.0, y_lo..y_hi)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(format!(
            "{} (%){}",
            measure.label(),
            if clipped > 0 {
                format!("; {clipped} points beyond the right edge not shown")
            } else {
                String::new()
            }
        ))
        .y_desc("memory reclaimed vs baseline (reserved GiB-h)")
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .map_err(|e| err(&e))?;
    // budgets
    for b in BUDGETS {
        chart
            .draw_series(LineSeries::new(
                [(b * 100.0, y_lo), (b * 100.0, y_hi)],
                RGBColor(200, 200, 200).stroke_width(1),
            ))
            .map_err(|e| err(&e))?;
    }
    // oracle reclaim
    chart
        .draw_series(LineSeries::new(
            [(0.0, oracle_reclaim), (x_max * 100.0, oracle_reclaim)],
            Family::Oracle.color().stroke_width(2),
        ))
        .map_err(|e| err(&e))?
        .label(format!("oracle ({oracle_reclaim:.1} GiB-h)"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], Family::Oracle.color()));
    for fam in f.families() {
        if fam == Family::Oracle {
            continue;
        }
        let color = fam.color();
        let pts: Vec<(f64, f64)> = f
            .points
            .iter()
            .filter(|p| p.forecaster == fam)
            .map(|p| (measure.of(p) * 100.0, f.reclaimed_gib_h(p)))
            .filter(|(x, y)| x.is_finite() && y.is_finite() && *x <= x_max * 100.0)
            .collect();
        chart
            .draw_series(
                pts.iter()
                    .map(|&(x, y)| Circle::new((x, y), 3, color.mix(0.45).filled())),
            )
            .map_err(|e| err(&e))?;
        let front: Vec<(f64, f64)> = f
            .pareto(fam, measure)
            .iter()
            .map(|p| (measure.of(p) * 100.0, f.reclaimed_gib_h(p)))
            .filter(|(x, _)| *x <= x_max * 100.0)
            .collect();
        chart
            .draw_series(LineSeries::new(front.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(fam.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
        chart
            .draw_series(
                front
                    .iter()
                    .map(|&(x, y)| Circle::new((x, y), 4, color.filled())),
            )
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

/// Writes `points.csv`, `frontier.svg`, `frontier.png` and `frontier.md`
/// into `dir`, all or nothing ([`crate::outdir::Staged`]); returns what it
/// could not draw (also listed in `frontier.md`).
pub fn write_outputs(
    dir: &Path,
    f: &Frontier,
    measure: BudgetMeasure,
    command: &str,
) -> Result<Vec<String>, SimError> {
    let mut out = crate::outdir::Staged::new(dir)?;
    out.write("points.csv", f.to_csv(measure))?;
    let mut problems = Vec::new();
    match crate::fonts::ensure_registered() {
        Err(e) => problems.push(format!("frontier plot not drawn: {e}")),
        Ok(()) => {
            let svg = out.path_for("frontier.svg")?;
            if let Err(e) = plot(
                SVGBackend::new(&svg, PLOT_PX).into_drawing_area(),
                f,
                measure,
            ) {
                problems.push(format!("{}: {e}", out.dest("frontier.svg").display()));
                out.abandon("frontier.svg");
            }
            let png = out.path_for("frontier.png")?;
            if let Err(e) = plot(
                BitMapBackend::new(&png, PLOT_PX).into_drawing_area(),
                f,
                measure,
            ) {
                problems.push(format!("{}: {e}", out.dest("frontier.png").display()));
                out.abandon("frontier.png");
            }
        }
    }
    let mut md = markdown(f, measure, command);
    if !problems.is_empty() {
        md.push_str("\n## Plot problems\n\n");
        for p in &problems {
            let _ = writeln!(md, "- {p}");
        }
    }
    out.write("frontier.md", md)?;
    out.commit()?;
    Ok(problems)
}

//! One-call runs: a [`SimConfig`] over a workload, optionally against the
//! baseline, summarised.

use datasets::workload::Workload;
use forecaster::{ForecastError, Forecaster};
use shaper::Policy;

use crate::config::{ForecasterSource, SimConfig};
use crate::engine::{Engine, Forecasting, Progress};
use crate::metrics::{RunMetrics, Summary};
use crate::SimError;

/// One finished run: its config, metrics and summary.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub config: SimConfig,
    pub metrics: RunMetrics,
    pub summary: Summary,
}

/// Runs `cfg` over `wl` once.
pub fn simulate(
    wl: &Workload,
    cfg: &SimConfig,
    progress: Option<&(dyn Fn(Progress) + Sync)>,
) -> Result<RunResult, SimError> {
    cfg.validate()?;
    let model = cfg.forecaster.clone();
    let factory =
        move |r: shaper::Resource, unit: f64| -> Result<Box<dyn Forecaster>, ForecastError> {
            model.build_for(r, unit)
        };
    let forecasting = match cfg.forecaster_source {
        ForecasterSource::Oracle => Forecasting::Oracle,
        ForecasterSource::Model => Forecasting::Model(&factory),
    };
    let metrics = Engine::new(wl, cfg.engine(), cfg.shaper.clone())?.run(forecasting, progress)?;
    let forecaster = if cfg.shaper.policy == Policy::Baseline {
        "none".to_string()
    } else {
        cfg.forecaster_label()
    };
    let summary = Summary::from_metrics(
        &metrics,
        &wl.name,
        wl.hosts.len(),
        cfg.shaper.policy.as_str(),
        &forecaster,
        cfg.shaper.k1,
        cfg.shaper.k2,
    );
    Ok(RunResult {
        config: cfg.clone(),
        metrics,
        summary,
    })
}

/// The same configuration with the baseline policy (allocation = request).
pub fn baseline_of(cfg: &SimConfig) -> SimConfig {
    let mut b = cfg.clone();
    b.shaper.policy = Policy::Baseline;
    b
}

/// Runs `cfg`, and the baseline on the same workload when `with_baseline`
/// (and `cfg` is not the baseline itself), filling `turnaround_ratio`.
/// Returns (run, baseline run).
pub fn replay(
    wl: &Workload,
    cfg: &SimConfig,
    with_baseline: bool,
    progress: Option<&(dyn Fn(Progress) + Sync)>,
) -> Result<(RunResult, Option<RunResult>), SimError> {
    let baseline = if with_baseline && cfg.shaper.policy != Policy::Baseline {
        Some(simulate(wl, &baseline_of(cfg), progress)?)
    } else {
        None
    };
    let mut run = simulate(wl, cfg, progress)?;
    match &baseline {
        Some(b) => run.summary.set_baseline(b.summary.turnaround_mean_s),
        None if cfg.shaper.policy == Policy::Baseline && with_baseline => {
            let m = run.summary.turnaround_mean_s;
            run.summary.set_baseline(m);
        }
        None => {}
    }
    Ok((run, baseline))
}

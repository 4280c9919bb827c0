//! One-call runs: a [`SimConfig`] over a workload, optionally against the
//! baseline, summarised.

use std::sync::{Mutex, PoisonError};

use datasets::workload::Workload;
use forecaster::config::ModelKind;
use forecaster::{ForecastError, Forecaster};
use shaper::{Policy, VpaWorkloads};

use crate::config::{ForecasterSource, SimConfig};
use crate::engine::{Engine, Forecasting, ModelSite, Progress};
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
    let shared_vpa = model.kind == ModelKind::Vpa;
    // The faithful VPA keeps one state per workload: every component of an
    // application feeds its aggregates (CPU, memory), in real units.
    let vpa_apps: Mutex<VpaWorkloads<u32>> = Mutex::new(VpaWorkloads::new(usize::MAX));
    let factory = move |site: &ModelSite,
                        r: shaper::Resource,
                        unit: f64|
          -> Result<Box<dyn Forecaster>, ForecastError> {
        if !shared_vpa {
            return model.build_for(r, unit);
        }
        let interval_s = if site.interval_s.is_finite() && site.interval_s > 0.0 {
            site.interval_s
        } else {
            model.vpa.sample_interval_s
        };
        vpa_apps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .model(
                &model,
                &site.app,
                r,
                site.build,
                site.start_s,
                interval_s,
                unit,
            )
    };
    let forecasting = match cfg.forecaster_source {
        ForecasterSource::Oracle => Forecasting::Oracle,
        ForecasterSource::Model => Forecasting::Model(&factory),
    };
    let mut engine_cfg = cfg.engine();
    // components of one application share state: feed them in order
    engine_cfg.parallel_forecasts &= !shared_vpa;
    let metrics = Engine::new(wl, engine_cfg, cfg.shaper.clone())?.run(forecasting, progress)?;
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

/// The oracle run of `cfg`'s policy: exact future usage as the forecast,
/// no buffer (K1 = K2 = 0, no memory margin, no size rule, no risk
/// sizing). What it reserves is the reference of every saving
/// (`oracle_capture`): the frontier's oracle point and `tailor replay`'s
/// share of the oracle's saving.
pub fn oracle_of(cfg: &SimConfig) -> SimConfig {
    let mut o = cfg.clone();
    o.forecaster_source = ForecasterSource::Oracle;
    without_tailor_buffers(&mut o.shaper);
    o.shaper.memory_risk = None;
    o
}

/// Turns off every buffer rule of tailor's sizing (K1, K2, the memory
/// margin, the small-application, young-core and application-memory rules): the
/// oracle's points and the VPA's, which carries its own margin.
pub(crate) fn without_tailor_buffers(shaper: &mut shaper::ShaperConfig) {
    shaper.k1 = 0.0;
    shaper.k2 = 0.0;
    shaper.mem_margin = 0.0;
    shaper.small_app_components = 0;
    shaper.young_core_k1 = 0.0;
    shaper.app_mem_ref_gib = 0.0;
    shaper.app_mem_ref_rel = 0.0;
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

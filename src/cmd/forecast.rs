//! `tailor forecast`: replay a usage series through a forecaster, forecasting
//! before each observation, and score the forecasts (accuracy, calibration,
//! sharpness, speed).
//!
//! A file holding several series (a GCD_VMs archive, a Google 2019 export
//! with several instances, Alibaba containers) is scored pooled over all of
//! them, each series replayed through a fresh model.
//!
//! Values are printed with their unit (CPU in cores, memory in MiB when the
//! series' unit converts to them; see `--unit`). For a single series it also
//! prints the limit the shaper would set after the last sample, computed by
//! `shaper::component_target` (forecast mean + `K1 * request + K2 * sigma`,
//! floor, ceiling, never below the last usage), against `--current-limit`.

use std::path::PathBuf;

use anyhow::Context;
use datasets::series::{detect_format, SeriesFormat};
use forecaster::eval::{replay, ReplayStats};
use forecaster::{ModelConfig, ModelKind};
use serde::Serialize;
use shaper::{
    component_target, AppId, Application, Bound, Class, Component, ComponentId, Forecasts, HostId,
    Predictive, Resources, ShaperConfig,
};

/// Largest `--horizon` (samples).
pub const MAX_HORIZON: usize = 10_000;

/// Model choice on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelArg {
    Arima,
    Gp,
    Last,
    Peak,
    Vpa,
    VpaSimple,
}

impl From<ModelArg> for ModelKind {
    fn from(m: ModelArg) -> Self {
        match m {
            ModelArg::Arima => ModelKind::Arima,
            ModelArg::Gp => ModelKind::Gp,
            ModelArg::Last => ModelKind::Last,
            ModelArg::Peak => ModelKind::Peak,
            ModelArg::Vpa => ModelKind::Vpa,
            ModelArg::VpaSimple => ModelKind::VpaSimple,
        }
    }
}

/// Which resource the series measures.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceArg {
    Cpu,
    Mem,
}

impl ResourceArg {
    fn as_str(self) -> &'static str {
        match self {
            ResourceArg::Cpu => "cpu",
            ResourceArg::Mem => "mem",
        }
    }
}

/// Unit of the series' values (and of `--current-limit` / `--request`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitArg {
    /// CPU cores.
    Cores,
    /// Thousandths of a core.
    Millicores,
    Bytes,
    Kib,
    Mib,
    Gib,
    /// The file's own unit, not converted (normalised Google values,
    /// Alibaba and GCD_VMs percent, Bitbrains MHz).
    Native,
}

/// The resource a column measures by its name: memory when it names
/// memory ("mem" in any case), else CPU.
fn resource_of_column(column: &str) -> ResourceArg {
    if column.to_lowercase().contains("mem") {
        ResourceArg::Mem
    } else {
        ResourceArg::Cpu
    }
}

/// How values are read and printed.
#[derive(Clone, Debug, PartialEq)]
struct Unit {
    /// Resource of the series.
    resource: ResourceArg,
    /// Multiplier from a file value to cores (CPU) or bytes (memory);
    /// `None` for a native unit that converts to neither.
    to_base: Option<f64>,
    /// Name of the printed unit: "cores", "MiB" or the native unit's name.
    label: String,
    /// Name of the file's unit (that of --current-limit and --request).
    input_label: String,
}

const MIB: f64 = 1024.0 * 1024.0;

impl Unit {
    /// Picks the unit: `--unit` when given, else the format's own.
    fn resolve(
        resource: ResourceArg,
        unit: Option<UnitArg>,
        format: SeriesFormat,
        column: &str,
    ) -> anyhow::Result<Unit> {
        let native = |label: &str| Unit {
            resource,
            to_base: None,
            label: label.to_string(),
            input_label: label.to_string(),
        };
        let unit = match unit {
            Some(u) => u,
            None => match (format, resource) {
                (SeriesFormat::Csv, ResourceArg::Cpu) => UnitArg::Cores,
                (SeriesFormat::Csv, ResourceArg::Mem) => UnitArg::Bytes,
                (SeriesFormat::Bitbrains, ResourceArg::Mem) => UnitArg::Kib,
                (SeriesFormat::Bitbrains, ResourceArg::Cpu) if column.contains('%') => {
                    return Ok(native("% of the VM's CPU"))
                }
                (SeriesFormat::Bitbrains, ResourceArg::Cpu) => return Ok(native("MHz")),
                (SeriesFormat::AlibabaContainerUsage, _) => return Ok(native("% of the machine")),
                // GCD_VMs values are CPU and memory utilisation in percent
                // (SOURCES.md), not normalised units
                (SeriesFormat::GcdVmsTar, _) => return Ok(native("%")),
                (
                    SeriesFormat::Google2011Derived
                    | SeriesFormat::Google2011TaskUsage { .. }
                    | SeriesFormat::Google2019InstanceUsage,
                    _,
                ) => return Ok(native("normalised units")),
            },
        };
        let (to_base, label, input_label, for_cpu) = match unit {
            UnitArg::Cores => (1.0, "cores", "cores", true),
            UnitArg::Millicores => (1e-3, "cores", "millicores", true),
            UnitArg::Bytes => (1.0, "MiB", "bytes", false),
            UnitArg::Kib => (1024.0, "MiB", "KiB", false),
            UnitArg::Mib => (MIB, "MiB", "MiB", false),
            UnitArg::Gib => (1024.0 * MIB, "MiB", "GiB", false),
            UnitArg::Native => return Ok(native("native units")),
        };
        if for_cpu != (resource == ResourceArg::Cpu) {
            anyhow::bail!(
                "--unit {input_label} does not measure {} (CPU: cores, millicores; memory: bytes, kib, mib, gib; or native)",
                if resource == ResourceArg::Cpu { "CPU" } else { "memory" }
            );
        }
        Ok(Unit {
            resource,
            to_base: Some(to_base),
            label: label.to_string(),
            input_label: input_label.to_string(),
        })
    }

    /// A file value in the printed unit.
    fn shown(&self, v: f64) -> f64 {
        match (self.to_base, self.resource) {
            (Some(f), ResourceArg::Mem) => v * f / MIB,
            (Some(f), ResourceArg::Cpu) => v * f,
            (None, _) => v,
        }
    }

    /// A file value (or a difference of two) with its unit.
    fn fmt(&self, v: f64) -> String {
        format!("{} {}", fmt_num(self.shown(v), self.decimals()), self.label)
    }

    /// Decimals a printed value gets: 3 for cores, 1 for MiB, 4 for a
    /// native unit.
    fn decimals(&self) -> usize {
        match (self.to_base, self.resource) {
            (Some(_), ResourceArg::Cpu) => 3,
            (Some(_), ResourceArg::Mem) => 1,
            (None, _) => 4,
        }
    }
}

/// `x` with `decimals` decimals; in scientific notation from 1e9 up (so
/// a huge value is not printed digit by digit); "-" when not finite.
fn fmt_num(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        "-".to_string()
    } else if x.abs() >= 1e9 {
        format!("{x:.4e}")
    } else {
        format!("{x:.decimals$}")
    }
}

/// The limit the shaper would set after the last sample.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LimitAdvice {
    pub resource: &'static str,
    /// Unit of every value below.
    pub unit: String,
    /// Forecast of the peak over the next `--horizon` samples.
    pub forecast_mean: f64,
    pub forecast_sigma: f64,
    pub k1: f64,
    pub k2: f64,
    /// `k1 * request`.
    pub k1_term: f64,
    /// Forecast upper band at level `k2` minus the mean:
    /// `k2_sigma_mult * forecast_sigma`.
    pub k2_term: f64,
    /// The multiplier of sigma in `k2_term`: `k2` for a Gaussian forecast,
    /// a calibrated model's learned one at level `k2`
    /// (`shaper::Sizing::band`).
    pub k2_sigma_mult: f64,
    /// `mem_margin * forecast mean` (memory; 0 for CPU).
    pub margin_term: f64,
    pub last_usage: f64,
    pub request: f64,
    pub current_limit: f64,
    /// The limit the shaper would set.
    pub limit: f64,
    /// What decided it: buffer, floor, ceiling (request * max_growth) or usage.
    pub bound: &'static str,
    /// (limit - current) / current.
    pub change_fraction: f64,
}

fn bound_str(b: Bound) -> &'static str {
    match b {
        Bound::Buffer => "buffer",
        Bound::Floor => "floor",
        Bound::Reservation => "reservation",
        Bound::Ceiling => "ceiling (request x max_growth)",
        Bound::Usage => "current usage",
        Bound::OomFloor => "OOM floor",
        Bound::HostShare => "what was left on the host",
    }
}

/// Runs `shaper::component_target` for one component whose `resource` has
/// the given forecast, last usage, request and current limit (values in the
/// series' unit, converted to cores / bytes when the unit allows; a native
/// unit is passed as is, with the shaper's floors off).
fn advise(
    unit: &Unit,
    forecast: &Predictive,
    last_usage: f64,
    request: f64,
    current_limit: f64,
    shaper: &ShaperConfig,
) -> LimitAdvice {
    let mut cfg = shaper.clone();
    // One series, no application around it: the application-size rules
    // (small applications, application memory) and the kill-cost factors
    // (core or elastic, young core) have nothing to read, so the advice uses K1 as
    // given (the agent and `tailor replay` apply them).
    cfg.small_app_components = 0;
    cfg.app_mem_ref_gib = 0.0;
    cfg.app_mem_ref_rel = 0.0;
    cfg.core_k1_factor = 1.0;
    cfg.elastic_k1_factor = 1.0;
    cfg.young_core_k1 = 0.0;
    let base = unit.to_base.unwrap_or_else(|| {
        cfg.min_cpu_cores = 0.0;
        cfg.min_mem_bytes = 0.0;
        1.0
    });
    let one = |v: f64| match unit.resource {
        ResourceArg::Cpu => Resources::new(v * base, 0.0),
        ResourceArg::Mem => Resources::new(0.0, v * base),
    };
    let p = Predictive {
        mean: forecast.mean * base,
        std: forecast.std * base,
        calibration: forecast.calibration.clone(),
    };
    let idle = Predictive::gaussian(0.0, 0.0);
    let forecasts = match unit.resource {
        ResourceArg::Cpu => Forecasts {
            cpu: p,
            mem: idle,
            mem_hold_bytes: 0.0,
            mem_small_hold_bytes: 0.0,
        },
        ResourceArg::Mem => Forecasts {
            cpu: idle,
            mem: p,
            mem_hold_bytes: 0.0,
            mem_small_hold_bytes: 0.0,
        },
    };
    let component = Component {
        id: ComponentId(0),
        class: Class::Core,
        host: HostId(0),
        request: one(request),
        started_s: 0.0,
        allocation: one(current_limit),
        usage: one(last_usage),
        forecast: Some(forecasts),
        protected: false,
        work_done_s: 0.0,
        restarts_alone: false,
        mem_floor_bytes: 0.0,
        oom_floor_bytes: 0.0,
    };
    let app = Application {
        tenant: 0,
        id: AppId(0),
        submitted_s: 0.0,
        priority: 0,
        failures: 0,
        expected_remaining_s: None,
        components: Vec::new(),
    };
    // Judged as past its grace period: the series is its history.
    let now_s = cfg.grace_period_s.max(0.0);
    let t = component_target(&app, &component, now_s, &cfg);
    let s = match unit.resource {
        ResourceArg::Cpu => t.cpu,
        ResourceArg::Mem => t.mem,
    };
    let back = |v: f64| unit.shown(v / base);
    LimitAdvice {
        resource: unit.resource.as_str(),
        unit: unit.label.clone(),
        forecast_mean: unit.shown(forecast.mean),
        forecast_sigma: unit.shown(forecast.std),
        k1: cfg.k1,
        k2: cfg.k2,
        k1_term: back(s.k1_term),
        k2_term: back(s.k2_term),
        k2_sigma_mult: s.band.mult,
        margin_term: back(s.margin_term),
        last_usage: unit.shown(last_usage),
        request: unit.shown(request),
        current_limit: unit.shown(current_limit),
        limit: back(s.target),
        bound: bound_str(s.bound),
        change_fraction: if current_limit > 0.0 {
            (s.target / base - current_limit) / current_limit
        } else {
            f64::NAN
        },
    }
}

/// `--json` output: the score's fields, then unit and advice.
#[derive(Serialize)]
struct JsonOut<'a> {
    #[serde(flatten)]
    score: &'a forecaster::eval::ReplayScore,
    resource: &'static str,
    /// Unit of mae, mean_band_2 and mean_level (the series' unit).
    series_unit: String,
    /// Present for a single series with --current-limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<LimitAdvice>,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Forecasting model.
    #[arg(long, value_enum, default_value = "gp")]
    pub model: ModelArg,
    /// Wrap the model in the online calibration wrapper.
    #[arg(long)]
    pub calibrated: bool,
    /// Usage series file (Bitbrains, Google 2019 instance_usage, Google 2011
    /// derived or task_usage, GCD_VMs.tar.gz, Alibaba container_usage, plain
    /// CSV).
    #[arg(long)]
    pub input: PathBuf,
    /// Column to read (header name or 0-based index; default: the format's CPU column).
    #[arg(long)]
    pub column: Option<String>,
    /// Forecast the peak over this many samples.
    #[arg(long, default_value_t = 1)]
    pub horizon: usize,
    /// Replay at most this many samples of each series.
    #[arg(long)]
    pub max_points: Option<usize>,
    /// Replay at most this many series of the file.
    #[arg(long)]
    pub max_series: Option<usize>,
    /// TOML file with a forecaster `ModelConfig` (its `kind` and `calibrated`
    /// are overridden by --model / --calibrated).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Resource the series measures (default: mem when the name of the
    /// column read contains "mem", else cpu).
    #[arg(long, value_enum)]
    pub resource: Option<ResourceArg>,
    /// Unit of the series' values (default: cores / bytes for a plain CSV,
    /// the format's own unit otherwise; Bitbrains memory is KiB).
    #[arg(long, value_enum)]
    pub unit: Option<UnitArg>,
    /// The container's current limit, in the series' unit: prints the limit
    /// the shaper would set after the last sample against it.
    #[arg(long)]
    pub current_limit: Option<f64>,
    /// The container's request (K1 is a fraction of it; it is also the
    /// ceiling), in the series' unit (default: --current-limit).
    #[arg(long)]
    pub request: Option<f64>,
    /// Static buffer term of the limit, fraction of the request (default: the shaper's).
    #[arg(long)]
    pub k1: Option<f64>,
    /// Dynamic buffer term of the limit, sigmas (default: the shaper's).
    #[arg(long)]
    pub k2: Option<f64>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut cfg = match &args.config {
        Some(path) => crate::cmd::config::load_model_config(path)?,
        None => ModelConfig::default(),
    };
    cfg.kind = args.model.into();
    cfg.calibrated = args.calibrated;
    cfg.validate().context("invalid model config")?;
    if !(1..=MAX_HORIZON).contains(&args.horizon) {
        anyhow::bail!(
            "--horizon must be in [1, {MAX_HORIZON}], got {}",
            args.horizon
        );
    }
    for (flag, v) in [
        ("--current-limit", args.current_limit),
        ("--request", args.request),
    ] {
        if let Some(v) = v {
            if !(v.is_finite() && v > 0.0) {
                anyhow::bail!("{flag} must be a finite number > 0, got {v}");
            }
        }
    }
    let mut shaper_cfg = ShaperConfig::default();
    if let Some(k) = args.k1 {
        shaper_cfg.k1 = k;
    }
    if let Some(k) = args.k2 {
        shaper_cfg.k2 = k;
    }
    shaper_cfg
        .validate()
        .map_err(|e| anyhow::anyhow!("invalid --k1/--k2: {e}"))?;
    let format =
        detect_format(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let series = datasets::series::load_series(&args.input, args.column.as_deref())
        .with_context(|| format!("loading {}", args.input.display()))?;
    let Some(first) = series.first() else {
        anyhow::bail!("{} holds no series", args.input.display());
    };
    // The column actually read (by name or index, or the format's default).
    let column = first.column.as_str();
    let resource = args.resource.unwrap_or_else(|| resource_of_column(column));
    let unit = Unit::resolve(resource, args.unit, format, column)?;
    if cfg.kind == ModelKind::Vpa && unit.to_base.is_none() {
        anyhow::bail!(
            "--model vpa needs values in cores or bytes (the VPA's 250 MiB and 25 millicore \
             minimums and its 10 MB / 0.01 core buckets are absolute), but {} is read in {}: \
             pass --unit",
            args.input.display(),
            unit.label
        );
    }
    // The faithful VPA (the one model that reads these) treats CPU and
    // memory differently and works in real cores and bytes: one file
    // value is `to_base` of them.
    let model_resource = match resource {
        ResourceArg::Cpu => tailor_core::Resource::Cpu,
        ResourceArg::Mem => tailor_core::Resource::Mem,
    };
    let model_unit = unit.to_base.unwrap_or(1.0);
    // Amounts above this (in cores or bytes once converted) are refused, as
    // the shaper's API refuses them: sums and buffers over them stay finite.
    const MAX_AMOUNT: f64 = 1e18;
    for (flag, v) in [
        ("--current-limit", args.current_limit),
        ("--request", args.request),
    ] {
        if let Some(v) = v.filter(|v| (v * model_unit).abs() > MAX_AMOUNT) {
            anyhow::bail!(
                "{flag} {v:e} {} is above the largest accepted amount ({MAX_AMOUNT:e} once converted)",
                unit.input_label
            );
        }
    }
    let take = args.max_series.unwrap_or(usize::MAX);
    let mut pooled = ReplayStats::default();
    let mut name = cfg.kind.as_str().to_string();
    // (forecast after the last sample, last sample) of every replayed series.
    let mut last: Vec<(Predictive, f64)> = Vec::new();
    for s in series.iter().take(take) {
        let mut model = cfg
            .build_for(model_resource, model_unit)
            .with_context(|| format!("building model {}", cfg.kind))?;
        name = model.name().to_string();
        let st = replay(model.as_mut(), &s.values, args.horizon, args.max_points);
        tracing::debug!(series = %s.name, points = st.points, "replayed");
        pooled.merge(&st);
        let used = args
            .max_points
            .map_or(s.values.len(), |m| m.min(s.values.len()));
        if let Some(v) = s.values[..used].iter().rev().find(|v| v.is_finite()) {
            last.push((model.forecast(args.horizon), *v));
        }
    }
    if pooled.points == 0 {
        // e.g. one-point series: a forecast is scored against a later sample
        anyhow::bail!(
            "{}: no series has more than --horizon ({}) finite samples, nothing to score",
            args.input.display(),
            args.horizon
        );
    }
    if cfg.calibrated {
        name.push_str("+calibrated");
    }
    let score = pooled.score(&name);
    if let ([(p, usage)], Some(_)) = (&last[..], args.current_limit) {
        if ![*usage, p.mean, p.std]
            .iter()
            .all(|v| (v * model_unit).abs() <= MAX_AMOUNT)
        {
            anyhow::bail!(
                "{}: the last sample ({usage:e} {}) or its forecast is above the largest accepted amount ({MAX_AMOUNT:e} once converted): no limit advised",
                args.input.display(),
                unit.input_label
            );
        }
    }
    let advice = match (&last[..], args.current_limit) {
        ([(p, usage)], Some(current)) => Some(advise(
            &unit,
            p,
            *usage,
            args.request.unwrap_or(current),
            current,
            &shaper_cfg,
        )),
        _ => None,
    };
    if args.json {
        let out = JsonOut {
            score: &score,
            resource: resource.as_str(),
            series_unit: unit.label.clone(),
            limit: advice,
        };
        println!("{}", serde_json::to_string(&out)?);
        return Ok(());
    }
    println!("model               {}", score.model);
    println!("series / points     {} / {}", score.series, score.points);
    let unit_note = if unit.to_base.is_some() {
        format!("values read as {}", unit.input_label)
    } else {
        "not converted".to_string()
    };
    println!(
        "resource / unit     {} / {} ({unit_note})",
        resource.as_str(),
        unit.label
    );
    println!(
        "MAE / MASE          {} / {}",
        unit.fmt(score.mae),
        fmt_num(score.mase, 4)
    );
    println!(
        "coverage 1/2/3 sd   {:.2}% / {:.2}% / {:.2}%",
        100.0 * score.coverage_1sigma,
        100.0 * score.coverage_2sigma,
        100.0 * score.coverage_3sigma
    );
    println!(
        "above upper(2)/(3)  {:.3}% / {:.3}%",
        100.0 * score.upper_exceed_2sigma,
        100.0 * score.upper_exceed_3sigma
    );
    println!(
        "band(2) / level     {} / {}",
        unit.fmt(score.mean_band_2),
        unit.fmt(score.mean_level)
    );
    println!("updates per second  {:.0}", score.updates_per_sec);
    match (&last[..], &advice) {
        ([(p, usage)], advice) => {
            println!(
                "next forecast       peak of the next {} sample(s): mean {}, sigma {} (last sample {})",
                args.horizon,
                unit.fmt(p.mean),
                unit.fmt(p.std),
                unit.fmt(*usage)
            );
            match advice {
                Some(a) => {
                    let show = |v: f64| format!("{} {}", fmt_num(v, unit.decimals()), a.unit);
                    println!(
                        "limit               would set {} (current {}: {:+.1}%), bound: {}",
                        show(a.limit),
                        show(a.current_limit),
                        100.0 * a.change_fraction,
                        a.bound
                    );
                    let margin = if a.margin_term != 0.0 {
                        format!(" + margin {}", show(a.margin_term))
                    } else {
                        String::new()
                    };
                    println!(
                        "                    = mean {} + K1 {} x request {} + K2 {} sigma band {} ({} x sigma {}){margin}",
                        show(a.forecast_mean),
                        a.k1,
                        show(a.request),
                        a.k2,
                        show(a.k2_term),
                        fmt_num(a.k2_sigma_mult, 3),
                        show(a.forecast_sigma)
                    );
                }
                None => println!(
                    "limit               pass --current-limit (in {}) to see the limit the shaper would set",
                    unit.input_label
                ),
            }
        }
        _ => println!(
            "limit               one series at a time (this file holds {}; use --max-series 1)",
            series.len()
        ),
    }
    Ok(())
}

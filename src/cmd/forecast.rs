//! `tailor forecast`: replay a usage series through a forecaster, forecasting
//! before each observation, and score the forecasts (accuracy, calibration,
//! sharpness, speed).
//!
//! A file holding several series (a GCD_VMs archive, a Google 2019 export
//! with several instances, Alibaba containers) is scored pooled over all of
//! them, each series replayed through a fresh model.

use std::path::PathBuf;

use anyhow::Context;
use forecaster::eval::{replay, ReplayStats};
use forecaster::{ModelConfig, ModelKind};

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
}

impl From<ModelArg> for ModelKind {
    fn from(m: ModelArg) -> Self {
        match m {
            ModelArg::Arima => ModelKind::Arima,
            ModelArg::Gp => ModelKind::Gp,
            ModelArg::Last => ModelKind::Last,
            ModelArg::Peak => ModelKind::Peak,
            ModelArg::Vpa => ModelKind::Vpa,
        }
    }
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
    /// derived, GCD_VMs.tar.gz, Alibaba container_usage, plain CSV).
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
    let series = datasets::series::load_series(&args.input, args.column.as_deref())
        .with_context(|| format!("loading {}", args.input.display()))?;
    if series.is_empty() {
        anyhow::bail!("{} holds no series", args.input.display());
    }
    let take = args.max_series.unwrap_or(usize::MAX);
    let mut pooled = ReplayStats::default();
    let mut name = cfg.kind.as_str().to_string();
    for s in series.iter().take(take) {
        let mut model = cfg
            .build()
            .with_context(|| format!("building model {}", cfg.kind))?;
        name = model.name().to_string();
        let st = replay(model.as_mut(), &s.values, args.horizon, args.max_points);
        tracing::debug!(series = %s.name, points = st.points, "replayed");
        pooled.merge(&st);
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
    if args.json {
        println!("{}", serde_json::to_string(&score)?);
    } else {
        println!("model               {}", score.model);
        println!("series / points     {} / {}", score.series, score.points);
        println!("MAE / MASE          {:.6} / {:.4}", score.mae, score.mase);
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
            "band(2) / level     {:.6} / {:.6}",
            score.mean_band_2, score.mean_level
        );
        println!("updates per second  {:.0}", score.updates_per_sec);
    }
    Ok(())
}

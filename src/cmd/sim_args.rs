//! Arguments shared by `tailor replay` and `tailor tune`: the workload, the
//! base simulator configuration and its policy/forecaster overrides.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::str::FromStr;

use anyhow::Context;
use datasets::workload::Workload;
use forecaster::config::ModelKind;
use shaper::Policy;
use sim::{ForecasterSource, SimConfig, WorkloadSource};

#[derive(clap::Args, Debug, Clone)]
pub struct SimArgs {
    /// bundled | google2011:DIR | synthetic:SEED[:APPS] | recorded:PATH (an agent recording)
    #[arg(long, default_value = "bundled")]
    pub workload: String,
    /// SimConfig TOML file (command-line flags override it).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// baseline | optimistic | pessimistic (default pessimistic).
    #[arg(long)]
    pub policy: Option<String>,
    /// oracle | gp | arima | last | peak | vpa (default gp).
    #[arg(long)]
    pub forecaster: Option<String>,
    /// Keep only the first N applications (by arrival).
    #[arg(long)]
    pub max_apps: Option<usize>,
    /// Slow the workload down F times: arrivals and work x F, usage series
    /// read F times further (long-lived components, as in the thesis).
    #[arg(long)]
    pub stretch: Option<f64>,
    /// Multiply every host's capacity by F (< 1: a contended cluster).
    #[arg(long)]
    pub capacity_scale: Option<f64>,
    /// Never show a progress bar.
    #[arg(long)]
    pub quiet: bool,
}

impl SimArgs {
    /// The configuration file (or the defaults) with the policy and
    /// forecaster flags applied; not validated yet (callers add theirs).
    pub fn base_config(&self) -> anyhow::Result<SimConfig> {
        let mut cfg = match &self.config {
            Some(p) => {
                let text = agent::config::read_config_text(p).map_err(anyhow::Error::msg)?;
                crate::cmd::config::check_sim(&text)
                    .with_context(|| format!("configuration {}", p.display()))?
            }
            None => SimConfig::default(),
        };
        if let Ok(WorkloadSource::Recorded { path }) = self.workload.parse() {
            // the recording's interval, and the kernel config the agent ran with
            let rec = sim::recorded::read_recording(&path)?;
            cfg.interval_s = rec.header.interval_s;
            if self.config.is_none() {
                cfg.shaper = rec.header.shaper;
                cfg.forecaster = rec.header.forecaster;
            }
        }
        if let Some(p) = &self.policy {
            cfg.shaper.policy = Policy::from_str(p).map_err(anyhow::Error::msg)?;
        }
        if let Some(f) = &self.forecaster {
            if f == "oracle" {
                cfg.forecaster_source = ForecasterSource::Oracle;
            } else {
                cfg.forecaster_source = ForecasterSource::Model;
                cfg.forecaster.kind = ModelKind::from_str(f)
                    .map_err(|e| anyhow::anyhow!("--forecaster: {e} (or oracle)"))?;
            }
        }
        Ok(cfg)
    }

    /// Loads the workload named by `--workload`, then applies `--max-apps`,
    /// `--stretch` and `--capacity-scale` in that order.
    pub fn workload(&self) -> anyhow::Result<Workload> {
        let mut source: WorkloadSource = self.workload.parse()?;
        if let WorkloadSource::Google2011 { max_apps, .. } = &mut source {
            // Built from the trace's first N applications directly.
            *max_apps = self.max_apps;
        }
        let mut wl = source
            .load()
            .with_context(|| format!("loading workload {}", self.workload))?;
        if let Some(n) = self.max_apps {
            sim::source::keep_first_apps(&mut wl, n);
        }
        if let Some(f) = self.stretch {
            sim::source::stretch_time(&mut wl, f).context("--stretch")?;
        }
        if let Some(f) = self.capacity_scale {
            sim::source::scale_capacity(&mut wl, f).context("--capacity-scale")?;
        }
        Ok(wl)
    }

    /// A progress bar on stderr when it is a terminal and not `--quiet`.
    pub fn progress_bar(&self, label: &str) -> Option<indicatif::ProgressBar> {
        if self.quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        let pb = indicatif::ProgressBar::new(0);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        pb.set_prefix(label.to_string());
        Some(pb)
    }
}

//! Arguments shared by `tailor replay` and `tailor tune`: the workload, the
//! base simulator configuration and its policy/forecaster overrides.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;
use datasets::pool::PoolPhase;
use datasets::workload::Workload;
use forecaster::config::ModelKind;
use shaper::Policy;
use sim::seeded::SeededWorkloads;
use sim::{ForecasterSource, SimConfig, SimError, WorkloadSource};

/// Creates the `--out` directory and checks that it can be written to,
/// before a run whose results would otherwise be lost at the end.
pub fn prepare_out_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--out {}: cannot create the directory", dir.display()))?;
    let probe = dir.join(".tailor-write-check");
    std::fs::write(&probe, b"")
        .with_context(|| format!("--out {}: cannot write there", dir.display()))?;
    // Best effort: the probe is empty and hidden.
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// `--pool-phase` values (the spellings of [`PoolPhase`]).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolPhaseArg {
    Job,
    Task,
}

/// `--policy` values (the spellings of [`Policy`]).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyArg {
    /// Allocation = request, no evictions (the reference run).
    Baseline,
    /// Resize to forecast + buffer, no planning; overload is left to the OOM killer.
    Optimistic,
    /// Plan allocations in scheduler order and evict deliberately (thesis Algorithm 3).
    Pessimistic,
}

impl From<PolicyArg> for Policy {
    fn from(p: PolicyArg) -> Self {
        match p {
            PolicyArg::Baseline => Policy::Baseline,
            PolicyArg::Optimistic => Policy::Optimistic,
            PolicyArg::Pessimistic => Policy::Pessimistic,
        }
    }
}

/// `--forecaster` values: a model kind of the forecaster crate, or the oracle.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForecasterArg {
    /// Perfect foresight of the usage (simulator only).
    Oracle,
    /// Gaussian process with the history kernel.
    Gp,
    /// Auto-ARIMA.
    Arima,
    /// Last value.
    Last,
    /// Moving-window peak.
    Peak,
    /// The Kubernetes VPA recommender (faithful port: one state per
    /// application, decaying histograms, P90 + 15%, memory peaks per 24 h).
    Vpa,
    /// The older simplified VPA-style decaying percentile.
    VpaSimple,
}

impl ForecasterArg {
    /// The model kind, `None` for the oracle.
    pub fn model_kind(self) -> Option<ModelKind> {
        match self {
            ForecasterArg::Oracle => None,
            ForecasterArg::Gp => Some(ModelKind::Gp),
            ForecasterArg::Arima => Some(ModelKind::Arima),
            ForecasterArg::Last => Some(ModelKind::Last),
            ForecasterArg::Peak => Some(ModelKind::Peak),
            ForecasterArg::Vpa => Some(ModelKind::Vpa),
            ForecasterArg::VpaSimple => Some(ModelKind::VpaSimple),
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct SimArgs {
    /// bundled | google2011:DIR | google2019:DIR (per-task usage) | alibaba-gpu:PATH (an Alibaba GPU-cluster instance or pod list, or their directory; usage from the pool) | bitbrains:PATH (a Bitbrains VM file or their directory; the trace's usage) | synthetic:SEED[:APPS] | recorded:PATH (an agent recording)
    #[arg(long, default_value = "bundled")]
    pub workload: String,
    /// SimConfig TOML file (command-line flags override it).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Shaping policy (default: the config file's, else pessimistic).
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// Forecaster (default: the config file's, else last); `oracle` sees the
    /// future usage (an upper bound for any model).
    #[arg(long, value_enum)]
    pub forecaster: Option<ForecasterArg>,
    /// Keep only the first N applications (by arrival; N >= 1).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_apps: Option<usize>,
    /// Slow the workload down F times: arrivals and work x F, usage series
    /// read F times further (long-lived components, as in the thesis).
    #[arg(long)]
    pub stretch: Option<f64>,
    /// Multiply every host's capacity by F (< 1: a contended cluster).
    #[arg(long)]
    pub capacity_scale: Option<f64>,
    /// Usage drawn from the pool (bundled, Google 2011 and Alibaba GPU workloads):
    /// every task of a job replays the job's shape from the job's phase
    /// (`job`, the default: a jump of the shape is every sibling's at the
    /// same age) or from a phase of its own (`task`: same shape and level,
    /// jumps at different ages). Real siblings lie between the two
    /// (docs/known-gaps.md).
    #[arg(long, value_enum, default_value = "job")]
    pub pool_phase: PoolPhaseArg,
    /// Applications with fewer running components than N are small: their
    /// components' constant buffer is `[shaper] small_app_k1` (default
    /// 0.6) instead of K1 (overrides the config's `small_app_components`,
    /// default 5; 0: none is small).
    #[arg(long)]
    pub small_app_components: Option<u32>,
    /// Reference application memory in GiB: an application holding `m` GiB
    /// of memory requests gets `max(K1, [shaper] app_k1_slope * ln(GIB /
    /// m))` as its components' constant buffer term (overrides the
    /// config's reference, absolute or relative; 0: off).
    #[arg(long, value_name = "GIB", conflicts_with = "app_mem_ref_rel")]
    pub app_mem_ref_gib: Option<f64>,
    /// The same rule with its reference relative to the view: X times the
    /// memory-weighted median application memory, worked out every round
    /// (overrides the config's reference, absolute or relative, default
    /// 0.2; 0: off).
    #[arg(long, value_name = "X")]
    pub app_mem_ref_rel: Option<f64>,
    /// Never show a progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Repeat every random choice N times (1..=100): run i uses seed
    /// base + i, base = SEED of synthetic:SEED, else the config's `seed`
    /// (default 0); figures are reported as means with 95% t-intervals.
    /// Needs a seeded workload (bundled, google2011, alibaba-gpu, synthetic).
    #[arg(long, default_value_t = 1)]
    pub seeds: usize,
}

impl SimArgs {
    /// The `--config` file, checked key by key (every error at once, with
    /// its key path), if one was given.
    pub fn config_file(&self) -> anyhow::Result<Option<SimConfig>> {
        let Some(p) = &self.config else {
            return Ok(None);
        };
        let text = agent::config::read_config_text(p).map_err(anyhow::Error::msg)?;
        crate::cmd::config::check_sim(&text)
            .map(Some)
            .with_context(|| format!("configuration {}", p.display()))
    }

    /// The configuration file (or the defaults) with the policy and
    /// forecaster flags applied; not validated yet (callers add theirs).
    pub fn base_config(&self) -> anyhow::Result<SimConfig> {
        let mut cfg = self.config_file()?.unwrap_or_default();
        if let Ok(WorkloadSource::Recorded { path }) = self.workload.parse() {
            // the recording's interval, and the kernel config the agent ran with
            let rec = sim::recorded::read_recording(&path)?;
            cfg.interval_s = rec.header.interval_s;
            if self.config.is_none() {
                cfg.shaper = rec.header.shaper;
                cfg.forecaster = rec.header.forecaster;
            }
        }
        if let Some(p) = self.policy {
            cfg.shaper.policy = p.into();
        }
        if let Some(n) = self.small_app_components {
            cfg.shaper.small_app_components = n;
        }
        if let Some(g) = self.app_mem_ref_gib {
            cfg.shaper.app_mem_ref_gib = g;
            cfg.shaper.app_mem_ref_rel = 0.0;
        }
        if let Some(x) = self.app_mem_ref_rel {
            cfg.shaper.app_mem_ref_rel = x;
            cfg.shaper.app_mem_ref_gib = 0.0;
        }
        if let Some(f) = self.forecaster {
            match f.model_kind() {
                None => cfg.forecaster_source = ForecasterSource::Oracle,
                Some(kind) => {
                    cfg.forecaster_source = ForecasterSource::Model;
                    cfg.forecaster.kind = kind;
                }
            }
        }
        Ok(cfg)
    }

    /// The seeds of `--seeds` (see `sim::seeds`): `base + i` for i in
    /// 0..N. An error when N is out of range, or N > 1 on a workload with
    /// no random choice.
    pub fn seed_list(&self, cfg: &SimConfig) -> anyhow::Result<Vec<u64>> {
        sim::seeds::check_seeds(self.seeds)?;
        let source: WorkloadSource = self.workload.parse()?;
        if self.seeds > 1 && !source.is_seeded() {
            anyhow::bail!(
                "--seeds {}: workload {} has no random choice (google2019, bitbrains and recorded workloads replay the trace as it is); use --seeds 1",
                self.seeds,
                self.workload
            );
        }
        Ok(sim::seeds::seed_list(
            source.base_seed(cfg.seed),
            self.seeds,
        )?)
    }

    /// The workloads of the seeds of [`seed_list`](Self::seed_list): the
    /// first one built now (bad input fails here, before any output), the
    /// others one at a time as the runs reach them.
    pub fn seeded_workloads(&self, seeds: &[u64]) -> anyhow::Result<SeededWorkloads<'_>> {
        let first_seed = *seeds
            .first()
            .ok_or_else(|| anyhow::anyhow!("no seed to run"))?;
        let first = self.workload_with_seed(first_seed)?;
        Ok(SeededWorkloads::new(
            first,
            seeds.to_vec(),
            Box::new(move |seed| {
                self.workload_with_seed(seed)
                    .map_err(|e| SimError::Workload(format!("seed {seed}: {e:#}")))
            }),
        )?)
    }

    /// Loads the workload named by `--workload` (with `seed`, see
    /// `WorkloadSource::load_seeded`), then applies `--max-apps`,
    /// `--stretch` and `--capacity-scale` in that order.
    fn workload_with_seed(&self, seed: u64) -> anyhow::Result<Workload> {
        let mut source: WorkloadSource = self.workload.parse()?;
        if let WorkloadSource::Google2011 { max_apps, .. } = &mut source {
            // Built from the trace's first N applications directly.
            *max_apps = self.max_apps;
        }
        let phase = match self.pool_phase {
            PoolPhaseArg::Job => PoolPhase::Job,
            PoolPhaseArg::Task => PoolPhase::Task,
        };
        let mut wl = source
            .load_seeded(seed, phase)
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

    /// `e` for the operator: a run in which nothing ran (QA E11) names
    /// `--capacity-scale` when it shrank the hosts.
    pub fn explain(&self, e: SimError) -> anyhow::Error {
        match (&e, self.capacity_scale) {
            (SimError::NothingRan { .. }, Some(f)) => anyhow::anyhow!(
                "{e}; --capacity-scale {} shrinks every host",
                tailor_core::short_num(f)
            ),
            _ => e.into(),
        }
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

/// Logs of `replay`, `tune` and `frontier` on stderr: warnings by default
/// (a file skipped in a workload directory, a recording cut short), more
/// when `RUST_LOG` asks (`RUST_LOG=sim=debug` prints every OOM kill with
/// its forecast and band).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .with_ansi(false)
        .try_init();
}

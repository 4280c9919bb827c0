//! `tailor agent`: the per-node daemon.
//!
//! ```text
//! tailor agent [--config FILE]... [--once [--warmup N]] [--recommend]
//!              [--listen ADDR] [--log-format plain|json]
//! ```
//!
//! Several `--config` files merge table by table, later ones winning (e.g.
//! the main file then a `[shaper]` snippet written by `tailor tune`).
//! Without `--config`, `/etc/tailor/agent.toml` is read when it exists.
//! `--once` runs `--warmup` sampling-only rounds (`interval_s` apart; models
//! need `[shaper] min_history_samples` samples before containers get a forecast), then one
//! full round, prints its decisions as JSON on stdout and exits; it applies
//! them only with `actuation = "shape"` and without `--recommend`.

use agent::config::RuntimeKind;
use agent::config::{Actuation, AgentConfig, Mode, DEFAULT_CONFIG_PATH};
use agent::docker::DockerRuntime;
use agent::podman::PodmanRuntime;
use agent::ContainerRuntime;
use agent::{Agent, LocalShaper, PlanSource};
use anyhow::Context;
use std::path::PathBuf;
use std::sync::Arc;
use tailor_core::{Clock, SystemClock};

/// Most `--warmup` rounds of `--once`.
pub const MAX_WARMUP: u32 = 10_000;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Configuration file(s) (TOML); later files override earlier ones.
    #[arg(long = "config", short = 'c')]
    pub config: Vec<PathBuf>,
    /// Run one round, print its decisions as JSON, exit. A preview
    /// (recommend mode) unless --apply is given.
    #[arg(long)]
    pub once: bool,
    /// With --once: apply the round's plan (as `actuation` says) instead of
    /// previewing it.
    #[arg(long, requires = "once", conflicts_with = "recommend")]
    pub apply: bool,
    /// With --once: sampling-only rounds before the round printed.
    #[arg(long, default_value_t = 0)]
    pub warmup: u32,
    /// Dry run: compute, log and export decisions, change nothing.
    #[arg(long)]
    pub recommend: bool,
    /// HTTP listen address (overrides [http] listen; "" disables).
    #[arg(long)]
    pub listen: Option<String>,
    /// Sampling interval in seconds (overrides interval_s).
    #[arg(long)]
    pub interval_s: Option<f64>,
    /// Log format on stderr: plain (journald-friendly) or json.
    #[arg(long, default_value = "plain", value_parser = ["plain", "json"])]
    pub log_format: String,
}

fn init_logging(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // journald adds its own timestamps; plain lines stay short
    let _ = if format == "json" {
        builder.json().try_init()
    } else {
        builder.without_time().with_ansi(false).try_init()
    };
}

/// Loads the agent configuration as `tailor agent` does.
pub fn load_config(args: &Args) -> anyhow::Result<AgentConfig> {
    let paths = if args.config.is_empty() {
        let default = PathBuf::from(DEFAULT_CONFIG_PATH);
        if default.exists() {
            vec![default]
        } else {
            tracing::warn!("{DEFAULT_CONFIG_PATH} not found; using the built-in defaults");
            Vec::new()
        }
    } else {
        args.config.clone()
    };
    let mut cfg = if paths.is_empty() {
        AgentConfig::default()
    } else {
        AgentConfig::load(&paths).with_context(|| {
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            format!("configuration {}", names.join(" + "))
        })?
    };
    if args.apply && cfg.actuation == Actuation::Recommend {
        anyhow::bail!(
            "--apply acts as the configuration's `actuation` says, and it is \"recommend\": nothing would be applied (set actuation = \"shape\" to act)"
        );
    }
    if args.recommend || (args.once && !args.apply) {
        cfg.actuation = Actuation::Recommend;
    }
    if args.once {
        // One round is no recording, and the last run's must not be rotated away.
        cfg.record.enabled = false;
    }
    if let Some(l) = &args.listen {
        cfg.http.listen = l.clone();
    }
    if let Some(i) = args.interval_s {
        cfg.interval_s = i;
    }
    cfg.validate()
        .context("configuration with command-line overrides")?;
    Ok(cfg)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    init_logging(&args.log_format);
    if args.warmup > MAX_WARMUP {
        anyhow::bail!("--warmup must be at most {MAX_WARMUP}, got {}", args.warmup);
    }
    let cfg = load_config(&args)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(run_async(args, cfg))
}

fn plan_source(cfg: &AgentConfig) -> anyhow::Result<Box<dyn PlanSource>> {
    match cfg.mode {
        Mode::Standalone => Ok(Box::new(LocalShaper::new(cfg.shaper.clone()))),
        Mode::Cluster => {
            let c = cfg
                .cluster
                .as_ref()
                .context("mode = \"cluster\" needs a [cluster] table")?;
            let source =
                agent::cluster::plan_source::ClusterPlanSource::new(c, SystemClock.now_s())
                    .context("cannot set up the cluster client")?;
            Ok(Box::new(source))
        }
    }
}

async fn run_async(args: Args, mut cfg: AgentConfig) -> anyhow::Result<()> {
    if args.once {
        // --warmup replaces the agent's own warm-up rounds
        cfg.warmup_rounds = 0;
    }
    let runtime: Arc<dyn ContainerRuntime> = match cfg.runtime.kind {
        RuntimeKind::Docker => Arc::new(DockerRuntime::new(cfg.runtime_socket())?),
        RuntimeKind::Podman => Arc::new(PodmanRuntime::connect(cfg.runtime_socket()).await?),
    };
    let source = plan_source(&cfg)?;
    let mut agent = Agent::new(cfg.clone(), runtime, source, Arc::new(SystemClock))?;

    if args.once {
        let interval = std::time::Duration::from_secs_f64(cfg.interval_s);
        for i in 0..args.warmup {
            agent
                .sample_only()
                .await
                .with_context(|| format!("warm-up round {}", i + 1))?;
            tokio::time::sleep(interval).await;
        }
        let report = agent.round().await.context("round failed")?;
        if args.apply {
            agent.save_models(report.at_s);
        }
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }

    let shared = agent.shared();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let http = if cfg.http.listen.is_empty() {
        None
    } else {
        let listener = tokio::net::TcpListener::bind(&cfg.http.listen)
            .await
            .with_context(|| format!("cannot listen on {}", cfg.http.listen))?;
        tracing::info!(addr = %listener.local_addr()?, "HTTP endpoint: /metrics /healthz /v1/decisions /v1/recommendations");
        let mut rx = stop_rx.clone();
        Some(tokio::spawn(agent::http::serve(
            listener,
            shared,
            async move {
                let _ = rx.changed().await;
            },
        )))
    };
    tracing::info!(
        mode = cfg.mode.as_str(),
        actuation = cfg.actuation.as_str(),
        manage_unlimited = cfg.manage_unlimited,
        max_evictions_per_round = cfg.shaper.max_evictions_per_round,
        interval_s = cfg.interval_s,
        forecaster = cfg.forecaster.kind.as_str(),
        k1 = cfg.shaper.k1,
        k2 = cfg.shaper.k2,
        "tailor agent starting"
    );
    agent.run(shutdown_signal()).await?;
    let _ = stop_tx.send(true);
    if let Some(h) = http {
        let _ = h.await;
    }
    tracing::info!("tailor agent stopped");
    Ok(())
}

/// Resolves on SIGTERM, SIGINT or SIGHUP (the terminal of a shell that ran
/// the agent went away). The handlers are registered when this is
/// called, not when the future is first polled: the agent says READY
/// before its loop polls it, and a SIGTERM in between (systemd stopping a
/// unit that just started) must still run the shutdown policy instead of
/// killing the process.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    let hup = signal(SignalKind::hangup());
    async move {
        match (term, int, hup) {
            (Ok(mut term), Ok(mut int), Ok(mut hup)) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
                    _ = int.recv() => tracing::info!("SIGINT: shutting down"),
                    _ = hup.recv() => tracing::info!("SIGHUP: shutting down"),
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

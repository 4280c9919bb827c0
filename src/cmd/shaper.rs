//! `tailor shaper`: the central shaper server of cluster mode, plus its
//! helpers.
//!
//! ```sh
//! tailor shaper --config /etc/tailor/shaper.toml      # serve
//! tailor shaper gen-token /etc/tailor/token           # new random token, mode 0600
//! tailor shaper loadgen --token-file T --agents 1000 --containers 100 --interval-s 10 --duration-s 120
//! ```

use agent::cluster::loadgen::{self, LoadgenConfig};
use agent::cluster::{ShaperServer, ShaperServerConfig};
use anyhow::Context;
use std::io::Read;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Server configuration (TOML).
    #[arg(long, default_value = "/etc/tailor/shaper.toml")]
    config: PathBuf,
    /// Log format: `plain` or `json`.
    #[arg(long, default_value = "plain")]
    log_format: String,
    #[command(subcommand)]
    command: Option<Sub>,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Write a new random bearer token to FILE (mode 0600; refuses to
    /// overwrite an existing file).
    GenToken { file: PathBuf },
    /// Play simulated agents against a shaper on this machine (loopback only)
    /// and print report/round latencies and the shaper's CPU and memory.
    Loadgen(LoadgenArgs),
}

#[derive(clap::Args, Debug)]
struct LoadgenArgs {
    /// Shaper base URL (loopback only).
    #[arg(long, default_value = "http://127.0.0.1:9848")]
    url: String,
    /// Token file (mode 0600).
    #[arg(long)]
    token_file: PathBuf,
    /// Extra CA certificate (PEM) for an https URL.
    #[arg(long)]
    ca_cert_file: Option<PathBuf>,
    /// Simulated agents (hosts).
    #[arg(long, default_value_t = 1000)]
    agents: usize,
    /// Containers per simulated agent.
    #[arg(long, default_value_t = 100)]
    containers: usize,
    /// Seconds between two reports of one agent.
    #[arg(long, default_value_t = 10.0)]
    interval_s: f64,
    /// Length of the run in seconds (at most 3600).
    #[arg(long, default_value_t = 120.0)]
    duration_s: f64,
    /// Hosts each application spans.
    #[arg(long, default_value_t = 3)]
    hosts_per_app: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn init_logging(format: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        "json" => builder
            .json()
            .try_init()
            .map_err(|e| anyhow::anyhow!("{e}")),
        "plain" => builder.try_init().map_err(|e| anyhow::anyhow!("{e}")),
        other => anyhow::bail!("unknown --log-format {other:?} (expected plain or json)"),
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    init_logging(&args.log_format)?;
    match args.command {
        Some(Sub::GenToken { file }) => gen_token(&file),
        Some(Sub::Loadgen(a)) => run_loadgen(a),
        None => serve(&args.config),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn serve(config: &std::path::Path) -> anyhow::Result<()> {
    let cfg = ShaperServerConfig::load(config)
        .with_context(|| format!("configuration {}", config.display()))?;
    runtime()?.block_on(async move {
        let server = ShaperServer::start(cfg).await?;
        eprintln!("tailor shaper listening on {}", server.url());
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("cannot install the SIGTERM handler")?;
        let stop = async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            tracing::info!("shutting down");
        };
        server.run_until(stop).await?;
        Ok(())
    })
}

fn gen_token(file: &std::path::Path) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut raw = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut raw))
        .context("cannot read /dev/urandom")?;
    let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
        .with_context(|| format!("cannot create {} (it must not exist yet)", file.display()))?;
    writeln!(f, "{token}").with_context(|| format!("cannot write {}", file.display()))?;
    eprintln!(
        "wrote a new 256-bit token to {} (mode 0600)",
        file.display()
    );
    Ok(())
}

fn run_loadgen(a: LoadgenArgs) -> anyhow::Result<()> {
    let cfg = LoadgenConfig {
        url: a.url,
        token_file: a.token_file,
        ca_cert_file: a.ca_cert_file,
        agents: a.agents,
        containers_per_agent: a.containers,
        interval_s: a.interval_s,
        duration_s: a.duration_s,
        hosts_per_app: a.hosts_per_app,
        seed: a.seed,
    };
    let report = runtime()?.block_on(loadgen::run(&cfg))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(())
}

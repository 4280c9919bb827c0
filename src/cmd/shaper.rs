//! `tailor shaper`: the central shaper server of cluster mode, plus its
//! helpers.
//!
//! ```sh
//! tailor shaper --config /etc/tailor/shaper.toml      # serve
//! tailor shaper gen-token /etc/tailor/token           # new random (operator) token, mode 0600
//! tailor shaper credentials add --agent node-17 --tenant team-a   # prints the agent's token once
//! tailor shaper credentials add --agent node-17 --tenant team-a --token-file /etc/tailor/node-17.token
//! tailor shaper credentials list [--json]
//! tailor shaper credentials revoke --agent node-17    # or --key-id K; the running shaper reloads
//! tailor shaper loadgen --token-file T --credentials-file C --agents 1000 --containers 100 --interval-s 10 --duration-s 120
//! ```
//!
//! The `credentials` commands edit the file named by `credentials_file` in
//! the shaper's configuration (or `--file`).

use anyhow::Context;
use loadgen::LoadgenConfig;
use shaperd::credentials::CredentialsFile;
use shaperd::{ShaperServer, ShaperServerConfig};
use std::io::Read;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Server configuration (TOML); `credentials` takes its
    /// credentials_file from it (before or after the subcommand).
    #[arg(long, global = true, default_value = "/etc/tailor/shaper.toml")]
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
    /// Manage per-agent credentials (tokens bound to an agent id and a tenant).
    #[command(subcommand)]
    Credentials(CredentialsCmd),
}

#[derive(clap::Subcommand, Debug)]
enum CredentialsCmd {
    /// Register a new credential for an agent; prints its token once (or
    /// writes it to --token-file), stores only its SHA-256.
    Add {
        #[arg(long)]
        agent: String,
        #[arg(long)]
        tenant: String,
        /// The application labels this agent may report components of,
        /// comma-separated: exact labels, or prefixes ending in `*`
        /// (default: every application of the tenant). Its other
        /// components are answered as rejected and never planned.
        #[arg(long, value_delimiter = ',')]
        apps: Vec<String>,
        /// Write the token to this new file (mode 0600) instead of printing it.
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// Credentials file (default: credentials_file of --config).
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// List the registered credentials (never the tokens).
    List {
        #[arg(long)]
        json: bool,
        /// Credentials file (default: credentials_file of --config).
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Revoke the credentials of an agent (all its keys) or one key: they
    /// stay in the file as `[[revoked]]` tombstones and the file's
    /// generation rises; the running shaper (every replica, with etcd)
    /// refuses them within seconds.
    Revoke {
        #[arg(long, required_unless_present = "key_id")]
        agent: Option<String>,
        #[arg(long)]
        key_id: Option<String>,
        /// Credentials file (default: credentials_file of --config).
        #[arg(long)]
        file: Option<PathBuf>,
    },
}

#[derive(clap::Args, Debug)]
struct LoadgenArgs {
    /// Shaper base URL (loopback only).
    #[arg(long, default_value = "http://127.0.0.1:9848")]
    url: String,
    /// The operator token file (mode 0600), to read the shaper's /metrics.
    #[arg(long)]
    token_file: PathBuf,
    /// The shaper's credentials file: the simulated agents are registered
    /// in it (tenant `loadgen`) for the run.
    #[arg(long)]
    credentials_file: PathBuf,
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
    /// This many agents, spread over the interval, send every report early
    /// (the shaper's worst case of early rounds, one per
    /// `early_round_gap_s`).
    #[arg(long, default_value_t = 0)]
    early_agents: usize,
    /// The agents' bodies: `auto` (MessagePack once the shaper answers in
    /// it, as agents do by default) or `json`.
    #[arg(long, value_enum, default_value = "auto")]
    encoding: EncodingArg,
    /// The agents' forecasts carry a calibration table each, as a real
    /// agent's do (without it, Gaussian forecasts: smaller reports).
    #[arg(long)]
    calibrated: bool,
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
        Some(Sub::Credentials(c)) => credentials(&args.config, c),
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

/// `--encoding` of `tailor shaper loadgen`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum EncodingArg {
    Auto,
    Json,
}

fn run_loadgen(a: LoadgenArgs) -> anyhow::Result<()> {
    let cfg = LoadgenConfig {
        url: a.url,
        token_file: a.token_file,
        credentials_file: Some(a.credentials_file),
        ca_cert_file: a.ca_cert_file,
        agents: a.agents,
        containers_per_agent: a.containers,
        interval_s: a.interval_s,
        duration_s: a.duration_s,
        hosts_per_app: a.hosts_per_app,
        seed: a.seed,
        early_agents: a.early_agents,
        encoding: match a.encoding {
            EncodingArg::Auto => agent::cluster::config::WireEncoding::Auto,
            EncodingArg::Json => agent::cluster::config::WireEncoding::Json,
        },
        calibrated: a.calibrated,
    };
    let report = runtime()?.block_on(loadgen::run(&cfg))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(())
}

/// The credentials file: `--file`, else `credentials_file` of the config.
fn credentials_path(config: &std::path::Path, file: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(f) = file {
        return Ok(f);
    }
    let text = std::fs::read_to_string(config)
        .with_context(|| format!("cannot read {} (or pass --file)", config.display()))?;
    let cfg = ShaperServerConfig::from_toml(&text, config)?;
    cfg.credentials_file.with_context(|| {
        format!(
            "{} has no credentials_file (set it, or pass --file)",
            config.display()
        )
    })
}

fn credentials(config: &std::path::Path, cmd: CredentialsCmd) -> anyhow::Result<()> {
    let now_s = tailor_core::Clock::now_s(&tailor_core::SystemClock);
    match cmd {
        CredentialsCmd::Add {
            agent,
            tenant,
            apps,
            token_file,
            file,
        } => {
            let path = credentials_path(config, file)?;
            let mut creds = CredentialsFile::load(&path, true)?;
            let token = creds.add(&agent, &tenant, &apps, now_s)?;
            let key_id = creds
                .credentials
                .last()
                .map(|c| c.key_id.clone())
                .unwrap_or_default();
            // Write the token first: a credential whose token is lost is useless.
            if let Some(tf) = &token_file {
                write_new_private(tf, &token)?;
            }
            creds.save(&path)?;
            eprintln!(
                "added credential {key_id} for agent {agent:?} in tenant {tenant:?} to {}",
                path.display()
            );
            match token_file {
                Some(tf) => eprintln!("token written to {} (mode 0600)", tf.display()),
                None => {
                    eprintln!("the token (shown once; put it in the agent's [cluster] token_file, mode 0600):");
                    println!("{token}");
                }
            }
            Ok(())
        }
        CredentialsCmd::List { json, file } => {
            let path = credentials_path(config, file)?;
            let creds = CredentialsFile::load(&path, true)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&creds.credentials)?);
            } else {
                println!(
                    "{:<16}  {:<24}  {:<16}  {:<12}  apps",
                    "key_id", "agent_id", "tenant", "created_s"
                );
                for c in &creds.credentials {
                    println!(
                        "{:<16}  {:<24}  {:<16}  {:<12.0}  {}",
                        c.key_id,
                        c.agent_id,
                        c.tenant,
                        c.created_s,
                        shaperd::app_scope::AppScope::new(&c.apps).describe()
                    );
                }
            }
            Ok(())
        }
        CredentialsCmd::Revoke {
            agent,
            key_id,
            file,
        } => {
            let path = credentials_path(config, file)?;
            let mut creds = CredentialsFile::load(&path, false)?;
            let n = creds.revoke(agent.as_deref(), key_id.as_deref(), now_s);
            if n == 0 {
                anyhow::bail!("no credential matches in {}", path.display());
            }
            creds.save(&path)?;
            eprintln!(
                "revoked {n} credential(s) in {}; a running shaper refuses them within a second",
                path.display()
            );
            Ok(())
        }
    }
}

fn write_new_private(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {} (it must not exist yet)", path.display()))?;
    writeln!(f, "{text}").with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

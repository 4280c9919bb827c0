//! Load generator: many simulated agents reporting to one shaper over
//! loopback (`tailor shaper loadgen`).
//!
//! Each simulated agent owns `containers_per_agent` containers. Applications
//! span `hosts_per_app` consecutive agents (10 containers per agent each,
//! the first 2 of every slice core, the rest elastic), so the shaper plans
//! with a real global view. Usage follows a bounded random walk around 35%
//! of the request with occasional spikes; host capacity is 60% of the
//! summed requests, so hosts are overcommitted by reservation and some
//! spikes force evictions. Agents apply the actions they get (resize: new
//! allocation; evict: the container disappears and comes back under a new
//! id a few intervals later), acknowledge them with their next report, and
//! report every `interval_s`, spread evenly over the interval.
//!
//! Every simulated agent has its own credential: the run registers them
//! (tenant `loadgen`) in the shaper's credentials file, waits for the
//! shaper to reload it, and revokes them at the end.
//!
//! The run is bounded (duration, agent count) and only targets loopback
//! addresses. At the end it reads the shaper's `/metrics` for the round
//! latency quantiles and the process's CPU time and memory.
//!
//! A tool, not part of the production daemons: it depends on both the
//! agent's cluster client and `shaperd` (for the credentials file).
//!
//! # Example
//!
//! ```
//! // Only loopback shapers are load-tested.
//! let mut cfg = loadgen::LoadgenConfig::default();
//! assert!(cfg.validate().is_ok());
//! cfg.url = "http://shaper.example:9848".into();
//! assert!(cfg.validate().is_err());
//! assert!(loadgen::is_loopback_url("http://localhost:9848"));
//! ```

use agent::cluster::client::ClusterClient;
use agent::cluster::config::{ClusterClientConfig, WireEncoding};
use protocol::auth::{read_token_file, Token};
use protocol::{Ack, AckOutcome, ActionKind, ClusterError, ComponentReport};
use serde::{Deserialize, Serialize};
use service::prom::sample;
use shaper::{Calibration, Class, ConfigErrors, Forecasts, Predictive, Resources};
use shaperd::credentials::CredentialsFile;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest accepted run.
pub const MAX_DURATION_S: f64 = 3600.0;
/// Most simulated agents.
pub const MAX_AGENTS: usize = 20_000;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// SplitMix64: a small deterministic generator (quality is plenty for
/// simulated usage noise).
struct SplitMix64(u64);

impl SplitMix64 {
    fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

/// Parameters of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadgenConfig {
    /// Shaper base URL; must be a loopback address.
    pub url: String,
    /// The operator token (the shaper's `token_file`), for `/metrics`.
    pub token_file: PathBuf,
    /// The shaper's credentials file: the simulated agents' credentials are
    /// added to it for the run.
    #[serde(default)]
    pub credentials_file: Option<PathBuf>,
    pub ca_cert_file: Option<PathBuf>,
    pub agents: usize,
    pub containers_per_agent: usize,
    pub interval_s: f64,
    pub duration_s: f64,
    pub hosts_per_app: usize,
    pub seed: u64,
    /// This many agents, spread over the interval, send every report early
    /// (as a memory watch would): the shaper's worst case of early rounds.
    #[serde(default)]
    pub early_agents: usize,
    /// The agents' body encoding (`[cluster] encoding` of an agent).
    #[serde(default)]
    pub encoding: WireEncoding,
    /// Forecasts carry a calibration table each, as a real agent's do.
    #[serde(default)]
    pub calibrated: bool,
}

impl Default for LoadgenConfig {
    fn default() -> Self {
        Self {
            url: "http://127.0.0.1:9848".into(),
            token_file: PathBuf::from("/etc/tailor/token"),
            credentials_file: None,
            ca_cert_file: None,
            agents: 1000,
            containers_per_agent: 100,
            interval_s: 10.0,
            duration_s: 120.0,
            hosts_per_app: 3,
            seed: 1,
            early_agents: 0,
            encoding: WireEncoding::Auto,
            calibrated: false,
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadgenReport {
    pub agents: usize,
    pub containers: usize,
    pub duration_s: f64,
    pub reports_ok: u64,
    pub reports_failed: u64,
    /// Client-observed report round trip (seconds).
    pub report_rtt_p50_s: f64,
    pub report_rtt_p99_s: f64,
    pub report_rtt_max_s: f64,
    pub actions_resize: u64,
    pub actions_evict: u64,
    /// From the shaper's /metrics at the end.
    pub server_rounds: f64,
    /// Of them, planned early for an early report.
    #[serde(default)]
    pub server_early_rounds: f64,
    pub server_round_p50_s: Option<f64>,
    pub server_round_p99_s: Option<f64>,
    pub server_round_max_s: Option<f64>,
    pub server_agents_live: Option<f64>,
    pub server_agents_stale: Option<f64>,
    pub server_components: Option<f64>,
    /// Shaper CPU time during the run / run duration (1.0 = one core).
    pub server_cpu_cores: Option<f64>,
    pub server_rss_bytes: Option<f64>,
    pub server_max_rss_bytes: Option<f64>,
}

impl std::fmt::Display for LoadgenReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let opt = |v: Option<f64>, scale: f64, unit: &str| match v {
            Some(x) => format!("{:.3}{unit}", x * scale),
            None => "n/a".to_string(),
        };
        writeln!(
            f,
            "agents {} x containers {} for {:.0} s",
            self.agents,
            self.containers / self.agents.max(1),
            self.duration_s
        )?;
        writeln!(
            f,
            "reports: {} ok, {} failed",
            self.reports_ok, self.reports_failed
        )?;
        writeln!(
            f,
            "report round trip (client): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            self.report_rtt_p50_s * 1e3,
            self.report_rtt_p99_s * 1e3,
            self.report_rtt_max_s * 1e3
        )?;
        writeln!(
            f,
            "actions received: {} resize, {} evict",
            self.actions_resize, self.actions_evict
        )?;
        writeln!(
            f,
            "shaper rounds: {:.0} ({:.0} early); round latency p50 {}, p99 {}, max {}",
            self.server_rounds,
            self.server_early_rounds,
            opt(self.server_round_p50_s, 1e3, " ms"),
            opt(self.server_round_p99_s, 1e3, " ms"),
            opt(self.server_round_max_s, 1e3, " ms")
        )?;
        writeln!(
            f,
            "shaper view: {} live agents, {} stale, {} components",
            opt(self.server_agents_live, 1.0, ""),
            opt(self.server_agents_stale, 1.0, ""),
            opt(self.server_components, 1.0, "")
        )?;
        write!(
            f,
            "shaper process: CPU {} cores (average over the run), RSS {} MiB, peak RSS {} MiB",
            opt(self.server_cpu_cores, 1.0, ""),
            opt(self.server_rss_bytes, 1.0 / 1048576.0, ""),
            opt(self.server_max_rss_bytes, 1.0 / 1048576.0, "")
        )
    }
}

/// True when `url`'s host is a loopback address (or `localhost`).
pub fn is_loopback_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or("");
    let authority = rest.split('/').next().unwrap_or("");
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority
            .rsplit_once(':')
            .map(|(h, _)| h)
            .unwrap_or(authority)
    };
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .map(|ip| ip.is_loopback())
        .unwrap_or(false)
}

impl LoadgenConfig {
    /// Every invalid setting at once: a loopback `url`; `agents` in
    /// [1, 20000]; `containers_per_agent` in [1, 10000]; `interval_s` in
    /// [0.01, 600]; `duration_s` in (0, 3600]; `hosts_per_app` in [1, 20000];
    /// `early_agents` at most `agents`.
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        e.check("url", is_loopback_url(&self.url), || {
            format!(
                "{} is not a loopback address: the load generator only targets this machine",
                self.url
            )
        });
        e.range("agents", self.agents, 1, MAX_AGENTS);
        e.range("containers_per_agent", self.containers_per_agent, 1, 10_000);
        e.range("interval_s", self.interval_s, 0.01, 600.0);
        e.check(
            "duration_s",
            self.duration_s > 0.0 && self.duration_s <= MAX_DURATION_S,
            || format!("must be in (0, {MAX_DURATION_S}], got {}", self.duration_s),
        );
        e.range("hosts_per_app", self.hosts_per_app, 1, MAX_AGENTS);
        e.range("early_agents", self.early_agents, 0, self.agents);
        e.into_result()
    }
}

struct SimContainer {
    id: String,
    app: String,
    class: Class,
    request: Resources,
    allocation: Resources,
    level: f64,
    started_s: f64,
    /// Evicted: comes back at this time under a new id.
    down_until_s: Option<f64>,
}

struct SimAgent {
    index: usize,
    containers: Vec<SimContainer>,
    capacity: Resources,
    rng: SplitMix64,
    generation: u64,
    /// The calibration table its forecasts carry (`calibrated`).
    calibration: Option<Arc<Calibration>>,
}

impl SimAgent {
    fn new(index: usize, cfg: &LoadgenConfig, now_s: f64) -> Self {
        let mut rng = SplitMix64::new(cfg.seed.wrapping_mul(1_000_003).wrapping_add(index as u64));
        let group = index / cfg.hosts_per_app;
        let request = Resources::new(0.5, 0.5 * GIB);
        let containers = (0..cfg.containers_per_agent)
            .map(|j| SimContainer {
                id: format!("c{index}-{j}-0"),
                app: format!("app-{group}-{}", j / 10),
                class: if j % 10 < 2 {
                    Class::Core
                } else {
                    Class::Elastic
                },
                request,
                allocation: request,
                level: 0.25 + 0.2 * rng.unit(),
                started_s: now_s - 700.0 - 3000.0 * rng.unit(),
                down_until_s: None,
            })
            .collect::<Vec<_>>();
        let n = cfg.containers_per_agent as f64;
        let capacity = Resources::new(0.6 * n * request.cpu_cores, 0.6 * n * request.mem_bytes);
        // A calibrated model's bands: wider above than the Gaussian's.
        let calibration = cfg.calibrated.then(|| {
            let mut c = Calibration::gaussian();
            for (i, (u, l)) in c.upper.iter_mut().zip(c.lower.iter_mut()).enumerate() {
                *u *= 1.2 + 0.01 * i as f32;
                *l *= 0.9;
            }
            Arc::new(c)
        });
        Self {
            index,
            containers,
            capacity,
            rng,
            generation: 0,
            calibration,
        }
    }

    /// Advances usage one interval and builds the report's components.
    fn step(&mut self, now_s: f64) -> Vec<ComponentReport> {
        let mut out = Vec::with_capacity(self.containers.len());
        for c in &mut self.containers {
            if let Some(t) = c.down_until_s {
                if now_s < t {
                    continue;
                }
                self.generation += 1;
                c.id = format!(
                    "c{}-{}-{}",
                    self.index,
                    c.id.split('-').nth(1).unwrap_or("x"),
                    self.generation
                );
                c.allocation = c.request;
                c.started_s = now_s;
                c.down_until_s = None;
            }
            let noise: f64 = self.rng.range(-0.03, 0.03);
            c.level = (c.level + noise).clamp(0.1, 0.6);
            let spike = if self.rng.unit() < 0.01 { 0.35 } else { 0.0 };
            let frac = (c.level + spike).min(1.0);
            let usage = Resources::new(c.request.cpu_cores * frac, c.request.mem_bytes * frac);
            let usage = Resources::new(
                usage.cpu_cores.min(c.allocation.cpu_cores),
                usage.mem_bytes.min(c.allocation.mem_bytes),
            );
            let std = Resources::new(c.request.cpu_cores * 0.03, c.request.mem_bytes * 0.03);
            out.push(ComponentReport {
                container_id: c.id.clone(),
                app: c.app.clone(),
                class: c.class,
                priority: 0,
                protected: false,
                request: c.request,
                allocation: c.allocation,
                usage,
                forecast: Some(Forecasts {
                    cpu: Predictive {
                        calibration: self.calibration.clone(),
                        ..Predictive::gaussian(usage.cpu_cores, std.cpu_cores)
                    },
                    mem: Predictive {
                        calibration: self.calibration.clone(),
                        ..Predictive::gaussian(usage.mem_bytes, std.mem_bytes)
                    },
                    mem_hold_bytes: 0.0,
                    mem_small_hold_bytes: 0.0,
                }),
                started_s: c.started_s,
                work_done_s: None,
                app_submitted_s: None,
                failures: 0,
                expected_remaining_s: None,
                restarts_alone: false,
                mem_floor_bytes: 0.0,
                oom_floor_bytes: 0.0,
            });
        }
        out
    }

    fn apply(&mut self, kind: &ActionKind, now_s: f64, interval_s: f64) {
        let Some(c) = self
            .containers
            .iter_mut()
            .find(|c| c.id == kind.container_id())
        else {
            return;
        };
        match kind {
            ActionKind::Resize { to, .. } => c.allocation = *to,
            ActionKind::Evict { .. } => c.down_until_s = Some(now_s + 3.0 * interval_s),
        }
    }
}

#[derive(Default)]
struct AgentStats {
    ok: u64,
    failed: u64,
    rtts: Vec<f64>,
    resize: u64,
    evict: u64,
}

async fn run_agent(
    mut agent: SimAgent,
    client: ClusterClient,
    start: Instant,
    offset: Duration,
    interval: Duration,
    deadline: Instant,
    early: bool,
) -> AgentStats {
    let mut stats = AgentStats::default();
    let mut client = client;
    let mut acks: Vec<Ack> = Vec::new();
    let mut next = start + offset;
    let wall0 = tailor_core::Clock::now_s(&tailor_core::SystemClock);
    while next < deadline {
        tokio::time::sleep_until(tokio::time::Instant::from_std(next)).await;
        let now_s = wall0 + start.elapsed().as_secs_f64();
        let comps = agent.step(now_s);
        let t0 = Instant::now();
        let result = client.report(agent.capacity, &comps, &acks, early).await;
        stats.rtts.push(t0.elapsed().as_secs_f64());
        match result {
            Ok(resp) => {
                stats.ok += 1;
                acks.clear();
                for w in &resp.actions {
                    match w.action {
                        ActionKind::Resize { .. } => stats.resize += 1,
                        ActionKind::Evict { .. } => stats.evict += 1,
                    }
                    agent.apply(&w.action, now_s, interval.as_secs_f64());
                    acks.push(Ack {
                        action_id: w.id.clone(),
                        outcome: AckOutcome::Applied,
                    });
                }
            }
            Err(e) => {
                stats.failed += 1;
                tracing::debug!(agent = agent.index, error = %e, "report failed");
            }
        }
        next += interval;
    }
    stats
}

/// Tenant of the simulated agents' credentials.
pub const LOADGEN_TENANT: &str = "loadgen";

fn sim_agent_id(i: usize) -> String {
    format!("sim-agent-{i:05}")
}

/// Adds a credential per simulated agent to the shaper's credentials file
/// and waits for the shaper to reload it; returns the tokens.
async fn register_agents(cfg: &LoadgenConfig, now_s: f64) -> Result<Vec<Token>, ClusterError> {
    let path = cfg.credentials_file.as_ref().ok_or_else(|| {
        ClusterError::Credentials(
            "loadgen needs the shaper's credentials file (--credentials-file) to register its simulated agents".into(),
        )
    })?;
    let mut file = CredentialsFile::load(path, true)?;
    file.credentials.retain(|c| c.tenant != LOADGEN_TENANT);
    let mut tokens = Vec::with_capacity(cfg.agents);
    for i in 0..cfg.agents {
        let t = file.add(&sim_agent_id(i), LOADGEN_TENANT, &[], now_s)?;
        tokens.push(Token::from_text(&t).map_err(ClusterError::Credentials)?);
    }
    file.save(path)?;
    // The shaper checks the file every second.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    Ok(tokens)
}

async fn fetch_metrics(http: &reqwest::Client, url: &str, token: &str) -> Option<String> {
    let resp = http
        .get(format!("{}/metrics", url.trim_end_matches('/')))
        .bearer_auth(token)
        .send()
        .await
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    resp.text().await.ok()
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Runs the load and returns what it measured.
pub async fn run(cfg: &LoadgenConfig) -> Result<LoadgenReport, ClusterError> {
    cfg.validate()?;
    let token = read_token_file(&cfg.token_file)?;
    let mut ccfg = ClusterClientConfig::new(cfg.url.clone(), cfg.token_file.clone());
    ccfg.ca_cert_file = cfg.ca_cert_file.clone();
    ccfg.timeout_s = 30.0;
    ccfg.agent_id = Some("loadgen".into());
    ccfg.encoding = cfg.encoding;
    let base = ClusterClient::new(&ccfg)?;
    let http = reqwest::Client::builder()
        .use_rustls_tls()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| ClusterError::Client(e.to_string()))?;
    let before = fetch_metrics(&http, &cfg.url, token.expose()).await;
    let cpu_before = before
        .as_deref()
        .and_then(|t| sample(t, "process_cpu_seconds_total"));
    let interval = Duration::from_secs_f64(cfg.interval_s);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(cfg.duration_s);
    let now_s = tailor_core::Clock::now_s(&tailor_core::SystemClock);
    let mut tasks = Vec::with_capacity(cfg.agents);
    let base = Arc::new(base);
    let tokens = register_agents(cfg, now_s).await?;
    for (i, token) in tokens.into_iter().enumerate() {
        let agent = SimAgent::new(i, cfg, now_s);
        let client = base.with_identity(sim_agent_id(i), token);
        let offset = interval.mul_f64(i as f64 / cfg.agents as f64);
        // spread over the interval, as the agents' offsets are
        let early = (i * cfg.early_agents) % cfg.agents < cfg.early_agents;
        tasks.push(tokio::spawn(run_agent(
            agent, client, start, offset, interval, deadline, early,
        )));
    }
    let mut rtts = Vec::new();
    let mut report = LoadgenReport {
        agents: cfg.agents,
        containers: cfg.agents * cfg.containers_per_agent,
        ..Default::default()
    };
    for t in tasks {
        match t.await {
            Ok(s) => {
                report.reports_ok += s.ok;
                report.reports_failed += s.failed;
                report.actions_resize += s.resize;
                report.actions_evict += s.evict;
                rtts.extend(s.rtts);
            }
            Err(e) => tracing::error!(error = %e, "simulated agent task failed"),
        }
    }
    report.duration_s = start.elapsed().as_secs_f64();
    rtts.sort_by(f64::total_cmp);
    report.report_rtt_p50_s = quantile(&rtts, 0.5);
    report.report_rtt_p99_s = quantile(&rtts, 0.99);
    report.report_rtt_max_s = rtts.last().copied().unwrap_or(0.0);
    if let Some(text) = fetch_metrics(&http, &cfg.url, token.expose()).await {
        report.server_rounds = sample(&text, "tailor_shaper_rounds_total").unwrap_or(0.0);
        report.server_early_rounds =
            sample(&text, "tailor_shaper_early_rounds_total").unwrap_or(0.0);
        report.server_round_p50_s = sample(
            &text,
            "tailor_shaper_round_duration_quantile_seconds{quantile=\"0.5\"}",
        );
        report.server_round_p99_s = sample(
            &text,
            "tailor_shaper_round_duration_quantile_seconds{quantile=\"0.99\"}",
        );
        report.server_round_max_s = sample(
            &text,
            "tailor_shaper_round_duration_quantile_seconds{quantile=\"1\"}",
        );
        report.server_agents_live = sample(&text, "tailor_shaper_agents{state=\"live\"}");
        report.server_agents_stale = sample(&text, "tailor_shaper_agents{state=\"stale\"}");
        report.server_components = sample(&text, "tailor_shaper_components");
        report.server_rss_bytes = sample(&text, "process_resident_memory_bytes");
        report.server_max_rss_bytes = sample(&text, "process_max_resident_memory_bytes");
        if let (Some(a), Some(b)) = (cpu_before, sample(&text, "process_cpu_seconds_total")) {
            report.server_cpu_cores = Some((b - a) / report.duration_s.max(1e-9));
        }
    }
    // after the metrics: the shaper forgets agents without a credential
    // (its view's gauges would read 0 once it reloads the file)
    if let Some(path) = &cfg.credentials_file {
        let mut file = CredentialsFile::load(path, true)?;
        file.credentials.retain(|c| c.tenant != LOADGEN_TENANT);
        file.save(path)?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_targets() {
        assert!(is_loopback_url("http://127.0.0.1:9848"));
        assert!(is_loopback_url("https://localhost:1"));
        assert!(is_loopback_url("http://[::1]:9848"));
        assert!(is_loopback_url("http://127.3.4.5"));
        assert!(!is_loopback_url("http://10.0.0.1:9848"));
        assert!(!is_loopback_url("http://example.com"));
        assert!(!is_loopback_url("ftp://127.0.0.1"));
        let cfg = LoadgenConfig {
            url: "http://192.168.1.1:9848".into(),
            ..LoadgenConfig::default()
        };
        assert!(cfg.validate().is_err());
        assert!(LoadgenConfig::default().validate().is_ok());
        let early = |n| LoadgenConfig {
            agents: 10,
            early_agents: n,
            ..LoadgenConfig::default()
        };
        assert!(early(10).validate().is_ok());
        let e = early(11)
            .validate()
            .expect_err("more early agents than agents");
        assert_eq!(e.keys(), vec!["early_agents"]);
    }

    #[test]
    fn simulated_agents_span_apps_across_hosts() {
        let cfg = LoadgenConfig {
            agents: 6,
            containers_per_agent: 20,
            ..LoadgenConfig::default()
        };
        let a0 = SimAgent::new(0, &cfg, 10_000.0);
        let a2 = SimAgent::new(2, &cfg, 10_000.0);
        let a3 = SimAgent::new(3, &cfg, 10_000.0);
        assert_eq!(
            a0.containers[0].app, a2.containers[0].app,
            "agents 0..3 share apps"
        );
        assert_ne!(a0.containers[0].app, a3.containers[0].app);
        let mut a = a0;
        let comps = a.step(10_000.0);
        assert_eq!(comps.len(), 20);
        let report = protocol::ReportRequest {
            agent_id: "x".into(),
            boot_id: 1,
            seq: 1,
            capacity: a.capacity,
            components: comps,
            acks: vec![],
            mentions: false,
            early: false,
        };
        assert!(report.validate(100).is_ok());
        let id = report.components[3].container_id.clone();
        a.apply(
            &ActionKind::Evict {
                container_id: id.clone(),
                whole_app: false,
            },
            10_000.0,
            10.0,
        );
        assert_eq!(a.step(10_010.0).len(), 19, "evicted container is down");
        let back = a.step(10_031.0);
        assert_eq!(back.len(), 20, "and comes back");
        assert!(back.iter().all(|c| c.container_id != id), "under a new id");
    }
}

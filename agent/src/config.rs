//! `agent.toml`: the agent's configuration.
//!
//! Every key has a default, so an empty file (or a snippet written by
//! `tailor tune`, which holds only a `[shaper]` table with `k1` and `k2`) is
//! a valid configuration. Unknown keys are errors. [`check_toml`] reports
//! every problem of a file at once, each with its dotted key path (see
//! [`AgentConfig::validate`] for the accepted ranges).
//!
//! ```toml
//! mode = "standalone"        # or "cluster" (needs [cluster])
//! actuation = "recommend"    # default; "shape" applies the plan
//! manage_unlimited = false   # containers started without a CPU or memory limit are
//!                            # reported, never limited or evicted (true: the agent may
//!                            # set limits on them; Docker cannot remove a limit again:
//!                            # on shutdown they get the most permissive one)
//! # unlimited_request_cpu_cores = 0.5      # request of a container without a CPU
//! # unlimited_request_mem_bytes = 268435456 # / memory limit; default: its highest use seen
//! interval_s = 10.0          # sampling / shaping period
//! mem_watch_s = 1.0          # shape mode: read memory every 1 s between rounds and
//!                            # run the round early when a container has used half
//!                            # its headroom since the last one (0: off)
//! warmup_rounds = 3          # the agent's first rounds only sample (no actions)
//! docker_socket = "/var/run/docker.sock"
//! state_file = "/var/lib/tailor/agent-state.json"   # original limits, evictions
//! host_lock = "/run/tailor/agent.lock"   # one shaping agent per host ("": no check)
//! stop_grace_s = 10          # SIGTERM -> SIGKILL delay of an eviction
//! restart_evicted = true     # restart evicted containers when room returns, and
//!                            # those OOM-killed at a cut below their request
//!                            # with no restart policy (their limits restored)
//! restart_cooldown_s = 30.0  # no restart sooner than this after the stop
//! reinspect_every = 6        # re-read limits of every container every 6 rounds
//! on_shutdown = "restore_requests"   # or "keep_current"
//! journal_max_bytes = 16777216       # decision journal decisions.jsonl (+ .1) beside state_file
//!
//! [capacity]                 # default: what Docker reports (NCPU, MemTotal)
//! cpu_cores = 2.0
//! mem_bytes = 4294967296
//! reserved_cpu_cores = 0.0   # kept back for the system
//! reserved_mem_bytes = 0
//!
//! [selector]
//! require_enable_label = true     # only containers labelled tailor.enable=true
//! labels = { team = "batch" }     # ... that also carry all of these labels
//!
//! [http]
//! listen = "127.0.0.1:9847"  # "" disables the endpoint
//! container_metrics = false  # per-container recommendation gauges on /metrics
//! max_container_series = 50  # ... for at most this many containers
//!
//! [runtime]
//! kind = "docker"            # or "podman": Podman's Docker-compatible API
//!                            #   (`podman system service`); see agent/PODMAN.md
//! # socket = "/run/podman/podman.sock"   # default: docker_socket for docker,
//!                            #   /run/podman/podman.sock for podman
//!
//! [record]                   # record what the agent sees and decides, for
//! enabled = false            #   `tailor replay --workload recorded:PATH [--check-parity]`
//! # path = "/var/lib/tailor/recording.jsonl.gz"   # default: beside state_file
//! max_bytes = 268435456      # gzip bytes; the recording stops there
//!                            # (each start keeps the last run's file as
//!                            # recording.<unix s>.jsonl.gz, the newest 10)
//!
//! [shaper]                   # the sizing kernel's config (the agent caps
//!                            # max_evictions_per_round at 1 when absent; set it to go higher), the same table as in the
//!                            # simulator and the central shaper: k1, k2, policy, floors
//!                            # (min_mem_bytes >= 6 MiB, min_cpu_cores >= 0.01 here:
//!                            # Docker's minimums), horizon_samples, min_history_samples,
//!                            # the OOM floor (oom_bump_bytes, oom_bump_factor, oom_memory_s)
//! [forecaster]               # forecaster::config::ModelConfig (kind, ...)
//! [cluster]                  # cluster mode only: shaper URL, token file, ...
//! ```

use crate::cluster::ClusterClientConfig;
use crate::toml_check::{check_value, leaf, parse_text, probe, Schema};
use forecaster::config::ModelConfig;
use serde::{Deserialize, Serialize};
use shaper::ShaperConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
pub use tailor_core::{ConfigError, ConfigErrors, MAX_INTERVAL_S, MIN_INTERVAL_S};

/// Default configuration file.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/tailor/agent.toml";
/// Default HTTP listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9847";

/// Standalone (shape this node alone) or cluster (ask a central shaper).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Standalone,
    Cluster,
}

impl Mode {
    pub fn as_str(&self) -> &'static str {
        match self {
            Mode::Standalone => "standalone",
            Mode::Cluster => "cluster",
        }
    }
}

/// Apply the plan (`shape`) or only compute, log and export it (`recommend`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actuation {
    Shape,
    /// The default: nothing changes on the host until `shape` is chosen.
    #[default]
    Recommend,
}

impl Actuation {
    pub fn as_str(&self) -> &'static str {
        match self {
            Actuation::Shape => "shape",
            Actuation::Recommend => "recommend",
        }
    }
}

/// What the agent leaves behind on SIGTERM. Either way every running
/// container keeps running.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShutdownPolicy {
    /// Put every shaped container, running or stopped, back to its request
    /// (the limits it was started with). A container the agent never
    /// resized gets no update. Docker cannot remove a limit: a resource
    /// started without a limit that the agent limited gets the most
    /// permissive one (memory: the kernel's highest, no limit in effect;
    /// CPU: every core of the host).
    #[default]
    RestoreRequests,
    /// Leave the current (forecast + buffer) allocations in place.
    KeepCurrent,
}

/// The node's capacity; absent values come from Docker (NCPU, MemTotal).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CapacityConfig {
    pub cpu_cores: Option<f64>,
    pub mem_bytes: Option<f64>,
    /// Subtracted from the capacity (system daemons, the agent itself).
    pub reserved_cpu_cores: f64,
    pub reserved_mem_bytes: f64,
}

/// Which containers the agent manages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelectorConfig {
    /// Require the opt-in label `tailor.enable=true`. Default true.
    pub require_enable_label: bool,
    /// Labels every managed container must carry (`key = "value"`).
    pub labels: BTreeMap<String, String>,
}

impl Default for SelectorConfig {
    fn default() -> Self {
        Self {
            require_enable_label: true,
            labels: BTreeMap::new(),
        }
    }
}

impl SelectorConfig {
    /// The label filter to list managed containers with.
    pub fn label_filter(&self) -> BTreeMap<String, String> {
        let mut f = self.labels.clone();
        if self.require_enable_label {
            f.insert(crate::labels::ENABLE.to_string(), "true".to_string());
        }
        f
    }

    /// True when a container with these labels is managed.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.label_filter()
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
    }
}

/// The HTTP endpoint (/metrics, /healthz, /v1/decisions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// `host:port`; empty disables the endpoint. Default 127.0.0.1:9847.
    pub listen: String,
    /// Per-container recommendation gauges on `/metrics`
    /// (`tailor_agent_recommendation`). Default false.
    pub container_metrics: bool,
    /// At most this many containers get gauges (the first by name).
    /// Default 50.
    pub max_container_series: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN.to_string(),
            container_metrics: false,
            max_container_series: 50,
        }
    }
}

/// The whole agent configuration (`agent.toml`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    pub mode: Mode,
    pub actuation: Actuation,
    /// Sampling and shaping period in seconds. Default 10.
    pub interval_s: f64,
    /// Shape mode: between rounds, every this many seconds,
    /// read each shaped container's memory from its cgroup and run the
    /// next round at once when one has used more than half the headroom
    /// it had at the last round (`agent::watch`). Default 1; 0 turns the
    /// watch off (rounds only every `interval_s`).
    pub mem_watch_s: f64,
    /// The agent's first rounds only sample (no plan, no action). Default 3.
    pub warmup_rounds: u32,
    /// Node name in reports; default: Docker's host name.
    pub node_name: Option<String>,
    pub docker_socket: PathBuf,
    /// Where original limits and pending evictions survive an agent
    /// restart; `""` keeps them in memory only.
    pub state_file: PathBuf,
    /// One shaping agent per host: an agent with `actuation = "shape"`
    /// holds an exclusive lock on this file while it runs, and a second one
    /// with the same file is refused at start (`crate::lock`). Default
    /// `/run/tailor/agent.lock`; `""` turns the check off, for agents that
    /// share a host on purpose, each with its share in `[capacity]`.
    pub host_lock: PathBuf,
    pub stop_grace_s: u32,
    /// Shape mode: start again, oldest first, when its request fits, each
    /// container evicted by the agent and each OOM-killed at a limit the
    /// agent had cut below its request that no restart policy starts (its
    /// original limits are restored at the kill either way). Default true.
    pub restart_evicted: bool,
    /// No restart sooner than this after the eviction or the kill.
    pub restart_cooldown_s: f64,
    /// Re-inspect every container (limits changed by someone else) every
    /// this many rounds. Default 6.
    pub reinspect_every: u32,
    pub on_shutdown: ShutdownPolicy,
    /// Let the agent set limits on (and evict) containers started without
    /// a CPU or memory limit. Default false: they are sampled, forecast and
    /// reported, and count at what they use, never as the whole node.
    pub manage_unlimited: bool,
    /// Request of a container without a CPU limit (and no
    /// `tailor.request.cpu_cores` label); default: the most it used so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlimited_request_cpu_cores: Option<f64>,
    /// Request of a container without a memory limit (and no
    /// `tailor.request.mem_bytes` label); default: the most it used so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlimited_request_mem_bytes: Option<f64>,
    pub capacity: CapacityConfig,
    pub selector: SelectorConfig,
    pub http: HttpConfig,
    pub runtime: RuntimeConfig,
    pub record: RecordConfig,
    /// Bound of the decision journal (`decisions.jsonl` and its rotated
    /// copy under the state directory), bytes. Default 16 MiB.
    pub journal_max_bytes: u64,
    pub shaper: ShaperConfig,
    pub forecaster: ModelConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterClientConfig>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Standalone,
            actuation: Actuation::Recommend,
            interval_s: 10.0,
            mem_watch_s: 1.0,
            warmup_rounds: 3,
            node_name: None,
            docker_socket: PathBuf::from(crate::docker::DEFAULT_SOCKET),
            state_file: PathBuf::from("/var/lib/tailor/agent-state.json"),
            host_lock: PathBuf::from(crate::lock::DEFAULT_HOST_LOCK),
            stop_grace_s: 10,
            restart_evicted: true,
            restart_cooldown_s: 30.0,
            reinspect_every: 6,
            on_shutdown: ShutdownPolicy::RestoreRequests,
            manage_unlimited: false,
            unlimited_request_cpu_cores: None,
            unlimited_request_mem_bytes: None,
            capacity: CapacityConfig::default(),
            selector: SelectorConfig::default(),
            http: HttpConfig::default(),
            runtime: RuntimeConfig::default(),
            record: RecordConfig::default(),
            journal_max_bytes: 16 << 20,
            shaper: ShaperConfig {
                max_evictions_per_round: Some(DEFAULT_MAX_EVICTIONS_PER_ROUND),
                ..ShaperConfig::default()
            },
            forecaster: ModelConfig::default(),
            cluster: None,
        }
    }
}

/// The agent's eviction cap per round when `[shaper]
/// max_evictions_per_round` is absent (the kernel alone has none).
pub const DEFAULT_MAX_EVICTIONS_PER_ROUND: u32 = 1;

/// The container runtime the agent manages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    /// The Docker Engine API on `docker_socket`.
    #[default]
    Docker,
    /// Podman's Docker-compatible API (`podman system service`); resizing
    /// is probed at start, without it the agent only recommends.
    Podman,
}

impl RuntimeKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            RuntimeKind::Docker => "docker",
            RuntimeKind::Podman => "podman",
        }
    }
}

/// `[runtime]`: which runtime adapter the agent uses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    /// Default `docker`.
    pub kind: RuntimeKind,
    /// The API socket; default: `docker_socket` for docker,
    /// `/run/podman/podman.sock` for podman.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket: Option<PathBuf>,
}

impl AgentConfig {
    /// The socket of the configured runtime (`[runtime] socket`, else the
    /// kind's default).
    pub fn runtime_socket(&self) -> PathBuf {
        match (&self.runtime.socket, self.runtime.kind) {
            (Some(s), _) => s.clone(),
            (None, RuntimeKind::Docker) => self.docker_socket.clone(),
            (None, RuntimeKind::Podman) => PathBuf::from(crate::podman::DEFAULT_SOCKET),
        }
    }
}

/// `[record]`: what the agent records for replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecordConfig {
    /// Default false.
    pub enabled: bool,
    /// Default: `recording.jsonl.gz` beside `state_file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Bound of the compressed file; the recording stops there. Default 256 MiB.
    pub max_bytes: u64,
}

impl Default for RecordConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            path: None,
            max_bytes: 256 << 20,
        }
    }
}

/// Largest accepted `[record] max_bytes` (1 TiB).
pub const MAX_RECORD_BYTES: u64 = 1 << 40;
/// Longest duration setting (`restart_cooldown_s`, `oom_memory_s`): 30 days.
pub const MAX_DURATION_S: f64 = 30.0 * 86_400.0;
/// Largest byte amount of a floor, bump or capacity: 1 PiB.
pub const MAX_BYTES: u64 = 1 << 50;
/// Largest CPU amount of a floor or capacity (cores).
pub const MAX_CORES: f64 = 1.0e6;
/// Longest `node_name`.
pub const MAX_NODE_NAME_LEN: usize = 256;

impl AgentConfig {
    /// Checks every setting (including `[shaper]`, `[forecaster]` and, in
    /// cluster mode, `[cluster]`) and reports every problem at once, keys as
    /// dotted paths. Ranges (so that anything accepted runs):
    ///
    /// | key | accepted |
    /// |---|---|
    /// | `interval_s` | [0.1, 86400] |
    /// | `mem_watch_s` | 0 (off) or [0.1, 86400] |
    /// | `warmup_rounds` | [0, 10000] |
    /// | `stop_grace_s` | [0, 3600] |
    /// | `restart_cooldown_s` | [0, 2592000] (30 days) |
    /// | `shaper.min_mem_bytes` | >= 6 MiB (Docker's minimum; the kernel bounds the rest) |
    /// | `shaper.min_cpu_cores` | >= 0.01 (Docker's minimum) |
    /// | `record.max_bytes` | [64 KiB, 1 TiB] |
    /// | `reinspect_every` | [1, 1000000] |
    /// | `capacity.cpu_cores` | (0, 1e6] |
    /// | `capacity.mem_bytes` | (0, 1 PiB] |
    /// | `capacity.reserved_cpu_cores` | [0, 1e6] |
    /// | `capacity.reserved_mem_bytes` | [0, 1 PiB] |
    /// | `node_name` | 1 to 256 printable characters |
    /// | `journal_max_bytes` | [64 KiB, 1 TiB] |
    /// | `http.max_container_series` | [1, 10000] |
    /// | `unlimited_request_cpu_cores` | [0.01, 1e6] |
    /// | `unlimited_request_mem_bytes` | [6 MiB, 1 PiB] |
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        let max_bytes = MAX_BYTES as f64;
        e.range(
            "interval_s",
            self.interval_s,
            MIN_INTERVAL_S,
            MAX_INTERVAL_S,
        );
        e.range_or_off(
            "mem_watch_s",
            self.mem_watch_s,
            MIN_INTERVAL_S,
            MAX_INTERVAL_S,
        );
        e.range("warmup_rounds", self.warmup_rounds, 0, 10_000);
        e.range("stop_grace_s", self.stop_grace_s, 0, 3_600);
        e.range(
            "restart_cooldown_s",
            self.restart_cooldown_s,
            0.0,
            MAX_DURATION_S,
        );
        // The kernel's floors, against the container runtime's minimums.
        e.check(
            "shaper.min_mem_bytes",
            self.shaper.min_mem_bytes >= f64::from(6u32 << 20),
            || {
                format!(
                    "must be >= 6 MiB (Docker's minimum), got {}",
                    self.shaper.min_mem_bytes
                )
            },
        );
        e.check(
            "shaper.min_cpu_cores",
            self.shaper.min_cpu_cores >= 0.01,
            || {
                format!(
                    "must be >= 0.01 (Docker's minimum), got {}",
                    self.shaper.min_cpu_cores
                )
            },
        );
        e.range(
            "record.max_bytes",
            self.record.max_bytes,
            1 << 16,
            MAX_RECORD_BYTES,
        );
        e.check(
            "record.path",
            !self.record.enabled || self.record_path().is_some(),
            || "needed when recording with an empty state_file".to_string(),
        );
        e.range("reinspect_every", self.reinspect_every, 1, 1_000_000);
        e.range(
            "journal_max_bytes",
            self.journal_max_bytes,
            1 << 16,
            MAX_RECORD_BYTES,
        );
        e.range(
            "http.max_container_series",
            self.http.max_container_series,
            1,
            10_000,
        );
        e.check(
            "docker_socket",
            !self.docker_socket.as_os_str().is_empty(),
            || "must not be empty".into(),
        );
        if let Some(s) = &self.runtime.socket {
            e.check("runtime.socket", !s.as_os_str().is_empty(), || {
                "must not be empty".into()
            });
        }
        if let Some(n) = &self.node_name {
            e.check(
                "node_name",
                !n.is_empty() && n.len() <= MAX_NODE_NAME_LEN && !n.chars().any(char::is_control),
                || format!("must be 1 to {MAX_NODE_NAME_LEN} printable characters"),
            );
        }
        if let Some(c) = self.unlimited_request_cpu_cores {
            e.range("unlimited_request_cpu_cores", c, 0.01, MAX_CORES);
        }
        if let Some(m) = self.unlimited_request_mem_bytes {
            e.range(
                "unlimited_request_mem_bytes",
                m,
                f64::from(6u32 << 20),
                max_bytes,
            );
        }
        if let Some(c) = self.capacity.cpu_cores {
            e.check("capacity.cpu_cores", c > 0.0 && c <= MAX_CORES, || {
                format!("must be in (0, {MAX_CORES}], got {c}")
            });
        }
        if let Some(m) = self.capacity.mem_bytes {
            e.check("capacity.mem_bytes", m > 0.0 && m <= max_bytes, || {
                format!("must be in (0, {MAX_BYTES}], got {m}")
            });
        }
        e.range(
            "capacity.reserved_cpu_cores",
            self.capacity.reserved_cpu_cores,
            0.0,
            MAX_CORES,
        );
        e.range(
            "capacity.reserved_mem_bytes",
            self.capacity.reserved_mem_bytes,
            0.0,
            max_bytes,
        );
        if !self.http.listen.is_empty() {
            e.check(
                "http.listen",
                self.http.listen.parse::<std::net::SocketAddr>().is_ok(),
                || {
                    format!(
                        "must be host:port with an IP address, got {:?}",
                        self.http.listen
                    )
                },
            );
        }
        if self.selector.labels.keys().any(String::is_empty) {
            e.push("selector.labels", "label keys must not be empty");
        }
        match (self.mode, &self.cluster) {
            (Mode::Cluster, None) => {
                e.push("cluster", "mode = \"cluster\" needs a [cluster] table")
            }
            (_, Some(c)) => e.nested("cluster", c.validate()),
            _ => {}
        }
        e.nested("shaper", self.shaper.validate());
        e.nested("forecaster", self.forecaster.validate());
        e.into_result()
    }

    /// The agent's own defaults for kernel keys left absent: at most
    /// [`DEFAULT_MAX_EVICTIONS_PER_ROUND`] evictions per round. Applied when
    /// a file is loaded and by [`crate::Agent::new`], so recordings and
    /// `config check --print` show the cap in force.
    pub fn apply_agent_defaults(&mut self) {
        self.shaper
            .max_evictions_per_round
            .get_or_insert(DEFAULT_MAX_EVICTIONS_PER_ROUND);
    }

    /// The state directory (the directory of `state_file`): journal,
    /// recommendations, recording. `None` when `state_file` is empty.
    pub fn state_dir(&self) -> Option<PathBuf> {
        if self.state_file.as_os_str().is_empty() {
            return None;
        }
        self.state_file.parent().map(Path::to_path_buf)
    }

    /// Where the recording goes: `[record] path`, else beside `state_file`
    /// (`None` when neither is set).
    pub fn record_path(&self) -> Option<PathBuf> {
        self.record.path.clone().or_else(|| {
            let dir = self.state_file.parent()?;
            (!self.state_file.as_os_str().is_empty()).then(|| dir.join("recording.jsonl.gz"))
        })
    }

    /// Checks what the agent will read at start-up besides this file, as
    /// the agent reads it: in cluster mode the token file (exists, readable,
    /// a regular file, not readable or writable by group or others, holds a
    /// token) and the CA certificate file (readable, non-empty).
    pub fn check_files(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        if let Some(c) = &self.cluster {
            if !c.token_file.as_os_str().is_empty() {
                if let Err(err) = crate::cluster::auth::read_token_file(&c.token_file) {
                    e.push("cluster.token_file", err.to_string());
                }
            }
            if let Some(ca) = &c.ca_cert_file {
                match std::fs::metadata(ca) {
                    Err(err) => e.push(
                        "cluster.ca_cert_file",
                        format!("cannot read {}: {err}", ca.display()),
                    ),
                    Ok(m) if !m.is_file() || m.len() == 0 => e.push(
                        "cluster.ca_cert_file",
                        format!("{} is not a non-empty file", ca.display()),
                    ),
                    Ok(_) => {}
                }
            }
        }
        e.into_result()
    }

    /// Reads and merges config files (later files override earlier ones,
    /// table by table), then checks and validates. All problems of all files
    /// at once; a file that cannot be read or parsed is one error with an
    /// empty key whose message names the file.
    pub fn load(paths: &[PathBuf]) -> Result<AgentConfig, ConfigErrors> {
        let mut merged = toml::Table::new();
        let mut errors = ConfigErrors::new();
        for p in paths {
            match read_config_text(p) {
                Ok(text) => match parse_text(&text) {
                    Ok(t) => merge_tables(&mut merged, t),
                    Err(e) => {
                        for one in e {
                            errors.push("", format!("{}: {}", p.display(), one.message));
                        }
                    }
                },
                Err(message) => errors.push("", message),
            }
        }
        errors.into_result()?;
        check_table(&merged, false)
    }
}

/// Largest configuration file read (bytes).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a configuration file of at most [`MAX_CONFIG_BYTES`]; the error
/// names the file.
pub fn read_config_text(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let f =
        std::fs::File::open(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let mut text = String::new();
    f.take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(format!(
            "{}: larger than {MAX_CONFIG_BYTES} bytes",
            path.display()
        ));
    }
    Ok(text)
}

/// Deep-merges `over` into `base` (tables merge, other values replace).
pub fn merge_tables(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_tables(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Checks one TOML text (syntax, unknown keys, types, missing keys, values)
/// and reports every problem at once with its dotted key path.
pub fn check_toml(text: &str) -> Result<AgentConfig, ConfigErrors> {
    check_table(&parse_text(text)?, false)
}

/// As [`check_toml`], with the files' errors ([`AgentConfig::check_files`])
/// in the same list: what `tailor config check` reports for one file.
pub fn check_toml_and_files(text: &str) -> Result<AgentConfig, ConfigErrors> {
    check_table(&parse_text(text)?, true)
}

static CAPACITY: Schema = leaf(probe::<CapacityConfig>);
static SELECTOR: Schema = leaf(probe::<SelectorConfig>);
static HTTP: Schema = leaf(probe::<HttpConfig>);
static RUNTIME: Schema = leaf(probe::<RuntimeConfig>);
static RECORD: Schema = leaf(probe::<RecordConfig>);
static SHAPER: Schema = leaf(probe::<ShaperConfig>);
static FAIL_SAFE: Schema = leaf(probe::<crate::cluster::FailSafeConfig>);
static CLUSTER: Schema = Schema {
    probe: probe::<ClusterClientConfig>,
    tables: &[("fail_safe", &FAIL_SAFE)],
};
static CALIBRATION: Schema = leaf(probe::<forecaster::CalibrationConfig>);
static ARIMA: Schema = leaf(probe::<forecaster::arima::ArimaConfig>);
static GP: Schema = leaf(probe::<forecaster::GpConfig>);
static PEAK: Schema = leaf(probe::<forecaster::PeakConfig>);
static VPA: Schema = leaf(probe::<forecaster::vpa::VpaRecommenderConfig>);
static VPA_SIMPLE: Schema = leaf(probe::<forecaster::VpaConfig>);
/// The `[forecaster]` table's shape (also used by the shaper and sim checks).
pub static FORECASTER: Schema = Schema {
    probe: probe::<ModelConfig>,
    tables: &[
        ("calibration", &CALIBRATION),
        ("arima", &ARIMA),
        ("gp", &GP),
        ("peak", &PEAK),
        ("vpa", &VPA),
        ("vpa_simple", &VPA_SIMPLE),
    ],
};
/// `agent.toml`'s shape.
pub static AGENT: Schema = Schema {
    probe: probe::<AgentConfig>,
    tables: &[
        ("capacity", &CAPACITY),
        ("selector", &SELECTOR),
        ("http", &HTTP),
        ("runtime", &RUNTIME),
        ("record", &RECORD),
        ("shaper", &SHAPER),
        ("forecaster", &FORECASTER),
        ("cluster", &CLUSTER),
    ],
};

fn check_table(table: &toml::Table, files: bool) -> Result<AgentConfig, ConfigErrors> {
    let mut checked = check_value::<AgentConfig>(table, &AGENT);
    let Some(mut cfg) = checked.config.take() else {
        return Err(checked.errors);
    };
    cfg.apply_agent_defaults();
    checked.add_validation(cfg.validate());
    if files {
        checked.add_validation(cfg.check_files());
    }
    checked.errors.into_result().map(|()| cfg)
}

#[cfg(test)]
mod tests;

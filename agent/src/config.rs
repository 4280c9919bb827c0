//! `agent.toml`: the agent's configuration.
//!
//! Every key has a default, so an empty file (or a snippet written by
//! `tailor tune`, which holds only a `[shaper]` table with `k1` and `k2`) is
//! a valid configuration. Unknown keys are errors. [`check_toml`] reports
//! every problem of a file at once, each with its key.
//!
//! ```toml
//! mode = "standalone"        # or "cluster" (needs [cluster])
//! actuation = "shape"        # or "recommend": compute and export, change nothing
//! interval_s = 10.0          # sampling / shaping period
//! warmup_rounds = 3          # the agent's first rounds only sample (no actions)
//! docker_socket = "/var/run/docker.sock"
//! state_file = "/var/lib/tailor/agent-state.json"   # original limits, evictions
//! stop_grace_s = 10          # SIGTERM -> SIGKILL delay of an eviction
//! restart_evicted = true     # restart evicted containers when room returns
//! restart_cooldown_s = 30.0  # no restart sooner than this after the eviction
//! reinspect_every = 6        # re-read limits of every container every 6 rounds
//! on_shutdown = "restore_requests"   # or "keep_current"
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
//!
//! [runtime]
//! kind = "docker"            # the runtime adapter (Docker Engine API on docker_socket)
//!
//! [record]                   # record what the agent sees and decides, for
//! enabled = false            #   `tailor replay --workload recorded:PATH [--check-parity]`
//! # path = "/var/lib/tailor/recording.jsonl.gz"   # default: beside state_file
//! max_bytes = 268435456      # gzip bytes; the recording stops there
//!
//! [shaper]                   # the sizing kernel's config, the same table as in the
//!                            # simulator and the central shaper: k1, k2, policy, floors
//!                            # (min_mem_bytes >= 6 MiB, min_cpu_cores >= 0.01 here:
//!                            # Docker's minimums), horizon_samples, min_history_samples,
//!                            # the OOM floor (oom_bump_bytes, oom_bump_factor, oom_memory_s)
//! [forecaster]               # forecaster::config::ModelConfig (kind, ...)
//! [cluster]                  # cluster mode only: shaper URL, token file, ...
//! ```

use crate::cluster::ClusterClientConfig;
use forecaster::config::ModelConfig;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use shaper::ShaperConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    #[default]
    Shape,
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
    /// Put every shaped container back to its request (the limits it was
    /// started with; an unlimited resource gets the node's capacity).
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
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN.to_string(),
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
    /// Forecast the peak over this many future samples. Default 6 (1 min).
    /// A container needs this many samples before it gets a forecast.
    /// Default 3.
    /// The agent's first rounds only sample (no plan, no action). Default 3.
    pub warmup_rounds: u32,
    /// Node name in reports; default: Docker's host name.
    pub node_name: Option<String>,
    pub docker_socket: PathBuf,
    /// Where original limits and pending evictions survive an agent
    /// restart; `""` keeps them in memory only.
    pub state_file: PathBuf,
    pub stop_grace_s: u32,
    pub restart_evicted: bool,
    pub restart_cooldown_s: f64,
    /// Re-inspect every container (limits changed by someone else) every
    /// this many rounds. Default 6.
    pub reinspect_every: u32,
    pub on_shutdown: ShutdownPolicy,
    pub capacity: CapacityConfig,
    pub selector: SelectorConfig,
    pub http: HttpConfig,
    pub runtime: RuntimeConfig,
    pub record: RecordConfig,
    pub shaper: ShaperConfig,
    pub forecaster: ModelConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterClientConfig>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Standalone,
            actuation: Actuation::Shape,
            interval_s: 10.0,
            warmup_rounds: 3,
            node_name: None,
            docker_socket: PathBuf::from(crate::docker::DEFAULT_SOCKET),
            state_file: PathBuf::from("/var/lib/tailor/agent-state.json"),
            stop_grace_s: 10,
            restart_evicted: true,
            restart_cooldown_s: 30.0,
            reinspect_every: 6,
            on_shutdown: ShutdownPolicy::RestoreRequests,
            capacity: CapacityConfig::default(),
            selector: SelectorConfig::default(),
            http: HttpConfig::default(),
            runtime: RuntimeConfig::default(),
            record: RecordConfig::default(),
            shaper: ShaperConfig::default(),
            forecaster: ModelConfig::default(),
            cluster: None,
        }
    }
}

/// The container runtime the agent manages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    /// The Docker Engine API on `docker_socket`.
    #[default]
    Docker,
}

/// `[runtime]`: which runtime adapter the agent uses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    /// Default `docker`.
    pub kind: RuntimeKind,
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

impl AgentConfig {
    /// Where the recording goes: `[record] path`, else beside `state_file`
    /// (`None` when neither is set).
    pub fn record_path(&self) -> Option<PathBuf> {
        self.record.path.clone().or_else(|| {
            let dir = self.state_file.parent()?;
            (!self.state_file.as_os_str().is_empty()).then(|| dir.join("recording.jsonl.gz"))
        })
    }
}

/// One configuration problem: the file, the key and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigIssue {
    /// The file, when the problem came from one.
    pub file: Option<PathBuf>,
    /// Dotted key (`shaper.k1`), or `""` for the whole file.
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(p) = &self.file {
            write!(f, "{}: ", p.display())?;
        }
        if self.key.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

/// Every problem found, all at once.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ConfigIssues(pub Vec<ConfigIssue>);

impl std::fmt::Display for ConfigIssues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} configuration error(s)", self.0.len())?;
        for i in &self.0 {
            write!(f, "\n  {i}")?;
        }
        Ok(())
    }
}

impl AgentConfig {
    /// Checks every setting (including `[shaper]`, `[forecaster]` and, in
    /// cluster mode, `[cluster]`) and reports every problem at once.
    pub fn validate(&self) -> Result<(), ConfigIssues> {
        let mut issues = Vec::new();
        let mut check = |key: &str, ok: bool, message: String| {
            if !ok {
                issues.push(ConfigIssue {
                    file: None,
                    key: key.to_string(),
                    message,
                });
            }
        };
        let pos = |x: f64| x.is_finite() && x > 0.0;
        let nonneg = |x: f64| x.is_finite() && x >= 0.0;
        check(
            "interval_s",
            pos(self.interval_s) && self.interval_s >= 0.1,
            format!("must be >= 0.1 seconds, got {}", self.interval_s),
        );
        check(
            "restart_cooldown_s",
            nonneg(self.restart_cooldown_s),
            format!("must be >= 0, got {}", self.restart_cooldown_s),
        );
        // The kernel's floors, against the container runtime's minimums.
        check(
            "shaper.min_mem_bytes",
            self.shaper.min_mem_bytes >= f64::from(6u32 << 20),
            format!(
                "must be >= 6 MiB (Docker's minimum), got {}",
                self.shaper.min_mem_bytes
            ),
        );
        check(
            "shaper.min_cpu_cores",
            self.shaper.min_cpu_cores.is_finite() && self.shaper.min_cpu_cores >= 0.01,
            format!(
                "must be >= 0.01 (Docker's minimum), got {}",
                self.shaper.min_cpu_cores
            ),
        );
        check(
            "record.max_bytes",
            (1 << 16..=MAX_RECORD_BYTES).contains(&self.record.max_bytes),
            format!(
                "must be in 64 KiB..=1 TiB, got {}",
                self.record.max_bytes
            ),
        );
        check(
            "record.path",
            !self.record.enabled || self.record_path().is_some(),
            "needed when recording with an empty state_file".into(),
        );
        check(
            "reinspect_every",
            self.reinspect_every >= 1,
            "must be >= 1".into(),
        );
        check(
            "docker_socket",
            !self.docker_socket.as_os_str().is_empty(),
            "must not be empty".into(),
        );
        if let Some(c) = self.capacity.cpu_cores {
            check(
                "capacity.cpu_cores",
                pos(c),
                format!("must be > 0, got {c}"),
            );
        }
        if let Some(m) = self.capacity.mem_bytes {
            check(
                "capacity.mem_bytes",
                pos(m),
                format!("must be > 0, got {m}"),
            );
        }
        check(
            "capacity.reserved_cpu_cores",
            nonneg(self.capacity.reserved_cpu_cores),
            "must be >= 0".into(),
        );
        check(
            "capacity.reserved_mem_bytes",
            nonneg(self.capacity.reserved_mem_bytes),
            "must be >= 0".into(),
        );
        if !self.http.listen.is_empty() {
            check(
                "http.listen",
                self.http.listen.parse::<std::net::SocketAddr>().is_ok(),
                format!(
                    "must be host:port with an IP address, got {:?}",
                    self.http.listen
                ),
            );
        }
        for k in self.selector.labels.keys() {
            check(
                "selector.labels",
                !k.is_empty(),
                "label keys must not be empty".into(),
            );
        }
        match (self.mode, &self.cluster) {
            (Mode::Cluster, None) => check(
                "cluster",
                false,
                "mode = \"cluster\" needs a [cluster] table".into(),
            ),
            (_, Some(c)) => {
                if let Err(e) = c.validate() {
                    for err in e.errors {
                        check(&format!("cluster.{}", err.key), false, err.message);
                    }
                }
            }
            _ => {}
        }
        if let Err(e) = self.shaper.validate() {
            for err in e.errors {
                check(&format!("shaper.{}", err.key), false, err.message);
            }
        }
        if let Err(e) = self.forecaster.validate() {
            check("forecaster", false, e.to_string());
        }
        if issues.is_empty() {
            Ok(())
        } else {
            Err(ConfigIssues(issues))
        }
    }

    /// Reads and merges config files (later files override earlier ones,
    /// table by table), then validates. All problems of all files at once.
    pub fn load(paths: &[PathBuf]) -> Result<AgentConfig, ConfigIssues> {
        let mut merged = toml::Table::new();
        let mut issues = Vec::new();
        for p in paths {
            match std::fs::read_to_string(p) {
                Ok(text) => match text.parse::<toml::Table>() {
                    Ok(t) => merge_tables(&mut merged, t),
                    Err(e) => issues.push(ConfigIssue {
                        file: Some(p.clone()),
                        key: String::new(),
                        message: e.to_string(),
                    }),
                },
                Err(e) => issues.push(ConfigIssue {
                    file: Some(p.clone()),
                    key: String::new(),
                    message: format!("cannot read: {e}"),
                }),
            }
        }
        if !issues.is_empty() {
            return Err(ConfigIssues(issues));
        }
        let file = if paths.len() == 1 {
            paths.first().cloned()
        } else {
            None
        };
        check_table(&merged, file.as_deref())
    }
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

/// Checks one TOML text (syntax, unknown keys, types, values) and reports
/// every problem at once with its key. `file` only labels the issues.
pub fn check_toml(text: &str, file: Option<&Path>) -> Result<AgentConfig, ConfigIssues> {
    match text.parse::<toml::Table>() {
        Ok(t) => check_table(&t, file),
        Err(e) => Err(ConfigIssues(vec![ConfigIssue {
            file: file.map(Path::to_path_buf),
            key: String::new(),
            message: e.to_string().trim().to_string(),
        }])),
    }
}

/// Sub-tables checked key by key (so every bad key in them is reported).
const SUB_TABLES: [&str; 8] = [
    "runtime",
    "capacity",
    "selector",
    "http",
    "record",
    "shaper",
    "forecaster",
    "cluster",
];

fn check_table(table: &toml::Table, file: Option<&Path>) -> Result<AgentConfig, ConfigIssues> {
    let mut issues = Vec::new();
    let mut good = toml::Table::new();
    for (k, v) in table {
        let mut errs = Vec::new();
        if SUB_TABLES.contains(&k.as_str()) {
            if let toml::Value::Table(sub) = v {
                let bad = match k.as_str() {
                    "capacity" => bad_keys::<CapacityConfig>(sub),
                    "selector" => bad_keys::<SelectorConfig>(sub),
                    "http" => bad_keys::<HttpConfig>(sub),
                    "record" => bad_keys::<RecordConfig>(sub),
                    "runtime" => bad_keys::<RuntimeConfig>(sub),
                    "shaper" => bad_keys::<ShaperConfig>(sub),
                    "forecaster" => bad_keys::<ModelConfig>(sub),
                    _ => bad_keys::<ClusterClientConfig>(sub),
                };
                errs.extend(bad.into_iter().map(|(sk, m)| (format!("{k}.{sk}"), m)));
            }
        }
        if errs.is_empty() {
            let mut one = toml::Table::new();
            one.insert(k.clone(), v.clone());
            if let Err(e) = AgentConfig::deserialize(toml::Value::Table(one)) {
                errs.push((k.clone(), clean_message(&e.to_string())));
            }
        }
        if errs.is_empty() {
            good.insert(k.clone(), v.clone());
        }
        issues.extend(errs.into_iter().map(|(key, message)| ConfigIssue {
            file: file.map(Path::to_path_buf),
            key,
            message,
        }));
    }
    let cfg = match AgentConfig::deserialize(toml::Value::Table(good)) {
        Ok(c) => c,
        Err(e) => {
            // a combination of individually valid keys (e.g. missing required
            // field inside a table): report it on the whole file
            issues.push(ConfigIssue {
                file: file.map(Path::to_path_buf),
                key: String::new(),
                message: clean_message(&e.to_string()),
            });
            return Err(ConfigIssues(issues));
        }
    };
    if let Err(ConfigIssues(v)) = cfg.validate() {
        issues.extend(v.into_iter().map(|i| ConfigIssue {
            file: file.map(Path::to_path_buf),
            ..i
        }));
    }
    if issues.is_empty() {
        Ok(cfg)
    } else {
        Err(ConfigIssues(issues))
    }
}

/// Keys of `table` that `T` rejects on their own (unknown key, bad type).
/// Fields without defaults are reported by the whole-table pass instead.
fn bad_keys<T: DeserializeOwned>(table: &toml::Table) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in table {
        let mut one = toml::Table::new();
        one.insert(k.clone(), v.clone());
        if let Err(e) = T::deserialize(toml::Value::Table(one)) {
            let msg = clean_message(&e.to_string());
            // required fields are checked on the whole table afterwards
            if !msg.contains("missing field") {
                out.push((k.clone(), msg));
            }
        }
    }
    out
}

fn clean_message(m: &str) -> String {
    m.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_default() {
        let c = check_toml("", None).expect("valid");
        assert_eq!(c, AgentConfig::default());
        assert_eq!(c.interval_s, 10.0);
        assert_eq!(c.http.listen, "127.0.0.1:9847");
    }

    #[test]
    fn tune_snippet_is_accepted() {
        let c = check_toml(
            "# written by tailor tune\n[shaper]\nk1 = 0.1\nk2 = 2.0\n",
            None,
        )
        .expect("valid");
        assert_eq!(c.shaper.k1, 0.1);
        assert_eq!(c.shaper.k2, 2.0);
    }

    #[test]
    fn every_error_at_once_with_keys() {
        let text = r#"
interval_s = -1
bogus = 3
actuation = "yolo"
[capacity]
cpu_cores = "two"
extra = 1
[shaper]
k1 = -0.5
nope = true
[http]
listen = "not an address"
"#;
        let err = check_toml(text, Some(Path::new("/tmp/a.toml"))).expect_err("invalid");
        let keys: Vec<&str> = err.0.iter().map(|i| i.key.as_str()).collect();
        for want in [
            "interval_s",
            "bogus",
            "actuation",
            "capacity.cpu_cores",
            "capacity.extra",
            "shaper.nope",
            "http.listen",
        ] {
            assert!(keys.contains(&want), "missing {want} in {keys:?}");
        }
        assert!(err
            .0
            .iter()
            .all(|i| i.file.as_deref() == Some(Path::new("/tmp/a.toml"))));
        // shaper.k1 is a value error found by validate() once the unknown key is reported
        // (the table is dropped as a whole when it has unknown keys)
        let err2 = check_toml("[shaper]\nk1 = -0.5\nk2 = -1\n", None).expect_err("invalid");
        let keys2: Vec<&str> = err2.0.iter().map(|i| i.key.as_str()).collect();
        assert!(
            keys2.contains(&"shaper.k1") && keys2.contains(&"shaper.k2"),
            "{keys2:?}"
        );
    }

    #[test]
    fn syntax_error_is_reported() {
        let err = check_toml("interval_s = = 3", None).expect_err("invalid");
        assert_eq!(err.0.len(), 1);
    }

    #[test]
    fn cluster_mode_needs_cluster_table() {
        let err = check_toml("mode = \"cluster\"", None).expect_err("invalid");
        assert!(err.0.iter().any(|i| i.key == "cluster"));
    }

    #[test]
    fn merge_overrides_table_by_table() {
        let mut a: toml::Table = "interval_s = 5.0\n[shaper]\nk1 = 0.2\ngrace_period_s = 10.0"
            .parse()
            .expect("toml");
        let b: toml::Table = "[shaper]\nk1 = 0.3".parse().expect("toml");
        merge_tables(&mut a, b);
        let c = check_table(&a, None).expect("valid");
        assert_eq!(
            (c.interval_s, c.shaper.k1, c.shaper.grace_period_s),
            (5.0, 0.3, 10.0)
        );
    }

    #[test]
    fn selector_matching() {
        let mut s = SelectorConfig::default();
        let mut labels = BTreeMap::new();
        assert!(!s.matches(&labels));
        labels.insert("tailor.enable".to_string(), "true".to_string());
        assert!(s.matches(&labels));
        s.labels.insert("team".into(), "a".into());
        assert!(!s.matches(&labels));
        labels.insert("team".into(), "a".into());
        assert!(s.matches(&labels));
    }

    #[test]
    fn example_config_in_packaging_is_valid() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../packaging/agent.toml");
        let text = std::fs::read_to_string(path).expect("packaging/agent.toml exists");
        check_toml(&text, Some(Path::new(path))).expect("packaging/agent.toml is valid");
    }
}

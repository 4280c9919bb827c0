//! Configuration of the central shaper (`shaper.toml`); the agent's side
//! (the `[cluster]` table of `agent.toml`) is `agent::cluster::config`.
//!
//! ```toml
//! # shaper.toml
//! listen = "127.0.0.1:9848"            # default; loopback unless told otherwise
//! token_file = "/etc/tailor/token"     # required, mode 0600: the operator token (/v1/status, /metrics)
//! credentials_file = "/etc/tailor/credentials.toml"  # per-agent tokens (hashes); `tailor shaper credentials`
//! # tls_cert_file = "/etc/tailor/shaper.crt"   # PEM; both or neither
//! # tls_key_file = "/etc/tailor/shaper.key"
//! interval_s = 10.0                    # one shaping round every interval
//! stale_after_intervals = 3            # silent agents become stale after this
//! forget_after_intervals = 360         # ... and are dropped after this (0 = never)
//! warmup_intervals = 1                 # rounds wait this long after start
//! early_round_gap_s = 1.0              # an agent's early report plans a round at once, at most one per gap (0 = never)
//! max_body_bytes = 8388608             # request body limit
//! max_components_per_report = 10000
//! allow_plaintext_non_loopback = false # refuse a non-loopback listen without TLS
//!
//! [limits]                             # caps and timeouts, see cluster::limits
//! max_agents = 10000
//!
//! # [etcd]                             # several replicas: state and leader election in etcd
//! # endpoints = ["http://10.0.0.1:2379"] # see crate::etcd
//! # advertise_url = "http://10.0.0.5:9848"
//!
//! [shaper]                             # shaper::ShaperConfig
//! k1 = 0.05
//! k2 = 3.0
//! ```

use crate::credentials::CredentialsFile;
use crate::toml_check::{check_value, leaf, parse_text, probe, Schema};
use crate::ClusterError;
use serde::{Deserialize, Serialize};
use shaper::{ConfigErrors, ShaperConfig};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Default listen address of the shaper server.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9848";

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9848))
}
fn default_interval_s() -> f64 {
    10.0
}
fn default_stale_after_intervals() -> u32 {
    3
}
fn default_forget_after_intervals() -> u32 {
    360
}
fn default_warmup_intervals() -> u32 {
    1
}
fn default_early_round_gap_s() -> f64 {
    1.0
}
fn default_max_body_bytes() -> usize {
    8 * 1024 * 1024
}
fn default_max_components_per_report() -> usize {
    10_000
}

/// `tailor shaper --config shaper.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShaperServerConfig {
    /// Listen address. Default `127.0.0.1:9848`.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// File holding the operator's bearer token (mode 0600), for
    /// `/v1/status` and `/metrics`. Agents use their own credentials.
    pub token_file: PathBuf,
    /// The per-agent credentials (hashes of tokens bound to an agent id and
    /// a tenant), managed with `tailor shaper credentials`. Required to
    /// serve: without it no agent can report.
    #[serde(default)]
    pub credentials_file: Option<PathBuf>,
    /// Caps and timeouts (`[limits]`).
    #[serde(default)]
    pub limits: crate::limits::ServerLimits,
    /// PEM certificate chain; with `tls_key_file`, the server speaks HTTPS.
    #[serde(default)]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    #[serde(default)]
    pub tls_key_file: Option<PathBuf>,
    /// Seconds between shaping rounds; agents should report at this pace.
    /// Default 10.
    #[serde(default = "default_interval_s")]
    pub interval_s: f64,
    /// An agent silent for this many intervals is stale: its last known
    /// allocations still count, no actions are planned for it. Default 3.
    #[serde(default = "default_stale_after_intervals")]
    pub stale_after_intervals: u32,
    /// An agent silent for this many intervals is dropped from the view
    /// (0 = never). Default 360 (one hour at 10 s).
    #[serde(default = "default_forget_after_intervals")]
    pub forget_after_intervals: u32,
    /// After a (re)start, rounds begin only after this many intervals, so
    /// every live agent has re-reported before anything is planned. Default 1.
    #[serde(default = "default_warmup_intervals")]
    pub warmup_intervals: u32,
    /// An agent's early report (its memory watch saw a container use half
    /// its headroom) plans a round at once, at most one per this many
    /// seconds since the last round began (and not before the shaper has
    /// been idle as long as that round took), and the report is answered
    /// with that round's actions; 0: early reports wait for the next round
    /// like any other. Default 1.
    #[serde(default = "default_early_round_gap_s")]
    pub early_round_gap_s: f64,
    /// Request body limit in bytes. Default 8 MiB.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// Components (and acks) accepted in one report. Default 10,000.
    #[serde(default = "default_max_components_per_report")]
    pub max_components_per_report: usize,
    /// Allow listening on a non-loopback address without TLS (the token
    /// would cross the network in clear). Default false.
    #[serde(default)]
    pub allow_plaintext_non_loopback: bool,
    /// Shaping parameters (`[shaper]`).
    #[serde(default)]
    pub shaper: ShaperConfig,
    /// Shared state and leader election in etcd (`[etcd]`): without it the
    /// shaper is one process whose state lives in memory.
    #[serde(default)]
    pub etcd: Option<crate::etcd::EtcdConfig>,
}

fn err(errors: &mut ConfigErrors, key: &str, message: impl Into<String>) {
    errors.push(key, message);
}

/// The server's shaping interval takes the agents' range (seconds).
pub use tailor_core::{MAX_INTERVAL_S, MIN_INTERVAL_S};
/// Largest interval count (`stale_after_intervals`, `forget_after_intervals`,
/// `warmup_intervals`).
pub const MAX_INTERVALS: u32 = 1_000_000;

impl ShaperServerConfig {
    /// A config with defaults and the given token file.
    pub fn with_token_file(token_file: impl Into<PathBuf>) -> Self {
        Self {
            listen: default_listen(),
            token_file: token_file.into(),
            credentials_file: None,
            limits: crate::limits::ServerLimits::default(),
            tls_cert_file: None,
            tls_key_file: None,
            interval_s: default_interval_s(),
            stale_after_intervals: default_stale_after_intervals(),
            forget_after_intervals: default_forget_after_intervals(),
            early_round_gap_s: default_early_round_gap_s(),
            warmup_intervals: default_warmup_intervals(),
            max_body_bytes: default_max_body_bytes(),
            max_components_per_report: default_max_components_per_report(),
            allow_plaintext_non_loopback: false,
            shaper: ShaperConfig::default(),
            etcd: None,
        }
    }

    /// Parses TOML text (unknown keys are errors).
    pub fn from_toml(text: &str, path: &Path) -> Result<Self, ClusterError> {
        toml::from_str(text).map_err(|e| ClusterError::ConfigParse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// Reads, parses and validates a config file; every problem at once
    /// (see [`check_toml`]).
    pub fn load(path: &Path) -> Result<Self, ClusterError> {
        let text = std::fs::read_to_string(path).map_err(|source| ClusterError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(check_toml(&text)?)
    }

    /// Checks the files the server reads at start-up as it reads them: the
    /// token file (exists, a regular file, mode 0600 or stricter, holds a
    /// token), the credentials file (set; parses and validates, as
    /// [`CredentialsFile::load`]; it may be missing only with `[etcd]`,
    /// whose replicas can take the shared credentials) and, with TLS, the
    /// certificate and key files (readable, non-empty).
    pub fn check_files(&self) -> Result<(), ConfigErrors> {
        let mut errors = ConfigErrors::new();
        if !self.token_file.as_os_str().is_empty() {
            if let Err(e) = crate::auth::read_token_file(&self.token_file) {
                errors.push("token_file", e.to_string());
            }
        }
        match &self.credentials_file {
            None => errors.push(
                "credentials_file",
                "missing: the shaper does not start without it (register agents with \
                 `tailor shaper credentials add --config <this file> --agent ID --tenant T`)",
            ),
            Some(path) => match CredentialsFile::load(path, self.etcd.is_some()) {
                Err(ClusterError::Io { path, source })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    errors.push(
                        "credentials_file",
                        format!(
                            "{} does not exist: the shaper would refuse every agent (create it with \
                             `tailor shaper credentials add --config <this file> --agent ID --tenant T`)",
                            path.display()
                        ),
                    )
                }
                Err(e) => errors.push("credentials_file", e.to_string()),
                Ok(_) => {}
            },
        }
        for (key, file) in [
            ("tls_cert_file", &self.tls_cert_file),
            ("tls_key_file", &self.tls_key_file),
        ] {
            if let Some(f) = file {
                match std::fs::metadata(f) {
                    Err(e) => errors.push(key, format!("cannot read {}: {e}", f.display())),
                    Ok(m) if !m.is_file() || m.len() == 0 => {
                        errors.push(key, format!("{} is not a non-empty file", f.display()))
                    }
                    Ok(_) => {}
                }
            }
        }
        if let Some(etcd) = &self.etcd {
            errors.nested("etcd", etcd.check_files());
        }
        errors.into_result()
    }

    /// True when TLS is configured.
    pub fn tls_enabled(&self) -> bool {
        self.tls_cert_file.is_some() && self.tls_key_file.is_some()
    }

    /// Every invalid setting at once (keys as written in the file). Ranges:
    /// `interval_s` in [0.1, 86400]; `stale_after_intervals` in [1, 1000000];
    /// `forget_after_intervals` 0 or in (stale_after_intervals, 1000000];
    /// `warmup_intervals` in [0, 1000000]; `early_round_gap_s` 0 or in
    /// [0.1, 86400]; `max_body_bytes` in [1024, 1 GiB];
    /// `max_components_per_report` in [1, 1000000]; `[shaper]` as
    /// [`ShaperConfig::validate`].
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut errors = ConfigErrors::new();
        if self.token_file.as_os_str().is_empty() {
            err(&mut errors, "token_file", "must name the token file");
        }
        match (&self.tls_cert_file, &self.tls_key_file) {
            (Some(_), None) => err(
                &mut errors,
                "tls_key_file",
                "tls_cert_file is set but tls_key_file is not",
            ),
            (None, Some(_)) => err(
                &mut errors,
                "tls_cert_file",
                "tls_key_file is set but tls_cert_file is not",
            ),
            _ => {}
        }
        if !self.listen.ip().is_loopback()
            && !self.tls_enabled()
            && !self.allow_plaintext_non_loopback
        {
            err(
                &mut errors,
                "listen",
                format!(
                    "{} is not a loopback address and TLS is not configured: set tls_cert_file/tls_key_file \
                     (or allow_plaintext_non_loopback = true to send tokens in clear)",
                    self.listen
                ),
            );
        }
        errors.range(
            "interval_s",
            self.interval_s,
            MIN_INTERVAL_S,
            MAX_INTERVAL_S,
        );
        errors.range(
            "stale_after_intervals",
            self.stale_after_intervals,
            1,
            MAX_INTERVALS,
        );
        errors.range(
            "forget_after_intervals",
            self.forget_after_intervals,
            0,
            MAX_INTERVALS,
        );
        errors.range("warmup_intervals", self.warmup_intervals, 0, MAX_INTERVALS);
        errors.range_or_off(
            "early_round_gap_s",
            self.early_round_gap_s,
            MIN_INTERVAL_S,
            MAX_INTERVAL_S,
        );
        if self.forget_after_intervals != 0
            && self.forget_after_intervals <= self.stale_after_intervals
        {
            err(
                &mut errors,
                "forget_after_intervals",
                format!(
                    "must be 0 (never) or larger than stale_after_intervals ({})",
                    self.stale_after_intervals
                ),
            );
        }
        if self.max_body_bytes < 1024 || self.max_body_bytes > 1 << 30 {
            err(
                &mut errors,
                "max_body_bytes",
                format!("must be in [1024, 1 GiB] (got {})", self.max_body_bytes),
            );
        }
        if self.max_components_per_report == 0 || self.max_components_per_report > 1_000_000 {
            err(
                &mut errors,
                "max_components_per_report",
                "must be in [1, 1000000]",
            );
        }
        errors.nested("shaper", self.shaper.validate());
        errors.nested("limits", self.limits.validate());
        if let Some(etcd) = &self.etcd {
            errors.nested("etcd", etcd.validate());
        }
        errors.into_result()
    }
}

static SERVER_SHAPER: Schema = leaf(probe::<ShaperConfig>);
static SERVER_ETCD: Schema = leaf(probe::<crate::etcd::EtcdConfig>);
static SERVER: Schema = Schema {
    probe: probe::<ShaperServerConfig>,
    tables: &[("shaper", &SERVER_SHAPER), ("etcd", &SERVER_ETCD)],
};

/// Checks `shaper.toml` text key by key (syntax, unknown keys, types,
/// missing keys, values) and reports every problem at once with its dotted
/// key path.
pub fn check_toml(text: &str) -> Result<ShaperServerConfig, ConfigErrors> {
    check(text, false)
}

/// As [`check_toml`], with the files' errors
/// ([`ShaperServerConfig::check_files`]) in the same list: what `tailor
/// config check` reports.
pub fn check_toml_and_files(text: &str) -> Result<ShaperServerConfig, ConfigErrors> {
    check(text, true)
}

fn check(text: &str, files: bool) -> Result<ShaperServerConfig, ConfigErrors> {
    let mut checked = check_value::<ShaperServerConfig>(&parse_text(text)?, &SERVER);
    let Some(cfg) = checked.config.take() else {
        return Err(checked.errors);
    };
    checked.add_validation(cfg.validate());
    if files {
        checked.add_validation(cfg.check_files());
    }
    checked.errors.into_result().map(|()| cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_check_lists_value_and_file_errors_together() {
        let text = "token_file = \"/nonexistent/token\"\ninterval_s = 0.0\n";
        assert_eq!(
            check_toml(text).expect_err("bad interval").keys(),
            vec!["interval_s"]
        );
        assert_eq!(
            check_toml_and_files(text).expect_err("both").keys(),
            vec!["interval_s", "token_file", "credentials_file"]
        );
    }

    /// QA C4: `config check` reads the credentials file as the daemon does.
    #[test]
    fn config_check_reads_the_credentials_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("token");
        crate::auth::write_token_file(&token, "config-check-test-token-0123456789").expect("token");
        let creds = dir.path().join("creds.toml");
        let text = |creds: &Path, etcd: bool| {
            let mut t = format!(
                "token_file = \"{}\"\ncredentials_file = \"{}\"\n",
                token.display(),
                creds.display()
            );
            if etcd {
                t.push_str("[etcd]\nendpoints = [\"http://127.0.0.1:2379\"]\nadvertise_url = \"http://127.0.0.1:9848\"\n");
            }
            t
        };
        let only = |t: &str| {
            let e = check_toml_and_files(t).expect_err("refused");
            assert_eq!(e.keys(), vec!["credentials_file"], "{e}");
            e.to_string()
        };
        // Missing: refused alone (every agent would be refused), fine with
        // [etcd] (the replica takes the shared credentials).
        let e = only(&text(&creds, false));
        assert!(
            e.contains(&creds.display().to_string()) && e.contains("does not exist"),
            "{e}"
        );
        assert!(check_toml_and_files(&text(&creds, true)).is_ok());
        // Unparsable: the file and the line.
        std::fs::write(&creds, "garbage [[[").expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600))
                .expect("chmod");
        }
        let e = only(&text(&creds, true));
        assert!(
            e.contains(&creds.display().to_string()) && e.contains("line 1"),
            "{e}"
        );
        // Invalid record: its index and key.
        std::fs::write(&creds, "[[credential]]\nkey_id = \"x\"\nagent_id = \"a\"\ntenant = \"t\"\nsha256 = \"\"\ncreated_s = 0.0\n").expect("write");
        let e = only(&text(&creds, false));
        assert!(e.contains("credential[0].key_id"), "{e}");
        // Not set.
        let e = only(&format!("token_file = \"{}\"\n", token.display()));
        assert!(e.contains("missing"), "{e}");
        // A good file passes.
        let mut f = CredentialsFile::default();
        f.add("n1", "t", &[], 0.0).expect("add");
        f.save(&creds).expect("save");
        assert!(check_toml_and_files(&text(&creds, false)).is_ok());
    }

    /// QA C14: an empty `[etcd]` names both missing keys, nothing else;
    /// a bad advertise_url is described as this replica's URL.
    #[test]
    fn an_empty_etcd_table_names_each_missing_key_once() {
        let e = check_toml("token_file = \"/t\"\n[etcd]\n").expect_err("empty [etcd]");
        assert_eq!(
            e.keys(),
            vec!["etcd.endpoints", "etcd.advertise_url"],
            "{e}"
        );
        let e = check_toml(
            "token_file = \"/t\"\n[etcd]\nendpoints = [\"http://e:2379\"]\nadvertise_url = \"x\"\n",
        )
        .expect_err("bad URL");
        assert_eq!(e.keys(), vec!["etcd.advertise_url"], "{e}");
        assert!(e.to_string().contains("this replica's URL"), "{e}");
        assert!(!e.to_string().contains("2379"), "{e}");
    }

    #[test]
    fn minimal_server_config_gets_defaults() {
        let cfg =
            ShaperServerConfig::from_toml("token_file = \"/t\"\n", Path::new("x")).expect("parse");
        assert_eq!(cfg.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(cfg, ShaperServerConfig::with_token_file("/t"));
        assert!(cfg.validate().is_ok());
    }

    #[test]
    fn packaged_example_is_valid() {
        let text = include_str!("../../packaging/shaper.toml");
        let cfg =
            ShaperServerConfig::from_toml(text, Path::new("packaging/shaper.toml")).expect("parse");
        assert!(cfg.validate().is_ok(), "{:?}", cfg.validate());
        assert_eq!(cfg.listen.to_string(), DEFAULT_LISTEN);
    }

    #[test]
    fn server_config_reports_every_error() {
        let text = r#"
            listen = "0.0.0.0:9848"
            token_file = "/t"
            tls_cert_file = "/c"
            interval_s = -1.0
            stale_after_intervals = 0
            early_round_gap_s = 0.01
            max_body_bytes = 10
            [shaper]
            k1 = -1.0
        "#;
        let cfg = ShaperServerConfig::from_toml(text, Path::new("x")).expect("parse");
        let e = cfg.validate().expect_err("invalid");
        let keys = e.keys();
        for k in [
            "tls_key_file",
            "listen",
            "interval_s",
            "stale_after_intervals",
            "early_round_gap_s",
            "max_body_bytes",
            "shaper.k1",
        ] {
            assert!(keys.contains(&k), "missing {k} in {keys:?}");
        }
        // 0 turns early rounds off; any value in range is accepted
        for ok in [0.0, 0.1, 86_400.0] {
            let mut cfg = ShaperServerConfig::with_token_file("/t");
            cfg.early_round_gap_s = ok;
            if let Err(e) = cfg.validate() {
                assert!(!e.keys().contains(&"early_round_gap_s"), "{ok}: {e}");
            }
        }
    }

    #[test]
    fn check_toml_reports_values_next_to_unknown_keys_and_missing_token_file() {
        let text = "interval_s = 1e-10\nbogus = 1\n[shaper]\nk1 = -1.0\nnope = 2\n";
        let e = check_toml(text).expect_err("invalid");
        assert_eq!(
            e.keys(),
            vec![
                "bogus",
                "shaper.nope",
                "token_file",
                "interval_s",
                "shaper.k1"
            ],
            "{e}"
        );
    }

    #[test]
    fn issue_13_values_get_a_clear_error() {
        for (text, key) in [
            ("interval_s = 1e-10", "interval_s"),
            ("interval_s = 1e300", "interval_s"),
            (
                "stale_after_intervals = 4000000000",
                "stale_after_intervals",
            ),
            ("warmup_intervals = 4000000000", "warmup_intervals"),
        ] {
            let e = check_toml(&format!("token_file = \"/t\"\n{text}")).expect_err(text);
            assert!(e.keys().contains(&key), "{text}: {e}");
        }
    }

    #[test]
    fn non_loopback_is_fine_with_tls_or_explicit_opt_in() {
        let mut cfg = ShaperServerConfig::with_token_file("/t");
        cfg.listen = "0.0.0.0:1".parse().expect("addr");
        assert!(cfg.validate().is_err());
        cfg.allow_plaintext_non_loopback = true;
        assert!(cfg.validate().is_ok());
        cfg.allow_plaintext_non_loopback = false;
        cfg.tls_cert_file = Some("/c".into());
        cfg.tls_key_file = Some("/k".into());
        assert!(cfg.validate().is_ok());
    }

    #[test]
    fn etcd_table_is_checked_with_the_rest() {
        let ok = "token_file = \"/t\"\n[etcd]\nendpoints = [\"http://127.0.0.1:2379\"]\nadvertise_url = \"http://127.0.0.1:9848\"\n";
        let cfg = check_toml(ok).expect("valid");
        assert_eq!(cfg.etcd.as_ref().map(|e| e.lease_ttl_s), Some(5));
        let bad = "token_file = \"/t\"\ninterval_s = 0.0\n[etcd]\nendpoints = []\nadvertise_url = \"x\"\nlease_ttl_s = 0\nbogus = 1\n";
        let e = check_toml(bad).expect_err("invalid");
        assert_eq!(
            e.keys(),
            vec![
                "etcd.bogus",
                "interval_s",
                "etcd.endpoints",
                "etcd.lease_ttl_s",
                "etcd.advertise_url"
            ],
            "{e}"
        );
    }

    #[test]
    fn unknown_keys_are_rejected() {
        assert!(
            ShaperServerConfig::from_toml("token_file = \"/t\"\nbogus = 1\n", Path::new("x"))
                .is_err()
        );
    }
}

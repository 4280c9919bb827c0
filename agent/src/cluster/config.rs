//! Configuration of an agent's cluster client (the `[cluster]` table of
//! `agent.toml`); the shaper's own `shaper.toml` is `shaperd::config`.
//!
//! ```toml
//! # agent.toml
//! mode = "cluster"
//! [cluster]
//! shaper_url = "https://shaper.example:9848"
//! # several shaper replicas (leader election in etcd): a list; the agent
//! # finds the leader and follows a follower's 307 only to a listed URL
//! # shaper_url = ["https://shaper-a:9848", "https://shaper-b:9848"]
//! token_file = "/etc/tailor/token"
//! # agent_id = "node-17"               # default: the host name
//! # ca_cert_file = "/etc/tailor/ca.pem" # trust this CA for https (besides the system roots);
//! #   the shaper's certificate must be a leaf (CA:FALSE) that it signed
//! timeout_s = 5.0
//! # encoding = "auto"                  # MessagePack once the shaper answers in it; "json": always JSON
//! [cluster.fail_safe]
//! hold_s = 60.0                        # keep allocations this long after losing the shaper
//! regrow_fraction = 0.25               # then close this share of the gap to the request per interval
//! ```

use super::failsafe::FailSafeConfig;
use serde::{Deserialize, Serialize};
use shaper::ConfigErrors;
use std::path::PathBuf;

fn default_timeout_s() -> f64 {
    5.0
}

fn err(errors: &mut ConfigErrors, key: &str, message: impl Into<String>) {
    errors.push(key, message);
}

/// `shaper_url`: one base URL or a list of them (the replicas of a
/// shaper cluster, see `shaperd::ha`). Serialized back as a string when
/// there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaperUrls(pub Vec<String>);

impl ShaperUrls {
    /// The URLs without trailing slashes.
    pub fn bases(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|u| u.trim_end_matches('/').to_string())
            .collect()
    }
}

impl From<String> for ShaperUrls {
    fn from(u: String) -> Self {
        Self(vec![u])
    }
}

impl From<&str> for ShaperUrls {
    fn from(u: &str) -> Self {
        Self(vec![u.to_string()])
    }
}

impl Serialize for ShaperUrls {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => s.serialize_str(one),
            many => many.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ShaperUrls {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(String),
            Many(Vec<String>),
        }
        match OneOrMany::deserialize(d) {
            Ok(OneOrMany::One(u)) => Ok(Self(vec![u])),
            Ok(OneOrMany::Many(v)) => Ok(Self(v)),
            // A missing key stays "missing field" (config checks rely on it).
            Err(e) if e.to_string().contains("missing field") => Err(e),
            Err(_) => Err(serde::de::Error::custom(
                "expected a URL string or a list of URL strings",
            )),
        }
    }
}

/// Most shaper URLs in `shaper_url`.
pub const MAX_SHAPER_URLS: usize = 16;

fn check_base_url(errors: &mut ConfigErrors, url: &str) {
    // The scheme first, then the trailing slashes: trimmed first,
    // "https://" would read as "https:", a scheme error (QA C14).
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .map(|r| r.trim_end_matches('/'));
    match rest {
        None => err(
            errors,
            "shaper_url",
            format!("must start with http:// or https:// (got {url:?})"),
        ),
        Some("") => err(
            errors,
            "shaper_url",
            format!("lacks a host: must be a base URL like https://host:9848 (got {url:?})"),
        ),
        Some(r) if r.contains('/') || r.contains(char::is_whitespace) => err(
            errors,
            "shaper_url",
            format!("must be a base URL like https://host:9848 without a path (got {url:?})"),
        ),
        Some(_) => {}
    }
}

/// The `[cluster]` table of `agent.toml` (used when `mode = "cluster"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterClientConfig {
    /// Base URL of the shaper, `http://` or `https://` (no path), or a
    /// list of them (the replicas of a shaper cluster, tried in order; a
    /// follower's redirect is followed only to a listed URL).
    pub shaper_url: ShaperUrls,
    /// File holding this agent's own token (mode 0600), from `tailor shaper
    /// credentials add --agent <agent_id>`. Read again when it changes and
    /// when the shaper answers 401: rotating it needs no restart.
    pub token_file: PathBuf,
    /// This agent's name; one agent = one host. Default: the host name. It
    /// must be the agent id its credential was registered for.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Extra CA certificate (PEM) to trust for `https://`: the CA that
    /// signed the shaper's certificate. The shaper's own certificate must
    /// be a leaf (end-entity, `CA:FALSE`) certificate: rustls refuses a CA
    /// certificate served as the server's own (`CaUsedAsEndEntity`), which
    /// is what `openssl req -x509` makes by default.
    #[serde(default)]
    pub ca_cert_file: Option<PathBuf>,
    /// Timeout of one request to the shaper, seconds. Default 5.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: f64,
    /// The encoding of reports and acks: `"auto"` (the default) sends
    /// MessagePack once a shaper has answered in it (a shaper that reads
    /// it), else JSON; `"json"` always JSON (bodies readable in a capture).
    #[serde(default)]
    pub encoding: WireEncoding,
    /// What to do while the shaper is unreachable.
    #[serde(default)]
    pub fail_safe: FailSafeConfig,
}

/// `[cluster] encoding`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireEncoding {
    /// MessagePack when the shaper speaks it, else JSON.
    #[default]
    Auto,
    /// Always JSON.
    Json,
}

impl ClusterClientConfig {
    /// A config with defaults.
    pub fn new(shaper_url: impl Into<String>, token_file: impl Into<PathBuf>) -> Self {
        Self {
            shaper_url: ShaperUrls::from(shaper_url.into()),
            token_file: token_file.into(),
            agent_id: None,
            ca_cert_file: None,
            timeout_s: default_timeout_s(),
            encoding: WireEncoding::Auto,
            fail_safe: FailSafeConfig::default(),
        }
    }

    /// The agent id to report: `agent_id`, else the host name.
    pub fn resolved_agent_id(&self) -> String {
        if let Some(id) = &self.agent_id {
            return id.clone();
        }
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "localhost".to_string())
    }

    /// Every invalid setting at once (keys relative to `[cluster]`; call
    /// `.prefixed("cluster")` on the error when embedding).
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut errors = ConfigErrors::new();
        if self.shaper_url.0.is_empty() || self.shaper_url.0.len() > MAX_SHAPER_URLS {
            err(
                &mut errors,
                "shaper_url",
                format!(
                    "must name 1 to {MAX_SHAPER_URLS} shaper URLs (got {})",
                    self.shaper_url.0.len()
                ),
            );
        }
        for url in &self.shaper_url.0 {
            check_base_url(&mut errors, url);
        }
        if self.token_file.as_os_str().is_empty() {
            err(&mut errors, "token_file", "must name the token file");
        }
        if let Some(id) = &self.agent_id {
            if id.is_empty()
                || id.len() > super::protocol::MAX_NAME_LEN
                || id.chars().any(|c| c.is_control())
            {
                err(
                    &mut errors,
                    "agent_id",
                    "must be 1 to 256 printable characters",
                );
            }
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= 600.0) {
            err(
                &mut errors,
                "timeout_s",
                format!("must be in (0, 600] (got {})", self.timeout_s),
            );
        }
        errors.nested("fail_safe", self.fail_safe.validate());
        errors.into_result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_rejected() {
        assert!(toml::from_str::<ClusterClientConfig>(
            "shaper_url = \"http://a\"\ntoken_file = \"/t\"\nx = 1\n"
        )
        .is_err());
    }

    #[test]
    fn client_config_validation() {
        let cfg: ClusterClientConfig =
            toml::from_str("shaper_url = \"https://shaper:9848\"\ntoken_file = \"/t\"\n")
                .expect("parse");
        assert!(cfg.validate().is_ok());
        assert_eq!(cfg.timeout_s, 5.0);
        let mut bad = cfg.clone();
        bad.shaper_url = "ftp://x".into();
        bad.timeout_s = 0.0;
        bad.fail_safe.regrow_fraction = 2.0;
        let keys: Vec<String> = bad
            .validate()
            .expect_err("invalid")
            .keys()
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            keys,
            vec!["shaper_url", "timeout_s", "fail_safe.regrow_fraction"]
        );
        let mut path = cfg;
        path.shaper_url = "http://host/v1".into();
        assert!(path.validate().is_err());
    }

    #[test]
    fn shaper_url_is_one_url_or_a_list() {
        let one: ClusterClientConfig =
            toml::from_str("shaper_url = \"http://a:1/\"\ntoken_file = \"/t\"\n").expect("one");
        assert_eq!(one.shaper_url.bases(), vec!["http://a:1"]);
        let many: ClusterClientConfig =
            toml::from_str("shaper_url = [\"http://a:1\", \"https://b:2\"]\ntoken_file = \"/t\"\n")
                .expect("many");
        assert!(many.validate().is_ok());
        assert_eq!(many.shaper_url.bases(), vec!["http://a:1", "https://b:2"]);
        // Round trip keeps the single form a string.
        let text = toml::to_string(&one).expect("ser");
        assert!(text.contains("shaper_url = \"http://a:1/\""), "{text}");
        let mut bad = many.clone();
        bad.shaper_url = ShaperUrls(vec![]);
        assert_eq!(
            bad.validate().expect_err("empty").keys(),
            vec!["shaper_url"]
        );
        bad.shaper_url = ShaperUrls(vec!["http://a:1".into(), "ftp://b".into()]);
        assert_eq!(bad.validate().expect_err("ftp").keys(), vec!["shaper_url"]);
        assert!(
            toml::from_str::<ClusterClientConfig>("shaper_url = 3\ntoken_file = \"/t\"\n").is_err()
        );
        let missing = toml::from_str::<ClusterClientConfig>("token_file = \"/t\"\n")
            .expect_err("missing")
            .to_string();
        assert!(missing.contains("missing field `shaper_url`"), "{missing}");
    }

    /// QA C14: a URL of a scheme alone lacks a host (its trailing `/` is
    /// not read as part of the scheme).
    #[test]
    fn a_url_without_a_host_says_so() {
        for url in ["https://", "http://", "https:///", "http:////"] {
            let cfg = ClusterClientConfig::new(url, "/t");
            let e = cfg.validate().expect_err(url);
            assert_eq!(e.keys(), vec!["shaper_url"], "{url}: {e}");
            let text = e.to_string();
            assert!(text.contains("lacks a host"), "{url}: {text}");
            assert!(!text.contains("must start with"), "{url}: {text}");
        }
        for url in ["https:/", "ftp://h", "h:9848"] {
            let e = ClusterClientConfig::new(url, "/t")
                .validate()
                .expect_err(url);
            assert!(e.to_string().contains("must start with"), "{url}: {e}");
        }
        assert!(ClusterClientConfig::new("https://h:9848/", "/t")
            .validate()
            .is_ok());
    }
}

//! Configuration of an agent's cluster client (the `[cluster]` table of
//! `agent.toml`); the shaper's own `shaper.toml` is `shaperd::config`.
//!
//! ```toml
//! # agent.toml
//! mode = "cluster"
//! [cluster]
//! shaper_url = "https://shaper.example:9848"
//! token_file = "/etc/tailor/token"
//! # agent_id = "node-17"               # default: the host name
//! # ca_cert_file = "/etc/tailor/ca.pem" # trust this CA for https (besides the system roots)
//! timeout_s = 5.0
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

/// The `[cluster]` table of `agent.toml` (used when `mode = "cluster"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterClientConfig {
    /// Base URL of the shaper, `http://` or `https://` (no path).
    pub shaper_url: String,
    /// File holding this agent's own token (mode 0600), from `tailor shaper
    /// credentials add --agent <agent_id>`.
    pub token_file: PathBuf,
    /// This agent's name; one agent = one host. Default: the host name. It
    /// must be the agent id its credential was registered for.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Extra CA certificate (PEM) to trust for `https://` (e.g. a
    /// self-signed shaper certificate).
    #[serde(default)]
    pub ca_cert_file: Option<PathBuf>,
    /// Timeout of one request to the shaper, seconds. Default 5.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: f64,
    /// What to do while the shaper is unreachable.
    #[serde(default)]
    pub fail_safe: FailSafeConfig,
}

impl ClusterClientConfig {
    /// A config with defaults.
    pub fn new(shaper_url: impl Into<String>, token_file: impl Into<PathBuf>) -> Self {
        Self {
            shaper_url: shaper_url.into(),
            token_file: token_file.into(),
            agent_id: None,
            ca_cert_file: None,
            timeout_s: default_timeout_s(),
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
        let url = self.shaper_url.trim_end_matches('/');
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"));
        match rest {
            None => err(
                &mut errors,
                "shaper_url",
                format!(
                    "must start with http:// or https:// (got {:?})",
                    self.shaper_url
                ),
            ),
            Some(r) if r.is_empty() || r.contains('/') || r.contains(char::is_whitespace) => err(
                &mut errors,
                "shaper_url",
                format!(
                    "must be a base URL like https://host:9848 without a path (got {:?})",
                    self.shaper_url
                ),
            ),
            Some(_) => {}
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
}

//! The `[etcd]` table of `shaper.toml`: its keys, their checks, and the
//! checks of the TLS files it names.

use serde::{Deserialize, Serialize};
use shaper::ConfigErrors;
use std::path::{Path, PathBuf};

fn default_prefix() -> String {
    "/tailor".into()
}
fn default_lease_ttl_s() -> u32 {
    5
}
fn default_request_timeout_s() -> f64 {
    2.0
}

/// Most etcd endpoints.
pub const MAX_ENDPOINTS: usize = 16;
/// Shortest lease etcd grants with its default timing (seconds).
pub const MIN_LEASE_TTL_S: u32 = 2;
pub const MAX_LEASE_TTL_S: u32 = 300;

/// The `[etcd]` table of `shaper.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtcdConfig {
    /// Client URLs of the etcd members (`http://host:2379`).
    pub endpoints: Vec<String>,
    /// Key prefix of this shaper cluster. Default `/tailor`.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// TTL of the leader's lease, seconds, in [2, 300]. Default 5.
    #[serde(default = "default_lease_ttl_s")]
    pub lease_ttl_s: u32,
    /// This replica's URL as agents reach it (followers redirect there).
    pub advertise_url: String,
    /// Timeout of one etcd request, seconds, in (0, 60]. Default 2.
    #[serde(default = "default_request_timeout_s")]
    pub request_timeout_s: f64,
    /// PEM certificate(s) of the CA that signed the members' server
    /// certificates (https endpoints). Absent: the built-in web roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate presented to etcd (members started with
    /// `--client-cert-auth`); with `key_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<PathBuf>,
    /// PEM private key of `cert_file`; mode 0600 or stricter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
}

fn check_url(errors: &mut ConfigErrors, key: &str, url: &str, like: &str) {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(r) if !r.is_empty() && !r.contains('/') && !r.contains(char::is_whitespace) => {}
        _ => errors.push(
            key,
            format!("must be a base URL like {like} without a path (got {url:?})"),
        ),
    }
}

impl EtcdConfig {
    /// Every invalid setting at once (keys relative to `[etcd]`).
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut errors = ConfigErrors::new();
        if self.endpoints.is_empty() || self.endpoints.len() > MAX_ENDPOINTS {
            errors.push(
                "endpoints",
                format!(
                    "must list 1 to {MAX_ENDPOINTS} etcd client URLs (got {})",
                    self.endpoints.len()
                ),
            );
        }
        for e in &self.endpoints {
            check_url(&mut errors, "endpoints", e, "http://etcd-host:2379");
        }
        if !self.prefix.starts_with('/')
            || self.prefix.len() < 2
            || self.prefix.len() > 256
            || self.prefix.ends_with('/')
            || self
                .prefix
                .contains(|c: char| c.is_whitespace() || c.is_control())
        {
            errors.push(
                "prefix",
                format!(
                    "must be like /tailor: a leading /, 2 to 256 characters, no trailing /, no spaces (got {:?})",
                    self.prefix
                ),
            );
        }
        errors.range(
            "lease_ttl_s",
            self.lease_ttl_s,
            MIN_LEASE_TTL_S,
            MAX_LEASE_TTL_S,
        );
        check_url(
            &mut errors,
            "advertise_url",
            &self.advertise_url,
            "https://this-shaper:9848 (this replica's URL as agents reach it)",
        );
        if !(self.request_timeout_s.is_finite()
            && self.request_timeout_s > 0.0
            && self.request_timeout_s <= 60.0)
        {
            errors.push(
                "request_timeout_s",
                format!("must be in (0, 60] (got {})", self.request_timeout_s),
            );
        }
        match (&self.cert_file, &self.key_file) {
            (Some(_), None) => errors.push("key_file", "cert_file is set but key_file is not"),
            (None, Some(_)) => errors.push("cert_file", "key_file is set but cert_file is not"),
            _ => {}
        }
        let tls = [&self.ca_file, &self.cert_file, &self.key_file];
        if tls.iter().any(|f| f.is_some()) {
            for e in self.endpoints.iter().filter(|e| !e.starts_with("https://")) {
                errors.push(
                    "endpoints",
                    format!("{e:?} is not https:// but ca_file/cert_file/key_file are set"),
                );
            }
        }
        errors.into_result()
    }

    /// Checks the TLS files as the client will read them: readable PEM
    /// files, the key private (mode 0600 or stricter). Keys relative to
    /// `[etcd]`.
    pub fn check_files(&self) -> Result<(), ConfigErrors> {
        let mut errors = ConfigErrors::new();
        for (key, file) in [
            ("ca_file", &self.ca_file),
            ("cert_file", &self.cert_file),
            ("key_file", &self.key_file),
        ] {
            if let Some(f) = file {
                if let Err(e) = read_pem(f) {
                    errors.push(key, e);
                }
            }
        }
        if let Some(f) = &self.key_file {
            if let Err(e) = crate::auth::check_private_key_file(f) {
                errors.push("key_file", e.to_string());
            }
        }
        errors.into_result()
    }
}

/// Most bytes of a PEM file read.
const MAX_PEM_BYTES: u64 = 1 << 20;

/// A PEM file's bytes: readable, at most 1 MiB, with a PEM block.
pub(super) fn read_pem(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(format!("{} is larger than 1 MiB", path.display()));
    }
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(format!("{} holds no PEM block", path.display()));
    }
    Ok(bytes)
}

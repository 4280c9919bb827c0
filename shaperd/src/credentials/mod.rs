//! Per-agent credentials of the central shaper.
//!
//! Every agent has its own bearer token, bound to its agent id and to a
//! tenant. The shaper stores only a SHA-256 hash of each token, in a TOML
//! file named by `credentials_file` in `shaper.toml`:
//!
//! ```toml
//! # managed by `tailor shaper credentials add|list|revoke`
//! [[credential]]
//! key_id = "5c1f0e9a7b3d2c41"        # public: the token's second field
//! agent_id = "node-17"               # the only agent id this token may speak for
//! tenant = "team-a"                  # applications are keyed by (tenant, app)
//! sha256 = "9f86d08..."              # hex SHA-256 of the whole token
//! created_s = 1763900000.0           # Unix seconds
//! apps = ["web", "batch-*"]          # optional: the applications it may report
//! ```
//!
//! A token reads `tailor1.<key_id>.<secret>` (16 + 64 hex digits, 256 random
//! bits of secret). The server finds the record by `key_id` and compares the
//! token's hash with the stored one in constant time. The file may be
//! readable by others (it holds no secret) but not writable by group or
//! others: whoever can write it can add agents.
//!
//! The running shaper re-reads the file when it changes (checked every
//! second), so `revoke` takes effect without a restart. A file that does not
//! parse keeps the previous credentials in force and is logged as an error.
//!
//! ## Generations and revocations (several replicas)
//!
//! `add` and `revoke` raise the file's `generation`, and `revoke` keeps
//! the revoked key as a tombstone:
//!
//! ```toml
//! generation = 7                     # raised by every add / revoke
//! [[credential]]
//! # ...
//! [[revoked]]
//! key_id = "0a1b2c3d4e5f6071"        # never valid again, in any replica
//! agent_id = "node-9"
//! tenant = "team-a"
//! revoked_s = 1763990000.0
//! ```
//!
//! A file holding a `[[credential]]` whose key id is also `[[revoked]]` is
//! refused. With `[etcd]`, replicas share the credentials; a replica
//! publishes its file only as [`plan_publication`] allows: the shared
//! tombstones only grow, a set holding a revoked key is never published,
//! and a file whose generation is not newer than the shared one (a backup,
//! a replica whose copy was not updated) is refused and logged as an
//! error; its own revocations are merged into the shared set all the same.
//! Files without `generation` or `[[revoked]]` (written before these
//! existed) read as generation 0 without tombstones.

use crate::app_scope::{check_patterns, AppScope};
use crate::protocol::MAX_NAME_LEN;
use crate::ClusterError;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most credentials one file may hold.
pub const MAX_CREDENTIALS: usize = 100_000;
/// Largest credentials file read (bytes).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Longest tenant name (bytes).
pub const MAX_TENANT_LEN: usize = 64;
/// Prefix (and format version) of agent tokens.
pub const TOKEN_PREFIX: &str = "tailor1";

const KEY_ID_HEX: usize = 16;
const SECRET_HEX: usize = 64;

/// One registered credential (a line of `credentials list`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialRecord {
    pub key_id: String,
    pub agent_id: String,
    pub tenant: String,
    /// Hex SHA-256 of the whole token.
    pub sha256: String,
    pub created_s: f64,
    /// The application labels this credential may report components of
    /// (exact, or a prefix ending in `*`); empty: every application of the
    /// tenant. See [`crate::app_scope`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<String>,
}

/// A revoked key (a tombstone): it never verifies again, and no set that
/// holds it is published to the other replicas.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokedRecord {
    pub key_id: String,
    pub agent_id: String,
    pub tenant: String,
    /// Unix seconds.
    pub revoked_s: f64,
}

/// The credentials file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialsFile {
    /// Raised by every `add` and `revoke`: a replica publishes its file to
    /// the other replicas only when this is above the shared one's
    /// (0 in files written before it existed).
    #[serde(default)]
    pub generation: u64,
    #[serde(default, rename = "credential")]
    pub credentials: Vec<CredentialRecord>,
    /// Revoked keys (tombstones).
    #[serde(default, rename = "revoked", skip_serializing_if = "Vec::is_empty")]
    pub revoked: Vec<RevokedRecord>,
}

mod publication;
pub use publication::{plan_publication, Publication};

/// Who sent a request: the agent and tenant its credential is bound to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    pub agent_id: Arc<str>,
    pub tenant: Arc<str>,
    pub key_id: Arc<str>,
    /// The applications it may report components of.
    pub apps: AppScope,
}

/// Credentials in force, indexed by key id.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    by_key: HashMap<String, ([u8; 32], Identity)>,
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn from_hex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

pub use protocol::auth::constant_time_eq;

/// Why a tenant name is invalid, if it is.
pub fn check_tenant(t: &str) -> Result<(), String> {
    if t.is_empty() || t.len() > MAX_TENANT_LEN {
        return Err(format!("tenant must be 1 to {MAX_TENANT_LEN} characters"));
    }
    if !t
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(format!(
            "tenant {t:?} may only contain letters, digits, '-', '_' and '.'"
        ));
    }
    Ok(())
}

/// Why an agent id is invalid, if it is (same rule as in reports).
pub fn check_agent_id(a: &str) -> Result<(), String> {
    if a.is_empty() || a.len() > MAX_NAME_LEN || a.chars().any(|c| c.is_control()) {
        return Err(format!(
            "agent id must be 1 to {MAX_NAME_LEN} bytes without control characters"
        ));
    }
    Ok(())
}

/// A new random token for a new credential, and its record.
pub fn new_credential(
    agent_id: &str,
    tenant: &str,
    now_s: f64,
) -> Result<(String, CredentialRecord), ClusterError> {
    use ring::rand::SecureRandom;
    check_agent_id(agent_id).map_err(ClusterError::Credentials)?;
    check_tenant(tenant).map_err(ClusterError::Credentials)?;
    let mut raw = [0u8; KEY_ID_HEX / 2 + SECRET_HEX / 2];
    ring::rand::SystemRandom::new()
        .fill(&mut raw)
        .map_err(|_| ClusterError::Credentials("the system random generator failed".into()))?;
    let key_id = to_hex(&raw[..KEY_ID_HEX / 2]);
    let secret = to_hex(&raw[KEY_ID_HEX / 2..]);
    let token = format!("{TOKEN_PREFIX}.{key_id}.{secret}");
    let record = CredentialRecord {
        key_id,
        agent_id: agent_id.to_string(),
        tenant: tenant.to_string(),
        sha256: to_hex(&sha256(token.as_bytes())),
        created_s: now_s,
        apps: Vec::new(),
    };
    Ok((token, record))
}

/// The key id of a token, when it has the `tailor1.<key id>.<secret>` form.
pub fn token_key_id(token: &str) -> Option<&str> {
    let mut it = token.split('.');
    let (prefix, kid, secret) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some()
        || prefix != TOKEN_PREFIX
        || !is_lower_hex(kid, KEY_ID_HEX)
        || !is_lower_hex(secret, SECRET_HEX)
    {
        return None;
    }
    Some(kid)
}

impl CredentialsFile {
    /// Every problem with the records (index and key named).
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        if self.credentials.len() > MAX_CREDENTIALS {
            errors.push(format!(
                "{} credentials, more than the limit of {MAX_CREDENTIALS}",
                self.credentials.len()
            ));
            return Err(errors);
        }
        let mut keys: HashMap<&str, usize> = HashMap::new();
        let mut tenants: HashMap<&str, &str> = HashMap::new();
        for (i, c) in self.credentials.iter().enumerate() {
            if errors.len() >= 20 {
                errors.push("... (more errors not shown)".into());
                break;
            }
            let at = format!("credential[{i}]");
            if !is_lower_hex(&c.key_id, KEY_ID_HEX) {
                errors.push(format!(
                    "{at}.key_id must be {KEY_ID_HEX} lower-case hex digits"
                ));
            } else if let Some(j) = keys.insert(&c.key_id, i) {
                errors.push(format!("{at}.key_id {} repeats credential[{j}]", c.key_id));
            }
            if let Err(e) = check_agent_id(&c.agent_id) {
                errors.push(format!("{at}.agent_id: {e}"));
            }
            if let Err(e) = check_tenant(&c.tenant) {
                errors.push(format!("{at}.tenant: {e}"));
            }
            if from_hex32(&c.sha256).is_none() {
                errors.push(format!("{at}.sha256 must be 64 hex digits"));
            }
            if !c.created_s.is_finite() {
                errors.push(format!("{at}.created_s must be finite"));
            }
            errors.extend(
                check_patterns(&c.apps)
                    .into_iter()
                    .map(|e| format!("{at}.{e}")),
            );
            match tenants.get(c.agent_id.as_str()) {
                Some(t) if *t != c.tenant.as_str() => errors.push(format!(
                    "{at}: agent {:?} is registered in tenants {t:?} and {:?}; an agent belongs to one tenant",
                    c.agent_id, c.tenant
                )),
                Some(_) => {}
                None => {
                    tenants.insert(&c.agent_id, &c.tenant);
                }
            }
        }
        if self.revoked.len() > MAX_CREDENTIALS {
            errors.push(format!(
                "{} revoked keys, more than the limit of {MAX_CREDENTIALS}",
                self.revoked.len()
            ));
            return Err(errors);
        }
        let mut dead: HashMap<&str, usize> = HashMap::new();
        for (j, r) in self.revoked.iter().enumerate() {
            if errors.len() >= 20 {
                errors.push("... (more errors not shown)".into());
                break;
            }
            let at = format!("revoked[{j}]");
            if !is_lower_hex(&r.key_id, KEY_ID_HEX) {
                errors.push(format!(
                    "{at}.key_id must be {KEY_ID_HEX} lower-case hex digits"
                ));
            } else if let Some(k) = dead.insert(&r.key_id, j) {
                errors.push(format!("{at}.key_id {} repeats revoked[{k}]", r.key_id));
            }
            if !r.revoked_s.is_finite() {
                errors.push(format!("{at}.revoked_s must be finite"));
            }
        }
        for (i, c) in self.credentials.iter().enumerate() {
            if let Some(j) = dead.get(c.key_id.as_str()) {
                errors.push(format!(
                    "credential[{i}].key_id {} (agent {:?}) was revoked (revoked[{j}]): a revoked key never comes back; delete this [[credential]] block (this file is probably an old copy)",
                    c.key_id, c.agent_id
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Reads and validates a credentials file. Refuses one that group or
    /// others may write. A missing file is an empty set only when
    /// `missing_ok`.
    pub fn load(path: &Path, missing_ok: bool) -> Result<Self, ClusterError> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self::default())
            }
            Err(source) => {
                return Err(ClusterError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let invalid = |message: String| ClusterError::CredentialsFile {
            path: path.to_path_buf(),
            message,
        };
        if !meta.is_file() {
            return Err(invalid("not a regular file".into()));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o7777;
            if mode & 0o022 != 0 {
                return Err(invalid(format!(
                    "writable by group or others (mode {mode:o}): anyone who can write it can add agents; run `chmod 600 {}`",
                    path.display()
                )));
            }
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(invalid(format!(
                "{} bytes, more than the limit of {MAX_FILE_BYTES}",
                meta.len()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|source| ClusterError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let file: Self = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        file.validate().map_err(|e| invalid(e.join("; ")))?;
        Ok(file)
    }

    /// Writes the file atomically (temporary file + rename), mode 0600.
    pub fn save(&self, path: &Path) -> Result<(), ClusterError> {
        use std::io::Write;
        #[cfg(unix)]
        use std::os::unix::fs::OpenOptionsExt;
        let io = |source| ClusterError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut text = String::from(
            "# tailor shaper credentials: hashes of per-agent tokens.\n# Managed by `tailor shaper credentials add|list|revoke`; the shaper reloads it on change.\n",
        );
        text.push_str(
            &toml::to_string(self).map_err(|e| ClusterError::CredentialsFile {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?,
        );
        let tmp = tmp_path(path);
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        opts.mode(0o600);
        let mut f = opts.open(&tmp).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Adds a new credential for `agent_id` in `tenant`; returns the token
    /// (shown once, never stored).
    /// `apps`: the application patterns it may report (empty: all).
    pub fn add(
        &mut self,
        agent_id: &str,
        tenant: &str,
        apps: &[String],
        now_s: f64,
    ) -> Result<String, ClusterError> {
        let bad = check_patterns(apps);
        if !bad.is_empty() {
            return Err(ClusterError::Credentials(bad.join("; ")));
        }
        if let Some(other) = self
            .credentials
            .iter()
            .find(|c| c.agent_id == agent_id && c.tenant != tenant)
        {
            return Err(ClusterError::Credentials(format!(
                "agent {agent_id:?} is already registered in tenant {:?}; revoke it first",
                other.tenant
            )));
        }
        if self.credentials.len() >= MAX_CREDENTIALS {
            return Err(ClusterError::Credentials(format!(
                "already {MAX_CREDENTIALS} credentials"
            )));
        }
        let (token, mut record) = new_credential(agent_id, tenant, now_s)?;
        record.apps = apps.to_vec();
        self.credentials.push(record);
        self.generation += 1;
        Ok(token)
    }

    /// Revokes the credentials of `agent_id` (all its keys) or the one with
    /// `key_id`: each becomes a `[[revoked]]` tombstone, and the generation
    /// rises when any was revoked. Returns how many were revoked.
    pub fn revoke(&mut self, agent_id: Option<&str>, key_id: Option<&str>, now_s: f64) -> usize {
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.credentials)
            .into_iter()
            .partition(|c| {
                agent_id.is_some_and(|a| a == c.agent_id) || key_id.is_some_and(|k| k == c.key_id)
            });
        self.credentials = kept;
        for c in &gone {
            if !self.revoked.iter().any(|r| r.key_id == c.key_id) {
                self.revoked.push(RevokedRecord {
                    key_id: c.key_id.clone(),
                    agent_id: c.agent_id.clone(),
                    tenant: c.tenant.clone(),
                    revoked_s: now_s,
                });
            }
        }
        if !gone.is_empty() {
            self.generation += 1;
        }
        gone.len()
    }

    /// The in-memory index of a validated file.
    pub fn index(&self) -> Credentials {
        let mut by_key = HashMap::with_capacity(self.credentials.len());
        let dead: std::collections::HashSet<&str> =
            self.revoked.iter().map(|r| r.key_id.as_str()).collect();
        for c in &self.credentials {
            if dead.contains(c.key_id.as_str()) {
                continue;
            }
            if let Some(hash) = from_hex32(&c.sha256) {
                by_key.insert(
                    c.key_id.clone(),
                    (
                        hash,
                        Identity {
                            agent_id: Arc::from(c.agent_id.as_str()),
                            tenant: Arc::from(c.tenant.as_str()),
                            key_id: Arc::from(c.key_id.as_str()),
                            apps: AppScope::new(&c.apps),
                        },
                    ),
                );
            }
        }
        Credentials { by_key }
    }
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

impl Credentials {
    /// The identity a token belongs to, or `None`.
    pub fn verify(&self, token: &str) -> Option<&Identity> {
        let kid = token_key_id(token)?;
        let (hash, who) = self.by_key.get(kid)?;
        constant_time_eq(&sha256(token.as_bytes()), hash).then_some(who)
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// True when some credential is bound to `agent_id`.
    pub fn has_agent(&self, agent_id: &str) -> bool {
        self.by_key.values().any(|(_, w)| &*w.agent_id == agent_id)
    }

    /// Agent ids with at least one credential.
    pub fn agents(&self) -> std::collections::HashSet<Arc<str>> {
        self.by_key
            .values()
            .map(|(_, w)| w.agent_id.clone())
            .collect()
    }
}

/// What identifies a version of the file on disk (a rewrite through
/// [`CredentialsFile::save`] changes the inode; an edit in place changes the
/// modification time or the size).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStamp {
    modified: Option<std::time::SystemTime>,
    len: u64,
    #[cfg(unix)]
    ino: u64,
    /// Permissions: a reload refused for a group- or world-writable file
    /// is tried again once the operator's `chmod` fixes it.
    #[cfg(unix)]
    mode: u32,
}

impl FileStamp {
    /// The file's stamp, `None` when it cannot be read.
    pub fn of(path: &Path) -> Option<Self> {
        let m = std::fs::metadata(path).ok()?;
        Some(Self {
            modified: m.modified().ok(),
            len: m.len(),
            #[cfg(unix)]
            ino: std::os::unix::fs::MetadataExt::ino(&m),
            #[cfg(unix)]
            mode: std::os::unix::fs::MetadataExt::mode(&m),
        })
    }
}

#[cfg(test)]
mod tests;

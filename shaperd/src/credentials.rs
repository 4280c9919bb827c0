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

/// What publishing a credentials file to the shared store did.
#[derive(Clone, Debug, PartialEq)]
pub enum Publication {
    /// The store already held this set (or the file is empty: nothing to
    /// publish).
    UpToDate,
    /// The file's set is now the shared one.
    Published { generation: u64 },
    /// The file was refused: it is older than the shared set or brings back
    /// revoked keys. The shared set stays in force, with
    /// `revocations_merged` of the file's revocations added to it.
    Refused {
        file_generation: u64,
        stored_generation: u64,
        /// `key_id (agent)` of each credential the shared set has revoked.
        revived: Vec<String>,
        /// Agent ids the file would add or remove (key changes), sorted.
        differs_for: Vec<String>,
        revocations_merged: usize,
    },
}

impl std::fmt::Display for Publication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UpToDate => write!(f, "up to date"),
            Self::Published { generation } => write!(f, "published generation {generation}"),
            Self::Refused {
                file_generation,
                stored_generation,
                revived,
                differs_for,
                revocations_merged,
            } => {
                write!(f, "refused: the file's generation {file_generation} is ")?;
                if revived.is_empty() {
                    write!(f, "not above the shared generation {stored_generation}")?;
                } else {
                    write!(
                        f,
                        "stale: it holds {} credential(s) revoked in the shared set ({}); a revoked key never comes back",
                        revived.len(),
                        revived.join(", ")
                    )?;
                }
                if !differs_for.is_empty() {
                    write!(f, "; its keys differ for agents {}", differs_for.join(", "))?;
                }
                write!(
                    f,
                    "; the shared set (generation {stored_generation}) stays in force"
                )?;
                if *revocations_merged > 0 {
                    write!(
                        f,
                        " with the file's {revocations_merged} new revocation(s) added"
                    )?;
                }
                write!(f, "; update this file from the current one (or re-run `tailor shaper credentials add|revoke` on it, which raises its generation)")
            }
        }
    }
}

/// What to publish of `local` over the shared set `stored` (pure: both
/// stores use it, the etcd one under a compare-and-swap):
/// * the shared tombstones only grow: every revocation of `local` is added;
/// * a credential revoked in `stored` is never published again;
/// * `local`'s credentials replace the shared ones only when its
///   generation is above the shared one and it revives no revoked key;
///   otherwise it is [`Publication::Refused`] (the shared credentials stay,
///   minus the keys `local` revokes);
/// * an empty `local` (no credential, no tombstone, generation 0: a replica
///   without its own file) publishes nothing.
///
/// Returns the outcome and the set to write (`None`: nothing to write).
pub fn plan_publication(
    local: &CredentialsFile,
    stored: Option<&CredentialsFile>,
) -> (Publication, Option<CredentialsFile>) {
    let empty = local.credentials.is_empty() && local.revoked.is_empty() && local.generation == 0;
    let Some(stored) = stored else {
        if empty {
            return (Publication::UpToDate, None);
        }
        return (
            Publication::Published {
                generation: local.generation,
            },
            Some(local.clone()),
        );
    };
    if empty {
        return (Publication::UpToDate, None);
    }
    let stored_revoked: std::collections::HashSet<&str> =
        stored.revoked.iter().map(|r| r.key_id.as_str()).collect();
    let mut tombs = stored.revoked.clone();
    for r in &local.revoked {
        if !stored_revoked.contains(r.key_id.as_str()) {
            tombs.push(r.clone());
        }
    }
    let new_tombs = tombs.len() - stored.revoked.len();
    let revived: Vec<String> = local
        .credentials
        .iter()
        .filter(|c| stored_revoked.contains(c.key_id.as_str()))
        .map(|c| format!("{} ({})", c.key_id, c.agent_id))
        .collect();
    if revived.is_empty() && local.generation > stored.generation {
        let mut out = local.clone();
        out.revoked = tombs;
        return (
            Publication::Published {
                generation: local.generation,
            },
            Some(out),
        );
    }
    let dead: std::collections::HashSet<&str> = tombs.iter().map(|r| r.key_id.as_str()).collect();
    let mut merged = stored.clone();
    merged
        .credentials
        .retain(|c| !dead.contains(c.key_id.as_str()));
    merged.revoked = tombs.clone();
    let write = (merged != *stored).then_some(merged);
    let key_set = |f: &CredentialsFile| -> std::collections::BTreeSet<(String, String)> {
        f.credentials
            .iter()
            .filter(|c| !dead.contains(c.key_id.as_str()))
            .map(|c| (c.key_id.clone(), toml::to_string(c).unwrap_or_default()))
            .collect()
    };
    let (mine, theirs) = (key_set(local), key_set(stored));
    if revived.is_empty() && mine == theirs {
        // Same credentials (an older copy of the same set, or a file that
        // only adds revocations): nothing refused.
        return match write {
            Some(w) => (
                Publication::Published {
                    generation: w.generation,
                },
                Some(w),
            ),
            None => (Publication::UpToDate, None),
        };
    }
    let agent_of = |k: &str| {
        local
            .credentials
            .iter()
            .chain(&stored.credentials)
            .find(|c| c.key_id == k)
            .map(|c| c.agent_id.clone())
            .unwrap_or_default()
    };
    let differs_for: std::collections::BTreeSet<String> = mine
        .symmetric_difference(&theirs)
        .map(|(k, _)| agent_of(k))
        .collect();
    (
        Publication::Refused {
            file_generation: local.generation,
            stored_generation: stored.generation,
            revived,
            differs_for: differs_for.into_iter().collect(),
            revocations_merged: new_tombs,
        },
        write,
    )
}

impl CredentialsFile {
    /// Drops the credentials whose key is revoked in this set; returns them
    /// (a shared set written by an older replica may hold some).
    pub fn drop_revoked(&mut self, also: &[RevokedRecord]) -> Vec<CredentialRecord> {
        let dead: std::collections::HashSet<&str> = self
            .revoked
            .iter()
            .chain(also)
            .map(|r| r.key_id.as_str())
            .collect();
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.credentials)
            .into_iter()
            .partition(|c| dead.contains(c.key_id.as_str()));
        self.credentials = kept;
        gone
    }
}

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
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_chmod_changes_the_stamp() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("creds.toml");
        std::fs::write(&p, "x").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o664)).expect("chmod");
        let before = FileStamp::of(&p);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_ne!(before, FileStamp::of(&p));
    }

    #[test]
    fn tokens_verify_only_against_their_own_record() {
        let mut f = CredentialsFile::default();
        let ta = f.add("node-a", "team-a", &[], 1.0).expect("add");
        let tb = f.add("node-b", "team-b", &[], 1.0).expect("add");
        assert!(f.validate().is_ok());
        let idx = f.index();
        assert_eq!(idx.len(), 2);
        let a = idx.verify(&ta).expect("a verifies");
        assert_eq!(&*a.agent_id, "node-a");
        assert_eq!(&*a.tenant, "team-a");
        assert_eq!(&*idx.verify(&tb).expect("b").agent_id, "node-b");
        // A token with a's key id and another secret does not verify.
        let kid = token_key_id(&ta).expect("kid");
        let forged = format!("{TOKEN_PREFIX}.{kid}.{}", "0".repeat(SECRET_HEX));
        assert!(idx.verify(&forged).is_none());
        assert!(idx.verify("not-a-token").is_none());
        assert!(idx.verify(&ta.to_uppercase()).is_none());
        // The file never contains the token.
        let text = toml::to_string(&f).expect("toml");
        assert!(!text.contains(&ta[ta.len() - 20..]));
    }

    #[test]
    fn an_agent_belongs_to_one_tenant_and_revoke_removes_it() {
        let mut f = CredentialsFile::default();
        f.add("n1", "t1", &[], 0.0).expect("add");
        f.add("n1", "t1", &[], 0.0)
            .expect("second key, same tenant");
        assert!(f.add("n1", "t2", &[], 0.0).is_err());
        assert!(f.add("n2", "bad/tenant", &[], 0.0).is_err());
        assert!(f.add("", "t1", &[], 0.0).is_err());
        assert_eq!(f.revoke(Some("n1"), None, 9.0), 2);
        assert!(f.credentials.is_empty());
        assert_eq!(f.revoked.len(), 2, "revoked keys stay as tombstones");
        assert_eq!(f.generation, 3, "two adds and a revoke");
        assert_eq!(f.revoke(Some("n1"), None, 9.0), 0);
        assert_eq!(f.generation, 3, "nothing revoked: same generation");
    }

    #[test]
    fn file_roundtrips_and_is_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("credentials.toml");
        assert!(CredentialsFile::load(&p, true)
            .expect("missing ok")
            .credentials
            .is_empty());
        assert!(CredentialsFile::load(&p, false).is_err());
        let mut f = CredentialsFile::default();
        let t = f.add("n1", "t1", &[], 5.0).expect("add");
        f.save(&p).expect("save");
        let back = CredentialsFile::load(&p, false).expect("load");
        assert_eq!(back, f);
        assert!(back.index().verify(&t).is_some());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).expect("chmod");
            let e = CredentialsFile::load(&p, false).expect_err("world-writable");
            assert!(e.to_string().contains("writable by group or others"), "{e}");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
            assert!(
                CredentialsFile::load(&p, false).is_ok(),
                "world-readable is fine"
            );
        }
        std::fs::write(&p, "[[credential]]\nkey_id = \"x\"\n").expect("write");
        assert!(CredentialsFile::load(&p, false).is_err());
        let mut dup = f.clone();
        dup.credentials.push(f.credentials[0].clone());
        assert!(dup.validate().is_err());
    }

    #[test]
    fn files_without_generation_or_tombstones_still_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("credentials.toml");
        let old = format!(
            "[[credential]]\nkey_id = \"{}\"\nagent_id = \"n1\"\ntenant = \"t\"\nsha256 = \"{}\"\ncreated_s = 1.0\n",
            "0123456789abcdef",
            "a".repeat(64)
        );
        std::fs::write(&p, old).expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        }
        let mut f = CredentialsFile::load(&p, false).expect("an old file loads");
        assert_eq!(
            (f.generation, f.credentials.len(), f.revoked.len()),
            (0, 1, 0)
        );
        f.revoke(Some("n1"), None, 2.0);
        f.save(&p).expect("save");
        let text = std::fs::read_to_string(&p).expect("read");
        assert!(
            text.contains("generation = 1") && text.contains("[[revoked]]"),
            "{text}"
        );
        assert_eq!(CredentialsFile::load(&p, false).expect("reload"), f);
    }

    #[test]
    fn a_revoked_key_next_to_its_credential_is_refused_with_its_index() {
        let mut f = CredentialsFile::default();
        f.add("n1", "t", &[], 0.0).expect("add");
        let stale = f.clone();
        f.revoke(Some("n1"), None, 1.0);
        let mut both = f.clone();
        both.credentials = stale.credentials.clone();
        let e = both.validate().expect_err("revoked and present").join("; ");
        assert!(
            e.contains("credential[0].key_id") && e.contains("was revoked (revoked[0])"),
            "{e}"
        );
        // Never verifies, even in an unvalidated set.
        assert!(both.index().is_empty());
    }

    #[test]
    fn publication_keeps_revocations_and_refuses_stale_files() {
        let mut f = CredentialsFile::default();
        f.add("a", "t", &[], 0.0).expect("add");
        f.add("s", "t", &[], 0.0).expect("add");
        // Nothing shared yet: published as is; an empty file publishes nothing.
        let (out, w) = plan_publication(&f, None);
        assert_eq!(out, Publication::Published { generation: 2 });
        assert_eq!(w.as_ref(), Some(&f));
        assert_eq!(
            plan_publication(&CredentialsFile::default(), Some(&f)),
            (Publication::UpToDate, None)
        );
        assert_eq!(
            plan_publication(&f, Some(&f)),
            (Publication::UpToDate, None)
        );
        let backup = f.clone();
        f.revoke(Some("s"), None, 1.0);
        let (out, w) = plan_publication(&f, Some(&backup));
        assert_eq!(out, Publication::Published { generation: 3 });
        let shared = w.expect("write");
        // The backup: older, and it holds a revoked key.
        let (out, w) = plan_publication(&backup, Some(&shared));
        assert!(w.is_none(), "nothing to write");
        match &out {
            Publication::Refused {
                file_generation: 2,
                stored_generation: 3,
                revived,
                differs_for,
                revocations_merged: 0,
            } => {
                assert_eq!(revived.len(), 1);
                assert!(revived[0].ends_with("(s)"), "{revived:?}");
                assert!(
                    differs_for.is_empty(),
                    "revived keys are listed apart: {differs_for:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(
            out.to_string().contains("a revoked key never comes back"),
            "{out}"
        );
        // A forged high generation does not revive it.
        let mut high = backup.clone();
        high.generation = 50;
        assert!(matches!(
            plan_publication(&high, Some(&shared)).0,
            Publication::Refused { .. }
        ));
        // Same generation, other credentials: refused (two edits raced).
        let mut side = shared.clone();
        side.credentials.clear();
        side.add("x", "t", &[], 2.0).expect("add");
        side.generation = shared.generation;
        assert!(matches!(
            plan_publication(&side, Some(&shared)).0,
            Publication::Refused {
                revocations_merged: 0,
                ..
            }
        ));
        // A stale file's own revocations still apply to the shared set.
        let mut stale_revoke = backup.clone();
        stale_revoke.revoke(Some("a"), None, 3.0);
        let (out, w) = plan_publication(&stale_revoke, Some(&shared));
        assert!(
            matches!(
                out,
                Publication::Refused {
                    revocations_merged: 1,
                    ..
                }
            ),
            "{out}"
        );
        let merged = w.expect("merged revocations");
        assert!(merged.credentials.is_empty());
        assert_eq!(merged.revoked.len(), 2);
        assert_eq!(merged.generation, shared.generation);
        // An older copy with the same credentials only adds its tombstones.
        let mut copy = merged.clone();
        copy.revoked.truncate(1);
        copy.generation = 1;
        assert_eq!(
            plan_publication(&copy, Some(&merged)),
            (Publication::UpToDate, None)
        );
    }
}

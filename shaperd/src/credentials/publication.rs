//! Publishing a credentials file over the shared set (several replicas):
//! the pure rule both stores use.

use super::{CredentialRecord, CredentialsFile, RevokedRecord};

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

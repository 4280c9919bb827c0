//! What must survive an agent restart: each container's original limits (its
//! request once the agent has shrunk it), the limits the agent set (written
//! ahead of each update) and the containers waiting for room (evicted, or
//! OOM-killed at the agent's cut), in the order they stopped. Stored as
//! JSON, written atomically.

use crate::runtime::Limits;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tailor_core::Resources;

/// Why a container waits for room.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitCause {
    /// The agent stopped it to make room.
    #[default]
    Evicted,
    /// OOM-killed at a memory limit the agent had cut below its request,
    /// with no restart policy to start it again.
    OomKilled,
}

impl WaitCause {
    pub fn as_str(&self) -> &'static str {
        match self {
            WaitCause::Evicted => "evicted",
            WaitCause::OomKilled => "oom_killed",
        }
    }
}

/// A container waiting for room: one the agent stopped to make room, or
/// one its cut got OOM-killed ([`WaitCause`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Eviction {
    pub id: String,
    pub name: String,
    pub app: String,
    /// When it was stopped, or killed (Unix seconds).
    pub at_s: f64,
    /// The shaper's explanation, or the kill's limit.
    pub reason: String,
    /// What it needs to come back (its request).
    pub request: Resources,
    /// Absent in a state written before OOM-killed containers waited too.
    #[serde(default)]
    pub cause: WaitCause,
}

/// The limits the agent set on a container, or was about to set: what an
/// agent starting again may find on it with no one else having changed
/// them. Anything else was changed by hand while no agent ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SetLimits {
    /// The limits last confirmed: by the runtime after an update, or as
    /// found when the agent started.
    #[serde(default)]
    pub applied: Option<Limits>,
    /// Limits written ahead of an update the runtime has not confirmed: an
    /// agent killed between the update and its next state write may have
    /// left them.
    #[serde(default)]
    pub pending: Option<Limits>,
}

impl SetLimits {
    /// The limits the agent may have left, newest first.
    pub fn candidates(&self) -> impl Iterator<Item = &Limits> {
        self.pending.iter().chain(self.applied.iter())
    }
}

/// The persisted state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PersistedState {
    /// Container id -> limits it had when the agent first saw it.
    #[serde(default)]
    pub originals: BTreeMap<String, Limits>,
    /// Container id -> the limits the agent set on it (see [`SetLimits`]).
    #[serde(default)]
    pub set_limits: BTreeMap<String, SetLimits>,
    /// Whether `set_limits` is written ahead of every update. False in a
    /// state written by an agent older than that: its containers' limits
    /// cannot be told from a change by hand, so they are taken as the
    /// agent's own for that start.
    #[serde(default)]
    pub writes_ahead: bool,
    /// Containers waiting for room, oldest first.
    #[serde(default)]
    pub evicted: Vec<Eviction>,
    /// Application name -> failures seen: its containers' OOM kills and
    /// its evictions as a whole (`NodeActionKind::fails_application`).
    #[serde(default)]
    pub app_failures: BTreeMap<String, u32>,
    /// Container id -> end (Docker's `State.FinishedAt`, Unix seconds) of
    /// its last OOM-killed run already counted, so that an OOM kill found
    /// by `inspect` is counted once, across agent restarts too.
    #[serde(default)]
    pub oom_exits: BTreeMap<String, f64>,
}

/// Reads and writes [`PersistedState`]; an empty path keeps it in memory.
#[derive(Clone, Debug)]
pub struct StateStore {
    path: Option<PathBuf>,
}

impl StateStore {
    pub fn new(path: &Path) -> Self {
        Self {
            path: (!path.as_os_str().is_empty()).then(|| path.to_path_buf()),
        }
    }

    /// The stored state; a missing file is an empty state, a corrupt one is
    /// logged and ignored.
    pub fn load(&self) -> PersistedState {
        let Some(path) = &self.path else {
            return PersistedState::default();
        };
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "ignoring unreadable agent state file");
                PersistedState::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => PersistedState::default(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read agent state file");
                PersistedState::default()
            }
        }
    }

    /// Writes the state (temp file + rename). Failures are returned; the
    /// caller logs them and carries on.
    pub fn save(&self, state: &PersistedState) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir)?;
            }
        }
        let tmp = path.with_extension("json.tmp");
        let bytes = serde_json::to_vec_pretty(state).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::CpuLimit;

    #[test]
    fn roundtrip_and_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = StateStore::new(&dir.path().join("sub/state.json"));
        assert_eq!(store.load(), PersistedState::default());
        let mut s = PersistedState::default();
        s.originals.insert(
            "abc".into(),
            Limits {
                mem_bytes: Some(1 << 30),
                cpu: CpuLimit::Nano {
                    nano_cpus: 500_000_000,
                },
                mem_swap_bytes: Some(-1),
                mem_reservation_bytes: None,
            },
        );
        s.set_limits.insert(
            "abc".into(),
            SetLimits {
                applied: None,
                pending: s.originals.get("abc").copied(),
            },
        );
        s.writes_ahead = true;
        s.evicted.push(Eviction {
            id: "def".into(),
            name: "d".into(),
            app: "a".into(),
            at_s: 5.0,
            reason: "r".into(),
            request: Resources::new(1.0, 2.0),
            cause: WaitCause::OomKilled,
        });
        store.save(&s).expect("save");
        assert_eq!(store.load(), s);
        std::fs::write(dir.path().join("sub/state.json"), b"{not json").expect("write");
        assert_eq!(store.load(), PersistedState::default());
        let mem = StateStore::new(Path::new(""));
        mem.save(&s).expect("no-op");
        assert_eq!(mem.load(), PersistedState::default());
    }
}

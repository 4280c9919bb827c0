//! Exclusive advisory locks (`flock`) the agent holds for its whole life.
//! A lock goes with the process: a crashed agent leaves none behind.
//!
//! - **One agent per state file:** `<state_file>.lock`, so a second agent
//!   (or an `--once` preview) with the same state file is refused at start
//!   instead of writing into the live agent's state, journal and recording.
//!   Taking it also proves at start that the state directory is writable.
//! - **One shaping agent per host:** `host_lock` (default
//!   `/run/tailor/agent.lock`). Two agents that act on one host each size
//!   against the whole host, so together they could hand out more memory
//!   than it has. An agent with `actuation = "shape"` takes this lock; a
//!   second one is refused, naming the holder's pid and state file. An agent
//!   that only recommends changes nothing and takes no host lock.

use crate::AgentError;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Default `host_lock`.
pub const DEFAULT_HOST_LOCK: &str = "/run/tailor/agent.lock";

/// A held lock; released when dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
    path: PathBuf,
}

impl FileLock {
    /// Takes the lock of `state_file` (creating its directory), or says
    /// which process holds it.
    pub fn state(state_file: &Path) -> Result<Self, AgentError> {
        let mut name = state_file.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        Self::acquire(
            &path,
            &std::process::id().to_string(),
            "the state directory",
            |holder| {
                format!(
                    "another tailor agent (pid {}) uses this state file; stop it, or give this one another state_file",
                    holder.trim()
                )
            },
        )
        .map_err(|message| AgentError::StateLock { path, message })
    }

    /// Takes the host lock at `path` for the agent whose state file is
    /// `state_file`, or says which agent holds it.
    pub fn host(path: &Path, state_file: &Path) -> Result<Self, AgentError> {
        let content = format!("{} {}", std::process::id(), state_file.display());
        Self::acquire(path, &content, "host_lock's directory", |holder| {
            let (pid, state) = holder.trim().split_once(' ').unwrap_or((holder.trim(), ""));
            let state = if state.is_empty() { "none" } else { state };
            format!(
                "another tailor agent (pid {pid}, state file {state}) shapes this host; \
                 stop it, or let only one agent shape a host (a second one can run with \
                 actuation = \"recommend\"); agents that share a host on purpose each need \
                 their share of it in [capacity] and a host_lock of their own"
            )
        })
        .map_err(|message| AgentError::HostLock {
            path: path.to_path_buf(),
            message,
        })
    }

    /// Opens (creating it and its directory) and locks `path`, then writes
    /// `content` into it; `held(content of the holder)` words a refusal.
    fn acquire(
        path: &Path,
        content: &str,
        dir_name: &str,
        held: impl FnOnce(&str) -> String,
    ) -> Result<Self, String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {dir_name}: {e}"))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("cannot open (is {dir_name} writable?): {e}"))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(held(&std::fs::read_to_string(path).unwrap_or_default()));
            }
            Err(TryLockError::Error(e)) => return Err(format!("cannot lock: {e}")),
        }
        file.set_len(0)
            .and_then(|()| write!(file, "{content}"))
            .map_err(|e| format!("cannot write (is {dir_name} writable?): {e}"))?;
        Ok(Self {
            _file: file,
            path: path.to_path_buf(),
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("sub/agent-state.json");
        let first = FileLock::state(&state).expect("first");
        assert!(first.path().ends_with("agent-state.json.lock"));
        let e = FileLock::state(&state).expect_err("second");
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        assert!(msg.contains("agent-state.json.lock"), "{msg}");
        drop(first);
        FileLock::state(&state).expect("free again");
    }

    #[test]
    fn an_unwritable_state_directory_is_refused() {
        let e = FileLock::state(Path::new("/proc/nope/state.json")).expect_err("refused");
        assert!(e.to_string().contains("/proc/nope/state.json.lock"), "{e}");
    }

    #[test]
    fn a_second_shaping_agent_on_the_host_is_refused_with_the_first_ones_state_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = dir.path().join("run/agent.lock");
        let first = FileLock::host(&lock, Path::new("/var/lib/a/state.json")).expect("first");
        let e = FileLock::host(&lock, Path::new("/var/lib/b/state.json")).expect_err("second");
        let msg = e.to_string();
        assert!(msg.starts_with("host lock "), "{msg}");
        assert!(msg.contains(&lock.display().to_string()), "{msg}");
        assert!(
            msg.contains(&format!(
                "pid {}, state file /var/lib/a/state.json",
                std::process::id()
            )),
            "{msg}"
        );
        drop(first);
        let _no_state = FileLock::host(&lock, Path::new("")).expect("free again");
        let e = FileLock::host(&lock, Path::new("/b"))
            .expect_err("held by an agent without a state file");
        assert!(e.to_string().contains("state file none"), "{e}");
    }
}

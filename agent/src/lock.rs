//! One agent per state file. The agent holds an exclusive advisory lock
//! (`flock`) on `<state_file>.lock` for its whole life, so a second agent
//! (or an `--once` preview) with the same state file is refused at start
//! instead of writing into the live agent's state, journal and recording.
//! The lock goes with the process: a crashed agent leaves none behind.
//! Taking it also proves at start that the state directory is writable.

use crate::AgentError;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The held lock; released when dropped.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
    path: PathBuf,
}

impl StateLock {
    /// Takes the lock of `state_file` (creating its directory), or says
    /// which process holds it.
    pub fn acquire(state_file: &Path) -> Result<Self, AgentError> {
        let mut name = state_file.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        let err = |message: String| AgentError::StateLock {
            path: path.clone(),
            message,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| err(format!("cannot create the state directory: {e}")))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| {
                err(format!(
                    "cannot open (is the state directory writable?): {e}"
                ))
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                return Err(err(format!(
                    "another tailor agent (pid {}) uses this state file; stop it, or give this one another state_file",
                    holder.trim()
                )));
            }
            Err(TryLockError::Error(e)) => return Err(err(format!("cannot lock: {e}"))),
        }
        file.set_len(0)
            .and_then(|()| write!(file, "{}", std::process::id()))
            .map_err(|e| {
                err(format!(
                    "cannot write (is the state directory writable?): {e}"
                ))
            })?;
        Ok(Self { _file: file, path })
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
        let first = StateLock::acquire(&state).expect("first");
        assert!(first.path().ends_with("agent-state.json.lock"));
        let e = StateLock::acquire(&state).expect_err("second");
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        assert!(msg.contains("agent-state.json.lock"), "{msg}");
        drop(first);
        StateLock::acquire(&state).expect("free again");
    }

    #[test]
    fn an_unwritable_state_directory_is_refused() {
        let e = StateLock::acquire(Path::new("/proc/nope/state.json")).expect_err("refused");
        assert!(e.to_string().contains("/proc/nope/state.json.lock"), "{e}");
    }
}

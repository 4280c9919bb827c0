//! One run's output files, written into an `--out` directory all or
//! nothing (`tailor replay`, `tune` and `frontier`).
//!
//! Every file is first written to a hidden temporary file in the same
//! directory (`.tailor-PID-N-NAME`, so it keeps its extension, which the
//! PNG encoder reads). [`Staged::commit`] renames them into place only
//! once all were written; until then, and whenever it fails, the files of
//! an earlier run are left as they were and the temporary files are
//! removed. Errors name the output file, not the directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::SimError;

/// Distinguishes the temporary files of several [`Staged`] sets of one
/// process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// One output file: its temporary copy (`None` when it could not be
/// produced, e.g. a plot that failed: an older copy is then removed at
/// commit rather than left beside the new files) and its final path.
struct Entry {
    tmp: Option<PathBuf>,
    dest: PathBuf,
}

/// The output files of one run, staged in their directory.
pub struct Staged {
    dir: PathBuf,
    entries: Vec<Entry>,
}

fn io_err(path: &Path, source: std::io::Error) -> SimError {
    SimError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl Staged {
    /// Creates `dir` (and its parents) if needed.
    pub fn new(dir: &Path) -> Result<Self, SimError> {
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            entries: Vec::new(),
        })
    }

    /// The directory the files go to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The final path of output `name`.
    pub fn dest(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Creates (empty) and registers the temporary file of output `name`,
    /// and returns its path, for a writer that takes a path (a plotting
    /// backend). See [`abandon`](Self::abandon) when that writer fails.
    pub fn path_for(&mut self, name: &str) -> Result<PathBuf, SimError> {
        let dest = self.dest(name);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = self
            .dir
            .join(format!(".tailor-{}-{n}-{name}", std::process::id()));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_err(&dest, e))?;
        self.entries.push(Entry {
            tmp: Some(tmp.clone()),
            dest,
        });
        Ok(tmp)
    }

    /// Writes output `name` (to its temporary file).
    pub fn write(&mut self, name: &str, bytes: impl AsRef<[u8]>) -> Result<(), SimError> {
        let tmp = self.path_for(name)?;
        let dest = self.dest(name);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| io_err(&dest, e))?;
        f.write_all(bytes.as_ref())
            .and_then(|()| f.flush())
            .map_err(|e| io_err(&dest, e))
    }

    /// Output `name` could not be produced (its writer failed): its
    /// temporary file is removed now, and an older `name` is removed at
    /// commit, so no stale copy sits beside the new files.
    pub fn abandon(&mut self, name: &str) {
        let dest = self.dest(name);
        let mut known = false;
        for e in self.entries.iter_mut().filter(|e| e.dest == dest) {
            known = true;
            if let Some(t) = e.tmp.take() {
                let _ = std::fs::remove_file(t);
            }
        }
        if !known {
            self.entries.push(Entry { tmp: None, dest });
        }
    }

    /// Moves every staged file into place. Fails, naming the file and
    /// leaving the directory as it was, when a final path is taken by a
    /// directory or a file cannot be synced or renamed.
    pub fn commit(mut self) -> Result<(), SimError> {
        for e in &self.entries {
            if let (Ok(m), true) = (std::fs::symlink_metadata(&e.dest), e.tmp.is_some()) {
                if m.is_dir() {
                    return Err(io_err(
                        &e.dest,
                        std::io::Error::other("is a directory; no output file was replaced"),
                    ));
                }
            }
            if let Some(t) = &e.tmp {
                std::fs::File::open(t)
                    .and_then(|f| f.sync_all())
                    .map_err(|err| io_err(&e.dest, err))?;
            }
        }
        // Each older file is moved aside before its replacement comes in,
        // so that a failure part-way can put everything back.
        let mut done: Vec<(usize, Option<PathBuf>)> = Vec::new();
        let mut failure = None;
        for (i, e) in self.entries.iter().enumerate() {
            // (a directory where an abandoned file would be is left alone)
            let backup = if std::fs::symlink_metadata(&e.dest).is_ok_and(|m| !m.is_dir()) {
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                let b = self
                    .dir
                    .join(format!(".tailor-{}-{n}-old", std::process::id()));
                if let Err(err) = std::fs::rename(&e.dest, &b) {
                    failure = Some(io_err(&e.dest, err));
                    break;
                }
                Some(b)
            } else {
                None
            };
            done.push((i, backup));
            if let Some(t) = &e.tmp {
                if let Err(err) = std::fs::rename(t, &e.dest) {
                    failure = Some(io_err(&e.dest, err));
                    break;
                }
            }
        }
        if let Some(err) = failure {
            for (i, backup) in done.into_iter().rev() {
                let e = &self.entries[i];
                if e.tmp.as_ref().is_some_and(|t| !t.exists()) {
                    let _ = std::fs::remove_file(&e.dest);
                }
                if let Some(b) = backup {
                    let _ = std::fs::rename(b, &e.dest);
                }
            }
            return Err(err);
        }
        for (_, backup) in done {
            if let Some(b) = backup {
                let _ = std::fs::remove_file(b);
            }
        }
        for e in &mut self.entries {
            e.tmp = None;
        }
        Ok(())
    }
}

impl Drop for Staged {
    /// Removes the temporary files not committed.
    fn drop(&mut self) {
        for e in &mut self.entries {
            if let Some(t) = e.tmp.take() {
                let _ = std::fs::remove_file(t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn files_appear_only_at_commit() {
        let d = tempfile::tempdir().expect("tmp");
        let mut s = Staged::new(d.path()).expect("dir");
        s.write("a.md", "new a").expect("a");
        s.write("b.csv", "new b").expect("b");
        assert!(!d.path().join("a.md").exists());
        s.commit().expect("commit");
        assert_eq!(names(d.path()), ["a.md", "b.csv"]);
        assert_eq!(
            std::fs::read_to_string(d.path().join("a.md")).expect("a"),
            "new a"
        );
    }

    #[test]
    fn a_directory_in_the_way_leaves_the_old_files() {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::write(d.path().join("a.md"), "old a").expect("old");
        std::fs::create_dir(d.path().join("b.md")).expect("blocker");
        let mut s = Staged::new(d.path()).expect("dir");
        s.write("a.md", "new a").expect("a");
        s.write("b.md", "new b").expect("b");
        let err = s.commit().expect_err("blocked").to_string();
        assert!(
            err.starts_with(&format!("{}: ", d.path().join("b.md").display())),
            "{err}"
        );
        assert_eq!(names(d.path()), ["a.md", "b.md"]);
        assert_eq!(
            std::fs::read_to_string(d.path().join("a.md")).expect("a"),
            "old a"
        );
    }

    #[test]
    fn dropped_without_commit_leaves_nothing() {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::write(d.path().join("a.md"), "old a").expect("old");
        {
            let mut s = Staged::new(d.path()).expect("dir");
            s.write("a.md", "new a").expect("a");
            s.path_for("p.png").expect("p");
        }
        assert_eq!(names(d.path()), ["a.md"]);
        assert_eq!(
            std::fs::read_to_string(d.path().join("a.md")).expect("a"),
            "old a"
        );
    }

    #[test]
    fn an_abandoned_file_removes_its_stale_copy() {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::write(d.path().join("p.png"), "old plot").expect("old");
        let mut s = Staged::new(d.path()).expect("dir");
        let p = s.path_for("p.png").expect("p");
        std::fs::write(p, "half").expect("half");
        s.abandon("p.png");
        s.abandon("q.toml");
        std::fs::write(d.path().join("q.toml"), "old q").expect("old q");
        s.write("r.md", "report").expect("r");
        s.commit().expect("commit");
        assert_eq!(names(d.path()), ["r.md"]);
    }
}

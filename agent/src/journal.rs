//! The decision journal: every round's decisions with their explanations,
//! as JSON lines under the state directory (`decisions.jsonl`), rotated
//! once to `decisions.jsonl.1` when the current file passes half of
//! `max_bytes`, so both files together stay within `max_bytes`.
//!
//! Read by `/v1/decisions?since=SEQ_OR_TIME` (from memory: the last
//! [`MEMORY_ENTRIES`] entries) and `tailor history` (from the files).

use crate::agent::EarlyRound;
use crate::view::{ActionOutcome, NodeActionKind};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Entries kept in memory for `/v1/decisions?since=`.
pub const MEMORY_ENTRIES: usize = 1000;
/// Journal file name under the state directory.
pub const FILE_NAME: &str = "decisions.jsonl";
/// Longest journal line read back (bytes); longer lines are skipped.
const MAX_LINE_BYTES: usize = 4 << 20;
const MIB: f64 = 1024.0 * 1024.0;

/// One action of a round, in units (cores, MiB).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JournalAction {
    pub container: String,
    /// `resize`, `evict` or `evict_application`.
    pub action: String,
    /// `applied`, `recommended`, `unchanged`, `refused` or `failed`.
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_cpu_cores: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_cpu_cores: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_mem_mib: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_mem_mib: Option<f64>,
    pub explanation: String,
    /// Why it was refused or failed, or what the agent kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl JournalAction {
    pub fn from_outcome(o: &ActionOutcome) -> Self {
        let a = &o.action;
        let (action, from, to) = match &a.kind {
            NodeActionKind::Resize { from, to } => ("resize", Some(*from), Some(*to)),
            NodeActionKind::Evict { whole_app: true } => ("evict_application", None, None),
            NodeActionKind::Evict { whole_app: false } => ("evict", None, None),
        };
        Self {
            container: a.container_name.clone(),
            action: action.to_string(),
            result: o.result.as_str().to_string(),
            from_cpu_cores: from.map(|r| r.cpu_cores),
            to_cpu_cores: to.map(|r| r.cpu_cores),
            from_mem_mib: from.map(|r| r.mem_bytes / MIB),
            to_mem_mib: to.map(|r| r.mem_bytes / MIB),
            explanation: a.explanation.clone(),
            note: o.error.clone(),
        }
    }
}

/// An OOM kill the agent counted, in units (MiB, Unix seconds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JournalOomKill {
    pub container: String,
    /// The memory limit in force when it was killed.
    pub limit_mib: f64,
    /// The memory its next allocations are held at or above
    /// (`shaper::OomFloor`).
    pub floor_mib: f64,
    pub killed_at_s: f64,
    /// Found by `inspect` (the event stream missed it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub found_by_inspect: bool,
}

/// Original limits the agent gave back to a stopped container its cut got
/// OOM-killed (no restart policy), in units (cores, MiB): a `docker start`
/// runs it at its request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JournalRestore {
    pub container: String,
    /// The memory limit it was killed at, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed_at_mib: Option<f64>,
    /// Its limits now (`None`: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_cpu_cores: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_mem_mib: Option<f64>,
}

/// One round with at least one action, restore, restart or OOM kill.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Increasing over the journal's life (continues after a restart).
    pub seq: u64,
    pub round: u64,
    /// Unix seconds.
    pub at_s: f64,
    pub actuation: String,
    pub source: String,
    pub actions: Vec<JournalAction>,
    /// Original limits restored this round (before its actions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restored: Vec<JournalRestore>,
    /// Containers that waited for room restarted this round (evicted, or
    /// OOM-killed at a cut below their request).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restarted: Vec<String>,
    /// OOM kills counted since the previous round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oom_kills: Vec<JournalOomKill>,
    /// Why the memory watch ran this round early, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early: Option<EarlyRound>,
}

/// What one round decided and did, as [`Journal::append`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct RoundDecisions<'a> {
    pub round: u64,
    pub at_s: f64,
    pub actuation: &'a str,
    pub source: &'a str,
    pub outcomes: &'a [ActionOutcome],
    pub restored: &'a [JournalRestore],
    pub restarted: &'a [String],
    pub oom_kills: &'a [JournalOomKill],
    pub early: Option<&'a EarlyRound>,
}

/// What `since=` selects: entries after a sequence number, or after a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Since {
    Seq(u64),
    UnixS(f64),
}

impl Since {
    /// An integer below 10^9 is a sequence number; any other number is
    /// Unix seconds.
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Ok(n) = s.parse::<u64>() {
            if n < 1_000_000_000 {
                return Ok(Since::Seq(n));
            }
        }
        match s.parse::<f64>() {
            Ok(t) if t.is_finite() && t >= 0.0 => Ok(Since::UnixS(t)),
            _ => Err(format!(
                "since must be a sequence number or Unix seconds, got {s:?}"
            )),
        }
    }

    pub fn admits(&self, e: &JournalEntry) -> bool {
        match *self {
            Since::Seq(n) => e.seq > n,
            Since::UnixS(t) => e.at_s > t,
        }
    }
}

/// The journal: files (when a directory is set) and the last entries in
/// memory.
#[derive(Debug)]
pub struct Journal {
    path: Option<PathBuf>,
    max_bytes: u64,
    next_seq: u64,
    recent: VecDeque<JournalEntry>,
}

impl Journal {
    /// A journal in `dir` (`None`: memory only) bounded by `max_bytes`.
    /// Entries already on disk are read back (sequence numbers continue).
    pub fn open(dir: Option<&Path>, max_bytes: u64) -> Self {
        let path = dir.map(|d| d.join(FILE_NAME));
        let mut recent = VecDeque::new();
        if let Some(d) = dir {
            for e in read_dir(d) {
                if recent.len() == MEMORY_ENTRIES {
                    recent.pop_front();
                }
                recent.push_back(e);
            }
        }
        let next_seq = recent.back().map_or(1, |e: &JournalEntry| e.seq + 1);
        Self {
            path,
            max_bytes,
            next_seq,
            recent,
        }
    }

    /// Appends one round (rounds without actions, restores, restarts or
    /// OOM kills are skipped). A write error is logged; the entry stays in
    /// memory.
    pub fn append(&mut self, round: &RoundDecisions<'_>) {
        let RoundDecisions {
            round,
            at_s,
            actuation,
            source,
            outcomes,
            restored,
            restarted,
            oom_kills,
            early,
        } = *round;
        if outcomes.is_empty()
            && restored.is_empty()
            && restarted.is_empty()
            && oom_kills.is_empty()
        {
            return;
        }
        let entry = JournalEntry {
            seq: self.next_seq,
            round,
            at_s,
            actuation: actuation.to_string(),
            source: source.to_string(),
            actions: outcomes.iter().map(JournalAction::from_outcome).collect(),
            restored: restored.to_vec(),
            restarted: restarted.to_vec(),
            oom_kills: oom_kills.to_vec(),
            early: early.cloned(),
        };
        self.next_seq += 1;
        if let Some(p) = &self.path {
            if let Err(e) = write_line(p, &entry, self.max_bytes) {
                tracing::warn!(path = %p.display(), error = %e, "cannot write the decision journal");
            }
        }
        if self.recent.len() == MEMORY_ENTRIES {
            self.recent.pop_front();
        }
        self.recent.push_back(entry);
    }

    /// Entries in memory admitted by `since`, oldest first.
    pub fn since(&self, since: Option<Since>) -> Vec<JournalEntry> {
        self.recent
            .iter()
            .filter(|e| since.is_none_or(|s| s.admits(e)))
            .cloned()
            .collect()
    }
}

fn write_line(path: &Path, entry: &JournalEntry, max_bytes: u64) -> std::io::Result<()> {
    let mut line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    line.push('\n');
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > 0 && size + line.len() as u64 > max_bytes / 2 {
        let mut old = path.as_os_str().to_owned();
        old.push(".1");
        std::fs::rename(path, PathBuf::from(old))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(line.as_bytes())
}

/// Every readable entry in `dir` (the rotated file first), oldest first.
/// Lines that do not parse are skipped; a file that cannot be read is
/// logged and skipped (the agent reopening its own journal).
pub fn read_dir(dir: &Path) -> Vec<JournalEntry> {
    match read_dir_counted(dir) {
        Ok(back) => back.entries,
        Err(e) => {
            tracing::warn!(error = %e, "decision journal not read back");
            Vec::new()
        }
    }
}

/// How many skipped lines [`ReadBack`] describes (the others are counted).
pub const MAX_SKIPPED_SHOWN: usize = 5;

/// A journal line that was skipped: where, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedLine {
    pub path: PathBuf,
    /// 1-based.
    pub line: usize,
    /// Not UTF-8, too long, or the JSON parser's message.
    pub reason: String,
}

/// What [`read_dir_counted`] read back.
#[derive(Debug, Default)]
pub struct ReadBack {
    /// The entries of the lines that parse, oldest file first.
    pub entries: Vec<JournalEntry>,
    /// How many lines were skipped.
    pub skipped: usize,
    /// The first [`MAX_SKIPPED_SHOWN`] skipped lines.
    pub first_skipped: Vec<SkippedLine>,
    /// How many journal files (current and rotated) exist: 0 when the
    /// directory holds no journal.
    pub files: usize,
}

/// [`read_dir`], with the lines skipped because they do not parse (not
/// UTF-8, not a journal entry, or longer than a journal line can be): all
/// counted, the first few described; the entries of the other lines are
/// kept. A missing file holds no entry; a file that exists and cannot be
/// read (a directory, no permission) is an error naming it.
pub fn read_dir_counted(dir: &Path) -> Result<ReadBack, crate::AgentError> {
    let cur = dir.join(FILE_NAME);
    let old = dir.join(format!("{FILE_NAME}.1"));
    let mut back = ReadBack::default();
    for p in [old, cur] {
        let bytes = match std::fs::read(&p) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(crate::AgentError::Journal { path: p, source }),
        };
        back.files += 1;
        for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
            let entry = match std::str::from_utf8(raw) {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) if line.len() <= MAX_LINE_BYTES => {
                    serde_json::from_str::<JournalEntry>(line).map_err(|e| e.to_string())
                }
                Ok(_) => Err(format!("longer than {MAX_LINE_BYTES} bytes")),
                Err(e) => Err(format!("not UTF-8 ({e})")),
            };
            match entry {
                Ok(e) => back.entries.push(e),
                Err(reason) => {
                    back.skipped += 1;
                    if back.first_skipped.len() < MAX_SKIPPED_SHOWN {
                        back.first_skipped.push(SkippedLine {
                            path: p.clone(),
                            line: i + 1,
                            reason,
                        });
                    }
                }
            }
        }
    }
    Ok(back)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{NodeAction, Outcome};
    use tailor_core::Resources;

    fn outcome(name: &str) -> ActionOutcome {
        ActionOutcome {
            action: NodeAction {
                action_id: None,
                container_id: name.into(),
                container_name: name.into(),
                kind: NodeActionKind::Resize {
                    from: Resources::new(1.0, 512.0 * MIB),
                    to: Resources::new(0.25, 64.0 * MIB),
                },
                explanation: "forecast + buffer".into(),
            },
            result: Outcome::Recommended,
            error: None,
        }
    }

    /// Round `round` at `at_s` with these outcomes and nothing else.
    fn decided(round: u64, at_s: f64, outcomes: &[ActionOutcome]) -> RoundDecisions<'_> {
        RoundDecisions {
            round,
            at_s,
            actuation: "recommend",
            source: "local",
            outcomes,
            restored: &[],
            restarted: &[],
            oom_kills: &[],
            early: None,
        }
    }

    #[test]
    fn rotates_within_bound_and_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut j = Journal::open(Some(dir.path()), 4096);
        for round in 1..=100 {
            j.append(&decided(round, 1000.0 + round as f64, &[outcome("web")]));
        }
        let cur = std::fs::metadata(dir.path().join(FILE_NAME))
            .expect("file")
            .len();
        let old = std::fs::metadata(dir.path().join("decisions.jsonl.1"))
            .expect("rotated")
            .len();
        assert!(cur + old <= 4096, "{cur} + {old}");
        let back = read_dir(dir.path());
        assert!(!back.is_empty() && back.len() < 100);
        assert_eq!(back.last().map(|e| e.seq), Some(100));
        let a = &back[0].actions[0];
        assert_eq!((a.to_cpu_cores, a.to_mem_mib), (Some(0.25), Some(64.0)));
        // reopening continues the sequence
        let mut j2 = Journal::open(Some(dir.path()), 4096);
        j2.append(&decided(101, 2000.0, &[outcome("web")]));
        assert_eq!(j2.since(Some(Since::Seq(100))).len(), 1);
        assert_eq!(j2.since(Some(Since::Seq(100)))[0].seq, 101);
        assert_eq!(j2.since(Some(Since::UnixS(1099.5))).len(), 2);
    }

    /// A round with an OOM kill and nothing else is journaled, and so is
    /// one with a restore; a line written before kills and restores were
    /// journaled still reads.
    #[test]
    fn an_oom_kill_alone_makes_an_entry() {
        let mut j = Journal::open(None, 0);
        j.append(&decided(1, 1000.0, &[]));
        assert!(j.since(None).is_empty(), "nothing happened");
        let kill = JournalOomKill {
            container: "web".into(),
            limit_mib: 42.0,
            floor_mib: 256.0,
            killed_at_s: 999.5,
            found_by_inspect: false,
        };
        j.append(&RoundDecisions {
            oom_kills: std::slice::from_ref(&kill),
            ..decided(2, 1010.0, &[])
        });
        let back = j.since(None);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].oom_kills, vec![kill]);
        // so is a restore alone (QA D10)
        let restore = JournalRestore {
            container: "web".into(),
            killed_at_mib: Some(42.0),
            to_cpu_cores: Some(0.5),
            to_mem_mib: Some(256.0),
        };
        j.append(&RoundDecisions {
            restored: std::slice::from_ref(&restore),
            ..decided(3, 1020.0, &[])
        });
        assert_eq!(j.since(None).len(), 2);
        assert_eq!(j.since(None)[1].restored, vec![restore]);
        let old: JournalEntry = serde_json::from_str(
            r#"{"seq":1,"round":1,"at_s":1.0,"actuation":"shape","source":"local","actions":[]}"#,
        )
        .expect("an older line");
        assert!(old.oom_kills.is_empty() && old.restored.is_empty());
    }

    /// A line that is not UTF-8 is skipped and counted like a line that is
    /// not JSON; the file's other entries are kept. A journal path that
    /// cannot be read (a directory) is an error naming it.
    #[test]
    fn a_bad_line_is_counted_and_an_unreadable_file_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut j = Journal::open(Some(dir.path()), 1 << 20);
        j.append(&decided(1, 1000.0, &[outcome("web")]));
        j.append(&decided(2, 1300.0, &[outcome("db")]));
        let path = dir.path().join(FILE_NAME);
        let text = std::fs::read(&path).expect("read");
        let mut bytes = b"{\"seq\": 0, \xff\xfe}\r\nnot json\n\n".to_vec();
        bytes.extend_from_slice(&text);
        std::fs::write(&path, bytes).expect("write");
        let back = read_dir_counted(dir.path()).expect("readable");
        assert_eq!(back.skipped, 2);
        assert_eq!(back.files, 1);
        let lines: Vec<(usize, &str)> = back
            .first_skipped
            .iter()
            .map(|s| (s.line, s.reason.as_str()))
            .collect();
        assert_eq!(lines[0].0, 1);
        assert!(lines[0].1.starts_with("not UTF-8"), "{lines:?}");
        assert_eq!(lines[1].0, 2);
        assert!(lines[1].1.contains("expected ident"), "{lines:?}");
        assert!(back.first_skipped.iter().all(|s| s.path == path));
        assert_eq!(
            back.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(read_dir(dir.path()).len(), 2);

        let other = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(other.path().join(FILE_NAME)).expect("mkdir");
        let err = read_dir_counted(other.path()).expect_err("a directory");
        assert!(err.to_string().contains(FILE_NAME), "{err}");
        assert!(read_dir(other.path()).is_empty());
        // a missing journal holds no entry
        let empty = tempfile::tempdir().expect("tempdir");
        let none = read_dir_counted(empty.path()).expect("none");
        assert_eq!((none.skipped, none.files), (0, 0));
    }

    #[test]
    fn since_parses_seq_or_time() {
        assert_eq!(Since::parse("42"), Ok(Since::Seq(42)));
        assert_eq!(Since::parse("1700000000"), Ok(Since::UnixS(1.7e9)));
        assert_eq!(
            Since::parse("1700000000.5"),
            Ok(Since::UnixS(1_700_000_000.5))
        );
        assert!(Since::parse("yesterday").is_err());
        assert!(Since::parse("-1").is_err());
    }
}

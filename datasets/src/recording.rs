//! Recordings: a bounded, gzip-compressed file of JSON lines, one record a
//! line, written as it goes (the agent records what it sees each round).
//!
//! - [`RecordWriter`] flushes every record to the file (a crash loses at
//!   most the record being written) and stops at `max_bytes` of compressed
//!   output: the file never grows past its bound, and what it holds always
//!   starts at the beginning of the run, so it can be replayed from scratch.
//! - [`RecordReader`] reads records back, refusing any line longer than
//!   [`MAX_RECORD_BYTES`]; a file cut short by a crash (no gzip trailer)
//!   ends at its last whole record.
//!
//! The record types are the caller's (serde): this module only moves lines.

use crate::DatasetError;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::path::{Path, PathBuf};

/// Longest record accepted when reading (and written), in bytes.
pub const MAX_RECORD_BYTES: usize = 64 << 20;

/// Counts the bytes written through it.
struct Counting {
    file: File,
    bytes: u64,
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Appends records to a new recording file, up to a size bound.
pub struct RecordWriter {
    path: PathBuf,
    enc: GzEncoder<Counting>,
    max_bytes: u64,
    records: u64,
    full: bool,
}

impl std::fmt::Debug for RecordWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordWriter")
            .field("path", &self.path)
            .field("records", &self.records)
            .field("full", &self.full)
            .finish()
    }
}

/// Previous runs' recordings kept beside a new one by [`rotate_previous`].
pub const KEEP_PREVIOUS_RUNS: usize = 10;

/// Moves a non-empty recording at `path` aside before a new run writes
/// there: `recording.jsonl.gz` becomes `recording.<unix s>.jsonl.gz` (its
/// last write), so a restart does not erase what was recorded. Keeps the
/// newest [`KEEP_PREVIOUS_RUNS`] such files (an agent restarting in a loop
/// cannot fill the disk). Returns where it went.
pub fn rotate_previous(path: &Path) -> Result<Option<PathBuf>, DatasetError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() > 0 => m,
        _ => return Ok(None),
    };
    let (dir, stem, ext) = split_name(path);
    // Earlier runs' files, by (last write, counter within that second).
    let mut previous: Vec<((u64, u64), PathBuf)> = std::fs::read_dir(&dir)
        .map_err(|e| DatasetError::io(&dir, e))?
        .filter_map(|e| {
            let p = e.ok()?.path();
            let name = p.file_name()?.to_str()?;
            let mid = name.strip_prefix(&format!("{stem}."))?.strip_suffix(&ext)?;
            let (t, n) = mid.split_once('-').unwrap_or((mid, "0"));
            Some(((t.parse().ok()?, n.parse().ok()?), p))
        })
        .collect();
    let t = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let n = previous
        .iter()
        .filter(|((pt, _), _)| *pt == t)
        .map(|((_, pn), _)| pn + 1)
        .max()
        .unwrap_or(0);
    let to = match n {
        0 => dir.join(format!("{stem}.{t}{ext}")),
        n => dir.join(format!("{stem}.{t}-{n}{ext}")),
    };
    std::fs::rename(path, &to).map_err(|e| DatasetError::io(path, e))?;
    previous.push(((t, n), to.clone()));
    previous.sort();
    let excess = previous.len().saturating_sub(KEEP_PREVIOUS_RUNS);
    for (_, old) in previous.drain(..excess) {
        std::fs::remove_file(&old).map_err(|e| DatasetError::io(&old, e))?;
    }
    Ok(Some(to))
}

/// `dir/recording.jsonl.gz` -> (`dir`, `recording`, `.jsonl.gz`).
fn split_name(path: &Path) -> (PathBuf, String, String) {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.split_once('.') {
        Some((stem, rest)) if !stem.is_empty() => (dir, stem.to_string(), format!(".{rest}")),
        _ => (dir, name, String::new()),
    }
}

impl RecordWriter {
    /// Creates (or truncates) `path`, creating its directory (see
    /// [`rotate_previous`] to keep what it held).
    pub fn create(path: &Path, max_bytes: u64) -> Result<Self, DatasetError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| DatasetError::io(dir, e))?;
        }
        let file = File::create(path).map_err(|e| DatasetError::io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            enc: GzEncoder::new(Counting { file, bytes: 0 }, Compression::default()),
            max_bytes,
            records: 0,
            full: false,
        })
    }

    /// Appends one record and flushes it to the file. Returns `Ok(false)`
    /// (and writes nothing more, ever) once the file has reached its bound.
    pub fn append<T: Serialize>(&mut self, record: &T) -> Result<bool, DatasetError> {
        if self.full {
            return Ok(false);
        }
        let mut line = serde_json::to_vec(record).map_err(|e| {
            DatasetError::format(&self.path, format!("record not serialisable: {e}"))
        })?;
        line.push(b'\n');
        if line.len() > MAX_RECORD_BYTES
            || self.enc.get_ref().bytes + line.len() as u64 / 4 > self.max_bytes
        {
            // A record compresses to about a quarter or less: stop before
            // the bound rather than after it.
            self.full = true;
            tracing::warn!(
                path = %self.path.display(),
                records = self.records,
                max_bytes = self.max_bytes,
                "recording reached its size bound; no further records"
            );
            return Ok(false);
        }
        let io = |e| DatasetError::io(&self.path, e);
        self.enc.write_all(&line).map_err(io)?;
        self.enc.flush().map_err(io)?;
        self.records += 1;
        Ok(true)
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Compressed bytes on disk so far.
    pub fn bytes(&self) -> u64 {
        self.enc.get_ref().bytes
    }

    /// True once the size bound stopped the recording.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Writes the gzip trailer and closes the file.
    pub fn finish(self) -> Result<(), DatasetError> {
        let path = self.path;
        self.enc
            .finish()
            .and_then(|mut c| c.flush())
            .map_err(|e| DatasetError::io(&path, e))
    }
}

/// Reads the records of a recording.
pub struct RecordReader {
    path: PathBuf,
    input: Box<dyn BufRead + Send>,
    line: u64,
    buf: Vec<u8>,
}

impl std::fmt::Debug for RecordReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordReader")
            .field("path", &self.path)
            .field("line", &self.line)
            .finish()
    }
}

impl RecordReader {
    /// Opens a recording (gzip, or plain JSON lines).
    pub fn open(path: &Path) -> Result<Self, DatasetError> {
        let file = File::open(path).map_err(|e| DatasetError::io(path, e))?;
        let mut reader = BufReader::new(file);
        let head = reader.fill_buf().map_err(|e| DatasetError::io(path, e))?;
        let input: Box<dyn BufRead + Send> =
            if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
                Box::new(BufReader::new(MultiGzDecoder::new(reader)))
            } else {
                Box::new(reader)
            };
        Ok(Self {
            path: path.to_path_buf(),
            input,
            line: 0,
            buf: Vec::new(),
        })
    }

    /// 1-based number of the last line read.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The next record, `None` at the end. A line longer than
    /// [`MAX_RECORD_BYTES`] or not a `T` is an error naming the line.
    pub fn read_next<T: DeserializeOwned>(&mut self) -> Result<Option<T>, DatasetError> {
        loop {
            self.buf.clear();
            let done = match read_bounded_line(&mut self.input, &mut self.buf, MAX_RECORD_BYTES) {
                Ok(n) => n == 0,
                // cut short by a crash: no gzip trailer, maybe half a line
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                    tracing::warn!(path = %self.path.display(), line = self.line + 1, "recording ends without its trailer (cut short)");
                    if self.buf.last() != Some(&b'\n') {
                        return Ok(None);
                    }
                    false
                }
                Err(e)
                    if e.kind() == ErrorKind::InvalidData && self.buf.len() > MAX_RECORD_BYTES =>
                {
                    return Err(DatasetError::row(
                        &self.path,
                        self.line + 1,
                        format!("record longer than {MAX_RECORD_BYTES} bytes"),
                    ))
                }
                Err(e) => return Err(DatasetError::io(&self.path, e)),
            };
            if done {
                return Ok(None);
            }
            self.line += 1;
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return serde_json::from_slice(&self.buf)
                .map(Some)
                .map_err(|e| DatasetError::row(&self.path, self.line, e.to_string()));
        }
    }
}

/// Reads one line (with its `\n`) into `buf`, failing with `InvalidData`
/// past `max` bytes without buffering more than `max + 1`.
fn read_bounded_line(r: &mut dyn BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(total);
        }
        let (take, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = (max + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        r.consume(take);
        total += take;
        if buf.len() > max {
            return Err(std::io::Error::new(ErrorKind::InvalidData, "line too long"));
        }
        if end {
            return Ok(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Rec {
        round: u64,
        value: f64,
    }

    #[test]
    fn a_previous_run_is_kept_and_only_the_newest_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("recording.jsonl.gz");
        assert_eq!(
            rotate_previous(&path).expect("none"),
            None,
            "nothing to keep"
        );
        std::fs::write(&path, b"").expect("empty");
        assert_eq!(
            rotate_previous(&path).expect("empty"),
            None,
            "an empty file is not kept"
        );
        let mut kept = Vec::new();
        for run in 0..KEEP_PREVIOUS_RUNS + 3 {
            let mut w = RecordWriter::create(&path, 1 << 20).expect("create");
            w.append(&Rec {
                round: run as u64,
                value: 0.0,
            })
            .expect("append");
            w.finish().expect("finish");
            let to = rotate_previous(&path).expect("rotate").expect("kept");
            assert!(!path.exists());
            kept.push(to);
        }
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), KEEP_PREVIOUS_RUNS, "{names:?}");
        assert!(names
            .iter()
            .all(|n| n.starts_with("recording.") && n.ends_with(".jsonl.gz")));
        // The newest are kept, and each still reads back.
        for to in &kept[kept.len() - KEEP_PREVIOUS_RUNS..] {
            let mut r = RecordReader::open(to).expect("open");
            let rec: Rec = r.read_next().expect("read").expect("one record");
            assert!(rec.round >= 3, "{rec:?}");
        }
        assert!(!kept[0].exists(), "the oldest went");
    }

    #[test]
    fn round_trip_and_bound() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/rec.jsonl.gz");
        let mut w = RecordWriter::create(&path, 2_000).expect("create");
        let mut written = 0;
        for i in 0..10_000u64 {
            if !w
                .append(&Rec {
                    round: i,
                    value: i as f64 * 0.1,
                })
                .expect("append")
            {
                break;
            }
            written += 1;
        }
        assert!(w.is_full(), "2 kB holds fewer than 10,000 records");
        assert!(w.bytes() <= 2_000, "{} bytes", w.bytes());
        assert!(written > 10);
        // read back without the trailer (as after a crash), then with it
        let mut r = RecordReader::open(&path).expect("open");
        let mut n = 0;
        while let Some(rec) = r.read_next::<Rec>().expect("record") {
            assert_eq!(rec.round, n);
            n += 1;
        }
        assert_eq!(n, written);
        w.finish().expect("finish");
        let mut r = RecordReader::open(&path).expect("open");
        let mut m = 0;
        while r.read_next::<Rec>().expect("record").is_some() {
            m += 1;
        }
        assert_eq!(m, written);
    }

    #[test]
    fn bad_and_long_lines_are_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "{\"round\":1,\"value\":2.0}\nnot json\n").expect("write");
        let mut r = RecordReader::open(&path).expect("open");
        assert!(r.read_next::<Rec>().expect("first").is_some());
        let e = r.read_next::<Rec>().expect_err("second").to_string();
        assert!(e.contains("bad.jsonl:2"), "{e}");
        let mut buf = Vec::new();
        let mut long: &[u8] = b"0123456789\n";
        let e = read_bounded_line(&mut long, &mut buf, 4).expect_err("too long");
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        assert!(buf.len() <= 5);
    }
}

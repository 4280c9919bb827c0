//! Streaming, typed readers for the Google clusterdata-2011-2 tables.
//!
//! Each table is read row by row from a `BufRead` (plain CSV, or gzip
//! detected by content) with the official column order from `schema.csv`;
//! nothing is loaded whole. Empty optional fields become `None`; an empty
//! mandatory field, a wrong number of fields, or a value that does not parse
//! is an error naming the file and the 1-based line. In `lenient` mode such
//! rows are skipped and counted instead ([`TableReader::skipped`]); I/O and
//! gzip errors stay fatal in both modes.
//!
//! A first row whose first field is not a number (e.g. the header the
//! task_usage sample carries) is taken as a header and skipped.
//!
//! The fast path parses fields from `csv::ByteRecord` bytes directly
//! (integers by hand, floats via `str::parse` on the borrowed bytes).

use crate::bounds::{MAX_AMOUNT, MAX_NORMALISED};
use crate::io::{maybe_gunzip, open, open_bytes, BUF_BYTES};
use crate::DatasetError;
use serde::{Deserialize, Serialize};
use std::io::BufRead;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// Trace timestamps are microseconds; events before the trace window have
/// time 0, events after it `i64::MAX`.
pub type TimeUs = u64;

/// Times at or above this are "after the trace window" markers (the trace
/// writes `i64::MAX`), not real times.
pub const FAR_FUTURE_US: TimeUs = 1 << 62;

/// The latest real time a row may carry: 60 days (the 2011 trace spans 29
/// days, starting 600 s in). A later time (short of the far-future marker)
/// is a damaged row, and would make the replay simulate its decades.
pub const MAX_TIME_US: TimeUs = 60 * 86_400 * 1_000_000;

/// Task event types (task_events column 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskEventType {
    Submit = 0,
    Schedule = 1,
    Evict = 2,
    Fail = 3,
    Finish = 4,
    Kill = 5,
    Lost = 6,
    UpdatePending = 7,
    UpdateRunning = 8,
}

impl TaskEventType {
    pub const ALL: [TaskEventType; 9] = [
        TaskEventType::Submit,
        TaskEventType::Schedule,
        TaskEventType::Evict,
        TaskEventType::Fail,
        TaskEventType::Finish,
        TaskEventType::Kill,
        TaskEventType::Lost,
        TaskEventType::UpdatePending,
        TaskEventType::UpdateRunning,
    ];
    pub fn from_code(code: u64) -> Option<Self> {
        Self::ALL.get(usize::try_from(code).ok()?).copied()
    }
    pub fn code(self) -> u8 {
        self as u8
    }
    pub fn as_str(self) -> &'static str {
        match self {
            TaskEventType::Submit => "SUBMIT",
            TaskEventType::Schedule => "SCHEDULE",
            TaskEventType::Evict => "EVICT",
            TaskEventType::Fail => "FAIL",
            TaskEventType::Finish => "FINISH",
            TaskEventType::Kill => "KILL",
            TaskEventType::Lost => "LOST",
            TaskEventType::UpdatePending => "UPDATE_PENDING",
            TaskEventType::UpdateRunning => "UPDATE_RUNNING",
        }
    }
    /// Events that end a run (or a pending life) of a task.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskEventType::Evict
                | TaskEventType::Fail
                | TaskEventType::Finish
                | TaskEventType::Kill
                | TaskEventType::Lost
        )
    }
}

/// Machine event types (machine_events column 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MachineEventType {
    Add = 0,
    Remove = 1,
    Update = 2,
}

impl MachineEventType {
    pub fn from_code(code: u64) -> Option<Self> {
        match code {
            0 => Some(MachineEventType::Add),
            1 => Some(MachineEventType::Remove),
            2 => Some(MachineEventType::Update),
            _ => None,
        }
    }
}

/// One row of task_events (13 columns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskEvent {
    pub time_us: TimeUs,
    pub missing_info: Option<u8>,
    pub job_id: u64,
    pub task_index: u64,
    pub machine_id: Option<u64>,
    pub event_type: TaskEventType,
    /// Opaque user hash.
    pub user: Option<String>,
    pub scheduling_class: Option<u8>,
    pub priority: u8,
    /// Normalised to the largest machine's CPU capacity.
    pub cpu_request: Option<f64>,
    /// Normalised to the largest machine's memory capacity.
    pub mem_request: Option<f64>,
    pub disk_request: Option<f64>,
    pub different_machines: Option<bool>,
}

/// One row of job_events (8 columns). Job event types share the codes of
/// [`TaskEventType`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobEvent {
    pub time_us: TimeUs,
    pub missing_info: Option<u8>,
    pub job_id: u64,
    pub event_type: TaskEventType,
    pub user: Option<String>,
    pub scheduling_class: Option<u8>,
    pub job_name: Option<String>,
    pub logical_job_name: Option<String>,
}

/// One row of machine_events (6 columns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineEvent {
    pub time_us: TimeUs,
    pub machine_id: u64,
    pub event_type: MachineEventType,
    pub platform_id: Option<String>,
    /// Normalised to the largest machine.
    pub cpus: Option<f64>,
    /// Normalised to the largest machine.
    pub memory: Option<f64>,
}

/// One row of task_usage (20 columns): usage of one task over a
/// measurement window (normally 300 s), normalised like the requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskUsage {
    pub start_time_us: TimeUs,
    pub end_time_us: TimeUs,
    pub job_id: u64,
    pub task_index: u64,
    pub machine_id: u64,
    pub cpu_rate: Option<f64>,
    pub canonical_memory: Option<f64>,
    pub assigned_memory: Option<f64>,
    pub unmapped_page_cache: Option<f64>,
    pub total_page_cache: Option<f64>,
    pub max_memory: Option<f64>,
    pub disk_io_time: Option<f64>,
    pub local_disk_space: Option<f64>,
    pub max_cpu_rate: Option<f64>,
    pub max_disk_io_time: Option<f64>,
    pub cycles_per_instruction: Option<f64>,
    pub memory_accesses_per_instruction: Option<f64>,
    pub sample_portion: Option<f64>,
    pub aggregation_type: Option<bool>,
    pub sampled_cpu_usage: Option<f64>,
}

/// A Google 2011 table: its name, width and row parser.
pub trait Table: Sized {
    /// Table name as in the trace's folder names.
    const NAME: &'static str;
    /// Official column names, in order.
    const COLUMNS: &'static [&'static str];
    /// Field delimiter. Default `,`.
    const DELIMITER: u8 = b',';
    /// Trim spaces and tabs around fields (for `;` + TAB separated files). Default false.
    const TRIM: bool = false;
    /// `Some(true)`: the first row is always a header; `Some(false)`: never;
    /// `None` (default): the first row is a header iff its first field does
    /// not start with a digit.
    const HEADER: Option<bool> = None;
    /// Parses one record with exactly `COLUMNS.len()` fields.
    fn parse(r: &csv::ByteRecord) -> Result<Self, String>;
}

// ---- field parsing fast path ----

#[inline]
pub(crate) fn field(r: &csv::ByteRecord, i: usize) -> &[u8] {
    r.get(i).unwrap_or(b"")
}

#[inline]
pub(crate) fn parse_u64_bytes(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

fn bad(col: &str, b: &[u8], what: &str) -> String {
    format!("{col}: {:?} is not {what}", String::from_utf8_lossy(b))
}

#[inline]
pub(crate) fn req_u64(r: &csv::ByteRecord, i: usize, col: &str) -> Result<u64, String> {
    let b = field(r, i);
    if b.is_empty() {
        return Err(format!("{col}: mandatory field is empty"));
    }
    parse_u64_bytes(b).ok_or_else(|| bad(col, b, "a non-negative integer"))
}

/// A time column: within [`MAX_TIME_US`], or a far-future marker.
fn req_time(r: &csv::ByteRecord, i: usize, col: &str) -> Result<TimeUs, String> {
    let t = req_u64(r, i, col)?;
    if t > MAX_TIME_US && t < FAR_FUTURE_US {
        return Err(format!(
            "{col}: {t} µs is past the trace's span (at most {MAX_TIME_US} µs, 60 days; \
             events after the window are marked {})",
            i64::MAX
        ));
    }
    Ok(t)
}

#[inline]
pub(crate) fn opt_u64(r: &csv::ByteRecord, i: usize, col: &str) -> Result<Option<u64>, String> {
    let b = field(r, i);
    if b.is_empty() {
        return Ok(None);
    }
    parse_u64_bytes(b)
        .map(Some)
        .ok_or_else(|| bad(col, b, "a non-negative integer"))
}

#[inline]
pub(crate) fn opt_small(r: &csv::ByteRecord, i: usize, col: &str) -> Result<Option<u8>, String> {
    match opt_u64(r, i, col)? {
        None => Ok(None),
        Some(v) => u8::try_from(v)
            .map(Some)
            .map_err(|_| format!("{col}: {v} is out of range")),
    }
}

#[inline]
pub(crate) fn opt_f64(r: &csv::ByteRecord, i: usize, col: &str) -> Result<Option<f64>, String> {
    let b = field(r, i);
    if b.is_empty() {
        return Ok(None);
    }
    let s = std::str::from_utf8(b).map_err(|_| bad(col, b, "a number"))?;
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Some(v)),
        _ => Err(bad(col, b, "a finite number")),
    }
}

/// As [`opt_f64`], and the value must be >= 0 (requests, capacities).
#[inline]
pub(crate) fn opt_nonneg_f64(
    r: &csv::ByteRecord,
    i: usize,
    col: &str,
) -> Result<Option<f64>, String> {
    match opt_f64(r, i, col)? {
        Some(v) if v < 0.0 => Err(format!("{col}: {v} is negative")),
        v => Ok(v),
    }
}

#[inline]
pub(crate) fn req_f64(r: &csv::ByteRecord, i: usize, col: &str) -> Result<f64, String> {
    opt_f64(r, i, col)?.ok_or_else(|| format!("{col}: mandatory field is empty"))
}

/// A required number in `[0, max]`.
pub(crate) fn req_bounded(
    r: &csv::ByteRecord,
    i: usize,
    col: &str,
    max: f64,
) -> Result<f64, String> {
    opt_bounded(r, i, col, max)?.ok_or_else(|| format!("{col}: mandatory field is empty"))
}

/// An optional number in `[0, max]` (the shared rule,
/// [`crate::bounds::in_range`]).
pub(crate) fn opt_bounded(
    r: &csv::ByteRecord,
    i: usize,
    col: &str,
    max: f64,
) -> Result<Option<f64>, String> {
    opt_in_range(r, i, col, 0.0, max)
}

/// An optional number in `[min, max]` (the shared rule,
/// [`crate::bounds::in_range`]).
pub(crate) fn opt_in_range(
    r: &csv::ByteRecord,
    i: usize,
    col: &str,
    min: f64,
    max: f64,
) -> Result<Option<f64>, String> {
    opt_f64(r, i, col)?
        .map(|v| crate::bounds::in_range(col, v, min, max))
        .transpose()
}

#[inline]
pub(crate) fn opt_i64(r: &csv::ByteRecord, i: usize, col: &str) -> Result<Option<i64>, String> {
    let b = field(r, i);
    if b.is_empty() {
        return Ok(None);
    }
    let (neg, digits) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    let v = parse_u64_bytes(digits)
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| bad(col, b, "an integer"))?;
    Ok(Some(if neg { -v } else { v }))
}

#[inline]
pub(crate) fn req_string(r: &csv::ByteRecord, i: usize, col: &str) -> Result<String, String> {
    opt_string(r, i).ok_or_else(|| format!("{col}: mandatory field is empty"))
}

#[inline]
pub(crate) fn opt_bool(r: &csv::ByteRecord, i: usize, col: &str) -> Result<Option<bool>, String> {
    match field(r, i) {
        b"" => Ok(None),
        b"0" | b"false" | b"False" | b"FALSE" => Ok(Some(false)),
        b"1" | b"true" | b"True" | b"TRUE" => Ok(Some(true)),
        b => Err(bad(col, b, "a boolean (0/1)")),
    }
}

#[inline]
pub(crate) fn opt_string(r: &csv::ByteRecord, i: usize) -> Option<String> {
    let b = field(r, i);
    if b.is_empty() {
        None
    } else {
        Some(String::from_utf8_lossy(b).into_owned())
    }
}

fn task_event_type(r: &csv::ByteRecord, i: usize, col: &str) -> Result<TaskEventType, String> {
    let code = req_u64(r, i, col)?;
    TaskEventType::from_code(code).ok_or_else(|| format!("{col}: unknown event type {code}"))
}

impl Table for TaskEvent {
    const NAME: &'static str = "task_events";
    const COLUMNS: &'static [&'static str] = &[
        "time",
        "missing info",
        "job ID",
        "task index",
        "machine ID",
        "event type",
        "user",
        "scheduling class",
        "priority",
        "CPU request",
        "memory request",
        "disk space request",
        "different machines restriction",
    ];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        let priority = req_u64(r, 8, "priority")?;
        Ok(TaskEvent {
            time_us: req_time(r, 0, "time")?,
            missing_info: opt_small(r, 1, "missing info")?,
            job_id: req_u64(r, 2, "job ID")?,
            task_index: req_u64(r, 3, "task index")?,
            machine_id: opt_u64(r, 4, "machine ID")?,
            event_type: task_event_type(r, 5, "event type")?,
            user: opt_string(r, 6),
            scheduling_class: opt_small(r, 7, "scheduling class")?,
            priority: u8::try_from(priority)
                .map_err(|_| format!("priority: {priority} is out of range"))?,
            cpu_request: opt_bounded(r, 9, "CPU request", MAX_NORMALISED)?,
            mem_request: opt_bounded(r, 10, "memory request", MAX_NORMALISED)?,
            disk_request: opt_bounded(r, 11, "disk space request", MAX_NORMALISED)?,
            different_machines: opt_bool(r, 12, "different machines restriction")?,
        })
    }
}

impl Table for JobEvent {
    const NAME: &'static str = "job_events";
    const COLUMNS: &'static [&'static str] = &[
        "time",
        "missing info",
        "job ID",
        "event type",
        "user",
        "scheduling class",
        "job name",
        "logical job name",
    ];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        Ok(JobEvent {
            time_us: req_time(r, 0, "time")?,
            missing_info: opt_small(r, 1, "missing info")?,
            job_id: req_u64(r, 2, "job ID")?,
            event_type: task_event_type(r, 3, "event type")?,
            user: opt_string(r, 4),
            scheduling_class: opt_small(r, 5, "scheduling class")?,
            job_name: opt_string(r, 6),
            logical_job_name: opt_string(r, 7),
        })
    }
}

impl Table for MachineEvent {
    const NAME: &'static str = "machine_events";
    const COLUMNS: &'static [&'static str] = &[
        "time",
        "machine ID",
        "event type",
        "platform ID",
        "CPUs",
        "Memory",
    ];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        let code = req_u64(r, 2, "event type")?;
        Ok(MachineEvent {
            time_us: req_time(r, 0, "time")?,
            machine_id: req_u64(r, 1, "machine ID")?,
            event_type: MachineEventType::from_code(code)
                .ok_or_else(|| format!("event type: unknown machine event type {code}"))?,
            platform_id: opt_string(r, 3),
            cpus: opt_bounded(r, 4, "CPUs", MAX_NORMALISED)?,
            memory: opt_bounded(r, 5, "Memory", MAX_NORMALISED)?,
        })
    }
}

impl Table for TaskUsage {
    const NAME: &'static str = "task_usage";
    const COLUMNS: &'static [&'static str] = &[
        "start time",
        "end time",
        "job ID",
        "task index",
        "machine ID",
        "CPU rate",
        "canonical memory usage",
        "assigned memory usage",
        "unmapped page cache",
        "total page cache",
        "maximum memory usage",
        "disk I/O time",
        "local disk space usage",
        "maximum CPU rate",
        "maximum disk IO time",
        "cycles per instruction",
        "memory accesses per instruction",
        "sample portion",
        "aggregation type",
        "sampled CPU usage",
    ];
    fn parse(r: &csv::ByteRecord) -> Result<Self, String> {
        Ok(TaskUsage {
            start_time_us: req_time(r, 0, "start time")?,
            end_time_us: req_time(r, 1, "end time")?,
            job_id: req_u64(r, 2, "job ID")?,
            task_index: req_u64(r, 3, "task index")?,
            machine_id: req_u64(r, 4, "machine ID")?,
            cpu_rate: opt_bounded(r, 5, "CPU rate", MAX_NORMALISED)?,
            canonical_memory: opt_bounded(r, 6, "canonical memory usage", MAX_NORMALISED)?,
            assigned_memory: opt_bounded(r, 7, "assigned memory usage", MAX_NORMALISED)?,
            unmapped_page_cache: opt_bounded(r, 8, "unmapped page cache", MAX_NORMALISED)?,
            total_page_cache: opt_bounded(r, 9, "total page cache", MAX_NORMALISED)?,
            max_memory: opt_bounded(r, 10, "maximum memory usage", MAX_NORMALISED)?,
            disk_io_time: opt_bounded(r, 11, "disk I/O time", MAX_NORMALISED)?,
            local_disk_space: opt_bounded(r, 12, "local disk space usage", MAX_NORMALISED)?,
            max_cpu_rate: opt_bounded(r, 13, "maximum CPU rate", MAX_NORMALISED)?,
            max_disk_io_time: opt_bounded(r, 14, "maximum disk IO time", MAX_NORMALISED)?,
            cycles_per_instruction: opt_bounded(r, 15, "cycles per instruction", MAX_AMOUNT)?,
            memory_accesses_per_instruction: opt_bounded(
                r,
                16,
                "memory accesses per instruction",
                MAX_AMOUNT,
            )?,
            sample_portion: opt_bounded(r, 17, "sample portion", MAX_NORMALISED)?,
            aggregation_type: opt_bool(r, 18, "aggregation type")?,
            sampled_cpu_usage: opt_bounded(r, 19, "sampled CPU usage", MAX_NORMALISED)?,
        })
    }
}

/// A streaming reader of one table file. Iterate it, or call [`next_row`](Self::next_row).
pub struct TableReader<T: Table> {
    csv: csv::Reader<Box<dyn BufRead + Send>>,
    record: csv::ByteRecord,
    path: PathBuf,
    lenient: bool,
    skipped: u64,
    rows: u64,
    first: bool,
    done: bool,
    _table: PhantomData<T>,
}

impl<T: Table> TableReader<T> {
    /// Opens a file (plain or gzip).
    pub fn open(path: &Path, lenient: bool) -> Result<Self, DatasetError> {
        Ok(Self::new(path.to_path_buf(), open(path)?, lenient))
    }

    /// Reads from any buffered reader (gzip detected by content); `name`
    /// labels errors.
    pub fn from_reader<R: BufRead + Send + 'static>(
        name: impl Into<PathBuf>,
        reader: R,
        lenient: bool,
    ) -> Result<Self, DatasetError> {
        let name = name.into();
        let r = maybe_gunzip(reader).map_err(|e| DatasetError::io(&name, e))?;
        Ok(Self::new(name, r, lenient))
    }

    /// Reads embedded bytes (gzip detected by content).
    pub fn from_static(name: impl Into<PathBuf>, bytes: &'static [u8], lenient: bool) -> Self {
        Self::new(name.into(), open_bytes(bytes), lenient)
    }

    fn new(path: PathBuf, reader: Box<dyn BufRead + Send>, lenient: bool) -> Self {
        let csv = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .delimiter(T::DELIMITER)
            .trim(if T::TRIM {
                csv::Trim::All
            } else {
                csv::Trim::None
            })
            .buffer_capacity(BUF_BYTES)
            .from_reader(reader);
        TableReader {
            csv,
            record: csv::ByteRecord::new(),
            path,
            lenient,
            skipped: 0,
            rows: 0,
            first: true,
            done: false,
            _table: PhantomData,
        }
    }

    /// Rows skipped as malformed so far (lenient mode only; 0 in strict mode).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Rows returned so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The file name used in errors.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The 1-based line of the last record read (0 before the first).
    pub fn line(&self) -> u64 {
        self.record.position().map_or(0, |p| p.line())
    }

    /// The next row, `Ok(None)` at the end. In strict mode a malformed row
    /// is an error (reading may continue after it); in lenient mode it is
    /// skipped and counted.
    pub fn next_row(&mut self) -> Result<Option<T>, DatasetError> {
        loop {
            if self.done {
                return Ok(None);
            }
            let more = match self.csv.read_byte_record(&mut self.record) {
                Ok(m) => m,
                Err(e) => {
                    let line = e.position().map(|p| p.line()).unwrap_or(0);
                    if let csv::ErrorKind::Io(_) = e.kind() {
                        self.done = true;
                        let csv::ErrorKind::Io(io) = e.into_kind() else {
                            return Err(DatasetError::row(&self.path, line, "read error"));
                        };
                        return Err(DatasetError::io(&self.path, io));
                    }
                    if self.lenient {
                        self.skipped += 1;
                        continue;
                    }
                    return Err(DatasetError::row(&self.path, line, e.to_string()));
                }
            };
            if !more {
                self.done = true;
                return Ok(None);
            }
            let line = self.record.position().map(|p| p.line()).unwrap_or(0);
            if self.first {
                self.first = false;
                let f0 = field(&self.record, 0);
                let header = match T::HEADER {
                    Some(h) => h,
                    None => !f0.is_empty() && !f0[0].is_ascii_digit(),
                };
                if header {
                    continue;
                }
            }
            if self.record.len() == 1 && self.record[0].is_empty() {
                continue; // blank line
            }
            let result = if self.record.len() != T::COLUMNS.len() {
                Err(format!(
                    "{} row has {} fields, expected {}",
                    T::NAME,
                    self.record.len(),
                    T::COLUMNS.len()
                ))
            } else {
                T::parse(&self.record)
            };
            match result {
                Ok(row) => {
                    self.rows += 1;
                    return Ok(Some(row));
                }
                Err(msg) if self.lenient => {
                    tracing::debug!(path = %self.path.display(), line, %msg, "skipping malformed row");
                    self.skipped += 1;
                }
                Err(msg) => return Err(DatasetError::row(&self.path, line, msg)),
            }
        }
    }
}

impl<T: Table> Iterator for TableReader<T> {
    type Item = Result<T, DatasetError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_row().transpose()
    }
}

/// Lists the table files in `dir` (`*.csv`, `*.csv.gz`), sorted by name.
pub fn table_files(dir: &Path) -> Result<Vec<PathBuf>, DatasetError> {
    let rd = std::fs::read_dir(dir).map_err(|e| DatasetError::io(dir, e))?;
    let mut files = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| DatasetError::io(dir, e))?;
        let p = entry.path();
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if p.is_file() && (name.ends_with(".csv") || name.ends_with(".csv.gz")) {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests;

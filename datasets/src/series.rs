//! Loading real usage series from the trace formats found in `../shared/data`.
//!
//! [`load_series`] autodetects the format of a file and returns one or more
//! named series of one column. The formats, how they are recognised, and the
//! column read when `column` is `None`:
//!
//! | format | recognised by | series | default column |
//! |---|---|---|---|
//! | Bitbrains GWA-T-12 per-VM file | header fields separated by `;` + TAB | one per file | `CPU usage [MHZ]` |
//! | Google 2019 `instance_usage` export | header with `collection_id` and `avg_cpu_usage` | one per `unique_id` (per instance) | `avg_cpu_usage` |
//! | Google 2011 derived per-job series | no header, 18 numeric columns | one per file | `meanCPUUsage` (index 3) |
//! | `GCD_VMs.tar.gz` (1,600 Google 2011 derived daily series) | file name ends in `.tar.gz`/`.tgz`/`.tar` | one per archive member | `cpu` (`mem` for the second column) |
//! | Alibaba 2018 `container_usage` | no header, 11 columns, 2nd field `m_...` | one per `container_id`, sorted by time | `cpu_util_percent` |
//! | plain CSV | anything else | one per file | the only column; with several columns, the first whose header contains `cpu` |
//!
//! CPU is the default everywhere so that a caller that does not name a column
//! gets comparable series; pass a column to get memory (`Memory usage [KB]`,
//! `avg_memory_usage`, `canonical_memory_usage`, `mem`, `mem_util_percent`).
//!
//! A column is named by its header name (case-insensitive; for the headerless
//! formats, the documented names below) or by its 0-based index.
//! Files may be gzip-compressed (detected by content). Values must be finite
//! numbers; an empty or malformed value is an error naming file and line.
//!
//! Values are checked with the readers' shared rule
//! ([`crate::bounds::in_range`]): a negative value, or one above the
//! column's largest accepted, is an error naming the file, the line and the
//! column. The largest accepted is [`MAX_PERCENT`] (100) for the Alibaba
//! columns the schema gives as [0, 100] (`cpu_util_percent`,
//! `mem_util_percent`, `mem_gps`, `net_in`, `net_out`; `disk_io_percent`:
//! 101, its abnormal value), 100 x [`MAX_NORMALISED`] for `GCD_VMs`
//! (percent of a machine, summed over a job's tasks: the archive's memory
//! reaches 215 %), [`MAX_NORMALISED`] for the normalised Google usage and
//! limit columns, and [`MAX_AMOUNT`] (2^60, bytes fit) for any other column
//! (a plain CSV's unit is not known). The time a grouped format sorts by
//! (`time_stamp`, `time`, `start_time`) must be in [0, 400 days] (in the
//! file's unit: s for Alibaba, µs for Google).
//!
//! Every data row must have as many fields as the header (or, without
//! one, as the first row): a short or long row is an error naming the
//! file and the line, whichever column is read.

use crate::bounds::{in_range, MAX_AMOUNT, MAX_NORMALISED, MAX_PERCENT, MAX_TRACE_TIME_S};
use crate::io::{first_line, open};
/// Builds a usage-series pool from real files (see [`crate::pool`]).
pub use crate::pool::load_pool;
use crate::DatasetError;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// One real series: a name saying where it comes from and its values in the
/// file's unit, in time order.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedSeries {
    /// `<file stem>:<column>` or `<file stem>/<group>:<column>` for grouped
    /// formats (a plain file of one column: `<file stem>`).
    pub name: String,
    /// The column read: its header, or its 0-based index when the file
    /// has no header.
    pub column: String,
    pub values: Vec<f64>,
}

/// The formats [`load_series`] recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesFormat {
    Bitbrains,
    Google2019InstanceUsage,
    Google2011Derived,
    GcdVmsTar,
    AlibabaContainerUsage,
    /// Google 2011 `task_usage`, with the header of the shipped sample
    /// or without one (the raw trace).
    Google2011TaskUsage {
        has_header: bool,
    },
    Csv,
}

/// Column names of the Google 2011 derived per-job series (no header in the file).
pub const GOOGLE2011_DERIVED_COLUMNS: [&str; 18] = [
    "time_stamp",
    "numberOfTaskIndex",
    "numberOfMachineId",
    "meanCPUUsage",
    "canonical_memory_usage",
    "AssignMem",
    "unmapped_cache_usage",
    "page_cache_usage",
    "max_mem_usage",
    "mean_diskIO_time",
    "mean_local_disk_space",
    "max_cpu_usage",
    "max_disk_io_time",
    "cpi",
    "mai",
    "sampling_portion",
    "agg_type",
    "sampled_cpu_usage",
];

/// Column names of Google 2011 `task_usage` (no header in the raw trace).
pub const GOOGLE2011_TASK_USAGE_COLUMNS: [&str; 20] = [
    "start_time",
    "end_time",
    "job_id",
    "task_index",
    "machine_id",
    "cpu_rate",
    "canonical_memory",
    "assigned_memory",
    "unmapped_page_cache",
    "total_page_cache",
    "max_memory",
    "disk_io_time",
    "local_disk_space",
    "max_cpu_rate",
    "max_disk_io_time",
    "cpi",
    "mai",
    "sample_portion",
    "aggregation_type",
    "sampled_cpu_usage",
];

/// Column names of Alibaba 2018 `container_usage` (no header in the file).
pub const ALIBABA_CONTAINER_USAGE_COLUMNS: [&str; 11] = [
    "container_id",
    "machine_id",
    "time_stamp",
    "cpu_util_percent",
    "mem_util_percent",
    "cpi",
    "mem_gps",
    "mpki",
    "net_in",
    "net_out",
    "disk_io_percent",
];

/// Column names of the two columns in each `GCD_VMs` member.
pub const GCD_VMS_COLUMNS: [&str; 2] = ["cpu", "mem"];

const FIRST_LINE_LIMIT: u64 = 64 * 1024;

/// Detects the format of `path` from its name and first line.
pub fn detect_format(path: &Path) -> Result<SeriesFormat, DatasetError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") || name.ends_with(".tar") {
        return Ok(SeriesFormat::GcdVmsTar);
    }
    let line = first_line(path, FIRST_LINE_LIMIT)?;
    if line.trim().is_empty() {
        return Err(DatasetError::format(path, "empty file (no first line)"));
    }
    // not UTF-8 (replaced on reading) or control bytes: not a text table
    if line.contains('\u{FFFD}') || line.bytes().any(|b| b < 0x20 && b != b'\t') {
        return Err(DatasetError::format(
            path,
            "binary data, not a text table (a series file is CSV, plain or gzip)",
        ));
    }
    Ok(detect_from_first_line(&line))
}

fn detect_from_first_line(line: &str) -> SeriesFormat {
    if line.contains(";\t") {
        return SeriesFormat::Bitbrains;
    }
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.contains(&"collection_id") && fields.contains(&"avg_cpu_usage") {
        return SeriesFormat::Google2019InstanceUsage;
    }
    if fields.len() == 11 && fields[1].starts_with("m_") {
        return SeriesFormat::AlibabaContainerUsage;
    }
    if fields.len() == 18 && fields.iter().all(|f| f.parse::<f64>().is_ok()) {
        return SeriesFormat::Google2011Derived;
    }
    if fields.contains(&"job_id") && fields.contains(&"task_index") && fields.contains(&"cpu_rate")
    {
        return SeriesFormat::Google2011TaskUsage { has_header: true };
    }
    // The raw trace: 20 fields, the first four integers (times, job id,
    // task index), the rest numbers or empty.
    if fields.len() == GOOGLE2011_TASK_USAGE_COLUMNS.len()
        && fields[..4].iter().all(|f| f.parse::<u64>().is_ok())
        && fields[4..]
            .iter()
            .all(|f| f.is_empty() || f.parse::<f64>().is_ok())
    {
        return SeriesFormat::Google2011TaskUsage { has_header: false };
    }
    SeriesFormat::Csv
}

/// Loads the series in `path` (format autodetected, see the module docs),
/// reading `column` (header name, documented name or 0-based index) or the
/// format's default column when `None`.
pub fn load_series(path: &Path, column: Option<&str>) -> Result<Vec<NamedSeries>, DatasetError> {
    let format = detect_format(path)?;
    tracing::debug!(path = %path.display(), ?format, "loading series");
    match format {
        SeriesFormat::GcdVmsTar => load_gcd_tar(path, column),
        SeriesFormat::Bitbrains => load_delimited(path, column, Layout::bitbrains()),
        SeriesFormat::Google2019InstanceUsage => load_delimited(path, column, Layout::google2019()),
        SeriesFormat::Google2011Derived => {
            load_delimited(path, column, Layout::google2011_derived())
        }
        SeriesFormat::AlibabaContainerUsage => load_delimited(path, column, Layout::alibaba()),
        SeriesFormat::Google2011TaskUsage { has_header } => {
            load_delimited(path, column, Layout::google2011_task_usage(has_header))
        }
        SeriesFormat::Csv => load_delimited(path, column, Layout::plain()),
    }
}

/// How to read one delimited format.
struct Layout {
    delimiter: u8,
    /// Column names when the file has no header.
    fixed_names: Option<&'static [&'static str]>,
    /// `None`: the first row is a header iff one of its fields is not a number.
    has_header: Option<bool>,
    default_column: Option<&'static str>,
    /// Columns whose values together group rows into series (none: one
    /// series).
    group_by: &'static [&'static str],
    /// Column to sort each group by (stable).
    sort_by: Option<&'static str>,
    /// Latest accepted value of the `sort_by` time, in the file's unit.
    max_time: f64,
    /// Largest accepted value of a column (by its lower-case name).
    max_of: fn(&str) -> f64,
}

/// Any column whose unit is not known.
fn any_amount(_: &str) -> f64 {
    MAX_AMOUNT
}

/// Google 2019: the normalised usage and limit columns.
fn google2019_max(col: &str) -> f64 {
    if col.ends_with("_usage") || matches!(col, "assigned_memory" | "memory_limit" | "cpu_limit") {
        MAX_NORMALISED
    } else {
        MAX_AMOUNT
    }
}

/// Google 2011 task_usage: every usage column is normalised (not the
/// cycles and memory accesses per instruction, nor times and ids).
fn google2011_task_usage_max(col: &str) -> f64 {
    match GOOGLE2011_TASK_USAGE_COLUMNS.iter().position(|c| *c == col) {
        Some(i) if (5..=19).contains(&i) && !matches!(col, "cpi" | "mai") => MAX_NORMALISED,
        _ => MAX_AMOUNT,
    }
}

/// Alibaba 2018: the schema's [0, 100] columns.
fn alibaba_max(col: &str) -> f64 {
    match col {
        "cpu_util_percent" | "mem_util_percent" | "mem_gps" | "net_in" | "net_out" => MAX_PERCENT,
        "disk_io_percent" => MAX_PERCENT + 1.0,
        _ => MAX_AMOUNT,
    }
}

/// GCD_VMs members: percent of a machine, summed over a job's tasks.
pub const MAX_GCD_PERCENT: f64 = 100.0 * MAX_NORMALISED;

impl Layout {
    fn bitbrains() -> Self {
        Layout {
            delimiter: b';',
            fixed_names: None,
            has_header: Some(true),
            default_column: Some("CPU usage [MHZ]"),
            group_by: &[],
            sort_by: None,
            max_time: MAX_AMOUNT,
            max_of: any_amount,
        }
    }
    fn google2019() -> Self {
        Layout {
            delimiter: b',',
            fixed_names: None,
            has_header: Some(true),
            default_column: Some("avg_cpu_usage"),
            group_by: &["unique_id"],
            sort_by: Some("time"),
            max_time: MAX_TRACE_TIME_S * 1e6,
            max_of: google2019_max,
        }
    }
    fn google2011_derived() -> Self {
        Layout {
            delimiter: b',',
            fixed_names: Some(&GOOGLE2011_DERIVED_COLUMNS),
            has_header: Some(false),
            default_column: Some("meanCPUUsage"),
            group_by: &[],
            sort_by: None,
            max_time: MAX_AMOUNT,
            max_of: any_amount,
        }
    }
    fn alibaba() -> Self {
        Layout {
            delimiter: b',',
            fixed_names: Some(&ALIBABA_CONTAINER_USAGE_COLUMNS),
            has_header: Some(false),
            default_column: Some("cpu_util_percent"),
            group_by: &["container_id"],
            sort_by: Some("time_stamp"),
            max_time: MAX_TRACE_TIME_S,
            max_of: alibaba_max,
        }
    }
    /// Google 2011 `task_usage`: one series per task (job id and task
    /// index), in time order; the raw trace's files have no header.
    fn google2011_task_usage(has_header: bool) -> Self {
        Layout {
            delimiter: b',',
            fixed_names: (!has_header).then_some(&GOOGLE2011_TASK_USAGE_COLUMNS[..]),
            has_header: Some(has_header),
            default_column: Some("cpu_rate"),
            group_by: &["job_id", "task_index"],
            sort_by: Some("start_time"),
            max_time: MAX_TRACE_TIME_S * 1e6,
            max_of: google2011_task_usage_max,
        }
    }
    fn plain() -> Self {
        Layout {
            delimiter: b',',
            fixed_names: None,
            has_header: None,
            default_column: None,
            group_by: &[],
            sort_by: None,
            max_time: MAX_AMOUNT,
            max_of: any_amount,
        }
    }
}

fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for ext in [".csv.gz", ".csv", ".txt.gz", ".txt", ".gz"] {
        if let Some(stem) = name.strip_suffix(ext) {
            return stem.to_string();
        }
    }
    name
}

/// Resolves a column given by name (case-insensitive) or 0-based index.
fn resolve_column(names: &[String], column: &str) -> Option<usize> {
    let want = column.trim();
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(want)) {
        return Some(i);
    }
    match want.parse::<usize>() {
        Ok(i) if names.is_empty() || i < names.len() => Some(i),
        _ => None,
    }
}

fn parse_value(field: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(field).ok()?.trim();
    let v: f64 = s.parse().ok()?;
    v.is_finite().then_some(v)
}

/// A usage sample of column `col_name`: a finite number in [0, `max`].
fn parse_usage(field: &[u8], col_name: &str, max: f64) -> Result<f64, String> {
    match parse_value(field) {
        Some(v) => in_range(col_name, v, 0.0, max),
        None => Err(format!(
            "{col_name}: {:?} is not a finite number",
            String::from_utf8_lossy(field)
        )),
    }
}

fn load_delimited(
    path: &Path,
    column: Option<&str>,
    layout: Layout,
) -> Result<Vec<NamedSeries>, DatasetError> {
    let reader = open(path)?;
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(layout.delimiter)
        .trim(csv::Trim::All)
        .buffer_capacity(crate::io::BUF_BYTES)
        .from_reader(reader);
    let mut record = csv::ByteRecord::new();
    let mut first = true;
    let mut names: Vec<String> = layout
        .fixed_names
        .map(|n| n.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let mut col: Option<usize> = None;
    let mut group_cols: Vec<usize> = Vec::new();
    let mut sort_col: Option<usize> = None;
    let mut col_name = String::new();
    let mut max_value = MAX_AMOUNT;
    let mut width = 0;
    // group key -> index in `groups`; groups keep first-appearance order.
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut groups: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut row_no: u64 = 0;
    let mut key: Vec<u8> = Vec::new();
    loop {
        let more = csv.read_byte_record(&mut record).map_err(|e| {
            let line = e.position().map(|p| p.line()).unwrap_or(0);
            DatasetError::row(path, line, e.to_string())
        })?;
        if !more {
            break;
        }
        let line = record.position().map(|p| p.line()).unwrap_or(0);
        if record.len() == 1 && record[0].is_empty() {
            continue; // blank line
        }
        if first {
            first = false;
            let header = match layout.has_header {
                Some(h) => h,
                None => record.iter().any(|f| parse_value(f).is_none()),
            };
            if header {
                names = record
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).trim().to_string())
                    .collect();
            }
            width = if names.is_empty() {
                record.len()
            } else {
                names.len()
            };
            let chosen = match column.or(layout.default_column) {
                Some(c) => resolve_column(&names, c)
                    .filter(|&i| i < width)
                    .ok_or_else(|| {
                        DatasetError::format(
                            path,
                            format!(
                                "no column {c:?}; columns are {}",
                                describe_columns(&names, width)
                            ),
                        )
                    })?,
                None if width == 1 => 0,
                None => names
                    .iter()
                    .position(|n| n.to_ascii_lowercase().contains("cpu"))
                    .ok_or_else(|| {
                        DatasetError::format(
                            path,
                            format!(
                                "{width} columns and none named like cpu: choose one of {}",
                                describe_columns(&names, width)
                            ),
                        )
                    })?,
            };
            col = Some(chosen);
            col_name = names
                .get(chosen)
                .cloned()
                .unwrap_or_else(|| chosen.to_string());
            max_value = (layout.max_of)(&col_name.to_ascii_lowercase());
            group_cols = layout
                .group_by
                .iter()
                .filter_map(|g| resolve_column(&names, g))
                .collect();
            if let Some(s) = layout.sort_by {
                sort_col = resolve_column(&names, s);
            }
            if header {
                continue;
            }
        }
        row_no += 1;
        let c = col.unwrap_or(0);
        let field = record.get(c).ok_or_else(|| {
            DatasetError::row(
                path,
                line,
                format!(
                    "row has {} fields, column {col_name:?} is field {}",
                    record.len(),
                    c + 1
                ),
            )
        })?;
        if record.len() != width {
            // a short or long row is damage whichever column is read
            return Err(DatasetError::row(
                path,
                line,
                format!(
                    "row has {} fields, expected {width} (as {})",
                    record.len(),
                    if names.is_empty() {
                        "the first row"
                    } else {
                        "the header"
                    }
                ),
            ));
        }
        let value = parse_usage(field, &col_name, max_value)
            .map_err(|e| DatasetError::row(path, line, e))?;
        key.clear();
        for (i, &g) in group_cols.iter().enumerate() {
            if i > 0 {
                key.push(b'/');
            }
            key.extend_from_slice(record.get(g).unwrap_or(b""));
        }
        let sort_key = match sort_col {
            Some(s) => match record.get(s).and_then(parse_value) {
                Some(v) => {
                    let name = names.get(s).map_or("time", String::as_str);
                    in_range(name, v, 0.0, layout.max_time)
                        .map_err(|e| DatasetError::row(path, line, e))?
                }
                None => {
                    return Err(DatasetError::row(
                        path,
                        line,
                        "time field is not a finite number",
                    ));
                }
            },
            None => row_no as f64,
        };
        let gi = match index.get(&key) {
            Some(&gi) => gi,
            None => {
                let label = if group_cols.is_empty() {
                    String::new()
                } else if key.iter().all(|&b| b == b'/') {
                    format!("/(empty {})", layout.group_by.join("/"))
                } else {
                    format!("/{}", String::from_utf8_lossy(&key))
                };
                groups.push((label, Vec::new()));
                index.insert(key.clone(), groups.len() - 1);
                groups.len() - 1
            }
        };
        groups[gi].1.push((sort_key, value));
    }
    if groups.is_empty() {
        return Err(DatasetError::format(path, "no data rows"));
    }
    let stem = file_stem(path);
    let single_plain = layout.group_by.is_empty() && names.len() <= 1;
    Ok(groups
        .into_iter()
        .map(|(label, mut rows)| {
            if sort_col.is_some() {
                rows.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            let name = if single_plain {
                format!("{stem}{label}")
            } else {
                format!("{stem}{label}:{col_name}")
            };
            NamedSeries {
                name,
                column: col_name.clone(),
                values: rows.into_iter().map(|r| r.1).collect(),
            }
        })
        .collect())
}

fn describe_columns(names: &[String], width: usize) -> String {
    if names.is_empty() {
        format!("0..{} (no header)", width.saturating_sub(1))
    } else {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{i}={n:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Reads a `GCD_VMs.tar.gz`-style archive: every regular member is a series
/// file with whitespace-separated columns (`cpu`, `mem`).
fn load_gcd_tar(path: &Path, column: Option<&str>) -> Result<Vec<NamedSeries>, DatasetError> {
    let names: Vec<String> = GCD_VMS_COLUMNS.iter().map(|s| s.to_string()).collect();
    let c = match column {
        Some(c) => resolve_column(&names, c).ok_or_else(|| {
            DatasetError::format(
                path,
                format!("no column {c:?}; columns are 0=\"cpu\", 1=\"mem\""),
            )
        })?,
        None => 0,
    };
    let col_name = names.get(c).cloned().unwrap_or_else(|| c.to_string());
    let reader = open(path)?;
    let mut archive = tar::Archive::new(reader);
    let entries = archive.entries().map_err(|e| DatasetError::io(path, e))?;
    let mut out = Vec::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| DatasetError::io(path, e))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let member: PathBuf = entry
            .path()
            .map(|p| p.into_owned())
            .unwrap_or_else(|_| PathBuf::from("?"));
        let member_path = path.join(&member);
        let text = crate::io::read_to_string_bounded(&mut entry, crate::io::MAX_WHOLE_FILE_BYTES)
            .map_err(|e| DatasetError::io(&member_path, e))?;
        let mut values = Vec::with_capacity(288);
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let fields = line.split_whitespace().count();
            if fields != GCD_VMS_COLUMNS.len() {
                return Err(DatasetError::row(
                    &member_path,
                    i as u64 + 1,
                    format!("row has {fields} fields, expected 2 (cpu mem)"),
                ));
            }
            let field = line.split_whitespace().nth(c).ok_or_else(|| {
                DatasetError::row(
                    &member_path,
                    i as u64 + 1,
                    format!("no field {} ({col_name})", c + 1),
                )
            })?;
            let v = parse_usage(field.as_bytes(), &col_name, MAX_GCD_PERCENT)
                .map_err(|e| DatasetError::row(&member_path, i as u64 + 1, e))?;
            values.push(v);
        }
        if values.is_empty() {
            continue;
        }
        let stem = member
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push(NamedSeries {
            name: format!("{stem}:{col_name}"),
            column: col_name.clone(),
            values,
        });
    }
    if out.is_empty() {
        return Err(DatasetError::format(path, "archive holds no series"));
    }
    Ok(out)
}

/// Reads all series in `r` as a plain one-column CSV (optional header);
/// used for embedded data. `name` labels errors and the series.
pub fn read_plain_series<R: BufRead>(name: &str, r: R) -> Result<Vec<f64>, DatasetError> {
    let mut values = Vec::new();
    for (i, line) in r.lines().enumerate() {
        let line = line.map_err(|e| DatasetError::io(name, e))?;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        match parse_value(t.as_bytes()) {
            Some(v) => values.push(v),
            None if i == 0 => {} // header
            None => {
                return Err(DatasetError::row(
                    name,
                    i as u64 + 1,
                    format!("{t:?} is not a finite number"),
                ));
            }
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests;

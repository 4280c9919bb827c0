//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong while reading a trace or building a workload.
///
/// Every variant that comes from a file names the file, and a row error also
/// names the 1-based line, so a bad row can be found with `sed -n LINEp`.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file could not be opened or read (including a corrupt gzip stream).
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A row could not be parsed.
    #[error("{}:{line}: {msg}", path.display())]
    Row {
        path: PathBuf,
        line: u64,
        msg: String,
    },
    /// The file as a whole is not what was expected (unknown format, missing
    /// column, empty file, ...).
    #[error("{}: {msg}", path.display())]
    Format { path: PathBuf, msg: String },
    /// A configuration failed validation; lists every problem found.
    #[error("invalid configuration: {0}")]
    Config(#[from] tailor_core::ConfigErrors),
    /// The input is valid but yields nothing usable (e.g. no job survives the filters).
    #[error("{0}")]
    Empty(String),
}

impl DatasetError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DatasetError::Io {
            path: path.into(),
            source,
        }
    }
    pub(crate) fn row(path: impl Into<PathBuf>, line: u64, msg: impl Into<String>) -> Self {
        DatasetError::Row {
            path: path.into(),
            line,
            msg: msg.into(),
        }
    }
    pub(crate) fn format(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        DatasetError::Format {
            path: path.into(),
            msg: msg.into(),
        }
    }
}

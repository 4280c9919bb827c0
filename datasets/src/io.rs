//! Opening plain or gzip-compressed files as buffered streams.

use crate::DatasetError;
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Buffer size for file readers: large enough that decompression dominates.
pub(crate) const BUF_BYTES: usize = 256 * 1024;

/// Opens `path` for streaming. A gzip stream (detected by its magic bytes,
/// not by the file name) is decompressed on the fly, multi-member streams
/// included.
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>, DatasetError> {
    let file = File::open(path).map_err(|e| DatasetError::io(path, e))?;
    let reader = BufReader::with_capacity(BUF_BYTES, file);
    maybe_gunzip(reader).map_err(|e| DatasetError::io(path, e))
}

/// Wraps `reader` in a gzip decoder when it starts with the gzip magic bytes.
pub fn maybe_gunzip<R: BufRead + Send + 'static>(
    mut reader: R,
) -> std::io::Result<Box<dyn BufRead + Send>> {
    let head = reader.fill_buf()?;
    if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
        Ok(Box::new(BufReader::with_capacity(
            BUF_BYTES,
            MultiGzDecoder::new(reader),
        )))
    } else {
        Ok(Box::new(reader))
    }
}

/// Wraps an in-memory byte slice (e.g. embedded with `include_bytes!`),
/// decompressing it when it is gzip.
pub fn open_bytes(bytes: &'static [u8]) -> Box<dyn BufRead + Send> {
    if bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b {
        Box::new(BufReader::with_capacity(
            BUF_BYTES,
            MultiGzDecoder::new(bytes),
        ))
    } else {
        Box::new(bytes)
    }
}

/// Reads at most `limit` bytes of the first line of `path` (decompressed),
/// without the line terminator; lossy UTF-8.
pub(crate) fn first_line(path: &Path, limit: u64) -> Result<String, DatasetError> {
    let reader = open(path)?;
    let mut buf = Vec::new();
    reader
        .take(limit)
        .read_until(b'\n', &mut buf)
        .map_err(|e| DatasetError::io(path, e))?;
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

//! Opening plain or gzip-compressed files as buffered streams.
//!
//! Every stream opened here is bounded ([`Bounded`]): a line longer than
//! [`MAX_LINE_BYTES`] or more than [`MAX_STREAM_BYTES`] of (decompressed)
//! content is an `InvalidData` read error naming the line, so a small gzip
//! bomb (one 300 MB line in 1 MB) is refused after at most `MAX_LINE_BYTES`
//! of buffering instead of being read into memory. Whole-file reads go
//! through [`read_to_string_bounded`].

use crate::DatasetError;
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Buffer size for file readers: large enough that decompression dominates.
pub(crate) const BUF_BYTES: usize = 256 * 1024;

/// Longest line accepted in a trace, pool or series file (bytes, 4 MiB; the
/// longest line of the bundled data is 72 KB).
pub const MAX_LINE_BYTES: u64 = 4 << 20;
/// Most (decompressed) bytes read from one file or member: 64 GiB (the
/// largest Google 2011 table file is under 1 GiB uncompressed).
pub const MAX_STREAM_BYTES: u64 = 64 << 30;
/// Most bytes of a file read whole into memory (JSON, a tar member): 256 MiB.
pub const MAX_WHOLE_FILE_BYTES: u64 = 256 << 20;

/// A reader that fails (with `InvalidData`) on a line longer than
/// `max_line` bytes or a stream longer than `max_total` bytes, before
/// handing those bytes on, so no caller buffers more than `max_line` bytes
/// of one line.
pub struct Bounded<R> {
    inner: R,
    max_line: u64,
    max_total: u64,
    /// Bytes since the last newline.
    line_len: u64,
    /// Newlines seen (the current line is `lines + 1`).
    lines: u64,
    total: u64,
}

impl<R> Bounded<R> {
    pub fn new(inner: R, max_line: u64, max_total: u64) -> Self {
        Self {
            inner,
            max_line,
            max_total,
            line_len: 0,
            lines: 0,
            total: 0,
        }
    }

    /// Accounts for `buf` (about to be handed on); an error when a bound is
    /// crossed.
    fn account(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.total += buf.len() as u64;
        if self.total > self.max_total {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("more than {} bytes of content", self.max_total),
            ));
        }
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            if self.line_len + i as u64 > self.max_line {
                return Err(self.too_long());
            }
            self.lines += 1;
            self.line_len = 0;
            rest = &rest[i + 1..];
        }
        self.line_len += rest.len() as u64;
        if self.line_len > self.max_line {
            return Err(self.too_long());
        }
        Ok(())
    }

    fn too_long(&self) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "line {} is longer than {} bytes",
                self.lines + 1,
                self.max_line
            ),
        )
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // never hand on more than one line's worth at once, so the check
        // runs before a caller can buffer a too-long line
        let cap = buf.len().min(BUF_BYTES);
        let n = self.inner.read(&mut buf[..cap])?;
        self.account(&buf[..n])?;
        Ok(n)
    }
}

/// Reads `r` into a string of at most `limit` bytes; longer is an error.
pub fn read_to_string_bounded<R: Read>(r: R, limit: u64) -> std::io::Result<String> {
    let mut text = String::new();
    r.take(limit + 1).read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("more than {limit} bytes"),
        ));
    }
    Ok(text)
}

fn bounded<R: Read + Send + 'static>(r: R) -> Box<dyn BufRead + Send> {
    Box::new(BufReader::with_capacity(
        BUF_BYTES,
        Bounded::new(r, MAX_LINE_BYTES, MAX_STREAM_BYTES),
    ))
}

/// Opens `path` for streaming. A gzip stream (detected by its magic bytes,
/// not by the file name) is decompressed on the fly, multi-member streams
/// included. Lines and total content are bounded (see the module docs).
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
        Ok(bounded(MultiGzDecoder::new(reader)))
    } else {
        Ok(bounded(reader))
    }
}

/// Wraps an in-memory byte slice (e.g. embedded with `include_bytes!`),
/// decompressing it when it is gzip.
pub fn open_bytes(bytes: &'static [u8]) -> Box<dyn BufRead + Send> {
    if bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b {
        bounded(MultiGzDecoder::new(bytes))
    } else {
        bounded(bytes)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_all(data: &[u8], max_line: u64, max_total: u64) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        Bounded::new(data, max_line, max_total).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn lines_within_the_bound_pass_unchanged() {
        let data = b"ab\ncd\n\nefg";
        assert_eq!(read_all(data, 3, 100).expect("ok"), data.to_vec());
    }

    #[test]
    fn a_long_line_is_refused_with_its_number() {
        let e = read_all(b"ab\ncd\nefgh\n", 3, 100).expect_err("too long");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("line 3 "), "{e}");
        let e = read_all(b"abcdef", 3, 100).expect_err("unterminated too long");
        assert!(e.to_string().contains("line 1 "), "{e}");
        let e = read_all(b"0123456789", 100, 5).expect_err("too much");
        assert!(e.to_string().contains("more than 5 bytes"), "{e}");
    }

    /// One 300 MB line in a gzip of ~300 KB: refused after at most
    /// MAX_LINE_BYTES (+ one buffer) of decompressed content, never held in
    /// memory, with an error that names the file and the line.
    #[test]
    fn a_300_mb_line_in_a_small_gzip_is_refused_without_reading_it_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bomb.csv.gz");
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).expect("create"),
            flate2::Compression::best(),
        );
        gz.write_all(b"1,2,3\n").expect("write");
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..300 {
            gz.write_all(&chunk).expect("write");
        }
        gz.write_all(b"\n").expect("write");
        gz.finish().expect("finish");
        let size = std::fs::metadata(&path).expect("meta").len();
        assert!(size < 2 << 20, "the bomb is small: {size} bytes");
        // the reader the trace readers use
        let mut r = open(&path).expect("open");
        let mut line = Vec::new();
        let mut total = 0u64;
        let err = loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) => panic!("the long line was accepted"),
                Ok(n) => total += n as u64,
                Err(e) => break e,
            }
        };
        assert!(err.to_string().contains("line 2 is longer than"), "{err}");
        assert!(total <= MAX_LINE_BYTES + 2 * BUF_BYTES as u64, "{total}");
        assert!(line.len() as u64 <= MAX_LINE_BYTES + BUF_BYTES as u64);
        // and a table reader names the file
        let mut t =
            crate::TableReader::<crate::google2011::reader::MachineEvent>::open(&path, true)
                .expect("open");
        let e = loop {
            match t.next_row() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("the long line was accepted"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(
            e.contains("bomb.csv.gz") && e.contains("line 2 is longer than"),
            "{e}"
        );
    }
}

//! Docker's stats answer: the raw HTTP/1.x reply of `GET
//! /containers/{id}/stats?stream=false&one-shot=true` (status, chunked
//! body) and its lenient decoding into [`ContainerStats`] (bollard's typed
//! memory stats reject cgroup fields it does not know). Used by
//! [`crate::docker::DockerRuntime`] where it cannot read the container's
//! cgroup itself.

use crate::runtime::{ContainerStats, RuntimeError};
use serde::Deserialize;
use std::collections::HashMap;

/// Splits an HTTP/1.x answer into status and body (no chunked encoding: the
/// request is HTTP/1.0).
pub(crate) fn parse_http_response(buf: &[u8]) -> Result<(u16, Vec<u8>), RuntimeError> {
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| RuntimeError::Decode("no HTTP header end".into()))?;
    let head =
        std::str::from_utf8(&buf[..head_end]).map_err(|e| RuntimeError::Decode(e.to_string()))?;
    let status_line = head.lines().next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| RuntimeError::Decode(format!("bad status line {status_line:?}")))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = &buf[head_end + 4..];
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok((status, body))
}

fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, RuntimeError> {
    let mut out = Vec::with_capacity(body.len());
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| RuntimeError::Decode("bad chunk header".into()))?;
        let size_str = std::str::from_utf8(&body[..line_end])
            .map_err(|e| RuntimeError::Decode(e.to_string()))?;
        let size = usize::from_str_radix(size_str.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|e| RuntimeError::Decode(format!("bad chunk size: {e}")))?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if body.len() < size {
            return Err(RuntimeError::Decode("truncated chunk".into()));
        }
        out.extend_from_slice(&body[..size]);
        body = body.get(size + 2..).unwrap_or(&[]);
    }
}

#[derive(Deserialize)]
struct RawStats {
    /// When dockerd read the counters (RFC 3339; `0001-01-01T00:00:00Z`
    /// for a stopped container). Any JSON value: a bad one is no time, not
    /// a bad answer.
    #[serde(default)]
    read: Option<serde_json::Value>,
    #[serde(default)]
    cpu_stats: Option<RawCpuStats>,
    #[serde(default)]
    memory_stats: Option<RawMemStats>,
}

#[derive(Deserialize)]
struct RawCpuStats {
    #[serde(default)]
    cpu_usage: Option<RawCpuUsage>,
    #[serde(default)]
    system_cpu_usage: Option<u64>,
    #[serde(default)]
    online_cpus: Option<u32>,
    #[serde(default)]
    throttling_data: Option<RawThrottling>,
}

#[derive(Deserialize)]
struct RawThrottling {
    #[serde(default)]
    throttled_periods: Option<u64>,
    /// nanoseconds
    #[serde(default)]
    throttled_time: Option<u64>,
}

#[derive(Deserialize)]
struct RawCpuUsage {
    #[serde(default)]
    total_usage: Option<u64>,
}

#[derive(Deserialize)]
struct RawMemStats {
    #[serde(default)]
    usage: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
    /// cgroup v1 only (`memory.max_usage_in_bytes`)
    #[serde(default)]
    max_usage: Option<u64>,
    #[serde(default)]
    stats: Option<HashMap<String, serde_json::Value>>,
}

/// Decodes a Docker stats answer (cgroup v1 or v2) leniently.
pub fn decode_stats(body: &[u8]) -> Result<ContainerStats, RuntimeError> {
    let raw: RawStats =
        serde_json::from_slice(body).map_err(|e| RuntimeError::Decode(e.to_string()))?;
    let cpu = raw.cpu_stats;
    let cpu_total_ns = cpu
        .as_ref()
        .and_then(|c| c.cpu_usage.as_ref())
        .and_then(|u| u.total_usage)
        .unwrap_or(0);
    let mem = raw.memory_stats;
    let get = |k: &str| -> Option<u64> {
        mem.as_ref()
            .and_then(|m| m.stats.as_ref())
            .and_then(|s| s.get(k))
            .and_then(|v| v.as_u64())
    };
    // v1: total_inactive_file (hierarchical); v2: inactive_file
    let inactive = get("total_inactive_file")
        .or_else(|| get("inactive_file"))
        .unwrap_or(0);
    let limit = mem
        .as_ref()
        .and_then(|m| m.limit)
        .filter(|&l| l > 0 && l < (1u64 << 62));
    Ok(ContainerStats {
        cpu_total_ns,
        system_cpu_ns: cpu.as_ref().and_then(|c| c.system_cpu_usage),
        online_cpus: cpu.as_ref().and_then(|c| c.online_cpus),
        mem_usage_bytes: mem.as_ref().and_then(|m| m.usage).unwrap_or(0),
        mem_inactive_file_bytes: inactive,
        mem_limit_bytes: limit,
        mem_peak_bytes: mem.as_ref().and_then(|m| m.max_usage).filter(|&p| p > 0),
        cpu_nr_throttled: cpu
            .as_ref()
            .and_then(|c| c.throttling_data.as_ref())
            .and_then(|t| t.throttled_periods),
        cpu_throttled_ns: cpu
            .as_ref()
            .and_then(|c| c.throttling_data.as_ref())
            .and_then(|t| t.throttled_time),
        read_s: raw
            .read
            .as_ref()
            .and_then(|v| v.as_str())
            .and_then(crate::runtime::parse_rfc3339_s),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = r#"{"read":"2026-11-22T08:26:55.801169848Z","cpu_stats":{"cpu_usage":{"total_usage":30301404},"system_cpu_usage":1975210000000,"online_cpus":2},"memory_stats":{"usage":561152,"max_usage":4083712,"stats":{"cache":0,"total_inactive_file":4096,"inactive_file":0,"rss":53248},"limit":33554432}}"#;
    const V2: &str = r#"{"cpu_stats":{"cpu_usage":{"total_usage":7},"online_cpus":4},"memory_stats":{"usage":1000,"stats":{"inactive_file":300,"anon":600,"zswap":0,"some_new_field":12},"limit":9223372036854771712}}"#;

    #[test]
    fn decodes_v1_and_v2() {
        let s = decode_stats(V1.as_bytes()).expect("v1");
        assert_eq!(s.cpu_total_ns, 30301404);
        assert_eq!(s.mem_usage_bytes, 561152);
        assert_eq!(s.working_set_bytes(), 561152 - 4096);
        assert_eq!(s.mem_limit_bytes, Some(33554432));
        assert_eq!(s.online_cpus, Some(2));
        let s = decode_stats(V2.as_bytes()).expect("v2");
        assert_eq!(s.working_set_bytes(), 700);
        assert_eq!(s.mem_limit_bytes, None, "unlimited shows as a huge number");
    }

    #[test]
    fn decodes_empty_stats_of_a_stopped_container() {
        let s = decode_stats(br#"{"read":"0001-01-01T00:00:00Z","cpu_stats":{"cpu_usage":{"total_usage":0}},"memory_stats":{}}"#)
            .expect("decodes");
        assert_eq!(s.cpu_total_ns, 0);
        assert_eq!(s.working_set_bytes(), 0);
        assert_eq!(s.read_s, None, "Docker's zero time is no read time");
        assert!(decode_stats(b"not json").is_err());
    }

    #[test]
    fn decodes_the_read_time_leniently() {
        let s = decode_stats(V1.as_bytes()).expect("v1");
        let read = s.read_s.expect("read time");
        assert!((read - 1_795_336_015.801_169_8).abs() < 1e-5, "{read}");
        // no read time, or one that is not a time: the answer still decodes
        assert_eq!(decode_stats(V2.as_bytes()).expect("v2").read_s, None);
        for read in [
            r#"" ""#,
            r#""garbage""#,
            r#""2026-13-40T99:00:00Z""#,
            "null",
            "12345",
            "{}",
            "[1]",
        ] {
            let body =
                format!(r#"{{"read":{read},"cpu_stats":{{"cpu_usage":{{"total_usage":7}}}}}}"#);
            let s = decode_stats(body.as_bytes()).expect("decodes");
            assert_eq!((s.cpu_total_ns, s.read_s), (7, None), "{read}");
        }
    }

    #[test]
    fn http_parsing() {
        let (s, b) =
            parse_http_response(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{}")
                .expect("ok");
        assert_eq!((s, b.as_slice()), (200, b"{}".as_slice()));
        let (s, b) =
            parse_http_response(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
                .expect("chunked");
        assert_eq!((s, b.as_slice()), (404, b"abcde".as_slice()));
        assert!(parse_http_response(b"garbage").is_err());
        assert!(parse_http_response(b"HTTP/1.1 abc\r\n\r\n").is_err());
    }
}

//! `tailor recommendations`: per managed container and resource, the
//! current limit, lower / target / upper recommendation, confidence, the
//! binding reason and what was applied (and, for a managed container that
//! is not running, its state: `oom-killed, waiting for room`), from a running agent
//! (`--url`, its `/v1/recommendations`) or its state directory
//! (`--state-dir`, `recommendations.json`). A table by default, or `--csv`,
//! `--json`, `--html FILE`.

use agent::recommend::{self, Confidence, Recommendations, ResourceKind};
use agent::text::printable;
use anyhow::{bail, Context};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Default agent URL.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9847";
/// Largest answer read from the agent (bytes).
const MAX_BODY_BYTES: u64 = 64 << 20;

/// Where to read from: a running agent or its state directory.
#[derive(clap::Args, Debug, Clone)]
pub struct Source {
    /// The agent's HTTP endpoint (plain http). Default http://127.0.0.1:9847.
    #[arg(long, conflicts_with = "state_dir")]
    pub url: Option<String>,
    /// The agent's state directory (the directory of `state_file`).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub source: Source,
    /// CSV (values in cores and MiB).
    #[arg(long, conflicts_with_all = ["json", "html"])]
    pub csv: bool,
    /// JSON as the agent serves it.
    #[arg(long, conflicts_with = "html")]
    pub json: bool,
    /// Write an HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// GET `path` from a plain-http `url` (`http://host:port`), bounded in size
/// and time (30 s for the whole answer); the body of a 200 answer.
pub fn http_get(url: &str, path: &str) -> anyhow::Result<String> {
    http_get_within(url, path, std::time::Duration::from_secs(30))
}

/// [`http_get`] with the whole answer due within `total`.
fn http_get_within(url: &str, path: &str, total: std::time::Duration) -> anyhow::Result<String> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("--url must start with http://, got {url:?}"))?;
    let host = rest.trim_end_matches('/');
    if host.is_empty() || host.contains('/') {
        bail!("--url must be http://HOST:PORT, got {url:?}");
    }
    let addr = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    let timeout = std::time::Duration::from_secs(10).min(total);
    // the whole answer, not each read: a server trickling bytes is cut off
    let deadline = std::time::Instant::now() + total;
    let sock = std::net::ToSocketAddrs::to_socket_addrs(&addr)
        .with_context(|| format!("cannot resolve {addr}"))?
        .next()
        .with_context(|| format!("cannot resolve {addr}"))?;
    let mut s = std::net::TcpStream::connect_timeout(&sock, timeout)
        .with_context(|| format!("cannot connect to {url}"))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )
    .with_context(|| format!("sending the request to {url}{path}"))?;
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            bail!(
                "{url}{path}: no complete answer within {} s",
                total.as_secs_f64()
            );
        }
        s.set_read_timeout(Some(left.min(timeout)))?;
        let n = match s.read(&mut chunk) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) && std::time::Instant::now() >= deadline =>
            {
                continue; // past the deadline: the loop's check says so
            }
            Err(e) => return Err(e).with_context(|| format!("reading {url}{path}")),
        };
        if n == 0 {
            break;
        }
        if (buf.len() + n) as u64 > MAX_BODY_BYTES {
            bail!("{url}{path}: answer larger than {MAX_BODY_BYTES} bytes");
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .with_context(|| format!("{url}{path}: not an HTTP answer"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .with_context(|| format!("{url}{path}: no status"))?;
    if status != 200 {
        bail!("{url}{path}: HTTP {status}: {}", body.trim());
    }
    Ok(body.to_string())
}

fn load(source: &Source) -> anyhow::Result<Recommendations> {
    let (text, from) = match &source.state_dir {
        Some(dir) => {
            let p = dir.join(agent::agent::RECOMMENDATIONS_FILE);
            let text = std::fs::read_to_string(&p).with_context(|| {
                format!(
                    "cannot read {} (has the agent run a round with this state directory?)",
                    p.display()
                )
            })?;
            (text, p.display().to_string())
        }
        None => {
            let url = source.url.as_deref().unwrap_or(DEFAULT_URL);
            let path = "/v1/recommendations";
            (http_get(url, path)?, format!("{url}{path}"))
        }
    };
    serde_json::from_str(&text)
        .with_context(|| format!("{from}: not the agent's recommendations JSON"))
}

fn num(r: ResourceKind, v: f64) -> String {
    match r {
        ResourceKind::Cpu => format!("{v:.3}"),
        ResourceKind::Mem => format!("{v:.1}"),
    }
}

fn conf(c: Confidence) -> &'static str {
    match c {
        Confidence::Low => "low",
        Confidence::Medium => "medium",
        Confidence::High => "high",
    }
}

/// The table printed by default.
pub fn table(r: &Recommendations) -> String {
    let header = [
        "CONTAINER",
        "STATE",
        "RESOURCE",
        "UNIT",
        "CURRENT",
        "LOWER",
        "TARGET",
        "UPPER",
        "CONFIDENCE",
        "REASON",
        "APPLIED",
    ];
    let rows: Vec<[String; 11]> = r
        .items
        .iter()
        .map(|i| {
            [
                printable(&i.container),
                i.state(),
                i.resource.as_str().to_string(),
                printable(&i.unit),
                i.current_limit
                    .map(|v| num(i.resource, v))
                    .unwrap_or_else(|| "none".into()),
                num(i.resource, i.lower),
                num(i.resource, i.target),
                num(i.resource, i.upper),
                conf(i.confidence).to_string(),
                printable(&i.reason),
                printable(&i.applied),
            ]
        })
        .collect();
    let mut w = header.map(str::len);
    for row in &rows {
        for (k, c) in row.iter().enumerate() {
            w[k] = w[k].max(c.chars().count());
        }
    }
    let containers = r
        .items
        .iter()
        .map(|i| i.container.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mut out = format!(
        "node {} round {} ({}): {} container{}\n",
        printable(&r.node),
        r.round,
        printable(&r.actuation),
        containers,
        if containers == 1 { "" } else { "s" }
    );
    let line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (k, c) in cells.iter().enumerate() {
            if k + 1 == cells.len() {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:<width$}  ", width = w[k]));
            }
        }
        l.trim_end().to_string() + "\n"
    };
    out.push_str(&line(header.to_vec()));
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A self-contained HTML page: the table, with a bar per row showing
/// lower..upper, the target and the current limit on one scale.
pub fn html(r: &Recommendations) -> String {
    let mut rows = String::new();
    for i in &r.items {
        let scale = i
            .upper
            .max(i.current_limit.unwrap_or(0.0))
            .max(i.request)
            .max(1e-9);
        let pct = |v: f64| (v / scale * 100.0).clamp(0.0, 100.0);
        let current = i
            .current_limit
            .map(|c| {
                format!(
                    "<div class=\"cur\" style=\"left:{:.1}%\" title=\"current\"></div>",
                    pct(c)
                )
            })
            .unwrap_or_default();
        rows.push_str(&format!(
            "<tr class=\"{conf}\"><td>{c}</td><td>{state}</td><td>{res} ({unit})</td><td class=\"n\">{cur}</td><td class=\"n\">{used}</td><td class=\"n\">{lo}</td><td class=\"n\"><b>{t}</b></td><td class=\"n\">{up}</td><td>{conf}</td>\
<td><div class=\"bar\"><div class=\"band\" style=\"left:{l:.1}%;width:{bw:.1}%\"></div><div class=\"use\" style=\"left:{up_use:.1}%\" title=\"usage\"></div><div class=\"tgt\" style=\"left:{tp:.1}%\"></div>{current}</div></td><td>{reason}</td><td>{applied}</td></tr>\n",
            c = esc(&i.container),
            state = esc(&i.state()),
            res = i.resource.as_str(),
            unit = i.unit,
            cur = i.current_limit.map(|v| num(i.resource, v)).unwrap_or_else(|| "none".into()),
            used = num(i.resource, i.usage),
            up_use = pct(i.usage),
            lo = num(i.resource, i.lower),
            t = num(i.resource, i.target),
            up = num(i.resource, i.upper),
            conf = conf(i.confidence),
            l = pct(i.lower),
            bw = (pct(i.upper) - pct(i.lower)).max(0.5),
            tp = pct(i.target),
            reason = esc(&i.reason),
            applied = esc(&i.applied),
        ));
    }
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tailor recommendations: {node}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; }}
th, td {{ padding: 4px 8px; border-bottom: 1px solid #ddd; text-align: left; font-size: 14px; }}
td.n {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.low td {{ color: #888; }}
.bar {{ position: relative; width: 220px; height: 14px; background: #f2f2f2; }}
.band {{ position: absolute; top: 3px; height: 8px; background: #9cc3e6; }}
.tgt {{ position: absolute; top: 0; width: 3px; height: 14px; background: #1f5fa8; }}
.cur {{ position: absolute; top: 0; width: 2px; height: 14px; background: #d2452b; }}
.use {{ position: absolute; top: 0; width: 2px; height: 14px; background: #555; }}
.legend span {{ display: inline-block; margin-right: 1.5em; }}
</style></head><body>
<h1>tailor recommendations</h1>
<p>Node <b>{node}</b>, round {round}, actuation <b>{act}</b>. CPU in cores, memory in MiB.</p>
<p class="legend"><span><b style="color:#9cc3e6">&#9632;</b> lower..upper</span>
<span><b style="color:#1f5fa8">&#9632;</b> target</span> <span><b style="color:#555">&#9632;</b> usage</span> <span><b style="color:#d2452b">&#9632;</b> current limit</span></p>
<table><thead><tr><th>container</th><th>state</th><th>resource</th><th>current</th><th>usage</th><th>lower</th><th>target</th><th>upper</th><th>confidence</th><th>range</th><th>reason</th><th>applied</th></tr></thead>
<tbody>
{rows}</tbody></table>
</body></html>
"#,
        node = esc(&r.node),
        round = r.round,
        act = esc(&r.actuation),
    )
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let r = load(&args.source)?;
    if let Some(path) = &args.html {
        write_file(path, &html(&r))?;
        eprintln!("wrote {}", path.display());
    } else if args.csv {
        print!("{}", recommend::to_csv(&r));
    } else if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", table(&r));
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A server that answers one byte at a time, every 100 ms, forever.
    fn trickling_server() -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut req = [0u8; 1024];
                let _ = s.read(&mut req);
                while s.write_all(b"x").is_ok() {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        });
        format!("http://{addr}")
    }

    /// The deadline is for the whole answer: a server that sends a byte
    /// every 100 ms (never idle for a read timeout) is cut off.
    #[test]
    fn a_trickling_answer_is_cut_off_at_the_deadline() {
        let url = trickling_server();
        let err = http_get_within(&url, "/v1/recommendations", Duration::from_millis(500))
            .expect_err("cut off");
        assert!(
            err.to_string().contains("no complete answer within 0.5 s"),
            "{err:#}"
        );
    }

    /// The table counts containers, not rows, and shows control
    /// characters from labels and files as `?`.
    #[test]
    fn the_table_counts_containers_and_hides_control_characters() {
        let r: Recommendations = serde_json::from_value(serde_json::json!({
            "node": "n\u{1b}[2J", "round": 3, "at_s": 1.0, "actuation": "recommend", "items": [
                {"container": "web\u{7}", "app": "web", "resource": "mem", "unit": "MiB",
                 "current_limit": 256.0, "request": 256.0, "usage": 20.0, "lower": 30.0,
                 "target": 40.0, "upper": 50.0, "confidence": "high",
                 "reason": "forecast + buffer", "applied": "none"}]
        }))
        .expect("recommendations");
        let t = table(&r);
        assert!(
            t.starts_with("node n?[2J round 3 (recommend): 1 container\n"),
            "{t}"
        );
        assert!(t.contains("web?"), "{t}");
        assert!(t.contains("STATE"), "{t}");
        assert!(t.contains(" running "), "{t}");
        assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
    }
}

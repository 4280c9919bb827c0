//! Helpers of the tests that run real processes on loopback (the shaper,
//! agents, etcd): child processes killed on drop, free ports, private
//! files, minimal HTTP/1.1, polling with a deadline, log tails.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The `[limits]` and `[shaper]` tables of the cluster tests' shaper
/// config: short timeouts, no grace period, one K1 for every application
/// (each test container is a lone one).
pub const TEST_SHAPER_TABLES: &str = r#"[limits]
header_read_timeout_s = 2.0
idle_timeout_s = 4.0
[shaper]
grace_period_s = 0.0
k1 = 0.1
k2 = 3.0
small_app_components = 0
app_mem_ref_rel = 0.0
sibling_hold_s = 0.0"#;

/// True under CI (`CI` set, not empty, "false" or "0"): a test whose real
/// part is missing then fails instead of skipping.
pub fn in_ci() -> bool {
    std::env::var("CI")
        .map(|v| !v.is_empty() && v != "false" && v != "0")
        .unwrap_or(false)
}

/// A child process, killed when dropped.
pub struct Proc {
    pub child: Child,
}

impl Proc {
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn free_port() -> u16 {
    free_ports::<1>()[0]
}

/// `N` distinct free loopback ports: every listener is held until all are
/// bound, so the kernel cannot hand out one port twice (taken one at a
/// time, two members of one etcd cluster once got the same peer port).
pub fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: [std::net::TcpListener; N] =
        std::array::from_fn(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"));
    listeners.map(|l| l.local_addr().expect("addr").port())
}

/// Writes `text` to `path` with mode 0600 (token and credential files).
pub fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .expect("create file");
    f.write_all(text.as_bytes()).expect("write");
}

/// Minimal HTTP/1.1 request over loopback with a JSON body (the root crate
/// has no HTTP client): (status, body), `None` when the connection fails.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let code = raw.split_whitespace().nth(1)?.parse().ok()?;
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((code, body))
}

pub fn http_get(port: u16, path: &str, token: Option<&str>) -> Option<(u16, String)> {
    http(port, "GET", path, token, "")
}

pub fn http_post(port: u16, path: &str, token: &str, body: &str) -> Option<(u16, String)> {
    http(port, "POST", path, Some(token), body)
}

/// Polls `cond` every 100 ms until it holds; fails with `what` and
/// `diag()` after `timeout`.
pub fn wait_until(
    what: &str,
    timeout: Duration,
    mut cond: impl FnMut() -> bool,
    diag: impl Fn() -> String,
) {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for: {what}\n{}",
            diag()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The last 3,000 bytes of a log file, headed by its path.
pub fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut start = text.len().saturating_sub(3000);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("--- {}:\n{}", path.display(), &text[start..])
}

/// The labels of a test container managed by tailor.
pub fn labels<'a>(label: &'a str, app: &'a str, class: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("tailor.enable", "true"),
        ("tailor.test", label),
        ("tailor.app", app),
        ("tailor.class", class),
    ]
}

/// Registers `agent` in `tenant` in the credentials file `creds` with
/// `tailor shaper credentials add`; returns its token file (in `dir`).
pub fn register_agent(dir: &Path, creds: &Path, agent: &str, tenant: &str) -> PathBuf {
    let token_file = dir.join(format!("{agent}.token"));
    let out = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args([
            "shaper",
            "credentials",
            "add",
            "--agent",
            agent,
            "--tenant",
            tenant,
        ])
        .arg("--file")
        .arg(creds)
        .arg("--token-file")
        .arg(&token_file)
        .output()
        .expect("run tailor shaper credentials add");
    assert!(
        out.status.success(),
        "credentials add: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    token_file
}

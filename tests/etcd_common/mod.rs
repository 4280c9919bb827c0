//! Helpers of the etcd tests: a three-member etcd cluster on loopback
//! (temporary data directories, killed on drop), child processes killed on
//! drop, minimal loopback HTTP. `etcd_or_skip` FAILS in CI (CI=true) when
//! etcd is missing and skips loudly elsewhere.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn in_ci() -> bool {
    std::env::var("CI")
        .map(|v| !v.is_empty() && v != "false" && v != "0")
        .unwrap_or(false)
}

/// The etcd binary, or `None` after a loud message (a panic in CI).
pub fn etcd_or_skip(test: &str) -> Option<PathBuf> {
    let found = ["etcd", "/usr/bin/etcd", "/usr/local/bin/etcd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| {
            Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    match found {
        Some(p) => Some(p),
        None if in_ci() => panic!("{test}: etcd is required in CI (CI=true) but not installed (apt-get install etcd-server)"),
        None => {
            eprintln!("\n!!!!!!!!!! SKIPPED {test}: etcd not installed\n!!!!!!!!!! run ./scripts/test.sh (installs etcd-server) or apt-get install etcd-server\n");
            None
        }
    }
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
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

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

/// Minimal HTTP/1.1 GET over loopback.
pub fn http_get(port: u16, path: &str, token: Option<&str>) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let code = raw.split_whitespace().nth(1)?.parse().ok()?;
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((code, body))
}

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

pub fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let start = text.len().saturating_sub(3000);
    let mut start = start;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("--- {}:\n{}", path.display(), &text[start..])
}

/// Three etcd members on loopback.
pub struct Etcd {
    pub members: Vec<Proc>,
    pub client_ports: Vec<u16>,
    pub logs: Vec<PathBuf>,
}

impl Etcd {
    pub fn start(bin: &Path, dir: &Path) -> Self {
        let client_ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let peer_ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let cluster: Vec<String> = peer_ports
            .iter()
            .enumerate()
            .map(|(i, p)| format!("m{i}=http://127.0.0.1:{p}"))
            .collect();
        let cluster = cluster.join(",");
        let mut members = Vec::new();
        let mut logs = Vec::new();
        for i in 0..3 {
            let log_path = dir.join(format!("etcd-m{i}.log"));
            let log = std::fs::File::create(&log_path).expect("log");
            let child = Command::new(bin)
                .arg(format!("--name=m{i}"))
                .arg(format!(
                    "--data-dir={}",
                    dir.join(format!("etcd-m{i}")).display()
                ))
                .arg(format!(
                    "--listen-client-urls=http://127.0.0.1:{}",
                    client_ports[i]
                ))
                .arg(format!(
                    "--advertise-client-urls=http://127.0.0.1:{}",
                    client_ports[i]
                ))
                .arg(format!(
                    "--listen-peer-urls=http://127.0.0.1:{}",
                    peer_ports[i]
                ))
                .arg(format!(
                    "--initial-advertise-peer-urls=http://127.0.0.1:{}",
                    peer_ports[i]
                ))
                .arg(format!("--initial-cluster={cluster}"))
                .arg("--initial-cluster-state=new")
                .arg(format!(
                    "--initial-cluster-token=tailor-test-{}",
                    std::process::id()
                ))
                .stdout(Stdio::null())
                .stderr(Stdio::from(log))
                .spawn()
                .expect("spawn etcd");
            members.push(Proc { child });
            logs.push(log_path);
        }
        let e = Self {
            members,
            client_ports,
            logs,
        };
        wait_until(
            "the etcd cluster is healthy",
            Duration::from_secs(30),
            || {
                e.client_ports.iter().all(|p| {
                    http_get(*p, "/health", None)
                        .is_some_and(|(c, b)| c == 200 && b.contains("true"))
                })
            },
            || e.diag(),
        );
        e
    }

    pub fn endpoints(&self) -> Vec<String> {
        self.client_ports
            .iter()
            .map(|p| format!("http://127.0.0.1:{p}"))
            .collect()
    }

    pub fn diag(&self) -> String {
        self.logs
            .iter()
            .map(|l| tail(l))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

pub fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("\"{s}\"")).collect();
    format!("[{}]", quoted.join(", "))
}

pub fn base64_of(s: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

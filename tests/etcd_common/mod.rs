//! Helpers of the etcd tests: a three-member etcd cluster on loopback
//! (temporary data directories, killed on drop; the process and HTTP
//! helpers are in `loopback_common`). `etcd_or_skip` FAILS in CI (CI=true) when
//! etcd is missing and skips loudly elsewhere.

#![allow(dead_code)]

use crate::loopback_common::{free_ports, http_get, in_ci, tail, wait_until, Proc};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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

/// Three etcd members on loopback.
pub struct Etcd {
    pub members: Vec<Proc>,
    pub client_ports: Vec<u16>,
    pub logs: Vec<PathBuf>,
}

impl Etcd {
    pub fn start(bin: &Path, dir: &Path) -> Self {
        let [c0, c1, c2, p0, p1, p2] = free_ports::<6>();
        let client_ports = vec![c0, c1, c2];
        let peer_ports = [p0, p1, p2];
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

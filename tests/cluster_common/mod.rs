//! The harness of the cluster tests on the REAL dockerd
//! (tests/cluster_docker.rs): a `tailor shaper` process with its operator
//! token and agent credentials, the agent processes (that test binary
//! re-run as its ignored `cluster_agent_child`), and the reports a fake
//! agent sends.

#![allow(dead_code)]

use crate::agent_child::spawn_agent_child;
use crate::agent_common::*;
use crate::loopback_common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "cluster-docker-test-token-0123456789";

pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// The operator token (status, metrics).
    pub token_file: PathBuf,
    pub creds_file: PathBuf,
}

impl Cluster {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let token_file = dir.path().join("token");
        write_private(&token_file, &format!("{TOKEN}\n"));
        let creds_file = dir.path().join("credentials.toml");
        Self {
            dir,
            port: free_port(),
            token_file,
            creds_file,
        }
    }

    /// Registers `agent` in `tenant` with `tailor shaper credentials add`;
    /// returns its token file.
    pub fn register(&self, agent: &str, tenant: &str) -> PathBuf {
        register_agent(self.dir.path(), &self.creds_file, agent, tenant)
    }

    pub fn token_of(&self, agent: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{agent}.token")))
            .expect("token file")
            .trim()
            .to_string()
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn start_shaper(&self) -> Proc {
        let cfg = self.dir.path().join("shaper.toml");
        let text = format!(
            r#"
listen = "127.0.0.1:{port}"
token_file = "{token}"
credentials_file = "{creds}"
interval_s = 1.0
stale_after_intervals = 3
warmup_intervals = 1
{TEST_SHAPER_TABLES}
"#,
            port = self.port,
            token = self.token_file.display(),
            creds = self.creds_file.display()
        );
        std::fs::write(&cfg, text).expect("write shaper.toml");
        let log = std::fs::File::create(self.dir.path().join("shaper.log")).expect("log");
        let child = Command::new(env!("CARGO_BIN_EXE_tailor"))
            .args(["shaper", "--config"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn tailor shaper");
        let mut p = Proc { child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while http_get(self.port, "/healthz", None).map(|(s, _)| s) != Some(200) {
            assert!(
                p.alive(),
                "tailor shaper exited: {}",
                self.log("shaper.log")
            );
            assert!(
                Instant::now() < deadline,
                "tailor shaper did not come up: {}",
                self.log("shaper.log")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    /// An agent process managing containers labelled `tailor.test=<label>`.
    pub fn start_agent(
        &self,
        agent_id: &str,
        label: &str,
        mem_capacity_mib: u64,
        token_file: &Path,
        state_file: &str,
    ) -> Proc {
        let top =
            format!("mode = \"cluster\"\nrestart_evicted = false\nnode_name = \"{agent_id}\"\n");
        let tables = format!(
            r#"
[capacity]
cpu_cores = 4.0
mem_bytes = {mem}
[cluster]
shaper_url = "{url}"
token_file = "{token}"
agent_id = "{agent_id}"
timeout_s = 1.0
[cluster.fail_safe]
hold_s = 8.0
regrow_fraction = 0.5
"#,
            mem = mem_capacity_mib * MIB,
            url = self.url(),
            token = token_file.display()
        );
        spawn_agent_child(
            "cluster_agent_child",
            label,
            &top,
            &tables,
            Some(state_file),
            &self.dir.path().join(format!("agent-{agent_id}.log")),
        )
    }

    pub fn log(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        let start = text.len().saturating_sub(4000);
        text[start..].to_string()
    }

    pub fn status(&self) -> serde_json::Value {
        let (code, body) = http_get(self.port, "/v1/status", Some(TOKEN)).expect("status");
        assert_eq!(code, 200, "{body}");
        serde_json::from_str(&body).expect("status json")
    }

    /// The shaper's status entry of agent `id` (`Null` when absent).
    pub fn agent_status(&self, id: &str) -> serde_json::Value {
        self.status()["agents"]
            .as_array()
            .and_then(|v| v.iter().find(|x| x["agent_id"] == id).cloned())
            .unwrap_or_default()
    }

    pub fn metrics(&self) -> String {
        http_get(self.port, "/metrics", Some(TOKEN))
            .map(|(_, b)| b)
            .unwrap_or_default()
    }
}

/// A component as a fake agent reports it (JSON).
pub fn fake_component(id: &str, app: &str, req_mib: u64, use_mib: u64) -> serde_json::Value {
    let (req, used) = ((req_mib * MIB) as f64, (use_mib * MIB) as f64);
    serde_json::json!({
        "container_id": id, "app": app, "class": "core",
        "request": {"cpu_cores": 0.5, "mem_bytes": req},
        "allocation": {"cpu_cores": 0.5, "mem_bytes": req},
        "usage": {"cpu_cores": 0.1, "mem_bytes": used},
        "forecast": {"cpu": {"mean": 0.1, "std": 0.0}, "mem": {"mean": used, "std": 0.0}},
        "started_s": 1.0, "app_submitted_s": 1.0
    })
}

pub fn fake_report(
    agent: &str,
    boot_id: u64,
    seq: u64,
    mem_mib: u64,
    comps: Vec<serde_json::Value>,
) -> String {
    serde_json::json!({
        "agent_id": agent, "boot_id": boot_id, "seq": seq,
        "capacity": {"cpu_cores": 1.0, "mem_bytes": (mem_mib * MIB) as f64},
        "components": comps, "acks": []
    })
    .to_string()
}

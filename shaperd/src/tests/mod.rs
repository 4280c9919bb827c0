//! Server + simulated agents in-process over loopback HTTP(S): shared
//! fixtures here; the tests by theme in the submodules.

mod early;
mod encoding;
mod flows;
mod fuzz;
mod replicas;
mod security;

use super::auth::write_token_file;
use super::config::ShaperServerConfig;
use super::credentials::CredentialsFile;
use super::protocol::{ComponentReport, ErrorBody, ReportRequest};
use super::server::ShaperServer;
use agent::cluster::client::{ClusterSession, LocalAction, LocalActionKind, RoundSource};
use agent::cluster::config::ClusterClientConfig;
use agent::cluster::failsafe::{FailSafe, FailSafeConfig, LinkState};
use agent::cluster::ClusterClient;
use proptest::prelude::*;
use shaper::{Class, Forecasts, Predictive, Resources, ShaperConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tailor_core::ManualClock;

/// The operator token (`/v1/status`, `/metrics`).
const TOKEN: &str = "test-token-0123456789abcdef";
const GB: f64 = 1e9;

struct Fixture {
    _dir: tempfile::TempDir,
    token_file: PathBuf,
    creds_file: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("token");
    write_token_file(&token_file, TOKEN).expect("token");
    let creds_file = dir.path().join("credentials.toml");
    let fx = Fixture {
        _dir: dir,
        token_file,
        creds_file,
    };
    for a in ["a", "b", "n1", "n2", "n3"] {
        fx.register(a, "t");
    }
    fx
}

impl Fixture {
    /// Registers a credential for `agent` in `tenant`; returns its token
    /// file (`<agent>.token`, mode 0600).
    fn register(&self, agent: &str, tenant: &str) -> PathBuf {
        let mut f = CredentialsFile::load(&self.creds_file, true).expect("load");
        let token = f.add(agent, tenant, &[], 0.0).expect("add");
        f.save(&self.creds_file).expect("save");
        let path = self.agent_token_file(agent);
        write_token_file(&path, &token).expect("token file");
        path
    }

    fn agent_token_file(&self, agent: &str) -> PathBuf {
        self._dir.path().join(format!("{agent}.token"))
    }

    fn agent_token(&self, agent: &str) -> String {
        std::fs::read_to_string(self.agent_token_file(agent))
            .expect("token")
            .trim()
            .to_string()
    }
}

fn server_config(fx: &Fixture) -> ShaperServerConfig {
    let mut cfg = ShaperServerConfig::with_token_file(&fx.token_file);
    cfg.credentials_file = Some(fx.creds_file.clone());
    cfg.listen = "127.0.0.1:0".parse().expect("addr");
    cfg.warmup_intervals = 0;
    cfg.max_body_bytes = 64 * 1024;
    cfg.shaper = ShaperConfig {
        grace_period_s: 0.0,
        min_relative_change: 0.0,
        ..ShaperConfig::default()
    };
    cfg
}

/// A component report with a point forecast at its usage (1 core
/// requested, 0.1 used). Shared with the state tests.
pub(crate) fn component(
    id: &str,
    app: &str,
    class: Class,
    req_mem: f64,
    use_mem: f64,
    started_s: f64,
) -> ComponentReport {
    ComponentReport {
        container_id: id.into(),
        app: app.into(),
        class,
        priority: 0,
        protected: false,
        request: Resources::new(1.0, req_mem),
        allocation: Resources::new(1.0, req_mem),
        usage: Resources::new(0.1, use_mem),
        forecast: Some(Forecasts {
            cpu: Predictive::gaussian(0.1, 0.0),
            mem: Predictive::gaussian(use_mem, 0.0),
            mem_hold_bytes: 0.0,
            mem_small_hold_bytes: 0.0,
        }),
        started_s,
        work_done_s: None,
        app_submitted_s: None,
        failures: 0,
        expected_remaining_s: None,
        restarts_alone: false,
        mem_floor_bytes: 0.0,
        oom_floor_bytes: 0.0,
    }
}

/// [`component`], its application submitted when it started.
fn comp(
    id: &str,
    app: &str,
    class: Class,
    req_mem: f64,
    use_mem: f64,
    submitted_s: f64,
) -> ComponentReport {
    ComponentReport {
        app_submitted_s: Some(submitted_s),
        ..component(id, app, class, req_mem, use_mem, submitted_s)
    }
}

fn client_config(url: &str, token_file: &Path, agent: &str) -> ClusterClientConfig {
    let mut c = ClusterClientConfig::new(url, token_file);
    c.agent_id = Some(agent.into());
    c.timeout_s = 2.0;
    c.fail_safe = FailSafeConfig {
        hold_s: 30.0,
        regrow_fraction: 0.5,
        snap_fraction: 0.02,
    };
    c
}

async fn post_raw(url: &str, path: &str, token: Option<&str>, body: Vec<u8>) -> (u16, Vec<u8>) {
    post_typed(url, path, token, "application/json", body).await
}

/// [`post_raw`] with that `Content-Type`.
async fn post_typed(
    url: &str,
    path: &str,
    token: Option<&str>,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    let http = reqwest::Client::new();
    let mut req = http
        .post(format!("{url}{path}"))
        .header("content-type", content_type)
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("send");
    let status = resp.status().as_u16();
    (status, resp.bytes().await.expect("body").to_vec())
}

/// One request over HTTP/2 (h2c, prior knowledge) on a connection of its
/// own: the status and body, or the client's error (e.g. a stream reset).
async fn h2_request(
    addr: std::net::SocketAddr,
    req: axum::http::Request<axum::body::Body>,
) -> Result<(u16, Vec<u8>), String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let (mut send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .map_err(|e| format!("handshake: {e:?}"))?;
    tokio::spawn(conn);
    let resp = send
        .send_request(req)
        .await
        .map_err(|e| format!("request: {e:?}"))?;
    let status = resp.status().as_u16();
    let body = axum::body::to_bytes(axum::body::Body::new(resp.into_body()), 1 << 20)
        .await
        .map_err(|e| format!("body: {e:?}"))?;
    Ok((status, body.to_vec()))
}

fn valid_report_json(seq: u64) -> Vec<u8> {
    report_json("n1", 1, seq)
}

fn report_json(agent: &str, boot_id: u64, seq: u64) -> Vec<u8> {
    let r = ReportRequest {
        agent_id: agent.into(),
        boot_id,
        seq,
        capacity: Resources::new(4.0, 8.0 * GB),
        components: vec![comp("c1", "web", Class::Core, 2.0 * GB, 1.0 * GB, 0.0)],
        acks: vec![],
        mentions: false,
        early: false,
    };
    serde_json::to_vec(&r).expect("json")
}

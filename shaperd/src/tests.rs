//! Server + simulated agents in-process over loopback HTTP(S).

use super::auth::write_token_file;
use super::config::ShaperServerConfig;
use super::credentials::CredentialsFile;
use super::protocol::{ComponentReport, ErrorBody, ReportRequest};
use super::server::ShaperServer;
use agent::cluster::client::{ClusterSession, LocalActionKind, RoundSource};
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
        let token = f.add(agent, tenant, 0.0).expect("add");
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

fn comp(
    id: &str,
    app: &str,
    class: Class,
    req_mem: f64,
    use_mem: f64,
    submitted_s: f64,
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
        }),
        started_s: submitted_s,
        work_done_s: None,
        app_submitted_s: Some(submitted_s),
        failures: 0,
        expected_remaining_s: None,
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
    let http = reqwest::Client::new();
    let mut req = http
        .post(format!("{url}{path}"))
        .header("content-type", "application/json")
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("send");
    let status = resp.status().as_u16();
    (status, resp.bytes().await.expect("body").to_vec())
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
    };
    serde_json::to_vec(&r).expect("json")
}

#[tokio::test]
async fn unauthenticated_and_malformed_requests_are_refused_and_change_nothing() {
    let fx = fixture();
    let clock = Arc::new(ManualClock::new(1000.0));
    let server = ShaperServer::start_with(server_config(&fx), clock, false)
        .await
        .expect("start");
    let url = server.url();
    let body = valid_report_json(1);
    let n1 = fx.agent_token("n1");
    let n1 = Some(n1.as_str());

    for token in [None, Some("wrong-token-0123456789abcdef"), Some("")] {
        let (status, bytes) = post_raw(&url, "/v1/report", token, body.clone()).await;
        assert_eq!(status, 401, "token {token:?}");
        let e: ErrorBody = serde_json::from_slice(&bytes).expect("json error body");
        assert_eq!(e.error, "unauthorized");
        assert!(!e.message.is_empty());
    }
    // Wrong scheme.
    let resp = reqwest::Client::new()
        .get(format!("{url}/metrics"))
        .header("authorization", format!("Basic {TOKEN}"))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 401);
    assert!(resp.headers().contains_key("www-authenticate"));

    let (status, bytes) = post_raw(&url, "/v1/report", n1, b"{not json".to_vec()).await;
    assert_eq!(status, 400);
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("json error body");
    assert!(e.message.contains("malformed JSON"), "{}", e.message);

    let mut invalid: serde_json::Value = serde_json::from_slice(&body).expect("json");
    invalid["components"][0]["usage"]["mem_bytes"] = serde_json::json!(-5.0);
    let (status, bytes) = post_raw(
        &url,
        "/v1/report",
        n1,
        serde_json::to_vec(&invalid).expect("json"),
    )
    .await;
    assert_eq!(status, 400);
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("json error body");
    assert!(
        e.message.contains("components[0].usage.mem_bytes"),
        "{}",
        e.message
    );

    // Over the body limit (64 KiB in this config).
    let (status, bytes) = post_raw(&url, "/v1/report", n1, vec![b' '; 200 * 1024]).await;
    assert_eq!(status, 413);
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("json error body");
    assert_eq!(e.error, "payload_too_large");

    // Nothing was recorded.
    let status = server.shared().with_state(|s| s.status(1000.0));
    assert!(status.agents.is_empty());

    // The operator token cannot report; the agent's own token works (its
    // scheme in any case); /healthz needs none; /metrics counts the refusals.
    let (code, _) = post_raw(&url, "/v1/report", Some(TOKEN), body.clone()).await;
    assert_eq!(code, 401);
    let resp = reqwest::Client::new()
        .post(format!("{url}/v1/report"))
        .header("content-type", "application/json")
        .header("authorization", format!("bearer {}", fx.agent_token("n1")))
        .body(body)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 200);
    let health = reqwest::get(format!("{url}/healthz"))
        .await
        .expect("healthz");
    assert_eq!(health.status().as_u16(), 200);
    let metrics = reqwest::Client::new()
        .get(format!("{url}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert_eq!(
        super::metrics::sample(
            &metrics,
            "tailor_shaper_requests_total{endpoint=\"report\",code=\"401\"}"
        ),
        Some(4.0)
    );
    assert_eq!(
        super::metrics::sample(
            &metrics,
            "tailor_shaper_requests_total{endpoint=\"report\",code=\"400\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        super::metrics::sample(&metrics, "tailor_shaper_agents_known"),
        Some(1.0)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn wrong_token_in_client_is_a_rejection_and_triggers_fail_safe() {
    let fx = fixture();
    let clock = Arc::new(ManualClock::new(1000.0));
    let server = ShaperServer::start_with(server_config(&fx), clock, false)
        .await
        .expect("start");
    let other = fx._dir.path().join("other");
    write_token_file(&other, "a-different-token-0123456789").expect("token");
    let mut session =
        ClusterSession::new(&client_config(&server.url(), &other, "n1"), 0.0).expect("session");
    let d = session.round(Resources::new(1.0, GB), &[], 1.0).await;
    match d.source {
        RoundSource::FailSafe {
            link: LinkState::Holding { .. },
            error,
        } => assert!(error.contains("401"), "{error}"),
        other => panic!("expected fail-safe, got {other:?}"),
    }
    server.shutdown().await;
}

/// Two agents, one application spanning both: its core does not fit on
/// host b, so its components on both hosts are evicted; acks come back.
#[tokio::test]
async fn multi_host_application_is_evicted_on_every_host() {
    let fx = fixture();
    let clock = Arc::new(ManualClock::new(1000.0));
    let server = ShaperServer::start_with(server_config(&fx), clock.clone(), false)
        .await
        .expect("start");
    let url = server.url();
    let mut a = ClusterSession::new(&client_config(&url, &fx.agent_token_file("a"), "a"), 1000.0)
        .expect("a");
    let mut b = ClusterSession::new(&client_config(&url, &fx.agent_token_file("b"), "b"), 1000.0)
        .expect("b");
    let cap = Resources::new(64.0, 10.0 * GB);
    let a_comps = vec![comp("l2", "late", Class::Elastic, 2.0 * GB, 1.0 * GB, 50.0)];
    let b_comps = vec![
        comp("e1", "early", Class::Core, 8.0 * GB, 7.5 * GB, 0.0),
        comp("l1", "late", Class::Core, 4.0 * GB, 3.0 * GB, 50.0),
    ];
    assert!(a.round(cap, &a_comps, 1000.0).await.actions.is_empty());
    assert!(b.round(cap, &b_comps, 1000.0).await.actions.is_empty());
    let out = server.shared().run_round().await.expect("round");
    assert_eq!(out.evict_application, 2);

    let da = a.round(cap, &a_comps, 1001.0).await;
    assert_eq!(da.source, RoundSource::Shaper { round: 1 });
    let evict_a: Vec<_> = da
        .actions
        .iter()
        .filter(|x| matches!(x.kind, LocalActionKind::Evict { whole_app: true }))
        .collect();
    assert_eq!(evict_a.len(), 1);
    assert_eq!(evict_a[0].container_id, "l2");
    let db = b.round(cap, &b_comps, 1001.0).await;
    let evict_b: Vec<&str> = db
        .actions
        .iter()
        .filter(|x| matches!(x.kind, LocalActionKind::Evict { whole_app: true }))
        .map(|x| x.container_id.as_str())
        .collect();
    assert_eq!(evict_b, vec!["l1"]);
    assert!(db
        .actions
        .iter()
        .all(|x| x.container_id != "e1" || matches!(x.kind, LocalActionKind::Resize { .. })));

    // Apply and acknowledge.
    for x in &da.actions {
        a.record_outcome(x.id.as_ref().expect("id"), Ok(()));
    }
    let acked = a.flush_acks(1002.0).await.expect("ack");
    assert_eq!(acked.accepted as usize, da.actions.len());
    let st = server.shared().with_state(|s| s.status(1002.0));
    assert_eq!(st.actions_applied as usize, da.actions.len());
    assert_eq!(st.app_failures.get("t/late"), Some(&1));
    // Redelivery: b did not ack yet, so b gets the same ids again; a gets nothing.
    assert!(a.round(cap, &[], 1003.0).await.actions.is_empty());
    let again = b.round(cap, &b_comps, 1003.0).await;
    assert_eq!(
        again
            .actions
            .iter()
            .map(|x| x.id.clone())
            .collect::<Vec<_>>(),
        db.actions.iter().map(|x| x.id.clone()).collect::<Vec<_>>()
    );
    // Once recorded, a redelivered action is not returned again (at most once).
    for x in &again.actions {
        b.record_outcome(x.id.as_ref().expect("id"), Ok(()));
    }
    // The queued acks travel with this report; the server still had them
    // pending, so the answer may repeat them, but the session filters them.
    let third = b
        .round(
            cap,
            &[comp("e1", "early", Class::Core, 8.0 * GB, 7.5 * GB, 0.0)],
            1004.0,
        )
        .await;
    assert!(third.actions.is_empty(), "{:?}", third.actions);
    server.shutdown().await;
}

/// Killing the shaper makes agents hold at once and regrow after the hold
/// timeout; a new shaper instance on the same port resumes decisions.
#[tokio::test]
async fn shaper_loss_fails_safe_and_restart_resumes() {
    let fx = fixture();
    let clock = Arc::new(ManualClock::new(1000.0));
    let cfg = server_config(&fx);
    let server = ShaperServer::start_with(cfg.clone(), clock.clone(), false)
        .await
        .expect("start");
    let addr = server.addr();
    let url = server.url();
    let mut a = ClusterSession::new(&client_config(&url, &fx.agent_token_file("a"), "a"), 1000.0)
        .expect("a");
    let cap = Resources::new(64.0, 100.0 * GB);
    let mut comps = vec![comp("c1", "app", Class::Core, 8.0 * GB, 1.0 * GB, 0.0)];
    a.round(cap, &comps, 1000.0).await;
    server.shared().run_round().await.expect("round");
    let d = a.round(cap, &comps, 1001.0).await;
    let shrink = d
        .actions
        .iter()
        .find(|x| x.container_id == "c1")
        .expect("shrink");
    let to = match shrink.kind {
        LocalActionKind::Resize { to, .. } => to,
        ref other => panic!("expected resize, got {other:?}"),
    };
    assert!(to.mem_bytes < 8.0 * GB);
    comps[0].allocation = to;
    a.record_outcome(shrink.id.as_ref().expect("id"), Ok(()));

    server.shutdown().await;
    // Unreachable: holding at once, no actions (no shrink, no eviction).
    let d = a.round(cap, &comps, 1010.0).await;
    assert!(
        matches!(
            d.source,
            RoundSource::FailSafe {
                link: LinkState::Holding { .. },
                ..
            }
        ),
        "{:?}",
        d.source
    );
    assert!(d.actions.is_empty());
    assert_eq!(a.queued_acks(), 1, "the ack waits for the shaper");
    // After hold_s (30 s since the last success at 1001): regrow by half the gap per round.
    let d = a.round(cap, &comps, 1040.0).await;
    assert!(
        matches!(
            d.source,
            RoundSource::FailSafe {
                link: LinkState::Regrowing { .. },
                ..
            }
        ),
        "{:?}",
        d.source
    );
    assert_eq!(d.actions.len(), 1);
    match d.actions[0].kind {
        LocalActionKind::Resize { from, to: next } => {
            assert_eq!(from, comps[0].allocation);
            let expect = from.mem_bytes + 0.5 * (8.0 * GB - from.mem_bytes);
            assert!((next.mem_bytes - expect).abs() < 1.0, "{next:?}");
            assert!(d.actions[0].id.is_none());
            comps[0].allocation = next;
        }
        ref other => panic!("expected a regrowth, got {other:?}"),
    }

    // A new shaper on the same address: agents re-report, decisions resume.
    let mut cfg2 = cfg;
    cfg2.listen = addr;
    let server2 = ShaperServer::start_with(cfg2, clock.clone(), false)
        .await
        .expect("restart");
    let d = a.round(cap, &comps, 1050.0).await;
    assert!(
        matches!(d.source, RoundSource::Shaper { round: 0 }),
        "{:?}",
        d.source
    );
    assert_eq!(a.link_state(1050.0), LinkState::Connected);
    assert_eq!(
        a.queued_acks(),
        0,
        "the old ack was delivered (and ignored as unknown)"
    );
    let out = server2.shared().run_round().await.expect("round");
    assert_eq!(out.round, 1);
    let d = a.round(cap, &comps, 1051.0).await;
    assert_eq!(d.source, RoundSource::Shaper { round: 1 });
    assert!(d
        .actions
        .iter()
        .any(|x| x.container_id == "c1" && matches!(x.kind, LocalActionKind::Resize { .. })));
    server2.shutdown().await;
}

#[tokio::test]
async fn tls_with_a_self_signed_certificate() {
    let fx = fixture();
    let dir = fx._dir.path();
    let cert =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("cert");
    let cert_file = dir.join("cert.pem");
    let key_file = dir.join("key.pem");
    std::fs::write(&cert_file, cert.cert.pem()).expect("write");
    std::fs::write(&key_file, cert.key_pair.serialize_pem()).expect("write");
    let mut cfg = server_config(&fx);
    cfg.tls_cert_file = Some(cert_file.clone());
    cfg.tls_key_file = Some(key_file.clone());
    // A private key others may read is refused, with the fix in the message.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = ShaperServer::start_with(cfg.clone(), Arc::new(ManualClock::new(0.0)), false)
            .await
            .expect_err("world-readable key");
        assert!(err.to_string().contains("chmod 600"), "{err}");
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let server = ShaperServer::start_with(cfg, Arc::new(ManualClock::new(0.0)), false)
        .await
        .expect("start");
    let url = server.url();
    assert!(url.starts_with("https://"));
    let port = server.addr().port();

    let mut ccfg = client_config(
        &format!("https://localhost:{port}"),
        &fx.agent_token_file("n1"),
        "n1",
    );
    ccfg.ca_cert_file = Some(cert_file);
    let mut client = ClusterClient::new(&ccfg).expect("client");
    let resp = client
        .report(Resources::new(1.0, GB), &[], &[])
        .await
        .expect("report over TLS");
    assert_eq!(resp.api_version, 1);

    // Without trusting the certificate the handshake fails.
    let untrusted = client_config(
        &format!("https://localhost:{port}"),
        &fx.agent_token_file("n2"),
        "n2",
    );
    let mut c2 = ClusterClient::new(&untrusted).expect("client");
    assert!(c2.report(Resources::new(1.0, GB), &[], &[]).await.is_err());
    // Plain HTTP to the TLS port fails too.
    let plain = client_config(
        &format!("http://127.0.0.1:{port}"),
        &fx.agent_token_file("n3"),
        "n3",
    );
    let mut c3 = ClusterClient::new(&plain).expect("client");
    assert!(c3.report(Resources::new(1.0, GB), &[], &[]).await.is_err());
    server.shutdown().await;
}

#[tokio::test]
async fn server_refuses_a_world_readable_token_file() {
    use std::os::unix::fs::PermissionsExt;
    let fx = fixture();
    std::fs::set_permissions(&fx.token_file, std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    let err = ShaperServer::start_with(server_config(&fx), Arc::new(ManualClock::new(0.0)), false)
        .await
        .expect_err("must refuse");
    assert!(err.to_string().contains("chmod 600"), "{err}");
}

#[test]
fn fail_safe_does_not_regrow_when_the_shaper_was_never_needed() {
    let fs = FailSafe::new(FailSafeConfig::default(), 0.0);
    assert_eq!(
        fs.regrow(1e9, &Resources::new(1.0, 1.0), &Resources::new(2.0, 2.0)),
        None
    );
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "[a-z_]{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("agent_id".to_string()),
                    Just("capacity".to_string()),
                    Just("components".to_string()),
                    Just("acks".to_string()),
                    Just("cpu_cores".to_string()),
                    Just("mem_bytes".to_string()),
                    "[a-z_]{1,10}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replaces one leaf of a valid report with an arbitrary value.
fn mutate(v: &mut serde_json::Value, path: &[usize], new: serde_json::Value) {
    match v {
        serde_json::Value::Object(m) if !m.is_empty() => {
            let i = path.first().copied().unwrap_or(0) % m.len();
            let key = m.keys().nth(i).cloned().unwrap_or_default();
            if let Some(child) = m.get_mut(&key) {
                if path.len() > 1 {
                    mutate(child, &path[1..], new);
                } else {
                    *child = new;
                }
            }
        }
        serde_json::Value::Array(a) if !a.is_empty() => {
            let i = path.first().copied().unwrap_or(0) % a.len();
            if path.len() > 1 {
                mutate(&mut a[i], &path[1..], new);
            } else {
                a[i] = new;
            }
        }
        other => *other = new,
    }
}

/// Decoder fuzz: arbitrary bytes, arbitrary JSON and mutated valid reports
/// never crash the server; each gets 200 (and then it was valid) or a JSON
/// 400/413.
#[test]
fn decoder_fuzz_never_panics() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let fx = fixture();
    let server = rt
        .block_on(ShaperServer::start_with(
            server_config(&fx),
            Arc::new(ManualClock::new(0.0)),
            false,
        ))
        .expect("start");
    let url = server.url();
    let n1 = fx.agent_token("n1");
    let check = |body: Vec<u8>, path: &str| -> Result<(), TestCaseError> {
        let (status, bytes) = rt.block_on(post_raw(&url, path, Some(&n1), body.clone()));
        // 403: the mutation changed agent_id; 409: it made the sequence old.
        prop_assert!(
            [200u16, 400, 403, 409, 413].contains(&status),
            "status {}",
            status
        );
        if status == 200 {
            if path == "/v1/report" {
                let parsed: ReportRequest = serde_json::from_slice(&body)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert!(parsed.validate(10_000).is_ok());
            }
        } else {
            prop_assert!(
                serde_json::from_slice::<ErrorBody>(&bytes).is_ok(),
                "error body is JSON"
            );
        }
        Ok(())
    };
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    });
    runner
        .run(&prop::collection::vec(any::<u8>(), 0..512), |bytes| {
            check(bytes.clone(), "/v1/report")?;
            check(bytes, "/v1/ack")
        })
        .expect("arbitrary bytes");
    runner
        .run(&arb_json(), |v| {
            let body = serde_json::to_vec(&v).expect("json");
            check(body.clone(), "/v1/report")?;
            check(body, "/v1/ack")
        })
        .expect("arbitrary JSON");
    let valid: serde_json::Value = serde_json::from_slice(&valid_report_json(1)).expect("json");
    runner
        .run(
            &(prop::collection::vec(0usize..8, 1..5), arb_json()),
            |(path, new)| {
                let mut v = valid.clone();
                mutate(&mut v, &path, new);
                check(serde_json::to_vec(&v).expect("json"), "/v1/report")
            },
        )
        .expect("mutated reports");
    // Still serving.
    let (status, _) = rt.block_on(post_raw(
        &url,
        "/v1/report",
        Some(&n1),
        report_json("n1", u64::MAX, u64::MAX),
    ));
    assert_eq!(status, 200);
    rt.block_on(server.shutdown());
}

async fn status_of(server: &ShaperServer, agent: &str) -> Option<super::state::AgentStatus> {
    server
        .shared()
        .with_state(|s| s.status(1000.0))
        .agents
        .into_iter()
        .find(|a| a.agent_id == agent)
}

/// A report or ack under another agent's id gets 403; the victim's
/// capacity and pending actions are unchanged and still delivered to it.
#[tokio::test]
async fn impersonation_is_forbidden_over_http() {
    let fx = fixture();
    let clock = Arc::new(ManualClock::new(1000.0));
    let server = ShaperServer::start_with(server_config(&fx), clock, false)
        .await
        .expect("start");
    let url = server.url();
    let mut a = ClusterSession::new(&client_config(&url, &fx.agent_token_file("a"), "a"), 1000.0)
        .expect("a");
    let cap = Resources::new(8.0, 16.0 * GB);
    let comps = vec![comp("c1", "web", Class::Core, 8.0 * GB, 1.0 * GB, 0.0)];
    a.round(cap, &comps, 1000.0).await;
    server.shared().run_round().await.expect("round");
    let before = status_of(&server, "a").await.expect("a");
    assert_eq!(before.pending_actions, 1);

    let b = fx.agent_token("b");
    let fake = serde_json::json!({
        "agent_id": "a", "boot_id": u64::MAX, "seq": 1,
        "capacity": {"cpu_cores": 0.1, "mem_bytes": 1.0},
        "components": [], "acks": []
    });
    let (status, bytes) = post_raw(
        &url,
        "/v1/report",
        Some(&b),
        serde_json::to_vec(&fake).expect("json"),
    )
    .await;
    assert_eq!(status, 403);
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("error body");
    assert_eq!(e.error, "forbidden");
    let ack = serde_json::json!({"agent_id": "a", "acks": []});
    let (status, _) = post_raw(
        &url,
        "/v1/ack",
        Some(&b),
        serde_json::to_vec(&ack).expect("json"),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(
        status_of(&server, "a").await,
        Some(before),
        "nothing changed"
    );
    assert!(status_of(&server, "b").await.is_none());
    let d = a.round(cap, &comps, 1001.0).await;
    assert_eq!(d.actions.len(), 1, "the victim still gets its action");
    let text = server.shared().render_metrics();
    assert_eq!(
        super::metrics::sample(
            &text,
            "tailor_shaper_reports_refused_total{reason=\"forbidden\"}"
        ),
        Some(2.0)
    );
    server.shutdown().await;
}

/// A replayed (or older) report is refused with 409 and changes nothing.
#[tokio::test]
async fn replayed_report_is_refused_over_http() {
    let fx = fixture();
    let server = ShaperServer::start_with(
        server_config(&fx),
        Arc::new(ManualClock::new(1000.0)),
        false,
    )
    .await
    .expect("start");
    let url = server.url();
    let n1 = fx.agent_token("n1");
    let (status, _) = post_raw(&url, "/v1/report", Some(&n1), report_json("n1", 7, 101)).await;
    assert_eq!(status, 200);
    for (boot, seq) in [(7, 101), (7, 5), (6, 500)] {
        let (status, bytes) =
            post_raw(&url, "/v1/report", Some(&n1), report_json("n1", boot, seq)).await;
        assert_eq!(status, 409, "boot {boot} seq {seq}");
        let e: ErrorBody = serde_json::from_slice(&bytes).expect("error body");
        assert_eq!(e.error, "replayed");
    }
    assert_eq!(status_of(&server, "n1").await.expect("n1").reports, 1);
    let (status, _) = post_raw(&url, "/v1/report", Some(&n1), report_json("n1", 7, 102)).await;
    assert_eq!(status, 200);
    server.shutdown().await;
}

/// Revoking a credential in the file takes effect in the running server.
#[tokio::test]
async fn revoked_credentials_are_refused_without_a_restart() {
    let fx = fixture();
    let server = ShaperServer::start_with(
        server_config(&fx),
        Arc::new(ManualClock::new(1000.0)),
        false,
    )
    .await
    .expect("start");
    let url = server.url();
    let n1 = fx.agent_token("n1");
    let (status, _) = post_raw(&url, "/v1/report", Some(&n1), report_json("n1", 1, 1)).await;
    assert_eq!(status, 200);
    let mut f = CredentialsFile::load(&fx.creds_file, false).expect("load");
    assert_eq!(f.revoke(Some("n1"), None), 1);
    f.save(&fx.creds_file).expect("save");
    let mut seq = 2;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (status, _) = post_raw(&url, "/v1/report", Some(&n1), report_json("n1", 1, seq)).await;
        seq += 1;
        if status == 401 {
            break;
        }
        assert_eq!(status, 200);
        assert!(
            std::time::Instant::now() < deadline,
            "revocation not picked up"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // Others are unaffected.
    let a = fx.agent_token("a");
    let (status, _) = post_raw(&url, "/v1/report", Some(&a), report_json("a", 1, 1)).await;
    assert_eq!(status, 200);
    server.shutdown().await;
}

/// `/healthz` turns 503 once the round loop is gone.
#[tokio::test]
async fn healthz_is_unhealthy_when_the_round_loop_dies() {
    let fx = fixture();
    let server =
        ShaperServer::start_with(server_config(&fx), Arc::new(ManualClock::new(1000.0)), true)
            .await
            .expect("start");
    let url = server.url();
    let code = || async {
        reqwest::get(format!("{url}/healthz"))
            .await
            .expect("healthz")
            .status()
            .as_u16()
    };
    assert_eq!(code().await, 200);
    server.abort_round_loop();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(code().await, 503);
    let text = server.shared().render_metrics();
    assert_eq!(
        super::metrics::sample(&text, "tailor_shaper_round_loop_up"),
        Some(0.0)
    );
    server.shutdown().await;
}

/// 300 connections that never finish their headers do not delay a real
/// client's reports, and the server closes them after its timeouts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_header_connections_do_not_delay_reports() {
    use tokio::io::AsyncWriteExt;
    let fx = fixture();
    let mut cfg = server_config(&fx);
    cfg.limits.header_read_timeout_s = 1.0;
    cfg.limits.idle_timeout_s = 2.0;
    let server = ShaperServer::start_with(cfg, Arc::new(ManualClock::new(1000.0)), false)
        .await
        .expect("start");
    let url = server.url();
    let addr = server.addr();
    let mut slow = Vec::new();
    for i in 0..300 {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        if i % 2 == 0 {
            s.write_all(b"POST /v1/report HTTP/1.1\r\nHost: x\r\n")
                .await
                .expect("write");
        }
        slow.push(s);
    }
    let mut ccfg = client_config(&url, &fx.agent_token_file("a"), "a");
    ccfg.timeout_s = 2.0;
    let mut client = ClusterClient::new(&ccfg).expect("client");
    for _ in 0..5 {
        let t0 = std::time::Instant::now();
        client
            .report(Resources::new(1.0, GB), &[], &[])
            .await
            .expect("report despite 300 slow connections");
        // Within the client's 2 s timeout: answered, not queued behind them.
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while server.connections().open > 5 {
        assert!(
            std::time::Instant::now() < deadline,
            "slow connections not closed: {:?}",
            server.connections()
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(
        server.connections().idle_closed >= 100,
        "{:?}",
        server.connections()
    );
    drop(slow);
    server.shutdown().await;
}

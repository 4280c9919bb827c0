//! Identity and hardening: impersonation, replay, revocation, healthz,
//! slow-header connections.

use super::*;

/// A server on the fixture's config, rounds driven by the test.
async fn start(fx: &Fixture) -> ShaperServer {
    ShaperServer::start_with(server_config(fx), Arc::new(ManualClock::new(1000.0)), false)
        .await
        .expect("start")
}

async fn status_of(server: &ShaperServer, agent: &str) -> Option<crate::state::AgentStatus> {
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
    a.round(cap, &comps, &|_| None, 1000.0, false).await;
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
    let d = a.round(cap, &comps, &|_| None, 1001.0, false).await;
    assert_eq!(d.actions.len(), 1, "the victim still gets its action");
    let text = server.shared().render_metrics();
    assert_eq!(
        crate::metrics::sample(
            &text,
            "tailor_shaper_reports_refused_total{reason=\"forbidden\"}"
        ),
        Some(2.0)
    );
    server.shutdown().await;
}

/// A report or ack under a huge id is refused as invalid before the id is
/// quoted anywhere (QA C11: it was echoed whole in a 403 and its log).
#[tokio::test]
async fn an_oversized_agent_id_is_never_echoed() {
    let fx = fixture();
    let server = start(&fx).await;
    let url = server.url();
    let n1 = fx.agent_token("n1");
    let huge = "n".repeat(5_000);
    let report = serde_json::json!({
        "agent_id": huge, "boot_id": 1, "seq": 1,
        "capacity": {"cpu_cores": 1.0, "mem_bytes": 1.0},
        "components": [], "acks": []
    });
    let ack = serde_json::json!({"agent_id": huge, "acks": []});
    for (path, body) in [("/v1/report", report), ("/v1/ack", ack)] {
        let (status, bytes) = post_raw(
            &url,
            path,
            Some(&n1),
            serde_json::to_vec(&body).expect("json"),
        )
        .await;
        assert_eq!(status, 400, "{path}");
        assert!(bytes.len() < 1000, "{path}: {} bytes", bytes.len());
        let e: ErrorBody = serde_json::from_slice(&bytes).expect("error body");
        assert_eq!(e.error, "bad_request", "{path}");
    }
    server.shutdown().await;
}

/// A replayed (or older) report is refused with 409 and changes nothing.
#[tokio::test]
async fn replayed_report_is_refused_over_http() {
    let fx = fixture();
    let server = start(&fx).await;
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

/// A boot id more than a day ahead of the shaper's clock is refused (it
/// would lock its agent out until then); an agent whose clock went back
/// below its last accepted boot is told the boot to start from, and its
/// client's next report goes through at once.
#[tokio::test]
async fn boot_ids_ahead_of_the_clock_or_behind_the_last_boot() {
    let fx = fixture();
    let server = start(&fx).await;
    let url = server.url();
    let n1 = fx.agent_token("n1");
    let wall_ms = (tailor_core::Clock::now_s(&tailor_core::SystemClock) * 1000.0) as u64;
    let day_ms = crate::protocol::MAX_BOOT_AHEAD_MS;
    let (status, bytes) = post_raw(
        &url,
        "/v1/report",
        Some(&n1),
        report_json("n1", wall_ms + 2 * day_ms, 1),
    )
    .await;
    assert_eq!(status, 400);
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("error body");
    assert!(
        e.message.contains("ahead of the shaper's clock"),
        "{}",
        e.message
    );
    // A boot an hour ahead (this host's clock was ahead, then corrected).
    let ahead = wall_ms + 3_600_000;
    let (status, _) = post_raw(&url, "/v1/report", Some(&n1), report_json("n1", ahead, 1)).await;
    assert_eq!(status, 200);
    let (status, bytes) =
        post_raw(&url, "/v1/report", Some(&n1), report_json("n1", wall_ms, 1)).await;
    assert_eq!(status, 409);
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("error body");
    assert_eq!(e.min_boot_id, Some(ahead + 1));
    let mut client =
        ClusterClient::new(&client_config(&url, &fx.agent_token_file("n1"), "n1")).expect("client");
    assert!(client.boot_id() < ahead);
    let comps = vec![comp("c1", "web", Class::Core, 2.0 * GB, 1.0 * GB, 0.0)];
    client
        .report(Resources::new(4.0, 8.0 * GB), &comps, &[], false)
        .await
        .expect("accepted from the boot the shaper named");
    assert_eq!(client.boot_id(), ahead + 1);
    server.shutdown().await;
}

/// Unknown paths and wrong methods get a JSON error body like every other
/// refusal (405 with its `Allow` header).
#[tokio::test]
async fn unknown_paths_and_methods_get_json_errors() {
    let fx = fixture();
    let server = start(&fx).await;
    let http = reqwest::Client::new();
    let n1 = fx.agent_token("n1");
    for (method, path, code, kind) in [
        (reqwest::Method::GET, "/v1/nothing", 404, "not_found"),
        (
            reqwest::Method::GET,
            "/v1/report",
            405,
            "method_not_allowed",
        ),
        (
            reqwest::Method::DELETE,
            "/healthz",
            405,
            "method_not_allowed",
        ),
    ] {
        let resp = http
            .request(method.clone(), format!("{}{path}", server.url()))
            .bearer_auth(&n1)
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status().as_u16(), code, "{method} {path}");
        if code == 405 {
            assert!(resp.headers().contains_key("allow"), "{method} {path}");
        }
        let e: ErrorBody = resp.json().await.expect("JSON error body");
        assert_eq!(e.error, kind, "{method} {path}");
    }
    server.shutdown().await;
}

/// Request headers over 64 KiB get 431 with a JSON error body, over
/// HTTP/1.1 and HTTP/2 (hyper answered it alone, with no body); the
/// request is counted.
#[tokio::test]
async fn headers_over_the_limit_get_a_json_431() {
    let fx = fixture();
    let server = start(&fx).await;
    let pad = "a".repeat(crate::serve::MAX_HEADER_BYTES + 4 * 1024);
    let resp = reqwest::Client::new()
        .get(format!("{}/healthz", server.url()))
        .header("x-pad", &pad)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 431);
    let e: ErrorBody = resp.json().await.expect("JSON error body");
    assert_eq!(e.error, "headers_too_large");
    let req = axum::http::Request::get(format!("{}/healthz", server.url()))
        .header("x-pad", &pad)
        .body(axum::body::Body::empty())
        .expect("request");
    let (status, bytes) = h2_request(server.addr(), req).await.expect("answered");
    assert_eq!(status, 431);
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("JSON error body");
    assert_eq!(e.error, "headers_too_large");
    // Just under the limit: served.
    let pad = "a".repeat(crate::serve::MAX_HEADER_BYTES - 1024);
    let req = axum::http::Request::get(format!("{}/healthz", server.url()))
        .header("x-pad", &pad)
        .body(axum::body::Body::empty())
        .expect("request");
    let (status, _) = h2_request(server.addr(), req).await.expect("answered");
    assert_eq!(status, 200);
    assert_eq!(
        server.shared().with_metrics(|m| m.requests("healthz", 431)),
        2
    );
    server.shutdown().await;
}

/// A body over the limit sent over HTTP/2 gets 413 with a JSON error body,
/// as over HTTP/1.1 (the client saw a stream reset), whether its length is
/// announced or not; a report in bounds is served over HTTP/2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_over_http2_get_a_json_413() {
    let fx = fixture();
    let server = start(&fx).await;
    let n1 = fx.agent_token("n1");
    let url = format!("{}/v1/report", server.url());
    let post = |body: axum::body::Body| {
        axum::http::Request::post(&url)
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {n1}"))
            .body(body)
            .expect("request")
    };
    let big = vec![b' '; 200 * 1024];
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        big.chunks(8 * 1024).map(|c| Ok(c.to_vec())).collect();
    for (what, body) in [
        ("with a length", axum::body::Body::from(big.clone())),
        (
            "streamed",
            axum::body::Body::from_stream(futures_util::stream::iter(chunks)),
        ),
    ] {
        let (status, bytes) = h2_request(server.addr(), post(body))
            .await
            .unwrap_or_else(|e| panic!("{what}: no answer: {e}"));
        assert_eq!(status, 413, "{what}");
        let e: ErrorBody = serde_json::from_slice(&bytes).expect("JSON error body");
        assert_eq!(e.error, "payload_too_large", "{what}");
    }
    let (status, _) = h2_request(server.addr(), post(report_json("n1", 1, 1).into()))
        .await
        .expect("answered");
    assert_eq!(status, 200);
    server.shutdown().await;
}

/// An HTTP/2 client still sending an oversized body when its 413 comes
/// can finish sending: the server reads the rest and discards it, where it
/// reset the stream (`RST_STREAM(NO_ERROR)`, on which curl 7.88 drops the
/// 413 and reports a framing error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_http2_upload_is_not_reset_after_its_413() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let fx = fixture();
    let server = start(&fx).await;
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    let finished = Arc::new(AtomicBool::new(false));
    let f = finished.clone();
    let stream = futures_util::stream::unfold(rx, move |mut rx| {
        let f = f.clone();
        async move {
            match rx.recv().await {
                Some(chunk) => Some((Ok::<_, std::io::Error>(chunk), rx)),
                None => {
                    f.store(true, Ordering::SeqCst);
                    None
                }
            }
        }
    });
    let req = axum::http::Request::post(format!("{}/v1/report", server.url()))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {}", fx.agent_token("n1")))
        .body(axum::body::Body::from_stream(stream))
        .expect("request");
    let chunk = vec![b' '; 16 * 1024];
    let sender = tokio::spawn(async move {
        // 200 KiB (over the 64 KiB limit), then 2 MiB more once answered.
        for i in 0..(13 + 128) {
            if tx.send(chunk.clone()).await.is_err() {
                return i;
            }
        }
        13 + 128
    });
    let (status, bytes) = h2_request(server.addr(), req).await.expect("answered");
    assert_eq!(status, 413);
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("JSON error body");
    assert_eq!(e.error, "payload_too_large");
    let sent = tokio::time::timeout(std::time::Duration::from_secs(10), sender)
        .await
        .expect("the upload is not stalled")
        .expect("join");
    assert_eq!(sent, 13 + 128, "every chunk was taken");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !finished.load(Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "the client's body was dropped before its end (stream reset)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    server.shutdown().await;
}

/// Revoking a credential in the file takes effect in the running server,
/// and the revoked agent's report leaves the cluster view at once (QA C2:
/// not after `forget_after_intervals`), so no round plans with it.
#[tokio::test]
async fn revoked_credentials_are_refused_without_a_restart() {
    let fx = fixture();
    let server = start(&fx).await;
    let url = server.url();
    let n1 = fx.agent_token("n1");
    let (status, _) = post_raw(&url, "/v1/report", Some(&n1), report_json("n1", 1, 1)).await;
    assert_eq!(status, 200);
    let in_view = |server: &ShaperServer| {
        server.shared().with_state(|s| {
            (
                s.status(1000.0).agents.iter().any(|a| a.agent_id == "n1"),
                s.component_count(),
            )
        })
    };
    assert_eq!(in_view(&server), (true, 1));
    let mut f = CredentialsFile::load(&fx.creds_file, false).expect("load");
    assert_eq!(f.revoke(Some("n1"), None, 0.0), 1);
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
    assert_eq!(
        in_view(&server),
        (false, 0),
        "the revoked agent and its components left the view"
    );
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
        crate::metrics::sample(&text, "tailor_shaper_round_loop_up"),
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
            .report(Resources::new(1.0, GB), &[], &[], false)
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

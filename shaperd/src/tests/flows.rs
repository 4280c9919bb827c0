//! End-to-end flows: refusals, multi-host eviction, shaper loss, TLS.

use super::*;

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
        crate::metrics::sample(
            &metrics,
            "tailor_shaper_requests_total{endpoint=\"report\",code=\"401\"}"
        ),
        Some(4.0)
    );
    assert_eq!(
        crate::metrics::sample(
            &metrics,
            "tailor_shaper_requests_total{endpoint=\"report\",code=\"400\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        crate::metrics::sample(&metrics, "tailor_shaper_agents_known"),
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
    let d = session
        .round(Resources::new(1.0, GB), &[], &|_| None, 1.0, false)
        .await;
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
    assert!(a
        .round(cap, &a_comps, &|_| None, 1000.0, false)
        .await
        .actions
        .is_empty());
    assert!(b
        .round(cap, &b_comps, &|_| None, 1000.0, false)
        .await
        .actions
        .is_empty());
    let out = server.shared().run_round().await.expect("round");
    assert_eq!(out.evict_application, 2);

    let da = a.round(cap, &a_comps, &|_| None, 1001.0, false).await;
    assert_eq!(da.source, RoundSource::Shaper { round: 1 });
    let evict_a: Vec<_> = da
        .actions
        .iter()
        .filter(|x| matches!(x.kind, LocalActionKind::Evict { whole_app: true }))
        .collect();
    assert_eq!(evict_a.len(), 1);
    assert_eq!(evict_a[0].container_id, "l2");
    // The explanations name what the receiver may know: a does not learn
    // which of b's containers did not fit, nor b's name, nor its sizing or
    // b's free room (QA C3); b reads its own container (by name) and its
    // own node.
    assert!(
        evict_a[0].reason.contains(
            "core component (another node's) did not fit on another node; its sizing is not sent"
        ) && !evict_a[0].reason.contains("mem"),
        "{}",
        evict_a[0].reason
    );
    let name_of = |id: &str| (id == "l1").then(|| "late-core".to_string());
    let db = b.round(cap, &b_comps, &name_of, 1001.0, false).await;
    let reason = &db
        .actions
        .iter()
        .find(|x| x.container_id == "l1")
        .expect("l1")
        .reason;
    assert!(
        reason.starts_with("evict late-core: its whole application")
            && reason.contains("core component late-core did not fit on host b mem"),
        "{reason}"
    );
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
    assert!(a
        .round(cap, &[], &|_| None, 1003.0, false)
        .await
        .actions
        .is_empty());
    let again = b.round(cap, &b_comps, &|_| None, 1003.0, false).await;
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
            &|_| None,
            1004.0,
            false,
        )
        .await;
    assert!(third.actions.is_empty(), "{:?}", third.actions);
    server.shutdown().await;
}

/// Two instances started in the same millisecond have different epochs:
/// with equal ones, a restarted shaper's first actions had the ids of the
/// old one's, which the agent skipped as already applied.
#[test]
fn every_instance_has_its_own_epoch() {
    let a = crate::server::new_epoch().expect("epoch");
    let b = crate::server::new_epoch().expect("epoch");
    assert_ne!(a, b);
    assert!(!a.contains('-'), "the separator of action ids: {a}");
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
    a.round(cap, &comps, &|_| None, 1000.0, false).await;
    server.shared().run_round().await.expect("round");
    let d = a.round(cap, &comps, &|_| None, 1001.0, false).await;
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
    let d = a.round(cap, &comps, &|_| None, 1010.0, false).await;
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
    let d = a.round(cap, &comps, &|_| None, 1040.0, false).await;
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
            // half the gap, rounded up to whole steps (QA C9)
            let expect = from.mem_bytes + 0.5 * (8.0 * GB - from.mem_bytes);
            let step = shaper::limits::MEM_STEP_BYTES;
            assert!(
                next.mem_bytes >= expect && next.mem_bytes - expect < step,
                "{next:?}"
            );
            assert_eq!(next.mem_bytes % step, 0.0, "{next:?}");
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
    let d = a.round(cap, &comps, &|_| None, 1050.0, false).await;
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
    let d = a.round(cap, &comps, &|_| None, 1051.0, false).await;
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
        .report(Resources::new(1.0, GB), &[], &[], false)
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
    assert!(c2
        .report(Resources::new(1.0, GB), &[], &[], false)
        .await
        .is_err());
    // Plain HTTP to the TLS port fails too.
    let plain = client_config(
        &format!("http://127.0.0.1:{port}"),
        &fx.agent_token_file("n3"),
        "n3",
    );
    let mut c3 = ClusterClient::new(&plain).expect("client");
    assert!(c3
        .report(Resources::new(1.0, GB), &[], &[], false)
        .await
        .is_err());
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

//! Replicas without etcd: a follower's redirect, the agent client finding
//! the leader among its URLs, and write-through when the store fails.

use super::*;
use crate::state::Role;
use crate::store::MemoryStore;

#[tokio::test]
async fn followers_redirect_and_agents_follow_only_listed_urls() {
    let fx = fixture();
    let clock = Arc::new(ManualClock::new(1000.0));
    let leader = ShaperServer::start_with(server_config(&fx), clock.clone(), false)
        .await
        .expect("leader");
    let follower = ShaperServer::start_with(server_config(&fx), clock.clone(), false)
        .await
        .expect("follower");
    follower
        .shared()
        .set_role(Role::Follower, Some(leader.url()));
    let n1 = fx.agent_token("n1");

    // The follower answers 307 to the same path on the leader.
    let resp = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .post(format!("{}/v1/report", follower.url()))
        .bearer_auth(&n1)
        .body(valid_report_json(1))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 307);
    assert_eq!(
        resp.headers().get("location").and_then(|v| v.to_str().ok()),
        Some(format!("{}/v1/report", leader.url()).as_str())
    );
    let e: ErrorBody = resp.json().await.expect("json");
    assert_eq!(e.error, crate::protocol::ERROR_NOT_LEADER);

    // An agent listing both (follower first) lands on the leader.
    let mut cfg = client_config(&follower.url(), &fx.agent_token_file("n1"), "n1");
    cfg.shaper_url = agent::cluster::ShaperUrls(vec![follower.url(), leader.url()]);
    let mut client = ClusterClient::new(&cfg).expect("client");
    let caps = Resources::new(4.0, 8.0 * GB);
    let comps = vec![comp("c1", "web", Class::Core, 2.0 * GB, 1.0 * GB, 0.0)];
    client
        .report(caps, &comps, &[], false)
        .await
        .expect("report");
    assert_eq!(client.current_url(), leader.url());
    assert_eq!(
        leader
            .shared()
            .with_state(|s| s.status(1000.0).agents.len()),
        1
    );
    assert_eq!(
        follower
            .shared()
            .with_state(|s| s.status(1000.0).agents.len()),
        0
    );
    let st = follower.shared().role();
    assert_eq!(st, (Role::Follower, Some(leader.url())));

    // A follower pointing elsewhere: the token is not sent there.
    follower
        .shared()
        .set_role(Role::Follower, Some("http://127.0.0.1:9".into()));
    let mut only_follower = client_config(&follower.url(), &fx.agent_token_file("n1"), "n1");
    only_follower.timeout_s = 1.0;
    let mut c2 = ClusterClient::new(&only_follower).expect("client");
    let e = c2
        .report(caps, &comps, &[], false)
        .await
        .expect_err("unlisted");
    assert!(e.to_string().contains("not one of the configured"), "{e}");

    // No leader known: 503 no_leader, the client tries the next URL.
    follower.shared().set_role(Role::Follower, None);
    let (status, bytes) = post_raw(&follower.url(), "/v1/ack", Some(&n1), b"{}".to_vec()).await;
    assert_eq!(status, 503);
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(e.error, crate::protocol::ERROR_NO_LEADER);
    client
        .report(caps, &comps, &[], false)
        .await
        .expect("leader still found");
    // Operator endpoints still answer on a follower, with its role.
    let st: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/v1/status", follower.url()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("status")
        .json()
        .await
        .expect("json");
    assert_eq!(st["role"], "follower");
    let text = follower.shared().render_metrics();
    assert_eq!(
        crate::metrics::sample(&text, "tailor_shaper_leader"),
        Some(0.0)
    );
    let text = leader.shared().render_metrics();
    assert_eq!(
        crate::metrics::sample(&text, "tailor_shaper_leader"),
        Some(1.0)
    );
}

#[tokio::test]
async fn nothing_is_handed_out_or_acknowledged_unless_stored() {
    let fx = fixture();
    let clock = Arc::new(ManualClock::new(1000.0));
    let store = Arc::new(MemoryStore::new());
    let server = ShaperServer::start_with_store(
        server_config(&fx),
        clock.clone(),
        false,
        Some(store.clone()),
    )
    .await
    .expect("start");
    let mut a = ClusterSession::new(
        &client_config(&server.url(), &fx.agent_token_file("a"), "a"),
        1000.0,
    )
    .expect("session");
    let caps = Resources::new(4.0, 8.0 * GB);
    // Idle container: the round shrinks it.
    let comps = vec![comp("c1", "web", Class::Core, 4.0 * GB, 0.5 * GB, 0.0)];
    a.round(caps, &comps, &|_| None, 1000.0, false).await;
    store.set_failing(true);
    clock.set(1010.0);
    assert_eq!(
        server.shared().run_round().await.err(),
        Some(crate::state::SkipReason::Store)
    );
    let d = a.round(caps, &comps, &|_| None, 1011.0, false).await;
    assert!(d.actions.is_empty(), "nothing handed out: {d:?}");
    store.set_failing(false);
    clock.set(1020.0);
    server.shared().run_round().await.expect("round");
    let d = a.round(caps, &comps, &|_| None, 1021.0, false).await;
    assert_eq!(d.actions.len(), 1, "{d:?}");
    let id = d.actions[0].id.clone().expect("id");
    // The ack is answered only once stored: 503 while the store fails, the
    // agent keeps it and sends it again.
    a.record_outcome(&id, Ok(()));
    store.set_failing(true);
    assert!(a.flush_acks(1022.0).await.is_err());
    assert_eq!(a.queued_acks(), 1);
    store.set_failing(false);
    let r = a.flush_acks(1023.0).await.expect("acked");
    assert_eq!((r.accepted, r.unknown), (1, 0));
    assert_eq!(
        server.shared().with_state(|s| s.action_status(&id)),
        Some(crate::state::ActionStatus::Applied)
    );
}

/// After a failover the new leader refuses the rest of the old boot: the
/// old leader may have accepted reports after its last stored round, and a
/// captured one could be replayed. The agent's client starts a new boot
/// and its next report goes through at once.
#[tokio::test]
async fn after_a_failover_the_agent_starts_a_new_boot() {
    use crate::store::StateStore;
    let fx = fixture();
    let clock = Arc::new(ManualClock::new(1000.0));
    let store = Arc::new(MemoryStore::new());
    let old = ShaperServer::start_with_store(
        server_config(&fx),
        clock.clone(),
        false,
        Some(store.clone()),
    )
    .await
    .expect("old leader");
    let new = ShaperServer::start_with_store(
        server_config(&fx),
        clock.clone(),
        false,
        Some(store.clone()),
    )
    .await
    .expect("new leader");
    new.shared().set_role(Role::Follower, Some(old.url()));
    let mut cfg = client_config(&old.url(), &fx.agent_token_file("n1"), "n1");
    cfg.shaper_url = agent::cluster::ShaperUrls(vec![old.url(), new.url()]);
    let mut client = ClusterClient::new(&cfg).expect("client");
    let caps = Resources::new(4.0, 8.0 * GB);
    let comps = vec![comp("c1", "web", Class::Core, 2.0 * GB, 1.0 * GB, 0.0)];
    client
        .report(caps, &comps, &[], false)
        .await
        .expect("seq 1");
    old.shared()
        .run_round()
        .await
        .expect("round: guard stored at seq 1");
    client
        .report(caps, &comps, &[], false)
        .await
        .expect("seq 2, after the round");
    let boot = client.boot_id();

    old.shutdown().await;
    let durable = store.load().await.expect("load");
    new.shared()
        .with_state(|s| s.restore("e2".into(), durable, 1010.0));
    new.shared().set_role(Role::Leader, None);
    let n1 = fx.agent_token("n1");
    let (status, _) = post_raw(
        &new.url(),
        "/v1/report",
        Some(&n1),
        report_json("n1", boot, 2),
    )
    .await;
    assert_eq!(status, 409, "a copy of seq 2 is refused by the new leader");
    let (status, _) = post_raw(
        &new.url(),
        "/v1/report",
        Some(&n1),
        report_json("n1", boot, 3),
    )
    .await;
    assert_eq!(status, 409, "and so is the rest of the old boot");

    client
        .report(caps, &comps, &[], false)
        .await
        .expect("the agent goes on");
    assert!(client.boot_id() > boot, "from a new boot");
    assert_eq!(client.current_url(), new.url());
    let (status, _) = post_raw(
        &new.url(),
        "/v1/report",
        Some(&n1),
        report_json("n1", boot, 9),
    )
    .await;
    assert_eq!(status, 409, "the old boot stays refused");
    new.shutdown().await;
}

//! An agent's early report (its memory watch) brings the next round
//! forward and is answered with that round's actions (`server::early`).

use super::*;
use std::time::{Duration, Instant};

/// The server with auto rounds an hour apart (none comes by itself during
/// a test), early rounds at most one per `gap_s`; agent n1's session, its
/// host's capacity and its one container (8 GB requested, 1 GB used).
async fn hourly_server(
    gap_s: f64,
) -> (
    Fixture,
    ShaperServer,
    ClusterSession,
    Resources,
    [ComponentReport; 1],
) {
    let fx = fixture();
    let mut cfg = server_config(&fx);
    cfg.interval_s = 3600.0;
    cfg.early_round_gap_s = gap_s;
    let server = ShaperServer::start_with(cfg, Arc::new(ManualClock::new(1000.0)), true)
        .await
        .expect("start");
    let cfg = client_config(&server.url(), &fx.agent_token_file("n1"), "n1");
    let n1 = ClusterSession::new(&cfg, 1000.0).expect("session");
    let cap = Resources::new(4.0, 16.0 * GB);
    let comps = [component("c1", "web", Class::Core, 8.0 * GB, 1.0 * GB, 0.0)];
    (fx, server, n1, cap, comps)
}

fn metric(server: &ShaperServer, name: &str) -> u64 {
    let text = server.shared().render_metrics();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} not in\n{text}"))
}

#[tokio::test]
async fn an_early_report_is_answered_with_a_round_planned_at_once() {
    let (_fx, server, mut n1, cap, comps) = hourly_server(0.5).await;

    let d = n1.round(cap, &comps, &|_| None, 1000.0, false).await;
    assert_eq!(d.source, RoundSource::Shaper { round: 0 });
    assert!(d.actions.is_empty(), "no round yet: {:?}", d.actions);

    let d = n1.round(cap, &comps, &|_| None, 1001.0, true).await;
    assert_eq!(d.source, RoundSource::Shaper { round: 1 });
    let [a] = d.actions.as_slice() else {
        panic!("one action: {:?}", d.actions)
    };
    assert_eq!(a.container_id, "c1");
    let LocalActionKind::Resize { to: cut, .. } = a.kind else {
        panic!("{a:?}")
    };
    assert!(cut.mem_bytes < 6.0 * GB, "{a:?}");
    assert_eq!(metric(&server, "tailor_shaper_early_reports_total"), 1);
    assert_eq!(metric(&server, "tailor_shaper_early_rounds_total"), 1);

    // Another early report at once: its round waits for the gap since the
    // last one began, and plans from this report (usage up: a growth).
    let comps = [ComponentReport {
        allocation: cut,
        ..component("c1", "web", Class::Core, 8.0 * GB, 6.0 * GB, 0.0)
    }];
    let t0 = Instant::now();
    let d = n1.round(cap, &comps, &|_| None, 1002.0, true).await;
    assert_eq!(d.source, RoundSource::Shaper { round: 2 });
    assert!(
        matches!(d.actions.as_slice(), [LocalAction { kind: LocalActionKind::Resize { from, to }, .. }]
            if *from == cut && to.mem_bytes >= 6.0 * GB),
        "{:?}",
        d.actions
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(metric(&server, "tailor_shaper_early_rounds_total"), 2);
    assert_eq!(metric(&server, "tailor_shaper_rounds_total"), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn without_a_gap_an_early_report_waits_for_the_next_round() {
    let (_fx, server, mut n1, cap, comps) = hourly_server(0.0).await;
    let d = n1.round(cap, &comps, &|_| None, 1000.0, true).await;
    assert_eq!(d.source, RoundSource::Shaper { round: 0 });
    assert!(d.actions.is_empty(), "{:?}", d.actions);
    assert_eq!(metric(&server, "tailor_shaper_early_reports_total"), 1);
    assert_eq!(metric(&server, "tailor_shaper_rounds_total"), 0);
    server.shutdown().await;
}

//! Reports and acks in MessagePack: read by their `Content-Type`, answered
//! in the encoding the `Accept` lists, refused in JSON when malformed.

use super::*;
use crate::protocol::encoding::ACCEPT_BOTH;
use crate::protocol::{AckResponse, Encoding, ReportResponse};

fn report(seq: u64) -> ReportRequest {
    serde_json::from_slice(&valid_report_json(seq)).expect("report")
}

/// `body` posted as `sent`, with that `Accept`: the status, the answer's
/// encoding and its bytes.
async fn post(
    url: &str,
    token: &str,
    sent: Encoding,
    accept: Option<&str>,
    body: Vec<u8>,
) -> (u16, Encoding, Vec<u8>) {
    let mut req = reqwest::Client::new()
        .post(format!("{url}/v1/report"))
        .bearer_auth(token)
        .header("content-type", sent.media_type())
        .body(body);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let resp = req.send().await.expect("send");
    let answered = Encoding::of_content_type(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
    );
    let status = resp.status().as_u16();
    (status, answered, resp.bytes().await.expect("body").to_vec())
}

#[tokio::test]
async fn reports_are_read_and_answered_in_either_encoding() {
    let fx = fixture();
    let clock = Arc::new(ManualClock::new(1000.0));
    let server = ShaperServer::start_with(server_config(&fx), clock, false)
        .await
        .expect("start");
    let url = server.url();
    let n1 = fx.agent_token("n1");
    let packed = |seq| Encoding::MessagePack.encode(&report(seq)).expect("msgpack");

    // MessagePack in, MessagePack out.
    let (status, answered, bytes) = post(
        &url,
        &n1,
        Encoding::MessagePack,
        Some(ACCEPT_BOTH),
        packed(1),
    )
    .await;
    assert_eq!((status, answered), (200, Encoding::MessagePack));
    let answer: ReportResponse = Encoding::MessagePack.decode(&bytes).expect("answer");
    assert_eq!(answer.api_version, crate::protocol::API_VERSION);
    let status = server.shared().with_state(|s| s.status(1000.0));
    assert_eq!(status.agents.len(), 1);
    assert_eq!(status.agents[0].components, 1);

    // MessagePack in, JSON out (no `Accept`); JSON in, MessagePack out.
    let (status, answered, bytes) = post(&url, &n1, Encoding::MessagePack, None, packed(2)).await;
    assert_eq!((status, answered), (200, Encoding::Json));
    serde_json::from_slice::<ReportResponse>(&bytes).expect("JSON answer");
    let (status, answered, _) = post(
        &url,
        &n1,
        Encoding::Json,
        Some("application/msgpack"),
        valid_report_json(3),
    )
    .await;
    assert_eq!((status, answered), (200, Encoding::MessagePack));

    // A malformed MessagePack body: a JSON 400 naming the encoding, and
    // nothing recorded (the next sequence number is still free).
    let mut broken = packed(4);
    broken.truncate(broken.len() / 2);
    let (status, answered, bytes) =
        post(&url, &n1, Encoding::MessagePack, Some(ACCEPT_BOTH), broken).await;
    assert_eq!((status, answered), (400, Encoding::Json));
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("JSON error body");
    assert!(
        e.message.starts_with("malformed MessagePack body"),
        "{}",
        e.message
    );
    // An invalid one: the same validation as JSON, by key.
    let mut invalid = report(4);
    invalid.components[0].usage.mem_bytes = f64::NAN;
    let body = Encoding::MessagePack.encode(&invalid).expect("msgpack");
    let (status, _, bytes) = post(&url, &n1, Encoding::MessagePack, None, body).await;
    assert_eq!(status, 400);
    let e: ErrorBody = serde_json::from_slice(&bytes).expect("JSON error body");
    assert!(
        e.message.contains("components[0].usage.mem_bytes"),
        "{}",
        e.message
    );
    let (status, _, _) = post(&url, &n1, Encoding::MessagePack, None, packed(4)).await;
    assert_eq!(status, 200);
    server.shutdown().await;
}

/// The agent's client against the real server: JSON first, then
/// MessagePack for reports and acks.
#[tokio::test]
async fn the_agent_client_moves_to_msgpack() {
    let fx = fixture();
    let clock = Arc::new(ManualClock::new(1000.0));
    let server = ShaperServer::start_with(server_config(&fx), clock, false)
        .await
        .expect("start");
    let cfg = client_config(&server.url(), &fx.agent_token_file("n1"), "n1");
    let mut client = ClusterClient::new(&cfg).expect("client");
    let comps = [comp("c1", "web", Class::Core, 2.0 * GB, 1.0 * GB, 0.0)];
    let capacity = Resources::new(4.0, 8.0 * GB);
    assert_eq!(client.sending(), Encoding::Json);
    client
        .report(capacity, &comps, &[], false)
        .await
        .expect("first report");
    assert_eq!(client.sending(), Encoding::MessagePack);
    client
        .report(capacity, &comps, &[], false)
        .await
        .expect("a report in MessagePack");
    let acked: AckResponse = client.ack(vec![]).await.expect("an ack in MessagePack");
    assert_eq!(acked, AckResponse::default());
    let metrics = server.shared().render_metrics();
    assert_eq!(
        crate::metrics::sample(
            &metrics,
            "tailor_shaper_requests_total{endpoint=\"report\",code=\"200\"}"
        ),
        Some(2.0)
    );
    for (encoding, n) in [("json", 1.0), ("msgpack", 1.0)] {
        assert_eq!(
            crate::metrics::sample(
                &metrics,
                &format!("tailor_shaper_report_bodies_total{{encoding=\"{encoding}\"}}")
            ),
            Some(n),
            "{encoding}"
        );
    }
    server.shutdown().await;
}

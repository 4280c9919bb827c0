//! The agent's HTTP endpoint (127.0.0.1:9847 by default):
//!
//! * `GET /metrics`: Prometheus text ([`crate::metrics`]);
//! * `GET /healthz`: 200 `ok` while rounds succeed (or during the first
//!   rounds after start), 503 with a JSON reason once no round has
//!   succeeded for 3 intervals + 30 s, or (cluster mode) while the agent
//!   fails safe because the shaper does not answer (`"status":
//!   "failing_safe"`, with the link state, since when, and the last error);
//! * `GET /v1/decisions`: the last round's [`crate::RoundReport`] as JSON
//!   (view, every action with its explanation and result), 404 before the
//!   first round;
//! * `GET /v1/decisions?since=SEQ_OR_TIME`: the decision journal's entries
//!   after that sequence number (an integer below 10^9) or Unix time, as a
//!   JSON array ([`crate::journal::JournalEntry`]; the last 1000 rounds with
//!   actions are kept in memory, the files hold more);
//! * `GET /v1/recommendations`: the last round's
//!   [`crate::recommend::Recommendations`], 404 before the first round.
//!
//! Bounded like the shaper's server ([`crate::serve`], [`ServeLimits::AGENT`]):
//! at most 128 connections, headers within 5 s, idle connections closed
//! after 30 s, requests answered within 30 s.

use crate::agent::Shared;
use crate::serve::{ConnStats, ServeLimits};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use std::future::Future;
use std::sync::Arc;

/// The router, for embedding or tests.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/v1/decisions", get(decisions))
        .route("/v1/recommendations", get(recommendations))
        .with_state(shared)
}

/// Serves on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = listener.into_std()?;
    crate::serve::serve_plain(
        listener,
        router(shared),
        ServeLimits::AGENT,
        Arc::new(ConnStats::default()),
        shutdown,
    )
    .await
}

async fn metrics(State(s): State<Arc<Shared>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        {
            let mut text = s.metrics.render();
            if let (Some(max), Some(r)) = (s.container_metrics, s.last_recommendations()) {
                text.push_str(&container_gauges(&r, max));
            }
            text
        },
    )
        .into_response()
}

async fn healthz(State(s): State<Arc<Shared>>) -> Response {
    let now = tailor_core::SystemClock.now_s();
    let allowed = 3.0 * s.interval_s + 30.0;
    let last_ok = s
        .last_report()
        .map(|_| s.metrics.last_round_unix_s())
        .unwrap_or(0.0);
    let fresh = if last_ok > 0.0 {
        now - last_ok <= allowed
    } else {
        now - s.started_unix_s <= allowed
    };
    let link = s.metrics.link();
    if let Some(link) = link.filter(crate::metrics::failing_safe) {
        let since_s = match link.state {
            crate::cluster::LinkState::Holding { since_s }
            | crate::cluster::LinkState::Regrowing { since_s } => Some(since_s),
            crate::cluster::LinkState::Connected => None,
        };
        let body = serde_json::json!({
            "status": "failing_safe",
            "message": "the shaper does not answer: the agent fails safe (no shrink, no eviction; regrowth after hold_s)",
            "link": link.state.as_str(),
            "since_s": since_s,
            "last_ok_s": link.last_ok_s,
            "last_error": link.last_error,
        });
        return (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
    }
    if fresh {
        (StatusCode::OK, "ok\n").into_response()
    } else {
        let body = serde_json::json!({
            "status": "unhealthy",
            "message": format!("no successful round in the last {allowed:.0} s"),
            "rounds": s.metrics.rounds().0,
            "failed_rounds": s.metrics.rounds().1,
        });
        (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
    }
}

/// `tailor_agent_recommendation{container,resource,value}` for at most
/// `max` containers (the first by name): bounded cardinality.
fn container_gauges(r: &crate::recommend::Recommendations, max: usize) -> String {
    let mut names: Vec<&str> = r.items.iter().map(|i| i.container.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.truncate(max);
    let mut t = crate::prom::PromText::with_capacity(4096);
    let name = "tailor_agent_recommendation";
    t.family(
        name,
        "gauge",
        "Per-container recommendation (cores for cpu, bytes for memory).",
    );
    let esc = |v: &str| {
        v.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    };
    for i in r
        .items
        .iter()
        .filter(|i| names.binary_search(&i.container.as_str()).is_ok())
    {
        let scale = match i.resource {
            crate::recommend::ResourceKind::Cpu => 1.0,
            crate::recommend::ResourceKind::Mem => 1024.0 * 1024.0,
        };
        let mut values = vec![("lower", i.lower), ("target", i.target), ("upper", i.upper)];
        if let Some(c) = i.current_limit {
            values.push(("current", c));
        }
        for (what, v) in values {
            t.sample(
                name,
                &format!(
                    "container=\"{}\",resource=\"{}\",value=\"{what}\"",
                    esc(&i.container),
                    i.resource.as_str()
                ),
                v * scale,
            );
        }
    }
    t.finish()
}

async fn recommendations(State(s): State<Arc<Shared>>) -> Response {
    match s.last_recommendations() {
        Some(r) => Json(r).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"message": "no round has completed yet"})),
        )
            .into_response(),
    }
}

async fn decisions(
    State(s): State<Arc<Shared>>,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    if let Some(since) = q.get("since") {
        return match crate::journal::Since::parse(since) {
            Ok(since) => Json(s.decisions_since(Some(since))).into_response(),
            Err(message) => (
                StatusCode::BAD_REQUEST,
                Json(serde_json::json!({ "message": message })),
            )
                .into_response(),
        };
    }
    match s.last_report() {
        Some(r) => Json(r).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"message": "no round has completed yet"})),
        )
            .into_response(),
    }
}

use tailor_core::Clock as _;

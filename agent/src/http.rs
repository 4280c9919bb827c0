//! The agent's HTTP endpoint (127.0.0.1:9847 by default):
//!
//! * `GET /metrics`: Prometheus text ([`crate::metrics`]);
//! * `GET /healthz`: 200 `ok` while rounds succeed (or during the first
//!   rounds after start), 503 with a JSON reason once no round has
//!   succeeded for 3 intervals + 30 s;
//! * `GET /v1/decisions`: the last round's [`crate::RoundReport`] as JSON
//!   (view, every action with its explanation and result), 404 before the
//!   first round.

use crate::agent::Shared;
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
        .with_state(shared)
}

/// Serves on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(shared))
        .with_graceful_shutdown(shutdown)
        .await
}

async fn metrics(State(s): State<Arc<Shared>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        s.metrics.render(),
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

async fn decisions(State(s): State<Arc<Shared>>) -> Response {
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

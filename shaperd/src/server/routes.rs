//! The HTTP side of the server: authentication middleware, the route
//! handlers, their error bodies and the router.

use super::Shared;
use crate::auth::bearer_token;
use crate::credentials::Identity;
use crate::limits::Refusal;
use crate::protocol::{AckRequest, Encoding, ErrorBody, ReportRequest};
use crate::store::StoreError;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Extension, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailor_core::{Clock, SystemClock};

/// `v` as a JSON response. Serialized into a `Vec` first: axum's `Json`
/// writes through a `BytesMut` writer, twice as slow on a report's answer
/// of ~100 actions (`cargo bench -p shaperd --bench round --
/// report_response`), and a 10,000-node cluster asks for a thousand of
/// them a second.
pub fn json_response<T: serde::Serialize>(v: &T) -> Response {
    encoded_response(Encoding::Json, v)
}

/// `v` as a response in `encoding` (the request's `Accept`: JSON or
/// MessagePack, `protocol::encoding`).
pub fn encoded_response<T: serde::Serialize>(encoding: Encoding, v: &T) -> Response {
    match encoding.encode(v) {
        Ok(body) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(encoding.media_type()),
            )],
            Bytes::from(body),
        )
            .into_response(),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("cannot encode the answer: {e}"),
        ),
    }
}

fn error(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    error_body(status, kind, message.into(), None)
}

fn error_body(
    status: StatusCode,
    kind: &str,
    message: String,
    min_boot_id: Option<u64>,
) -> Response {
    (
        status,
        Json(ErrorBody {
            error: kind.to_string(),
            message,
            min_boot_id,
        }),
    )
        .into_response()
}

fn refusal_response(r: &Refusal) -> Response {
    let (status, kind) = match r {
        Refusal::Invalid(_) => (StatusCode::BAD_REQUEST, "bad_request"),
        Refusal::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
        Refusal::Replay { .. } => (StatusCode::CONFLICT, "replayed"),
        Refusal::Limit { .. } => (StatusCode::TOO_MANY_REQUESTS, "limit_exceeded"),
    };
    let min_boot_id = match r {
        Refusal::Replay { min_boot_id, .. } => *min_boot_id,
        _ => None,
    };
    error_body(status, kind, r.to_string(), min_boot_id)
}

fn endpoint_of(path: &str) -> &'static str {
    match path {
        "/v1/report" => "report",
        "/v1/ack" => "ack",
        "/v1/status" => "status",
        "/metrics" => "metrics",
        "/healthz" => "healthz",
        _ => "other",
    }
}

async fn count_requests(State(sh): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let endpoint = endpoint_of(req.uri().path());
    let resp = next.run(req).await;
    let code = resp.status().as_u16();
    sh.with_metrics(|m| m.count_request(endpoint, code));
    resp
}

fn unauthorized(req: &Request, what: &str) -> Response {
    let has_header = req.headers().contains_key(header::AUTHORIZATION);
    let msg = if has_header {
        format!("invalid bearer token (this endpoint needs {what})")
    } else {
        format!("missing `Authorization: Bearer <token>` header ({what})")
    };
    let mut resp = error(StatusCode::UNAUTHORIZED, "unauthorized", msg);
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"tailor\""),
    );
    resp
}

fn bearer(req: &Request) -> Option<&str> {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token)
}

/// The operator token (`/v1/status`, `/metrics`).
async fn require_token(State(sh): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    if !bearer(&req).is_some_and(|t| sh.token.matches(t)) {
        return unauthorized(&req, "the operator token");
    }
    next.run(req).await
}

/// An agent credential (`/v1/report`, `/v1/ack`): its [`Identity`] goes to
/// the handler.
async fn require_agent(State(sh): State<Arc<Shared>>, mut req: Request, next: Next) -> Response {
    let who = bearer(&req).and_then(|t| sh.credentials().verify(t).cloned());
    match who {
        Some(who) => {
            req.extensions_mut().insert(who);
            next.run(req).await
        }
        None => unauthorized(
            &req,
            "an agent credential from `tailor shaper credentials add`",
        ),
    }
}

fn body_error(rej: BytesRejection) -> Response {
    let status = rej.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        error(
            status,
            "payload_too_large",
            format!("request body too large: {}", rej.body_text()),
        )
    } else {
        error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("cannot read request body: {}", rej.body_text()),
        )
    }
}

/// A request's body encoding (its `Content-Type`) and its answer's (its
/// `Accept`).
fn encodings(headers: &HeaderMap) -> (Encoding, Encoding) {
    let get = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    (
        Encoding::of_content_type(get(header::CONTENT_TYPE)),
        Encoding::for_accept(get(header::ACCEPT)),
    )
}

/// The request body in `encoding`, or the error response (boxed: a
/// `Response` is large and this is the cold path).
fn parse_body<T: serde::de::DeserializeOwned>(
    encoding: Encoding,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, Box<Response>> {
    let bytes = body.map_err(|rej| Box::new(body_error(rej)))?;
    encoding.decode(&bytes).map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("malformed {e}"),
        ))
    })
}

async fn report(
    State(sh): State<Arc<Shared>>,
    Extension(who): Extension<Identity>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let t0 = Instant::now();
    let (sent_in, answer_in) = encodings(&headers);
    let req: ReportRequest = match parse_body(sent_in, body) {
        Ok(r) => r,
        Err(resp) => return *resp,
    };
    sh.with_metrics(|m| m.count_report_body(sent_in));
    let now_s = sh.now_s();
    let wall_ms = (SystemClock.now_s() * 1000.0) as u64;
    let early = req.early;
    let result = sh.with_state(|s| s.report_as_within(&who, req, now_s, Some(wall_ms)));
    if result.is_ok() {
        if let Err(e) = sh.persist_writes().await {
            return store_error(&sh, &e);
        }
    }
    let mut answer = match result {
        Ok(r) => r,
        Err(refusal) => {
            tracing::warn!(agent = %who.agent_id, tenant = %who.tenant, "report refused: {refusal}");
            return refusal_response(&refusal);
        }
    };
    if early {
        sh.with_metrics(|m| m.early_reports_total += 1);
        if let Some(round) = sh.early_round_for(&who.agent_id).await {
            (answer.round, answer.actions) = round;
        }
    }
    let resp = encoded_response(answer_in, &answer);
    let elapsed = t0.elapsed().as_secs_f64();
    sh.with_metrics(|m| m.report_latency.observe(elapsed));
    resp
}

async fn ack(
    State(sh): State<Arc<Shared>>,
    Extension(who): Extension<Identity>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (sent_in, answer_in) = encodings(&headers);
    let req: AckRequest = match parse_body(sent_in, body) {
        Ok(r) => r,
        Err(resp) => return *resp,
    };
    match sh.with_state(|s| s.ack_as(&who, &req)) {
        Ok(r) => match sh.persist_writes().await {
            Ok(()) => encoded_response(answer_in, &r),
            Err(e) => store_error(&sh, &e),
        },
        Err(refusal) => refusal_response(&refusal),
    }
}

/// 503 when ack results could not be stored (the agent keeps its acks and
/// sends them again).
fn store_error(sh: &Arc<Shared>, e: &StoreError) -> Response {
    tracing::error!(error = %e, "cannot store acknowledgements");
    if matches!(e, StoreError::NotLeader) {
        crate::ha::step_down(sh, "a fenced write failed");
    }
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "store_unavailable",
        format!("the shaper cannot store acknowledgements: {e}"),
    )
}

async fn status(State(sh): State<Arc<Shared>>) -> Response {
    let now_s = sh.now_s();
    let mut st = sh.with_state(|s| s.status(now_s));
    (st.role, st.leader_url) = sh.role();
    json_response(&st)
}

async fn metrics_text(State(sh): State<Arc<Shared>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        sh.render_metrics(),
    )
        .into_response()
}

async fn healthz(State(sh): State<Arc<Shared>>) -> Response {
    match sh.round_loop_health() {
        Ok(()) => "ok\n".into_response(),
        Err(message) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"status": "unhealthy", "message": message})),
        )
            .into_response(),
    }
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such endpoint (see /v1/report, /v1/ack, /v1/status, /metrics, /healthz)",
    )
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{method} is not allowed on {} (POST /v1/report and /v1/ack; GET /v1/status, /metrics, /healthz)",
            uri.path()
        ),
    )
}

/// The router, for embedding or testing with `tower::ServiceExt::oneshot`.
pub fn router(shared: Arc<Shared>, max_body_bytes: usize, request_timeout: Duration) -> Router {
    let agents = Router::new()
        .route("/v1/report", post(report))
        .route("/v1/ack", post(ack))
        .route_layer(middleware::from_fn_with_state(
            shared.clone(),
            require_agent,
        ))
        .route_layer(middleware::from_fn_with_state(
            shared.clone(),
            crate::ha::leader_only,
        ));
    let operator = Router::new()
        .route("/v1/status", get(status))
        .route("/metrics", get(metrics_text))
        .route_layer(middleware::from_fn_with_state(
            shared.clone(),
            require_token,
        ));
    Router::new()
        .merge(agents)
        .merge(operator)
        .route("/healthz", get(healthz))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(middleware::from_fn(move |req, next| {
            crate::serve::request_timeout(request_timeout, req, next)
        }))
        .layer(middleware::from_fn(crate::serve::header_limit))
        .layer(middleware::from_fn(move |req, next| {
            crate::serve::drain_unread_body(request_timeout, req, next)
        }))
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            count_requests,
        ))
        .with_state(shared)
}

//! Unit tests of the cluster client and session: token rotation, error
//! causes, the link coming back.

use super::*;
use crate::cluster::auth::write_token_file;
use crate::cluster::protocol::ErrorBody;
use crate::fake::Logs;
use std::sync::{Arc, Mutex};

/// A shaper stand-in on loopback: `/v1/report` gets an empty round
/// when it carries the accepted token, else a 401 as shaperd answers
/// it; while `down`, a 503. It keeps the `Authorization` headers seen.
/// While `json_only` it reads bodies as JSON whatever their type, and
/// refuses another body as an older shaper does (400 "malformed JSON
/// body"); else it answers in MessagePack when the `Accept` lists it. It
/// keeps the `Content-Type`s seen.
#[derive(Clone, Default)]
struct FakeShaper {
    accepted: Arc<Mutex<String>>,
    down: Arc<std::sync::atomic::AtomicBool>,
    seen: Arc<Mutex<Vec<String>>>,
    json_only: Arc<std::sync::atomic::AtomicBool>,
    content_types: Arc<Mutex<Vec<String>>>,
}

impl FakeShaper {
    async fn start(accepted: &str) -> (Self, String) {
        use axum::http::{HeaderMap, StatusCode};
        use axum::response::IntoResponse;
        let fake = FakeShaper {
            accepted: Arc::new(Mutex::new(accepted.to_string())),
            ..FakeShaper::default()
        };
        let state = fake.clone();
        let app = axum::Router::new().route(
            "/v1/report",
            axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
                let st = state.clone();
                async move {
                    let header = |name| {
                        headers
                            .get(name)
                            .and_then(|v: &axum::http::HeaderValue| v.to_str().ok())
                    };
                    let content_type = header(axum::http::header::CONTENT_TYPE);
                    st.content_types
                        .lock()
                        .expect("types")
                        .push(content_type.unwrap_or("").to_string());
                    let json_only = st.json_only.load(std::sync::atomic::Ordering::SeqCst);
                    let (read_as, answer_in) = if json_only {
                        (Encoding::Json, Encoding::Json)
                    } else {
                        (
                            Encoding::of_content_type(content_type),
                            Encoding::for_accept(header(axum::http::header::ACCEPT)),
                        )
                    };
                    let auth = headers
                        .get(axum::http::header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string();
                    st.seen.lock().expect("seen").push(auth.clone());
                    let error = |status: StatusCode, kind: &str, message: &str| {
                        let body = ErrorBody {
                            error: kind.into(),
                            message: message.into(),
                            min_boot_id: None,
                        };
                        (status, axum::Json(body)).into_response()
                    };
                    if st.down.load(std::sync::atomic::Ordering::SeqCst) {
                        return error(StatusCode::SERVICE_UNAVAILABLE, "no_leader", "down");
                    }
                    let want = format!("Bearer {}", st.accepted.lock().expect("token"));
                    if auth != want {
                        return error(
                            StatusCode::UNAUTHORIZED,
                            "unauthorized",
                            "invalid bearer token",
                        );
                    }
                    if let Err(e) = read_as.decode::<crate::cluster::protocol::ReportRequest>(&body)
                    {
                        return error(
                            StatusCode::BAD_REQUEST,
                            "bad_request",
                            &format!("malformed {e}"),
                        );
                    }
                    let answer = ReportResponse {
                        api_version: 1,
                        round: 1,
                        interval_s: 1.0,
                        actions: Vec::new(),
                        rejected: Vec::new(),
                    };
                    (
                        [(axum::http::header::CONTENT_TYPE, answer_in.media_type())],
                        answer_in.encode(&answer).expect("encodes"),
                    )
                        .into_response()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (fake, url)
    }

    fn accept(&self, token: &str) {
        *self.accepted.lock().expect("token") = token.to_string();
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }

    fn set_json_only(&self, json_only: bool) {
        self.json_only
            .store(json_only, std::sync::atomic::Ordering::SeqCst);
    }

    /// The `Content-Type`s of the requests seen so far, and forgets them.
    fn take_content_types(&self) -> Vec<String> {
        std::mem::take(&mut *self.content_types.lock().expect("types"))
    }

    /// The tokens of the requests seen so far, and forgets them.
    fn take_seen(&self) -> Vec<String> {
        std::mem::take(&mut *self.seen.lock().expect("seen"))
            .into_iter()
            .map(|h| h.trim_start_matches("Bearer ").to_string())
            .collect()
    }
}

const T1: &str = "tailor1.first-token-0123456789";
const T2: &str = "tailor1.other-token-9876543210";

fn session(url: &str, token_file: &std::path::Path) -> ClusterSession {
    let mut cfg = ClusterClientConfig::new(url, token_file);
    cfg.agent_id = Some("n1".into());
    cfg.timeout_s = 2.0;
    ClusterSession::new(&cfg, 0.0).expect("session")
}

/// What each token test starts from: logs captured (debug), a stand-in
/// shaper that accepts `accepted`, a token file that holds `in_file`,
/// and a session on them.
struct Rig {
    logs: Logs,
    _guard: tracing::subscriber::DefaultGuard,
    shaper: FakeShaper,
    url: String,
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    session: ClusterSession,
}

impl Rig {
    async fn start(accepted: &str, in_file: &str) -> Rig {
        let (logs, _guard) = Logs::capture(tracing::Level::DEBUG);
        let (shaper, url) = FakeShaper::start(accepted).await;
        let _dir = tempfile::tempdir().expect("tempdir");
        let path = token_file(_dir.path(), "token", in_file);
        let session = session(&url, &path);
        Rig {
            logs,
            _guard,
            shaper,
            url,
            _dir,
            path,
            session,
        }
    }
}

/// Rewrites the token file in place (same inode, same length) and sets
/// its modification time to `mtime`.
fn rewrite(path: &std::path::Path, token: &str, mtime: std::time::SystemTime) {
    write_token_file(path, token).expect("rewrite");
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(mtime))
        .expect("set mtime");
}

fn mtime(path: &std::path::Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime")
}

/// QA C5: a token file rotated under a running agent is read again
/// when its modification time changes, before the next report: no
/// restart, no 401 on the way. The log names the file, not the token.
#[tokio::test]
async fn a_rotated_token_file_is_read_again_when_it_changes() {
    let mut r = Rig::start(T1, T1).await;
    let (logs, shaper, path, s) = (&r.logs, &r.shaper, &r.path, &mut r.session);
    let cap = Resources::new(1.0, 1e9);
    let d = s.round(cap, &[], &|_| None, 1.0, false).await;
    assert_eq!(d.source, RoundSource::Shaper { round: 1 });
    // Same length, same inode: only the modification time tells.
    let later = mtime(path) + Duration::from_secs(10);
    rewrite(path, T2, later);
    shaper.accept(T2);
    shaper.take_seen();
    let d = s.round(cap, &[], &|_| None, 2.0, false).await;
    assert_eq!(d.source, RoundSource::Shaper { round: 1 }, "{d:?}");
    assert_eq!(shaper.take_seen(), vec![T2], "the new token at once");
    assert_one_reload_logged(logs, path, "the token file changed");
    // Unchanged since: not read again.
    s.round(cap, &[], &|_| None, 3.0, false).await;
    assert_eq!(
        logs.lines("token file read again").len(),
        1,
        "{}",
        logs.text()
    );
}

/// QA C5: a 401 makes the agent read its token file again, whatever
/// its modification time says, and send once more with the new token.
#[tokio::test]
async fn a_401_reads_the_token_file_again() {
    let mut r = Rig::start(T1, T1).await;
    let (logs, shaper, path, s) = (&r.logs, &r.shaper, &r.path, &mut r.session);
    let cap = Resources::new(1.0, 1e9);
    assert_eq!(
        s.round(cap, &[], &|_| None, 1.0, false).await.source,
        RoundSource::Shaper { round: 1 }
    );
    // Rotated with the old modification time (a copy that kept it).
    let old = mtime(path);
    rewrite(path, T2, old);
    shaper.accept(T2);
    shaper.take_seen();
    let d = s.round(cap, &[], &|_| None, 2.0, false).await;
    assert_eq!(d.source, RoundSource::Shaper { round: 1 }, "{d:?}");
    assert_eq!(
        shaper.take_seen(),
        vec![T1, T2],
        "refused, read again, sent again"
    );
    assert_one_reload_logged(logs, path, "HTTP 401");
}

/// One "new token in use" line, naming the token file and `why`; no
/// token anywhere in the log.
fn assert_one_reload_logged(logs: &Logs, path: &std::path::Path, why: &str) {
    let reloads = logs.lines("new token in use");
    assert_eq!(reloads.len(), 1, "{}", logs.text());
    for part in [path.display().to_string().as_str(), why] {
        assert!(reloads[0].contains(part), "{part}: {}", reloads[0]);
    }
    let text = logs.text();
    assert!(
        !text.contains(T1) && !text.contains(T2),
        "a token was logged: {text}"
    );
}

/// QA C14: the first answer after failed reports is logged once, at
/// info, with how long the link was down.
#[tokio::test]
async fn the_link_coming_back_is_logged_once() {
    let mut r = Rig::start(T1, T1).await;
    let (logs, shaper, url, s) = (&r.logs, &r.shaper, r.url.as_str(), &mut r.session);
    let cap = Resources::new(1.0, 1e9);
    s.round(cap, &[], &|_| None, 1.0, false).await;
    assert!(
        logs.lines("shaper link back").is_empty(),
        "connected from the start"
    );
    shaper.set_down(true);
    for t in [2.0, 3.0] {
        let d = s.round(cap, &[], &|_| None, t, false).await;
        assert!(matches!(d.source, RoundSource::FailSafe { .. }), "{d:?}");
    }
    shaper.set_down(false);
    for t in [4.5, 5.0, 6.0] {
        let d = s.round(cap, &[], &|_| None, t, false).await;
        assert_eq!(d.source, RoundSource::Shaper { round: 1 });
    }
    let back = logs.lines("shaper link back");
    assert_eq!(back.len(), 1, "{}", logs.text());
    assert!(back[0].contains("INFO"), "{}", back[0]);
    assert!(back[0].contains("failed_reports=2"), "{}", back[0]);
    assert!(back[0].contains("down_s=2.5"), "{}", back[0]);
    assert!(back[0].contains(url), "{}", back[0]);
}

/// QA C5: a credential the shaper refuses (and no new token in the
/// file) fails safe as "shaper refused our credentials", not as
/// "shaper unreachable"; it is sent once per report, not in a loop.
#[tokio::test]
async fn refused_credentials_are_not_an_unreachable_shaper() {
    let mut r = Rig::start(T2, T1).await;
    let (logs, shaper, path, s) = (&r.logs, &r.shaper, &r.path, &mut r.session);
    let d = s
        .round(Resources::new(1.0, 1e9), &[], &|_| None, 1.0, false)
        .await;
    let RoundSource::FailSafe { error, .. } = &d.source else {
        panic!("expected fail-safe, got {d:?}");
    };
    assert!(
        error.starts_with("shaper refused our credentials (HTTP 401)"),
        "{error}"
    );
    assert_eq!(
        shaper.take_seen(),
        vec![T1],
        "the same token is not sent twice"
    );
    assert_eq!(
        s.link_status(1.0).last_error.as_deref(),
        Some(error.as_str())
    );
    let text = logs.text();
    let refused = logs.lines("shaper refused our credentials: fail-safe");
    assert_eq!(refused.len(), 1, "{text}");
    assert!(refused[0].contains(&path.display().to_string()), "{text}");
    assert!(!text.contains("unreachable"), "{text}");
    // A shaper that answers 503 is still unreachable.
    shaper.set_down(true);
    let d = s
        .round(Resources::new(1.0, 1e9), &[], &|_| None, 2.0, false)
        .await;
    assert!(matches!(d.source, RoundSource::FailSafe { .. }), "{d:?}");
    assert_eq!(
        logs.lines("shaper unreachable: fail-safe").len(),
        1,
        "{}",
        logs.text()
    );
}

/// A token file (mode 0600) in `dir`.
fn token_file(dir: &std::path::Path, name: &str, token: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    write_token_file(&path, token).expect("token file");
    path
}

#[derive(Debug)]
struct Layer(&'static str, Option<Box<Layer>>);

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Layer {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.1.as_deref().map(|l| l as _)
    }
}

#[test]
fn error_chain_shows_every_cause_once() {
    let e = Layer(
        "error sending request",
        Some(Box::new(Layer(
            "client error (Connect)",
            Some(Box::new(Layer(
                "Connect",
                Some(Box::new(Layer("invalid peer certificate", None))),
            ))),
        ))),
    );
    assert_eq!(
        error_chain(&e),
        "error sending request: client error (Connect): invalid peer certificate"
    );
    assert_eq!(error_chain(&Layer("alone", None)), "alone");
}

/// QA C6: a refused connection and a failed TLS handshake say so; they
/// used to read "error sending request for url (…)" alike.
#[tokio::test]
async fn transport_errors_carry_their_cause() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = token_file(dir.path(), "token", "0123456789abcdef0123");
    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let cfg = ClusterClientConfig::new(format!("http://127.0.0.1:{port}"), &token);
    let mut client = ClusterClient::new(&cfg).expect("client");
    let err = client
        .report(Resources::new(1.0, 1e9), &[], &[], false)
        .await
        .expect_err("nothing listens");
    assert!(matches!(err, ClusterError::Unreachable(_)), "{err}");
    assert!(err.to_string().contains("refused"), "{err}");

    // A plain-HTTP server behind an https:// URL: the TLS error shows.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s
                .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let cfg = ClusterClientConfig::new(format!("https://127.0.0.1:{port}"), &token);
    let mut client = ClusterClient::new(&cfg).expect("client");
    let err = client
        .report(Resources::new(1.0, 1e9), &[], &[], false)
        .await
        .expect_err("no TLS");
    let text = err.to_string();
    assert!(
        text.contains("corrupt message") || text.contains("InvalidContentType"),
        "{text}"
    );
}

/// Reports go in JSON until the shaper answers in MessagePack, then in
/// MessagePack; back in JSON after an older shaper refuses one as
/// malformed JSON (the report is sent again, not lost); always in JSON
/// under `encoding = "json"`.
#[tokio::test]
async fn the_encoding_follows_what_the_shaper_answers() {
    let (shaper, url) = FakeShaper::start(T1).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let token = token_file(dir.path(), "token", T1);
    let mut cfg = ClusterClientConfig::new(url.as_str(), &token);
    cfg.agent_id = Some("n1".into());
    let mut client = ClusterClient::new(&cfg).expect("client");
    let capacity = Resources::new(1.0, 1e9);
    assert_eq!(client.sending(), Encoding::Json);
    for _ in 0..2 {
        client
            .report(capacity, &[], &[], false)
            .await
            .expect("answered");
    }
    assert_eq!(client.sending(), Encoding::MessagePack);
    assert_eq!(
        shaper.take_content_types(),
        ["application/json", "application/msgpack"]
    );

    // An older shaper behind the same URL (a fail-over).
    shaper.set_json_only(true);
    client
        .report(capacity, &[], &[], false)
        .await
        .expect("sent again as JSON");
    assert_eq!(client.sending(), Encoding::Json);
    assert_eq!(
        shaper.take_content_types(),
        ["application/msgpack", "application/json"]
    );
    // A newer one again: MessagePack after its first answer.
    shaper.set_json_only(false);
    for _ in 0..2 {
        client
            .report(capacity, &[], &[], false)
            .await
            .expect("answered");
    }
    assert_eq!(
        shaper.take_content_types(),
        ["application/json", "application/msgpack"]
    );

    cfg.encoding = WireEncoding::Json;
    let mut json = ClusterClient::new(&cfg).expect("client");
    for _ in 0..2 {
        json.report(capacity, &[], &[], false)
            .await
            .expect("answered");
    }
    assert_eq!(json.sending(), Encoding::Json);
    assert_eq!(
        shaper.take_content_types(),
        ["application/json", "application/json"]
    );
}

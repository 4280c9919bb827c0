//! Agent side of cluster mode: [`ClusterClient`], authenticated HTTP(S)
//! calls to the shaper (reports and acks, in the encoding negotiated with
//! it), and [`failure_text`]. What the agent loop drives once per interval
//! is [`ClusterSession`] (`super::session`), re-exported here.

use super::auth::{read_token_file, Token};
use super::config::{ClusterClientConfig, WireEncoding};
use super::protocol::{
    Ack, AckRequest, AckResponse, ComponentReport, Encoding, ErrorBody, Negotiated, ReportResponse,
};
pub use super::session::{
    ClusterSession, LinkStatus, LocalAction, LocalActionKind, RoundDecision, RoundSource,
};
use super::ClusterError;
use serde::{Deserialize, Serialize};
use shaper::Resources;
use std::time::Duration;

/// Acks kept while the shaper is unreachable (oldest dropped beyond).
pub const MAX_QUEUED_ACKS: usize = 10_000;
/// Action ids remembered as done (for at-most-once application).
pub const APPLIED_LOG_LEN: usize = 65_536;

#[derive(Serialize)]
struct ReportRef<'a> {
    agent_id: &'a str,
    boot_id: u64,
    seq: u64,
    capacity: Resources,
    components: &'a [ComponentReport],
    acks: &'a [Ack],
    /// This agent renders [`protocol::WireAction::mentions`].
    mentions: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    early: bool,
}

/// Authenticated client of a shaper, or of the replicas of a shaper
/// cluster: requests go to the replica that answered last; a follower's
/// `307` (see `shaperd::ha`) is followed only to a configured URL (the
/// bearer token never goes elsewhere), and an unreachable replica or one
/// that knows no leader (`503 no_leader`) sends the request to the next.
#[derive(Clone, Debug)]
pub struct ClusterClient {
    http: reqwest::Client,
    bases: std::sync::Arc<[String]>,
    /// Index in `bases` of the replica to try first.
    current: usize,
    token: Token,
    /// Where `token` was read from, and that file as it was then: it is
    /// read again when it changes and when the shaper answers 401, so a
    /// rotated credential needs no restart. `None` for a token given as
    /// such ([`ClusterClient::with_identity`]).
    token_file: Option<(std::path::PathBuf, Option<FileStamp>)>,
    agent_id: String,
    /// This client's boot: its creation time in Unix milliseconds, at least
    /// one more than any earlier client of this process.
    boot_id: u64,
    seq: u64,
    /// The bodies' encoding, negotiated with the shaper
    /// (`protocol::encoding`).
    encoding: Negotiated,
}

/// `e` with its whole `source()` chain, `outer: cause: root cause`.
/// reqwest's `Display` stops at "error sending request for url (…)" and
/// leaves out why: the TLS error (an untrusted certificate, a CA
/// certificate served as the shaper's own), the DNS failure, the refused
/// connection (QA C6). A cause whose text its parent already shows is
/// not repeated.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut last = out.clone();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !text.is_empty() && !last.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        last = text;
        cause = c.source();
    }
    out
}

/// What tells a changed token file: its modification time, plus its inode
/// and length (a file renamed into place within the clock's granularity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileStamp {
    modified: Option<std::time::SystemTime>,
    inode: u64,
    len: u64,
}

impl FileStamp {
    fn of(path: &std::path::Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(Self {
            modified: m.modified().ok(),
            inode: m.ino(),
            len: m.len(),
        })
    }
}

/// Why the token file is read again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reload {
    /// Its modification time (or inode, or length) changed.
    Changed,
    /// The shaper answered 401 to the token in use.
    Refused,
}

impl Reload {
    fn as_str(self) -> &'static str {
        match self {
            Reload::Changed => "the token file changed",
            Reload::Refused => "the shaper refused the token (HTTP 401)",
        }
    }
}

/// A boot id: the current Unix time in milliseconds, strictly increasing
/// within the process.
fn next_boot_id() -> u64 {
    next_boot_id_from(0)
}

/// A boot id of at least `min` (what the shaper accepts after a clock that
/// went back), else [`next_boot_id`].
fn next_boot_id_from(min: u64) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now_ms = (tailor_core::Clock::now_s(&tailor_core::SystemClock) * 1000.0) as u64;
    let mut prev = LAST.load(Ordering::Relaxed);
    loop {
        let next = now_ms.max(prev.saturating_add(1)).max(min);
        match LAST.compare_exchange(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(p) => prev = p,
        }
    }
}

impl ClusterClient {
    /// Validates the config, reads the token file (permissions checked) and
    /// the optional CA certificate.
    pub fn new(cfg: &ClusterClientConfig) -> Result<Self, ClusterError> {
        cfg.validate()?;
        let stamp = FileStamp::of(&cfg.token_file);
        let token = read_token_file(&cfg.token_file)?;
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(Duration::from_secs_f64(cfg.timeout_s))
            .connect_timeout(Duration::from_secs_f64(cfg.timeout_s.min(5.0)));
        if let Some(ca) = &cfg.ca_cert_file {
            let pem = std::fs::read(ca).map_err(|source| ClusterError::Io {
                path: ca.clone(),
                source,
            })?;
            let cert = reqwest::Certificate::from_pem(&pem).map_err(|e| {
                ClusterError::Client(format!("{}: {}", ca.display(), error_chain(&e)))
            })?;
            builder = builder.add_root_certificate(cert);
        }
        let http = builder
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ClusterError::Client(error_chain(&e)))?;
        Ok(Self {
            http,
            bases: cfg.shaper_url.bases().into(),
            current: 0,
            token,
            token_file: Some((cfg.token_file.clone(), stamp)),
            agent_id: cfg.resolved_agent_id(),
            boot_id: next_boot_id(),
            seq: 0,
            encoding: Negotiated::new(cfg.encoding == WireEncoding::Auto),
        })
    }

    /// The encoding of this client's next body (JSON until a shaper has
    /// answered in MessagePack).
    pub fn sending(&self) -> Encoding {
        self.encoding.sending()
    }

    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// The same client (shared connection pool) reporting as another agent
    /// with that agent's own token (the load generator's simulated agents).
    pub fn with_identity(&self, agent_id: impl Into<String>, token: Token) -> Self {
        Self {
            http: self.http.clone(),
            bases: self.bases.clone(),
            current: self.current,
            token,
            token_file: None,
            agent_id: agent_id.into(),
            boot_id: next_boot_id(),
            seq: 0,
            encoding: Negotiated::new(self.encoding.allow),
        }
    }

    /// The token file this client reads its token from (`None` for a
    /// token given as such).
    pub fn token_file(&self) -> Option<&std::path::Path> {
        self.token_file.as_ref().map(|(p, _)| p.as_path())
    }

    /// Reads the token file again when `why` is [`Reload::Refused`], or
    /// when the file changed since it was last read; true when that put a
    /// new token in use. The log names the file, never the token; a file
    /// that cannot be read leaves the token in use as it is.
    fn reload_token(&mut self, why: Reload) -> bool {
        let Some((path, seen)) = &mut self.token_file else {
            return false;
        };
        let stamp = FileStamp::of(path);
        if why == Reload::Changed && stamp == *seen {
            return false;
        }
        *seen = stamp;
        match read_token_file(path) {
            Ok(token) if token == self.token => {
                tracing::debug!(path = %path.display(), reason = why.as_str(), "token file read again: same token");
                false
            }
            Ok(token) => {
                self.token = token;
                tracing::info!(path = %path.display(), reason = why.as_str(), "token file read again: new token in use");
                true
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), reason = why.as_str(), error = %e, "cannot read the token file again: keeping the token in use");
                false
            }
        }
    }

    /// This client's boot id (sent with every report).
    pub fn boot_id(&self) -> u64 {
        self.boot_id
    }

    /// The shaper URL requests go to first (the leader, once found).
    pub fn current_url(&self) -> &str {
        self.bases.get(self.current).map_or("", |s| s.as_str())
    }

    /// The configured base URL a `Location` points into, by index.
    fn listed(&self, location: &str) -> Option<usize> {
        self.bases.iter().position(|b| {
            location
                .strip_prefix(b.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }

    async fn post<B: Serialize + ?Sized, R: for<'de> Deserialize<'de>>(
        &mut self,
        path: &str,
        body: &B,
    ) -> Result<R, ClusterError> {
        let mut sent = self.encoding.sending();
        let mut bytes = encode(sent, body)?;
        // A rotated token file is picked up before the request.
        self.reload_token(Reload::Changed);
        // Every replica once, plus one hop per redirect.
        let mut attempts = 2 * self.bases.len().max(1);
        let mut reloaded = false;
        let mut last = ClusterError::Unreachable("no shaper URL configured".into());
        while attempts > 0 {
            attempts -= 1;
            let base = self.current_url().to_string();
            match self.post_once(&base, path, sent, &bytes).await {
                // The credential may have been rotated under the same file:
                // read it again and, when it holds a new token, send once
                // more (a 401 is answered before the report is looked at).
                Err(ClusterError::Rejected { status: 401, .. })
                    if !reloaded && self.reload_token(Reload::Refused) =>
                {
                    reloaded = true;
                    attempts += 1;
                }
                // A shaper that reads JSON only (an older replica after a
                // fail-over) refused the MessagePack body: send it as JSON.
                Err(ClusterError::Rejected {
                    status: 400,
                    message,
                    ..
                }) if sent == Encoding::MessagePack
                    && message.starts_with("malformed JSON body")
                    && self.encoding.refused_as_malformed() =>
                {
                    tracing::info!(shaper = %base, "the shaper reads JSON only: reporting in JSON");
                    sent = Encoding::Json;
                    bytes = encode(sent, body)?;
                    attempts += 1;
                }
                Ok(Hop::Done(answered, bytes)) => {
                    self.encoding.answered(answered);
                    return answered
                        .decode(&bytes)
                        .map_err(|e| ClusterError::Decode(e.to_string()));
                }
                Ok(Hop::Redirect(location)) => match self.listed(&location) {
                    Some(i) => {
                        tracing::info!(from = %base, to = %self.bases[i], "following the shaper leader");
                        self.current = i;
                        last = ClusterError::Unreachable(format!("redirected to {location}"));
                    }
                    None => {
                        return Err(ClusterError::Rejected {
                            status: 307,
                            message: format!(
                                "{base} redirects to {location:?}, which is not one of the configured shaper URLs"
                            ),
                            min_boot_id: None,
                        })
                    }
                },
                Err(e @ (ClusterError::Unreachable(_) | ClusterError::Rejected { status: 503, .. })) => {
                    tracing::debug!(shaper = %base, error = %e, "shaper replica unavailable: trying the next");
                    self.current = (self.current + 1) % self.bases.len().max(1);
                    last = e;
                }
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    async fn post_once(
        &self,
        base: &str,
        path: &str,
        encoding: Encoding,
        body: &[u8],
    ) -> Result<Hop, ClusterError> {
        let resp = self
            .http
            .post(format!("{base}{path}"))
            .bearer_auth(self.token.expose())
            .header(reqwest::header::CONTENT_TYPE, encoding.media_type())
            .header(reqwest::header::ACCEPT, self.encoding.accept())
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| ClusterError::Unreachable(error_chain(&e)))?;
        let status = resp.status();
        let answered = Encoding::of_content_type(
            resp.headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
        );
        if status == reqwest::StatusCode::TEMPORARY_REDIRECT
            || status == reqwest::StatusCode::PERMANENT_REDIRECT
        {
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            return Ok(Hop::Redirect(location));
        }
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| ClusterError::Unreachable(error_chain(&e)))?;
        if !status.is_success() {
            let (message, min_boot_id) = match serde_json::from_slice::<ErrorBody>(&bytes) {
                Ok(e) => (e.message, e.min_boot_id),
                Err(_) => (
                    String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned(),
                    None,
                ),
            };
            return Err(ClusterError::Rejected {
                status: status.as_u16(),
                message,
                min_boot_id,
            });
        }
        Ok(Hop::Done(answered, bytes.to_vec()))
    }

    /// `POST /v1/report`. A report refused as stale (409: a new shaper
    /// leader no longer accepts this boot's reports, see
    /// `shaperd::limits::ReplayGuard`, or this host's clock went back below
    /// the last accepted boot) is sent again once, from a new boot of at
    /// least the shaper's `min_boot_id`. `early`: see
    /// [`protocol::ReportRequest::early`].
    pub async fn report(
        &mut self,
        capacity: Resources,
        components: &[ComponentReport],
        acks: &[Ack],
        early: bool,
    ) -> Result<ReportResponse, ClusterError> {
        match self.report_once(capacity, components, acks, early).await {
            Err(ClusterError::Rejected {
                status: 409,
                message,
                min_boot_id,
            }) => {
                let old = self.boot_id;
                self.boot_id = next_boot_id_from(min_boot_id.unwrap_or(0));
                self.seq = 0;
                tracing::info!(
                    old_boot_id = old,
                    boot_id = self.boot_id,
                    reason = %message,
                    "report refused as stale: starting a new boot"
                );
                self.report_once(capacity, components, acks, early).await
            }
            other => other,
        }
    }

    async fn report_once(
        &mut self,
        capacity: Resources,
        components: &[ComponentReport],
        acks: &[Ack],
        early: bool,
    ) -> Result<ReportResponse, ClusterError> {
        self.seq += 1;
        let agent_id = self.agent_id.clone();
        let body = ReportRef {
            agent_id: &agent_id,
            boot_id: self.boot_id,
            seq: self.seq,
            capacity,
            components,
            acks,
            mentions: true,
            early,
        };
        self.post("/v1/report", &body).await
    }

    /// `POST /v1/ack`.
    pub async fn ack(&mut self, acks: Vec<Ack>) -> Result<AckResponse, ClusterError> {
        self.post(
            "/v1/ack",
            &AckRequest {
                agent_id: self.agent_id.clone(),
                acks,
            },
        )
        .await
    }
}

/// `body` in `encoding`.
fn encode<B: Serialize + ?Sized>(encoding: Encoding, body: &B) -> Result<Vec<u8>, ClusterError> {
    encoding
        .encode(body)
        .map_err(|e| ClusterError::Decode(e.to_string()))
}

/// One request's answer: a body in its encoding, or a redirect to follow.
enum Hop {
    Done(Encoding, Vec<u8>),
    Redirect(String),
}

/// A failed exchange with the shaper as logs, `/healthz` and the round's
/// source give it: a 401 or 403 is "shaper refused our credentials" (the
/// token file, or the credential's agent id), not a network problem.
pub fn failure_text(e: &ClusterError) -> String {
    match e {
        ClusterError::Rejected {
            status: status @ (401 | 403),
            message,
            ..
        } => format!("shaper refused our credentials (HTTP {status}): {message}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;

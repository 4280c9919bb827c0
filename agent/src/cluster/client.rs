//! Agent side of cluster mode.
//!
//! * [`ClusterClient`]: authenticated HTTP(S) calls to the shaper.
//! * [`ClusterSession`]: what the agent loop drives once per interval. It
//!   reports the node, returns the shaper's actions that were not applied
//!   yet (by id: at most once each), queues acknowledgements for the next
//!   report, and when the shaper cannot be reached applies the
//!   [`FailSafe`] policy: no shrink, no eviction, and after `hold_s`
//!   gradual regrowth towards requests.
//!
//! ```text
//! let decision = session.round(capacity, &components, &name_of, now_s, false).await;
//! for a in &decision.actions {
//!     let result = apply(a);                     // Docker update / stop
//!     if let Some(id) = &a.id { session.record_outcome(id, result); }
//! }
//! session.flush_acks(now_s).await;               // optional: ack at once
//! ```

use super::auth::{read_token_file, Token};
use super::config::{ClusterClientConfig, WireEncoding};
use super::failsafe::{FailSafe, LinkState};
use super::protocol::{
    Ack, AckOutcome, AckRequest, AckResponse, ActionId, ActionKind, ComponentReport, Encoding,
    ErrorBody, Negotiated, ReportResponse,
};
use super::ClusterError;
use serde::{Deserialize, Serialize};
use shaper::Resources;
use std::collections::{HashMap, VecDeque};
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

/// What to do to one local container.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalAction {
    /// The shaper's id (acknowledge it with [`ClusterSession::record_outcome`]);
    /// `None` for fail-safe regrowth decided locally.
    pub id: Option<ActionId>,
    pub container_id: String,
    pub kind: LocalActionKind,
    /// Human-readable reason.
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LocalActionKind {
    Resize {
        from: Resources,
        to: Resources,
    },
    /// Stop the container; `whole_app`: its application is preempted.
    Evict {
        whole_app: bool,
    },
}

/// Who decided a round's actions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum RoundSource {
    /// The central shaper, round number `round`.
    Shaper { round: u64 },
    /// The local fail-safe policy (the shaper could not be reached).
    FailSafe { link: LinkState, error: String },
}

/// One round's outcome for the agent loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundDecision {
    pub source: RoundSource,
    /// In the order to apply them.
    pub actions: Vec<LocalAction>,
}

/// Client + fail-safe + at-most-once bookkeeping for one agent.
#[derive(Debug)]
pub struct ClusterSession {
    client: ClusterClient,
    failsafe: FailSafe,
    /// Outcomes of actions already applied (or failed), by id.
    done: HashMap<ActionId, AckOutcome>,
    done_order: VecDeque<ActionId>,
    /// Acks not yet delivered to the shaper.
    queued: Vec<Ack>,
    link: LinkCounters,
}

#[derive(Clone, Debug, Default)]
struct LinkCounters {
    last_ok_s: Option<f64>,
    failures: u64,
    /// Failed exchanges since the last answer.
    failing: u64,
    last_error: Option<String>,
    rejected_components: u64,
}

/// The state of an agent's link to the shaper (its `/metrics` and
/// `/healthz`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkStatus {
    pub state: LinkState,
    /// Unix seconds of the last successful report, `None` before the first.
    pub last_ok_s: Option<f64>,
    /// Failed reports since start.
    pub failures: u64,
    /// Why the last report failed, while failing.
    pub last_error: Option<String>,
    /// Components the shaper refused in the last report.
    pub rejected_components: u64,
}

impl ClusterSession {
    pub fn new(cfg: &ClusterClientConfig, now_s: f64) -> Result<Self, ClusterError> {
        let client = ClusterClient::new(cfg)?;
        Ok(Self::with_client(
            client,
            FailSafe::new(cfg.fail_safe.clone(), now_s),
        ))
    }

    pub fn with_client(client: ClusterClient, failsafe: FailSafe) -> Self {
        Self {
            client,
            failsafe,
            done: HashMap::new(),
            done_order: VecDeque::new(),
            queued: Vec::new(),
            link: LinkCounters::default(),
        }
    }

    /// The link's state at `now_s`, for metrics and `/healthz`.
    pub fn link_status(&self, now_s: f64) -> LinkStatus {
        LinkStatus {
            state: self.failsafe.state(now_s),
            last_ok_s: self.link.last_ok_s,
            failures: self.link.failures,
            last_error: self.link.last_error.clone(),
            rejected_components: self.link.rejected_components,
        }
    }

    pub fn agent_id(&self) -> &str {
        self.client.agent_id()
    }

    pub fn link_state(&self, now_s: f64) -> LinkState {
        self.failsafe.state(now_s)
    }

    /// Acks waiting for the next report.
    pub fn queued_acks(&self) -> usize {
        self.queued.len()
    }

    /// Reports the node and returns what to do this round; the reasons
    /// name containers by `name_of` (container id -> name) where it knows
    /// them, and this node by its agent id. `early`: the memory watch runs
    /// this round before its time, and the shaper plans one at once
    /// ([`protocol::ReportRequest::early`]).
    pub async fn round(
        &mut self,
        capacity: Resources,
        components: &[ComponentReport],
        name_of: &(dyn Fn(&str) -> Option<String> + Sync),
        now_s: f64,
        early: bool,
    ) -> RoundDecision {
        let acks = std::mem::take(&mut self.queued);
        match self.client.report(capacity, components, &acks, early).await {
            Ok(resp) => {
                self.link_ok(now_s);
                self.link.last_ok_s = Some(now_s);
                self.link.last_error = None;
                self.link.rejected_components = resp.rejected.len() as u64;
                for r in &resp.rejected {
                    tracing::warn!(container = %r.container_id, reason = %r.reason, "the shaper refused to plan for this container");
                }
                let mut actions = Vec::with_capacity(resp.actions.len());
                for w in resp.actions {
                    if let Some(outcome) = self.done.get(&w.id) {
                        // Applied before but the ack did not arrive (or is in
                        // flight): do not apply again, ack again.
                        self.queued.push(Ack {
                            action_id: w.id.clone(),
                            outcome: outcome.clone(),
                        });
                        continue;
                    }
                    let reason = w.summary_named(name_of, self.client.agent_id());
                    let (container_id, kind) = match w.action {
                        ActionKind::Resize {
                            container_id,
                            from,
                            to,
                        } => (container_id, LocalActionKind::Resize { from, to }),
                        ActionKind::Evict {
                            container_id,
                            whole_app,
                        } => (container_id, LocalActionKind::Evict { whole_app }),
                    };
                    actions.push(LocalAction {
                        id: Some(w.id),
                        container_id,
                        kind,
                        reason,
                    });
                }
                RoundDecision {
                    source: RoundSource::Shaper { round: resp.round },
                    actions,
                }
            }
            Err(e) => {
                // Keep the acks for the next attempt (bounded).
                let mut acks = acks;
                acks.append(&mut self.queued);
                if acks.len() > MAX_QUEUED_ACKS {
                    acks.drain(..acks.len() - MAX_QUEUED_ACKS);
                }
                self.queued = acks;
                self.failsafe.on_failure(now_s);
                self.link.failures += 1;
                self.link.failing += 1;
                let error = failure_text(&e);
                self.link.last_error = Some(error.clone());
                let link = self.failsafe.state(now_s);
                match &e {
                    ClusterError::Rejected {
                        status: 401 | 403, ..
                    } => {
                        let token_file = self.client.token_file().map(|p| p.display().to_string());
                        tracing::warn!(
                            error = %error,
                            token_file = token_file.as_deref().unwrap_or(""),
                            state = link.as_str(),
                            "shaper refused our credentials: fail-safe"
                        );
                    }
                    ClusterError::Rejected { status, .. } if *status < 500 => {
                        tracing::warn!(error = %error, state = link.as_str(), "shaper refused the report: fail-safe");
                    }
                    _ => {
                        tracing::warn!(error = %error, state = link.as_str(), "shaper unreachable: fail-safe");
                    }
                }
                let actions = self.fail_safe_actions(components, now_s);
                RoundDecision {
                    source: RoundSource::FailSafe { link, error },
                    actions,
                }
            }
        }
    }

    /// The shaper answered at `now_s`: the link is connected again. The
    /// first answer after a failure is logged once, at info (the failures
    /// were warned of; QA C14: the last line used to stay "shaper
    /// unreachable" after the link was back).
    fn link_ok(&mut self, now_s: f64) {
        if let LinkState::Holding { since_s } | LinkState::Regrowing { since_s } =
            self.failsafe.state(now_s)
        {
            let down_s = ((now_s - since_s) * 10.0).round() / 10.0;
            tracing::info!(
                shaper = %self.client.current_url(),
                down_s,
                failed_reports = self.link.failing,
                "shaper link back: the shaper plans again"
            );
        }
        self.failsafe.on_success(now_s);
        self.link.failing = 0;
    }

    /// Fail-safe regrowth for `components` at `now_s` (empty unless the
    /// link is in the regrowing state).
    pub fn fail_safe_actions(
        &self,
        components: &[ComponentReport],
        now_s: f64,
    ) -> Vec<LocalAction> {
        components
            .iter()
            .filter_map(|c| {
                self.failsafe.regrow(now_s, &c.allocation, &c.request).map(|to| LocalAction {
                    id: None,
                    container_id: c.container_id.clone(),
                    kind: LocalActionKind::Resize { from: c.allocation, to },
                    reason: format!(
                        "fail-safe: shaper unreachable for more than {} s, growing back towards the request",
                        self.failsafe.config().hold_s
                    ),
                })
            })
            .collect()
    }

    /// Records the outcome of an action returned by [`ClusterSession::round`];
    /// the ack goes with the next report (or [`ClusterSession::flush_acks`]).
    pub fn record_outcome(&mut self, id: &ActionId, result: Result<(), String>) {
        let outcome = match result {
            Ok(()) => AckOutcome::Applied,
            Err(error) => {
                let mut error = error;
                if error.len() > super::protocol::MAX_ERROR_LEN {
                    let mut cut = super::protocol::MAX_ERROR_LEN;
                    while !error.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    error.truncate(cut);
                }
                AckOutcome::Failed { error }
            }
        };
        if self.done.insert(id.clone(), outcome.clone()).is_none() {
            self.done_order.push_back(id.clone());
            if self.done_order.len() > APPLIED_LOG_LEN {
                if let Some(old) = self.done_order.pop_front() {
                    self.done.remove(&old);
                }
            }
        }
        self.queued.push(Ack {
            action_id: id.clone(),
            outcome,
        });
    }

    /// True when the action was already applied or failed here.
    pub fn is_done(&self, id: &ActionId) -> bool {
        self.done.contains_key(id)
    }

    /// Sends queued acks now (`POST /v1/ack`); on failure they stay queued.
    pub async fn flush_acks(&mut self, now_s: f64) -> Result<AckResponse, ClusterError> {
        if self.queued.is_empty() {
            return Ok(AckResponse::default());
        }
        let acks = std::mem::take(&mut self.queued);
        match self.client.ack(acks.clone()).await {
            Ok(r) => {
                self.link_ok(now_s);
                Ok(r)
            }
            Err(e) => {
                let mut acks = acks;
                acks.append(&mut self.queued);
                self.queued = acks;
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests;

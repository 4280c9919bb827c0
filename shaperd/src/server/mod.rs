//! The central shaper's HTTP server (axum; HTTPS through rustls when a
//! certificate is configured).
//!
//! Routes: `POST /v1/report` and `POST /v1/ack` need the agent's own
//! credential (`Authorization: Bearer tailor1.<key id>.<secret>`, see
//! [`crate::credentials`]); `GET /v1/status` and `GET /metrics` need the
//! operator token (`token_file`); `GET /healthz` needs nothing. Errors are
//! JSON [`ErrorBody`]s: 401 without a valid credential (checked before the
//! body is read), 403 when the body names another agent than the
//! credential's, 400 for a body that does not parse or validate, 409 for a
//! stale or replayed report, 413 over `max_body_bytes`, 429 over a cap,
//! 408 when a request takes longer than `request_timeout_s`, 431 for
//! request headers over 64 KiB ([`crate::serve::header_limit`]), 404 for
//! unknown paths. A refused request changes nothing.
//!
//! Connections are bounded ([`crate::serve`]): at most `max_connections`
//! open, closed after `idle_timeout_s` without I/O, headers within
//! `header_read_timeout_s`.
//!
//! A background task plans one round every `interval_s`: it snapshots the
//! state under the lock, runs `shaper::decide()` on a blocking thread
//! without the lock, then installs the per-agent actions. `/healthz`
//! answers 503 once that task is gone or has not ticked for 3 intervals
//! plus 30 s. An agent's early report (its memory watch) brings the next
//! round forward, at most one per `early_round_gap_s` (`early.rs`).
//! Another task re-reads the credentials file when it changes.

mod early;
mod round;
mod routes;

pub use routes::{encoded_response, json_response, router};

use crate::auth::{read_token_file, Token};
use crate::config::ShaperServerConfig;
use crate::credentials::{Credentials, CredentialsFile, FileStamp};
use crate::metrics::{self, Gauges, Metrics, ProcessStats};
use crate::serve::{ConnStats, LimitAcceptor, ServeLimits};
use crate::state::{Role, ShaperState, StateConfig};
use crate::store::{MemoryStore, StateStore, StoreError};
use crate::ClusterError;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};
use tailor_core::{Clock, SystemClock};

/// Round loop states (for `/healthz` and `tailor_shaper_round_loop_up`).
const LOOP_MANUAL: u8 = 0;
const LOOP_RUNNING: u8 = 1;
const LOOP_DEAD: u8 = 2;
/// Stopped on purpose (server shutdown).
const LOOP_STOPPED: u8 = 3;

/// State shared by the handlers and the round task.
pub struct Shared {
    state: Mutex<ShaperState>,
    metrics: Mutex<Metrics>,
    /// The operator's token (`/v1/status`, `/metrics`).
    token: Token,
    /// Per-agent credentials in force (swapped on reload).
    credentials: RwLock<Arc<Credentials>>,
    conn_stats: Arc<ConnStats>,
    round_loop: AtomicU8,
    /// Last tick of the round loop.
    round_tick: Mutex<Option<Instant>>,
    interval_s: f64,
    clock: Arc<dyn Clock>,
    /// decide()'s buffers, reused round after round.
    decider: Arc<Mutex<shaper::Decider>>,
    /// The view's and the answers' memory, reused round after round.
    round_memory: Arc<Mutex<crate::state::RoundMemory>>,
    /// Durable state (write-through; see [`crate::store`]).
    pub(crate) store: Arc<dyn StateStore>,
    /// Serializes writes of ack results, so they land in order.
    pub(crate) write_lock: tokio::sync::Mutex<()>,
    /// This replica's part and the leader's URL (see [`crate::ha`]).
    pub(crate) role: RwLock<(Role, Option<String>)>,
    /// Wakes the round loop when this replica becomes the leader.
    pub(crate) promoted: tokio::sync::Notify,
    /// Early reports asking for a round now, and the loop's progress.
    pub(crate) early: early::EarlyRounds,
}

/// Marks the round loop dead when its task ends, however it ends (panic,
/// abort).
struct LoopGuard(Arc<Shared>);

impl Drop for LoopGuard {
    fn drop(&mut self) {
        let was = self.0.round_loop.swap(LOOP_DEAD, Ordering::SeqCst);
        if was == LOOP_STOPPED {
            tracing::info!("the shaping round loop stopped for the shutdown");
        } else {
            tracing::error!("the shaping round loop stopped: /healthz now answers 503");
        }
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the state half-updated in a
    // way that matters more than stopping the server would; carry on.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub fn new(
        state: ShaperState,
        token: Token,
        credentials: Credentials,
        clock: Arc<dyn Clock>,
        store: Arc<dyn StateStore>,
    ) -> Self {
        let interval_s = state.interval_s();
        let early = early::EarlyRounds::new(state.early_round_gap_s(), interval_s);
        Self {
            state: Mutex::new(state),
            metrics: Mutex::new(Metrics::default()),
            token,
            credentials: RwLock::new(Arc::new(credentials)),
            conn_stats: Arc::new(ConnStats::default()),
            round_loop: AtomicU8::new(LOOP_MANUAL),
            round_tick: Mutex::new(None),
            interval_s,
            clock,
            decider: Arc::new(Mutex::new(shaper::Decider::new())),
            round_memory: Arc::default(),
            store,
            write_lock: tokio::sync::Mutex::new(()),
            role: RwLock::new((Role::Leader, None)),
            promoted: tokio::sync::Notify::new(),
            early,
        }
    }

    /// This replica's part and the leader's URL, when known.
    pub fn role(&self) -> (Role, Option<String>) {
        self.role.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set_role(&self, role: Role, leader_url: Option<String>) {
        *self.role.write().unwrap_or_else(|e| e.into_inner()) = (role, leader_url);
    }

    /// Persists the ack results the state gathered (write-through: before
    /// the ack is answered). Writes land in the order they were taken.
    pub async fn persist_writes(&self) -> Result<(), StoreError> {
        let _order = self.write_lock.lock().await;
        let writes = self.with_state(|s| s.take_writes());
        if writes.is_empty() || !self.store.is_shared() {
            return Ok(());
        }
        self.store.put_acks(&writes).await
    }

    /// The credentials in force.
    pub fn credentials(&self) -> Arc<Credentials> {
        self.credentials
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Puts new credentials in force (revoked agents are refused from the
    /// next request on) and forgets the report sequences and the records
    /// (reports, components) of agents that no longer have one: the next
    /// round does not plan with them.
    pub fn set_credentials(&self, creds: Credentials) {
        let agents = creds.agents();
        *self.credentials.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(creds);
        let dropped = self.with_state(|s| {
            s.retain_replay_guard(|a| agents.contains(a));
            s.forget_agents(|a| agents.contains(a))
        });
        for agent in dropped {
            tracing::warn!(%agent, "agent has no credential any more: dropped from the cluster view");
        }
    }

    /// `Err(reason)` when the round loop is dead or has not ticked for
    /// 3 intervals + 30 s.
    pub fn round_loop_health(&self) -> Result<(), String> {
        match self.round_loop.load(Ordering::SeqCst) {
            LOOP_DEAD => Err("the shaping round loop has stopped".into()),
            LOOP_RUNNING => {
                let allowed = Duration::from_secs_f64(3.0 * self.interval_s + 30.0);
                match *lock(&self.round_tick) {
                    Some(t) if t.elapsed() > allowed => Err(format!(
                        "no shaping round attempted for {:.0} s (interval {} s)",
                        t.elapsed().as_secs_f64(),
                        self.interval_s
                    )),
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// Runs `f` on the state under its lock.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut ShaperState) -> R) -> R {
        f(&mut lock(&self.state))
    }

    /// Runs `f` on the metrics under their lock.
    pub fn with_metrics<R>(&self, f: impl FnOnce(&mut Metrics) -> R) -> R {
        f(&mut lock(&self.metrics))
    }

    pub fn now_s(&self) -> f64 {
        self.clock.now_s()
    }

    /// The `/metrics` text.
    pub fn render_metrics(&self) -> String {
        let now_s = self.clock.now_s();
        let credentials = self.credentials().len() as u64;
        let round_loop_up = self.round_loop_health().is_ok();
        let leader = self.role().0 == Role::Leader;
        let conns = self.conn_stats.counts();
        let g = self.with_state(|s| {
            let (live, stale) = s.agent_counts(now_s);
            let acks = s.ack_counters();
            Gauges {
                agents_live: live,
                agents_stale: stale,
                components: s.component_count(),
                round: s.round(),
                acks_applied: acks.applied,
                acks_failed: acks.failed,
                acks_unknown: acks.unknown,
                state_mem_bytes: s.usage().mem_bytes,
                refusals: s.refusal_counters(),
                conns,
                credentials,
                round_loop_up,
                leader,
            }
        });
        let process = ProcessStats::read("self");
        self.with_metrics(|m| metrics::render(m, &g, process))
    }
}

/// whose id it has applied).
/// This instance's epoch, the prefix of its action ids: its start in Unix
/// ms and 32 random bits, so that two instances never share one, even
/// started in the same millisecond (an agent does not apply again an action
pub(crate) fn new_epoch() -> Result<String, ClusterError> {
    use ring::rand::SecureRandom;
    let mut r = [0u8; 4];
    ring::rand::SystemRandom::new()
        .fill(&mut r)
        .map_err(|_| ClusterError::Serve("the system random generator failed".into()))?;
    let ms = (SystemClock.now_s() * 1000.0) as u64;
    Ok(format!("{ms:x}.{:08x}", u32::from_be_bytes(r)))
}

/// A running shaper server.
#[derive(Debug)]
pub struct ShaperServer {
    addr: SocketAddr,
    tls: bool,
    shared: Arc<Shared>,
    handle: axum_server::Handle,
    serve_task: tokio::task::JoinHandle<std::io::Result<()>>,
    round_task: Option<tokio::task::JoinHandle<()>>,
    watch_task: tokio::task::JoinHandle<()>,
    /// Leader election (with `[etcd]`).
    ha_task: Option<tokio::task::JoinHandle<()>>,
}

impl ShaperServer {
    /// Validates `cfg`, reads the token file, binds, and starts serving and
    /// planning a round every `interval_s` (system clock).
    pub async fn start(cfg: ShaperServerConfig) -> Result<Self, ClusterError> {
        Self::start_with(cfg, Arc::new(SystemClock), true).await
    }

    /// Like [`ShaperServer::start`] with a given clock; with
    /// `auto_rounds = false` rounds only happen through
    /// [`Shared::run_round`] (tests).
    pub async fn start_with(
        cfg: ShaperServerConfig,
        clock: Arc<dyn Clock>,
        auto_rounds: bool,
    ) -> Result<Self, ClusterError> {
        Self::start_with_store(cfg, clock, auto_rounds, None).await
    }

    /// Like [`ShaperServer::start_with`]; without `[etcd]`, the state is
    /// kept in `store` (default: a fresh [`MemoryStore`]).
    pub async fn start_with_store(
        cfg: ShaperServerConfig,
        clock: Arc<dyn Clock>,
        auto_rounds: bool,
        store: Option<Arc<dyn StateStore>>,
    ) -> Result<Self, ClusterError> {
        cfg.validate()?;
        let token = read_token_file(&cfg.token_file)?;
        let creds_path = cfg.credentials_file.clone().ok_or_else(|| {
            ClusterError::Credentials(
                "credentials_file is not set in the shaper configuration: no agent could report \
                 (register agents with `tailor shaper credentials add --agent ID --tenant T`)"
                    .into(),
            )
        })?;
        let creds_stamp = FileStamp::of(&creds_path);
        let creds = CredentialsFile::load(&creds_path, true)?;
        if creds.credentials.is_empty() {
            tracing::warn!(path = %creds_path.display(), "no agent credentials yet: every report is refused until `tailor shaper credentials add`");
        }
        let tls = match (&cfg.tls_cert_file, &cfg.tls_key_file) {
            (Some(c), Some(k)) => Some(crate::watch::tls_config(c, k)?),
            _ => None,
        };
        let now_s = clock.now_s();
        let epoch = new_epoch()?;
        let state = ShaperState::new(StateConfig::from(&cfg), cfg.shaper.clone(), epoch, now_s);
        let etcd = match &cfg.etcd {
            Some(e) => Some(Arc::new(
                crate::etcd::EtcdStore::new(e).map_err(|e| ClusterError::Store(e.to_string()))?,
            )),
            None => None,
        };
        let store: Arc<dyn StateStore> = match &etcd {
            Some(e) => e.clone(),
            None => store.unwrap_or_else(|| Arc::new(MemoryStore::private())),
        };
        // With [etcd], what etcd holds is put in force (by the election
        // loop, before this replica can lead), never the local file as is:
        // it may be an old copy that etcd refuses.
        let in_force = match &etcd {
            Some(_) => Credentials::default(),
            None => creds.index(),
        };
        let shared = Arc::new(Shared::new(state, token, in_force, clock, store));
        let (ha_task, publish) = match etcd {
            Some(etcd) => {
                shared.set_role(Role::Follower, None);
                let (tx, rx) = tokio::sync::watch::channel(creds);
                (
                    Some(tokio::spawn(crate::ha::run_election(
                        shared.clone(),
                        etcd,
                        rx,
                        creds_path.display().to_string(),
                    ))),
                    Some(tx),
                )
            }
            None => (None, None),
        };
        let limits: ServeLimits = cfg.limits.serve();
        let app = router(shared.clone(), cfg.max_body_bytes, limits.request_timeout);
        let listener =
            std::net::TcpListener::bind(cfg.listen).map_err(|source| ClusterError::Bind {
                addr: cfg.listen,
                source,
            })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| ClusterError::Bind {
                addr: cfg.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ClusterError::Bind {
            addr: cfg.listen,
            source,
        })?;
        let handle = axum_server::Handle::new();
        let is_tls = tls.is_some();
        let acceptor = LimitAcceptor::new(&limits, shared.conn_stats.clone());
        let serve_task = match tls {
            Some(tls) => {
                let tls_acceptor = axum_server::tls_rustls::RustlsAcceptor::new(tls)
                    .handshake_timeout(limits.header_read_timeout)
                    .acceptor(acceptor);
                let mut server = axum_server::from_tcp(listener)
                    .acceptor(tls_acceptor)
                    .handle(handle.clone());
                crate::serve::configure(&mut server, &limits);
                tokio::spawn(server.serve(app.into_make_service()))
            }
            None => {
                let mut server = axum_server::from_tcp(listener)
                    .acceptor(acceptor)
                    .handle(handle.clone());
                crate::serve::configure(&mut server, &limits);
                tokio::spawn(server.serve(app.into_make_service()))
            }
        };
        let round_task = auto_rounds.then(|| {
            let shared = shared.clone();
            let interval = Duration::from_secs_f64(cfg.interval_s);
            let warmup_intervals = cfg.warmup_intervals;
            shared.round_loop.store(LOOP_RUNNING, Ordering::SeqCst);
            *lock(&shared.round_tick) = Some(Instant::now());
            tokio::spawn(async move {
                let guard = LoopGuard(shared);
                let mut tick =
                    tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                // When the last round began and how long it took.
                let mut last: Option<(tokio::time::Instant, Duration)> = None;
                loop {
                    let early = tokio::select! {
                        _ = tick.tick() => false,
                        _ = guard.0.promoted.notified() => {
                            // A new leader: its first round after the warmup.
                            let warmup = interval.mul_f64(f64::from(warmup_intervals).max(1.0));
                            tick = tokio::time::interval_at(tokio::time::Instant::now() + warmup, interval);
                            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                            continue;
                        }
                        _ = guard.0.early.asked() => true,
                    };
                    if let (true, Some((begun, took)), Some(gap)) =
                        (early, last, guard.0.early.gap())
                    {
                        tokio::time::sleep_until(early::not_before(begun, took, gap)).await;
                    }
                    if early {
                        // The schedule restarts from the early round.
                        tick.reset();
                    }
                    let begun = tokio::time::Instant::now();
                    *lock(&guard.0.round_tick) = Some(Instant::now());
                    guard.0.early.begin();
                    if guard.0.role().0 == Role::Leader
                        && guard.0.run_round().await.is_ok()
                        && early
                    {
                        guard.0.with_metrics(|m| m.early_rounds_total += 1);
                    }
                    guard.0.early.end();
                    last = Some((begun, begun.elapsed()));
                }
            })
        });
        let watch_task = tokio::spawn(crate::watch::watch_credentials(
            shared.clone(),
            creds_path,
            creds_stamp,
            publish,
        ));

        tracing::info!(%addr, tls = is_tls, interval_s = cfg.interval_s, "tailor shaper listening");
        Ok(Self {
            addr,
            tls: is_tls,
            shared,
            handle,
            serve_task,
            round_task,
            watch_task,
            ha_task,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://addr` or `https://addr`.
    pub fn url(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.addr
        )
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Connection counters of the HTTP server.
    pub fn connections(&self) -> crate::serve::ConnCounts {
        self.shared.conn_stats.counts()
    }

    /// Stops the round loop as if its task had died (tests of `/healthz`).
    #[doc(hidden)]
    pub fn abort_round_loop(&self) {
        if let Some(t) = &self.round_task {
            t.abort();
        }
    }

    /// Serves until the server stops by itself (an I/O error).
    pub async fn wait(self) -> Result<(), ClusterError> {
        match self.serve_task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ClusterError::Serve(e.to_string())),
            Err(e) => Err(ClusterError::Serve(e.to_string())),
        }
    }

    /// Serves until `shutdown` completes (then shuts down gracefully) or the
    /// server fails by itself.
    pub async fn run_until(
        mut self,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> Result<(), ClusterError> {
        tokio::select! {
            r = &mut self.serve_task => {
                if let Some(t) = &self.round_task {
                    t.abort();
                }
                self.watch_task.abort();
                if let Some(t) = &self.ha_task {
                    t.abort();
                }
                match r {
                    Ok(Ok(())) => Err(ClusterError::Serve("the server stopped unexpectedly".into())),
                    Ok(Err(e)) => Err(ClusterError::Serve(e.to_string())),
                    Err(e) => Err(ClusterError::Serve(e.to_string())),
                }
            }
            _ = shutdown => {
                self.shutdown().await;
                Ok(())
            }
        }
    }

    /// Stops planning, lets in-flight requests finish (up to 5 s), stops.
    pub async fn shutdown(self) {
        if let Some(t) = &self.round_task {
            self.shared.round_loop.store(LOOP_STOPPED, Ordering::SeqCst);
            t.abort();
        }
        self.watch_task.abort();
        if let Some(t) = &self.ha_task {
            t.abort();
        }
        self.handle.graceful_shutdown(Some(Duration::from_secs(5)));
        let _ = self.serve_task.await;
    }
}

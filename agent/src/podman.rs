//! [`ContainerRuntime`] for Podman, through its Docker-compatible API
//! (`podman system service`, default socket `/run/podman/podman.sock`).
//!
//! Every call goes through the Docker adapter ([`DockerRuntime`]): list,
//! inspect, stats, stop, start and events answer the same way on Podman.
//! What may be missing is resizing a running container: Podman 4.3 (Debian
//! 12) has no compat `POST /containers/{id}/update` route (it answers 404
//! with a plain `Not Found` body), and its libpod update route changes the
//! cgroup without `inspect` reporting the new limit. So at start
//! [`PodmanRuntime::connect`] reads `/version` (engine name and version) and
//! probes the update route with a container id that does not exist: an engine
//! with the route answers 404 with a JSON `message` ("no such container"),
//! one without answers a plain `Not Found` (or 405). Without the route
//! [`ContainerRuntime::can_update`] is false, [`ContainerRuntime::update`]
//! fails without calling the engine, and the agent runs in recommend mode.
//!
//! Podman 4.3 also never says that the kernel OOM-killed a container (no
//! `oom` event, `State.OOMKilled` false, exit code 137). [`PodmanRuntime`]
//! infers it in `inspect`: a container with a memory limit that exited on
//! SIGKILL (137), and that this adapter did not stop, counts as OOM-killed
//! (see [`infer_oom_kill`]). A kill of another process of a container
//! that keeps running (a worker, a child of a shell) leaves no exit code:
//! `stats` reads the cgroup's OOM-kill counter (v1 `memory.oom_control`,
//! v2 `memory.events`, `oom_kill`) and each rise since the previous sample
//! becomes an `Oom` event on the adapter's event stream, as Docker's `oom`
//! event would.
//! See `agent/PODMAN.md` for what else differs from Docker.

use crate::cgroup::{Layout, MemNow, MemUsage};
use crate::config::{Actuation, AgentConfig};
use crate::docker::{raw_request, DockerRuntime};
use crate::runtime::{
    ContainerInfo, ContainerRuntime, ContainerState, ContainerStats, ContainerSummary, EngineInfo,
    HostInfo, ResourceUpdate, RuntimeError, RuntimeEvent,
};
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Default socket of `podman system service` run as root.
pub const DEFAULT_SOCKET: &str = "/run/podman/podman.sock";

/// Timeout of each start-up probe (seconds).
const PROBE_TIMEOUT_S: u64 = 10;
/// Largest probe answer read (bytes).
const MAX_PROBE_BYTES: usize = 1 << 16;

/// What the start-up probe of the compat update route found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateRoute {
    /// The route exists (a missing container gets a JSON error).
    Present,
    /// The route does not exist (plain `Not Found`, or 405).
    Missing,
    /// The engine did not answer the probe; resizing is not attempted.
    Unprobed,
    /// An answer the probe does not understand; resizing is not attempted.
    Unexpected,
}

impl UpdateRoute {
    pub fn as_str(&self) -> &'static str {
        match self {
            UpdateRoute::Present => "present",
            UpdateRoute::Missing => "missing",
            UpdateRoute::Unprobed => "unprobed",
            UpdateRoute::Unexpected => "unexpected",
        }
    }

    /// Classifies the answer to `POST /containers/<missing id>/update`.
    pub fn classify(status: u16, body: &[u8]) -> UpdateRoute {
        #[derive(Deserialize)]
        struct ApiError {
            message: String,
        }
        match status {
            404 => match serde_json::from_slice::<ApiError>(body) {
                Ok(e) if !e.message.is_empty() => UpdateRoute::Present,
                _ => UpdateRoute::Missing,
            },
            405 => UpdateRoute::Missing,
            _ => UpdateRoute::Unexpected,
        }
    }
}

/// The engine's name and version from a `/version` answer: the first
/// component named `... Engine` (Podman: `Podman Engine`; Docker: `Engine`),
/// else the top-level `Version`.
pub fn engine_from_version(body: &[u8]) -> Option<EngineInfo> {
    #[derive(Deserialize)]
    struct Component {
        #[serde(rename = "Name", default)]
        name: String,
        #[serde(rename = "Version", default)]
        version: String,
    }
    #[derive(Deserialize)]
    struct Version {
        #[serde(rename = "Components", default)]
        components: Vec<Component>,
        #[serde(rename = "Version", default)]
        version: String,
    }
    let v: Version = serde_json::from_slice(body).ok()?;
    if let Some(c) = v.components.iter().find(|c| c.name.ends_with("Engine")) {
        return Some(EngineInfo {
            name: c.name.clone(),
            version: c.version.clone(),
        });
    }
    (!v.version.is_empty()).then(|| EngineInfo {
        name: "unknown".to_string(),
        version: v.version,
    })
}

/// Podman through the Docker adapter, with the capabilities probed at start.
#[derive(Debug)]
pub struct PodmanRuntime {
    inner: DockerRuntime,
    socket: PathBuf,
    engine: Option<EngineInfo>,
    update_route: UpdateRoute,
    /// Containers this adapter was asked to stop, and when (Unix seconds):
    /// their SIGKILL exit is not an OOM kill.
    stopped_s: Mutex<HashMap<String, f64>>,
    /// Each sampled container's cgroup OOM-kill counter at its last sample.
    oom_kills: Mutex<HashMap<String, u64>>,
    /// OOM kills found in the counters, merged into [`Self::events`].
    oom_tx: tokio::sync::broadcast::Sender<RuntimeEvent>,
}

/// Containers whose OOM-kill counter is remembered before the map is reset
/// (the next sample of each then only sets its baseline).
const MAX_OOM_COUNTERS: usize = 4096;
/// Most OOM events sent for one rise of one container's counter.
const MAX_OOM_EVENTS_PER_SAMPLE: u64 = 16;

/// Stops remembered before old ones are forgotten.
const MAX_STOPPED: usize = 4096;

/// Exit code of a process killed by SIGKILL (128 + 9).
const SIGKILL_EXIT: i64 = 137;

/// Podman 4.3 reports an OOM kill only as exit code 137: a container with
/// a memory limit that exited on SIGKILL, `stopped_at_s` (when the agent
/// stopped it, if it did) not before its exit, counts as OOM-killed. An
/// operator's `podman kill -s KILL` of a memory-limited container counts
/// too: the agent then only holds its memory higher for a while, the safe
/// direction.
pub fn infer_oom_kill(info: &ContainerInfo, stopped_at_s: Option<f64>) -> bool {
    let limited = info.limits.mem_bytes.is_some_and(|m| m > 0);
    let exited = info.state != ContainerState::Running && info.exit_code == Some(SIGKILL_EXIT);
    let ours = match (stopped_at_s, info.finished_s) {
        (Some(stop), Some(fin)) => fin + 1.0 >= stop,
        (Some(_), None) => true,
        (None, _) => false,
    };
    limited && exited && !ours
}

impl PodmanRuntime {
    /// A client for `podman system service` at `socket`; reads `/version`
    /// and probes the update route. A missing socket file is an error (as
    /// for Docker); an engine that does not answer is not (the agent retries every call), but its update route counts
    /// as [`UpdateRoute::Unprobed`]: no resizing until the agent restarts.
    pub async fn connect(socket: impl AsRef<Path>) -> Result<Self, RuntimeError> {
        let socket = socket.as_ref().to_path_buf();
        let inner = DockerRuntime::new(&socket)?.with_cgroup_layout(Layout::Podman);
        let engine = match raw_request(
            &socket,
            "GET",
            "/version",
            None,
            MAX_PROBE_BYTES,
            PROBE_TIMEOUT_S,
        )
        .await
        {
            Ok((200, body)) => engine_from_version(&body),
            Ok((status, _)) => {
                tracing::warn!(status, socket = %socket.display(), "podman /version failed");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, socket = %socket.display(), "podman does not answer /version");
                None
            }
        };
        let probe_id = format!(
            "tailor-update-probe-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        let update_route = match raw_request(
            &socket,
            "POST",
            &format!("/containers/{probe_id}/update"),
            Some("{}"),
            MAX_PROBE_BYTES,
            PROBE_TIMEOUT_S,
        )
        .await
        {
            Ok((status, body)) => {
                let r = UpdateRoute::classify(status, &body);
                if r == UpdateRoute::Unexpected {
                    tracing::warn!(
                        status,
                        body = %String::from_utf8_lossy(&body[..body.len().min(200)]),
                        "unexpected answer to the update-route probe"
                    );
                }
                r
            }
            Err(e) => {
                tracing::warn!(error = %e, "podman does not answer the update-route probe");
                UpdateRoute::Unprobed
            }
        };
        let (name, version) = engine
            .as_ref()
            .map(|e| (e.name.as_str(), e.version.as_str()))
            .unwrap_or(("unknown", "unknown"));
        tracing::info!(
            engine = name,
            engine_version = version,
            update_route = update_route.as_str(),
            socket = %socket.display(),
            "podman capabilities probed"
        );
        if !name.starts_with("Podman") && engine.is_some() {
            tracing::warn!(
                engine = name,
                "[runtime] kind = \"podman\" but the engine is not Podman"
            );
        }
        Ok(Self {
            inner,
            socket,
            engine,
            update_route,
            stopped_s: Mutex::new(HashMap::new()),
            oom_kills: Mutex::new(HashMap::new()),
            oom_tx: tokio::sync::broadcast::channel(1024).0,
        })
    }

    /// Compares container `id`'s cgroup OOM-kill counter with its last
    /// sample and sends one `Oom` event per kill since (at most
    /// [`MAX_OOM_EVENTS_PER_SAMPLE`]). The first sample of a container only
    /// sets the baseline: kills from before the agent saw it are unknown.
    fn check_oom_counter(&self, id: &str, count: u64) {
        let Ok(mut m) = self.oom_kills.lock() else {
            return;
        };
        if m.len() >= MAX_OOM_COUNTERS && !m.contains_key(id) {
            m.clear();
        }
        let before = m.insert(id.to_string(), count);
        let Some(before) = before else {
            return;
        };
        let new = count.saturating_sub(before).min(MAX_OOM_EVENTS_PER_SAMPLE);
        if new == 0 {
            return;
        }
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        tracing::info!(
            container = %id,
            oom_kills = new,
            "podman: the cgroup's OOM-kill counter rose while the container runs"
        );
        for _ in 0..new {
            // no receiver (no event stream open): nothing to tell
            let _ = self.oom_tx.send(RuntimeEvent::Oom {
                id: id.to_string(),
                at_s: Some(now_s),
            });
        }
    }

    /// What the start-up probe found.
    pub fn update_route(&self) -> UpdateRoute {
        self.update_route
    }

    /// The socket in use.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

#[async_trait::async_trait]
impl ContainerRuntime for PodmanRuntime {
    async fn host_info(&self) -> Result<HostInfo, RuntimeError> {
        self.inner.host_info().await
    }

    async fn list(
        &self,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<ContainerSummary>, RuntimeError> {
        self.inner.list(labels).await
    }

    async fn inspect(&self, id: &str) -> Result<ContainerInfo, RuntimeError> {
        let mut info = self.inner.inspect(id).await?;
        let stopped_at_s = self
            .stopped_s
            .lock()
            .ok()
            .and_then(|m| m.get(id).or_else(|| m.get(&info.id)).copied());
        if !info.oom_killed && infer_oom_kill(&info, stopped_at_s) {
            tracing::info!(
                container = %info.name,
                exit_code = SIGKILL_EXIT,
                "podman: SIGKILL exit of a memory-limited container counted as an OOM kill"
            );
            info.oom_killed = true;
        }
        Ok(info)
    }

    /// From the container's cgroup where the agent can read it (the
    /// inner adapter, [`Layout::Podman`]): Podman 4.3's compat stats report
    /// zero throttling and no memory breakdown nor peak, which the cgroup
    /// has. Elsewhere Podman's answer, timed by the local clock when it
    /// carries no `read`.
    async fn stats(&self, id: &str) -> Result<ContainerStats, RuntimeError> {
        let mut s = self.inner.stats(id).await?;
        if s.read_s.is_none() {
            s.read_s = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_secs_f64());
        }
        if let Some(count) = self.inner.cgroups().oom_kills(id) {
            self.check_oom_counter(id, count);
        }
        Ok(s)
    }

    async fn update(&self, id: &str, update: &ResourceUpdate) -> Result<(), RuntimeError> {
        if self.update_route != UpdateRoute::Present {
            return Err(RuntimeError::Api {
                status: 501,
                message: format!(
                    "cannot resize {id}: this Podman has no container update route (probe: {})",
                    self.update_route.as_str()
                ),
            });
        }
        self.inner.update(id, update).await
    }

    async fn stop(&self, id: &str, grace_s: u32) -> Result<(), RuntimeError> {
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        if let Ok(mut m) = self.stopped_s.lock() {
            if m.len() >= MAX_STOPPED {
                // containers removed since: forget stops older than a day
                m.retain(|_, &mut t| now_s - t < 86_400.0);
            }
            m.insert(id.to_string(), now_s);
        }
        self.inner.stop(id, grace_s).await
    }

    async fn start(&self, id: &str) -> Result<(), RuntimeError> {
        if let Ok(mut m) = self.stopped_s.lock() {
            m.remove(id);
        }
        self.inner.start(id).await
    }

    /// The engine's events, with the OOM kills that `stats` found in the
    /// cgroup counters merged in. Ends when the engine's stream ends (the
    /// agent then reconnects).
    fn events(&self) -> BoxStream<'static, Result<RuntimeEvent, RuntimeError>> {
        use futures_util::{future, stream, StreamExt};
        use tokio::sync::broadcast::error::RecvError;
        let engine = self
            .inner
            .events()
            .map(Some)
            .chain(stream::once(future::ready(None)));
        let ooms = stream::unfold(self.oom_tx.subscribe(), |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(ev) => return Some((Some(Ok(ev)), rx)),
                    Err(RecvError::Lagged(n)) => {
                        tracing::warn!(lost = n, "podman: OOM events dropped (receiver lagged)");
                    }
                    Err(RecvError::Closed) => return None,
                }
            }
        });
        stream::select(engine, ooms)
            .take_while(|x| future::ready(x.is_some()))
            .filter_map(future::ready)
            .boxed()
    }

    fn can_update(&self) -> bool {
        self.update_route == UpdateRoute::Present
    }

    fn engine(&self) -> Option<EngineInfo> {
        self.engine.clone()
    }

    fn mem_now(&self, id: &str) -> Option<MemNow> {
        self.inner.mem_now(id)
    }

    fn mem_usage(&self, id: &str) -> Option<MemUsage> {
        self.inner.mem_usage(id)
    }
}

/// With `actuation = "shape"` on a runtime that cannot resize containers,
/// switches `cfg` to recommend mode and says so (warning with the engine,
/// its version and the runtime kind). Returns true when it switched.
pub fn force_recommend<R: ContainerRuntime + ?Sized>(cfg: &mut AgentConfig, runtime: &R) -> bool {
    if cfg.actuation != Actuation::Shape || runtime.can_update() {
        return false;
    }
    let engine = runtime.engine();
    let (name, version) = engine
        .as_ref()
        .map(|e| (e.name.as_str(), e.version.as_str()))
        .unwrap_or(("unknown", "unknown"));
    tracing::warn!(
        runtime = cfg.runtime.kind.as_str(),
        engine = name,
        engine_version = version,
        configured = "shape",
        effective = "recommend",
        "the container runtime cannot resize running containers: running in recommend mode (plans are computed, logged and served; no limit is changed, nothing is evicted)"
    );
    cfg.actuation = Actuation::Recommend;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_rise_of_the_oom_counter_is_one_event_after_the_baseline() {
        // no engine is needed for this logic: a file that is not a socket
        let not_a_socket = tempfile::NamedTempFile::new().expect("temp file");
        let rt = PodmanRuntime::connect(not_a_socket.path())
            .await
            .expect("no connection at construction");
        let mut rx = rt.oom_tx.subscribe();
        rt.check_oom_counter("c1", 6); // kills before the agent saw it
        rt.check_oom_counter("c1", 6);
        assert!(rx.try_recv().is_err(), "the baseline is no kill");
        rt.check_oom_counter("c1", 8);
        for _ in 0..2 {
            match rx.try_recv() {
                Ok(RuntimeEvent::Oom { id, at_s }) => {
                    assert_eq!(id, "c1");
                    assert!(at_s.is_some());
                }
                other => panic!("expected an Oom event, got {other:?}"),
            }
        }
        assert!(rx.try_recv().is_err(), "two kills, two events");
        rt.check_oom_counter("c1", 0); // a new cgroup: a new baseline
        rt.check_oom_counter("c1", 1000);
        let mut n = 0;
        while rx.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n as u64, MAX_OOM_EVENTS_PER_SAMPLE, "bounded per sample");
    }

    #[test]
    fn sigkill_exit_of_a_memory_limited_container_is_an_oom_kill_unless_we_stopped_it() {
        let info = |state: ContainerState, exit: Option<i64>, mem: Option<u64>| ContainerInfo {
            id: "c1".into(),
            name: "web".into(),
            labels: BTreeMap::new(),
            state,
            started_s: Some(100.0),
            limits: crate::runtime::Limits {
                mem_bytes: mem,
                cpu: crate::runtime::CpuLimit::Unlimited,
                mem_swap_bytes: None,
                mem_reservation_bytes: None,
            },
            oom_killed: false,
            finished_s: Some(200.0),
            exit_code: exit,
            restarts_alone: false,
        };
        let killed = info(ContainerState::Exited, Some(137), Some(64 << 20));
        assert!(infer_oom_kill(&killed, None));
        // stopped by the agent before it exited: not an OOM kill
        assert!(!infer_oom_kill(&killed, Some(199.5)));
        assert!(!infer_oom_kill(&killed, Some(150.0)));
        // a stop after it had exited: that exit was the kernel's
        assert!(infer_oom_kill(&killed, Some(500.0)));
        assert!(!infer_oom_kill(
            &info(ContainerState::Exited, Some(0), Some(64 << 20)),
            None
        ));
        assert!(!infer_oom_kill(
            &info(ContainerState::Exited, Some(137), None),
            None
        ));
        assert!(!infer_oom_kill(
            &info(ContainerState::Running, Some(137), Some(64 << 20)),
            None
        ));
    }

    #[test]
    fn update_route_probe_answers() {
        // Podman 4.3.1 (measured): the route does not exist
        assert_eq!(
            UpdateRoute::classify(404, b"Not Found"),
            UpdateRoute::Missing
        );
        // Docker 20.10 (measured): the route exists, the container does not
        assert_eq!(
            UpdateRoute::classify(404, br#"{"message":"No such container: x"}"#),
            UpdateRoute::Present
        );
        // libpod-style error body of a Podman with the route
        assert_eq!(
            UpdateRoute::classify(
                404,
                br#"{"cause":"no such container","message":"no container with name or ID \"x\" found","response":404}"#
            ),
            UpdateRoute::Present
        );
        assert_eq!(UpdateRoute::classify(405, b""), UpdateRoute::Missing);
        assert_eq!(
            UpdateRoute::classify(500, b"{\"message\":\"x\"}"),
            UpdateRoute::Unexpected
        );
        assert_eq!(UpdateRoute::classify(404, b"{}"), UpdateRoute::Missing);
    }

    #[test]
    fn engine_names() {
        let podman = br#"{"Components":[{"Name":"Podman Engine","Version":"4.3.1"},{"Name":"Conmon","Version":"2.1.6"}],"Version":"4.3.1","ApiVersion":"1.41"}"#;
        assert_eq!(
            engine_from_version(podman),
            Some(EngineInfo {
                name: "Podman Engine".into(),
                version: "4.3.1".into()
            })
        );
        let docker =
            br#"{"Components":[{"Name":"Engine","Version":"20.10.24"}],"Version":"20.10.24"}"#;
        assert_eq!(
            engine_from_version(docker).map(|e| e.name),
            Some("Engine".to_string())
        );
        assert_eq!(
            engine_from_version(br#"{"Version":"1.2"}"#).map(|e| e.name),
            Some("unknown".to_string())
        );
        assert_eq!(engine_from_version(b"garbage"), None);
        assert_eq!(engine_from_version(b"{}"), None);
    }

    #[test]
    fn podman_config() {
        let c = crate::config::check_toml("[runtime]\nkind = \"podman\"\n").expect("valid");
        assert_eq!(c.runtime.kind, crate::config::RuntimeKind::Podman);
        assert_eq!(c.runtime_socket(), PathBuf::from(DEFAULT_SOCKET));
        let d = crate::config::check_toml("docker_socket = \"/x.sock\"\n").expect("valid");
        assert_eq!(d.runtime_socket(), PathBuf::from("/x.sock"));
        let s = crate::config::check_toml("[runtime]\nkind = \"podman\"\nsocket = \"/p.sock\"\n")
            .expect("valid");
        assert_eq!(s.runtime_socket(), PathBuf::from("/p.sock"));
        let err = crate::config::check_toml("[runtime]\nsocket = \"\"\n").expect_err("empty");
        assert!(err.to_string().contains("runtime.socket"), "{err}");
        let err = crate::config::check_toml("[runtime]\nkind = \"cri-o\"\n").expect_err("kind");
        assert!(err.to_string().contains("runtime"), "{err}");
    }

    #[tokio::test]
    async fn shape_falls_back_to_recommend_without_update() {
        // a file that is not a socket: the client is built, the probes fail
        let not_a_socket = tempfile::NamedTempFile::new().expect("temp file");
        let rt = PodmanRuntime::connect(not_a_socket.path())
            .await
            .expect("constructed");
        let shape = || AgentConfig {
            actuation: Actuation::Shape,
            ..AgentConfig::default()
        };
        let mut cfg = shape();
        assert!(force_recommend(&mut cfg, &rt));
        assert_eq!(cfg.actuation, Actuation::Recommend);
        // already recommending: nothing to say
        assert!(!force_recommend(&mut cfg, &rt));
        // a runtime that can update keeps shaping
        let fake = crate::fake::FakeRuntime::new(2, 1 << 30);
        let mut cfg = shape();
        assert!(!force_recommend(&mut cfg, &fake));
        assert_eq!(cfg.actuation, Actuation::Shape);
    }

    #[tokio::test]
    async fn unreachable_engine_cannot_update() {
        let not_a_socket = tempfile::NamedTempFile::new().expect("temp file");
        let rt = PodmanRuntime::connect(not_a_socket.path())
            .await
            .expect("no connection at construction");
        assert_eq!(rt.update_route(), UpdateRoute::Unprobed);
        assert!(!rt.can_update());
        assert_eq!(rt.engine(), None);
        let err = rt
            .update("x", &ResourceUpdate::default())
            .await
            .expect_err("no update without the route");
        assert!(
            matches!(err, RuntimeError::Api { status: 501, .. }),
            "{err}"
        );
    }
}

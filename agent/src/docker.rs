//! [`ContainerRuntime`] for Docker, with bollard.
//!
//! * API version negotiation: the client starts at bollard's default version
//!   and negotiates down to the daemon's (Debian's docker.io 20.10 speaks
//!   API 1.41, current engines 1.4x/1.5x). Until a negotiation succeeds
//!   (daemon down at start, restarting) every call first retries it.
//! * Stats are read from the container's cgroup files where the agent can
//!   read them ([`crate::cgroup::Cgroups::stats`]: the same counters, at once).
//!   Docker answers a stats call only at its collector's next tick, up to
//!   1 s later (measured: 0.92-0.99 s a call on Docker 20.10), so a round
//!   sampled through it, and the early round the memory watch asks for,
//!   came a second late. Elsewhere (an agent without the host's
//!   `/sys/fs/cgroup`, another cgroup layout) they are read with one raw
//!   `GET /containers/{id}/stats?stream=false&one-shot=true` over the unix
//!   socket and decoded leniently: bollard's typed memory stats reject
//!   cgroup fields it does not know (newer kernels add some), and the agent
//!   only needs the CPU counter, memory usage and inactive file cache
//!   ([`crate::docker_stats`]).

use crate::runtime::{
    mem_limit, parse_rfc3339_s, ContainerInfo, ContainerRuntime, ContainerState, ContainerStats,
    ContainerSummary, CpuLimit, HostInfo, Limits, ResourceUpdate, RuntimeError, RuntimeEvent,
    UNLIMITED_MEM_BYTES,
};
use bollard::container::{
    InspectContainerOptions, ListContainersOptions, StartContainerOptions, StopContainerOptions,
    UpdateContainerOptions,
};
use bollard::models::RestartPolicyNameEnum;
use bollard::system::EventsOptions;
use bollard::Docker;
use futures_util::stream::{BoxStream, StreamExt};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cgroup::{Cgroups, Layout, MemNow, MemUsage};
pub use crate::docker_stats::decode_stats;
use crate::docker_stats::parse_http_response;

/// Default Docker socket.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// Per-request timeout of the client (seconds).
const REQUEST_TIMEOUT_S: u64 = 30;
/// Largest stats answer read (bytes).
const MAX_STATS_BYTES: usize = 1 << 20;

/// Docker through bollard (unix socket).
pub struct DockerRuntime {
    socket: PathBuf,
    client: Mutex<Docker>,
    negotiated: AtomicBool,
    api_version: Mutex<String>,
    /// Where the engine puts a container's cgroup (stats and the memory
    /// watch read it directly).
    cgroup: Cgroups,
}

impl std::fmt::Debug for DockerRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerRuntime")
            .field("socket", &self.socket)
            .finish()
    }
}

impl DockerRuntime {
    /// A client for the daemon at `socket`. Does not touch the daemon: the
    /// first call connects and negotiates the API version.
    pub fn new(socket: impl AsRef<Path>) -> Result<Self, RuntimeError> {
        let socket = socket.as_ref().to_path_buf();
        let path = socket.to_string_lossy().to_string();
        let client =
            Docker::connect_with_socket(&path, REQUEST_TIMEOUT_S, bollard::API_DEFAULT_VERSION)
                .map_err(map_err)?;
        Ok(Self {
            socket,
            client: Mutex::new(client),
            negotiated: AtomicBool::new(false),
            api_version: Mutex::new(String::new()),
            cgroup: Cgroups::new(Layout::Docker),
        })
    }

    /// The same client for an engine that puts containers' cgroups
    /// elsewhere (Podman through its Docker-compatible API).
    pub fn with_cgroup_layout(mut self, layout: Layout) -> Self {
        self.cgroup = Cgroups::new(layout);
        self
    }

    /// Its way to the containers' cgroup files.
    pub fn cgroups(&self) -> &Cgroups {
        &self.cgroup
    }

    /// Container `id`'s stats as the engine's API answers them (at its
    /// collector's next tick), never from the cgroup: what
    /// [`ContainerRuntime::stats`] falls back to.
    pub async fn api_stats(&self, id: &str) -> Result<ContainerStats, RuntimeError> {
        if !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        {
            return Err(RuntimeError::NotFound(id.to_string()));
        }
        let (status, body) = self
            .raw_get(&format!(
                "/containers/{id}/stats?stream=false&one-shot=true"
            ))
            .await?;
        match status {
            200 => decode_stats(&body),
            404 => Err(RuntimeError::NotFound(id.to_string())),
            s => Err(RuntimeError::Api {
                status: s,
                message: String::from_utf8_lossy(&body).trim().to_string(),
            }),
        }
    }

    /// The API version in use after negotiation (empty before).
    pub fn api_version(&self) -> String {
        self.api_version
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
    }

    fn docker(&self) -> Docker {
        match self.client.lock() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The negotiated client (negotiates first when needed).
    async fn client(&self) -> Result<Docker, RuntimeError> {
        if self.negotiated.load(Ordering::Acquire) {
            return Ok(self.docker());
        }
        let negotiated = self.docker().negotiate_version().await.map_err(map_err)?;
        let version = negotiated.client_version().to_string();
        tracing::info!(api_version = %version, socket = %self.socket.display(), "negotiated Docker API version");
        if let Ok(mut c) = self.client.lock() {
            *c = negotiated.clone();
        }
        if let Ok(mut v) = self.api_version.lock() {
            *v = version;
        }
        self.negotiated.store(true, Ordering::Release);
        Ok(negotiated)
    }

    /// Raw GET over the unix socket (HTTP/1.0: the daemon answers and closes).
    async fn raw_get(&self, path_and_query: &str) -> Result<(u16, Vec<u8>), RuntimeError> {
        raw_request(
            &self.socket,
            "GET",
            path_and_query,
            None,
            MAX_STATS_BYTES,
            REQUEST_TIMEOUT_S,
        )
        .await
    }
}

fn map_err(e: bollard::errors::Error) -> RuntimeError {
    use bollard::errors::Error as E;
    match e {
        E::DockerResponseServerError {
            status_code: 404,
            message,
        } => RuntimeError::NotFound(message),
        E::DockerResponseServerError {
            status_code,
            message,
        } => RuntimeError::Api {
            status: status_code,
            message,
        },
        E::JsonDataError { message, .. } => RuntimeError::Decode(message),
        E::JsonSerdeError { err } => RuntimeError::Decode(err.to_string()),
        E::APIVersionParseError {} => RuntimeError::Decode("cannot parse API version".into()),
        other => RuntimeError::Unavailable(other.to_string()),
    }
}

fn map_not_found(id: &str, e: RuntimeError) -> RuntimeError {
    match e {
        RuntimeError::NotFound(_) => RuntimeError::NotFound(id.to_string()),
        other => other,
    }
}

fn container_name(names: &[String], id: &str) -> String {
    names
        .first()
        .map(|n| n.trim_start_matches('/').to_string())
        .unwrap_or_else(|| id.chars().take(12).collect())
}

#[async_trait::async_trait]
impl ContainerRuntime for DockerRuntime {
    async fn host_info(&self) -> Result<HostInfo, RuntimeError> {
        let info = self.client().await?.info().await.map_err(map_err)?;
        Ok(HostInfo {
            name: info.name.unwrap_or_default(),
            ncpu: info.ncpu.and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
            mem_total_bytes: info
                .mem_total
                .and_then(|m| u64::try_from(m).ok())
                .unwrap_or(0),
            cgroup_version: info.cgroup_version.map(|v| v.to_string()),
            server_version: info.server_version.unwrap_or_default(),
        })
    }

    async fn list(
        &self,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<ContainerSummary>, RuntimeError> {
        let mut filters: HashMap<String, Vec<String>> = HashMap::new();
        if !labels.is_empty() {
            filters.insert(
                "label".into(),
                labels.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            );
        }
        let opts = ListContainersOptions::<String> {
            all: true,
            filters,
            ..Default::default()
        };
        let list = self
            .client()
            .await?
            .list_containers(Some(opts))
            .await
            .map_err(map_err)?;
        Ok(list
            .into_iter()
            .filter_map(|c| {
                let id = c.id?;
                Some(ContainerSummary {
                    name: container_name(&c.names.unwrap_or_default(), &id),
                    labels: c.labels.unwrap_or_default().into_iter().collect(),
                    state: ContainerState::parse(c.state.as_deref().unwrap_or("")),
                    id,
                })
            })
            .collect())
    }

    async fn inspect(&self, id: &str) -> Result<ContainerInfo, RuntimeError> {
        let c = self
            .client()
            .await?
            .inspect_container(id, None::<InspectContainerOptions>)
            .await
            .map_err(|e| map_not_found(id, map_err(e)))?;
        let full_id = c.id.clone().unwrap_or_else(|| id.to_string());
        let state = c.state.as_ref();
        let status = state
            .and_then(|s| s.status.map(|st| st.to_string()))
            .unwrap_or_default();
        let started_s = state
            .and_then(|s| s.started_at.as_deref())
            .and_then(parse_rfc3339_s);
        let hc = c.host_config.as_ref();
        let mem = hc.and_then(|h| h.memory).and_then(mem_limit);
        let nano = hc.and_then(|h| h.nano_cpus).unwrap_or(0);
        let quota = hc.and_then(|h| h.cpu_quota).unwrap_or(0);
        let period = hc
            .and_then(|h| h.cpu_period)
            .filter(|&p| p > 0)
            .unwrap_or(100_000);
        let cpu = if nano > 0 {
            CpuLimit::Nano { nano_cpus: nano }
        } else if quota > 0 {
            CpuLimit::Quota {
                quota_us: quota,
                period_us: period,
            }
        } else {
            CpuLimit::Unlimited
        };
        let name = c
            .name
            .as_deref()
            .map(|n| n.trim_start_matches('/').to_string())
            .unwrap_or_default();
        Ok(ContainerInfo {
            id: full_id,
            name,
            labels: c
                .config
                .and_then(|cfg| cfg.labels)
                .unwrap_or_default()
                .into_iter()
                .collect(),
            state: ContainerState::parse(&status),
            started_s,
            limits: Limits {
                mem_bytes: mem,
                cpu,
                mem_swap_bytes: hc.and_then(|h| h.memory_swap).filter(|&s| s != 0),
                mem_reservation_bytes: hc.and_then(|h| h.memory_reservation).and_then(mem_limit),
            },
            oom_killed: state.and_then(|s| s.oom_killed).unwrap_or(false),
            finished_s: state
                .and_then(|s| s.finished_at.as_deref())
                .and_then(parse_rfc3339_s),
            exit_code: state.and_then(|s| s.exit_code),
            restarts_alone: hc.and_then(|h| h.restart_policy.as_ref()).is_some_and(|p| {
                restarts_after_a_kill(p.name, p.maximum_retry_count, c.restart_count)
            }),
        })
    }

    /// From the container's cgroup when the agent can read it (no wait
    /// for the collector's tick; sysfs files, read in microseconds), else
    /// from the API ([`Self::api_stats`]).
    async fn stats(&self, id: &str) -> Result<ContainerStats, RuntimeError> {
        match self.cgroup.stats(id) {
            Some(s) => Ok(s),
            None => self.api_stats(id).await,
        }
    }

    async fn update(&self, id: &str, update: &ResourceUpdate) -> Result<(), RuntimeError> {
        let steps = update_steps(update)?;
        let client = self.client().await?;
        for opts in steps {
            client
                .update_container(id, opts)
                .await
                .map_err(|e| map_not_found(id, map_err(e)))?;
        }
        Ok(())
    }

    async fn stop(&self, id: &str, grace_s: u32) -> Result<(), RuntimeError> {
        let opts = StopContainerOptions {
            t: i64::from(grace_s),
        };
        match self.client().await?.stop_container(id, Some(opts)).await {
            Ok(()) => Ok(()),
            // 304: already stopped
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 304, ..
            }) => Ok(()),
            Err(e) => Err(map_not_found(id, map_err(e))),
        }
    }

    async fn start(&self, id: &str) -> Result<(), RuntimeError> {
        match self
            .client()
            .await?
            .start_container(id, None::<StartContainerOptions<String>>)
            .await
        {
            Ok(()) => Ok(()),
            // 304: already started
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 304, ..
            }) => Ok(()),
            Err(e) => Err(map_not_found(id, map_err(e))),
        }
    }

    fn mem_now(&self, id: &str) -> Option<MemNow> {
        self.cgroup.mem_now(id)
    }

    fn mem_usage(&self, id: &str) -> Option<MemUsage> {
        self.cgroup.mem_usage(id)
    }

    fn events(&self) -> BoxStream<'static, Result<RuntimeEvent, RuntimeError>> {
        let docker = self.docker();
        let mut filters: HashMap<String, Vec<String>> = HashMap::new();
        filters.insert("type".into(), vec!["container".into()]);
        filters.insert(
            "event".into(),
            vec!["oom".into(), "die".into(), "start".into(), "destroy".into()],
        );
        let opts = EventsOptions::<String> {
            filters,
            ..Default::default()
        };
        docker
            .events(Some(opts))
            .filter_map(|msg| async move {
                match msg {
                    Err(e) => Some(Err(map_err(e))),
                    Ok(m) => {
                        let actor = m.actor?;
                        let id = actor.id?;
                        let attrs = actor.attributes.unwrap_or_default();
                        let at_s = m
                            .time_nano
                            .map(|ns| ns as f64 / 1e9)
                            .or(m.time.map(|s| s as f64));
                        match m.action.as_deref()? {
                            "oom" => Some(Ok(RuntimeEvent::Oom { id, at_s })),
                            "die" => Some(Ok(RuntimeEvent::Die {
                                id,
                                exit_code: attrs.get("exitCode").and_then(|c| c.parse().ok()),
                            })),
                            "start" => Some(Ok(RuntimeEvent::Start { id })),
                            "destroy" => Some(Ok(RuntimeEvent::Destroy { id })),
                            _ => None,
                        }
                    }
                }
            })
            .boxed()
    }
}

/// The `POST /containers/{id}/update` bodies for one [`ResourceUpdate`],
/// in order.
///
/// Memory is always sent with its swap limit (memory + swap, Docker's
/// `MemorySwap`): the swap limit asked for, else the memory limit (no
/// swap). runc then writes the two cgroup files in the order the kernel
/// accepts (on cgroup v1 `memory.limit_in_bytes` may never exceed
/// `memory.memsw.limit_in_bytes`): the swap limit first when it grows.
/// Unlimited swap (-1) takes two calls: Docker 20.10 / runc 1.1 on cgroup
/// v1 record -1 but leave the cgroup's memsw limit where it was, and write
/// the memory limit first, so raising memory above the current memsw limit
/// (a shrunk container getting back its original `--memory-swap -1`) fails
/// with `memory.limit_in_bytes: invalid argument`. The first call raises the
/// swap limit to the kernel's "no limit" ([`UNLIMITED_MEM_BYTES`]) with the
/// memory limit, the second records -1 (what the container was started
/// with; a stopped container starts with it).
fn update_steps(
    update: &ResourceUpdate,
) -> Result<Vec<UpdateContainerOptions<String>>, RuntimeError> {
    let mut opts = UpdateContainerOptions::<String> {
        ..Default::default()
    };
    let mut unlimited_swap = false;
    if let Some(m) = update.mem_bytes {
        let m =
            i64::try_from(m).map_err(|_| RuntimeError::Decode(format!("memory {m} too large")))?;
        opts.memory = Some(m);
        opts.memory_swap = Some(match update.mem_swap_bytes {
            Some(-1) => {
                unlimited_swap = true;
                (UNLIMITED_MEM_BYTES as i64).max(m)
            }
            Some(s) if s >= m => s,
            _ => m,
        });
    }
    match update.cpu {
        Some(CpuLimit::Nano { nano_cpus }) => opts.nano_cpus = Some(nano_cpus),
        Some(CpuLimit::Quota {
            quota_us,
            period_us,
        }) => {
            opts.cpu_quota = Some(quota_us);
            opts.cpu_period = Some(period_us);
        }
        // no CFS quota (Docker ignores NanoCpus = 0: a NanoCpus limit
        // cannot be lifted)
        Some(CpuLimit::Unlimited) => opts.cpu_quota = Some(-1),
        None => {}
    }
    let mut steps = vec![opts];
    if unlimited_swap {
        steps.push(UpdateContainerOptions::<String> {
            memory: steps[0].memory,
            memory_swap: Some(-1),
            ..Default::default()
        });
    }
    Ok(steps)
}

/// One HTTP/1.0 request over the unix socket (the engine answers and
/// closes), bounded in time (`timeout_s`) and size (`max_bytes`).
pub(crate) async fn raw_request(
    socket: &Path,
    method: &str,
    path: &str,
    json_body: Option<&str>,
    max_bytes: usize,
    timeout_s: u64,
) -> Result<(u16, Vec<u8>), RuntimeError> {
    let fut = async {
        let mut stream = tokio::net::UnixStream::connect(socket)
            .await
            .map_err(|e| RuntimeError::Unavailable(format!("{}: {e}", socket.display())))?;
        let body = json_body.unwrap_or("");
        let mut req =
            format!("{method} {path} HTTP/1.0\r\nHost: localhost\r\nUser-Agent: tailor-agent\r\n");
        if json_body.is_some() {
            req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        req.push_str("\r\n");
        req.push_str(body);
        stream
            .write_all(req.as_bytes())
            .await
            .map_err(|e| RuntimeError::Unavailable(e.to_string()))?;
        let mut buf = Vec::with_capacity(4096);
        let mut chunk = [0u8; 4096];
        loop {
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|e| RuntimeError::Unavailable(e.to_string()))?;
            if n == 0 {
                break;
            }
            if buf.len() + n > max_bytes {
                return Err(RuntimeError::Decode(format!(
                    "answer larger than {max_bytes} bytes"
                )));
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        parse_http_response(&buf)
    };
    tokio::time::timeout(Duration::from_secs(timeout_s), fut)
        .await
        .map_err(|_| RuntimeError::Unavailable(format!("timeout after {timeout_s} s")))?
}

/// Whether Docker's restart policy starts a container again after an OOM
/// kill (exit 137): `always` and `unless-stopped` do; `on-failure:N` does
/// until it has restarted the container N times since its last `docker
/// start` (`RestartCount`; N = 0: no limit), then gives up, as Docker's
/// restart manager does. `no` never does.
fn restarts_after_a_kill(
    policy: Option<RestartPolicyNameEnum>,
    max_retries: Option<i64>,
    restart_count: Option<i64>,
) -> bool {
    match policy {
        Some(RestartPolicyNameEnum::ALWAYS | RestartPolicyNameEnum::UNLESS_STOPPED) => true,
        Some(RestartPolicyNameEnum::ON_FAILURE) => {
            let max = max_retries.unwrap_or(0);
            max <= 0 || restart_count.unwrap_or(0) < max
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// QA D10: `on-failure:N` that has used its N restarts leaves the
    /// container dead, so the agent's cut must be undone by the agent.
    #[test]
    fn on_failure_gives_up_after_its_retries() {
        use RestartPolicyNameEnum::*;
        assert!(restarts_after_a_kill(Some(ALWAYS), None, Some(9)));
        assert!(restarts_after_a_kill(Some(UNLESS_STOPPED), Some(0), None));
        assert!(restarts_after_a_kill(Some(ON_FAILURE), Some(0), Some(50)));
        assert!(restarts_after_a_kill(Some(ON_FAILURE), None, None));
        assert!(restarts_after_a_kill(Some(ON_FAILURE), Some(3), Some(2)));
        assert!(!restarts_after_a_kill(Some(ON_FAILURE), Some(3), Some(3)));
        assert!(!restarts_after_a_kill(Some(NO), None, None));
        assert!(!restarts_after_a_kill(Some(EMPTY), None, None));
        assert!(!restarts_after_a_kill(None, None, None));
    }

    /// H4: unlimited swap takes two calls (the first raises the memory +
    /// swap limit explicitly, so that runc writes it before the memory
    /// limit); any other memory update is one call with the swap limit set
    /// (runc orders the writes itself when both are given).
    #[test]
    fn update_steps_raise_swap_before_memory() {
        let mib = 1i64 << 20;
        let restore = ResourceUpdate {
            mem_bytes: Some(256 << 20),
            cpu: Some(CpuLimit::Quota {
                quota_us: 50_000,
                period_us: 100_000,
            }),
            mem_swap_bytes: Some(-1),
        };
        let steps = update_steps(&restore).expect("steps");
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert_eq!(steps[0].memory, Some(256 * mib));
        assert_eq!(steps[0].memory_swap, Some(UNLIMITED_MEM_BYTES as i64));
        assert_eq!(
            (steps[0].cpu_quota, steps[0].cpu_period),
            (Some(50_000), Some(100_000))
        );
        assert_eq!(steps[1].memory, Some(256 * mib));
        assert_eq!(steps[1].memory_swap, Some(-1));
        assert_eq!((steps[1].cpu_quota, steps[1].nano_cpus), (None, None));
        // a resize: memory and swap together, one call
        let grow = ResourceUpdate {
            mem_bytes: Some(200 << 20),
            ..ResourceUpdate::default()
        };
        let steps = update_steps(&grow).expect("steps");
        assert_eq!(steps.len(), 1);
        assert_eq!(
            (steps[0].memory, steps[0].memory_swap),
            (Some(200 * mib), Some(200 * mib))
        );
        // an explicit swap limit below memory is not sent
        let odd = ResourceUpdate {
            mem_bytes: Some(200 << 20),
            mem_swap_bytes: Some(100 << 20),
            ..ResourceUpdate::default()
        };
        assert_eq!(
            update_steps(&odd).expect("steps")[0].memory_swap,
            Some(200 * mib)
        );
        // no CFS quota: CpuQuota -1 (Docker ignores NanoCpus = 0)
        let lift = ResourceUpdate {
            cpu: Some(CpuLimit::Unlimited),
            ..ResourceUpdate::default()
        };
        let steps = update_steps(&lift).expect("steps");
        assert_eq!(steps.len(), 1);
        assert_eq!(
            (steps[0].cpu_quota, steps[0].nano_cpus, steps[0].memory),
            (Some(-1), None, None)
        );
        assert!(update_steps(&ResourceUpdate {
            mem_bytes: Some(u64::MAX),
            ..ResourceUpdate::default()
        })
        .is_err());
    }
}

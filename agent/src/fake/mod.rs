//! An in-memory [`ContainerRuntime`] for unit tests of the agent's logic
//! (and the overhead bench). Usage is scripted by the test; the fake records
//! every update, stop and start, and can be switched "down" to simulate a
//! daemon restart.

mod logs;

pub use logs::Logs;

use crate::runtime::{
    mem_limit, ContainerInfo, ContainerRuntime, ContainerState, ContainerStats, ContainerSummary,
    CpuLimit, HostInfo, Limits, ResourceUpdate, RuntimeError, RuntimeEvent,
};
use futures_util::stream::{BoxStream, StreamExt};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// One fake container.
#[derive(Clone, Debug)]
pub struct FakeContainer {
    pub info: ContainerInfo,
    pub cpu_total_ns: u64,
    pub mem_usage_bytes: u64,
    pub mem_inactive_file_bytes: u64,
    pub mem_peak_bytes: Option<u64>,
    pub cpu_nr_throttled: Option<u64>,
    pub cpu_throttled_ns: Option<u64>,
    /// The read time its stats report (see [`FakeRuntime::set_read_time`]).
    pub read_s: Option<f64>,
}

/// A call the agent made.
#[derive(Clone, Debug, PartialEq)]
pub enum FakeCall {
    Update(String, ResourceUpdate),
    Stop(String, u32),
    Start(String),
}

#[derive(Debug, Default)]
struct Inner {
    containers: BTreeMap<String, FakeContainer>,
    calls: Vec<FakeCall>,
    down: bool,
    fail_stats_for: Vec<String>,
    fail_updates_for: Vec<String>,
    lose_update_answers_for: Vec<String>,
    now_s: f64,
    /// Events held back by [`FakeRuntime::hold_events`].
    held_events: Option<Vec<RuntimeEvent>>,
    /// [`FakeRuntime::hide_cgroups`]: `mem_now` reads nothing.
    no_cgroups: bool,
}

/// The fake runtime. Cheap to clone (shared state).
#[derive(Clone, Debug)]
pub struct FakeRuntime {
    inner: Arc<Mutex<Inner>>,
    host: HostInfo,
    events: broadcast::Sender<RuntimeEvent>,
}

impl FakeRuntime {
    pub fn new(ncpu: u32, mem_total_bytes: u64) -> Self {
        let (events, _) = broadcast::channel(1024);
        Self {
            inner: Arc::new(Mutex::new(Inner::default())),
            host: HostInfo {
                name: "fake-node".into(),
                ncpu,
                mem_total_bytes,
                cgroup_version: Some("2".into()),
                server_version: "fake".into(),
            },
            events,
        }
    }

    /// Sends an event on the stream, or holds it back (see
    /// [`FakeRuntime::hold_events`]).
    fn send(&self, ev: RuntimeEvent) {
        if let Some(held) = self.lock().held_events.as_mut() {
            held.push(ev);
            return;
        }
        let _ = self.events.send(ev);
    }

    /// Holds back the events sent from now on, as a stream that delivers
    /// late (after the agent drained its events for the round), until
    /// [`FakeRuntime::release_events`].
    pub fn hold_events(&self) {
        let mut g = self.lock();
        if g.held_events.is_none() {
            g.held_events = Some(Vec::new());
        }
    }

    /// Sends the held events, in order, and stops holding them back.
    pub fn release_events(&self) {
        let held = self.lock().held_events.take().unwrap_or_default();
        for ev in held {
            let _ = self.events.send(ev);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// From now on `mem_now` and `mem_usage` read nothing, as for an agent
    /// without the host's `/sys/fs/cgroup`.
    pub fn hide_cgroups(&self) {
        self.lock().no_cgroups = true;
    }

    /// A running container's (usage, inactive file cache, limit), as its
    /// cgroup files would give them; `None` when hidden or not running.
    fn cgroup_mem(&self, id: &str) -> Option<(u64, u64, Option<u64>)> {
        let g = self.lock();
        if g.no_cgroups {
            return None;
        }
        let c = g.containers.get(id)?;
        (c.info.state == ContainerState::Running).then_some((
            c.mem_usage_bytes,
            c.mem_inactive_file_bytes,
            c.info.limits.mem_bytes,
        ))
    }

    /// Adds a running container.
    pub fn add(
        &self,
        id: &str,
        labels: &[(&str, &str)],
        mem_limit: Option<u64>,
        cpu: CpuLimit,
        started_s: f64,
    ) {
        let info = ContainerInfo {
            id: id.to_string(),
            name: id.to_string(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            state: ContainerState::Running,
            started_s: Some(started_s),
            limits: Limits {
                mem_bytes: mem_limit,
                cpu,
                mem_swap_bytes: None,
                mem_reservation_bytes: None,
            },
            oom_killed: false,
            finished_s: None,
            exit_code: None,
            restarts_alone: false,
        };
        self.lock().containers.insert(
            id.to_string(),
            FakeContainer {
                info,
                cpu_total_ns: 0,
                mem_usage_bytes: 0,
                mem_inactive_file_bytes: 0,
                mem_peak_bytes: None,
                cpu_nr_throttled: None,
                cpu_throttled_ns: None,
                read_s: None,
            },
        );
    }

    /// The time the runtime says it read the container's counters, as its
    /// next stats answers report it (`None`: no read time, as a runtime
    /// that does not say).
    pub fn set_read_time(&self, id: &str, read_s: Option<f64>) {
        if let Some(c) = self.lock().containers.get_mut(id) {
            c.read_s = read_s;
        }
    }

    /// Whether the container's restart policy starts it again when it
    /// dies (`restarts_alone`; the fake does not restart it: a test does,
    /// with `start`).
    pub fn set_restart_policy(&self, id: &str, restarts_alone: bool) {
        if let Some(c) = self.lock().containers.get_mut(id) {
            c.info.restarts_alone = restarts_alone;
        }
    }

    /// Sets memory usage and adds CPU time.
    pub fn set_usage(&self, id: &str, mem_usage_bytes: u64, add_cpu_ns: u64) {
        if let Some(c) = self.lock().containers.get_mut(id) {
            c.mem_usage_bytes = mem_usage_bytes;
            c.cpu_total_ns += add_cpu_ns;
        }
    }

    /// Adds throttled periods and time (the `cpu.stat` counters).
    pub fn add_throttling(&self, id: &str, periods: u64, ns: u64) {
        if let Some(c) = self.lock().containers.get_mut(id) {
            c.cpu_nr_throttled = Some(c.cpu_nr_throttled.unwrap_or(0) + periods);
            c.cpu_throttled_ns = Some(c.cpu_throttled_ns.unwrap_or(0) + ns);
        }
    }

    /// Sets the memory high-water mark since creation.
    pub fn set_peak(&self, id: &str, peak_bytes: u64) {
        if let Some(c) = self.lock().containers.get_mut(id) {
            c.mem_peak_bytes = Some(peak_bytes);
        }
    }

    pub fn remove(&self, id: &str) {
        self.lock().containers.remove(id);
        self.send(RuntimeEvent::Destroy { id: id.to_string() });
    }

    /// Simulates an OOM event in the stream (the kernel killed a process
    /// of the container; the container keeps running).
    pub fn oom(&self, id: &str) {
        let at_s = Some(self.lock().now_s);
        self.send(RuntimeEvent::Oom {
            id: id.to_string(),
            at_s,
        });
    }

    /// The kernel OOM-kills the container's main process at `at_s`: it
    /// exits (137) with `OOMKilled` set, as Docker reports it. With
    /// `stream` the event stream says so too (oom, then die); without, the
    /// agent can only find out from `inspect` (a disconnected stream).
    pub fn oom_kill(&self, id: &str, at_s: f64, stream: bool) {
        {
            let mut g = self.lock();
            let Some(c) = g.containers.get_mut(id) else {
                return;
            };
            c.info.state = ContainerState::Exited;
            c.info.oom_killed = true;
            c.info.finished_s = Some(at_s);
            c.info.exit_code = Some(137);
            c.mem_usage_bytes = 0;
        }
        if stream {
            self.send(RuntimeEvent::Oom {
                id: id.to_string(),
                at_s: Some(at_s),
            });
            self.send(RuntimeEvent::Die {
                id: id.to_string(),
                exit_code: Some(137),
            });
        }
    }

    /// Daemon down (every call fails with `Unavailable`) or back up.
    pub fn set_down(&self, down: bool) {
        self.lock().down = down;
    }

    /// The time `start` records as a container's start time.
    pub fn set_now(&self, now_s: f64) {
        self.lock().now_s = now_s;
    }

    /// Makes `stats` fail for one container.
    pub fn fail_stats(&self, id: &str) {
        self.lock().fail_stats_for.push(id.to_string());
    }

    /// Makes `update` fail for one container (a daemon error, as Docker's
    /// `invalid argument` from runc).
    pub fn fail_updates(&self, id: &str) {
        self.lock().fail_updates_for.push(id.to_string());
    }

    /// Makes `update` apply for one container but answer with an error (a
    /// daemon that timed out after it had applied the update).
    pub fn lose_update_answers(&self, id: &str) {
        self.lock().lose_update_answers_for.push(id.to_string());
    }

    pub fn calls(&self) -> Vec<FakeCall> {
        self.lock().calls.clone()
    }

    pub fn container(&self, id: &str) -> Option<FakeContainer> {
        self.lock().containers.get(id).cloned()
    }

    fn check_up(&self) -> Result<(), RuntimeError> {
        if self.lock().down {
            Err(RuntimeError::Unavailable("fake daemon is down".into()))
        } else {
            Ok(())
        }
    }
}

#[async_trait::async_trait]
impl ContainerRuntime for FakeRuntime {
    async fn host_info(&self) -> Result<HostInfo, RuntimeError> {
        self.check_up()?;
        Ok(self.host.clone())
    }

    async fn list(
        &self,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<ContainerSummary>, RuntimeError> {
        self.check_up()?;
        Ok(self
            .lock()
            .containers
            .values()
            .filter(|c| labels.iter().all(|(k, v)| c.info.labels.get(k) == Some(v)))
            .map(|c| ContainerSummary {
                id: c.info.id.clone(),
                name: c.info.name.clone(),
                labels: c.info.labels.clone(),
                state: c.info.state,
            })
            .collect())
    }

    async fn inspect(&self, id: &str) -> Result<ContainerInfo, RuntimeError> {
        self.check_up()?;
        self.lock()
            .containers
            .get(id)
            .map(|c| c.info.clone())
            .ok_or_else(|| RuntimeError::NotFound(id.into()))
    }

    async fn stats(&self, id: &str) -> Result<ContainerStats, RuntimeError> {
        self.check_up()?;
        let g = self.lock();
        if g.fail_stats_for.iter().any(|f| f == id) {
            return Err(RuntimeError::Api {
                status: 500,
                message: "stats failed".into(),
            });
        }
        let c = g
            .containers
            .get(id)
            .ok_or_else(|| RuntimeError::NotFound(id.into()))?;
        Ok(ContainerStats {
            cpu_total_ns: c.cpu_total_ns,
            system_cpu_ns: None,
            online_cpus: Some(self.host.ncpu),
            mem_usage_bytes: c.mem_usage_bytes,
            mem_inactive_file_bytes: c.mem_inactive_file_bytes,
            mem_limit_bytes: c.info.limits.mem_bytes,
            mem_peak_bytes: c.mem_peak_bytes,
            cpu_nr_throttled: c.cpu_nr_throttled,
            cpu_throttled_ns: c.cpu_throttled_ns,
            read_s: c.read_s,
        })
    }

    async fn update(&self, id: &str, update: &ResourceUpdate) -> Result<(), RuntimeError> {
        self.check_up()?;
        let mut g = self.lock();
        g.calls.push(FakeCall::Update(id.to_string(), *update));
        if g.fail_updates_for.iter().any(|f| f == id) {
            return Err(RuntimeError::Api {
                status: 500,
                message: "update failed".into(),
            });
        }
        let c = g
            .containers
            .get_mut(id)
            .ok_or_else(|| RuntimeError::NotFound(id.into()))?;
        if let Some(m) = update.mem_bytes {
            // as Docker reports it: the kernel's "no limit" is none
            c.info.limits.mem_bytes = mem_limit(i64::try_from(m).unwrap_or(i64::MAX));
            // as Docker: swap is set with memory, to memory when not given
            c.info.limits.mem_swap_bytes = Some(update.mem_swap_bytes.unwrap_or(m as i64));
        }
        if let Some(cpu) = update.cpu {
            c.info.limits.cpu = cpu;
        }
        if g.lose_update_answers_for.iter().any(|f| f == id) {
            return Err(RuntimeError::Unavailable("update timed out".into()));
        }
        Ok(())
    }

    async fn stop(&self, id: &str, grace_s: u32) -> Result<(), RuntimeError> {
        self.check_up()?;
        let mut g = self.lock();
        g.calls.push(FakeCall::Stop(id.to_string(), grace_s));
        let now_s = g.now_s;
        let c = g
            .containers
            .get_mut(id)
            .ok_or_else(|| RuntimeError::NotFound(id.into()))?;
        c.info.state = ContainerState::Exited;
        c.info.oom_killed = false;
        c.info.finished_s = Some(now_s);
        c.info.exit_code = Some(143);
        c.mem_usage_bytes = 0;
        Ok(())
    }

    async fn start(&self, id: &str) -> Result<(), RuntimeError> {
        self.check_up()?;
        let mut g = self.lock();
        g.calls.push(FakeCall::Start(id.to_string()));
        let now_s = g.now_s;
        let c = g
            .containers
            .get_mut(id)
            .ok_or_else(|| RuntimeError::NotFound(id.into()))?;
        // like Docker: OOMKilled and FinishedAt describe the last exit and
        // stay until the next one; the run gets a new cgroup, whose CPU
        // counter starts from 0
        c.info.state = ContainerState::Running;
        c.cpu_total_ns = 0;
        c.info.started_s = Some(now_s);
        c.info.exit_code = Some(0);
        Ok(())
    }

    fn events(&self) -> BoxStream<'static, Result<RuntimeEvent, RuntimeError>> {
        let rx = self.events.subscribe();
        futures_util::stream::unfold(rx, |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(ev) => return Some((Ok(ev), rx)),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
        .boxed()
    }

    /// A running container's working set and limit, as its cgroup files
    /// would give them.
    fn mem_now(&self, id: &str) -> Option<crate::cgroup::MemNow> {
        self.cgroup_mem(id)
            .map(|(usage, inactive, limit)| crate::cgroup::MemNow {
                working_set_bytes: usage.saturating_sub(inactive),
                limit_bytes: limit,
            })
    }

    /// A running container's usage (its cache included) and limit.
    fn mem_usage(&self, id: &str) -> Option<crate::cgroup::MemUsage> {
        self.cgroup_mem(id)
            .map(|(usage, _, limit)| crate::cgroup::MemUsage {
                usage_bytes: usage,
                limit_bytes: limit,
            })
    }
}

//! The container runtime as the agent sees it: a small trait over our own
//! types, implemented for Docker with bollard ([`crate::docker`]) and by an
//! in-memory fake ([`crate::fake`]) for unit tests of the logic.

pub use crate::cgroup::{MemNow, MemUsage};
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Errors of a runtime call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    /// The container does not exist (any more): normal when containers come
    /// and go between two calls.
    #[error("container {0} not found")]
    NotFound(String),
    /// The daemon could not be reached (down, restarting, socket missing).
    #[error("container runtime unavailable: {0}")]
    Unavailable(String),
    /// The daemon answered with an error.
    #[error("container runtime error (status {status}): {message}")]
    Api { status: u16, message: String },
    /// The daemon's answer could not be understood.
    #[error("cannot decode runtime answer: {0}")]
    Decode(String),
}

impl RuntimeError {
    /// True when the error says the daemon is gone (reconnect, back off)
    /// rather than something about one container.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, RuntimeError::Unavailable(_))
    }
}

/// Container state as reported by the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerState {
    Created,
    Running,
    Paused,
    Restarting,
    Removing,
    Exited,
    Dead,
    Unknown,
}

impl ContainerState {
    pub fn parse(s: &str) -> Self {
        match s.to_ascii_lowercase().as_str() {
            "created" => Self::Created,
            "running" => Self::Running,
            "paused" => Self::Paused,
            "restarting" => Self::Restarting,
            "removing" => Self::Removing,
            "exited" => Self::Exited,
            "dead" => Self::Dead,
            _ => Self::Unknown,
        }
    }
}

/// How a container's CPU is limited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CpuLimit {
    /// No CPU limit.
    Unlimited,
    /// `NanoCpus` (`docker run --cpus`): 1e9 = one core.
    Nano { nano_cpus: i64 },
    /// CFS quota / period in microseconds (`--cpu-quota`, `--cpu-period`).
    Quota { quota_us: i64, period_us: i64 },
}

impl CpuLimit {
    /// The limit in cores, `None` when unlimited.
    pub fn cores(&self) -> Option<f64> {
        match *self {
            CpuLimit::Unlimited => None,
            CpuLimit::Nano { nano_cpus } if nano_cpus > 0 => Some(nano_cpus as f64 / 1e9),
            CpuLimit::Quota {
                quota_us,
                period_us,
            } if quota_us > 0 && period_us > 0 => Some(quota_us as f64 / period_us as f64),
            _ => None,
        }
    }

    /// The same kind of limit set to `cores` (unlimited becomes NanoCpus:
    /// Docker refuses to mix NanoCpus with a CFS quota, so a container keeps
    /// the kind it was started with).
    pub fn with_cores(&self, cores: f64) -> CpuLimit {
        match *self {
            CpuLimit::Quota { period_us, .. } if period_us > 0 => CpuLimit::Quota {
                quota_us: ((cores * period_us as f64).round() as i64).max(1000),
                period_us,
            },
            _ => CpuLimit::Nano {
                nano_cpus: (cores * 1e9).round() as i64,
            },
        }
    }
}

/// The limits a container runs with.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Memory limit in bytes, `None` when unlimited.
    pub mem_bytes: Option<u64>,
    pub cpu: CpuLimit,
    /// Memory + swap limit in bytes as the runtime reports it (Docker's
    /// `MemorySwap`): `Some(-1)` unlimited swap, `None` not set. Restored
    /// with the memory limit on shutdown and before a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_swap_bytes: Option<i64>,
    /// Memory reservation in bytes (`--memory-reservation`, the cgroup's
    /// `memory.low`; `None` when not set): the agent never plans the
    /// memory limit below it, and never changes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_reservation_bytes: Option<u64>,
}

/// The highest memory limit the kernel takes (`i64::MAX` rounded down to
/// a 4 KiB page): no limit in effect (cgroup v1 reads it back as its
/// "unlimited" value, v2 as `max`). Docker cannot remove a memory limit once
/// set (`docker update` refuses 0 and -1), so a memory the agent limited
/// although it was started without a limit is given back this.
pub const UNLIMITED_MEM_BYTES: u64 = 9_223_372_036_854_771_712;

/// A memory limit as the runtime reports it (bytes): 0 or less is no
/// limit, and so is anything from 2^62 bytes (4 EiB) on, as
/// [`UNLIMITED_MEM_BYTES`].
pub fn mem_limit(bytes: i64) -> Option<u64> {
    u64::try_from(bytes).ok().filter(|&b| b > 0 && b < 1 << 62)
}

/// One entry of the container list (cheap, no per-container call).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerSummary {
    pub id: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub state: ContainerState,
}

/// Everything the agent needs to know about one container.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerInfo {
    pub id: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub state: ContainerState,
    /// When its current run started (Unix seconds), `None` if never started.
    pub started_s: Option<f64>,
    pub limits: Limits,
    /// The kernel OOM-killed it (its last exit; Docker keeps saying so
    /// after a restart, until the next exit).
    pub oom_killed: bool,
    /// When its last run ended (Unix seconds), `None` if it never ended.
    pub finished_s: Option<f64>,
    /// Exit code of its last run (0 while running).
    pub exit_code: Option<i64>,
    /// Its restart policy (`always`, `unless-stopped`, `on-failure`) starts
    /// it again, alone, when it dies: an OOM kill does not end its
    /// application.
    pub restarts_alone: bool,
}

/// One stats sample. CPU counters are cumulative.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerStats {
    /// Cumulative CPU time used by the container, nanoseconds.
    pub cpu_total_ns: u64,
    /// Cumulative host CPU time, nanoseconds (as Docker reports it).
    pub system_cpu_ns: Option<u64>,
    pub online_cpus: Option<u32>,
    /// Memory usage as the cgroup counts it (includes page cache).
    pub mem_usage_bytes: u64,
    /// Inactive file cache: `total_inactive_file` (cgroup v1) or
    /// `inactive_file` (cgroup v2).
    pub mem_inactive_file_bytes: u64,
    /// The memory limit the kernel applies, if any.
    pub mem_limit_bytes: Option<u64>,
    /// Highest memory usage since the cgroup was created (cgroup v2
    /// `memory.peak`, cgroup v1 `max_usage`), when the runtime reports it.
    /// Counts page cache like `mem_usage_bytes`.
    pub mem_peak_bytes: Option<u64>,
    /// CFS periods in which the container was throttled (cumulative,
    /// `cpu.stat` `nr_throttled`).
    pub cpu_nr_throttled: Option<u64>,
    /// Time the container was throttled, nanoseconds (cumulative,
    /// `cpu.stat` `throttled_usec` x 1000).
    pub cpu_throttled_ns: Option<u64>,
    /// When these counters were read (Unix seconds: the local clock for a
    /// read of the cgroup, else the runtime's, Docker's `read`), when
    /// known. Docker serves a stats call at its collector's next tick, up
    /// to ~1 s after the request: the CPU rate divides by the time between
    /// two reads, not between two requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_s: Option<f64>,
}

impl ContainerStats {
    /// Working set = usage - inactive file cache (what kubelet and cAdvisor
    /// call the working set; what the OOM killer cannot reclaim cheaply).
    pub fn working_set_bytes(&self) -> u64 {
        self.mem_usage_bytes
            .saturating_sub(self.mem_inactive_file_bytes)
    }
}

/// A new limit for one container. `None` leaves that resource alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdate {
    /// Memory limit in bytes; the swap limit is set with it, to
    /// `mem_swap_bytes` when given, else to the same value (no swap).
    pub mem_bytes: Option<u64>,
    /// `Some(CpuLimit::Unlimited)` lifts a CFS quota (`CpuQuota = -1`);
    /// Docker cannot lift a `NanoCpus` limit.
    pub cpu: Option<CpuLimit>,
    /// Memory + swap limit to set with `mem_bytes` (-1: unlimited swap);
    /// `None`: the same as `mem_bytes`. Only used when `mem_bytes` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_swap_bytes: Option<i64>,
}

/// What the runtime's event stream tells the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RuntimeEvent {
    /// The kernel OOM killer hit a process of the container, at `at_s`
    /// (Unix seconds, the daemon's clock) when the runtime says.
    Oom {
        id: String,
        at_s: Option<f64>,
    },
    /// The container's main process exited.
    Die {
        id: String,
        exit_code: Option<i64>,
    },
    Start {
        id: String,
    },
    Destroy {
        id: String,
    },
}

impl RuntimeEvent {
    pub fn id(&self) -> &str {
        match self {
            RuntimeEvent::Oom { id, .. }
            | RuntimeEvent::Die { id, .. }
            | RuntimeEvent::Start { id }
            | RuntimeEvent::Destroy { id } => id,
        }
    }
}

/// The host as the runtime sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub name: String,
    pub ncpu: u32,
    pub mem_total_bytes: u64,
    /// `"1"` or `"2"` when the daemon says.
    pub cgroup_version: Option<String>,
    pub server_version: String,
}

/// Container runtime operations the agent uses. Implementations must be
/// cheap to share (`&self` everywhere) and never panic on daemon answers.
#[async_trait::async_trait]
pub trait ContainerRuntime: Send + Sync + 'static {
    /// The host: CPU count, memory, name.
    async fn host_info(&self) -> Result<HostInfo, RuntimeError>;

    /// Every container (running or not) that carries all of `labels`
    /// (`key=value` pairs).
    async fn list(
        &self,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<ContainerSummary>, RuntimeError>;

    /// Full information on one container.
    async fn inspect(&self, id: &str) -> Result<ContainerInfo, RuntimeError>;

    /// One stats sample (no waiting for a second sample).
    async fn stats(&self, id: &str) -> Result<ContainerStats, RuntimeError>;

    /// Changes limits of a (running or stopped) container.
    async fn update(&self, id: &str, update: &ResourceUpdate) -> Result<(), RuntimeError>;

    /// Stops a container: SIGTERM, then SIGKILL after `grace_s` seconds.
    async fn stop(&self, id: &str, grace_s: u32) -> Result<(), RuntimeError>;

    /// Starts a stopped container.
    async fn start(&self, id: &str) -> Result<(), RuntimeError>;

    /// Container events (OOM, die, start, destroy) from now on. The stream
    /// ends or yields an error when the daemon goes away; callers
    /// resubscribe with backoff.
    fn events(&self) -> BoxStream<'static, Result<RuntimeEvent, RuntimeError>>;

    /// True when [`ContainerRuntime::update`] can change a running
    /// container's limits (probed at start by adapters that may lack it,
    /// e.g. Podman 4.3's Docker-compatible API). The agent runs in
    /// recommend mode on a runtime that cannot.
    fn can_update(&self) -> bool {
        true
    }

    /// The engine behind the API (name and version), when the adapter
    /// probed it at start.
    fn engine(&self) -> Option<EngineInfo> {
        None
    }

    /// Container `id`'s memory working set and limit right now, read
    /// without a daemon call (its cgroup files), for the memory watch
    /// between rounds. `None` when the adapter cannot read it cheaply; the
    /// watch then waits for the next round.
    fn mem_now(&self, _id: &str) -> Option<MemNow> {
        None
    }

    /// Container `id`'s memory usage, page cache included (so never below
    /// its working set), and limit right now: the watch's cheaper first
    /// read, after which it asks [`ContainerRuntime::mem_now`] only for a
    /// container whose usage has risen enough to matter. By default the
    /// working set of `mem_now`.
    fn mem_usage(&self, id: &str) -> Option<MemUsage> {
        self.mem_now(id).map(|m| MemUsage {
            usage_bytes: m.working_set_bytes,
            limit_bytes: m.limit_bytes,
        })
    }
}

/// The container engine behind the API, as its `/version` names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// `Podman Engine`, `Engine` (Docker), ...
    pub name: String,
    pub version: String,
}

/// Parses an RFC 3339 UTC timestamp as Docker writes it
/// (`2026-11-22T08:26:55.801169848Z`, offsets allowed) into Unix seconds.
/// Docker's "never" (`0001-01-01T00:00:00Z`) and garbage give `None`.
pub fn parse_rfc3339_s(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.len() < 20 || !s.is_ascii() {
        return None;
    }
    let num = |a: usize, b: usize| -> Option<i64> { s.get(a..b)?.parse::<i64>().ok() };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, min, sec) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if year < 1970
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || min > 59
        || sec > 60
    {
        return None;
    }
    let rest = &s[19..];
    let (frac, tz) = match rest.strip_prefix('.') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            let digits = &r[..end];
            let frac = if digits.is_empty() {
                0.0
            } else {
                format!("0.{digits}").parse::<f64>().ok()?
            };
            (frac, &r[end..])
        }
        None => (0.0, rest),
    };
    let offset_s = match tz {
        "Z" | "z" => 0,
        t if t.len() == 6 && (t.starts_with('+') || t.starts_with('-')) => {
            let h: i64 = t.get(1..3)?.parse().ok()?;
            let m: i64 = t.get(4..6)?.parse().ok()?;
            let sign = if t.starts_with('-') { -1 } else { 1 };
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    // days from civil (Howard Hinnant's algorithm)
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    let secs = days * 86400 + hour * 3600 + min * 60 + sec - offset_s;
    Some(secs as f64 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339() {
        assert_eq!(parse_rfc3339_s("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(parse_rfc3339_s("1970-01-01T00:00:01Z"), Some(1.0));
        let t = parse_rfc3339_s("2026-11-22T08:26:55.5Z").expect("parses");
        assert!((t - 1_795_336_015.5).abs() < 1e-6, "{t}");
        let t2 = parse_rfc3339_s("2026-11-22T09:26:55.5+01:00").expect("parses");
        assert!((t - t2).abs() < 1e-6);
        assert_eq!(parse_rfc3339_s("0001-01-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339_s("garbage"), None);
        assert_eq!(parse_rfc3339_s("2026-13-22T08:26:55Z"), None);
        assert_eq!(
            parse_rfc3339_s("2026-11-22T08:26:55.1234567890123Zjunk"),
            None
        );
    }

    #[test]
    fn cpu_limits() {
        assert_eq!(
            CpuLimit::Nano {
                nano_cpus: 500_000_000
            }
            .cores(),
            Some(0.5)
        );
        assert_eq!(
            CpuLimit::Quota {
                quota_us: 50_000,
                period_us: 100_000
            }
            .cores(),
            Some(0.5)
        );
        assert_eq!(CpuLimit::Unlimited.cores(), None);
        assert_eq!(
            CpuLimit::Unlimited.with_cores(1.5),
            CpuLimit::Nano {
                nano_cpus: 1_500_000_000
            }
        );
        assert_eq!(
            CpuLimit::Quota {
                quota_us: 1,
                period_us: 100_000
            }
            .with_cores(0.25),
            CpuLimit::Quota {
                quota_us: 25_000,
                period_us: 100_000
            }
        );
    }

    #[test]
    fn memory_limits_as_reported() {
        assert_eq!(mem_limit(0), None);
        assert_eq!(mem_limit(-1), None);
        assert_eq!(mem_limit(256 << 20), Some(256 << 20));
        // the kernel's "no limit", as a restored unlimited memory reads back
        assert_eq!(mem_limit(UNLIMITED_MEM_BYTES as i64), None);
        assert_eq!(mem_limit(i64::MAX), None);
        assert_eq!(UNLIMITED_MEM_BYTES % 4096, 0);
        assert!(UNLIMITED_MEM_BYTES <= i64::MAX as u64);
    }

    #[test]
    fn working_set_never_negative() {
        let s = ContainerStats {
            cpu_total_ns: 0,
            system_cpu_ns: None,
            online_cpus: None,
            mem_usage_bytes: 10,
            mem_inactive_file_bytes: 20,
            mem_limit_bytes: None,
            mem_peak_bytes: None,
            cpu_nr_throttled: None,
            cpu_throttled_ns: None,
            read_s: None,
        };
        assert_eq!(s.working_set_bytes(), 0);
    }
}

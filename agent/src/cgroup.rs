//! Direct reads of a container's cgroup, for what the runtimes' APIs
//! answer slowly or not at all: a round's stats sample
//! ([`Cgroups::stats`]: Docker serves a stats call only at its collector's
//! next 1 s tick), the memory watch between rounds ([`Cgroups::mem_usage`],
//! [`Cgroups::mem_now`]), Podman's OOM-kill counter
//! ([`Cgroups::oom_kills`]), and the flat `key value` files both adapters
//! parse ([`stat_value`], [`cpu_throttling`]).

use crate::runtime::ContainerStats;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where the cgroup hierarchies are mounted.
const ROOT: &str = "/sys/fs/cgroup";

/// Where an engine puts a container's cgroup: its directory below a
/// hierarchy's root (cgroup v1: below each controller's directory, as
/// `memory/<dir>`; v2: below the unified root), under either cgroup
/// driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `system.slice/docker-<id>.scope` (systemd) or `docker/<id>`
    /// (cgroupfs).
    Docker,
    /// `libpod_parent/libpod-<id>` (cgroupfs) or
    /// `machine.slice/libpod-<id>.scope` (systemd).
    Podman,
}

impl Layout {
    /// Container `id`'s candidate directories, the likelier driver's
    /// first; none for an id that is not [`plain_id`] (it must not name
    /// another path).
    pub fn dirs(&self, id: &str) -> Vec<String> {
        if !plain_id(id) {
            return Vec::new();
        }
        match self {
            Layout::Docker => vec![
                format!("system.slice/docker-{id}.scope"),
                format!("docker/{id}"),
            ],
            Layout::Podman => vec![
                format!("libpod_parent/libpod-{id}"),
                format!("machine.slice/libpod-{id}.scope"),
            ],
        }
    }
}

/// A cgroup file's text. Read to its end without asking its size first
/// (`std::fs::read_to_string` does: one `statx` more per file, and cgroup
/// files all say 4,096 bytes).
fn read(path: &str) -> Option<String> {
    let mut file = std::fs::File::open(format!("{ROOT}/{path}")).ok()?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    String::from_utf8(buf).ok()
}

/// The first of `controllers`' copies of `file` in directory `dir` (cgroup
/// v1: `cpuacct` and `cpu` are often one hierarchy, `cpu,cpuacct`).
fn read_v1(controllers: &[&str], dir: &str, file: &str) -> Option<String> {
    controllers
        .iter()
        .find_map(|c| read(&format!("{c}/{dir}/{file}")))
}

/// A container's memory right now, from its cgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemNow {
    /// Usage minus inactive file cache (the working set, as the agent's
    /// samples count it).
    pub working_set_bytes: u64,
    /// The limit in force; `None` when unlimited.
    pub limit_bytes: Option<u64>,
}

/// A container's memory usage right now, page cache included: at least
/// its working set, and cheaper to read ([`Cgroups::mem_usage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemUsage {
    pub usage_bytes: u64,
    /// The limit in force; `None` when unlimited.
    pub limit_bytes: Option<u64>,
}

/// Limits at or above this are "no limit" (cgroup v1 writes
/// 9223372036854771712; v2 writes `max`).
const UNLIMITED_BYTES: u64 = 1 << 62;

/// The memory files of one cgroup version: usage, limit, high-water
/// mark, and the `memory.stat` key of the inactive file cache.
struct MemFiles {
    usage: &'static str,
    limit: &'static str,
    peak: &'static str,
    inactive_key: &'static str,
}

const V1_MEM: MemFiles = MemFiles {
    usage: "memory.usage_in_bytes",
    limit: "memory.limit_in_bytes",
    peak: "memory.max_usage_in_bytes",
    inactive_key: "total_inactive_file",
};
const V2_MEM: MemFiles = MemFiles {
    usage: "memory.current",
    limit: "memory.max",
    peak: "memory.peak",
    inactive_key: "inactive_file",
};

/// A runtime's way to its containers' cgroup files: where its [`Layout`]
/// puts them, and which of the candidate places (cgroup v1 or v2, either
/// driver's directory) answered last, tried first at the next read. On a
/// host every container sits under the same cgroup version and driver, so
/// after the first read no read opens a file that is not there (on cgroup
/// v1 under cgroupfs, one failed open per watch read and two per stats
/// sample before).
#[derive(Debug)]
pub struct Cgroups {
    layout: Layout,
    /// The candidate that answered last: `2 * version + directory`, the
    /// version 0 for v1, 1 for v2, the directory an index into
    /// [`Layout::dirs`].
    hint: AtomicUsize,
}

impl Cgroups {
    pub fn new(layout: Layout) -> Self {
        Self {
            layout,
            hint: AtomicUsize::new(0),
        }
    }

    /// The first answer of `read(v2, dir)` over container `id`'s candidate
    /// places, the one that answered last first (v1 before v2 and the
    /// layout's order otherwise). `None` when none answers, or for an id
    /// that is not [`plain_id`].
    fn first<T>(&self, id: &str, mut read: impl FnMut(bool, &str) -> Option<T>) -> Option<T> {
        let dirs = self.layout.dirs(id);
        let n = 2 * dirs.len();
        if n == 0 {
            return None;
        }
        let hint = self.hint.load(Ordering::Relaxed) % n;
        std::iter::once(hint)
            .chain((0..n).filter(|&i| i != hint))
            .find_map(|i| {
                let found = read(i / dirs.len() == 1, &dirs[i % dirs.len()])?;
                self.hint.store(i, Ordering::Relaxed);
                Some(found)
            })
    }

    /// Container `id`'s memory usage, page cache included (so at least its
    /// working set), and limit: the memory watch's first read, two small
    /// files, which rules out most containers without `memory.stat`.
    /// `None` when not readable (an agent without the host's
    /// `/sys/fs/cgroup`, a container that just went away).
    pub fn mem_usage(&self, id: &str) -> Option<MemUsage> {
        self.first(id, |v2, d| {
            let (dir, f) = mem_dir(v2, d);
            Some(MemUsage {
                usage_bytes: read(&format!("{dir}/{}", f.usage))?.trim().parse().ok()?,
                limit_bytes: parse_limit(&read(&format!("{dir}/{}", f.limit))?)?,
            })
        })
    }

    /// Container `id`'s memory working set and limit (`None` as for
    /// [`Self::mem_usage`]).
    pub fn mem_now(&self, id: &str) -> Option<MemNow> {
        self.first(id, |v2, d| {
            let (dir, f) = mem_dir(v2, d);
            mem_now_in(&dir, f)
        })
    }

    /// Container `id`'s stats sample read from its cgroup files at once, the
    /// same counters Docker's stats answer carries (cgroup v1: `memory.*`,
    /// `cpuacct.usage`, `cpu.stat`; v2: `memory.*` and `cpu.stat`), timed by
    /// the local clock at the read. `None` when a counter the sample needs
    /// is not readable (no host `/sys/fs/cgroup`, another cgroup layout, a
    /// container that just went away): then ask the runtime.
    pub fn stats(&self, id: &str) -> Option<ContainerStats> {
        let files = self.first(id, |v2, d| if v2 { v2_stats(d) } else { v1_stats(d) })?;
        let read_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs_f64();
        parse_stats(&files, read_s)
    }

    /// Container `id`'s cgroup OOM-kill counter (`oom_kill` in v1's
    /// `memory.oom_control`, v2's `memory.events`). `None` when none is
    /// readable.
    pub fn oom_kills(&self, id: &str) -> Option<u64> {
        self.first(id, |v2, d| {
            let file = if v2 {
                format!("{d}/memory.events")
            } else {
                format!("memory/{d}/memory.oom_control")
            };
            stat_value(&read(&file)?, "oom_kill")
        })
    }
}

/// The memory directory of candidate `dir` and its files: v1's below the
/// memory hierarchy, v2's in the unified one.
fn mem_dir(v2: bool, dir: &str) -> (String, &'static MemFiles) {
    if v2 {
        (dir.to_string(), &V2_MEM)
    } else {
        (format!("memory/{dir}"), &V1_MEM)
    }
}

fn mem_now_in(dir: &str, f: &MemFiles) -> Option<MemNow> {
    let file = |name: &str| read(&format!("{dir}/{name}"));
    parse_mem_now(
        &file(f.usage)?,
        &file(f.limit)?,
        &file("memory.stat")?,
        f.inactive_key,
    )
}

/// [`MemNow`] from the files' text: usage, limit (`max` or a huge number:
/// none) and `memory.stat`, whose `inactive_key` line is the cache left
/// out of the working set.
fn parse_mem_now(usage: &str, limit: &str, stat: &str, inactive_key: &str) -> Option<MemNow> {
    let usage: u64 = usage.trim().parse().ok()?;
    let inactive = stat_value(stat, inactive_key).unwrap_or(0);
    Some(MemNow {
        working_set_bytes: usage.saturating_sub(inactive),
        limit_bytes: parse_limit(limit)?,
    })
}

/// A limit file's text: `Some(None)` for no limit (`max`, or v1's huge
/// number), `None` when it is not a number.
fn parse_limit(limit: &str) -> Option<Option<u64>> {
    match limit.trim() {
        "max" => Some(None),
        l => Some(Some(l.parse::<u64>().ok()?).filter(|&l| l < UNLIMITED_BYTES)),
    }
}

/// The text of the cgroup files one stats sample is made of.
struct StatsFiles {
    usage: String,
    limit: String,
    stat: String,
    peak: Option<String>,
    /// Cumulative CPU time, ns.
    cpu_ns: u64,
    /// `cpu.stat`, for the throttling counters.
    cpu_stat: Option<String>,
    inactive_key: &'static str,
}

fn v1_stats(d: &str) -> Option<StatsFiles> {
    let mem = |f: &str| read(&format!("memory/{d}/{f}"));
    let cpu_ns = read_v1(&["cpuacct", "cpu,cpuacct"], d, "cpuacct.usage")?;
    Some(StatsFiles {
        usage: mem(V1_MEM.usage)?,
        limit: mem(V1_MEM.limit)?,
        stat: mem("memory.stat")?,
        peak: mem(V1_MEM.peak),
        cpu_ns: cpu_ns.trim().parse().ok()?,
        cpu_stat: read_v1(&["cpu", "cpu,cpuacct"], d, "cpu.stat"),
        inactive_key: V1_MEM.inactive_key,
    })
}

fn v2_stats(d: &str) -> Option<StatsFiles> {
    let file = |f: &str| read(&format!("{d}/{f}"));
    let cpu_stat = file("cpu.stat")?;
    Some(StatsFiles {
        usage: file(V2_MEM.usage)?,
        limit: file(V2_MEM.limit)?,
        stat: file("memory.stat")?,
        peak: file(V2_MEM.peak),
        cpu_ns: stat_value(&cpu_stat, "usage_usec")?.checked_mul(1000)?,
        cpu_stat: Some(cpu_stat),
        inactive_key: V2_MEM.inactive_key,
    })
}

fn parse_stats(f: &StatsFiles, read_s: f64) -> Option<ContainerStats> {
    let throttling = f.cpu_stat.as_deref().and_then(cpu_throttling);
    Some(ContainerStats {
        cpu_total_ns: f.cpu_ns,
        system_cpu_ns: None,
        online_cpus: None,
        mem_usage_bytes: f.usage.trim().parse().ok()?,
        mem_inactive_file_bytes: stat_value(&f.stat, f.inactive_key).unwrap_or(0),
        mem_limit_bytes: parse_limit(&f.limit)?,
        mem_peak_bytes: f
            .peak
            .as_deref()
            .and_then(|p| p.trim().parse().ok())
            .filter(|&p| p > 0),
        cpu_nr_throttled: throttling.map(|t| t.0),
        cpu_throttled_ns: throttling.map(|t| t.1),
        read_s: Some(read_s),
    })
}

/// The value of `key` in a flat `key value` file (`memory.stat`).
pub fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut it = line.split_whitespace();
        (it.next() == Some(key))
            .then(|| it.next().and_then(|v| v.parse().ok()))
            .flatten()
    })
}

/// (`nr_throttled`, throttled ns) of a `cpu.stat` file: v1
/// `throttled_time` is in ns, v2 `throttled_usec` in us. `None` without
/// `nr_throttled` (no CFS quota accounting).
pub fn cpu_throttling(text: &str) -> Option<(u64, u64)> {
    let nr = stat_value(text, "nr_throttled")?;
    let ns = stat_value(text, "throttled_time")
        .or_else(|| stat_value(text, "throttled_usec").map(|us| us.saturating_mul(1000)))
        .unwrap_or(0);
    Some((nr, ns))
}

/// True when `id` can name a cgroup directory as is: ASCII letters and
/// digits only (Docker and Podman ids are hexadecimal), so no `/` or `..`.
pub fn plain_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_now_from_v1_and_v2_files() {
        let v1_stat = "cache 4096\ntotal_inactive_file 1048576\ninactive_file 0\n";
        assert_eq!(
            parse_mem_now("5242880\n", "268435456\n", v1_stat, "total_inactive_file"),
            Some(MemNow {
                working_set_bytes: 4 << 20,
                limit_bytes: Some(256 << 20)
            })
        );
        // v1's "no limit" and v2's `max`
        for (limit, key) in [
            ("9223372036854771712", "total_inactive_file"),
            ("max", "inactive_file"),
        ] {
            assert_eq!(
                parse_mem_now("100", limit, "inactive_file 10\n", key).map(|m| m.limit_bytes),
                Some(None)
            );
        }
        // cache above usage: the working set is 0, not a wrap-around
        assert_eq!(
            parse_mem_now("100", "max", "inactive_file 500\n", "inactive_file")
                .map(|m| m.working_set_bytes),
            Some(0)
        );
        assert_eq!(parse_mem_now("x", "max", "", "inactive_file"), None);
        assert_eq!(parse_mem_now("1", "-1", "", "inactive_file"), None);
    }

    #[test]
    fn memory_stat_values() {
        let v1 = "cache 0\ntotal_inactive_file 700416\ninactive_file 0\n";
        assert_eq!(stat_value(v1, "total_inactive_file"), Some(700416));
        assert_eq!(stat_value(v1, "inactive_file"), Some(0));
        assert_eq!(stat_value(v1, "anon"), None);
        assert_eq!(stat_value("inactive_file x\n", "inactive_file"), None);
    }

    #[test]
    fn cpu_stat_of_cgroup_v1_and_v2() {
        let v1 = "nr_periods 22\nnr_throttled 7\nthrottled_time 868810261\nnr_bursts 0\n";
        assert_eq!(cpu_throttling(v1), Some((7, 868_810_261)));
        let v2 = "usage_usec 100\nnr_periods 5\nnr_throttled 2\nthrottled_usec 1500\n";
        assert_eq!(cpu_throttling(v2), Some((2, 1_500_000)));
        assert_eq!(
            cpu_throttling("usage_usec 1\n"),
            None,
            "no counter: unknown"
        );
        assert_eq!(cpu_throttling("nr_throttled x\n"), None);
    }

    fn files(v2: bool) -> StatsFiles {
        StatsFiles {
            usage: "22548480\n".into(),
            limit: if v2 { "max\n" } else { "67108864\n" }.into(),
            stat: "cache 1000\ninactive_file 892928\ntotal_inactive_file 900000\n".into(),
            peak: Some("22552576\n".into()),
            cpu_ns: 1_505_076_099,
            cpu_stat: Some("nr_periods 51\nnr_throttled 3\nthrottled_time 77\n".into()),
            inactive_key: if v2 {
                "inactive_file"
            } else {
                "total_inactive_file"
            },
        }
    }

    #[test]
    fn a_stats_sample_from_cgroup_files_carries_what_dockers_answer_does() {
        // cgroup v1, as read from a container of Docker 20.10 on this
        // machine (the same counters its stats answer held a moment later)
        let s = parse_stats(&files(false), 1_700_000_000.5).expect("sample");
        assert_eq!(
            s,
            ContainerStats {
                cpu_total_ns: 1_505_076_099,
                system_cpu_ns: None,
                online_cpus: None,
                mem_usage_bytes: 22_548_480,
                mem_inactive_file_bytes: 900_000,
                mem_limit_bytes: Some(64 << 20),
                mem_peak_bytes: Some(22_552_576),
                cpu_nr_throttled: Some(3),
                cpu_throttled_ns: Some(77),
                read_s: Some(1_700_000_000.5),
            }
        );
        assert_eq!(s.working_set_bytes(), 22_548_480 - 900_000);
        // v2: `max` is no limit, the inactive cache is `inactive_file`
        let s = parse_stats(&files(true), 1.0).expect("sample");
        assert_eq!(
            (s.mem_limit_bytes, s.mem_inactive_file_bytes),
            (None, 892_928)
        );
        // no peak file, no cpu.stat: those stay unknown
        let mut f = files(false);
        (f.peak, f.cpu_stat) = (None, None);
        let s = parse_stats(&f, 1.0).expect("sample");
        assert_eq!((s.mem_peak_bytes, s.cpu_nr_throttled), (None, None));
        // a usage that is not a number is no sample (ask the runtime)
        let mut f = files(false);
        f.usage = "x".into();
        assert_eq!(parse_stats(&f, 1.0), None);
    }

    #[test]
    fn layouts_name_only_plain_ids() {
        assert_eq!(
            Layout::Docker.dirs("ab12"),
            ["system.slice/docker-ab12.scope", "docker/ab12"]
        );
        assert_eq!(
            Layout::Podman.dirs("ab12"),
            [
                "libpod_parent/libpod-ab12",
                "machine.slice/libpod-ab12.scope"
            ]
        );
        assert!(Layout::Docker.dirs("../x").is_empty());
        assert_eq!(Cgroups::new(Layout::Docker).stats("../../etc"), None);
        let podman = Cgroups::new(Layout::Podman);
        assert_eq!(podman.mem_now("a/b"), None);
        assert_eq!(podman.mem_usage("a/b"), None);
        assert_eq!(podman.oom_kills(".."), None);
    }

    #[test]
    fn the_place_that_answered_last_is_tried_first() {
        let cg = Cgroups::new(Layout::Docker);
        let mut tried = Vec::new();
        let mut v2_cgroupfs = |v2: bool, d: &str| {
            tried.push((v2, d.to_string()));
            (v2 && d == "docker/ab").then_some(7)
        };
        assert_eq!(cg.first("ab", &mut v2_cgroupfs), Some(7));
        assert_eq!(tried.len(), 4, "v1 twice, then v2 in the layout's order");
        tried.clear();
        assert_eq!(
            cg.first("cd", |v2, d| {
                tried.push((v2, d.to_string()));
                (v2 && d == "docker/cd").then_some(8)
            }),
            Some(8)
        );
        assert_eq!(
            tried,
            [(true, "docker/cd".to_string())],
            "one open, no probe"
        );
        // a container that went away: every place is tried, the hint kept
        tried.clear();
        assert_eq!(
            cg.first("ef", |v2, d| {
                tried.push((v2, d.to_string()));
                None::<u8>
            }),
            None
        );
        assert_eq!(tried.len(), 4);
        assert_eq!(tried[0], (true, "docker/ef".to_string()));
    }

    #[test]
    fn only_plain_ids_name_a_directory() {
        assert!(plain_id("53b215b25fa3"));
        for bad in ["", "..", "a/b", "a.b", "../../etc"] {
            assert!(!plain_id(bad), "{bad:?}");
        }
    }
}

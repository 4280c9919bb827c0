//! Direct reads of a container's memory cgroup, for what the runtimes'
//! APIs answer slowly or not at all: the memory watch between rounds
//! ([`read_mem_now`]), and the flat `key value` files both adapters parse
//! ([`stat_value`]).

/// A container's memory right now, from its cgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemNow {
    /// Usage minus inactive file cache (the working set, as the agent's
    /// samples count it).
    pub working_set_bytes: u64,
    /// The limit in force; `None` when unlimited.
    pub limit_bytes: Option<u64>,
}

/// Limits at or above this are "no limit" (cgroup v1 writes
/// 9223372036854771712; v2 writes `max`).
const UNLIMITED_BYTES: u64 = 1 << 62;

/// Container `id`'s memory from the first readable of its directories,
/// `dirs(id)`: (cgroup v1's memory hierarchy, the unified one), paths
/// under `/sys/fs/cgroup/`. `None` for an id that is not [`plain_id`] or
/// when none is readable (an agent without the host's `/sys/fs/cgroup`, a
/// container that just went away).
pub fn read_mem_now(id: &str, dirs: fn(&str) -> ([String; 2], [String; 2])) -> Option<MemNow> {
    if !plain_id(id) {
        return None;
    }
    let (v1, v2) = dirs(id);
    let read = |d: &str, f: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{d}/{f}")).ok();
    // directories, usage file, limit file, and the memory.stat key of the
    // inactive file cache
    let layouts = [
        (
            &v1,
            "memory.usage_in_bytes",
            "memory.limit_in_bytes",
            "total_inactive_file",
        ),
        (&v2, "memory.current", "memory.max", "inactive_file"),
    ];
    layouts
        .iter()
        .find_map(|(dirs, usage, limit, inactive_key)| {
            dirs.iter().find_map(|d| {
                parse_mem_now(
                    &read(d, usage)?,
                    &read(d, limit)?,
                    &read(d, "memory.stat")?,
                    inactive_key,
                )
            })
        })
}

/// [`MemNow`] from the files' text: usage, limit (`max` or a huge number:
/// none) and `memory.stat`, whose `inactive_key` line is the cache left
/// out of the working set.
fn parse_mem_now(usage: &str, limit: &str, stat: &str, inactive_key: &str) -> Option<MemNow> {
    let usage: u64 = usage.trim().parse().ok()?;
    let limit = match limit.trim() {
        "max" => None,
        l => Some(l.parse::<u64>().ok()?).filter(|&l| l < UNLIMITED_BYTES),
    };
    let inactive = stat_value(stat, inactive_key).unwrap_or(0);
    Some(MemNow {
        working_set_bytes: usage.saturating_sub(inactive),
        limit_bytes: limit,
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
    fn only_plain_ids_name_a_directory() {
        assert!(plain_id("53b215b25fa3"));
        for bad in ["", "..", "a/b", "a.b", "../../etc"] {
            assert!(!plain_id(bad), "{bad:?}");
        }
    }
}

//! A small writer for the Prometheus text exposition format (0.0.4), shared
//! by the agent's and the central shaper's `/metrics`, and this process's
//! CPU time and memory from /proc.

use std::fmt::{Display, Write as _};

/// Prometheus text being written.
#[derive(Debug, Default)]
pub struct PromText {
    out: String,
}

impl PromText {
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            out: String::with_capacity(bytes),
        }
    }

    /// The `# HELP` and `# TYPE` lines that open a metric family.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) -> &mut Self {
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        self
    }

    /// One sample `name{labels} value`; `labels` without the braces
    /// (`op="stats"`), empty for none.
    pub fn sample(&mut self, name: &str, labels: &str, value: impl Display) -> &mut Self {
        let _ = if labels.is_empty() {
            writeln!(self.out, "{name} {value}")
        } else {
            writeln!(self.out, "{name}{{{labels}}} {value}")
        };
        self
    }

    /// A family with a single unlabelled sample.
    pub fn single(&mut self, name: &str, kind: &str, help: &str, value: impl Display) -> &mut Self {
        self.family(name, kind, help).sample(name, "", value)
    }

    /// This process's CPU time and memory (`process_*` families).
    pub fn process(&mut self, p: &ProcessStats, what: &str) -> &mut Self {
        self.single(
            "process_cpu_seconds_total",
            "counter",
            &format!("User and system CPU time of the {what}."),
            p.cpu_seconds,
        )
        .single(
            "process_resident_memory_bytes",
            "gauge",
            &format!("Resident memory of the {what}."),
            p.resident_bytes,
        )
        .single(
            "process_max_resident_memory_bytes",
            "gauge",
            "Peak resident memory (VmHWM).",
            p.max_resident_bytes,
        )
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// A process's CPU time and memory, read from /proc (Linux); `None`
/// elsewhere.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub resident_bytes: f64,
    pub max_resident_bytes: f64,
}

impl ProcessStats {
    /// Reads `/proc/<pid>/stat` and `/proc/<pid>/status` (`pid` = "self" for
    /// this process).
    pub fn read(pid: &str) -> Option<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command name (which may contain spaces) start at ')'.
        let rest = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 here.
        let utime: f64 = fields.get(11)?.parse().ok()?;
        let stime: f64 = fields.get(12)?.parse().ok()?;
        let ticks = 100.0; // USER_HZ: 100 on every Linux ABI tailor runs on.
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let kb = |key: &str| -> f64 {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
                .map(|v| v * 1024.0)
                .unwrap_or(0.0)
        };
        Some(Self {
            cpu_seconds: (utime + stime) / ticks,
            resident_bytes: kb("VmRSS:"),
            max_resident_bytes: kb("VmHWM:"),
        })
    }
}

/// Reads one sample value from Prometheus text (`name` including labels,
/// e.g. `tailor_shaper_agents{state="stale"}`); for tests and load
/// generators.
pub fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        l.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_families_and_samples() {
        let mut t = PromText::default();
        t.single("a_total", "counter", "A.", 3)
            .family("b", "gauge", "B.")
            .sample("b", "r=\"cpu\"", 0.5);
        let text = t.finish();
        assert_eq!(
            text,
            "# HELP a_total A.\n# TYPE a_total counter\na_total 3\n# HELP b B.\n# TYPE b gauge\nb{r=\"cpu\"} 0.5\n"
        );
        assert_eq!(sample(&text, "a_total"), Some(3.0));
        assert_eq!(sample(&text, "b{r=\"cpu\"}"), Some(0.5));
        assert_eq!(sample(&text, "b"), None);
    }

    #[test]
    fn reads_this_process() {
        let p = ProcessStats::read("self").expect("/proc is there on Linux");
        assert!(p.resident_bytes > 0.0 && p.max_resident_bytes >= p.resident_bytes);
    }
}

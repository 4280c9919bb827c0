//! The shaper's `/metrics` (Prometheus text format 0.0.4). Label sets are
//! fixed (endpoints, status classes, action kinds): no per-agent labels, so
//! cardinality stays bounded whatever the cluster size.

use std::collections::VecDeque;
use std::fmt::Write as _;

/// Histogram bucket upper bounds (seconds).
pub const LATENCY_BUCKETS_S: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Rounds kept for the quantiles of the round-latency summary.
pub const QUANTILE_WINDOW: usize = 1024;

/// A cumulative histogram plus a sliding window for exact quantiles.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    counts: [u64; LATENCY_BUCKETS_S.len()],
    count: u64,
    sum_s: f64,
    window: VecDeque<f64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self {
            counts: [0; LATENCY_BUCKETS_S.len()],
            count: 0,
            sum_s: 0.0,
            window: VecDeque::with_capacity(QUANTILE_WINDOW),
        }
    }
}

impl LatencyHistogram {
    pub fn observe(&mut self, seconds: f64) {
        let s = if seconds.is_finite() && seconds >= 0.0 {
            seconds
        } else {
            0.0
        };
        for (i, b) in LATENCY_BUCKETS_S.iter().enumerate() {
            if s <= *b {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum_s += s;
        if self.window.len() == QUANTILE_WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(s);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Quantile `q` in [0, 1] of the last [`QUANTILE_WINDOW`] observations
    /// (nearest rank), `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.window.is_empty() {
            return None;
        }
        let mut v: Vec<f64> = self.window.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        let rank = ((q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).clamp(1, v.len());
        Some(v[rank - 1])
    }

    fn render(&self, out: &mut String, name: &str, help: &str, labels: &str) {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} histogram");
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, b) in LATENCY_BUCKETS_S.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {}",
                self.counts[i]
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let lb = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{lb} {}", self.sum_s);
        let _ = writeln!(out, "{name}_count{lb} {}", self.count);
    }
}

/// Endpoints counted in `tailor_shaper_requests_total`.
pub const ENDPOINTS: [&str; 6] = ["report", "ack", "status", "metrics", "healthz", "other"];
/// Status classes counted (exact codes the server produces).
pub const CODES: [u16; 7] = [200, 400, 401, 404, 405, 413, 500];

/// Everything `/metrics` shows apart from the state's own gauges.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub round_latency: LatencyHistogram,
    pub report_latency: LatencyHistogram,
    pub rounds_total: u64,
    pub rounds_skipped_warmup: u64,
    pub rounds_skipped_no_agents: u64,
    /// resize, evict_component, evict_application.
    pub actions_total: [u64; 3],
    pub actions_dropped_stale: u64,
    requests: [[u64; CODES.len() + 1]; ENDPOINTS.len()],
    pub last_round_components: u64,
}

impl Metrics {
    pub fn count_request(&mut self, endpoint: &str, code: u16) {
        let e = ENDPOINTS
            .iter()
            .position(|x| *x == endpoint)
            .unwrap_or(ENDPOINTS.len() - 1);
        let c = CODES.iter().position(|x| *x == code).unwrap_or(CODES.len());
        self.requests[e][c] += 1;
    }

    pub fn requests(&self, endpoint: &str, code: u16) -> u64 {
        let e = ENDPOINTS
            .iter()
            .position(|x| *x == endpoint)
            .unwrap_or(ENDPOINTS.len() - 1);
        let c = CODES.iter().position(|x| *x == code).unwrap_or(CODES.len());
        self.requests[e][c]
    }
}

/// Gauges read from the state when rendering.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gauges {
    pub agents_live: u64,
    pub agents_stale: u64,
    pub components: u64,
    pub round: u64,
    pub acks_applied: u64,
    pub acks_failed: u64,
    pub acks_unknown: u64,
}

/// This process's CPU time and memory, read from /proc (Linux); `None`
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

/// Renders all metrics as Prometheus text.
pub fn render(m: &Metrics, g: &Gauges, process: Option<ProcessStats>) -> String {
    let mut out = String::with_capacity(8192);
    m.round_latency.render(
        &mut out,
        "tailor_shaper_round_duration_seconds",
        "Time to build the cluster view, run decide() and hand out actions, per round.",
        "",
    );
    let _ = writeln!(out, "# HELP tailor_shaper_round_duration_quantile_seconds Round latency quantiles over the last {QUANTILE_WINDOW} rounds.");
    let _ = writeln!(
        out,
        "# TYPE tailor_shaper_round_duration_quantile_seconds gauge"
    );
    for q in [0.5, 0.9, 0.99, 1.0] {
        if let Some(v) = m.round_latency.quantile(q) {
            let _ = writeln!(
                out,
                "tailor_shaper_round_duration_quantile_seconds{{quantile=\"{q}\"}} {v}"
            );
        }
    }
    m.report_latency.render(
        &mut out,
        "tailor_shaper_report_duration_seconds",
        "Server-side handling time of POST /v1/report (parse, validate, record).",
        "",
    );
    let _ = writeln!(out, "# HELP tailor_shaper_report_duration_quantile_seconds Report handling quantiles over the last {QUANTILE_WINDOW} reports.");
    let _ = writeln!(
        out,
        "# TYPE tailor_shaper_report_duration_quantile_seconds gauge"
    );
    for q in [0.5, 0.99] {
        if let Some(v) = m.report_latency.quantile(q) {
            let _ = writeln!(
                out,
                "tailor_shaper_report_duration_quantile_seconds{{quantile=\"{q}\"}} {v}"
            );
        }
    }
    let _ = writeln!(
        out,
        "# HELP tailor_shaper_rounds_total Shaping rounds planned."
    );
    let _ = writeln!(out, "# TYPE tailor_shaper_rounds_total counter");
    let _ = writeln!(out, "tailor_shaper_rounds_total {}", m.rounds_total);
    let _ = writeln!(
        out,
        "# HELP tailor_shaper_rounds_skipped_total Rounds not planned, by reason."
    );
    let _ = writeln!(out, "# TYPE tailor_shaper_rounds_skipped_total counter");
    let _ = writeln!(
        out,
        "tailor_shaper_rounds_skipped_total{{reason=\"warmup\"}} {}",
        m.rounds_skipped_warmup
    );
    let _ = writeln!(
        out,
        "tailor_shaper_rounds_skipped_total{{reason=\"no_agents\"}} {}",
        m.rounds_skipped_no_agents
    );
    let _ = writeln!(
        out,
        "# HELP tailor_shaper_round Number of the latest round."
    );
    let _ = writeln!(out, "# TYPE tailor_shaper_round gauge");
    let _ = writeln!(out, "tailor_shaper_round {}", g.round);
    let _ = writeln!(out, "# HELP tailor_shaper_agents Known agents by state.");
    let _ = writeln!(out, "# TYPE tailor_shaper_agents gauge");
    let _ = writeln!(
        out,
        "tailor_shaper_agents{{state=\"live\"}} {}",
        g.agents_live
    );
    let _ = writeln!(
        out,
        "tailor_shaper_agents{{state=\"stale\"}} {}",
        g.agents_stale
    );
    let _ = writeln!(
        out,
        "# HELP tailor_shaper_agents_total Known agents (live + stale)."
    );
    let _ = writeln!(out, "# TYPE tailor_shaper_agents_total gauge");
    let _ = writeln!(
        out,
        "tailor_shaper_agents_total {}",
        g.agents_live + g.agents_stale
    );
    let _ = writeln!(
        out,
        "# HELP tailor_shaper_components Components in the latest reports."
    );
    let _ = writeln!(out, "# TYPE tailor_shaper_components gauge");
    let _ = writeln!(out, "tailor_shaper_components {}", g.components);
    let _ = writeln!(
        out,
        "# HELP tailor_shaper_actions_total Actions handed to agents, by kind."
    );
    let _ = writeln!(out, "# TYPE tailor_shaper_actions_total counter");
    for (i, k) in ["resize", "evict_component", "evict_application"]
        .iter()
        .enumerate()
    {
        let _ = writeln!(
            out,
            "tailor_shaper_actions_total{{kind=\"{k}\"}} {}",
            m.actions_total[i]
        );
    }
    let _ = writeln!(out, "# HELP tailor_shaper_actions_dropped_stale_total Planned actions not handed out because their agent is stale.");
    let _ = writeln!(
        out,
        "# TYPE tailor_shaper_actions_dropped_stale_total counter"
    );
    let _ = writeln!(
        out,
        "tailor_shaper_actions_dropped_stale_total {}",
        m.actions_dropped_stale
    );
    let _ = writeln!(
        out,
        "# HELP tailor_shaper_acks_total Action acknowledgements, by outcome."
    );
    let _ = writeln!(out, "# TYPE tailor_shaper_acks_total counter");
    let _ = writeln!(
        out,
        "tailor_shaper_acks_total{{outcome=\"applied\"}} {}",
        g.acks_applied
    );
    let _ = writeln!(
        out,
        "tailor_shaper_acks_total{{outcome=\"failed\"}} {}",
        g.acks_failed
    );
    let _ = writeln!(
        out,
        "tailor_shaper_acks_total{{outcome=\"unknown\"}} {}",
        g.acks_unknown
    );
    let _ = writeln!(
        out,
        "# HELP tailor_shaper_requests_total HTTP requests by endpoint and status code."
    );
    let _ = writeln!(out, "# TYPE tailor_shaper_requests_total counter");
    for (e, ep) in ENDPOINTS.iter().enumerate() {
        for (c, code) in CODES
            .iter()
            .map(|c| c.to_string())
            .chain(std::iter::once("other".to_string()))
            .enumerate()
        {
            let n = m.requests[e][c];
            if n > 0 {
                let _ = writeln!(
                    out,
                    "tailor_shaper_requests_total{{endpoint=\"{ep}\",code=\"{code}\"}} {n}"
                );
            }
        }
    }
    if let Some(p) = process {
        let _ = writeln!(
            out,
            "# HELP process_cpu_seconds_total User and system CPU time of the shaper."
        );
        let _ = writeln!(out, "# TYPE process_cpu_seconds_total counter");
        let _ = writeln!(out, "process_cpu_seconds_total {}", p.cpu_seconds);
        let _ = writeln!(
            out,
            "# HELP process_resident_memory_bytes Resident memory of the shaper."
        );
        let _ = writeln!(out, "# TYPE process_resident_memory_bytes gauge");
        let _ = writeln!(out, "process_resident_memory_bytes {}", p.resident_bytes);
        let _ = writeln!(
            out,
            "# HELP process_max_resident_memory_bytes Peak resident memory (VmHWM)."
        );
        let _ = writeln!(out, "# TYPE process_max_resident_memory_bytes gauge");
        let _ = writeln!(
            out,
            "process_max_resident_memory_bytes {}",
            p.max_resident_bytes
        );
    }
    out
}

/// Reads one sample value from Prometheus text (`name` including labels,
/// e.g. `tailor_shaper_agents{state="stale"}`); for tests and the load
/// generator.
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
    fn histogram_counts_and_quantiles() {
        let mut h = LatencyHistogram::default();
        for i in 1..=100 {
            h.observe(i as f64 / 1000.0);
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.quantile(0.5), Some(0.05));
        assert_eq!(h.quantile(0.99), Some(0.099));
        assert_eq!(h.quantile(1.0), Some(0.1));
        let mut m = Metrics {
            round_latency: h,
            ..Metrics::default()
        };
        m.count_request("report", 401);
        m.count_request("bogus", 999);
        let text = render(
            &m,
            &Gauges {
                agents_live: 3,
                agents_stale: 1,
                ..Gauges::default()
            },
            None,
        );
        assert_eq!(
            sample(
                &text,
                "tailor_shaper_round_duration_seconds_bucket{le=\"0.01\"}"
            ),
            Some(10.0)
        );
        assert_eq!(
            sample(&text, "tailor_shaper_round_duration_seconds_count"),
            Some(100.0)
        );
        assert_eq!(
            sample(
                &text,
                "tailor_shaper_round_duration_quantile_seconds{quantile=\"0.99\"}"
            ),
            Some(0.099)
        );
        assert_eq!(
            sample(&text, "tailor_shaper_agents{state=\"stale\"}"),
            Some(1.0)
        );
        assert_eq!(sample(&text, "tailor_shaper_agents_total"), Some(4.0));
        assert_eq!(
            sample(
                &text,
                "tailor_shaper_requests_total{endpoint=\"report\",code=\"401\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                "tailor_shaper_requests_total{endpoint=\"other\",code=\"other\"}"
            ),
            Some(1.0)
        );
    }

    #[test]
    fn window_is_bounded() {
        let mut h = LatencyHistogram::default();
        for _ in 0..(QUANTILE_WINDOW + 10) {
            h.observe(1.0);
        }
        h.observe(5.0);
        assert_eq!(h.window.len(), QUANTILE_WINDOW);
        assert_eq!(h.quantile(1.0), Some(5.0));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_own_process_stats() {
        let p = ProcessStats::read("self").expect("linux /proc");
        assert!(p.resident_bytes > 0.0);
        assert!(p.max_resident_bytes >= p.resident_bytes);
    }
}

//! Prometheus metrics of the agent (text exposition format 0.0.4).
//!
//! Label values come from fixed sets only (operation, action kind, result,
//! resource): the number of series does not grow with the number of
//! containers.

use crate::cluster::client::LinkStatus;
use crate::cluster::LinkState;
use crate::prom::{ProcessStats, PromText};
use std::collections::BTreeMap;
use std::sync::Mutex;
use tailor_core::Resources;

/// Runtime operations counted in `tailor_agent_runtime_errors_total`.
pub const OPS: [&str; 8] = [
    "host_info",
    "list",
    "inspect",
    "stats",
    "update",
    "stop",
    "start",
    "events",
];

/// Action results counted in `tailor_agent_actions_total` (others count as
/// `other`).
pub const RESULTS: [&str; 5] = ["applied", "unchanged", "failed", "recommended", "refused"];

#[derive(Debug, Default, Clone)]
struct Data {
    rounds: u64,
    round_errors: u64,
    early_rounds: u64,
    round_seconds_sum: f64,
    round_seconds_last: f64,
    runtime_errors: BTreeMap<&'static str, u64>,
    actions: BTreeMap<(&'static str, &'static str), u64>,
    oom_events: u64,
    oom_recovered: u64,
    plan_source_errors: u64,
    docker_up: bool,
    running: u64,
    /// Evicted by the agent, not running.
    evicted: u64,
    /// OOM-killed, not running (no restart policy started them again).
    oom_killed: u64,
    capacity: Resources,
    allocated: Resources,
    requested: Resources,
    used: Resources,
    last_round_unix_s: f64,
    /// Cluster mode: the link to the shaper after the last round.
    shaper_link: Option<LinkStatus>,
    throttled_periods: u64,
    throttled_seconds: f64,
    throttled_containers: u64,
    /// The runtime cannot resize containers (probed at start).
    runtime_cannot_update: bool,
    /// `actuation = "shape"` was configured but the agent only recommends.
    forced_recommend: bool,
}

/// Counters and gauges, updated by the loop, rendered by `/metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    data: Mutex<Data>,
}

/// Managed containers by state, for [`Metrics::node`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContainerCounts {
    pub running: u64,
    /// Evicted by the agent, not running.
    pub evicted: u64,
    /// OOM-killed, not running.
    pub oom_killed: u64,
}

impl Metrics {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Data) -> T) -> T {
        match self.data.lock() {
            Ok(mut d) => f(&mut d),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    /// A finished round (ok or not) and how long it took.
    pub fn round(&self, ok: bool, seconds: f64, at_unix_s: f64) {
        self.with(|d| {
            d.rounds += 1;
            if !ok {
                d.round_errors += 1;
            }
            d.round_seconds_sum += seconds;
            d.round_seconds_last = seconds;
            d.last_round_unix_s = at_unix_s;
        })
    }

    /// A failed runtime call; `op` must be one of [`OPS`] (others count as
    /// `other`).
    pub fn runtime_error(&self, op: &str) {
        let op: &'static str = OPS.iter().find(|o| **o == op).copied().unwrap_or("other");
        self.with(|d| *d.runtime_errors.entry(op).or_default() += 1)
    }

    /// An action: kind `resize|evict|restart`, result
    /// `applied|unchanged|failed|recommended|refused`.
    pub fn action(&self, kind: &str, result: &str) {
        let kind: &'static str = match kind {
            "resize" => "resize",
            "evict" => "evict",
            "restart" => "restart",
            "restore" => "restore",
            _ => "other",
        };
        let result: &'static str = RESULTS
            .iter()
            .find(|r| **r == result)
            .copied()
            .unwrap_or("other");
        self.with(|d| *d.actions.entry((kind, result)).or_default() += 1)
    }

    /// An OOM kill of a managed container; `recovered` when the event
    /// stream missed it and `inspect` found it (`State.OOMKilled`).
    pub fn oom_event(&self, recovered: bool) {
        self.with(|d| {
            d.oom_events += 1;
            if recovered {
                d.oom_recovered += 1;
            }
        })
    }

    /// CPU throttling seen this round: periods and seconds added over every
    /// managed container (`cpu.stat` deltas), and how many were throttled.
    pub fn throttling(&self, periods: u64, seconds: f64, containers: u64) {
        self.with(|d| {
            d.throttled_periods += periods;
            d.throttled_seconds += seconds;
            d.throttled_containers = containers;
        })
    }

    /// Throttled periods counted so far (all managed containers).
    pub fn throttled_periods(&self) -> u64 {
        self.with(|d| d.throttled_periods)
    }

    /// A round run early by the memory watch.
    pub fn early_round(&self) {
        self.with(|d| d.early_rounds += 1)
    }

    /// Rounds run early by the memory watch so far.
    pub fn early_rounds(&self) -> u64 {
        self.with(|d| d.early_rounds)
    }

    pub fn plan_source_error(&self) {
        self.with(|d| d.plan_source_errors += 1)
    }

    /// What the runtime can do, and whether shaping fell back to recommend.
    pub fn runtime_capabilities(&self, can_update: bool, forced_recommend: bool) {
        self.with(|d| {
            d.runtime_cannot_update = !can_update;
            d.forced_recommend = forced_recommend;
        });
    }

    pub fn docker_up(&self, up: bool) {
        self.with(|d| d.docker_up = up)
    }

    /// Node gauges after a round.
    pub fn node(
        &self,
        ContainerCounts {
            running,
            evicted,
            oom_killed,
        }: ContainerCounts,
        capacity: Resources,
        allocated: Resources,
        requested: Resources,
        used: Resources,
    ) {
        self.with(|d| {
            d.running = running;
            d.evicted = evicted;
            d.oom_killed = oom_killed;
            d.capacity = capacity;
            d.allocated = allocated;
            d.requested = requested;
            d.used = used;
        })
    }

    /// The link to the shaper after a round (`None` in standalone mode).
    pub fn shaper_link(&self, link: Option<LinkStatus>) {
        self.with(|d| d.shaper_link = link)
    }

    /// The link to the shaper as of the last round (cluster mode).
    pub fn link(&self) -> Option<LinkStatus> {
        self.with(|d| d.shaper_link.clone())
    }

    /// Count of one action series (for tests and `/v1/decisions`).
    pub fn action_count(&self, kind: &str, result: &str) -> u64 {
        self.with(|d| {
            d.actions
                .iter()
                .filter(|((k, r), _)| *k == kind && *r == result)
                .map(|(_, v)| *v)
                .sum()
        })
    }

    pub fn oom_events(&self) -> u64 {
        self.with(|d| d.oom_events)
    }

    /// OOM kills found by `inspect` that the event stream missed.
    pub fn oom_recovered(&self) -> u64 {
        self.with(|d| d.oom_recovered)
    }

    pub fn rounds(&self) -> (u64, u64) {
        self.with(|d| (d.rounds, d.round_errors))
    }

    /// Unix time of the last finished round (0 before the first).
    pub fn last_round_unix_s(&self) -> f64 {
        self.with(|d| d.last_round_unix_s)
    }

    /// Prometheus text format (with this process's CPU time and memory).
    pub fn render(&self) -> String {
        let d = self.with(|d| d.clone());
        let mut t = PromText::with_capacity(4096);
        t.single(
            "tailor_agent_rounds_total",
            "counter",
            "Shaping rounds run.",
            d.rounds,
        )
        .single(
            "tailor_agent_early_rounds_total",
            "counter",
            "Rounds run before their time by the memory watch (mem_watch_s).",
            d.early_rounds,
        )
        .single(
            "tailor_agent_round_errors_total",
            "counter",
            "Rounds that failed (runtime or plan source unavailable).",
            d.round_errors,
        )
        .family(
            "tailor_agent_round_duration_seconds",
            "summary",
            "Duration of shaping rounds.",
        )
        .sample(
            "tailor_agent_round_duration_seconds_sum",
            "",
            d.round_seconds_sum,
        )
        .sample("tailor_agent_round_duration_seconds_count", "", d.rounds)
        .single(
            "tailor_agent_last_round_duration_seconds",
            "gauge",
            "Duration of the last round.",
            d.round_seconds_last,
        );
        t.single(
            "tailor_agent_cpu_throttled_periods_total",
            "counter",
            "CFS periods in which a managed container was throttled (cpu.stat nr_throttled, summed).",
            d.throttled_periods,
        )
        .single(
            "tailor_agent_cpu_throttled_seconds_total",
            "counter",
            "Time managed containers were throttled (cpu.stat throttled_usec, summed).",
            d.throttled_seconds,
        )
        .single(
            "tailor_agent_containers_throttled",
            "gauge",
            "Managed containers throttled in the last round.",
            d.throttled_containers,
        );
        let name = "tailor_agent_runtime_errors_total";
        t.family(
            name,
            "counter",
            "Failed container runtime calls by operation.",
        );
        for op in OPS.iter().chain(std::iter::once(&"other")) {
            let n = d.runtime_errors.get(op).copied().unwrap_or(0);
            t.sample(name, &format!("op=\"{op}\""), n);
        }
        let name = "tailor_agent_actions_total";
        t.family(name, "counter", "Actions by kind and result.");
        for kind in ["resize", "evict", "restart"] {
            for result in RESULTS {
                let n = d.actions.get(&(kind, result)).copied().unwrap_or(0);
                t.sample(name, &format!("kind=\"{kind}\",result=\"{result}\""), n);
            }
        }
        t.single(
            "tailor_agent_oom_events_total",
            "counter",
            "OOM kills of managed containers (event stream or inspect).",
            d.oom_events,
        )
        .single(
            "tailor_agent_oom_recovered_total",
            "counter",
            "OOM kills the event stream missed, found by inspect (State.OOMKilled).",
            d.oom_recovered,
        )
        .single(
            "tailor_agent_plan_source_errors_total",
            "counter",
            "Rounds whose plan source failed.",
            d.plan_source_errors,
        )
        .single(
            "tailor_agent_runtime_up",
            "gauge",
            "1 when the last runtime call succeeded.",
            u8::from(d.docker_up),
        );
        t.single(
            "tailor_agent_runtime_can_update",
            "gauge",
            "1 when the container runtime can resize running containers (probed at start).",
            u8::from(!d.runtime_cannot_update),
        )
        .single(
            "tailor_agent_recommend_forced",
            "gauge",
            "1 when actuation = \"shape\" is configured but the runtime cannot resize, so the agent only recommends.",
            u8::from(d.forced_recommend),
        );
        let name = "tailor_agent_managed_containers";
        t.family(name, "gauge", "Managed containers by state.")
            .sample(name, "state=\"running\"", d.running)
            .sample(name, "state=\"evicted\"", d.evicted)
            .sample(name, "state=\"oom_killed\"", d.oom_killed);
        for (name, help, r) in [
            (
                "tailor_agent_node_capacity",
                "Capacity for managed containers (cores, bytes).",
                d.capacity,
            ),
            (
                "tailor_agent_node_allocated",
                "Sum of managed containers' limits (cores, bytes).",
                d.allocated,
            ),
            (
                "tailor_agent_node_requested",
                "Sum of managed containers' requests (cores, bytes).",
                d.requested,
            ),
            (
                "tailor_agent_node_used",
                "Sum of managed containers' usage: CPU cores, memory working set bytes.",
                d.used,
            ),
        ] {
            t.family(name, "gauge", help)
                .sample(name, "resource=\"cpu\"", r.cpu_cores)
                .sample(name, "resource=\"mem\"", r.mem_bytes);
        }
        if let Some(link) = &d.shaper_link {
            render_link(&mut t, link);
        }
        if let Some(p) = ProcessStats::read("self") {
            t.process(&p, "agent");
        }
        t.finish()
    }
}

/// Cluster mode: the state of the link to the shaper.
fn render_link(t: &mut PromText, link: &LinkStatus) {
    let name = "tailor_agent_shaper_link";
    t.family(
        name,
        "gauge",
        "Link to the central shaper: 1 for the current state (connected; holding or regrowing = failing safe).",
    );
    for s in ["connected", "holding", "regrowing"] {
        t.sample(
            name,
            &format!("state=\"{s}\""),
            u8::from(link.state.as_str() == s),
        );
    }
    t.single(
        "tailor_agent_shaper_last_success_timestamp_seconds",
        "gauge",
        "Unix time of the last report the shaper accepted (0: none yet).",
        link.last_ok_s.unwrap_or(0.0),
    )
    .single(
        "tailor_agent_shaper_report_failures_total",
        "counter",
        "Reports to the shaper that failed (unreachable or refused).",
        link.failures,
    )
    .single(
        "tailor_agent_shaper_rejected_components",
        "gauge",
        "Components the shaper refused to plan for in the last report (request over the host's capacity).",
        link.rejected_components,
    );
}

/// True while the agent fails safe (the shaper is not answering).
pub fn failing_safe(link: &LinkStatus) -> bool {
    !matches!(link.state, LinkState::Connected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_series_with_bounded_labels() {
        let m = Metrics::new();
        m.round(true, 0.5, 1.0);
        m.round(false, 1.5, 2.0);
        m.runtime_error("stats");
        m.runtime_error("something-else");
        m.action("resize", "applied");
        m.action("bogus", "bogus");
        m.oom_event(false);
        m.oom_event(true);
        let text = m.render();
        assert!(text.contains("tailor_agent_rounds_total 2\n"));
        assert!(text.contains("tailor_agent_round_errors_total 1\n"));
        assert!(text.contains("tailor_agent_runtime_errors_total{op=\"stats\"} 1\n"));
        assert!(text.contains("tailor_agent_runtime_errors_total{op=\"other\"} 1\n"));
        assert!(text.contains("tailor_agent_actions_total{kind=\"resize\",result=\"applied\"} 1\n"));
        assert!(text.contains("tailor_agent_oom_events_total 2\n"));
        assert!(text.contains("tailor_agent_oom_recovered_total 1\n"));
        assert_eq!(m.action_count("resize", "applied"), 1);
        // every sample line is "name{labels} value" or "name value"
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let value = line.rsplit(' ').next().expect("value");
            assert!(value.parse::<f64>().is_ok(), "bad line {line}");
        }
        let series = text.lines().filter(|l| !l.starts_with('#')).count();
        // the same number of series whatever happened
        let m2 = Metrics::new();
        assert_eq!(
            m2.render().lines().filter(|l| !l.starts_with('#')).count(),
            series
        );
    }
}

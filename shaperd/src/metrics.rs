//! The shaper's `/metrics` (Prometheus text format 0.0.4). Label sets are
//! fixed (endpoints, status classes, action kinds): no per-agent labels, so
//! cardinality stays bounded whatever the cluster size.

use crate::prom::PromText;
pub use crate::prom::{sample, ProcessStats};
use std::collections::VecDeque;

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

    /// The histogram family (unlabelled).
    fn render(&self, t: &mut PromText, name: &str, help: &str) {
        t.family(name, "histogram", help);
        let bucket = format!("{name}_bucket");
        for (i, b) in LATENCY_BUCKETS_S.iter().enumerate() {
            t.sample(&bucket, &format!("le=\"{b}\""), self.counts[i]);
        }
        t.sample(&bucket, "le=\"+Inf\"", self.count)
            .sample(&format!("{name}_sum"), "", self.sum_s)
            .sample(&format!("{name}_count"), "", self.count);
    }

    /// A summary family of the quantiles `qs` of the window (with the
    /// window's `_sum` and `_count`, as the format requires).
    fn render_quantiles(&self, t: &mut PromText, name: &str, help: &str, qs: &[f64]) {
        t.family(name, "summary", help);
        for &q in qs {
            if let Some(v) = self.quantile(q) {
                t.sample(name, &format!("quantile=\"{q}\""), v);
            }
        }
        t.sample(&format!("{name}_sum"), "", self.window.iter().sum::<f64>())
            .sample(&format!("{name}_count"), "", self.window.len());
    }
}

/// Endpoints counted in `tailor_shaper_requests_total`.
pub const ENDPOINTS: [&str; 6] = ["report", "ack", "status", "metrics", "healthz", "other"];
/// Status classes counted (exact codes the server produces).
pub const CODES: [u16; 13] = [
    200, 400, 401, 403, 404, 405, 408, 409, 413, 429, 431, 500, 503,
];

/// Everything `/metrics` shows apart from the state's own gauges.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub round_latency: LatencyHistogram,
    pub report_latency: LatencyHistogram,
    pub rounds_total: u64,
    /// Rounds planned early, for an agent's early report.
    pub early_rounds_total: u64,
    /// Early reports taken in (see [`crate::protocol::ReportRequest::early`]).
    pub early_reports_total: u64,
    /// Report bodies read, in JSON and in MessagePack
    /// ([`crate::protocol::Encoding`]): how far agents have moved to
    /// MessagePack.
    pub report_bodies_total: [u64; 2],
    pub rounds_skipped_warmup: u64,
    pub rounds_skipped_no_agents: u64,
    /// Rounds not handed out: their actions could not be stored.
    pub rounds_skipped_store: u64,
    /// resize, evict_component, evict_application.
    pub actions_total: [u64; 3],
    pub actions_dropped_stale: u64,
    /// Containers reported by two agents in the latest round.
    pub last_round_duplicates: u64,
    requests: [[u64; CODES.len() + 1]; ENDPOINTS.len()],
    pub last_round_components: u64,
    /// Credentials file reloads: ok, error.
    pub credential_reloads: [u64; 2],
    /// Credentials files refused by the shared store (stale generation, or
    /// revoked keys in them).
    pub credential_publications_refused: u64,
}

impl Metrics {
    /// A report body read in `encoding`.
    pub fn count_report_body(&mut self, encoding: crate::protocol::Encoding) {
        let i = usize::from(encoding == crate::protocol::Encoding::MessagePack);
        self.report_bodies_total[i] += 1;
    }

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
    /// Estimated bytes of the stored reports.
    pub state_mem_bytes: u64,
    pub refusals: crate::state::RefusalCounters,
    pub conns: crate::serve::ConnCounts,
    /// Agent credentials in force.
    pub credentials: u64,
    /// False once the round loop is dead or late.
    pub round_loop_up: bool,
    /// True on the leader (always on a lone shaper).
    pub leader: bool,
}

/// Renders all metrics as Prometheus text.
pub fn render(m: &Metrics, g: &Gauges, process: Option<ProcessStats>) -> String {
    let mut t = PromText::with_capacity(8192);
    m.round_latency.render(
        &mut t,
        "tailor_shaper_round_duration_seconds",
        "Time to build the cluster view, run decide() and hand out actions, per round.",
    );
    m.round_latency.render_quantiles(
        &mut t,
        "tailor_shaper_round_duration_quantile_seconds",
        &format!("Round latency quantiles over the last {QUANTILE_WINDOW} rounds."),
        &[0.5, 0.9, 0.99, 1.0],
    );
    m.report_latency.render(
        &mut t,
        "tailor_shaper_report_duration_seconds",
        "Server-side handling time of POST /v1/report (parse, validate, record).",
    );
    m.report_latency.render_quantiles(
        &mut t,
        "tailor_shaper_report_duration_quantile_seconds",
        &format!("Report handling quantiles over the last {QUANTILE_WINDOW} reports."),
        &[0.5, 0.99],
    );
    t.single(
        "tailor_shaper_rounds_total",
        "counter",
        "Shaping rounds planned.",
        m.rounds_total,
    );
    t.single(
        "tailor_shaper_early_rounds_total",
        "counter",
        "Shaping rounds planned before their time for an agent's early report (its memory watch).",
        m.early_rounds_total,
    );
    t.single(
        "tailor_shaper_early_reports_total",
        "counter",
        "Reports an agent sent early (a container used half its memory headroom).",
        m.early_reports_total,
    );
    let name = "tailor_shaper_report_bodies_total";
    t.family(name, "counter", "Report bodies read, by encoding.")
        .sample(name, "encoding=\"json\"", m.report_bodies_total[0])
        .sample(name, "encoding=\"msgpack\"", m.report_bodies_total[1]);
    let name = "tailor_shaper_rounds_skipped_total";
    t.family(name, "counter", "Rounds not planned, by reason.")
        .sample(name, "reason=\"warmup\"", m.rounds_skipped_warmup)
        .sample(name, "reason=\"no_agents\"", m.rounds_skipped_no_agents)
        .sample(name, "reason=\"store\"", m.rounds_skipped_store);
    t.single(
        "tailor_shaper_round",
        "gauge",
        "Number of the latest round.",
        g.round,
    );
    let name = "tailor_shaper_agents";
    t.family(name, "gauge", "Known agents by state.")
        .sample(name, "state=\"live\"", g.agents_live)
        .sample(name, "state=\"stale\"", g.agents_stale);
    t.single(
        "tailor_shaper_agents_known",
        "gauge",
        "Known agents (live + stale).",
        g.agents_live + g.agents_stale,
    )
    .single(
        "tailor_shaper_components",
        "gauge",
        "Components in the latest reports.",
        g.components,
    );
    let name = "tailor_shaper_actions_total";
    t.family(name, "counter", "Actions handed to agents, by kind.");
    for (k, n) in ["resize", "evict_component", "evict_application"]
        .iter()
        .zip(m.actions_total)
    {
        t.sample(name, &format!("kind=\"{k}\""), n);
    }
    t.single(
        "tailor_shaper_actions_dropped_stale_total",
        "counter",
        "Planned actions not handed out because their agent is stale.",
        m.actions_dropped_stale,
    );
    t.single(
        "tailor_shaper_duplicate_components",
        "gauge",
        "Containers reported by two agents in the latest round (the second copy is frozen).",
        m.last_round_duplicates,
    );
    let name = "tailor_shaper_acks_total";
    t.family(name, "counter", "Action acknowledgements, by outcome.")
        .sample(name, "outcome=\"applied\"", g.acks_applied)
        .sample(name, "outcome=\"failed\"", g.acks_failed)
        .sample(name, "outcome=\"unknown\"", g.acks_unknown);
    let name = "tailor_shaper_requests_total";
    t.family(
        name,
        "counter",
        "HTTP requests by endpoint and status code.",
    );
    for (e, ep) in ENDPOINTS.iter().enumerate() {
        let codes = CODES.iter().map(|c| c.to_string());
        for (c, code) in codes
            .chain(std::iter::once("other".to_string()))
            .enumerate()
        {
            let n = m.requests[e][c];
            if n > 0 {
                t.sample(name, &format!("endpoint=\"{ep}\",code=\"{code}\""), n);
            }
        }
    }
    render_hardening(&mut t, m, g);
    if let Some(p) = process {
        t.process(&p, "shaper");
    }
    t.finish()
}

/// Identity, caps and connection bounds.
fn render_hardening(t: &mut PromText, m: &Metrics, g: &Gauges) {
    t.single(
        "tailor_shaper_state_memory_bytes",
        "gauge",
        "Estimated memory of the stored reports (what max_state_mem_bytes caps).",
        g.state_mem_bytes,
    );
    let name = "tailor_shaper_reports_refused_total";
    t.family(
        name,
        "counter",
        "Reports (and acks) refused with nothing changed, by reason: forbidden (agent id not the credential's), replayed (stale sequence), or the cap hit.",
    )
    .sample(name, "reason=\"forbidden\"", g.refusals.forbidden)
    .sample(name, "reason=\"replayed\"", g.refusals.replayed);
    for (cap, n) in crate::limits::Cap::ALL.iter().zip(g.refusals.limit) {
        t.sample(name, &format!("reason=\"{}\"", cap.as_str()), n);
    }
    let name = "tailor_shaper_components_rejected_total";
    t.family(
        name,
        "counter",
        "Reported components left out of the view, by reason.",
    )
    .sample(
        name,
        "reason=\"exceeds_host_capacity\"",
        g.refusals.components_over_capacity,
    )
    .sample(
        name,
        "reason=\"application_not_allowed\"",
        g.refusals.components_out_of_scope,
    );
    t.single(
        "tailor_shaper_credentials",
        "gauge",
        "Agent credentials in force.",
        g.credentials,
    );
    let name = "tailor_shaper_credential_reloads_total";
    t.family(
        name,
        "counter",
        "Reloads of the credentials file, by result.",
    )
    .sample(name, "result=\"ok\"", m.credential_reloads[0])
    .sample(name, "result=\"error\"", m.credential_reloads[1]);
    t.single(
        "tailor_shaper_credentials_refused_total",
        "counter",
        "Credentials files the shared store (etcd) refused: older than its credentials, or holding revoked keys (see the error log).",
        m.credential_publications_refused,
    );
    t.single(
        "tailor_shaper_round_loop_up",
        "gauge",
        "1 while the round loop runs and ticks (0: /healthz answers 503).",
        u8::from(g.round_loop_up),
    )
    .single(
        "tailor_shaper_leader",
        "gauge",
        "1 on the replica that plans rounds (always on a lone shaper), 0 on a follower.",
        u8::from(g.leader),
    )
    .single(
        "tailor_shaper_connections",
        "gauge",
        "Open HTTP connections.",
        g.conns.open,
    )
    .single(
        "tailor_shaper_connections_accepted_total",
        "counter",
        "HTTP connections accepted.",
        g.conns.accepted,
    )
    .single(
        "tailor_shaper_connections_refused_total",
        "counter",
        "HTTP connections closed at once because max_connections were open.",
        g.conns.refused,
    )
    .single(
        "tailor_shaper_connections_idle_closed_total",
        "counter",
        "HTTP connections closed after idle_timeout_s without I/O.",
        g.conns.idle_closed,
    );
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
        assert_eq!(sample(&text, "tailor_shaper_agents_known"), Some(4.0));
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
}

//! Per-container recommendations (what `tailor recommendations` prints and
//! `/v1/recommendations` serves): per managed container and resource, the
//! current limit, a lower / target / upper recommendation, a confidence,
//! the binding reason and what was applied.
//!
//! * `target`: the kernel's planned allocation when this round's plan
//!   resized the container (its explanation's `target`), else the same rule
//!   computed from the forecast: `mean` plus the kernel's buffer
//!   ([`shaper::buffer`]: `k1 * request + (upper(k2) - mean)`, plus
//!   `mem_margin * mean` for memory, or the `memory_risk` band) through the
//!   kernel's bounds ([`shaper::limits::bound_target`]: floor, rounding,
//!   ceiling `request * max_growth`, current use);
//! * `lower`: the mean plus the dynamic band alone (`upper(k2) - mean`),
//!   without the constant headroom (below it shortfalls are expected more
//!   often than `k2` allows), at least the floor, at most the target;
//! * `upper`: the target's buffer with the dynamic band counted twice
//!   (`upper(2 * k2) + k1 * request` for a Gaussian forecast), at most the
//!   ceiling, at least the target;
//! * without a forecast (warm-up, too little history) all three are the
//!   request and the confidence is `low`;
//! * a managed container that is not running (evicted or OOM-killed and
//!   waiting for room, stopped, exited: [`Recommendation::stopped`]) is
//!   listed with its limits now and its request as all three.
//!
//! Shown values have hysteresis: a new target replaces the one shown only
//! when it differs by more than [`SHOWN_HYSTERESIS`] (relative), so the view
//! does not jump from round to round; lower and upper move with it.

use crate::agent::RoundReport;
use crate::view::{NodeActionKind, Outcome, StoppedContainer, StoppedState};
use serde::{Deserialize, Serialize};
use shaper::plan::{Action, Basis, Bound};
use shaper::{AppSize, Class, ShaperConfig};
use std::collections::BTreeMap;

/// Relative change a target needs before the shown value moves.
pub const SHOWN_HYSTERESIS: f64 = 0.10;
const MIB: f64 = 1024.0 * 1024.0;

/// CPU or memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    Cpu,
    Mem,
}

impl ResourceKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ResourceKind::Cpu => "cpu",
            ResourceKind::Mem => "memory",
        }
    }

    /// The unit values are shown in: cores or MiB.
    pub fn unit(&self) -> &'static str {
        match self {
            ResourceKind::Cpu => "cores",
            ResourceKind::Mem => "MiB",
        }
    }
}

/// How much the forecast can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// No forecast yet, or fewer than `min_history_samples` samples.
    Low,
    /// Less than [`HIGH_CONFIDENCE_SAMPLES`] samples.
    Medium,
    High,
}

/// Samples a model needs before its confidence is `high`.
pub const HIGH_CONFIDENCE_SAMPLES: u64 = 360;

/// One container and resource. CPU values in cores, memory in MiB.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub container: String,
    pub app: String,
    pub resource: ResourceKind,
    /// `cores` or `MiB`.
    pub unit: String,
    /// The limit in force; `None` when the container has none.
    pub current_limit: Option<f64>,
    pub request: f64,
    pub usage: f64,
    pub lower: f64,
    pub target: f64,
    pub upper: f64,
    pub confidence: Confidence,
    /// Why the target is what it is (basis and bound, or the plan's reason).
    pub reason: String,
    /// What happened to this round's action for the container:
    /// `applied`, `recommended`, `refused: ...`, or `none`.
    pub applied: String,
    /// Why the container is not running (`None`: it runs): evicted or
    /// OOM-killed and waiting for room, stopped, exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StoppedState>,
}

impl Recommendation {
    /// `running`, or why it is not (`oom-killed, waiting for room`).
    pub fn state(&self) -> String {
        self.stopped
            .map_or_else(|| "running".to_string(), |s| s.to_string())
    }
}

/// Every recommendation of one round.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Recommendations {
    pub node: String,
    pub round: u64,
    pub at_s: f64,
    pub actuation: String,
    pub items: Vec<Recommendation>,
}

/// Shown targets per (container name, resource), for hysteresis.
#[derive(Debug, Default)]
pub struct Shown {
    targets: BTreeMap<(String, ResourceKind), f64>,
}

impl Shown {
    /// The value to show for a new `target`: the previous one while within
    /// [`SHOWN_HYSTERESIS`].
    fn settle(&mut self, name: &str, r: ResourceKind, target: f64) -> f64 {
        let key = (name.to_string(), r);
        match self.targets.get(&key) {
            Some(&prev) if prev > 0.0 && ((target - prev) / prev).abs() <= SHOWN_HYSTERESIS => prev,
            _ => {
                self.targets.insert(key, target);
                target
            }
        }
    }

    /// Forgets containers not in `names`.
    fn retain(&mut self, names: &std::collections::BTreeSet<&str>) {
        self.targets.retain(|(n, _), _| names.contains(n.as_str()));
    }
}

fn bound_str(b: Bound) -> &'static str {
    match b {
        Bound::Buffer => "forecast + buffer",
        Bound::Floor => "raised to the floor",
        Bound::Reservation => "raised to its memory reservation",
        Bound::Ceiling => "cut to the ceiling (request x max_growth)",
        Bound::Usage => "raised to current use",
        Bound::OomFloor => "raised to its OOM floor",
        Bound::HostShare => "cut to what was left on the host",
    }
}

fn basis_str(b: Basis) -> &'static str {
    match b {
        Basis::Forecast => "forecast",
        Basis::GracePeriod => "grace period: targets its request",
        Basis::NoForecast => "no forecast yet: targets its request",
        Basis::FailureLimit => "failure limit reached: targets its request",
        Basis::Baseline => "baseline policy: request",
        Basis::Withheld => "another node's sizing: not sent",
    }
}

/// Builds this round's recommendations from its report. `unlimited(name)`
/// tells which resources of a container have no limit (cpu, mem).
pub fn build(
    report: &RoundReport,
    cfg: &ShaperConfig,
    shown: &mut Shown,
    unlimited: impl Fn(&str) -> (bool, bool),
) -> Recommendations {
    let view = &report.view;
    // the plan's explanation per container (ComponentId = index in the view)
    let mut planned = BTreeMap::new();
    if let Some(plan) = &report.plan {
        for a in &plan.actions {
            if let Action::Resize {
                component,
                explanation,
                ..
            } = a
            {
                planned.insert(component.0 as usize, explanation.clone());
            }
        }
    }
    let mut items = Vec::with_capacity(view.containers.len() * 2);
    let app_sizes = view.app_sizes();
    let app_mem_ref_gib = if cfg.app_mem_rule() {
        let mut app_mem: Vec<f64> = app_sizes.values().map(|s| s.mem_bytes).collect();
        cfg.app_mem_ref_in(&mut app_mem)
    } else {
        0.0
    };
    // The kernel's components, for the targets of containers the plan did
    // not resize (ComponentId = index in the view).
    let cluster = shaper::node::node_cluster_view(view);
    let mut components: BTreeMap<usize, (&shaper::Application, &shaper::Component)> =
        BTreeMap::new();
    for a in &cluster.apps {
        for comp in &a.components {
            components.insert(comp.id.0 as usize, (a, comp));
        }
    }
    for (i, c) in view.containers.iter().enumerate() {
        let size = app_sizes
            .get(c.meta.app.as_str())
            .copied()
            .unwrap_or(AppSize {
                components: 1,
                core_components: usize::from(c.meta.class == Class::Core),
                mem_bytes: c.request.mem_bytes,
                restarts_alone: c.meta.restarts_alone,
            });
        let k1 = cfg.k1_for_class(size, cfg.k1_for(size, app_mem_ref_gib), c.meta.class);
        // what the kernel targets for it before hysteresis and the host's room
        let kernel = components.get(&i).map(|(a, comp)| {
            shaper::decide::target_with_k1(
                a,
                comp,
                view.at_s,
                cfg,
                k1,
                cfg.is_small(size, c.meta.class),
            )
        });
        let outcome = report
            .outcomes
            .iter()
            .find(|o| o.action.container_id == c.meta.id);
        let (no_cpu, no_mem) = unlimited(&c.meta.name);
        for r in [ResourceKind::Cpu, ResourceKind::Mem] {
            let applied = outcome.map_or_else(|| "none".to_string(), |o| applied_str(o, r));
            let (scale, req, alloc, used, floor, unlimited) = match r {
                ResourceKind::Cpu => (
                    1.0,
                    c.request.cpu_cores,
                    c.allocation.cpu_cores,
                    c.usage.cpu_cores,
                    cfg.min_cpu_cores,
                    no_cpu,
                ),
                ResourceKind::Mem => (
                    MIB,
                    c.request.mem_bytes,
                    c.allocation.mem_bytes,
                    c.usage.mem_bytes,
                    cfg.min_mem_bytes.max(c.meta.mem_floor_bytes),
                    no_mem,
                ),
            };
            let forecast = c.forecast.as_ref().map(|f| match r {
                ResourceKind::Cpu => &f.cpu,
                ResourceKind::Mem => &f.mem,
            });
            let confidence = match forecast {
                None => Confidence::Low,
                Some(_) if c.samples < cfg.min_history_samples as u64 => Confidence::Low,
                Some(_) if c.samples < HIGH_CONFIDENCE_SAMPLES => Confidence::Medium,
                Some(_) => Confidence::High,
            };
            let ceiling = shaper::limits::ceiling(req, cfg.max_growth);
            let (lower, mut target, upper, reason) = match forecast {
                None => (req, req, req, "no forecast yet: its request".to_string()),
                Some(p) => {
                    let resource = match r {
                        ResourceKind::Cpu => shaper::Resource::Cpu,
                        ResourceKind::Mem => shaper::Resource::Mem,
                    };
                    // the band around the kernel's target: without the
                    // constant terms, and with the dynamic term doubled
                    let b = shaper::buffer(resource, p, req, cfg, k1);
                    let lower = (p.mean + b.k2_term).max(floor);
                    let upper = (p.mean + b.total() + b.k2_term).min(ceiling);
                    // the plan's sizing, else the kernel's target (holds,
                    // floors, reservation, ceiling and current use included)
                    let sized = planned
                        .get(&i)
                        .map(|e| (e.basis, *e.sizing(resource)))
                        .or_else(|| kernel.map(|t| (t.basis, *t.sizing(resource))));
                    match sized {
                        Some((basis, s)) => {
                            let reason = if basis == Basis::Forecast {
                                bound_str(s.bound).to_string()
                            } else {
                                basis_str(basis).to_string()
                            };
                            (lower.min(s.target), s.target, upper.max(s.target), reason)
                        }
                        None => (req, req, req, "not in the view: its request".to_string()),
                    }
                }
            };
            let shown_target = shown.settle(&c.meta.name, r, target / scale);
            let shift = shown_target - target / scale;
            target = shown_target;
            items.push(Recommendation {
                container: c.meta.name.clone(),
                app: c.meta.app.clone(),
                resource: r,
                unit: r.unit().to_string(),
                current_limit: (!unlimited).then_some(alloc / scale),
                request: req / scale,
                usage: used / scale,
                lower: (lower / scale + shift).min(target),
                target,
                upper: (upper / scale + shift).min(ceiling / scale).max(target),
                confidence,
                reason,
                applied,
                stopped: None,
            });
        }
    }
    for s in &view.stopped {
        items.extend(stopped_rows(report, s, unlimited(&s.name)));
    }
    let names = view
        .containers
        .iter()
        .map(|c| c.meta.name.as_str())
        .collect();
    shown.retain(&names);
    Recommendations {
        node: view.node.clone(),
        round: report.round,
        at_s: report.at_s,
        actuation: report.actuation.as_str().to_string(),
        items,
    }
}

/// The rows of a managed container that is not running: its limits now
/// (what a `docker start` runs it at), no use, and its request as the
/// target (a container started again gets its request: the grace period,
/// and after an OOM kill below the request the OOM floor). `unlimited`:
/// (cpu, mem) without a limit.
fn stopped_rows(
    report: &RoundReport,
    s: &StoppedContainer,
    (no_cpu, no_mem): (bool, bool),
) -> [Recommendation; 2] {
    let applied = if report.restarted.contains(&s.name) {
        "restarted".to_string()
    } else if report.restored.iter().any(|r| r.container == s.name) {
        "original limits restored".to_string()
    } else {
        "none".to_string()
    };
    let row = |r: ResourceKind| {
        let (scale, req, alloc, unlimited) = match r {
            ResourceKind::Cpu => (1.0, s.request.cpu_cores, s.allocation.cpu_cores, no_cpu),
            ResourceKind::Mem => (MIB, s.request.mem_bytes, s.allocation.mem_bytes, no_mem),
        };
        Recommendation {
            container: s.name.clone(),
            app: s.app.clone(),
            resource: r,
            unit: r.unit().to_string(),
            current_limit: (!unlimited).then_some(alloc / scale),
            request: req / scale,
            usage: 0.0,
            lower: req / scale,
            target: req / scale,
            upper: req / scale,
            confidence: Confidence::Low,
            reason: "not running: its request when started".to_string(),
            applied: applied.clone(),
            stopped: Some(s.state),
        }
    };
    [row(ResourceKind::Cpu), row(ResourceKind::Mem)]
}

/// What was done to a container, as shown on its `r` row: the action and
/// its result, with the notes about that resource only (a note on the CPU
/// limit does not belong on the memory row).
fn applied_str(o: &crate::ActionOutcome, r: ResourceKind) -> String {
    let what = match o.action.kind {
        NodeActionKind::Resize { .. } => "resize",
        NodeActionKind::Evict { .. } => "evict",
    };
    match (&o.result, &o.error) {
        (Outcome::Refused | Outcome::Failed, Some(e)) => format!("{what} {}: {e}", o.result),
        (_, Some(note)) => {
            let other = match r {
                ResourceKind::Cpu => "memory",
                ResourceKind::Mem => "CPU",
            };
            let mine: Vec<&str> = note.split("; ").filter(|n| !n.contains(other)).collect();
            if mine.is_empty() {
                format!("{what} {}", o.result)
            } else {
                format!("{what} {} ({})", o.result, mine.join("; "))
            }
        }
        _ => format!("{what} {}", o.result),
    }
}

/// The recommendations as CSV (header line first; values in cores / MiB).
pub fn to_csv(r: &Recommendations) -> String {
    let mut out = String::from(
        "container,app,resource,unit,current_limit,request,usage,lower,target,upper,confidence,reason,applied,state\n",
    );
    // the one sanitiser of every printer (no escape reaches a terminal
    // through `| cat`, no newline splits a row), then CSV quoting
    let q = |s: &str| {
        let s = crate::text::printable(s);
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s
        }
    };
    for i in &r.items {
        let num = |v: f64| match i.resource {
            ResourceKind::Cpu => format!("{v:.3}"),
            ResourceKind::Mem => format!("{v:.1}"),
        };
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            q(&i.container),
            q(&i.app),
            i.resource.as_str(),
            q(&i.unit),
            i.current_limit.map(num).unwrap_or_else(|| "none".into()),
            num(i.request),
            num(i.usage),
            num(i.lower),
            num(i.target),
            num(i.upper),
            match i.confidence {
                Confidence::Low => "low",
                Confidence::Medium => "medium",
                Confidence::High => "high",
            },
            q(&i.reason),
            q(&i.applied),
            q(&i.state()),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A note about one resource shows on that resource's row only.
    #[test]
    fn notes_go_to_their_resource_row() {
        let o = crate::ActionOutcome {
            action: shaper::node::NodeAction {
                action_id: None,
                container_id: "c".into(),
                container_name: "c".into(),
                kind: NodeActionKind::Resize {
                    from: shaper::Resources::new(1.0, 1e9),
                    to: shaper::Resources::new(0.5, 5e8),
                },
                explanation: String::new(),
            },
            result: Outcome::Applied,
            error: Some("no CPU limit set: started without one (manage_unlimited = false)".into()),
        };
        assert_eq!(applied_str(&o, ResourceKind::Mem), "resize applied");
        assert!(applied_str(&o, ResourceKind::Cpu).contains("no CPU limit set"));
    }

    #[test]
    fn shown_target_has_hysteresis() {
        let mut s = Shown::default();
        assert_eq!(s.settle("a", ResourceKind::Cpu, 0.30), 0.30);
        // within 10 %: the shown value stays
        assert_eq!(s.settle("a", ResourceKind::Cpu, 0.32), 0.30);
        assert_eq!(s.settle("a", ResourceKind::Cpu, 0.28), 0.30);
        // beyond: it moves
        assert_eq!(s.settle("a", ResourceKind::Cpu, 0.60), 0.60);
        // per resource
        assert_eq!(s.settle("a", ResourceKind::Mem, 100.0), 100.0);
        let names = ["b"].into_iter().collect();
        s.retain(&names);
        assert_eq!(s.settle("a", ResourceKind::Cpu, 0.9), 0.9);
    }

    /// A round in which the plan left the container alone (no resize).
    const UNPLANNED: &str = r#"{"round": 5, "at_s": 1000.0, "actuation": "recommend", "source": "local",
            "view": {"node": "n", "round": 5, "at_s": 1000.0,
              "capacity": {"cpu_cores": 2.0, "mem_bytes": 8e9},
              "containers": [{"id": "c1", "name": "web-1", "app": "web", "class": "core",
                "priority": 0, "protected": false, "started_s": 0.0,
                "request": {"cpu_cores": 1.0, "mem_bytes": 536870912.0},
                "allocation": {"cpu_cores": 1.0, "mem_bytes": 536870912.0},
                "usage": {"cpu_cores": 0.05, "mem_bytes": 1.2e8},
                "forecast": {"cpu": {"mean": 0.1, "std": 1.0}, "mem": {"mean": 1.2e8, "std": 1e6}},
                "forecast_source": "own", "samples": 68, "oom_kills": 0, "app_failures": 0}]},
            "outcomes": [], "restarted": [], "errors": []}"#;

    /// The recommendation of a container the plan did not resize is still
    /// bounded as the kernel bounds targets.
    #[test]
    fn unplanned_targets_are_cut_to_the_ceiling() {
        let report: RoundReport = serde_json::from_str(UNPLANNED).expect("a round report");
        let cfg = ShaperConfig::uniform();
        let recs = build(&report, &cfg, &mut Shown::default(), |_| (false, false));
        let cpu = recs
            .items
            .iter()
            .find(|i| i.resource == ResourceKind::Cpu)
            .expect("cpu row");
        // mean + k1 * request + 3 sigma = 3.4 cores, request 1 core
        assert_eq!(cpu.target, 1.0, "cut to the request: {cpu:?}");
        assert!(cpu.lower <= cpu.target && cpu.upper == 1.0, "{cpu:?}");
        assert!(cpu.reason.starts_with("cut to the ceiling"), "{cpu:?}");
        let mem = recs
            .items
            .iter()
            .find(|i| i.resource == ResourceKind::Mem)
            .expect("mem row");
        assert!(
            mem.target < 512.0 && mem.reason == "forecast + buffer",
            "{mem:?}"
        );
    }

    /// The kernel's target of a container the plan did not resize: its
    /// memory reservation (400 MB, rounded up to whole MiB) and the memory it
    /// holds (300 MB) raise it, as they raise the plan's.
    #[test]
    fn unplanned_targets_are_the_kernels() {
        let with = |extra: &str, fc_extra: &str| {
            let json = UNPLANNED
                .replace(
                    r#""started_s": 0.0,"#,
                    &format!(r#""started_s": 0.0, {extra}"#),
                )
                .replace(r#""std": 1e6}"#, &format!(r#""std": 1e6}}{fc_extra}"#));
            let report: RoundReport = serde_json::from_str(&json).expect("a round report");
            let recs = build(
                &report,
                &ShaperConfig::uniform(),
                &mut Shown::default(),
                |_| (false, false),
            );
            recs.items
                .into_iter()
                .find(|i| i.resource == ResourceKind::Mem)
                .expect("mem row")
        };
        let mem = with(r#""mem_floor_bytes": 4e8,"#, "");
        // in whole steps (MiB)
        let step = shaper::limits::MEM_STEP_BYTES;
        assert_eq!(mem.target, (4e8_f64 / step).ceil() * step / MIB, "{mem:?}");
        assert_eq!(mem.reason, "raised to its memory reservation");
        let mem = with("", r#", "mem_hold_bytes": 3e8"#);
        assert!(mem.target * MIB > 3e8, "{mem:?}");
    }

    /// The application-memory rule with a reference relative to the node:
    /// its applications' memory-weighted median, as `decide()` works it out.
    #[test]
    fn a_smaller_application_on_the_node_gets_a_larger_buffer() {
        let container = |name: &str, app: &str| {
            format!(
                r#"{{"id": "{name}", "name": "{name}", "app": "{app}", "class": "core",
                "priority": 0, "protected": false, "started_s": 0.0,
                "request": {{"cpu_cores": 1.0, "mem_bytes": 536870912.0}},
                "allocation": {{"cpu_cores": 1.0, "mem_bytes": 536870912.0}},
                "usage": {{"cpu_cores": 0.05, "mem_bytes": 1.2e8}},
                "forecast": {{"cpu": {{"mean": 0.1, "std": 0.01}}, "mem": {{"mean": 1.2e8, "std": 1e3}}}},
                "forecast_source": "own", "samples": 68, "oom_kills": 0, "app_failures": 0}}"#
            )
        };
        let containers = [
            ("web-1", "web"),
            ("web-2", "web"),
            ("web-3", "web"),
            ("db-1", "db"),
        ]
        .map(|(n, a)| container(n, a))
        .join(",");
        let report: RoundReport = serde_json::from_str(&format!(
            r#"{{"round": 5, "at_s": 1000.0, "actuation": "recommend", "source": "local",
            "view": {{"node": "n", "round": 5, "at_s": 1000.0,
              "capacity": {{"cpu_cores": 8.0, "mem_bytes": 8e9}},
              "containers": [{containers}]}},
            "outcomes": [], "restarted": [], "errors": []}}"#
        ))
        .expect("a round report");
        // web holds 1.5 GiB, db 0.5: the weighted median is 1.5 GiB, the
        // reference too (X = 1). db: 0.25 ln 3 of its request; web: k1.
        let cfg = ShaperConfig {
            k1: 0.05,
            k2: 0.0,
            app_mem_ref_rel: 1.0,
            app_k1_slope: 0.25,
            ..ShaperConfig::uniform()
        };
        cfg.validate().expect("valid");
        let recs = build(&report, &cfg, &mut Shown::default(), |_| (false, false));
        let mem_target = |name: &str| {
            recs.items
                .iter()
                .find(|i| i.container == name && i.resource == ResourceKind::Mem)
                .map(|i| i.target)
                .expect("mem row")
        };
        let mean_mib = 1.2e8 / MIB;
        let want_db = mean_mib + 0.25 * 3f64.ln() * 512.0;
        let want_web = mean_mib + 0.05 * 512.0;
        assert!(
            (mem_target("db-1") - want_db).abs() < 1.0,
            "{}",
            mem_target("db-1")
        );
        assert!(
            (mem_target("web-2") - want_web).abs() < 1.0,
            "{}",
            mem_target("web-2")
        );
    }

    /// QA D10: a container that is not running is listed with its state,
    /// its limits now and its request, and what this round did to it.
    #[test]
    fn stopped_containers_are_listed_with_their_state() {
        let mut report: RoundReport = serde_json::from_str(UNPLANNED).expect("a round report");
        report.view.stopped = vec![StoppedContainer {
            id: "c2".into(),
            name: "step".into(),
            app: "step".into(),
            state: StoppedState::OomKilled {
                waiting_for_room: true,
            },
            request: shaper::Resources::new(0.5, 256.0 * MIB),
            allocation: shaper::Resources::new(0.5, 256.0 * MIB),
        }];
        report.restored = vec![crate::journal::JournalRestore {
            container: "step".into(),
            killed_at_mib: Some(51.3),
            to_cpu_cores: Some(0.5),
            to_mem_mib: Some(256.0),
        }];
        let recs = build(
            &report,
            &ShaperConfig::uniform(),
            &mut Shown::default(),
            |_| (false, false),
        );
        let rows: Vec<&Recommendation> = recs
            .items
            .iter()
            .filter(|i| i.container == "step")
            .collect();
        assert_eq!(rows.len(), 2, "{:?}", recs.items);
        let mem = rows
            .iter()
            .find(|i| i.resource == ResourceKind::Mem)
            .expect("mem row");
        assert_eq!(mem.state(), "oom-killed, waiting for room");
        assert_eq!(
            (mem.current_limit, mem.request, mem.target, mem.usage),
            (Some(256.0), 256.0, 256.0, 0.0)
        );
        assert_eq!(mem.applied, "original limits restored");
        assert!(to_csv(&recs).contains(",\"oom-killed, waiting for room\"\n"));
        // the running container's rows say so
        assert!(recs
            .items
            .iter()
            .filter(|i| i.container == "web-1")
            .all(|i| i.state() == "running"));
        // and the JSON round-trips
        let back: Recommendations =
            serde_json::from_str(&serde_json::to_string(&recs).expect("json")).expect("parse");
        assert_eq!(back, recs);
    }

    #[test]
    fn csv_quotes_and_units() {
        let r = Recommendations {
            items: vec![Recommendation {
                container: "web,1".into(),
                app: "web".into(),
                resource: ResourceKind::Mem,
                unit: "MiB".into(),
                current_limit: None,
                request: 512.0,
                usage: 40.0,
                lower: 50.0,
                target: 60.26,
                upper: 80.0,
                confidence: Confidence::Medium,
                reason: "forecast + buffer".into(),
                applied: "none".into(),
                stopped: None,
            }],
            ..Recommendations::default()
        };
        let csv = to_csv(&r);
        let line = csv.lines().nth(1).expect("a row");
        assert_eq!(
            line,
            "\"web,1\",web,memory,MiB,none,512.0,40.0,50.0,60.3,80.0,medium,forecast + buffer,none,running"
        );
    }

    /// QA E9: the CSV goes through the table's sanitiser: no escape
    /// sequence reaches a terminal through `| cat`, no newline splits a row.
    #[test]
    fn csv_text_is_sanitised() {
        let r = Recommendations {
            items: vec![Recommendation {
                container: "web\u{1b}]0;x".into(),
                app: "web".into(),
                resource: ResourceKind::Mem,
                unit: "MiB".into(),
                current_limit: None,
                request: 512.0,
                usage: 40.0,
                lower: 50.0,
                target: 60.0,
                upper: 80.0,
                confidence: Confidence::Low,
                reason: "y\u{1b}[31mred\nnext, line".into(),
                applied: "none".into(),
                stopped: None,
            }],
            ..Recommendations::default()
        };
        let csv = to_csv(&r);
        assert_eq!(csv.lines().count(), 2, "{csv:?}");
        assert!(!csv.contains('\u{1b}'), "{csv:?}");
        assert!(csv.contains("web?]0;x,web,"), "{csv}");
        assert!(csv.contains(",\"y?[31mred?next, line\","), "{csv}");
    }
}

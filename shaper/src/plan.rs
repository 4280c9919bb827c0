//! The plan `decide()` returns: actions as data, each with its explanation.
//!
//! Callers apply the actions **in order**: resizes that only shrink,
//! application evictions, component evictions, then resizes that grow (in
//! any resource). Applying them in that order never needs more room on a
//! host than the plan has freed first.

use crate::config::{Policy, VictimOrder};
use crate::model::{AppId, ComponentId, HostId, Resource, Resources};
use serde::{Deserialize, Serialize};
use std::fmt;

/// One thing to do to the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Set a component's allocation (limits) to `to`.
    Resize {
        app: AppId,
        component: ComponentId,
        host: HostId,
        from: Resources,
        to: Resources,
        explanation: Explanation,
    },
    /// Kill one elastic component, or one that restarts alone (a
    /// service's task): its application keeps running.
    EvictComponent {
        app: AppId,
        component: ComponentId,
        host: HostId,
        explanation: Explanation,
    },
    /// Kill a whole application (every component, on every host); the
    /// scheduler resubmits it at its original priority.
    EvictApplication {
        app: AppId,
        components: Vec<ComponentId>,
        explanation: Explanation,
    },
}

impl Action {
    /// The application the action touches.
    pub fn app(&self) -> AppId {
        match self {
            Action::Resize { app, .. }
            | Action::EvictComponent { app, .. }
            | Action::EvictApplication { app, .. } => *app,
        }
    }

    pub fn explanation(&self) -> &Explanation {
        match self {
            Action::Resize { explanation, .. }
            | Action::EvictComponent { explanation, .. }
            | Action::EvictApplication { explanation, .. } => explanation,
        }
    }

    /// Whether carrying it out is a failure of its application, counted
    /// (with its components' OOM kills) towards `[shaper] failure_limit`:
    /// evicting the whole application is; evicting one elastic component
    /// is not, nor is a resize. The plan dropped that component as the
    /// cheapest work on a host short of room, not because its application
    /// was sized too small; counting it would take every component of the
    /// application back to its request, which fits the short host worse
    /// still, and evict more of them. The agent, the central shaper and
    /// the simulator all count failures this way.
    pub fn fails_application(&self) -> bool {
        matches!(self, Action::EvictApplication { .. })
    }

    /// `resize`, `evict_component` or `evict_application` (as serialised).
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Resize { .. } => "resize",
            Action::EvictComponent { .. } => "evict_component",
            Action::EvictApplication { .. } => "evict_application",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Resize { app, component, host, from, to, explanation } => write!(
                f,
                "resize app {} component {} on host {}: cpu {} -> {} cores, mem {} -> {} bytes ({explanation})",
                app.0,
                component.0,
                host.0,
                num(from.cpu_cores),
                num(to.cpu_cores),
                num(from.mem_bytes),
                num(to.mem_bytes)
            ),
            Action::EvictComponent { app, component, host, explanation } => write!(
                f,
                "evict component {} of app {} on host {} ({explanation})",
                component.0, app.0, host.0
            ),
            Action::EvictApplication { app, components, explanation } => write!(
                f,
                "evict app {} ({} components) ({explanation})",
                app.0,
                components.len()
            ),
        }
    }
}

/// Why an action was planned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub reason: Reason,
    /// Where the component's target came from (for an application eviction:
    /// the core component that did not fit).
    pub basis: Basis,
    pub cpu: Sizing,
    pub mem: Sizing,
    /// The host and resource that did not have room (evictions, deferred
    /// evictions). Boxed: most actions are resizes without one, and a
    /// smaller action keeps million-component plans small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<Box<Binding>>,
}

impl Explanation {
    /// What a node is told of an explanation about another node's
    /// component (a core component of its application that did not fit
    /// there): the reason's kind only. The component's sizing, the other
    /// host's need and free room, and their indices in the view are left
    /// out (QA C3: they were sent to every node of the application, and
    /// shown as the receiver's own targets).
    pub fn withheld(&self) -> Explanation {
        let zero = Sizing::bare(0.0);
        Explanation {
            reason: match self.reason {
                Reason::CoreDidNotFit { .. } => Reason::CoreDidNotFit {
                    component: ComponentId(WITHHELD_ID),
                },
                r => r,
            },
            basis: Basis::Withheld,
            cpu: zero,
            mem: zero,
            binding: None,
        }
    }

    pub fn sizing(&self, r: Resource) -> &Sizing {
        match r {
            Resource::Cpu => &self.cpu,
            Resource::Mem => &self.mem,
        }
    }
}

/// The component id of a [`Reason::CoreDidNotFit`] withheld from a node
/// ([`Explanation::withheld`]).
pub const WITHHELD_ID: u64 = u64::MAX;

/// The decision behind an action.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// Resized to its target (forecast + buffer, or its request).
    Shaped,
    /// Protected: only ever grown to its target, never shrunk nor evicted.
    Protected,
    /// A core component of the application did not fit: all or nothing.
    CoreDidNotFit { component: ComponentId },
    /// This elastic component did not fit after the components kept before it
    /// in the victim order.
    ElasticDidNotFit { victim_order: VictimOrder },
    /// It should have been evicted but the per-round eviction cap was hit; it
    /// keeps its current allocation (shrunk to its target when that is
    /// smaller, never grown).
    EvictionDeferred,
}

/// Where a component's target allocation came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// forecast mean + k1 * request + (upper(k2) - mean).
    Forecast,
    /// Inside the grace period: keeps its request.
    GracePeriod,
    /// No (usable) forecast: keeps its request.
    NoForecast,
    /// Its application reached the failure limit: keeps its request.
    FailureLimit,
    /// Baseline policy: allocation = request.
    Baseline,
    /// Sent to another node than the component's: the sizing is that
    /// node's business and is not sent ([`Explanation::withheld`]).
    Withheld,
}

/// How one resource's target was computed. For a request-based basis the
/// forecast fields are 0.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    /// Forecast mean.
    pub mean: f64,
    /// Forecast standard deviation.
    pub sigma: f64,
    /// `k1 * request`.
    pub k1_term: f64,
    /// `forecast.upper(k2) - mean`: `band.mult * sigma`, where the
    /// multiplier is `k2` for a Gaussian forecast and a calibrated
    /// forecast's learned one at level `k2` (see [`Band`]), which can be
    /// many times `k2`.
    pub k2_term: f64,
    /// Where `k2_term`'s multiplier of `sigma` came from, so that the term
    /// can be recomputed. All zero in records written before it was kept.
    #[serde(default, skip_serializing_if = "Band::is_unknown")]
    pub band: Band,
    /// `mem_margin * mean` (memory only; 0 otherwise).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub margin_term: f64,
    /// The planned allocation before hysteresis and protection.
    pub target: f64,
    /// Which limit decided `target`.
    pub bound: Bound,
}

/// The band above a forecast's mean that makes a [`Sizing`]'s `k2_term`:
/// `k2_term = mult * sigma`, `mult` the forecast's multiplier of `sigma`
/// at `level` ([`crate::Predictive::band_mult`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// Which setting gave `level`.
    #[serde(default)]
    pub level_of: BandLevel,
    /// The band's level: `k2`, or for risk-targeted memory the Gaussian
    /// level whose one-sided tail is `memory_risk`.
    pub level: f64,
    /// The multiplier of `sigma` at `level`: `level` itself for a Gaussian
    /// forecast; for a calibrated one the `Phi(level)` quantile of its
    /// model's standardised errors over the forecast's horizon
    /// ([`crate::Calibration::upper_mult`]).
    pub mult: f64,
}

impl Band {
    /// Neither level nor multiplier known (a record from before they were
    /// kept, or a request-based target).
    pub fn is_unknown(&self) -> bool {
        self.level == 0.0 && self.mult == 0.0
    }

    /// What the calibration multiplies the level by (`mult / level`): 1
    /// for a Gaussian forecast; `None` at level 0.
    pub fn widening(&self) -> Option<f64> {
        (self.level > 0.0).then(|| self.mult / self.level)
    }
}

/// The setting behind a [`Band`]'s level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BandLevel {
    /// `[shaper] k2`.
    #[default]
    K2,
    /// `[shaper] memory_risk`, as a Gaussian level.
    MemoryRisk,
}

/// Which limit decided a target allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// mean + buffer (or the request for a request-based basis).
    Buffer,
    /// Raised to the configured floor.
    Floor,
    /// Cut to the ceiling (request * max_growth).
    Ceiling,
    /// Raised to current usage.
    Usage,
    /// Raised to the component's OOM floor after an OOM kill
    /// ([`crate::Component::oom_floor_bytes`]).
    OomFloor,
    /// Raised to the component's memory reservation
    /// ([`crate::Component::mem_floor_bytes`]), which wins over the ceiling.
    Reservation,
    /// Cut to what was left on its host instead of being evicted: CPU
    /// (`cpu_shortfall = share`: the component runs throttled) or memory
    /// (`mem_shortfall = buffer`: it keeps less buffer, never less than
    /// its current usage and forecast).
    HostShare,
}

/// A host and resource that had no room.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Binding {
    pub host: HostId,
    pub resource: Resource,
    /// What the component needed on that host.
    pub needed: f64,
    /// What was left there when it was considered.
    pub free: f64,
}

/// Counts describing a plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanSummary {
    pub hosts: u64,
    pub apps: u64,
    pub components: u64,
    /// Components resized (one `Resize` action each).
    pub resized: u64,
    /// Resizes skipped by hysteresis (`min_relative_change`).
    pub skipped_by_hysteresis: u64,
    pub evicted_apps: u64,
    /// Components killed, counting every component of evicted applications.
    pub evicted_components: u64,
    /// Would-be victims kept because of `max_evictions_per_round`.
    pub deferred_components: u64,
    /// Components whose host is not in the view: left alone.
    pub unknown_host_components: u64,
    /// Components whose CPU was cut to what was left on their host
    /// (`cpu_shortfall = share`).
    #[serde(default)]
    pub squeezed_cpu: u64,
    /// Components whose memory was cut into their buffer, to what was left
    /// on their host (`mem_shortfall = buffer`).
    #[serde(default)]
    pub squeezed_mem: u64,
}

/// The result of one shaping round.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub policy: Policy,
    pub now_s: f64,
    /// Apply in this order: resizes that only shrink (view order),
    /// application evictions (scheduler order), component evictions
    /// (decision order), then the other resizes (view order).
    pub actions: Vec<Action>,
    pub summary: PlanSummary,
}

impl Plan {
    /// The `Resize` actions, in plan order.
    pub fn resizes(&self) -> impl Iterator<Item = &Action> {
        self.actions
            .iter()
            .filter(|a| matches!(a, Action::Resize { .. }))
    }

    /// The eviction actions (applications, then components), in plan order.
    pub fn evictions(&self) -> impl Iterator<Item = &Action> {
        self.actions
            .iter()
            .filter(|a| !matches!(a, Action::Resize { .. }))
    }
}

fn num(x: f64) -> String {
    if x == 0.0 || (1e-3..1e6).contains(&x.abs()) {
        let s = format!("{x:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    } else {
        format!("{x:.4e}")
    }
}

/// An amount of resource `r` as explanations show it: cores, or MiB.
fn amount(r: Resource, x: f64) -> String {
    match r {
        Resource::Cpu => num(x),
        Resource::Mem => format!("{} MiB", num(x / (1024.0 * 1024.0))),
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl fmt::Display for Sizing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, &num)
    }
}

impl Sizing {
    /// A sizing without a forecast or buffer: `target` as it is (a
    /// baseline's request, or nothing for a withheld explanation).
    pub fn bare(target: f64) -> Sizing {
        Sizing {
            mean: 0.0,
            sigma: 0.0,
            k1_term: 0.0,
            k2_term: 0.0,
            band: Band::default(),
            margin_term: 0.0,
            target,
            bound: Bound::Buffer,
        }
    }

    /// The sizing with its amounts shown by `amount`.
    fn write(&self, f: &mut fmt::Formatter<'_>, amount: &dyn Fn(f64) -> String) -> fmt::Result {
        write!(
            f,
            "target {} = mean {} + k1_term {} + k2_term {}",
            amount(self.target),
            amount(self.mean),
            amount(self.k1_term),
            amount(self.k2_term),
        )?;
        let band = self.band;
        if !band.is_unknown() {
            // `k2 1 x calibration 51.08 x sigma 4.153 MiB`: each factor of
            // the term, so that it can be recomputed
            let level = match band.level_of {
                BandLevel::K2 => "k2",
                BandLevel::MemoryRisk => "memory_risk level",
            };
            match band.widening() {
                Some(1.0) => write!(f, " ({level} {}", num(band.level))?,
                Some(w) => write!(f, " ({level} {} x calibration {}", num(band.level), num(w))?,
                None => write!(
                    f,
                    " (calibration {} at {level} {}",
                    num(band.mult),
                    num(band.level)
                )?,
            }
            write!(f, " x sigma {})", amount(self.sigma))?;
        }
        if self.margin_term != 0.0 {
            write!(f, " + margin_term {}", amount(self.margin_term))?;
        }
        if band.is_unknown() {
            write!(f, " (sigma {})", amount(self.sigma))?;
        }
        match self.bound {
            Bound::Buffer => Ok(()),
            Bound::Floor => f.write_str(", raised to the floor"),
            Bound::Ceiling => f.write_str(", cut to the ceiling"),
            Bound::Usage => f.write_str(", raised to current usage"),
            Bound::OomFloor => f.write_str(", raised to its OOM floor"),
            Bound::Reservation => f.write_str(", raised to its memory reservation"),
            Bound::HostShare => f.write_str(", cut to what was left on the host"),
        }
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, &|c| c.0.to_string(), &|h| h.0.to_string())
    }
}

/// An [`Explanation`] shown with names for the ids it mentions
/// ([`Explanation::named`]).
pub struct Named<'a> {
    explanation: &'a Explanation,
    component: &'a dyn Fn(ComponentId) -> String,
    host: &'a dyn Fn(HostId) -> String,
}

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.explanation.write(f, self.component, self.host)
    }
}

impl Explanation {
    /// The explanation as [`fmt::Display`] shows it, with the component
    /// and host it mentions named by `component` and `host` (a node's
    /// container and its own name) instead of their indices in the view.
    pub fn named<'a>(
        &'a self,
        component: &'a dyn Fn(ComponentId) -> String,
        host: &'a dyn Fn(HostId) -> String,
    ) -> Named<'a> {
        Named {
            explanation: self,
            component,
            host,
        }
    }

    fn write(
        &self,
        f: &mut fmt::Formatter<'_>,
        component: &dyn Fn(ComponentId) -> String,
        host: &dyn Fn(HostId) -> String,
    ) -> fmt::Result {
        match self.reason {
            Reason::Shaped => f.write_str("shaped")?,
            Reason::Protected => f.write_str("protected: never shrunk")?,
            Reason::CoreDidNotFit { component: c } if c.0 == WITHHELD_ID => {
                f.write_str("core component (another node's) did not fit")?
            }
            Reason::CoreDidNotFit { component: c } => {
                write!(f, "core component {} did not fit", component(c))?
            }
            Reason::ElasticDidNotFit { victim_order } => write!(
                f,
                "elastic component did not fit (victim order {})",
                victim_order.as_str()
            )?,
            Reason::EvictionDeferred => {
                f.write_str("eviction deferred: max_evictions_per_round reached")?
            }
        }
        if let Some(b) = &self.binding {
            write!(
                f,
                " on host {} {}: needed {}, free {}",
                host(b.host),
                b.resource,
                amount(b.resource, b.needed),
                amount(b.resource, b.free)
            )?;
        }
        match self.basis {
            Basis::Forecast => {
                f.write_str("; cpu ")?;
                self.cpu.write(f, &|x| amount(Resource::Cpu, x))?;
                f.write_str("; mem ")?;
                self.mem.write(f, &|x| amount(Resource::Mem, x))
            }
            Basis::GracePeriod => f.write_str("; in grace period: targets its request"),
            Basis::NoForecast => f.write_str("; no forecast: targets its request"),
            Basis::FailureLimit => {
                f.write_str("; application over the failure limit: targets its request")
            }
            Basis::Baseline => f.write_str("; baseline: allocation = request"),
            Basis::Withheld => f.write_str(" on another node; its sizing is not sent"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Application, Class, Component, Forecasts, Predictive};
    use crate::{component_target, Calibration, ShaperConfig};

    const MIB: f64 = 1024.0 * 1024.0;

    /// QA D9's container: 256 MiB requested, memory forecast 45.781 MiB
    /// (sigma 4.153 MiB), its calibration `widen` times the Gaussian's.
    fn qa_case(widen: f32) -> (Application, Component) {
        let mut mem = Predictive::gaussian(45.781 * MIB, 4.153 * MIB);
        if widen != 1.0 {
            let mut cal = Calibration::gaussian();
            for u in &mut cal.upper {
                *u *= widen;
            }
            mem.calibration = Some(std::sync::Arc::new(cal));
        }
        let request = Resources::new(1.0, 256.0 * MIB);
        let c = Component {
            id: ComponentId(1),
            class: Class::Core,
            host: HostId(0),
            request,
            started_s: 0.0,
            allocation: request,
            usage: Resources::new(0.1, 40.0 * MIB),
            forecast: Some(Forecasts {
                cpu: Predictive::gaussian(0.2, 0.01),
                mem,
                mem_hold_bytes: 0.0,
                mem_small_hold_bytes: 0.0,
            }),
            protected: false,
            work_done_s: 0.0,
            restarts_alone: false,
            mem_floor_bytes: 0.0,
            oom_floor_bytes: 0.0,
        };
        let app = Application {
            tenant: 0,
            id: AppId(1),
            submitted_s: 0.0,
            priority: 0,
            failures: 0,
            expected_remaining_s: None,
            components: vec![c.clone()],
        };
        (app, c)
    }

    /// The numbers printed after `k2_term` in `text`: the term, then each
    /// factor of it (level, widening when calibrated, sigma).
    fn k2_numbers(text: &str) -> Vec<f64> {
        let at = text.find("k2_term ").expect("k2_term printed") + "k2_term ".len();
        text[at..]
            .split(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect()
    }

    /// QA D9: the printed factors of `k2_term` multiply back to it (to
    /// the printed precision), calibrated or not, and the data carry them.
    #[test]
    fn the_k2_term_is_its_printed_factors_multiplied() {
        let cfg = ShaperConfig {
            k1: 0.06,
            k2: 1.0,
            ..ShaperConfig::uniform()
        };
        let (app, c) = qa_case(51.08);
        let t = component_target(&app, &c, 10_000.0, &cfg);
        let mem = t.mem;
        assert_eq!(mem.band.level_of, BandLevel::K2);
        assert_eq!(mem.band.level, 1.0);
        assert!((mem.band.mult - 51.08).abs() < 1e-3, "{:?}", mem.band);
        assert_eq!(mem.k2_term, mem.band.mult * mem.sigma);
        let text = mem.to_string();
        assert!(
            text.contains("(k2 1 x calibration 51.08 x sigma "),
            "{text}"
        );
        let e = Explanation {
            reason: Reason::Shaped,
            basis: t.basis,
            cpu: t.cpu,
            mem: t.mem,
            binding: None,
        }
        .to_string();
        assert!(
            e.contains("k2_term 212.135 MiB (k2 1 x calibration 51.08 x sigma 4.153 MiB)"),
            "{e}"
        );
        let mem_part = &e[e.find("; mem ").expect("mem part")..];
        let n = k2_numbers(mem_part);
        let [term, k2, widening, sigma] = n[..] else {
            panic!("{n:?} in {mem_part}")
        };
        assert!((k2 * widening * sigma - term).abs() <= 1e-3 * term, "{n:?}");

        // Gaussian: the level is the multiplier.
        let cfg = ShaperConfig { k2: 3.0, ..cfg };
        let (app, c) = qa_case(1.0);
        let t = component_target(&app, &c, 10_000.0, &cfg);
        assert_eq!(t.mem.band.mult, 3.0);
        let text = t.mem.to_string();
        assert!(!text.contains("calibration"), "{text}");
        let n = k2_numbers(&text);
        let [term, k2, sigma] = n[..] else {
            panic!("{n:?} in {text}")
        };
        assert!((k2 * sigma - term).abs() <= 1e-3 * term, "{n:?}");

        // Risk-targeted memory names its level.
        let cfg = ShaperConfig {
            memory_risk: Some(0.01),
            ..cfg
        };
        let t = component_target(&app, &c, 10_000.0, &cfg);
        assert_eq!(t.mem.band.level_of, BandLevel::MemoryRisk);
        assert!(
            t.mem.to_string().contains("(memory_risk level 2.32"),
            "{}",
            t.mem
        );
    }

    /// A sizing recorded before the band was kept (journals, the wire)
    /// still parses, and prints sigma as it did; one with it round-trips.
    #[test]
    fn sizings_without_a_band_still_parse() {
        let old =
            r#"{"mean":1.0,"sigma":0.5,"k1_term":0.0,"k2_term":1.5,"target":2.5,"bound":"buffer"}"#;
        let s: Sizing = serde_json::from_str(old).expect("old sizing");
        assert!(s.band.is_unknown());
        assert_eq!(
            s.to_string(),
            "target 2.5 = mean 1 + k1_term 0 + k2_term 1.5 (sigma 0.5)"
        );
        assert!(!serde_json::to_string(&s).expect("json").contains("band"));
        let s = Sizing {
            band: Band {
                level_of: BandLevel::K2,
                level: 3.0,
                mult: 3.0,
            },
            ..s
        };
        let json = serde_json::to_string(&s).expect("json");
        assert_eq!(serde_json::from_str::<Sizing>(&json).expect("parse"), s);
        assert_eq!(
            s.to_string(),
            "target 2.5 = mean 1 + k1_term 0 + k2_term 1.5 (k2 3 x sigma 0.5)"
        );
    }
}

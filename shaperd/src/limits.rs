//! The central shaper's bounds: connection and timeout settings of its HTTP
//! server, caps on what its state may hold (agents, components per tenant,
//! total components, estimated memory), replay protection of reports, and
//! the refusals a report can get.
//!
//! ```toml
//! # shaper.toml
//! [limits]
//! max_agents = 10000                    # agents with a report on record
//! max_components_per_tenant = 1000000
//! max_components_total = 1000000
//! max_state_mem_bytes = 2147483648      # estimated memory of stored reports
//! max_connections = 4096                # open connections; more are closed at once
//! header_read_timeout_s = 10.0          # request headers must arrive within this
//! idle_timeout_s = 60.0                 # a connection silent this long is closed
//! request_timeout_s = 30.0              # a request (body included) must be handled within this
//! ```

use crate::protocol::{ComponentReport, ReportRequest};
use crate::serve::ServeLimits;
use serde::{Deserialize, Serialize};
use shaper::ConfigErrors;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

fn d_max_agents() -> usize {
    10_000
}
fn d_max_components() -> usize {
    1_000_000
}
fn d_max_state_mem_bytes() -> u64 {
    2 * 1024 * 1024 * 1024
}
fn d_max_connections() -> usize {
    4096
}
fn d_header_read_timeout_s() -> f64 {
    10.0
}
fn d_idle_timeout_s() -> f64 {
    60.0
}
fn d_request_timeout_s() -> f64 {
    30.0
}

/// `[limits]` of `shaper.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerLimits {
    #[serde(default = "d_max_agents")]
    pub max_agents: usize,
    #[serde(default = "d_max_components")]
    pub max_components_per_tenant: usize,
    #[serde(default = "d_max_components")]
    pub max_components_total: usize,
    #[serde(default = "d_max_state_mem_bytes")]
    pub max_state_mem_bytes: u64,
    #[serde(default = "d_max_connections")]
    pub max_connections: usize,
    #[serde(default = "d_header_read_timeout_s")]
    pub header_read_timeout_s: f64,
    #[serde(default = "d_idle_timeout_s")]
    pub idle_timeout_s: f64,
    #[serde(default = "d_request_timeout_s")]
    pub request_timeout_s: f64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_agents: d_max_agents(),
            max_components_per_tenant: d_max_components(),
            max_components_total: d_max_components(),
            max_state_mem_bytes: d_max_state_mem_bytes(),
            max_connections: d_max_connections(),
            header_read_timeout_s: d_header_read_timeout_s(),
            idle_timeout_s: d_idle_timeout_s(),
            request_timeout_s: d_request_timeout_s(),
        }
    }
}

impl ServerLimits {
    /// Every invalid setting (keys relative to `[limits]`).
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        e.range("max_agents", self.max_agents, 1, 1_000_000);
        e.range(
            "max_components_per_tenant",
            self.max_components_per_tenant,
            1,
            100_000_000,
        );
        e.range(
            "max_components_total",
            self.max_components_total,
            1,
            100_000_000,
        );
        e.range(
            "max_state_mem_bytes",
            self.max_state_mem_bytes,
            1 << 20,
            1 << 40,
        );
        e.range("max_connections", self.max_connections, 1, 1_000_000);
        e.range(
            "header_read_timeout_s",
            self.header_read_timeout_s,
            0.05,
            3600.0,
        );
        e.range("idle_timeout_s", self.idle_timeout_s, 0.05, 3600.0);
        e.range("request_timeout_s", self.request_timeout_s, 0.05, 3600.0);
        e.into_result()
    }

    /// The HTTP server's bounds.
    pub fn serve(&self) -> ServeLimits {
        ServeLimits {
            max_connections: self.max_connections,
            header_read_timeout: Duration::from_secs_f64(self.header_read_timeout_s),
            idle_timeout: Duration::from_secs_f64(self.idle_timeout_s),
            request_timeout: Duration::from_secs_f64(self.request_timeout_s),
        }
    }
}

/// Which cap refused a report (label of
/// `tailor_shaper_reports_refused_total{reason=...}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    Agents,
    TenantComponents,
    TotalComponents,
    Memory,
}

impl Cap {
    pub const ALL: [Cap; 4] = [
        Cap::Agents,
        Cap::TenantComponents,
        Cap::TotalComponents,
        Cap::Memory,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            Cap::Agents => "max_agents",
            Cap::TenantComponents => "max_components_per_tenant",
            Cap::TotalComponents => "max_components_total",
            Cap::Memory => "max_state_mem_bytes",
        }
    }
}

/// Why a report or ack was refused; nothing changed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// Malformed or invalid content (HTTP 400).
    #[error("invalid request: {}", .0.join("; "))]
    Invalid(Vec<String>),
    /// The credential may not speak for this agent (HTTP 403).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// Stale or replayed report (HTTP 409).
    #[error("stale or replayed report: {message}")]
    Replay {
        message: String,
        /// The smallest boot id the agent's next report may have.
        min_boot_id: Option<u64>,
    },
    /// A cap would be exceeded (HTTP 429).
    #[error("limit {} exceeded: {message}", .cap.as_str())]
    Limit { cap: Cap, message: String },
}

/// What a component's entry in the map of reporting agents holds (its
/// keyed id and agent, with the map's spare room; QA C12), ~40 bytes.
const OWNER_ENTRY_BYTES: usize = 40;

/// Estimated heap + inline bytes of a stored report (what the memory cap
/// counts), the duplicate-owner map's entry of each component included.
pub fn report_mem_bytes(r: &ReportRequest) -> u64 {
    let per: u64 = r
        .components
        .iter()
        .map(|c| {
            // each forecast's calibration table sits behind its own `Arc`
            let tables = c.forecast.as_ref().map_or(0, |f| {
                [&f.cpu, &f.mem]
                    .iter()
                    .filter(|p| p.calibration.is_some())
                    .count()
            });
            let table_bytes = tables * (std::mem::size_of::<shaper::Calibration>() + 16);
            (std::mem::size_of::<ComponentReport>()
                + c.container_id.len()
                + c.app.len()
                + table_bytes
                + OWNER_ENTRY_BYTES) as u64
        })
        .sum();
    std::mem::size_of::<ReportRequest>() as u64 + r.agent_id.len() as u64 + per
}

/// What the stored reports hold, kept up to date as reports come and go.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    pub agents: u64,
    pub components_total: u64,
    pub mem_bytes: u64,
    pub per_tenant: HashMap<Arc<str>, u64>,
}

/// A report's footprint (for [`Usage`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    pub components: u64,
    pub mem_bytes: u64,
}

impl Usage {
    /// Refuses replacing `old` (the agent's stored report, if any) by `new`
    /// in `tenant` when a cap would be exceeded.
    pub fn check(
        &self,
        limits: &ServerLimits,
        tenant: &str,
        old: Option<Footprint>,
        new: Footprint,
    ) -> Result<(), Refusal> {
        let old_f = old.unwrap_or_default();
        if old.is_none() && self.agents >= limits.max_agents as u64 {
            return Err(Refusal::Limit {
                cap: Cap::Agents,
                message: format!(
                    "{} agents already on record, the limit is {}",
                    self.agents, limits.max_agents
                ),
            });
        }
        let tenant_now = self.per_tenant.get(tenant).copied().unwrap_or(0);
        let tenant_after = tenant_now - old_f.components.min(tenant_now) + new.components;
        if new.components > old_f.components
            && tenant_after > limits.max_components_per_tenant as u64
        {
            return Err(Refusal::Limit {
                cap: Cap::TenantComponents,
                message: format!(
                    "tenant {tenant:?} would have {tenant_after} components, the limit is {}",
                    limits.max_components_per_tenant
                ),
            });
        }
        let total_after =
            self.components_total - old_f.components.min(self.components_total) + new.components;
        if new.components > old_f.components && total_after > limits.max_components_total as u64 {
            return Err(Refusal::Limit {
                cap: Cap::TotalComponents,
                message: format!(
                    "the shaper would hold {total_after} components, the limit is {}",
                    limits.max_components_total
                ),
            });
        }
        let mem_after = self.mem_bytes - old_f.mem_bytes.min(self.mem_bytes) + new.mem_bytes;
        if new.mem_bytes > old_f.mem_bytes && mem_after > limits.max_state_mem_bytes {
            return Err(Refusal::Limit {
                cap: Cap::Memory,
                message: format!(
                    "stored reports would take about {mem_after} bytes, the limit is {}",
                    limits.max_state_mem_bytes
                ),
            });
        }
        Ok(())
    }

    /// Records a new or replaced report.
    pub fn replace(&mut self, tenant: &Arc<str>, old: Option<Footprint>, new: Footprint) {
        if let Some(o) = old {
            self.remove(tenant, o);
        }
        self.agents += 1;
        self.components_total += new.components;
        self.mem_bytes += new.mem_bytes;
        *self.per_tenant.entry(tenant.clone()).or_insert(0) += new.components;
    }

    /// Forgets a report.
    pub fn remove(&mut self, tenant: &str, old: Footprint) {
        self.agents = self.agents.saturating_sub(1);
        self.components_total = self.components_total.saturating_sub(old.components);
        self.mem_bytes = self.mem_bytes.saturating_sub(old.mem_bytes);
        if let Some(n) = self.per_tenant.get_mut(tenant) {
            *n = n.saturating_sub(old.components);
            if *n == 0 {
                self.per_tenant.remove(tenant);
            }
        }
    }
}

/// The last accepted (boot id, sequence) of every agent: a report must
/// come after it. Kept for agents with a credential (even after their
/// record is forgotten), so old reports cannot be replayed later.
///
/// A guard restored by a new leader ([`ReplayGuard::from_snapshot`]) is
/// as of the old leader's last round: the old leader may have accepted
/// later reports of the same boots, which a captured copy could replay.
/// So a restored agent's next report must come from a **newer boot**; the
/// agent's client starts one when its report is refused as stale
/// (`agent::cluster::ClusterClient::report`), once per failover.
#[derive(Clone, Debug, Default)]
pub struct ReplayGuard {
    last: HashMap<Arc<str>, (u64, u64)>,
    /// Restored agents whose boot has not changed since the restore.
    needs_new_boot: HashSet<Arc<str>>,
}

impl ReplayGuard {
    /// Refuses a report of `agent` that does not come after the last one.
    pub fn check(&self, agent: &str, boot_id: u64, seq: u64) -> Result<(), Refusal> {
        let Some(&(b, s)) = self.last.get(agent) else {
            return Ok(());
        };
        let message = if (boot_id, seq) <= (b, s) {
            if boot_id < b {
                format!(
                    "boot_id {boot_id} is older than the agent's current boot {b} (an old report, or the agent's clock went back)"
                )
            } else {
                format!("seq {seq} of boot {boot_id} is not after the last accepted seq {s}")
            }
        } else if boot_id <= b && self.needs_new_boot.contains(agent) {
            format!(
                "the shaper changed leader: reports of boot {b} are no longer accepted, start a new boot"
            )
        } else {
            return Ok(());
        };
        Err(Refusal::Replay {
            message,
            min_boot_id: b.checked_add(1),
        })
    }

    pub fn accept(&mut self, agent: &Arc<str>, boot_id: u64, seq: u64) {
        self.needs_new_boot.remove(agent);
        self.last.insert(agent.clone(), (boot_id, seq));
    }

    /// Every agent's last accepted (boot id, sequence), for the store.
    pub fn snapshot(&self) -> crate::store::ReplaySnapshot {
        self.last.iter().map(|(a, &v)| (a.to_string(), v)).collect()
    }

    /// A guard from a stored snapshot (a new leader's): every agent in it
    /// must start a new boot.
    pub fn from_snapshot(s: crate::store::ReplaySnapshot) -> Self {
        let last: HashMap<Arc<str>, (u64, u64)> =
            s.into_iter().map(|(a, v)| (Arc::from(a), v)).collect();
        Self {
            needs_new_boot: last.keys().cloned().collect(),
            last,
        }
    }

    /// Keeps only agents for which `keep` is true (e.g. with a credential).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.last.retain(|a, _| keep(a));
        let last = &self.last;
        self.needs_new_boot.retain(|a| last.contains_key(a));
    }

    pub fn len(&self) -> usize {
        self.last.len()
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }
}

/// Refuses a report whose boot id (the agent's start, Unix ms) is more than
/// [`crate::protocol::MAX_BOOT_AHEAD_MS`] ahead of `wall_ms`, the shaper's
/// wall clock: accepted, it would lock the agent out until that time.
pub fn check_boot_not_ahead(boot_id: u64, wall_ms: u64) -> Result<(), Refusal> {
    let ahead_ms = boot_id.saturating_sub(wall_ms);
    if ahead_ms <= crate::protocol::MAX_BOOT_AHEAD_MS {
        return Ok(());
    }
    Err(Refusal::Invalid(vec![format!(
        "boot_id {boot_id} (the agent's start, Unix ms) is {:.1} h ahead of the shaper's clock, more than {} h: check the agent host's clock",
        ahead_ms as f64 / 3.6e6,
        crate::protocol::MAX_BOOT_AHEAD_MS / 3_600_000
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_id_far_ahead_of_the_clock_is_refused() {
        let now_ms = 1_800_000_000_000;
        let day_ms = crate::protocol::MAX_BOOT_AHEAD_MS;
        assert!(
            check_boot_not_ahead(1, now_ms).is_ok(),
            "behind is the guard's job"
        );
        assert!(check_boot_not_ahead(now_ms + day_ms, now_ms).is_ok());
        let e = check_boot_not_ahead(now_ms + day_ms + 1, now_ms).expect_err("ahead");
        assert!(e.to_string().contains("24.0 h ahead"), "{e}");
        assert!(check_boot_not_ahead(u64::MAX, now_ms).is_err());
    }

    #[test]
    fn replay_guard_orders_boots_then_seqs() {
        let mut g = ReplayGuard::default();
        let a: Arc<str> = Arc::from("a");
        assert!(g.check("a", 10, 5).is_ok());
        g.accept(&a, 10, 5);
        assert!(matches!(g.check("a", 10, 5), Err(Refusal::Replay { .. })));
        assert!(matches!(g.check("a", 10, 4), Err(Refusal::Replay { .. })));
        assert!(matches!(
            g.check("a", 9, 100),
            Err(Refusal::Replay {
                min_boot_id: Some(11),
                ..
            })
        ));
        assert!(g.check("a", 10, 6).is_ok());
        assert!(g.check("a", 11, 0).is_ok(), "a new boot starts over");
        assert!(g.check("b", 1, 0).is_ok());
        g.retain(|x| x != "a");
        assert!(g.is_empty());
    }

    #[test]
    fn caps_refuse_growth_but_not_shrinking() {
        let limits = ServerLimits {
            max_agents: 2,
            max_components_per_tenant: 10,
            max_components_total: 15,
            max_state_mem_bytes: 1 << 20,
            ..ServerLimits::default()
        };
        let t: Arc<str> = Arc::from("t");
        let u_: Arc<str> = Arc::from("u");
        let mut u = Usage::default();
        let f = |c: u64| Footprint {
            components: c,
            mem_bytes: c * 100,
        };
        assert!(u.check(&limits, "t", None, f(8)).is_ok());
        u.replace(&t, None, f(8));
        let e = u.check(&limits, "t", None, f(3)).expect_err("tenant cap");
        assert!(
            matches!(
                e,
                Refusal::Limit {
                    cap: Cap::TenantComponents,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            u.check(&limits, "t", Some(f(8)), f(10)).is_ok(),
            "replace within cap"
        );
        assert!(u.check(&limits, "u", None, f(7)).is_ok());
        u.replace(&u_, None, f(7));
        let e = u
            .check(&limits, "u", Some(f(7)), f(8))
            .expect_err("total cap");
        assert!(
            matches!(
                e,
                Refusal::Limit {
                    cap: Cap::TotalComponents,
                    ..
                }
            ),
            "{e}"
        );
        let e = u.check(&limits, "v", None, f(0)).expect_err("agents cap");
        assert!(
            matches!(
                e,
                Refusal::Limit {
                    cap: Cap::Agents,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            u.check(&limits, "u", Some(f(7)), f(1)).is_ok(),
            "shrinking is fine"
        );
        u.remove("u", f(7));
        assert_eq!(u.components_total, 8);
        assert_eq!(u.agents, 1);
        assert!(!u.per_tenant.contains_key("u"));
        let mut big = limits.clone();
        big.max_components_total = 1000;
        big.max_components_per_tenant = 1000;
        let e = u
            .check(
                &big,
                "t",
                Some(f(8)),
                Footprint {
                    components: 9,
                    mem_bytes: 2 << 20,
                },
            )
            .expect_err("memory cap");
        assert!(
            matches!(
                e,
                Refusal::Limit {
                    cap: Cap::Memory,
                    ..
                }
            ),
            "{e}"
        );
        assert!(ServerLimits::default().validate().is_ok());
        let bad = ServerLimits {
            header_read_timeout_s: 0.0,
            max_agents: 0,
            ..ServerLimits::default()
        };
        assert_eq!(bad.validate().expect_err("bad").len(), 2);
    }
}

//! The cluster view `decide()` reads and the plan it returns.
//!
//! These types are the contract between the shaper and its three callers
//! (agent, central shaper, simulator): keep them plain data.

use serde::{Deserialize, Serialize};
pub use tailor_core::{Class, Predictive, Resource, Resources};

/// Host identifier, unique within one cluster view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HostId(pub u64);

/// Application identifier, unique within one cluster view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AppId(pub u64);

/// Component identifier, unique within one cluster view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ComponentId(pub u64);

/// A host (node) and what it can hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub id: HostId,
    pub capacity: Resources,
}

/// Per-resource forecasts of a component's usage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Forecasts {
    pub cpu: Predictive,
    pub mem: Predictive,
    /// A level the memory forecast is raised to for sizing only (bytes; 0:
    /// none): the mark of a sibling's OOM kill at this component's age
    /// ([`crate::prior::KillMark`]). It is insurance against a peak the
    /// component has not shown, not a need of its own: on a host without
    /// room for every buffer it is cut like one
    /// (`[shaper] mem_shortfall = "buffer"`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mem_hold_bytes: f64,
    /// The peak of the component's own memory samples over a small
    /// application's longer hold (`[shaper] small_app_mem_hold_s`), when
    /// it is above `mem.mean` (bytes; 0: none): the level its memory is
    /// sized from when `decide()` counts it as small
    /// ([`crate::ShaperConfig::is_small`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mem_small_hold_bytes: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Forecasts {
    pub fn get(&self, r: Resource) -> &Predictive {
        match r {
            Resource::Cpu => &self.cpu,
            Resource::Mem => &self.mem,
        }
    }
}

/// A running component (a task, a container).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Component {
    pub id: ComponentId,
    pub class: Class,
    pub host: HostId,
    /// What the component asked for at submission (the default ceiling).
    pub request: Resources,
    /// When it started running on its host (seconds, caller's clock).
    pub started_s: f64,
    /// What it is allowed now.
    pub allocation: Resources,
    /// What it uses now (latest sample).
    pub usage: Resources,
    /// Forecast of its usage over the next horizon; `None` when no model
    /// has an answer yet (the component then keeps its request).
    pub forecast: Option<Forecasts>,
    /// Never shrunk nor evicted.
    #[serde(default)]
    pub protected: bool,
    /// Work done so far in seconds (for the least-work-lost victim order);
    /// callers that do not know pass the time alive.
    #[serde(default)]
    pub work_done_s: f64,
    /// An OOM kill restarts it alone, where it was, and its application
    /// goes on (a service's task, a container whose runtime restarts it):
    /// a kill costs this component's work, not its application's. The
    /// application-size buffer rules ([`crate::ShaperConfig::k1_for`])
    /// protect applications that one kill fails whole, so they leave an
    /// application of such components alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restarts_alone: bool,
    /// The least memory its runtime promises it (Docker's and Podman's
    /// `--memory-reservation`, the cgroup's `memory.low`): its allocation
    /// is never planned below it, and on a crowded host it is part of
    /// what the component needs, not a buffer to cut. 0: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mem_floor_bytes: f64,
    /// Its OOM floor while it holds ([`crate::OomFloor`]): after an OOM
    /// kill its memory is never planned below it, up to its ceiling
    /// (`request * max_growth`). Kept apart from `usage`, which stays what
    /// was measured. 0: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub oom_floor_bytes: f64,
}

/// A running application: a set of components, possibly on several hosts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Application {
    pub id: AppId,
    /// Submission time (seconds, caller's clock): the FIFO key.
    pub submitted_s: f64,
    /// Larger is more important.
    pub priority: i32,
    /// How many times it has failed so far: its components' OOM kills and
    /// its evictions as a whole (not an elastic component's eviction:
    /// [`crate::Action::fails_application`]).
    pub failures: u32,
    /// Expected remaining run time, the SJF key; `None` sorts last.
    #[serde(default)]
    pub expected_remaining_s: Option<f64>,
    /// The tenant it belongs to (the central shaper numbers its tenants
    /// each round; 0 on a node and in the simulator). Rules that size an
    /// application against the others (the application-memory rule's
    /// relative reference) compare it with its own tenant's only, so one
    /// tenant's reports cannot change another's buffers.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub tenant: u32,
    pub components: Vec<Component>,
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}

/// What the constant buffer term of an application's components depends
/// on ([`crate::ShaperConfig::k1_for`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AppSize {
    /// Its running components in the view.
    pub components: usize,
    /// Those of them whose kill fails the application ([`Class::Core`]).
    pub core_components: usize,
    /// Their memory request, summed (bytes).
    pub mem_bytes: f64,
    /// Every one of them restarts alone when killed
    /// ([`Component::restarts_alone`]).
    pub restarts_alone: bool,
}

impl Application {
    /// Whether every component restarts alone when killed (false for an
    /// application without components).
    pub fn restarts_alone(&self) -> bool {
        !self.components.is_empty() && self.components.iter().all(|c| c.restarts_alone)
    }

    /// Its size for the buffer rules, with `mem_bytes` its memory request
    /// as the caller summed it ([`Application::mem_request_bytes`], or 0
    /// when no rule reads it).
    pub fn size(&self, mem_bytes: f64) -> AppSize {
        AppSize {
            components: self.components.len(),
            core_components: self
                .components
                .iter()
                .filter(|c| c.class == Class::Core)
                .count(),
            mem_bytes,
            restarts_alone: self.restarts_alone(),
        }
    }

    /// The memory request its components hold, summed (bytes; a request
    /// that is not a finite non-negative number counts as 0).
    pub fn mem_request_bytes(&self) -> f64 {
        self.components
            .iter()
            .map(|c| crate::limits::sane(c.request.mem_bytes))
            .sum()
    }
}

/// Everything `decide()` looks at.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterView {
    pub hosts: Vec<Host>,
    pub apps: Vec<Application>,
}

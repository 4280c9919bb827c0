//! The rig of the agent loop's tests (agent/tests/fake_loop.rs): an agent
//! on the in-memory fake runtime with a manual clock, driven round by
//! round, and the test configuration it starts from.

#![allow(dead_code)]

use agent::config::check_toml;
use agent::fake::{FakeCall, FakeRuntime};
use agent::runtime::CpuLimit;
use agent::{
    ActionOutcome, Agent, AgentConfig, LocalShaper, NodeAction, NodeActionKind, NodePlan, NodeView,
    PlanSource, PlanSourceError,
};
use futures_util::future::BoxFuture;
use std::sync::{Arc, Mutex};
use tailor_core::ManualClock;

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

pub fn config(extra: &str) -> AgentConfig {
    let text = format!(
        r#"
interval_s = 1.0
state_file = ""
host_lock = ""
restart_cooldown_s = 0.0
actuation = "shape"
manage_unlimited = true
[http]
listen = ""
[shaper]
max_evictions_per_round = 1000
min_history_samples = 3
horizon_samples = 3
grace_period_s = 0.0
k1 = 0.05
k2 = 3.0
small_app_components = 0
app_mem_ref_rel = 0.0
sibling_hold_s = 0.0
[forecaster]
kind = "peak"
calibrated = false
[forecaster.peak]
window = 3
{extra}
"#
    );
    check_toml(&text).expect("test config is valid")
}

pub fn with_capacity(cfg: &str, cpu: f64, mem: u64) -> String {
    format!("{cfg}\n[capacity]\ncpu_cores = {cpu}\nmem_bytes = {mem}\n")
}

pub struct Rig {
    pub fake: FakeRuntime,
    pub clock: Arc<ManualClock>,
    pub agent: Agent<FakeRuntime>,
}

pub fn rig(cfg: AgentConfig) -> Rig {
    let source = Box::new(LocalShaper::new(cfg.shaper.clone()));
    rig_with(cfg, source)
}

/// A rig whose plans come from `source` (4 cores, 8 GiB).
pub fn rig_with(cfg: AgentConfig, source: Box<dyn PlanSource>) -> Rig {
    let fake = FakeRuntime::new(4, 8 * GIB);
    let clock = Arc::new(ManualClock::new(1_000.0));
    let agent = Agent::new(cfg, Arc::new(fake.clone()), source, clock.clone()).expect("agent");
    Rig { fake, clock, agent }
}

/// A plan source that hands the agent the actions queued with
/// [`Scripted::queue`] (as a central shaper would, action ids included)
/// and keeps the outcomes it is told (what cluster mode acknowledges).
#[derive(Clone, Default)]
pub struct Scripted {
    next: Arc<Mutex<Vec<NodeAction>>>,
    told: Arc<Mutex<Vec<ActionOutcome>>>,
}

impl Scripted {
    /// The next round's actions.
    pub fn queue(&self, actions: Vec<NodeAction>) {
        *self.next.lock().expect("next") = actions;
    }

    /// The outcomes told since the last call.
    pub fn take_outcomes(&self) -> Vec<ActionOutcome> {
        std::mem::take(&mut *self.told.lock().expect("told"))
    }
}

impl PlanSource for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn plan<'a>(
        &'a mut self,
        _view: &'a NodeView,
        _early: bool,
    ) -> BoxFuture<'a, Result<NodePlan, PlanSourceError>> {
        let actions = std::mem::take(&mut *self.next.lock().expect("next"));
        Box::pin(async move {
            Ok(NodePlan {
                actions,
                plan: None,
                source: "cluster (scripted)".into(),
            })
        })
    }

    fn outcomes<'a>(&'a mut self, outcomes: &'a [ActionOutcome]) -> BoxFuture<'a, ()> {
        self.told
            .lock()
            .expect("told")
            .extend(outcomes.iter().cloned());
        Box::pin(async {})
    }
}

/// An action from the shaper (with an action id) on container `id`, which
/// a cluster plan names from the view (empty when not in it).
pub fn shaper_action(action_id: &str, id: &str, name: &str, kind: NodeActionKind) -> NodeAction {
    NodeAction {
        action_id: Some(action_id.into()),
        container_id: id.into(),
        container_name: name.into(),
        kind,
        explanation: format!("scripted {action_id}"),
    }
}

impl Rig {
    /// Advances 1 s, burns `cpu` cores for every listed container, sets memory.
    pub async fn step(&mut self, usage: &[(&str, u64, f64)]) -> agent::RoundReport {
        self.clock.advance(1.0);
        self.fake.set_now(self.clock_now());
        for (id, mem, cpu) in usage {
            self.fake.set_usage(id, *mem, (cpu * 1e9) as u64);
        }
        self.agent.round().await.expect("round")
    }

    pub fn clock_now(&self) -> f64 {
        use tailor_core::Clock;
        self.clock.now_s()
    }

    pub fn updates_of(&self, id: &str) -> Vec<agent::runtime::ResourceUpdate> {
        self.fake
            .calls()
            .into_iter()
            .filter_map(|c| match c {
                FakeCall::Update(i, u) if i == id => Some(u),
                _ => None,
            })
            .collect()
    }
}

pub const ENABLE: (&str, &str) = ("tailor.enable", "true");

pub trait CloneWith {
    fn clone_with(self, f: impl FnOnce(&mut Self)) -> Self;
}

impl CloneWith for AgentConfig {
    fn clone_with(mut self, f: impl FnOnce(&mut Self)) -> Self {
        f(&mut self);
        self
    }
}

/// A container with a 100 MiB limit after 4 rounds at 90 MiB usage (the
/// agent has shaped it to `before`), optionally with the event listener;
/// `max_growth` 2 leaves the OOM floor room past the 100 MiB the container
/// was started with (the floor stops at the ceiling).
pub async fn oom_rig(listener: bool) -> (Rig, u64) {
    let mut c = config("");
    c.shaper.max_growth = 2.0;
    tight_rig(c, listener, 90 * MIB).await
}

/// Container "tight" with a 100 MiB limit after 4 rounds at `use_bytes`
/// under `cfg`, and the limit the agent has shaped it to.
pub async fn tight_rig(cfg: AgentConfig, listener: bool, use_bytes: u64) -> (Rig, u64) {
    let mut r = rig(cfg);
    if listener {
        r.agent.start_event_listener();
    }
    r.fake.add(
        "tight",
        &[ENABLE],
        Some(100 * MIB),
        CpuLimit::Nano {
            nano_cpus: 1_000_000_000,
        },
        900.0,
    );
    for _ in 0..4 {
        r.step(&[("tight", use_bytes, 0.1)]).await;
    }
    let before = r.mem_limit("tight");
    (r, before)
}

impl Rig {
    pub fn mem_limit(&self, id: &str) -> u64 {
        self.fake
            .container(id)
            .and_then(|c| c.info.limits.mem_bytes)
            .expect("limited")
    }

    /// `docker start` (a restart policy or an operator).
    pub async fn restart(&self, id: &str) {
        use agent::ContainerRuntime;
        self.fake.start(id).await.expect("start");
    }
}

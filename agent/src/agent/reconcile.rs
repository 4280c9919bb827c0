//! Reconcile: restart containers waiting for room when it is back, restore
//! original limits (on shutdown, before a restart, after an OOM kill at a cut).

use super::*;

impl<R: ContainerRuntime + ?Sized> Agent<R> {
    /// The update that gives `t` back the limits it was started with;
    /// `None` when it has them (the agent never changed them, or restored
    /// them already). Only a resource whose limit differs from the original
    /// is written, and never one the agent may not limit
    /// (`manage_unlimited = false`).
    ///
    /// Docker cannot remove a limit: `docker update` refuses a memory limit
    /// of 0 or -1 and ignores `NanoCpus = 0`. A resource started without a
    /// limit that the agent limited gets the most permissive one: memory
    /// [`UNLIMITED_MEM_BYTES`] (the kernel's "no limit") with unlimited
    /// swap; CPU no CFS quota (`CpuQuota = -1`) when it is limited by a
    /// quota, else `NanoCpus` of every core of the host (the most Docker
    /// takes: nothing can be throttled).
    pub(super) fn original_update(&self, t: &Tracked) -> Option<ResourceUpdate> {
        let orig = self.original_limits(t);
        let cur = t.info.limits;
        let (no_cpu, no_mem) = self.unlimited_untouchable(t);
        let mem_changed = match orig.mem_bytes {
            None => cur.mem_bytes.is_some(),
            Some(m) => {
                cur.mem_bytes != Some(m)
                    || orig
                        .mem_swap_bytes
                        .is_some_and(|s| cur.mem_swap_bytes != Some(s))
            }
        };
        let all_cores = CpuLimit::Nano {
            nano_cpus: i64::from(self.host_cpus()) * 1_000_000_000,
        };
        let cpu = match (orig.cpu, cur.cpu) {
            (o, c) if o == c => None,
            (CpuLimit::Unlimited, c) if c == all_cores => None,
            (CpuLimit::Unlimited, CpuLimit::Quota { .. }) => Some(CpuLimit::Unlimited),
            (CpuLimit::Unlimited, _) => Some(all_cores),
            (o, _) => Some(o),
        };
        let update = ResourceUpdate {
            mem_bytes: (mem_changed && !no_mem)
                .then(|| orig.mem_bytes.unwrap_or(UNLIMITED_MEM_BYTES)),
            cpu: cpu.filter(|_| !no_cpu),
            // the swap limit it was started with; an originally unlimited
            // memory had unlimited swap
            mem_swap_bytes: match orig.mem_bytes {
                None => Some(-1),
                Some(_) => orig.mem_swap_bytes,
            },
        };
        (update.mem_bytes.is_some() || update.cpu.is_some()).then_some(update)
    }

    /// Gives `t` the limits it was started with ([`Self::original_update`]),
    /// running or not: the one rule behind shutdown (`restore_requests`),
    /// the restart of a container that waited for room, and a container
    /// OOM-killed at a cut below its request (`stopped.rs`). Logs what
    /// Docker cannot undo (a limit on a resource started without one).
    /// `Ok(None)`: it has them already; `Ok(Some(limits))`: the limits
    /// after the update, as the runtime reports them.
    pub(super) async fn restore_original(
        &mut self,
        t: &Tracked,
    ) -> Result<Option<Limits>, RuntimeError> {
        let Some(update) = self.original_update(t) else {
            return Ok(None);
        };
        let orig = self.original_limits(t);
        if orig.mem_bytes.is_none() && update.mem_bytes.is_some() {
            tracing::info!(
                container = %t.info.name,
                mem_limit_bytes = UNLIMITED_MEM_BYTES,
                "started without a memory limit: Docker cannot remove the one the agent set; restoring the kernel's highest (no limit in effect)"
            );
        }
        if let (CpuLimit::Unlimited, Some(CpuLimit::Nano { nano_cpus })) = (orig.cpu, update.cpu) {
            tracing::info!(
                container = %t.info.name,
                cpu_cores = nano_cpus as f64 / 1e9,
                "started without a CPU limit: Docker cannot remove the NanoCpus limit the agent set; restoring every core of the host"
            );
        }
        let sent_s = self.clock.now_s();
        match self.runtime.update(&t.info.id, &update).await {
            Ok(()) => {
                let after = Self::limits_after(t, &update);
                self.confirm_limits(&t.info.id, after, sent_s);
                Ok(Some(after))
            }
            Err(e) => {
                self.shared.metrics.runtime_error("update");
                Err(e)
            }
        }
    }

    /// The host's CPU count as the runtime reports it (Docker's `NCPU`,
    /// the most `NanoCpus` it takes), else the configured capacity.
    fn host_cpus(&self) -> u32 {
        self.host
            .as_ref()
            .map(|h| h.ncpu)
            .filter(|&n| n > 0)
            .unwrap_or_else(|| self.capacity().cpu_cores.ceil().max(1.0) as u32)
    }

    /// `t`'s limits after `update` was applied, as the runtime reports them.
    pub(super) fn limits_after(t: &Tracked, update: &ResourceUpdate) -> Limits {
        let mut l = t.info.limits;
        if let Some(m) = update.mem_bytes {
            l.mem_bytes = mem_limit(i64::try_from(m).unwrap_or(i64::MAX));
            l.mem_swap_bytes = Some(
                update
                    .mem_swap_bytes
                    .unwrap_or(i64::try_from(m).unwrap_or(i64::MAX)),
            );
        }
        if let Some(c) = update.cpu {
            l.cpu = c;
        }
        l
    }

    /// Starts the containers waiting for room (evicted, or OOM-killed at a
    /// cut below their request: [`WaitCause`]), oldest first, while the
    /// next one's request fits in what the running containers leave and
    /// `restart_cooldown_s` has passed since it stopped; each gets its
    /// original limits first. Returns the names started.
    pub(super) async fn restart_evicted(&mut self, now_s: f64) -> Vec<String> {
        let cap = self.capacity();
        let allocated = self
            .tracked
            .values()
            .filter(|t| t.info.state == ContainerState::Running)
            .fold(Resources::ZERO, |a, t| a.add(&self.allocation_of(t, cap)));
        let mut free = cap.sub(&allocated);
        let mut restarted = Vec::new();
        while let Some(e) = self.state.evicted.first().cloned() {
            // an OOM floor above the request (`max_growth` > 1) is what the
            // next round gives it: it must fit too
            let floor_bytes = self.kernel.as_ref().map_or(0.0, |k| {
                k.oom_floor_bytes(&e.id, now_s, e.request.mem_bytes)
            });
            let need = Resources::new(e.request.cpu_cores, e.request.mem_bytes.max(floor_bytes));
            if now_s - e.at_s < self.cfg.restart_cooldown_s || !need.fits_in(&free) {
                break;
            }
            let Some(t) = self.tracked.get(&e.id).cloned() else {
                self.state.evicted.remove(0);
                continue;
            };
            if let Err(err) = self.restore_original(&t).await {
                // not applied: it starts at the limits it has
                tracing::warn!(container = %e.name, error = %err, "cannot restore limits before restart");
            }
            match self.runtime.start(&e.id).await {
                Ok(()) => {
                    self.state.evicted.remove(0);
                    free = free.sub(&need);
                    if let Some(tm) = self.tracked.get_mut(&e.id) {
                        tm.info.state = ContainerState::Running;
                        tm.needs_inspect = true;
                        tm.last_cpu = None;
                    }
                    self.shared
                        .metrics
                        .action("restart", Outcome::Applied.as_str());
                    tracing::info!(container = %e.name, app = %e.app, cause = e.cause.as_str(), stopped_for_s = now_s - e.at_s, "restarted a container that waited for room");
                    restarted.push(e.name.clone());
                }
                Err(err) => {
                    self.shared.metrics.runtime_error("start");
                    self.shared
                        .metrics
                        .action("restart", Outcome::Failed.as_str());
                    tracing::warn!(container = %e.name, cause = e.cause.as_str(), error = %err, "cannot restart a container that waited for room");
                    if matches!(err, RuntimeError::NotFound(_)) {
                        self.state.evicted.remove(0);
                        continue;
                    }
                    break;
                }
            }
        }
        if !restarted.is_empty() {
            self.save_state();
        }
        restarted
    }

    /// What SIGTERM does (`on_shutdown`): with `restore_requests` every
    /// managed container whose limits the agent changed gets its original
    /// limits back (see [`Self::original_update`]), running or not: a
    /// stopped container (exited, OOM-killed, stopped by the operator or
    /// evicted by the agent) would otherwise start again at its shrunk
    /// size. `keep_current` changes nothing. Nothing is stopped or started
    /// either way, and in `recommend` mode nothing was changed. Returns the
    /// containers restored (those whose update succeeded).
    pub async fn shutdown(&mut self) -> Vec<String> {
        let mut restored = Vec::new();
        if self.cfg.actuation != Actuation::Shape
            || self.cfg.on_shutdown != ShutdownPolicy::RestoreRequests
        {
            return restored;
        }
        let todo: Vec<Tracked> = self
            .tracked
            .values()
            .filter(|t| {
                !matches!(
                    t.info.state,
                    ContainerState::Removing | ContainerState::Dead
                )
            })
            .cloned()
            .collect();
        let mut failed = 0usize;
        for t in todo {
            match self.restore_original(&t).await {
                Ok(None) => {}
                Ok(Some(after)) => {
                    tracing::debug!(
                        container = %t.info.name,
                        state = ?t.info.state,
                        mem_mib = after.mem_bytes.map(|m| log3(m as f64 / MIB)),
                        cpu_cores = after.cpu.cores().map(log3),
                        "restored original limits"
                    );
                    restored.push(t.info.name.clone());
                }
                Err(e) => {
                    failed += 1;
                    tracing::warn!(container = %t.info.name, state = ?t.info.state, error = %e, "cannot restore request on shutdown")
                }
            }
        }
        if !restored.is_empty() {
            self.save_state();
        }
        if failed > 0 {
            tracing::warn!(
                restored = restored.len(),
                failed,
                "restored requests on shutdown; some containers keep their shaped limits"
            );
        } else {
            tracing::info!(restored = restored.len(), "restored requests on shutdown");
        }
        restored
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{check_toml, AgentConfig};
    use crate::fake::{FakeCall, FakeRuntime};
    use crate::runtime::{CpuLimit, Limits, ResourceUpdate, UNLIMITED_MEM_BYTES};
    use crate::view::{NodeActionKind, Outcome};
    use crate::{Agent, LocalShaper};
    use std::sync::Arc;
    use tailor_core::{Clock, ManualClock};

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    const HALF_CORE: CpuLimit = CpuLimit::Nano {
        nano_cpus: 500_000_000,
    };

    /// Shape mode, 1 s rounds, a peak forecaster that decides after 3
    /// samples, `extra` appended.
    fn config(extra: &str) -> AgentConfig {
        check_toml(&format!(
            r#"
interval_s = 1.0
state_file = ""
host_lock = ""
actuation = "shape"
manage_unlimited = true
warmup_rounds = 0
[http]
listen = ""
[shaper]
max_evictions_per_round = 1000
min_history_samples = 3
horizon_samples = 3
grace_period_s = 0.0
k1 = 0.05
k2 = 0.0
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
        ))
        .expect("test config is valid")
    }

    struct Rig {
        fake: FakeRuntime,
        clock: Arc<ManualClock>,
        agent: Agent<FakeRuntime>,
    }

    fn rig(cfg: AgentConfig) -> Rig {
        let fake = FakeRuntime::new(4, 8 * GIB);
        let clock = Arc::new(ManualClock::new(1_000.0));
        let source = Box::new(LocalShaper::new(cfg.shaper.clone()));
        let agent = Agent::new(cfg, Arc::new(fake.clone()), source, clock.clone()).expect("agent");
        Rig { fake, clock, agent }
    }

    impl Rig {
        /// `n` rounds, 1 s apart, every listed container using (MiB, cores).
        async fn rounds(
            &mut self,
            n: usize,
            usage: &[(&str, u64, f64)],
        ) -> Vec<crate::RoundReport> {
            let mut reports = Vec::new();
            for _ in 0..n {
                self.clock.advance(1.0);
                for (id, mib, cores) in usage {
                    self.fake.set_usage(id, mib * MIB, (cores * 1e9) as u64);
                }
                reports.push(self.agent.round().await.expect("round"));
            }
            reports
        }

        fn limits(&self, id: &str) -> Limits {
            self.fake.container(id).expect("exists").info.limits
        }

        fn updates_of(&self, id: &str) -> Vec<ResourceUpdate> {
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

    fn started(mem: u64, cpu: CpuLimit) -> Limits {
        Limits {
            mem_bytes: Some(mem),
            cpu,
            mem_swap_bytes: None,
            mem_reservation_bytes: None,
        }
    }

    /// H5: containers that are not running when the agent stops (stopped
    /// by the operator, OOM-killed, evicted by the agent) get their
    /// original limits back too: `docker start` would run them at the
    /// shrunk size.
    #[tokio::test]
    async fn shutdown_restores_stopped_oom_killed_and_evicted_containers() {
        // 1 GiB node: "big" (a core component, 1 GiB) and three elastic
        // ones; requests exceed the node, so the models warm up first
        let mut cfg = config("[capacity]\ncpu_cores = 4.0\nmem_bytes = 1073741824");
        cfg.restart_evicted = false;
        let mut r = rig(cfg);
        r.fake.add(
            "big",
            &[("tailor.enable", "true"), ("tailor.app", "a")],
            Some(GIB),
            HALF_CORE,
            100.0,
        );
        for (i, id) in ["stopped", "oom", "young"].iter().enumerate() {
            r.fake.add(
                id,
                &[
                    ("tailor.enable", "true"),
                    ("tailor.app", "b"),
                    ("tailor.class", "elastic"),
                ],
                Some(256 * MIB),
                HALF_CORE,
                200.0 + i as f64,
            );
        }
        let light = [
            ("big", 100, 0.1),
            ("stopped", 40, 0.1),
            ("oom", 40, 0.1),
            ("young", 40, 0.1),
        ];
        for _ in 0..3 {
            r.clock.advance(1.0);
            for (id, mib, cores) in light {
                r.fake.set_usage(id, mib * MIB, (cores * 1e9) as u64);
            }
            r.agent.sample_only().await.expect("sample");
        }
        r.rounds(3, &light).await;
        for id in ["stopped", "oom", "young"] {
            assert!(
                r.limits(id).mem_bytes.expect("limited") < 256 * MIB,
                "{id} shrunk: {:?}",
                r.limits(id)
            );
        }
        // the operator stops one, the kernel OOM-kills another
        crate::ContainerRuntime::stop(&r.fake, "stopped", 0)
            .await
            .expect("stop");
        let now = r.clock.now_s();
        // with a restart policy (that has not started it yet): left to it
        // (without one, the kill at the agent's cut gives it its original
        // limits back at once: agent/src/agent/stopped.rs)
        r.fake.set_restart_policy("oom", true);
        r.fake.oom_kill("oom", now, false);
        // big's memory grows past the room left: the youngest elastic
        // container is evicted
        let mut evicted = Vec::new();
        for rep in r.rounds(5, &[("big", 1000, 0.1), ("young", 40, 0.1)]).await {
            evicted.extend(
                rep.outcomes
                    .iter()
                    .filter(|o| {
                        matches!(o.action.kind, NodeActionKind::Evict { .. })
                            && o.result == Outcome::Applied
                    })
                    .map(|o| o.action.container_id.clone()),
            );
        }
        assert_eq!(evicted, vec!["young".to_string()]);
        for id in ["stopped", "oom", "young"] {
            assert!(
                r.limits(id).mem_bytes.expect("limited") < 256 * MIB,
                "{id} still shrunk"
            );
        }
        let mut restored = r.agent.shutdown().await;
        restored.sort();
        assert!(
            ["oom", "stopped", "young"]
                .iter()
                .all(|id| restored.contains(&id.to_string())),
            "{restored:?}"
        );
        for id in ["stopped", "oom", "young"] {
            let l = r.fake.container(id).expect("exists").info;
            assert_ne!(
                l.state,
                crate::runtime::ContainerState::Running,
                "{id} not started"
            );
            assert_eq!(
                (l.limits.mem_bytes, l.limits.cpu),
                (Some(256 * MIB), HALF_CORE),
                "{id} restored"
            );
        }
        assert!(r
            .fake
            .calls()
            .iter()
            .all(|c| !matches!(c, FakeCall::Start(_))));
    }

    /// H4: the shutdown count (and the returned list) holds only the
    /// containers whose update succeeded.
    #[tokio::test]
    async fn failed_restores_are_not_counted() {
        let mut r = rig(config(""));
        for id in ["a", "b"] {
            r.fake.add(
                id,
                &[("tailor.enable", "true")],
                Some(GIB),
                HALF_CORE,
                900.0,
            );
        }
        r.rounds(6, &[("a", 20, 0.05), ("b", 20, 0.05)]).await;
        assert!(r.limits("a").mem_bytes.expect("limited") < GIB);
        assert!(r.limits("b").mem_bytes.expect("limited") < GIB);
        r.fake.fail_updates("a");
        assert_eq!(r.agent.shutdown().await, vec!["b".to_string()]);
        assert_eq!(
            r.limits("b"),
            Limits {
                mem_swap_bytes: Some(GIB as i64),
                ..started(GIB, HALF_CORE)
            }
        );
        assert!(
            r.limits("a").mem_bytes.expect("limited") < GIB,
            "a keeps its shaped limit"
        );
    }

    /// M2: a container the agent never resized gets no update on shutdown
    /// (before, a container started without limits got the node's capacity
    /// as limits, which Docker cannot remove); one whose limits were
    /// restored already gets none either.
    #[tokio::test]
    async fn untouched_containers_get_no_update() {
        let mut r = rig(config(""));
        r.fake.add(
            "free",
            &[("tailor.enable", "true")],
            None,
            CpuLimit::Unlimited,
            900.0,
        );
        r.fake.add(
            "lim",
            &[("tailor.enable", "true")],
            Some(GIB),
            HALF_CORE,
            900.0,
        );
        // two rounds: too few samples for a forecast, nothing is resized
        r.rounds(2, &[("free", 20, 0.05), ("lim", 20, 0.05)]).await;
        assert!(r.fake.calls().is_empty(), "{:?}", r.fake.calls());
        assert!(r.agent.shutdown().await.is_empty());
        assert!(r.fake.calls().is_empty(), "{:?}", r.fake.calls());
        assert_eq!(
            r.limits("free"),
            Limits {
                mem_bytes: None,
                cpu: CpuLimit::Unlimited,
                mem_swap_bytes: None,
                mem_reservation_bytes: None,
            }
        );
    }

    /// M2: a resource started without a limit that the agent limited gets
    /// the most permissive limit Docker allows back, never the node's
    /// capacity: memory the kernel's "no limit" (unlimited swap), CPU
    /// every core of the host; a second shutdown writes nothing more.
    #[tokio::test]
    async fn unlimited_resources_get_no_effective_limit_back() {
        let mut r = rig(config(
            "[capacity]\ncpu_cores = 3.0\nmem_bytes = 4294967296",
        ));
        r.fake.add(
            "free",
            &[("tailor.enable", "true")],
            None,
            CpuLimit::Unlimited,
            900.0,
        );
        // it used 500 MiB and 1 core, now much less: the agent cuts it
        r.rounds(3, &[("free", 500, 1.0)]).await;
        r.rounds(6, &[("free", 20, 0.05)]).await;
        let shaped = r.limits("free");
        assert!(
            shaped.mem_bytes.is_some() && shaped.cpu != CpuLimit::Unlimited,
            "{shaped:?}"
        );
        assert_eq!(r.agent.shutdown().await, vec!["free".to_string()]);
        let last = *r.updates_of("free").last().expect("restored");
        assert_eq!(
            last,
            ResourceUpdate {
                mem_bytes: Some(UNLIMITED_MEM_BYTES),
                // the host has 4 CPUs (the capacity is not the most Docker takes)
                cpu: Some(CpuLimit::Nano {
                    nano_cpus: 4_000_000_000
                }),
                mem_swap_bytes: Some(-1),
            }
        );
        // as Docker reports it: no memory limit
        assert_eq!(r.limits("free").mem_bytes, None);
        let calls = r.fake.calls().len();
        assert!(
            r.agent.shutdown().await.is_empty(),
            "nothing left to restore"
        );
        assert_eq!(r.fake.calls().len(), calls);
    }

    /// A CPU limited by a CFS quota although the container was started
    /// without one is lifted (`CpuQuota = -1`), not capped at the host.
    #[tokio::test]
    async fn a_quota_on_an_unlimited_cpu_is_lifted() {
        let mut r = rig(config(""));
        r.fake.add(
            "q",
            &[("tailor.enable", "true")],
            Some(GIB),
            CpuLimit::Unlimited,
            900.0,
        );
        r.rounds(1, &[("q", 20, 0.05)]).await;
        // limited with a quota by the agent (a limit someone else set
        // would be adopted as its request: observe.rs, `changed_elsewhere`)
        let quota = CpuLimit::Quota {
            quota_us: 20_000,
            period_us: 100_000,
        };
        crate::ContainerRuntime::update(
            &r.fake,
            "q",
            &ResourceUpdate {
                cpu: Some(quota),
                ..ResourceUpdate::default()
            },
        )
        .await
        .expect("update");
        let t = r.agent.tracked.get_mut("q").expect("tracked");
        t.info.limits.cpu = quota;
        t.needs_inspect = true;
        r.rounds(1, &[("q", 20, 0.05)]).await;
        assert_eq!(r.agent.shutdown().await, vec!["q".to_string()]);
        let last = *r.updates_of("q").last().expect("restored");
        assert_eq!(
            (last.cpu, last.mem_bytes),
            (Some(CpuLimit::Unlimited), None)
        );
    }
}

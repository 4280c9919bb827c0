//! Observe: runtime events, inspect, stats samples, the kernel's view, the recording.

use super::oom_pairing::{same_oom, MAX_PENDING_OOMS};
use super::*;

impl<R: ContainerRuntime + ?Sized> Agent<R> {
    pub(super) fn drain_events(&mut self, now_s: f64) {
        let Some(rx) = self.events_rx.as_mut() else {
            return;
        };
        let mut events = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            events.push(ev);
        }
        for ev in events {
            let Some(t) = self.tracked.get_mut(ev.id()) else {
                continue;
            };
            match ev {
                RuntimeEvent::Oom { id, at_s } => {
                    if let (Some(e), Some(f)) = (at_s, t.recovered_oom_exit) {
                        if same_oom(Some(e), f, t.info.started_s) {
                            // counted already: inspect saw the exit before the event came
                            t.recovered_oom_exit = None;
                            continue;
                        }
                    }
                    if t.streamed_ooms.len() == MAX_PENDING_OOMS {
                        t.streamed_ooms.remove(0);
                    }
                    t.streamed_ooms.push(at_s);
                    self.count_oom(&id, now_s, at_s, false);
                }
                RuntimeEvent::Die { .. } | RuntimeEvent::Start { .. } => t.needs_inspect = true,
                RuntimeEvent::Destroy { .. } => t.needs_inspect = true,
            }
        }
    }

    /// Counts an OOM kill of a tracked container and makes its next memory
    /// allocation grow: its memory at least `max(limit + oom_bump_bytes,
    /// limit * oom_bump_factor)`, and its request when the limit was below
    /// it, for `oom_memory_s`, up to its ceiling
    /// (`request * max_growth`; [`shaper::OomFloor`]). `killed_s`: when the
    /// kill happened (the runtime's clock), when known: the limit is the one
    /// in force then (the agent may have resized the container since, e.g.
    /// in the round in which it died, before the event was drained), and the
    /// floor holds from then (never later than `now_s`). `recovered`: found
    /// by `inspect`, not by the stream.
    pub(super) fn count_oom(
        &mut self,
        id: &str,
        now_s: f64,
        killed_s: Option<f64>,
        recovered: bool,
    ) {
        let Some(t) = self.tracked.get_mut(id) else {
            return;
        };
        t.oom_kills += 1;
        self.shared.metrics.oom_event(recovered);
        let killed_s = killed_s.filter(|k| k.is_finite());
        let limit = t
            .limits_at(killed_s)
            .mem_bytes
            .map(|m| m as f64)
            .unwrap_or(t.usage.mem_bytes);
        let at_s = killed_s.map_or(now_s, |k| k.min(now_s));
        let event = KernelEvent::OomKill {
            container_id: id.to_string(),
            limit_bytes: limit,
            at_s,
        };
        // the kernel records the floor; the same event goes to the recording
        let floor = self
            .kernel
            .as_mut()
            .map_or(limit, |k| k.oom_kill(id, limit, at_s));
        self.round_events.push(event);
        *self
            .state
            .app_failures
            .entry(t.labels.app.clone())
            .or_default() += 1;
        let how = if recovered {
            "OOM kill found by inspect (missed by the event stream)"
        } else {
            "OOM kill"
        };
        tracing::warn!(
            container = %t.info.name,
            limit_mib = log3(limit / MIB),
            next_floor_mib = log3(floor / MIB),
            killed_at_s = killed_s,
            "{how}; next memory allocation grows"
        );
        self.round_kills.push(crate::journal::JournalOomKill {
            container: t.info.name.clone(),
            limit_mib: limit / MIB,
            floor_mib: floor / MIB,
            killed_at_s: at_s,
            found_by_inspect: recovered,
        });
    }

    pub(super) async fn sample(
        &mut self,
        now_s: f64,
        errors: &mut Vec<String>,
    ) -> Result<(), AgentError> {
        let reinspect = self
            .round
            .is_multiple_of(u64::from(self.cfg.reinspect_every));
        if self.host.is_none() || reinspect {
            match self.runtime.host_info().await {
                Ok(h) => self.host = Some(h),
                Err(e) => {
                    self.shared.metrics.runtime_error("host_info");
                    if self.host.is_none() || e.is_unavailable() {
                        return Err(e.into());
                    }
                }
            }
        }
        let list = match self.runtime.list(&self.cfg.selector.label_filter()).await {
            Ok(l) => l,
            Err(e) => {
                self.shared.metrics.runtime_error("list");
                return Err(e.into());
            }
        };
        self.shared.metrics.docker_up(true);
        let mut dirty = false;
        let listed: BTreeSet<String> = list.iter().map(|s| s.id.clone()).collect();
        for s in &list {
            if !self.cfg.selector.matches(&s.labels) {
                continue;
            }
            let need = match self.tracked.get(&s.id) {
                None => true,
                Some(t) => t.needs_inspect || t.info.state != s.state || reinspect,
            };
            if !need {
                continue;
            }
            match self.runtime.inspect(&s.id).await {
                Ok(info) => dirty |= self.track(info, now_s),
                Err(RuntimeError::NotFound(_)) => {
                    self.tracked.remove(&s.id);
                }
                Err(e) => {
                    self.shared.metrics.runtime_error("inspect");
                    errors.push(format!("inspect {}: {e}", s.name));
                    if e.is_unavailable() {
                        return Err(e.into());
                    }
                }
            }
        }
        // vanished containers
        let gone: Vec<String> = self
            .tracked
            .keys()
            .filter(|id| !listed.contains(*id))
            .cloned()
            .collect();
        for id in gone {
            self.tracked.remove(&id);
            let event = KernelEvent::Forget {
                container_id: id.clone(),
            };
            if let Some(k) = self.kernel.as_mut() {
                k.apply(&event);
            }
            self.round_events.push(event);
            dirty |= self.state.originals.remove(&id).is_some();
            dirty |= self.state.oom_exits.remove(&id).is_some();
            dirty |= self.state.set_limits.remove(&id).is_some();
        }
        let before = self.state.evicted.len();
        let tracked = &self.tracked;
        self.state.evicted.retain(|e| {
            tracked
                .get(&e.id)
                .is_some_and(|t| t.info.state != ContainerState::Running)
        });
        dirty |= self.state.evicted.len() != before;
        if dirty {
            self.save_state();
        }

        // stats, concurrently
        let running: Vec<String> = self
            .tracked
            .iter()
            .filter(|(_, t)| t.info.state == ContainerState::Running)
            .map(|(id, _)| id.clone())
            .collect();
        let runtime = self.runtime.clone();
        let results: Vec<(String, Result<crate::runtime::ContainerStats, RuntimeError>)> =
            stream::iter(running)
                .map(|id| {
                    let runtime = runtime.clone();
                    async move {
                        let r = runtime.stats(&id).await;
                        (id, r)
                    }
                })
                .buffer_unordered(STATS_CONCURRENCY)
                .collect()
                .await;
        for t in self.tracked.values_mut() {
            t.sample = None;
        }
        let mut unavailable = 0usize;
        let total = results.len();
        let (mut thr_periods, mut thr_ns, mut thr_containers) = (0u64, 0u64, 0u64);
        let round = self.round;
        for (id, r) in results {
            let Some(t) = self.tracked.get_mut(&id) else {
                continue;
            };
            match r {
                Ok(st) => {
                    let mem = st.working_set_bytes() as f64;
                    let mark = CpuMark {
                        ns: st.cpu_total_ns,
                        round_s: now_s,
                        read_s: st.read_s.filter(|r| r.is_finite() && *r > 0.0),
                    };
                    let cpu = t.last_cpu.and_then(|prev| cpu_rate(&prev, &mark));
                    if t.last_cpu.is_some_and(|prev| mark.ns < prev.ns) {
                        // the counter went back: a new cgroup, so the
                        // container stopped and started again since the
                        // last sample (a restart policy after an OOM kill
                        // the event stream may have missed): inspect it
                        // at the next round, not only at the next
                        // `reinspect_every`
                        tracing::debug!(container = %t.info.name, "CPU counter went back: restarted since the last round");
                        t.needs_inspect = true;
                    }
                    t.last_cpu = Some(mark);
                    t.usage = Resources::new(cpu.unwrap_or(t.usage.cpu_cores), mem);
                    t.max_usage = Resources::new(
                        t.max_usage.cpu_cores.max(t.usage.cpu_cores),
                        t.max_usage.mem_bytes.max(mem),
                    );
                    if let (Some(p), Some(ns)) = (st.cpu_nr_throttled, st.cpu_throttled_ns) {
                        if let Some((pp, pns)) = t.last_throttle {
                            let (dp, dns) = (p.saturating_sub(pp), ns.saturating_sub(pns));
                            if dp > 0 {
                                thr_periods += dp;
                                thr_ns += dns;
                                thr_containers += 1;
                                t.throttled_round = Some(round);
                            }
                        }
                        t.last_throttle = Some((p, ns));
                    }
                    let peak = interval_peak(t.last_peak, &st);
                    t.last_peak = st.mem_peak_bytes;
                    t.sample = Some(Sample {
                        cpu_cores: cpu,
                        mem_bytes: mem,
                        mem_peak_bytes: peak,
                    });
                }
                Err(RuntimeError::NotFound(_)) => t.needs_inspect = true,
                Err(e) => {
                    self.shared.metrics.runtime_error("stats");
                    errors.push(format!("stats {}: {e}", t.info.name));
                    if e.is_unavailable() {
                        unavailable += 1;
                    }
                }
            }
        }
        self.shared
            .metrics
            .throttling(thr_periods, thr_ns as f64 / 1e9, thr_containers);
        if total > 0 && unavailable == total {
            return Err(RuntimeError::Unavailable("every stats call failed".into()).into());
        }
        Ok(())
    }

    /// Records a freshly inspected container. An OOM-killed last run that
    /// was not counted yet (Docker's `State.OOMKilled` + `FinishedAt`) is
    /// counted here unless a streamed OOM event already did: OOM kills that
    /// happen while the event stream is down are not lost. Returns true
    /// when the persisted state changed.
    pub(super) fn track(&mut self, info: ContainerInfo, now_s: f64) -> bool {
        let mut dirty = false;
        // a container this agent (or its previous run) already knew
        let known =
            self.tracked.contains_key(&info.id) || self.state.originals.contains_key(&info.id);
        if !known {
            self.state.originals.insert(info.id.clone(), info.limits);
            dirty = true;
        }
        let new_oom_exit = match (info.oom_killed, info.finished_s) {
            (true, Some(f))
                if self
                    .state
                    .oom_exits
                    .get(&info.id)
                    .is_none_or(|&k| (k - f).abs() > 1e-3) =>
            {
                self.state.oom_exits.insert(info.id.clone(), f);
                dirty = true;
                Some(f)
            }
            _ => None,
        };
        dirty |= self.notice_hand_changes(&info, known);
        let id = info.id.clone();
        let parsed = labels::parse(&info.name, &info.labels);
        match self.tracked.get_mut(&info.id) {
            Some(t) => {
                if t.info.started_s != info.started_s {
                    // restarted: the CPU counter starts again
                    t.last_cpu = None;
                }
                t.info = info;
                t.labels = parsed;
                t.needs_inspect = false;
            }
            None => {
                for (label, problem) in &parsed.problems {
                    tracing::warn!(container = %info.name, label = %label, "{problem}");
                }
                self.tracked.insert(
                    info.id.clone(),
                    Tracked {
                        info,
                        labels: parsed,
                        last_cpu: None,
                        usage: Resources::ZERO,
                        max_usage: Resources::ZERO,
                        last_throttle: None,
                        throttled_round: None,
                        last_peak: None,
                        sample: None,
                        oom_kills: 0,
                        streamed_ooms: Vec::new(),
                        recovered_oom_exit: None,
                        replaced_limits: Vec::new(),
                        needs_inspect: false,
                    },
                );
            }
        }
        if let (Some(f), Some(t)) = (new_oom_exit, self.tracked.get_mut(&id)) {
            if let Some(i) = t
                .streamed_ooms
                .iter()
                .position(|&e| same_oom(e, f, t.info.started_s))
            {
                // the stream told us already
                t.streamed_ooms.remove(i);
            } else if known {
                t.recovered_oom_exit = Some(f);
                // the OOM-killed run ended at `f`, right after the kill
                self.count_oom(&id, now_s, Some(f), true);
            }
        }
        dirty
    }

    /// The limits a container was started with (its request), as first
    /// seen by this agent or a previous run of it.
    pub(super) fn original_limits(&self, t: &Tracked) -> Limits {
        self.original_limits_of(&t.info.id, &t.info.limits)
    }

    /// [`Self::original_limits`] of container `id`, else `current`.
    pub(super) fn original_limits_of(&self, id: &str, current: &Limits) -> Limits {
        self.state.originals.get(id).copied().unwrap_or(*current)
    }

    /// The request: the `tailor.request.*` label, else the limit it was
    /// started with; a resource started without a limit never counts as the
    /// whole node: `unlimited_request_*`, else the most it used so far (at
    /// least the kernel's floor), at most the node's capacity.
    pub(super) fn request_of(&self, t: &Tracked, cap: Resources) -> Resources {
        let orig = self.original_limits(t);
        let est = self.unlimited_estimate(t, cap);
        Resources::new(
            t.labels
                .request_cpu_cores
                .or(orig.cpu.cores())
                .unwrap_or(est.cpu_cores),
            t.labels
                .request_mem_bytes
                .or(orig.mem_bytes.map(|m| m as f64))
                .unwrap_or(est.mem_bytes),
        )
    }

    /// What an unlimited resource is counted at (request and allocation).
    fn unlimited_estimate(&self, t: &Tracked, cap: Resources) -> Resources {
        let cpu = self
            .cfg
            .unlimited_request_cpu_cores
            .unwrap_or_else(|| t.max_usage.cpu_cores.max(self.cfg.shaper.min_cpu_cores));
        let mem = self
            .cfg
            .unlimited_request_mem_bytes
            .unwrap_or_else(|| t.max_usage.mem_bytes.max(self.cfg.shaper.min_mem_bytes));
        Resources::new(cpu.min(cap.cpu_cores), mem.min(cap.mem_bytes))
    }

    /// The allocation: the limit in force; an unlimited resource counts at
    /// its estimated request (see [`Self::request_of`]), not the node.
    pub(super) fn allocation_of(&self, t: &Tracked, cap: Resources) -> Resources {
        let est = self.unlimited_estimate(t, cap);
        Resources::new(
            t.info.limits.cpu.cores().unwrap_or(est.cpu_cores),
            t.info
                .limits
                .mem_bytes
                .map(|m| m as f64)
                .unwrap_or(est.mem_bytes),
        )
    }

    /// True when the agent may not set a limit on this resource of `t`:
    /// started without one and `manage_unlimited = false`. (cpu, mem)
    pub(super) fn unlimited_untouchable(&self, t: &Tracked) -> (bool, bool) {
        if self.cfg.manage_unlimited {
            return (false, false);
        }
        let orig = self.original_limits(t);
        (orig.cpu == CpuLimit::Unlimited, orig.mem_bytes.is_none())
    }

    /// What the agent saw this round, per running container, before any
    /// kernel rule (also what a recording stores).
    pub(super) fn container_samples(&self, now_s: f64) -> Vec<ContainerSample> {
        let cap = self.capacity();
        self.tracked
            .values()
            .filter(|t| t.info.state == ContainerState::Running)
            .map(|t| ContainerSample {
                meta: ContainerMeta {
                    id: t.info.id.clone(),
                    name: t.info.name.clone(),
                    app: t.labels.app.clone(),
                    class: t.labels.class,
                    priority: t.labels.priority,
                    protected: t.labels.protected,
                    started_s: t.info.started_s.unwrap_or(now_s),
                    restarts_alone: t.info.restarts_alone,
                    mem_floor_bytes: t
                        .info
                        .limits
                        .mem_reservation_bytes
                        .map_or(0.0, |b| b as f64),
                },
                request: self.request_of(t, cap),
                allocation: self.allocation_of(t, cap),
                usage: t.usage,
                sample: t.sample,
                app_failures: self
                    .state
                    .app_failures
                    .get(&t.labels.app)
                    .copied()
                    .unwrap_or(0),
                oom_kills: t.oom_kills,
            })
            .collect()
    }

    /// Appends this round to the recording (when `[record]` is on): the
    /// events and samples given to the kernel, its forecasts, and the
    /// decisions (`None` when no plan was made).
    pub(super) fn record_round(
        &mut self,
        view: &NodeView,
        source: &str,
        decisions: Option<&[NodeAction]>,
    ) {
        let events = std::mem::take(&mut self.round_events);
        let containers = std::mem::take(&mut self.round_samples);
        let Some(w) = self.recorder.as_mut() else {
            return;
        };
        let mut labels = BTreeMap::new();
        for c in &containers {
            if self.recorded_labels.insert(c.meta.id.clone()) {
                if let Some(t) = self.tracked.get(&c.meta.id) {
                    labels.insert(c.meta.id.clone(), t.info.labels.clone());
                }
            }
        }
        let record = Record::Round(RoundRecord {
            round: view.round,
            at_s: view.at_s,
            capacity: view.capacity,
            events,
            forecasts: view.containers.iter().map(|c| c.forecast.clone()).collect(),
            containers,
            labels,
            source: source.to_string(),
            decisions: decisions.map(<[NodeAction]>::to_vec),
            early: self.early.is_some(),
        });
        match w.append(&record) {
            Ok(true) => {}
            Ok(false) => {
                // bound reached (logged once by the writer)
                self.recorder = None;
            }
            Err(e) => {
                tracing::error!(error = %e, "recording failed; recording stopped");
                self.recorder = None;
            }
        }
    }

    /// Hands this round's samples to the kernel (off the async runtime):
    /// models are fed, forecasts made, OOM floors applied.
    pub(super) async fn build_view(&mut self, now_s: f64) -> NodeView {
        let samples = self.container_samples(now_s);
        if self.recorder.is_some() {
            self.round_samples = samples.clone();
        }
        let node = self
            .cfg
            .node_name
            .clone()
            .or_else(|| self.host.as_ref().map(|h| h.name.clone()))
            .unwrap_or_else(|| "node".to_string());
        let capacity = planning_capacity(self.capacity(), &samples);
        let mut view = match self.kernel.take() {
            Some(mut kernel) => {
                let joined = tokio::task::spawn_blocking(move || {
                    let view = kernel.observe(&node, now_s, capacity, samples);
                    (kernel, view)
                })
                .await;
                match joined {
                    Ok((kernel, view)) => {
                        self.kernel = Some(kernel);
                        view
                    }
                    Err(e) => {
                        // a model panicked: its state is lost, rebuild from scratch
                        tracing::error!(error = %e, "kernel task failed; models reset");
                        self.kernel = NodeKernel::new(
                            self.cfg.shaper.clone(),
                            self.cfg.forecaster.clone(),
                            self.cfg.interval_s,
                        )
                        .ok();
                        NodeView {
                            at_s: now_s,
                            capacity: self.capacity(),
                            ..NodeView::default()
                        }
                    }
                }
            }
            None => NodeView {
                at_s: now_s,
                capacity,
                ..NodeView::default()
            },
        };
        view.round = self.round;
        view.evicted = self
            .state
            .evicted
            .iter()
            .filter(|e| e.cause == WaitCause::Evicted)
            .map(|e| e.name.clone())
            .collect();
        view.stopped = self.stopped_containers();
        view
    }
}

/// The capacity the kernel plans with: the host's, with CPU raised to the
/// sum of the running containers' CPU requests when they add up to more.
/// Docker lets CPU limits overcommit the cores, and the kernel's scheduler
/// shares the cores among busy containers; planning such limits into the
/// host's cores would squeeze the latest containers to `min_cpu_cores` on
/// a host whose cores sit idle (found on three 1-core containers of a
/// 2-core host). CPU is still shared when targets outgrow the requests.
/// Memory is not stretched: limits that overcommit it are what deliberate
/// evictions are for.
pub(super) fn planning_capacity(host: Resources, samples: &[ContainerSample]) -> Resources {
    let requested_cores: f64 = samples.iter().map(|c| c.request.cpu_cores).sum();
    Resources::new(host.cpu_cores.max(requested_cores), host.mem_bytes)
}

/// One sample of a container's cumulative CPU counter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct CpuMark {
    /// Cumulative CPU time, nanoseconds.
    pub ns: u64,
    /// The round's clock (Unix seconds) when it was asked for.
    pub round_s: f64,
    /// When the runtime read the counter (Unix seconds), when it says.
    pub read_s: Option<f64>,
}

/// CPU cores used between two samples of the cumulative counter: its
/// delta over the time between the runtime's reads when both samples carry
/// one and it increased, else over the time between the rounds that asked
/// (Docker reads up to ~1 s after the request: at a 2 s interval the
/// rounds' clock alone gives a flat load as +-50%). `None` when the counter
/// went back (a restart) or no time passed.
fn cpu_rate(prev: &CpuMark, cur: &CpuMark) -> Option<f64> {
    let used_ns = cur.ns.checked_sub(prev.ns)?;
    let secs = match (prev.read_s, cur.read_s) {
        (Some(p), Some(c)) if c > p => c - p,
        _ => cur.round_s - prev.round_s,
    };
    (secs > 0.0 && secs.is_finite()).then(|| used_ns as f64 / 1e9 / secs)
}

/// The memory peak within the last interval, from the runtime's
/// high-water mark since creation (cgroup v2 `memory.peak`, v1
/// `max_usage`): when the mark rose since the previous sample, the new mark
/// was reached in this interval; otherwise the interval's peak is unknown
/// (`None`: the model uses the sampled value). The mark counts page cache,
/// so the inactive file cache seen now is taken off, and it is never below
/// this sample's working set.
fn interval_peak(prev_mark: Option<u64>, st: &crate::runtime::ContainerStats) -> Option<f64> {
    let mark = st.mem_peak_bytes?;
    let prev = prev_mark?;
    (mark > prev).then(|| {
        let ws = st.working_set_bytes();
        mark.saturating_sub(st.mem_inactive_file_bytes).max(ws) as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ContainerStats;

    fn stats(usage: u64, inactive: u64, peak: Option<u64>) -> ContainerStats {
        ContainerStats {
            cpu_total_ns: 0,
            system_cpu_ns: None,
            online_cpus: None,
            mem_usage_bytes: usage,
            mem_inactive_file_bytes: inactive,
            mem_limit_bytes: None,
            mem_peak_bytes: peak,
            cpu_nr_throttled: None,
            cpu_throttled_ns: None,
            read_s: None,
        }
    }

    fn mark(ns: u64, round_s: f64, read_s: Option<f64>) -> CpuMark {
        CpuMark {
            ns,
            round_s,
            read_s,
        }
    }

    #[test]
    fn cpu_rate_divides_by_the_runtime_read_times() {
        // rounds 2 s apart, read 1.0 s and 0.1 s after the request: 0.02
        // cores over the 1.1 s between the reads
        let prev = mark(1_000_000_000, 100.0, Some(101.0));
        let cur = mark(1_022_000_000, 102.0, Some(102.1));
        let rate = cpu_rate(&prev, &cur).expect("rate");
        assert!((rate - 0.02).abs() < 1e-9, "{rate}");
    }

    #[test]
    fn cpu_rate_falls_back_to_the_round_clock() {
        let rate = |prev, cur| cpu_rate(&prev, &cur);
        // no read time on either side
        assert_eq!(
            rate(mark(0, 100.0, None), mark(40_000_000, 102.0, None)),
            Some(0.02)
        );
        assert_eq!(
            rate(mark(0, 100.0, Some(100.5)), mark(40_000_000, 102.0, None)),
            Some(0.02)
        );
        assert_eq!(
            rate(mark(0, 100.0, None), mark(40_000_000, 102.0, Some(102.5))),
            Some(0.02)
        );
        // read times not increasing (a cached answer, a clock step back)
        assert_eq!(
            rate(
                mark(0, 100.0, Some(101.0)),
                mark(40_000_000, 102.0, Some(101.0))
            ),
            Some(0.02)
        );
        assert_eq!(
            rate(
                mark(0, 100.0, Some(103.0)),
                mark(40_000_000, 102.0, Some(101.0))
            ),
            Some(0.02)
        );
        // the counter went back (restart), or no time passed at all
        assert_eq!(rate(mark(5, 100.0, None), mark(4, 102.0, None)), None);
        assert_eq!(rate(mark(0, 100.0, None), mark(4, 100.0, None)), None);
    }

    #[test]
    fn peak_only_when_the_mark_rose() {
        // first sample: no previous mark, no interval peak
        assert_eq!(interval_peak(None, &stats(100, 0, Some(500))), None);
        // the mark rose: the interval reached it (minus inactive cache)
        assert_eq!(
            interval_peak(Some(500), &stats(100, 50, Some(900))),
            Some(850.0)
        );
        // unchanged mark: unknown
        assert_eq!(interval_peak(Some(900), &stats(100, 0, Some(900))), None);
        // never below the working set
        assert_eq!(
            interval_peak(Some(100), &stats(400, 0, Some(300))),
            Some(400.0)
        );
        // no mark reported
        assert_eq!(interval_peak(Some(1), &stats(1, 0, None)), None);
    }
}

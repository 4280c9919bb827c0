//! Component lifecycle: start, finish, detach, OOM kills and app resets.

use super::*;

impl Engine<'_> {
    // ----- host bookkeeping -----

    /// Adds the cluster's memory allocation since the last call to
    /// `m.mem_alloc_byte_s` (exact: every allocation change goes through
    /// `reserve`, which calls this first).
    pub(super) fn integrate_alloc(&mut self) {
        let dt = (self.now - self.alloc_mem_t).max(0.0);
        self.m.mem_alloc_byte_s += self.alloc_mem_total.max(0.0) * dt;
        self.alloc_mem_t = self.now;
    }

    pub(super) fn host_free(&self, h: usize) -> Resources {
        self.hosts[h].cap.sub(&self.hosts[h].alloc)
    }

    /// Adds `delta` to host `h`'s allocation sum (negative frees).
    pub(super) fn reserve(&mut self, h: usize, delta: Resources) {
        self.integrate_alloc();
        self.alloc_mem_total += delta.mem_bytes;
        let before = self.host_free(h);
        self.hosts[h].alloc = self.hosts[h].alloc.add(&delta);
        let after = self.host_free(h);
        self.free_pos_cpu += after.cpu_cores.max(0.0) - before.cpu_cores.max(0.0);
        self.free_pos_mem += after.mem_bytes.max(0.0) - before.mem_bytes.max(0.0);
        self.tree.set(h, after);
        if after.cpu_cores > before.cpu_cores || after.mem_bytes > before.mem_bytes {
            self.unfit.gained(h);
        }
    }

    /// Starts component `c` on host `h` with its request as allocation. Its
    /// forecasters are built at its first shaping round (a component that
    /// finishes before one never needs them).
    pub(super) fn start(&mut self, c: usize, h: usize) {
        let spec =
            &self.wl.apps[self.comps[c].app as usize].components[self.comps[c].spec as usize];
        // Every run starts at the trace's first request (a restart replays
        // its request changes too); a run that continues its series
        // (`offset`) at the request in force there.
        let offset = self.comps[c].offset;
        let request = sane_res(if offset == 0 {
            spec.request
        } else {
            spec.request_at(offset as f64 * spec.usage.interval_s)
        });
        self.comps[c].request = request;
        self.reserve(h, request);
        let now = self.now;
        let slot = self.hosts[h].comps.len() as u32;
        self.hosts[h].comps.push(c as u32);
        let comp = &mut self.comps[c];
        comp.state = CState::Running;
        comp.host = h as u32;
        comp.host_slot = slot;
        comp.started_s = now;
        comp.alloc = comp.request;
        comp.sample = 0;
        comp.usage = usage_at(spec, &comp.request, offset);
        comp.mem_peak = mem_peak_at(spec, &comp.request, offset);
        comp.progress_t = now;
        comp.rate = 0.0;
        comp.fc = None;
        comp.forecast = None;
        comp.warm = false;
        let usage = comp.usage;
        let inst = comp.inst;
        self.hosts[h].usage = self.hosts[h].usage.add(&usage);
        self.reschedule_finish(c);
        let u = spec.usage.interval_s;
        if u.is_finite()
            && u > 0.0
            && !(is_constant(&spec.usage.cpu_cores) && is_constant(&spec.usage.mem_bytes))
        {
            self.push(
                now + u,
                EvKind::Sample {
                    comp: c as u32,
                    inst,
                },
            );
        }
        self.check_host_overload(h);
    }

    /// Brings `c`'s progress (its remaining work) up to now, at its rate.
    fn advance_progress(&mut self, c: usize) {
        let now = self.now;
        let comp = &mut self.comps[c];
        comp.remaining_s = (comp.remaining_s - comp.rate * (now - comp.progress_t)).max(0.0);
        comp.progress_t = now;
    }

    /// Brings `c`'s progress up to now, recomputes its rate and, when it
    /// changed, its completion event.
    pub(super) fn reschedule_finish(&mut self, c: usize) {
        self.advance_progress(c);
        let now = self.now;
        let comp = &mut self.comps[c];
        let demand = comp.usage.cpu_cores;
        let rate = if demand <= 0.0 || comp.alloc.cpu_cores >= demand {
            1.0
        } else {
            (comp.alloc.cpu_cores / demand).max(0.0)
        };
        if rate == comp.rate && comp.fin_gen > 0 {
            return;
        }
        comp.rate = rate;
        comp.fin_gen = comp.fin_gen.wrapping_add(1);
        let gen = comp.fin_gen;
        if rate > 0.0 {
            let t = now + comp.remaining_s / rate;
            self.push(
                t,
                EvKind::Finish {
                    comp: c as u32,
                    gen,
                },
            );
        }
    }

    /// Removes running component `c` from its host (frees allocation and usage).
    pub(super) fn detach(&mut self, c: usize) {
        let h = self.comps[c].host as usize;
        let slot = self.comps[c].host_slot as usize;
        let host = &mut self.hosts[h];
        host.comps.swap_remove(slot);
        if let Some(&moved) = host.comps.get(slot) {
            self.comps[moved as usize].host_slot = slot as u32;
        }
        let usage = self.comps[c].usage;
        self.hosts[h].usage = self.hosts[h].usage.sub(&usage);
        if self.hosts[h].comps.is_empty() {
            self.hosts[h].usage = Resources::ZERO;
        }
        let alloc = self.comps[c].alloc;
        self.reserve(h, Resources::ZERO.sub(&alloc));
        let started = self.comps[c].started_s;
        self.m.component_days += self.comp_days[c].ran(started, self.now);
        if self.hosts[h].comps.is_empty() {
            // rounding residue of the host's sum
            self.alloc_mem_total -= self.hosts[h].alloc.mem_bytes;
            let before = self.host_free(h);
            self.hosts[h].alloc = Resources::ZERO;
            let after = self.host_free(h);
            self.free_pos_cpu += after.cpu_cores.max(0.0) - before.cpu_cores.max(0.0);
            self.free_pos_mem += after.mem_bytes.max(0.0) - before.mem_bytes.max(0.0);
            self.tree.set(h, after);
            self.unfit.gained(h);
        }
        let comp = &mut self.comps[c];
        comp.inst = comp.inst.wrapping_add(1);
        comp.fin_gen = comp.fin_gen.wrapping_add(1);
        comp.fc = None;
        comp.forecast = None;
        comp.alloc = Resources::ZERO;
        comp.usage = Resources::ZERO;
        self.dirty = true;
    }

    /// Work done by running component `c` so far (seconds at full speed).
    pub(super) fn work_done(&self, c: usize) -> f64 {
        let comp = &self.comps[c];
        let rem = (comp.remaining_s - comp.rate * (self.now - comp.progress_t)).max(0.0);
        (comp.work_s - rem).max(0.0)
    }

    // ----- events -----

    pub(super) fn on_finish(&mut self, c: usize, gen: u32) {
        if self.comps[c].state != CState::Running || self.comps[c].fin_gen != gen {
            return;
        }
        self.detach(c);
        self.comps[c].state = CState::Done;
        self.comps[c].remaining_s = 0.0;
        let a = self.comps[c].app as usize;
        self.apps[a].done += 1;
        if self.apps[a].done >= self.apps[a].n {
            let key = self.apps[a].key;
            self.elastic_wait.remove(&key);
            self.apps[a].state = AState::Done;
            self.apps[a].finished_s = Some(self.now);
            self.remaining_apps -= 1;
        }
    }

    pub(super) fn on_sample(&mut self, c: usize, inst: u32) {
        if self.comps[c].state != CState::Running || self.comps[c].inst != inst {
            return;
        }
        let spec =
            &self.wl.apps[self.comps[c].app as usize].components[self.comps[c].spec as usize];
        let u = spec.usage.interval_s;
        let comp = &mut self.comps[c];
        comp.sample += 1;
        let i = comp.offset + comp.sample;
        // An in-place request change of the trace (Google 2019) takes
        // effect at the sample where it happened: the container is
        // re-specified, so its allocation becomes the new request (as an
        // operator's in-place resize sets the limits), under every policy;
        // shaping resumes from there at the next round. Models work relative
        // to the request: at the next round they follow the new one from
        // their recent history (round.rs; an oracle is rebuilt from here).
        if !spec.request_changes.is_empty() {
            let request = sane_res(spec.request_at(i as f64 * u));
            if request != comp.request {
                comp.request = request;
                comp.forecast = None;
                self.m.request_changes += 1;
                let h = comp.host as usize;
                let delta = request.sub(&comp.alloc);
                comp.alloc = request;
                self.reserve(h, delta);
                self.dirty = true;
            }
        }
        // Progress at the old rate up to now, then switch usage.
        self.advance_progress(c);
        let comp = &mut self.comps[c];
        let new_usage = usage_at(spec, &comp.request, i);
        comp.mem_peak = mem_peak_at(spec, &comp.request, i);
        let peak = comp.mem_peak;
        let old_usage = comp.usage;
        comp.usage = new_usage;
        let next_t = comp.started_s + (comp.sample + 1) as f64 * u;
        let h = comp.host as usize;
        let alloc_mem = comp.alloc.mem_bytes;
        self.hosts[h].usage = self.hosts[h].usage.sub(&old_usage).add(&new_usage);
        self.push(
            next_t,
            EvKind::Sample {
                comp: c as u32,
                inst,
            },
        );
        self.reschedule_finish(c);
        // The OOM killer acts on the in-interval peak (the mean when the
        // trace has none).
        if peak > alloc_mem * (1.0 + 1e-9) {
            self.oom_kill(c);
        }
        if new_usage.mem_bytes > old_usage.mem_bytes {
            self.check_host_overload(h);
        }
    }

    /// The host OOM killer: while the host's memory usage exceeds its
    /// capacity, kill the component using the most memory (ties: lowest
    /// component index).
    pub(super) fn check_host_overload(&mut self, h: usize) {
        while self.hosts[h].usage.mem_bytes > self.hosts[h].cap.mem_bytes * (1.0 + 1e-9) {
            let victim = self.hosts[h].comps.iter().copied().max_by(|&a, &b| {
                self.comps[a as usize]
                    .usage
                    .mem_bytes
                    .total_cmp(&self.comps[b as usize].usage.mem_bytes)
                    .then(b.cmp(&a))
            });
            let Some(v) = victim else { break };
            self.m.host_oom_kills += 1;
            self.oom_kill(v as usize);
        }
    }

    /// An OOM kill of component `c`: a core component crashes its
    /// application; an elastic one loses its work and waits for room again.
    pub(super) fn oom_kill(&mut self, c: usize) {
        {
            let cc = &self.comps[c];
            let shape = &self.wl.apps[cc.app as usize].components[cc.spec as usize]
                .usage
                .mem_bytes;
            tracing::debug!(
                app = cc.app,
                app_components = self.apps[cc.app as usize].n,
                shape_offset = shape.offset,
                shape_len = shape.values.len(),
                component = c,
                class = cc.class.as_str(),
                age_s = self.now - cc.started_s,
                sample = cc.sample,
                samples_observed = cc.fc.as_ref().map_or(0, |f| f.models.observed()),
                age_samples = cc.fc.as_ref().map_or(0, |f| f.models.age_samples()),
                warm = cc.warm,
                alloc_mem_bytes = cc.alloc.mem_bytes,
                peak_mem_bytes = cc.mem_peak,
                request_mem_bytes = cc.request.mem_bytes,
                forecast_mem_bytes = cc.forecast.as_ref().map_or(f64::NAN, |f| f.mem.mean),
                forecast_mem_std_bytes = cc.forecast.as_ref().map_or(f64::NAN, |f| f.mem.std),
                forecast_mem_hold_bytes =
                    cc.forecast.as_ref().map_or(f64::NAN, |f| f.mem_hold_bytes),
                "oom kill"
            );
        }
        self.m.oom_kills += 1;
        let (peak, req) = (self.comps[c].mem_peak, self.comps[c].request.mem_bytes);
        if let Some(fc) = self.comps[c].fc.as_mut() {
            if let Some((source, z)) = fc.models.take_score(Some(peak), req) {
                self.risk.observe(source, z);
            }
        }
        if self.comp_days[c].oom(self.now) {
            self.m.oom_component_days += 1;
        }
        let floor = OomFloor::after_kill(
            self.comps[c].alloc.mem_bytes,
            self.comps[c].request.mem_bytes,
            self.now,
            &self.shaper,
        );
        self.comps[c].oom_floor = Some(floor);
        // The kill is a peak of the lineage and the application (the VPA
        // records it so): the next incarnation and the siblings start above it.
        let req = self.comps[c].request.mem_bytes;
        if req > 0.0 {
            let settings = self.shaper.prior_settings();
            let prio = self.wl.apps[self.comps[c].app as usize].priority;
            let keys = prior_keys(c, &self.comps[c], prio);
            let rel = floor.mem_bytes / req;
            let (age_samples, jump) = self.comps[c].fc.as_ref().map_or((0, 0.0), |f| {
                (f.models.age_samples() as u64, f.models.jump_to(rel))
            });
            for k in &keys[..2] {
                self.prior
                    .raise_mem_high(k, rel, age_samples, jump, self.now, &settings);
            }
        }
        if self.comps[c].warm {
            self.m.oom_kills_warm += 1;
        }
        self.bring_back(c, Stop::OomKill, true);
    }

    /// Running component `c` was stopped (killed or evicted): a failure of
    /// its application towards the shaper's failure limit (a component that
    /// replays its usage from the start would otherwise lose the same work
    /// to the same missed spike forever). It waits for room again where it
    /// was when it restarts alone ([`OomRestart::Component`]); otherwise a
    /// core component takes its application back to the start, an elastic
    /// one re-runs alone from its start. Stopping a core component, or one
    /// that restarts alone, counts as a crash or an eviction of the
    /// application.
    fn bring_back(&mut self, c: usize, why: Stop, fails_app: bool) {
        let a = self.comps[c].app as usize;
        self.count_failure(a, fails_app);
        let app_hit = |app: &mut AppSt| match why {
            Stop::OomKill => app.crashes += 1,
            Stop::Eviction => app.evictions += 1,
        };
        match (self.restart_of(c), self.comps[c].class) {
            (OomRestart::Component, _) => {
                app_hit(&mut self.apps[a]);
                self.requeue(c, Resume::WhereItWas);
            }
            (OomRestart::Application, Class::Core) => {
                app_hit(&mut self.apps[a]);
                self.reset_app(a);
            }
            (OomRestart::Application, Class::Elastic) => self.requeue(c, Resume::FromStart),
        }
    }

    /// Application `a` lost work (a kill or an eviction): one more failure
    /// towards the shaper's `failure_limit` when `fails_app` (an OOM kill,
    /// an eviction of the whole application; not an elastic component's
    /// eviction: [`shaper::Action::fails_application`]), and one more
    /// restart towards `max_restarts` unless it already had one at this
    /// instant: a job whose thousand tasks cross their allocations in the
    /// same sample failed once, not a thousand times.
    fn count_failure(&mut self, a: usize, fails_app: bool) {
        let app = &mut self.apps[a];
        if fails_app {
            app.failures += 1;
        }
        if app.last_restart_s != self.now {
            app.last_restart_s = self.now;
            app.restarts += 1;
        }
    }

    /// True once application `a` restarted more than `max_restarts` times.
    fn over_max_restarts(&self, a: usize) -> bool {
        self.apps[a].restarts > self.cfg.max_restarts
    }

    /// How component `c` comes back after a kill or an eviction: the
    /// simulator's override, else its workload's.
    pub(super) fn restart_of(&self, c: usize) -> OomRestart {
        let a = self.comps[c].app as usize;
        let spec = &self.wl.apps[a].components[self.comps[c].spec as usize];
        self.cfg.oom_restart.unwrap_or(spec.oom_restart)
    }

    /// The shaper evicted application `a` whole: under the thesis's
    /// semantics it re-runs from its start; components that restart alone
    /// ([`OomRestart::Component`]) wait for room again where they were,
    /// keeping their work (a preempted service's tasks are rescheduled).
    /// `fails_app`: as the action's [`shaper::ComponentAction::fails_application`].
    pub(super) fn evict_app(&mut self, a: usize, fails_app: bool) {
        self.apps[a].evictions += 1;
        self.count_failure(a, fails_app);
        let (first, n) = (self.apps[a].first as usize, self.apps[a].n as usize);
        let running = (first..first + n).filter(|&c| self.comps[c].state == CState::Running);
        if running
            .clone()
            .all(|c| self.restart_of(c) == OomRestart::Component)
        {
            for c in running.collect::<Vec<_>>() {
                if self.apps[a].state != AState::Running {
                    break; // abandoned by the failure limit
                }
                self.requeue(c, Resume::WhereItWas);
            }
        } else {
            self.reset_app(a);
        }
    }

    /// The shaper evicted component `c` alone (an elastic one, or one that
    /// restarts alone; never a core component its application needs):
    /// `fails_app` as the action's [`shaper::ComponentAction::fails_application`].
    pub(super) fn evict_component(&mut self, c: usize, fails_app: bool) {
        self.bring_back(c, Stop::Eviction, fails_app);
    }

    /// Kills every component of `a`, throws its work away and requeues it at
    /// its original position (submission time / priority); past
    /// `max_restarts` failures, abandons it instead.
    pub(super) fn reset_app(&mut self, a: usize) {
        self.stop_app(a);
        if self.over_max_restarts(a) {
            self.abandon(a);
        } else {
            self.enqueue(a);
        }
    }

    /// An application over `max_restarts` failures (its components already
    /// stopped): not run again, and no longer awaited.
    fn abandon(&mut self, a: usize) {
        tracing::debug!(
            app = self.wl.apps[a].id,
            failures = self.apps[a].failures,
            restarts = self.apps[a].restarts,
            "abandoned: over max_restarts"
        );
        self.apps[a].state = AState::Abandoned;
        self.remaining_apps -= 1;
        self.dirty = true;
    }

    /// Kills every component of `a` and throws its work away.
    fn stop_app(&mut self, a: usize) {
        let (first, n) = (self.apps[a].first as usize, self.apps[a].n as usize);
        let mut done = 0;
        for c in first..first + n {
            match self.comps[c].state {
                CState::Running => {
                    self.m.work_lost_s += self.work_done(c);
                    self.hand_down(c);
                    self.detach(c);
                }
                CState::Done => self.m.work_lost_s += self.comps[c].work_s,
                CState::Dropped => {
                    done += 1;
                    continue;
                }
                CState::Idle | CState::Pending => {}
            }
            let comp = &mut self.comps[c];
            comp.state = CState::Idle;
            comp.remaining_s = comp.work_s;
            comp.offset = 0;
            comp.inst = comp.inst.wrapping_add(1);
        }
        let app = &mut self.apps[a];
        app.pending.clear();
        app.done = done;
        let key = app.key;
        self.elastic_wait.remove(&key);
    }

    /// Running component `c` stops and waits for room again, to resume
    /// from the start of its usage series (its work is lost) or where it
    /// was ([`OomRestart::Component`]: its work is kept); past
    /// `max_restarts` failures, its application is abandoned instead.
    pub(super) fn requeue(&mut self, c: usize, resume: Resume) {
        let a = self.comps[c].app as usize;
        if self.over_max_restarts(a) {
            self.stop_app(a);
            self.abandon(a);
            return;
        }
        match resume {
            Resume::FromStart => self.m.work_lost_s += self.work_done(c),
            Resume::WhereItWas => self.advance_progress(c),
        }
        let lived = self.comps[c].sample;
        self.hand_down(c);
        self.detach(c);
        let comp = &mut self.comps[c];
        match resume {
            Resume::FromStart => {
                comp.remaining_s = comp.work_s;
                comp.offset = 0;
            }
            Resume::WhereItWas => comp.offset += lived,
        }
        comp.state = CState::Pending;
        self.apps[a].pending.push(c as u32);
        let key = self.apps[a].key;
        self.elastic_wait.insert(key);
        self.dirty = true;
    }

    /// Running component `c` stops to run again (a kill, an eviction, its
    /// application's reset): the last [`history_cap`] samples its models
    /// were fed (with those it inherited) are kept, and its next run's
    /// models are rebuilt from them, as the agent rebuilds a container
    /// recreated under the same name from its predecessor's
    /// ([`shaper::node_models`]). A component that had finished before its
    /// application's reset starts its next run without them.
    pub(super) fn hand_down(&mut self, c: usize) {
        let cap = history_cap(self.cfg.warm_samples, &self.shaper);
        let spec =
            &self.wl.apps[self.comps[c].app as usize].components[self.comps[c].spec as usize];
        let comp = &mut self.comps[c];
        let Some(fed) = comp.fc.as_ref().map(|f| f.fed) else {
            return;
        };
        let inherited = std::mem::take(&mut comp.history);
        let h = fed_history(spec, comp.offset, &inherited, fed, &comp.request, cap);
        comp.history = h;
    }
}

/// The last `cap` samples a component's models were fed, oldest first:
/// `inherited` (a predecessor's) then its own first `fed` samples of the
/// usage series from `offset`, relative to `req`.
pub(super) fn fed_history(
    spec: &ComponentSpec,
    offset: u64,
    inherited: &[RelSample],
    fed: u64,
    req: &Resources,
    cap: usize,
) -> Vec<RelSample> {
    let own = fed.min(cap as u64);
    let keep = inherited.len().min(cap - own as usize);
    let mut h = inherited[inherited.len() - keep..].to_vec();
    h.extend((fed - own..fed).map(|i| {
        let at = offset + i;
        RelSample {
            cpu: Some(normalise(usage_at(spec, req, at).cpu_cores, req.cpu_cores)),
            mem: normalise(mem_peak_at(spec, req, at), req.mem_bytes),
        }
    }));
    h
}

/// Why a running component stopped against its will ([`Engine::bring_back`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    OomKill,
    Eviction,
}

/// Where a requeued component's next run starts ([`Engine::requeue`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Resume {
    /// At the start of its usage series; its work so far is lost.
    FromStart,
    /// At the sample it stopped in, keeping its work.
    WhereItWas,
}

//! The shaping round: forecasts (models glue), view building, applying the plan, metrics sampling.

use super::lifecycle::fed_history;
use super::oracle::{oracle_fc_from, oracle_len};
use super::*;

impl Engine<'_> {
    // ----- shaping round -----

    pub(super) fn round(&mut self, forecasting: Forecasting<'_>) -> Result<(), SimError> {
        self.m.rounds += 1;
        if forecasting.is_on() {
            let t = Instant::now();
            self.update_forecasts(forecasting)?;
            self.m.forecast_wall_s += t.elapsed().as_secs_f64();
        }
        let t = Instant::now();
        self.build_view();
        self.decider
            .decide_into(&self.view, self.now, &self.shaper, &mut self.plan);
        self.m.decide_wall_s += t.elapsed().as_secs_f64();
        let plan = std::mem::take(&mut self.plan);
        self.apply(&plan);
        self.plan = plan;
        self.sample_metrics();
        self.dirty = true;
        Ok(())
    }

    /// Feeds every running component's models with its samples since the
    /// last round, pools them into the prior book, then forecasts. Three
    /// passes: models are fed and forecast in parallel, the book (shared
    /// by siblings) is updated in between, in component order.
    pub(super) fn update_forecasts(
        &mut self,
        forecasting: Forecasting<'_>,
    ) -> Result<(), SimError> {
        let wl = self.wl;
        let now = self.now;
        let h = self.horizon;
        let kernel = &self.shaper;
        let warm_samples = self.cfg.warm_samples;
        let is_oracle = matches!(forecasting, Forecasting::Oracle);
        // (forecaster updates)
        let builds = &self.model_builds;
        let cap = history_cap(warm_samples, kernel);
        let feed = |c: &mut Comp| -> Result<u64, SimError> {
            if c.state != CState::Running {
                return Ok(0);
            }
            let spec = &wl.apps[c.app as usize].components[c.spec as usize];
            let u = spec.usage.interval_s;
            // Current sample: the sample events' counter, or (for constant
            // series, which have no sample events) the elapsed time, with a
            // tolerance so that float rounding never lags a boundary.
            let cur = if u.is_finite() && u > 0.0 {
                c.sample
                    .max(((now - c.started_s) / u + 1e-6).floor().max(0.0) as u64)
            } else {
                0
            };
            let req = c.request;
            let (app, started_s) = (c.app, c.started_s);
            let build = |f: &ForecasterFactory| -> Result<ComponentModels, SimError> {
                Ok(ComponentModels::build(req, |r, unit| {
                    let site = ModelSite {
                        app,
                        build: builds.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                        start_s: started_s,
                        interval_s: u,
                    };
                    f(&site, r, unit)
                })?
                .with_warm_samples(warm_samples)
                .with_mem_hold(hold_samples(kernel, u))
                .with_small_hold(small_hold_samples(kernel, u))
                .with_sibling_hold(sibling_hold_samples(kernel, u)))
            };
            // model updates of a rebuild after a request change
            let mut rebuilt = 0u64;
            if c.fc.is_none() {
                // Built at the component's first round: the model sees every
                // sample since the start below, exactly as if it had been
                // built at start; an oracle starts at the current sample.
                c.fc = match forecasting {
                    Forecasting::Off => None,
                    Forecasting::Oracle => Some(Box::new(oracle_fc_from(
                        spec, &req, c.work_s, cur, c.offset, h,
                    )?)),
                    Forecasting::Model(f) => Some(Box::new(CompFc {
                        models: build(f)?.inheriting(&c.history),
                        fed: 0,
                        base: 0,
                        joined: false,
                        request: req,
                    })),
                };
            } else if let (Some(fc), Forecasting::Model(f)) = (c.fc.as_mut(), forecasting) {
                if fc.request != req {
                    // An in-place request change (lifecycle.rs, `on_sample`),
                    // as the agent follows one: the VPA follows it in place;
                    // the other models are rebuilt from the last `cap`
                    // samples relative to the new request, keeping the held
                    // peaks and the age (`ComponentModels::continuing`).
                    let from = fc.request;
                    rescale_history(c.history.iter_mut(), from, req);
                    if !fc.models.rescale_in_place(from, req) {
                        let history = fed_history(spec, c.offset, &c.history, fc.fed, &req, cap);
                        fc.models = build(f)?.continuing(&fc.models, &history, from, req);
                        rebuilt = 2 * history.len() as u64;
                    }
                    fc.request = req;
                }
            }
            let Some(fc) = c.fc.as_mut() else {
                return Ok(0);
            };
            if is_oracle && (fc.request != req || cur + 1 >= fc.base + oracle_len(c.work_s, u)) {
                // Past the future the oracle was built with (the component
                // ran slower than at full speed) or at another request:
                // rebuild it from here.
                **fc = oracle_fc_from(spec, &req, c.work_s, cur, c.offset, h)?;
            }
            let mut n = rebuilt;
            while fc.fed <= cur {
                // Memory: the peak within the interval, what an OOM killer
                // acts on (the mean when the trace has no peak).
                let v = usage_at(spec, &req, c.offset + fc.fed);
                let peak = mem_peak_at(spec, &req, c.offset + fc.fed);
                fc.models.observe(Some(v.cpu_cores), peak, req);
                fc.fed += 1;
                n += 2;
            }
            Ok(n)
        };
        let n: u64 = if self.cfg.parallel_forecasts {
            self.comps
                .par_iter_mut()
                .map(feed)
                .try_reduce(|| 0, |a, b| Ok(a + b))?
        } else {
            let mut s = 0;
            for c in self.comps.iter_mut() {
                s += feed(c)?;
            }
            s
        };
        if !is_oracle {
            let settings = kernel.prior_settings();
            for (i, c) in self.comps.iter_mut().enumerate() {
                if c.state != CState::Running {
                    continue;
                }
                let keys = prior_keys(i, c, wl.apps[c.app as usize].priority);
                let Some(fc) = c.fc.as_mut() else {
                    continue;
                };
                if !fc.joined {
                    fc.joined = true;
                    for k in &keys {
                        self.prior.join(k, now, &settings);
                    }
                }
                let m = fc.models.take_pending();
                for k in &keys {
                    self.prior.absorb(k, &m, now, &settings);
                }
                if let Some((source, z)) = fc.models.take_score(None, c.request.mem_bytes) {
                    self.risk.observe(source, z);
                }
            }
            self.risk.refresh(kernel.memory_risk);
        }
        // (forecasts shown, of which warm, own, prior, fallback)
        type Counts = [u64; 5];
        let book = &self.prior;
        let risk = &self.risk;
        let settings = kernel.prior_settings();
        let forecast = |(i, c): (usize, &mut Comp)| -> Counts {
            if c.state != CState::Running {
                return [0; 5];
            }
            if c.fc.is_none() {
                c.forecast = None;
                return [0, 0, 0, 0, 1];
            }
            let prior = if is_oracle {
                None
            } else {
                book.prior(
                    &prior_keys(i, c, wl.apps[c.app as usize].priority),
                    now,
                    &settings,
                )
            };
            let Some(fc) = c.fc.as_mut() else {
                return [0, 0, 0, 0, 1];
            };
            let (forecast, source) =
                fc.models
                    .forecast_calibrated(h, c.request, kernel, prior.as_ref(), risk);
            c.forecast = forecast;
            c.warm = c.forecast.is_some() && (is_oracle || fc.models.observed() >= warm_samples);
            let mut k = [u64::from(c.forecast.is_some()), u64::from(c.warm), 0, 0, 0];
            k[2 + source as usize] = 1;
            k
        };
        let add = |a: Counts, b: Counts| std::array::from_fn(|j| a[j] + b[j]);
        let k: Counts = if self.cfg.parallel_forecasts {
            self.comps
                .par_iter_mut()
                .enumerate()
                .map(forecast)
                .reduce(|| [0; 5], add)
        } else {
            self.comps
                .iter_mut()
                .enumerate()
                .map(forecast)
                .fold([0; 5], add)
        };
        self.m.forecasts_shown += k[0];
        self.m.forecasts_warm += k[1];
        self.m.forecasts_own += k[2];
        self.m.forecasts_prior += k[3];
        self.m.forecasts_fallback += k[4];
        self.m.forecast_updates += n + 2 * k[0];
        Ok(())
    }

    pub(super) fn build_view(&mut self) {
        let now = self.now;
        // The last round's view is filled again (its memory reused).
        let mut old = std::mem::take(&mut self.view);
        let hosts = std::mem::take(&mut old.hosts);
        let mut b: ViewBuilder<u32> = ViewBuilder::reusing(now, old);
        for h in &hosts {
            b.host(h.id, h.capacity);
        }
        for (ai, a) in self.apps.iter().enumerate() {
            if a.state != AState::Running {
                continue;
            }
            let spec = &self.wl.apps[ai];
            let range = a.first as usize..(a.first + a.n) as usize;
            // Expected remaining time (SJF): the longest remaining component.
            let remaining = self.comps[range.clone()]
                .iter()
                .map(|comp| match comp.state {
                    CState::Running => {
                        (comp.remaining_s - comp.rate * (now - comp.progress_t)).max(0.0)
                    }
                    CState::Pending | CState::Idle => comp.remaining_s,
                    CState::Done | CState::Dropped => 0.0,
                })
                .fold(0.0, f64::max);
            let facts = AppFacts {
                tenant: 0,
                id: AppId(ai as u64),
                submitted_s: Some(self.m.apps[ai].arrival_s),
                priority: spec.priority,
                failures: a.failures,
                expected_remaining_s: Some(remaining),
            };
            for c in range {
                let comp = &self.comps[c];
                if comp.state != CState::Running {
                    continue;
                }
                let rem = (comp.remaining_s - comp.rate * (now - comp.progress_t)).max(0.0);
                b.component(
                    ai as u32,
                    facts,
                    Component {
                        id: ComponentId(c as u64),
                        class: comp.class,
                        host: HostId(u64::from(comp.host)),
                        request: comp.request,
                        started_s: comp.started_s,
                        allocation: comp.alloc,
                        // Memory: the current interval's peak, what the OOM
                        // killer checks (the kernel never sizes below it).
                        usage: Resources::new(comp.usage.cpu_cores, comp.mem_peak),
                        forecast: comp.forecast.clone(),
                        protected: false,
                        work_done_s: comp.work_s - rem,
                        restarts_alone: self.restart_of(c) == OomRestart::Component,
                        mem_floor_bytes: self.wl.apps[ai].components[comp.spec as usize]
                            .mem_floor_bytes,
                        // set by the view from `oom_floor` below
                        oom_floor_bytes: 0.0,
                    },
                    comp.oom_floor.as_ref(),
                );
            }
        }
        self.view = b.build();
    }

    /// Carries out the plan in the kernel's apply order.
    pub(super) fn apply(&mut self, plan: &Plan) {
        let mut resized: Vec<usize> = Vec::new();
        // Applications evicted whole this round: one eviction (and one
        // failure) each, though the plan names every component (an
        // application whose components restart alone is still running
        // after the first).
        let mut evicted_apps: HashSet<usize> = HashSet::new();
        for act in plan.component_actions() {
            if let ComponentAction::Evict {
                app,
                component,
                whole_app,
                explanation,
            } = act
            {
                tracing::debug!(
                    app = app.0,
                    component = component.0,
                    whole_app,
                    %explanation,
                    "eviction"
                );
            }
            let fails_app = act.fails_application();
            match act {
                ComponentAction::Evict {
                    app,
                    whole_app: true,
                    ..
                } => {
                    // One action per component: the first evicts the app.
                    let a = app.0 as usize;
                    if a < self.apps.len()
                        && self.apps[a].state == AState::Running
                        && evicted_apps.insert(a)
                    {
                        self.m.evictions += 1;
                        self.m.app_evictions += 1;
                        self.evict_app(a, fails_app);
                    }
                }
                ComponentAction::Evict {
                    component,
                    whole_app: false,
                    ..
                } => {
                    let c = component.0 as usize;
                    if c < self.comps.len() && self.comps[c].state == CState::Running {
                        self.m.evictions += 1;
                        self.m.component_evictions += 1;
                        self.evict_component(c, fails_app);
                    }
                }
                ComponentAction::Resize { component, to, .. } => {
                    let c = component.0 as usize;
                    if c >= self.comps.len() || self.comps[c].state != CState::Running {
                        continue;
                    }
                    let to = sane_res(to);
                    let from = self.comps[c].alloc;
                    if to == from {
                        continue;
                    }
                    let h = self.comps[c].host as usize;
                    let delta = to.sub(&from);
                    if self.shaper.policy == Policy::Optimistic
                        && self.cfg.optimistic_growth == OptimisticGrowth::Refuse
                        && !to.fits_in(&from)
                    {
                        let free = self.host_free(h);
                        let tol = 1e-9;
                        if delta.cpu_cores > free.cpu_cores + tol * self.hosts[h].cap.cpu_cores
                            || delta.mem_bytes > free.mem_bytes + tol * self.hosts[h].cap.mem_bytes
                        {
                            self.m.refused_growths += 1;
                            continue;
                        }
                    }
                    self.reserve(h, delta);
                    self.comps[c].alloc = to;
                    self.m.resizes += 1;
                    if to.cpu_cores < from.cpu_cores || to.mem_bytes < from.mem_bytes {
                        self.dirty = true;
                    }
                    self.reschedule_finish(c);
                    resized.push(c);
                }
            }
        }
        for c in resized {
            let comp = &self.comps[c];
            if comp.state == CState::Running && comp.mem_peak > comp.alloc.mem_bytes * (1.0 + 1e-9)
            {
                self.oom_kill(c);
            }
        }
    }

    pub(super) fn sample_metrics(&mut self) {
        let now = self.now;
        let w_round = (now - self.last_round_s).max(0.0);
        self.last_round_s = now;
        let mut n_running = 0usize;
        for comp in &self.comps {
            if comp.state != CState::Running {
                continue;
            }
            n_running += 1;
            let w = (now - comp.started_s).min(w_round).max(0.0);
            if w <= 0.0 {
                continue;
            }
            if comp.alloc.cpu_cores > 0.0 {
                self.m.cpu_slack.add(
                    (comp.alloc.cpu_cores - comp.usage.cpu_cores) / comp.alloc.cpu_cores,
                    w,
                );
            }
            if comp.alloc.mem_bytes > 0.0 {
                self.m.mem_slack.add(
                    (comp.alloc.mem_bytes - comp.usage.mem_bytes) / comp.alloc.mem_bytes,
                    w,
                );
            }
        }
        let (mut cap, mut used, mut alloc) = (Resources::ZERO, Resources::ZERO, Resources::ZERO);
        for h in &self.hosts {
            cap = cap.add(&h.cap);
            used = used.add(&h.usage);
            alloc = alloc.add(&h.alloc);
        }
        let frac = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let p = TimePoint {
            t_s: now,
            queued_apps: self.queue.len(),
            running_apps: self
                .apps
                .iter()
                .filter(|a| a.state == AState::Running)
                .count(),
            running_components: n_running,
            used_cpu_frac: frac(used.cpu_cores, cap.cpu_cores),
            used_mem_frac: frac(used.mem_bytes, cap.mem_bytes),
            alloc_cpu_frac: frac(alloc.cpu_cores, cap.cpu_cores),
            alloc_mem_frac: frac(alloc.mem_bytes, cap.mem_bytes),
        };
        if w_round > 0.0 {
            self.util_weight += w_round;
            self.m.mean_used_cpu_frac += p.used_cpu_frac * w_round;
            self.m.mean_used_mem_frac += p.used_mem_frac * w_round;
            self.m.mean_alloc_cpu_frac += p.alloc_cpu_frac * w_round;
            self.m.mean_alloc_mem_frac += p.alloc_mem_frac * w_round;
        }
        self.idle_last_round = p.running_components == 0 && p.queued_apps == 0;
        crate::metrics::push_point(
            &mut self.m.timeline,
            &mut self.timeline_stride,
            self.m.rounds,
            p,
            crate::metrics::TIMELINE_CAP,
        );
    }
}

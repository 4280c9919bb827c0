//! The event loop.

use super::*;

impl Engine<'_> {
    /// Runs to completion (or `max_time_s`) and returns the metrics.
    pub fn run(
        mut self,
        forecasting: Forecasting<'_>,
        progress: Option<&(dyn Fn(Progress) + Sync)>,
    ) -> Result<RunMetrics, SimError> {
        let wall = Instant::now();
        let forecasting = if self.shaper.policy == Policy::Baseline {
            Forecasting::Off
        } else {
            forecasting
        };
        self.push_next_arrival();
        if self.remaining_apps > 0 {
            let first_t = self.heap.peek().map_or(0.0, |e| e.0.t.0);
            let t0 = ((first_t / self.cfg.interval_s).floor() + 1.0) * self.cfg.interval_s;
            self.last_round_s = first_t;
            self.push(t0, EvKind::Round);
        }
        let total = self.remaining_apps;
        while self.remaining_apps > 0 {
            if self.dirty && self.heap.peek().is_none_or(|e| e.0.t.0 > self.now) {
                self.schedule_pass();
            }
            let Some(Reverse(ev)) = self.heap.pop() else {
                break;
            };
            if let Some(max) = self.cfg.max_time_s {
                if ev.t.0 > max {
                    self.now = max;
                    break;
                }
            }
            self.now = self.now.max(ev.t.0);
            self.m.events += 1;
            match ev.kind {
                EvKind::Arrival { app } => {
                    self.push_next_arrival();
                    self.enqueue(app as usize);
                }
                EvKind::Finish { comp, gen } => self.on_finish(comp as usize, gen),
                EvKind::Sample { comp, inst } => self.on_sample(comp as usize, inst),
                EvKind::Submit { comp, inst } => self.on_submit(comp as usize, inst),
                EvKind::Round => {
                    self.round(forecasting)?;
                    if let Some(cb) = progress {
                        cb(Progress {
                            now_s: self.now,
                            apps_done: total - self.remaining_apps,
                            apps_total: total,
                        });
                    }
                    if self.remaining_apps > 0 {
                        let t = self.next_round_s();
                        self.push(t, EvKind::Round);
                    }
                }
            }
        }
        self.m.end_s = self.now;
        self.integrate_alloc();
        for c in 0..self.comps.len() {
            if self.comps[c].state == CState::Running {
                let started = self.comps[c].started_s;
                self.m.component_days += self.comp_days[c].ran(started, self.now);
            }
        }
        if self.util_weight > 0.0 {
            let w = self.util_weight;
            self.m.mean_used_cpu_frac /= w;
            self.m.mean_used_mem_frac /= w;
            self.m.mean_alloc_cpu_frac /= w;
            self.m.mean_alloc_mem_frac /= w;
        }
        for (ai, a) in self.apps.iter().enumerate() {
            let o = &mut self.m.apps[ai];
            o.finished_s = a.finished_s;
            o.queued_s = a.queued_s
                + if a.state == AState::Queued {
                    (self.now - a.queued_since).max(0.0)
                } else {
                    0.0
                };
            o.crashes = a.crashes;
            o.evictions = a.evictions;
            o.abandoned = a.state == AState::Abandoned;
        }
        self.m.wall_s = wall.elapsed().as_secs_f64();
        Ok(self.m)
    }

    /// When the next round runs: one interval on, or, when no component
    /// runs or waits for room, the first round at or after the next event
    /// (an arrival, a delayed start). Rounds over an empty cluster change
    /// nothing, and a trace whose next start is years away would otherwise
    /// spin through them one by one. The skipped
    /// rounds' time counts in the time-averaged metrics as they would
    /// have: an empty cluster.
    fn next_round_s(&mut self) -> f64 {
        let i = self.cfg.interval_s;
        let next = self.now + i;
        let idle = self.elastic_wait.is_empty() && self.idle_last_round;
        let Some(event_s) = self.heap.peek().map(|e| e.0.t.0) else {
            return next;
        };
        if !idle || !event_s.is_finite() || event_s <= next {
            return next;
        }
        let t = self.now + ((event_s - self.now) / i).ceil() * i;
        if self.cfg.max_time_s.is_some_and(|max| t - i > max) {
            return next;
        }
        self.util_weight += (t - i - self.last_round_s).max(0.0);
        self.last_round_s = t - i;
        t
    }
}

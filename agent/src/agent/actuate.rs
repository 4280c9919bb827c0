//! Actuate: apply a plan's actions (resizes, evictions) through the runtime.

use super::*;
use shaper::limits::component_bounds;
use shaper::Resource;

impl<R: ContainerRuntime + ?Sized> Agent<R> {
    /// The runtime update for a planned allocation. Floors and rounding
    /// are the kernel's (the plan is already in millicores and whole MiB); this
    /// keeps the kind of CPU limit the container was started with, and
    /// leaves a resource alone (`None`, with a note why) when it was started
    /// without a limit (`manage_unlimited = false`) or, for a CPU shrink,
    /// when the container was throttled in the last
    /// [`THROTTLE_HOLD_ROUNDS`] rounds.
    pub(super) fn limits_update(
        &self,
        t: &Tracked,
        from: Resources,
        to: Resources,
    ) -> (ResourceUpdate, Vec<String>) {
        let orig = self.original_limits(t);
        let kind = if matches!(t.info.limits.cpu, CpuLimit::Quota { .. }) {
            t.info.limits.cpu
        } else {
            orig.cpu
        };
        let (no_cpu, no_mem) = self.unlimited_untouchable(t);
        let mut notes = Vec::new();
        let mut update = ResourceUpdate {
            mem_bytes: Some(to.mem_bytes.ceil() as u64),
            cpu: Some(kind.with_cores(to.cpu_cores)),
            mem_swap_bytes: None,
        };
        if no_cpu {
            update.cpu = None;
            notes.push("no CPU limit set: started without one (manage_unlimited = false)".into());
        } else if to.cpu_cores < from.cpu_cores {
            if let Some(r) = t
                .throttled_round
                .filter(|r| self.round.saturating_sub(*r) < THROTTLE_HOLD_ROUNDS)
            {
                update.cpu = None;
                notes.push(format!(
                    "CPU kept at {:.3} cores (not shrunk to {:.3}): throttled in round {r}",
                    from.cpu_cores, to.cpu_cores
                ));
            }
        }
        if no_mem {
            update.mem_bytes = None;
            notes
                .push("no memory limit set: started without one (manage_unlimited = false)".into());
        }
        (update, notes)
    }

    /// Writes the limits this round's resizes will set to the state before
    /// any is applied (`SetLimits::pending`): an agent killed between an
    /// update and its next state write leaves limits that its next start
    /// can still tell from a change by hand. So the state file always holds
    /// a container's limits among its original, `applied` and `pending`.
    fn write_ahead(&mut self, actions: &[NodeAction]) {
        let mut ahead = false;
        for a in actions {
            let (NodeActionKind::Resize { from, to }, Some(t)) =
                (&a.kind, self.tracked.get(&a.container_id))
            else {
                continue;
            };
            let (update, _) = self.limits_update(t, *from, *to);
            let after = Self::limits_after(t, &update);
            if after != t.info.limits {
                self.state
                    .set_limits
                    .entry(a.container_id.clone())
                    .or_default()
                    .pending = Some(after);
                ahead = true;
            }
        }
        if ahead {
            self.save_state();
        }
    }

    /// Records limits the runtime confirmed it set on container `id`, by a
    /// call made at `changed_s` (the agent's clock just before the call):
    /// the limits they replaced are kept with that time, for an OOM kill
    /// reported later ([`Tracked::limits_at`]).
    pub(super) fn confirm_limits(&mut self, id: &str, after: Limits, changed_s: f64) {
        if let Some(tm) = self.tracked.get_mut(id) {
            tm.limits_changed(after, changed_s);
        }
        self.state.set_limits.insert(
            id.to_string(),
            SetLimits {
                applied: Some(after),
                pending: None,
            },
        );
    }

    pub(super) async fn apply(
        &mut self,
        view: &NodeView,
        actions: &[NodeAction],
        now_s: f64,
    ) -> Vec<ActionOutcome> {
        let shape = self.cfg.actuation == Actuation::Shape;
        let mut outcomes = Vec::with_capacity(actions.len());
        let mut failed_apps: BTreeSet<String> = BTreeSet::new();
        let mut dirty = false;
        let actions: Vec<NodeAction> = actions
            .iter()
            .map(|a| self.within_bounds(view, self.named(a)))
            .collect();
        let actions = actions.as_slice();
        if shape {
            self.write_ahead(actions);
        }
        // the plan's order is the kernel's apply order
        for a in actions {
            let kind = match a.kind {
                NodeActionKind::Evict { .. } => "evict",
                NodeActionKind::Resize { .. } => "resize",
            };
            let outcome = |result: Outcome, error: Option<String>| ActionOutcome {
                action: a.clone(),
                result,
                error,
            };
            let Some(t) = self.tracked.get(&a.container_id).cloned() else {
                self.shared.metrics.action(kind, Outcome::Refused.as_str());
                outcomes.push(outcome(
                    Outcome::Refused,
                    Some("not a managed container".into()),
                ));
                continue;
            };
            if matches!(a.kind, NodeActionKind::Evict { .. }) && is_stopped(t.info.state) {
                // Already stopped (the shaper planned from a report sent
                // before the stop, one round behind, or it stopped on its
                // own): nothing to do, and it counts as applied, so a
                // re-delivered eviction is harmless (protocol/src/lib.rs).
                self.shared
                    .metrics
                    .action(kind, Outcome::Unchanged.as_str());
                outcomes.push(outcome(Outcome::Unchanged, Some("already stopped".into())));
                continue;
            }
            if t.info.state != ContainerState::Running {
                self.shared.metrics.action(kind, Outcome::Refused.as_str());
                outcomes.push(outcome(
                    Outcome::Refused,
                    Some("container is not running".into()),
                ));
                continue;
            }
            match &a.kind {
                NodeActionKind::Evict { .. } => {
                    let (no_cpu, no_mem) = self.unlimited_untouchable(&t);
                    if no_cpu || no_mem {
                        self.shared.metrics.action(kind, Outcome::Refused.as_str());
                        outcomes.push(outcome(
                            Outcome::Refused,
                            Some(
                                "started without a limit: never evicted (manage_unlimited = false)"
                                    .into(),
                            ),
                        ));
                        continue;
                    }
                    if t.labels.protected {
                        self.shared.metrics.action(kind, Outcome::Refused.as_str());
                        outcomes.push(outcome(
                            Outcome::Refused,
                            Some("protected containers are never evicted".into()),
                        ));
                        continue;
                    }
                    if !shape {
                        self.shared
                            .metrics
                            .action(kind, Outcome::Recommended.as_str());
                        outcomes.push(outcome(Outcome::Recommended, None));
                        continue;
                    }
                    match self
                        .runtime
                        .stop(&a.container_id, self.cfg.stop_grace_s)
                        .await
                    {
                        Ok(()) => {
                            let cap = view.capacity;
                            let request = view
                                .containers
                                .iter()
                                .find(|c| c.meta.id == a.container_id)
                                .map(|c| c.request)
                                .unwrap_or_else(|| self.request_of(&t, cap));
                            self.state.evicted.push(Eviction {
                                id: a.container_id.clone(),
                                name: t.info.name.clone(),
                                app: t.labels.app.clone(),
                                at_s: now_s,
                                reason: a.explanation.clone(),
                                request,
                                cause: WaitCause::Evicted,
                            });
                            if a.kind.fails_application()
                                && failed_apps.insert(t.labels.app.clone())
                            {
                                *self
                                    .state
                                    .app_failures
                                    .entry(t.labels.app.clone())
                                    .or_default() += 1;
                            }
                            if let Some(tm) = self.tracked.get_mut(&a.container_id) {
                                tm.info.state = ContainerState::Exited;
                                tm.needs_inspect = true;
                                tm.last_cpu = None;
                            }
                            dirty = true;
                            tracing::warn!(container = %t.info.name, app = %t.labels.app, reason = %a.explanation, "evicted");
                            self.shared.metrics.action(kind, Outcome::Applied.as_str());
                            outcomes.push(outcome(Outcome::Applied, None));
                        }
                        Err(e) => {
                            self.shared.metrics.runtime_error("stop");
                            self.shared.metrics.action(kind, Outcome::Failed.as_str());
                            outcomes.push(outcome(Outcome::Failed, Some(e.to_string())));
                        }
                    }
                }
                NodeActionKind::Resize { from, to } => {
                    let shrinks = to.cpu_cores < from.cpu_cores || to.mem_bytes < from.mem_bytes;
                    if t.labels.protected && shrinks {
                        self.shared.metrics.action(kind, Outcome::Refused.as_str());
                        outcomes.push(outcome(
                            Outcome::Refused,
                            Some("protected containers are never shrunk".into()),
                        ));
                        continue;
                    }
                    if !to.is_finite() || to.cpu_cores <= 0.0 || to.mem_bytes <= 0.0 {
                        self.shared.metrics.action(kind, Outcome::Refused.as_str());
                        outcomes.push(outcome(
                            Outcome::Refused,
                            Some(format!(
                                "invalid target: {:.3} cores, {:.1} MiB",
                                to.cpu_cores,
                                to.mem_bytes / MIB
                            )),
                        ));
                        continue;
                    }
                    // what shape mode would leave alone is said in recommend
                    // mode too (e.g. a throttled container's CPU)
                    let (update, notes) = self.limits_update(&t, *from, *to);
                    let note = (!notes.is_empty()).then(|| notes.join("; "));
                    if !shape {
                        self.shared
                            .metrics
                            .action(kind, Outcome::Recommended.as_str());
                        outcomes.push(outcome(Outcome::Recommended, note));
                        continue;
                    }
                    if update.mem_bytes.is_none() && update.cpu.is_none() {
                        // nothing the agent may change
                        self.shared.metrics.action(kind, Outcome::Refused.as_str());
                        outcomes.push(outcome(Outcome::Refused, note));
                        continue;
                    }
                    if update
                        .mem_bytes
                        .is_none_or(|m| Some(m) == t.info.limits.mem_bytes)
                        && update.cpu.is_none_or(|c| c == t.info.limits.cpu)
                    {
                        // after the agent's floors and rounding the limits
                        // are already there: no Docker call
                        self.shared
                            .metrics
                            .action(kind, Outcome::Unchanged.as_str());
                        outcomes.push(outcome(Outcome::Unchanged, note));
                        continue;
                    }
                    let sent_s = self.clock.now_s();
                    match self.runtime.update(&a.container_id, &update).await {
                        Ok(()) => {
                            // no state write needed: the written-ahead
                            // limits cover these until the next write
                            self.confirm_limits(
                                &a.container_id,
                                Self::limits_after(&t, &update),
                                sent_s,
                            );
                            self.shared.metrics.action(kind, Outcome::Applied.as_str());
                            outcomes.push(outcome(Outcome::Applied, note));
                        }
                        Err(e) => {
                            self.shared.metrics.runtime_error("update");
                            self.shared.metrics.action(kind, Outcome::Failed.as_str());
                            if let Some(tm) = self.tracked.get_mut(&a.container_id) {
                                tm.needs_inspect = true;
                            }
                            outcomes.push(outcome(Outcome::Failed, Some(e.to_string())));
                        }
                    }
                }
            }
        }
        if dirty {
            self.save_state();
        }
        outcomes
    }
}

/// A resource's name and display unit for a log field.
fn unit_of(r: Resource) -> (&'static str, &'static str, f64) {
    match r {
        Resource::Cpu => ("cpu", "cores", 1.0),
        Resource::Mem => ("mem", "MiB", MIB),
    }
}

/// A container that is not running and will not run again without a
/// start: an eviction of it has nothing left to do.
fn is_stopped(state: ContainerState) -> bool {
    matches!(
        state,
        ContainerState::Created
            | ContainerState::Exited
            | ContainerState::Dead
            | ContainerState::Removing
    )
}

impl<R: ContainerRuntime + ?Sized> Agent<R> {
    /// The host's own size, for the bounds of a central shaper's plan:
    /// its CPUs and RAM as the runtime reports them, else `[capacity]` as
    /// configured (0: unknown, no bound).
    fn host_size(&self) -> Resources {
        match &self.host {
            Some(h) => Resources::new(f64::from(h.ncpu), h.mem_total_bytes as f64),
            None => Resources::new(
                self.cfg.capacity.cpu_cores.unwrap_or(0.0),
                self.cfg.capacity.mem_bytes.unwrap_or(0.0),
            ),
        }
    }

    /// A central shaper's resize (it has an action id) held to this
    /// agent's own bounds (QA C8: a hostile or buggy shaper, or a
    /// man-in-the-middle on `http://`, could set any limit): per resource,
    /// the kernel's bounds of the container
    /// ([`shaper::limits::component_bounds`] under the agent's `[shaper]`:
    /// at least `min_*`, at most `request * max_growth`, lifted only as the
    /// kernel lifts them: current usage, the memory reservation, what the
    /// container holds now), at most the host's CPUs and RAM. A plan the
    /// kernel would make under the same `[shaper]` is never moved. A clamp
    /// is logged (warn) and said in the explanation. The agent's own plans
    /// and the fail-safe regrowth are left as they are.
    fn within_bounds(&self, view: &NodeView, mut a: NodeAction) -> NodeAction {
        let NodeActionKind::Resize { from, to } = a.kind else {
            return a;
        };
        // not running (refused below): no view entry to bound it by
        let (Some(action_id), Some(c)) = (
            a.action_id.as_deref(),
            view.containers.iter().find(|c| c.meta.id == a.container_id),
        ) else {
            return a;
        };
        let host = self.host_size();
        let mut notes = Vec::new();
        let bounded = Resources::from_fn(|r| {
            let bounds = component_bounds(
                r,
                c.request.get(r),
                c.usage.get(r),
                c.meta.mem_floor_bytes,
                &self.cfg.shaper,
            )
            .keeping(c.allocation.get(r))
            .within(host.get(r));
            let (x, by) = bounds.clamp(to.get(r));
            if let Some(by) = by {
                let (resource, unit, scale) = unit_of(r);
                let container = if a.container_name.is_empty() {
                    &a.container_id
                } else {
                    &a.container_name
                };
                tracing::warn!(
                    container = %container,
                    action_id,
                    resource,
                    planned = log3(to.get(r) / scale),
                    clamped = log3(x / scale),
                    unit,
                    bound = by.as_str(),
                    request = log3(c.request.get(r) / scale),
                    host = log3(host.get(r) / scale),
                    "the shaper's resize is outside the agent's bounds: clamped"
                );
                notes.push(format!(
                    "{resource} {} -> {} {unit} ({})",
                    log3(to.get(r) / scale),
                    log3(x / scale),
                    by.as_str()
                ));
            }
            x
        });
        if !notes.is_empty() {
            a.kind = NodeActionKind::Resize { from, to: bounded };
            a.explanation = format!(
                "{}; clamped by the agent: {}",
                a.explanation,
                notes.join(", ")
            );
        }
        a
    }

    /// `a` with the container's name: a cluster plan names containers
    /// from the view, which lists only running ones, so an action on a
    /// stopped container came without one (QA C10). The name the agent
    /// knows, else none (the log then gives the id: [`log_outcome`]).
    fn named(&self, a: &NodeAction) -> NodeAction {
        let mut a = a.clone();
        if a.container_name.is_empty() {
            if let Some(t) = self.tracked.get(&a.container_id) {
                a.container_name = t.info.name.clone();
            }
        }
        a
    }
}

/// `x` to 3 decimals (a millicore, a thousandth of a MiB), for a log
/// field: `0.23700000000000002` cores and `246.57532691955566` MiB read
/// as `0.237` and `246.575`. The data (plans, journal) keep every digit.
pub(super) fn log3(x: f64) -> f64 {
    let r = (x * 1000.0).round() / 1000.0;
    if r.is_finite() {
        r
    } else {
        x
    }
}

/// Logs one action's outcome as fields with units (3 decimals).
pub(super) fn log_outcome(o: &ActionOutcome) {
    let a = &o.action;
    let (kind, from, to) = match &a.kind {
        NodeActionKind::Resize { from, to } => ("resize", Some(*from), Some(*to)),
        NodeActionKind::Evict { whole_app: true } => ("evict_application", None, None),
        NodeActionKind::Evict { whole_app: false } => ("evict", None, None),
    };
    let cores = |r: Option<Resources>| r.map(|r| log3(r.cpu_cores));
    let mib = |r: Option<Resources>| r.map(|r| log3(r.mem_bytes / MIB));
    // by id when no name is known (a container the agent does not manage)
    let container = if a.container_name.is_empty() {
        &a.container_id
    } else {
        &a.container_name
    };
    match o.result {
        Outcome::Applied | Outcome::Recommended => tracing::info!(
            container = %container,
            action = kind,
            result = %o.result,
            from_cpu_cores = cores(from),
            to_cpu_cores = cores(to),
            from_mem_mib = mib(from),
            to_mem_mib = mib(to),
            explanation = %a.explanation,
            "action"
        ),
        Outcome::Unchanged => {}
        Outcome::Refused | Outcome::Failed => tracing::warn!(
            container = %container,
            action = kind,
            result = %o.result,
            error = o.error.as_deref().unwrap_or(""),
            "action not applied"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::log3;

    #[test]
    fn log_fields_have_three_decimals() {
        assert_eq!(log3(0.237_000_000_000_000_02), 0.237);
        assert_eq!(log3(246.575_326_919_555_66), 246.575);
        assert_eq!(log3(2.0), 2.0);
        assert!(log3(f64::NAN).is_nan());
        assert_eq!(log3(f64::MAX), f64::MAX);
    }
}

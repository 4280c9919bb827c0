//! Reconcile: restart evicted containers when room is back, restore limits on shutdown.

use super::*;

impl<R: ContainerRuntime + ?Sized> Agent<R> {
    /// The limits a container gets back: what it was started with; an
    /// unlimited resource gets the node's capacity (Docker cannot remove a
    /// limit with `update`).
    pub(super) fn original_update(&self, t: &Tracked) -> ResourceUpdate {
        let cap = self.capacity();
        let orig = self.original_limits(t);
        // a resource the agent may not limit was never changed: left alone
        let (no_cpu, no_mem) = self.unlimited_untouchable(t);
        let mem = orig
            .mem_bytes
            .unwrap_or_else(|| (cap.mem_bytes as u64 / PAGE) * PAGE);
        let cpu = match orig.cpu {
            CpuLimit::Unlimited => CpuLimit::Nano {
                nano_cpus: (cap.cpu_cores * 1e9).round() as i64,
            },
            c => c,
        };
        if no_cpu || no_mem {
            return ResourceUpdate {
                mem_bytes: (!no_mem).then_some(mem),
                cpu: (!no_cpu).then_some(cpu),
                mem_swap_bytes: if no_mem { None } else { orig.mem_swap_bytes },
            };
        }
        // the swap limit it was started with; an originally unlimited
        // memory had unlimited swap
        let swap = match (orig.mem_bytes, orig.mem_swap_bytes) {
            (_, Some(s)) => Some(s),
            (None, None) => Some(-1),
            (Some(_), None) => None,
        };
        ResourceUpdate {
            mem_bytes: Some(mem),
            cpu: Some(cpu),
            mem_swap_bytes: swap,
        }
    }

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
            if now_s - e.at_s < self.cfg.restart_cooldown_s || !e.request.fits_in(&free) {
                break;
            }
            let Some(t) = self.tracked.get(&e.id).cloned() else {
                self.state.evicted.remove(0);
                continue;
            };
            let update = self.original_update(&t);
            if let Err(err) = self.runtime.update(&e.id, &update).await {
                self.shared.metrics.runtime_error("update");
                tracing::warn!(container = %e.name, error = %err, "cannot restore limits before restart");
            }
            match self.runtime.start(&e.id).await {
                Ok(()) => {
                    self.state.evicted.remove(0);
                    free = free.sub(&e.request);
                    if let Some(tm) = self.tracked.get_mut(&e.id) {
                        tm.info.state = ContainerState::Running;
                        tm.info.limits = Limits {
                            mem_bytes: update.mem_bytes,
                            cpu: update.cpu.unwrap_or(tm.info.limits.cpu),
                            mem_swap_bytes: update.mem_swap_bytes,
                        };
                        tm.needs_inspect = true;
                        tm.last_cpu = None;
                    }
                    self.shared
                        .metrics
                        .action("restart", Outcome::Applied.as_str());
                    tracing::info!(container = %e.name, app = %e.app, evicted_for_s = now_s - e.at_s, "restarted evicted container");
                    restarted.push(e.name.clone());
                }
                Err(err) => {
                    self.shared.metrics.runtime_error("start");
                    self.shared
                        .metrics
                        .action("restart", Outcome::Failed.as_str());
                    tracing::warn!(container = %e.name, error = %err, "cannot restart evicted container");
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
    /// running managed container whose limits the agent changed gets its
    /// original limits back; `keep_current` changes nothing. Nothing is
    /// stopped either way, and in `recommend` mode nothing was changed.
    /// Returns the containers restored.
    pub async fn shutdown(&mut self) -> Vec<String> {
        let mut restored = Vec::new();
        if self.cfg.actuation != Actuation::Shape
            || self.cfg.on_shutdown != ShutdownPolicy::RestoreRequests
        {
            return restored;
        }
        let running: Vec<Tracked> = self
            .tracked
            .values()
            .filter(|t| t.info.state == ContainerState::Running)
            .cloned()
            .collect();
        for t in running {
            let update = self.original_update(&t);
            let same = update
                .mem_bytes
                .is_none_or(|m| Some(m) == t.info.limits.mem_bytes)
                && update.cpu.is_none_or(|c| c == t.info.limits.cpu)
                && (update.mem_bytes.is_none()
                    || update.mem_swap_bytes == t.info.limits.mem_swap_bytes);
            if same {
                continue;
            }
            match self.runtime.update(&t.info.id, &update).await {
                Ok(()) => restored.push(t.info.name.clone()),
                Err(e) => {
                    tracing::warn!(container = %t.info.name, error = %e, "cannot restore request on shutdown")
                }
            }
        }
        tracing::info!(restored = restored.len(), "restored requests on shutdown");
        restored
    }
}

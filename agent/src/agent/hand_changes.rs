//! Limits someone else set (`docker update`): while the agent runs, and
//! while it was stopped. Either becomes the container's request from then
//! on, that resource alone.

use super::*;

impl<R: ContainerRuntime + ?Sized> Agent<R> {
    /// Adopts the limits of a freshly inspected container that someone
    /// else changed: since the agent last knew them (`tracked`), or, for a
    /// container known from the state a previous run left (`known`), since
    /// that run. Returns true when the persisted state changed.
    pub(super) fn notice_hand_changes(&mut self, info: &ContainerInfo, known: bool) -> bool {
        let set = self
            .state
            .set_limits
            .get(&info.id)
            .copied()
            .unwrap_or_default();
        if let Some(t) = self.tracked.get(&info.id) {
            // neither what the agent knows it set nor an update whose
            // answer it did not get (a timeout after the daemon applied it)
            let from = t.info.limits;
            let (mem, cpu) = unlike_all(std::iter::once(&from).chain(&set.pending), &info.limits);
            return self.adopt_hand_change(info, &from, mem, cpu, false);
        }
        if !known {
            return false;
        }
        if self.checks_changes_while_stopped {
            let orig = self.original_limits_of(&info.id, &info.limits);
            let (mem, cpu) = changed_while_stopped(&orig, &set, &info.limits);
            self.adopt_hand_change(info, &set.applied.unwrap_or(orig), mem, cpu, true);
        }
        // what it has now is what a later start may find
        self.state.set_limits.insert(
            info.id.clone(),
            SetLimits {
                applied: Some(info.limits),
                pending: None,
            },
        );
        true
    }

    /// Adopts a limit someone else set (`docker update`) as the
    /// container's request from now on, and what a shutdown restores: only
    /// the resource changed, the other keeps its original (not the agent's
    /// cut). `from` is what the agent knew the limits to be. Returns true
    /// when the originals changed.
    fn adopt_hand_change(
        &mut self,
        info: &ContainerInfo,
        from: &Limits,
        mem_changed: bool,
        cpu_changed: bool,
        while_stopped: bool,
    ) -> bool {
        if !mem_changed && !cpu_changed {
            return false;
        }
        let when = if while_stopped {
            "while the agent was stopped"
        } else {
            "outside tailor"
        };
        let mut orig = self.original_limits_of(&info.id, from);
        if mem_changed {
            orig.mem_bytes = info.limits.mem_bytes;
            orig.mem_swap_bytes = info.limits.mem_swap_bytes;
            tracing::info!(
                container = %info.name,
                from_mem_mib = from.mem_bytes.map(|m| log3(m as f64 / MIB)),
                to_mem_mib = info.limits.mem_bytes.map(|m| log3(m as f64 / MIB)),
                "memory limit changed {when}: adopted as the container's request"
            );
        }
        if cpu_changed {
            orig.cpu = info.limits.cpu;
            tracing::info!(
                container = %info.name,
                from_cpu_cores = from.cpu.cores().map(log3),
                to_cpu_cores = info.limits.cpu.cores().map(log3),
                "CPU limit changed {when}: adopted as the container's request"
            );
        }
        orig.mem_reservation_bytes = info.limits.mem_reservation_bytes;
        self.state.originals.insert(info.id.clone(), orig);
        true
    }
}

/// Whether a container's (memory, CPU) limits as inspected differ from
/// what this agent last knew it set (beyond the runtime's rounding):
/// someone else changed them. Swap is not compared (the agent's own updates
/// set it in steps).
fn changed_elsewhere(known: &Limits, seen: &Limits) -> (bool, bool) {
    const MEM_TOLERANCE_BYTES: u64 = 1 << 20;
    const CPU_TOLERANCE_CORES: f64 = 0.005;
    let mem = match (known.mem_bytes, seen.mem_bytes) {
        (Some(a), Some(b)) => a.abs_diff(b) > MEM_TOLERANCE_BYTES,
        (a, b) => a.is_some() != b.is_some(),
    };
    let cpu = match (known.cpu.cores(), seen.cpu.cores()) {
        (Some(a), Some(b)) => (a - b).abs() > CPU_TOLERANCE_CORES,
        (a, b) => a.is_some() != b.is_some(),
    };
    (mem, cpu)
}

/// Whether a container's (memory, CPU) limits as found when the agent
/// starts differ from every limit it had or may have had when the previous
/// run left it: its original, and the limits that run set or wrote ahead
/// of an update. A resource that differs from all of them was changed by
/// hand while no agent ran.
fn changed_while_stopped(orig: &Limits, set: &SetLimits, seen: &Limits) -> (bool, bool) {
    unlike_all(std::iter::once(orig).chain(set.candidates()), seen)
}

/// Per resource (memory, CPU): whether `seen` differs from each of
/// `candidates` ([`changed_elsewhere`]).
fn unlike_all<'a>(candidates: impl Iterator<Item = &'a Limits>, seen: &Limits) -> (bool, bool) {
    candidates
        .map(|c| changed_elsewhere(c, seen))
        .fold((true, true), |(m, c), (mm, cc)| (m && mm, c && cc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim(mem_mib: u64, cores: f64) -> Limits {
        Limits {
            mem_bytes: Some(mem_mib << 20),
            cpu: crate::runtime::CpuLimit::Nano {
                nano_cpus: (cores * 1e9) as i64,
            },
            mem_swap_bytes: None,
            mem_reservation_bytes: None,
        }
    }

    #[test]
    fn a_change_while_stopped_differs_from_every_limit_the_agent_may_have_left() {
        let orig = lim(1024, 1.0);
        let set = SetLimits {
            applied: Some(lim(200, 0.3)),
            pending: Some(lim(150, 0.2)),
        };
        for mine in [orig, lim(200, 0.3), lim(150, 0.2), lim(1024, 0.2)] {
            assert_eq!(changed_while_stopped(&orig, &set, &mine), (false, false));
        }
        // within the runtime's rounding
        assert_eq!(
            changed_while_stopped(&orig, &set, &lim(150, 0.203)),
            (false, false)
        );
        assert_eq!(
            changed_while_stopped(&orig, &set, &lim(2048, 0.3)),
            (true, false)
        );
        assert_eq!(
            changed_while_stopped(&orig, &set, &lim(200, 1.5)),
            (false, true)
        );
        // no limit set by the agent: only the original is its own
        assert_eq!(
            changed_while_stopped(&orig, &SetLimits::default(), &lim(200, 0.3)),
            (true, true)
        );
    }
}

//! Pairing the OOM kills the event stream reports with the OOM-killed
//! exits `inspect` finds, so that one kill is counted once whichever
//! comes first.

/// Streamed OOM events remembered per container for matching.
pub(super) const MAX_PENDING_OOMS: usize = 8;

/// How far apart, at most, an OOM event and the OOM-killed exit it caused
/// are stamped (s, either way). The exit comes within seconds of the kill;
/// the event is stamped when the daemon handles it, which on a loaded host
/// can be after the exit (Docker: up to 0.07 s after `FinishedAt` with
/// both cores busy, and more under a heavier load).
pub(super) const OOM_PAIR_S: f64 = 10.0;

/// True when an OOM event at `event_s` and an OOM-killed exit at `exit_s`
/// (both the daemon's clock) are the same kill: stamped within
/// [`OOM_PAIR_S`] of each other, and the event not from a later run
/// (`started_s`: when the container's current run started, if known; an
/// event at or after a start later than the exit is that run's).
pub(super) fn same_oom(event_s: Option<f64>, exit_s: f64, started_s: Option<f64>) -> bool {
    let later_run = started_s.filter(|&s| s > exit_s);
    event_s.is_none_or(|e| (e - exit_s).abs() <= OOM_PAIR_S && later_run.is_none_or(|s| e < s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_pairs_with_an_exit_stamped_within_the_window_either_way() {
        let f = 1_000.0;
        // the event first (the usual order), or stamped after the exit by
        // a daemon that handled it late
        for e in [
            f - 0.8,
            f,
            f + 0.07,
            f + 3.0,
            f - OOM_PAIR_S,
            f + OOM_PAIR_S,
        ] {
            assert!(same_oom(Some(e), f, None), "event at {}", e - f);
        }
        for e in [f - OOM_PAIR_S - 0.1, f + OOM_PAIR_S + 0.1, f + 3_600.0] {
            assert!(!same_oom(Some(e), f, None), "event at {}", e - f);
        }
        // a runtime that gives no time pairs with any exit
        assert!(same_oom(None, f, None));
    }

    #[test]
    fn an_event_of_a_later_run_is_not_the_earlier_runs_kill() {
        let f = 1_000.0;
        // restarted 0.5 s after the exit: a late event of the killed run
        // still pairs, one stamped once the next run had started does not
        assert!(same_oom(Some(f + 0.2), f, Some(f + 0.5)));
        assert!(!same_oom(Some(f + 0.5), f, Some(f + 0.5)));
        assert!(!same_oom(Some(f + 2.0), f, Some(f + 0.5)));
        // a start before the exit is the killed run's own
        assert!(same_oom(Some(f + 2.0), f, Some(f - 60.0)));
    }
}

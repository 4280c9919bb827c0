//! Early rounds. An agent's memory watch saw a container use half the
//! memory headroom it had at the last round and reported at once
//! ([`crate::protocol::ReportRequest::early`]). The round loop then plans
//! a round at once, at most one per `early_round_gap_s` since the last round
//! began, and the report is answered with that round's actions: the
//! container's limit can grow within about a round's latency instead of
//! waiting up to `interval_s` for the next round.
//!
//! An early round also waits, after the last round ended, as long as that
//! round took: early rounds keep the shaper busy half the time at most, a
//! bound that matters only where a round takes longer than the gap (at
//! 10,000 agents x 100 containers a round takes ~0.5 s in a release build).
//!
//! An early round is an ordinary round of the whole cluster (the kernel
//! plans from every agent's latest report; nothing is decided here), and the
//! schedule restarts from it. A node can make a round come sooner, never
//! more than one per gap, and gets back only its own actions, as from any
//! report.

use super::{Shared, LOOP_RUNNING};
use crate::protocol::WireAction;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// How long an early report waits for its round beyond the gap, at most
/// (a round at 10,000 agents x 100 containers takes ~0.5 s).
const ROUND_WAIT: Duration = Duration::from_secs(2);

/// When an early round may begin, the last round having begun at `begun`
/// and taken `took`: `gap` after `begun`, and at least `took` after that
/// round ended.
pub(crate) fn not_before(
    begun: tokio::time::Instant,
    took: Duration,
    gap: Duration,
) -> tokio::time::Instant {
    begun + gap.max(took * 2)
}

/// Round attempts begun and ended since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Attempts {
    begun: u64,
    ended: u64,
}

/// The requests for early rounds and the round loop's progress.
#[derive(Debug)]
pub(crate) struct EarlyRounds {
    gap: Option<Duration>,
    interval: Duration,
    wake: Notify,
    attempts: watch::Sender<Attempts>,
}

impl EarlyRounds {
    /// `gap_s` = 0: no early rounds.
    pub(crate) fn new(gap_s: f64, interval_s: f64) -> Self {
        Self {
            gap: (gap_s > 0.0).then(|| Duration::from_secs_f64(gap_s)),
            interval: Duration::from_secs_f64(interval_s),
            wake: Notify::new(),
            attempts: watch::Sender::new(Attempts::default()),
        }
    }

    /// The least time from one round's start to an early round's.
    pub(crate) fn gap(&self) -> Option<Duration> {
        self.gap
    }

    /// Resolves when an early round was asked for (never without a gap).
    pub(crate) async fn asked(&self) {
        match self.gap {
            Some(_) => self.wake.notified().await,
            None => std::future::pending().await,
        }
    }

    /// The round loop begins an attempt (before the round's snapshot).
    pub(crate) fn begin(&self) {
        self.attempts.send_modify(|a| a.begun += 1);
    }

    /// The round loop ended an attempt (planned or skipped).
    pub(crate) fn end(&self) {
        self.attempts.send_modify(|a| a.ended += 1);
    }

    /// Called once a report is taken in: asks for a round and returns the
    /// attempt that will plan with it (every attempt begun from here on
    /// snapshots after the report). `None` without early rounds.
    pub(crate) fn ask(&self) -> Option<u64> {
        self.gap?;
        let next = self.attempts.borrow().begun + 1;
        self.wake.notify_one();
        Some(next)
    }

    /// Waits until attempt `n` has ended, at most the gap + [`ROUND_WAIT`]
    /// (and never longer than an interval); false when it did not.
    pub(crate) async fn ended(&self, n: u64) -> bool {
        let wait = (self.gap.unwrap_or_default() + ROUND_WAIT).min(self.interval);
        let mut rx = self.attempts.subscribe();
        let ended = tokio::time::timeout(wait, rx.wait_for(|a| a.ended >= n)).await;
        matches!(ended, Ok(Ok(_)))
    }
}

impl Shared {
    /// For an early report of `agent_id`, just taken in: asks for a round
    /// and waits for it; then the agent's actions of that round (its number
    /// and the actions). `None` without early rounds, without a round loop,
    /// or when the round did not end in time (the report's answer then
    /// holds the last round's actions, as any report's does).
    pub(crate) async fn early_round_for(&self, agent_id: &str) -> Option<(u64, Vec<WireAction>)> {
        if self.round_loop.load(Ordering::SeqCst) != LOOP_RUNNING {
            return None;
        }
        let attempt = self.early.ask()?;
        if !self.early.ended(attempt).await {
            tracing::info!(
                agent = %agent_id,
                "early report: no round ended in time; answered with the last round's actions"
            );
            return None;
        }
        self.with_state(|s| s.pending_for(agent_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_report_waits_for_an_attempt_begun_after_it() {
        let e = EarlyRounds::new(1.0, 10.0);
        e.begin(); // a round in progress when the report arrives
        let n = e.ask().expect("early rounds on");
        assert_eq!(n, 2);
        e.end();
        assert!(!e.ended(n).await, "the round in progress did not see it");
        e.begin();
        e.end();
        assert!(e.ended(n).await);
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_is_bounded_and_off_without_a_gap() {
        let e = EarlyRounds::new(1.0, 10.0);
        let n = e.ask().expect("on");
        let t0 = tokio::time::Instant::now();
        assert!(!e.ended(n).await);
        assert_eq!(t0.elapsed(), Duration::from_secs(3));
        let short = EarlyRounds::new(1.0, 0.5);
        let n = short.ask().expect("on");
        let t0 = tokio::time::Instant::now();
        assert!(!short.ended(n).await);
        assert_eq!(t0.elapsed(), Duration::from_millis(500));
        assert_eq!(EarlyRounds::new(0.0, 10.0).ask(), None);
    }

    #[test]
    fn an_early_round_waits_the_gap_or_as_long_as_the_last_round_took() {
        let t = tokio::time::Instant::now();
        let ms = Duration::from_millis;
        // a quick round: the gap since it began
        assert_eq!(not_before(t, ms(5), ms(1000)), t + ms(1000));
        // a round longer than half the gap: idle as long as it took
        assert_eq!(not_before(t, ms(800), ms(1000)), t + ms(1600));
    }

    #[tokio::test(start_paused = true)]
    async fn an_ask_wakes_the_loop_once() {
        let e = EarlyRounds::new(1.0, 10.0);
        e.ask();
        e.ask();
        tokio::time::timeout(Duration::from_secs(1), e.asked())
            .await
            .expect("woken");
        assert!(
            tokio::time::timeout(Duration::from_secs(1), e.asked())
                .await
                .is_err(),
            "two asks before the loop looked are one round"
        );
    }
}

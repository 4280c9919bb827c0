//! One shaping round of the central shaper: snapshot under the lock, view,
//! `decide()` and actions off it, write-through to a shared store, commit.

use super::{lock, Shared};
use crate::state::{PreparedRound, RoundOutcome, SkipReason};
use crate::store::StoreError;
use std::sync::Arc;
use std::time::Instant;

impl Shared {
    /// Plans one round now (the round task calls this every interval; tests
    /// call it directly).
    pub async fn run_round(self: &Arc<Self>) -> Result<RoundOutcome, SkipReason> {
        let t0 = Instant::now();
        let now_s = self.clock.now_s();
        // Under the lock only: numbering the round, cloning Arcs, and at the
        // end swapping pending actions. View building, decide() and turning
        // the plan into wire actions run on a blocking thread without it.
        let snap = self.with_state(|s| {
            s.begin_round(now_s)
                .map(|snap| (snap, s.shaper_config().clone()))
        });
        let (snap, cfg) = match snap {
            Ok(x) => x,
            Err(reason) => {
                self.with_metrics(|m| match reason {
                    SkipReason::Warmup => m.rounds_skipped_warmup += 1,
                    SkipReason::NoAgents => m.rounds_skipped_no_agents += 1,
                    SkipReason::Store | SkipReason::NotLeader => m.rounds_skipped_store += 1,
                });
                return Err(reason);
            }
        };
        let decider = self.decider.clone();
        let round_memory = self.round_memory.clone();
        let prepared = tokio::task::spawn_blocking(move || {
            let t = Instant::now();
            // Taken for the round (a round that overlaps this one starts
            // from empty memory) and given back when it is prepared.
            let mut memory = std::mem::take(&mut *lock(&round_memory));
            let input = snap.build_reusing(&mut memory);
            let built_s = t.elapsed().as_secs_f64();
            let plan = lock(&decider).decide(&input.view, now_s, &cfg);
            let decided_s = t.elapsed().as_secs_f64() - built_s;
            let prepared = input.prepare_reusing(plan, &mut memory);
            memory.keep_view(input);
            *lock(&round_memory) = memory;
            let phases = [
                built_s,
                decided_s,
                t.elapsed().as_secs_f64() - built_s - decided_s,
            ];
            (prepared, phases)
        })
        .await;
        let (prepared, [view_s, decide_s, prepare_s]) = match prepared {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "round task failed; round skipped");
                return Err(SkipReason::NoAgents);
            }
        };
        let planned_s = t0.elapsed().as_secs_f64();
        if self.store.is_shared() {
            self.store_round(&prepared).await?;
        }
        let (out, replaced) = self.with_state(|s| s.commit_deferring_drops(prepared));
        // Freed off the lock and off the round's latency; the replaced
        // plan's action vector goes back to the decider, its action lists
        // to the round memory, for the next round.
        let decider = self.decider.clone();
        let round_memory = self.round_memory.clone();
        tokio::task::spawn_blocking(move || {
            let (plan, spares) = replaced.into_spares();
            lock(&round_memory).keep(spares);
            if let Some(plan) = plan {
                let mut actions = plan.actions;
                actions.clear();
                lock(&decider).recycle(actions);
            }
        });
        let elapsed = t0.elapsed().as_secs_f64();
        self.with_metrics(|m| {
            m.round_latency.observe(elapsed);
            m.rounds_total += 1;
            m.actions_total[0] += out.resize;
            m.actions_total[1] += out.evict_component;
            m.actions_total[2] += out.evict_application;
            m.actions_dropped_stale += out.dropped_for_stale;
            m.last_round_components = out.components;
            m.last_round_duplicates = out.duplicates;
        });
        tracing::info!(
            round = out.round,
            agents_live = out.agents_live,
            agents_stale = out.agents_stale,
            components = out.components,
            resize = out.resize,
            evict_component = out.evict_component,
            evict_application = out.evict_application,
            latency_s = elapsed,
            planned_s,
            view_s,
            decide_s,
            prepare_s,
            "shaping round"
        );
        Ok(out)
    }

    /// Write-through: the round's actions are durable before any agent can
    /// collect them; a failed write skips the round (nothing handed out).
    /// Then the agents' report sequences, so that a new leader refuses
    /// reports captured before a failover; a failed write of those keeps
    /// the round (its actions are stored), the next round writes them again.
    async fn store_round(self: &Arc<Self>, prepared: &PreparedRound) -> Result<(), SkipReason> {
        let actions = prepared.durable_actions();
        if let Err(e) = self
            .store
            .put_round(prepared.round(), &actions, prepared.keep_from())
            .await
        {
            tracing::error!(round = prepared.round(), error = %e, "cannot store the round's actions: round skipped");
            self.with_metrics(|m| m.rounds_skipped_store += 1);
            if matches!(e, StoreError::NotLeader) {
                crate::ha::step_down(self, "a fenced write failed");
            }
            return Err(SkipReason::Store);
        }
        let guard = self.with_state(|s| s.replay_snapshot());
        if let Err(e) = self.store.put_replay_guard(&guard).await {
            tracing::warn!(round = prepared.round(), agents = guard.len(), error = %e, "cannot store the replay guard");
        }
        Ok(())
    }
}

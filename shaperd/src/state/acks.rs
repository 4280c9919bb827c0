//! Acknowledgements: an agent reports what became of the actions issued
//! to it; an applied whole-application eviction counts as one failure of
//! that application ([`super::app_failures`] keeps the table bounded).

use super::*;

impl ShaperState {
    /// Records acknowledgements sent on their own by the agent `who`
    /// authenticated as (403 when the request names another agent).
    pub fn ack_as(&mut self, who: &Identity, req: &AckRequest) -> Result<AckResponse, Refusal> {
        // Validated first: the refusal quotes the id (QA C11).
        if let Err(errors) = req.validate(self.cfg.max_components_per_report) {
            let e = Refusal::Invalid(errors);
            self.count_refusal(&e);
            return Err(e);
        }
        if req.agent_id.as_str() != &*who.agent_id {
            let e = Refusal::Forbidden(format!(
                "the credential of agent {:?} cannot acknowledge for {:?}",
                who.agent_id, req.agent_id
            ));
            self.count_refusal(&e);
            return Err(e);
        }
        Ok(self.ack_validated(req))
    }

    /// Records acknowledgements (the agent is trusted to be `req.agent_id`:
    /// the server calls [`ShaperState::ack_as`]).
    #[cfg(test)]
    pub(super) fn ack(&mut self, req: &AckRequest) -> Result<AckResponse, Invalid> {
        req.validate(self.cfg.max_components_per_report)
            .map_err(Invalid)?;
        Ok(self.ack_validated(req))
    }

    /// Records acknowledgements that passed [`AckRequest::validate`].
    fn ack_validated(&mut self, req: &AckRequest) -> AckResponse {
        // An agent that has not reported to this instance yet (e.g. after a
        // leader change) still acknowledges the actions issued to it.
        let key: Arc<str> = match self.agents.get_key_value(req.agent_id.as_str()) {
            Some((k, _)) => k.clone(),
            None => Arc::from(req.agent_id.as_str()),
        };
        self.apply_acks(&key, &req.acks)
    }

    pub(super) fn apply_acks(&mut self, agent: &Arc<str>, acks: &[Ack]) -> AckResponse {
        let mut out = AckResponse::default();
        let mut done: HashSet<(u64, u32)> = HashSet::new();
        for ack in acks {
            let place = parse_action_id(&self.epoch, &ack.action_id);
            let rec = match place.and_then(|(round, n)| {
                self.actions
                    .get_mut(&round)
                    .and_then(|v| v.get_mut(n as usize))
            }) {
                Some(r) if *r.agent == **agent => r,
                _ => {
                    out.unknown += 1;
                    continue;
                }
            };
            let Some((round, n)) = place else { continue };
            if !done.insert((round, n)) {
                // the same action twice in one request: the first counts
                continue;
            }
            out.accepted += 1;
            match &ack.outcome {
                AckOutcome::Applied => {
                    rec.status = ActionStatus::Applied;
                    self.acks.applied += 1;
                    if let Some(app) = &rec.evicted_app {
                        if self.counted_app_evictions.insert((round, app.clone())) {
                            let count = self.app_failures.entry(app.clone()).or_insert(0);
                            *count += 1;
                            self.writes.app_failures.push((app.clone(), *count));
                        }
                    }
                }
                AckOutcome::Failed { error } => {
                    rec.status = ActionStatus::Failed {
                        error: error.clone(),
                    };
                    self.acks.failed += 1;
                }
            }
            self.writes.acks.push(crate::store::AckWrite {
                round,
                n,
                status: rec.status.clone(),
            });
        }
        self.acks.unknown += out.unknown;
        if !done.is_empty() {
            if let Some(a) = self.agents.get_mut(agent) {
                let round = a.pending.round;
                a.pending.actions.retain(|l| !done.contains(&(round, l.n)));
            }
        }
        out
    }
}

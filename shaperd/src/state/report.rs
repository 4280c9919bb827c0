//! A report taken in: checked (identity, order, caps, scope), then the
//! agent's record replaced and its pending actions answered.

use super::*;

impl ShaperState {
    /// Records the report of the agent `who` authenticated as and returns
    /// its pending actions. Refused, with nothing changed, when the report
    /// speaks for another agent id (403), does not come after the agent's
    /// last accepted report (409), is invalid (400) or would exceed a cap
    /// (429). Components whose request exceeds the host's capacity are left
    /// out and listed in the answer. Applications are keyed by
    /// `<tenant>/<label>` from here on (see [`protocol::app_key`]).
    pub fn report_as(
        &mut self,
        who: &Identity,
        req: ReportRequest,
        now_s: f64,
    ) -> Result<ReportResponse, Refusal> {
        self.report_as_within(who, req, now_s, None)
    }

    /// [`Self::report_as`], also refusing a boot id far ahead of `wall_ms`
    /// (the shaper's wall clock in Unix ms; `now_s` may be another clock):
    /// see [`crate::limits::check_boot_not_ahead`].
    pub fn report_as_within(
        &mut self,
        who: &Identity,
        req: ReportRequest,
        now_s: f64,
        wall_ms: Option<u64>,
    ) -> Result<ReportResponse, Refusal> {
        let r = self.report_checked(who, req, now_s, wall_ms);
        if let Err(e) = &r {
            self.count_refusal(e);
        }
        r
    }

    fn report_checked(
        &mut self,
        who: &Identity,
        mut req: ReportRequest,
        now_s: f64,
        wall_ms: Option<u64>,
    ) -> Result<ReportResponse, Refusal> {
        // Validated first: the refusal below quotes the reported id, which
        // is then at most `MAX_NAME_LEN` bytes without control characters.
        req.validate(self.cfg.max_components_per_report)
            .map_err(Refusal::Invalid)?;
        if req.agent_id.as_str() != &*who.agent_id {
            return Err(Refusal::Forbidden(format!(
                "the credential of agent {:?} cannot report as {:?}",
                who.agent_id, req.agent_id
            )));
        }
        if let Some(wall_ms) = wall_ms {
            crate::limits::check_boot_not_ahead(req.boot_id, wall_ms)?;
        }
        self.replay.check(&who.agent_id, req.boot_id, req.seq)?;
        let (kept, mut rejected) = split_over_capacity(std::mem::take(&mut req.components), &req);
        let over_capacity = rejected.len() as u64;
        req.components = split_out_of_scope(kept, &who.apps, &mut rejected);
        let out_of_scope = rejected.len() as u64 - over_capacity;
        for c in &mut req.components {
            c.app = protocol::app_key(&who.tenant, &c.app);
        }
        let ids: Arc<[AppId]> = req
            .components
            .iter()
            .map(|c| protocol::app_id(&c.app))
            .collect();
        let new = Footprint {
            components: req.components.len() as u64,
            mem_bytes: report_mem_bytes(&req),
        };
        let existing = self.agents.get_key_value(req.agent_id.as_str());
        let old = existing.map(|(_, a)| (a.tenant.clone(), a.footprint));
        if let Some((old_tenant, _)) = &old {
            if *old_tenant != who.tenant {
                return Err(Refusal::Forbidden(format!(
                    "agent {:?} is on record in tenant {old_tenant:?}, its credential is in tenant {:?}",
                    who.agent_id, who.tenant
                )));
            }
        }
        self.usage.check(
            &self.cfg.limits,
            &who.tenant,
            old.as_ref().map(|o| o.1),
            new,
        )?;
        // Accepted from here on.
        if !rejected.is_empty() {
            self.refusals.components_over_capacity += over_capacity;
            self.refusals.components_out_of_scope += out_of_scope;
            tracing::warn!(
                agent = %who.agent_id,
                tenant = %who.tenant,
                over_capacity,
                out_of_scope,
                first = %rejected[0].container_id,
                "components left out: request over the host's capacity, or an application the credential may not report"
            );
        }
        let key: Arc<str> = match existing {
            Some((k, _)) => k.clone(),
            None => who.agent_id.clone(),
        };
        self.replay.accept(&key, req.boot_id, req.seq);
        self.usage
            .replace(&who.tenant, old.as_ref().map(|o| o.1), new);
        let acks = std::mem::take(&mut req.acks);
        self.apply_acks(&key, &acks);
        let taken: Arc<[owners::Taken]> = self.owners.replace(&key, &req).into();
        let req = Arc::new(req);
        let rec = self.agents.entry(key).or_insert_with(|| AgentRecord {
            tenant: who.tenant.clone(),
            footprint: new,
            report: req.clone(),
            first_seen_s: now_s,
            last_seen_s: now_s,
            reports: 0,
            ids: ids.clone(),
            taken: taken.clone(),
            pending: Pending::default(),
        });
        rec.report = req;
        rec.ids = ids;
        rec.taken = taken;
        rec.footprint = new;
        rec.last_seen_s = now_s;
        rec.reports += 1;
        Ok(ReportResponse {
            api_version: API_VERSION,
            round: rec.pending.round,
            interval_s: self.cfg.interval_s,
            actions: rec.pending.render(&self.epoch),
            rejected,
        })
    }
}

//! Scheduler: the admission queue, placement of pending components, host ledger.

use super::*;

impl Engine<'_> {
    // ----- scheduler -----

    pub(super) fn enqueue(&mut self, a: usize) {
        let app = &mut self.apps[a];
        app.state = AState::Queued;
        app.queued_since = self.now;
        let key = app.key;
        self.queue.insert(key);
        self.dirty = true;
    }

    /// Admits queued applications and places pending elastic components, in
    /// scheduler order (merged walk over both sets). In strict mode the
    /// first queued application that does not fit blocks every later entry,
    /// elastic components of later applications included.
    pub(super) fn schedule_pass(&mut self) {
        self.dirty = false;
        let strict = !self.cfg.backfill;
        let mut q_cur: Option<Key> = None;
        let mut e_cur: Option<Key> = None;
        let mut blocked_at: Option<Key> = None;
        loop {
            let qn = if strict && blocked_at.is_some() {
                None
            } else {
                next_after(&self.queue, q_cur)
            };
            let mut en = next_after(&self.elastic_wait, e_cur);
            if let (true, Some(b), Some(e)) = (strict, blocked_at, en) {
                if e > b {
                    en = None;
                }
            }
            let (key, from_queue) = match (qn, en) {
                (None, None) => break,
                (Some(q), None) => (q, true),
                (None, Some(e)) => (e, false),
                (Some(q), Some(e)) => {
                    if q < e {
                        (q, true)
                    } else {
                        (e, false)
                    }
                }
            };
            let a = key.1 as usize;
            if from_queue {
                q_cur = Some(key);
                if self.try_admit(a) {
                    self.queue.remove(&key);
                    if self.apps[a].state == AState::Running {
                        self.place_pending(a);
                    }
                    // Its leftover pending components are retried when the
                    // walk reaches its key in `elastic_wait`; skip that.
                    if e_cur.is_none_or(|e| e < key) {
                        e_cur = Some(key);
                    }
                } else if blocked_at.is_none() {
                    blocked_at = Some(key);
                }
            } else {
                e_cur = Some(key);
                self.place_pending(a);
            }
        }
    }

    /// Places every core component of `a` without a start delay (all or
    /// nothing), then queues its elastic components as pending and
    /// schedules the submission of its delayed ones. True when admitted.
    pub(super) fn try_admit(&mut self, a: usize) -> bool {
        let (first, n) = (self.apps[a].first as usize, self.apps[a].n as usize);
        // Quick necessary conditions.
        let mut need = Resources::ZERO;
        let max = self.tree.max_free();
        for c in first..first + n {
            if self.comps[c].class == Class::Core && self.start_delay_s(c) == 0.0 {
                let r = self.comps[c].request;
                if !fits(&r, max.cpu_cores, max.mem_bytes) || self.unfit.known_unfit(&r, &self.tree)
                {
                    return false;
                }
                need = need.add(&r);
            }
        }
        if !fits(&need, self.free_pos_cpu, self.free_pos_mem) {
            return false;
        }
        // Tentative placement, undone afterwards either way by restoring the
        // exact previous host state (so the unfit cache stays valid: no host
        // gains room it did not have before).
        let saved_pos = (self.free_pos_cpu, self.free_pos_mem);
        let mut saved: Vec<(usize, Resources)> = Vec::new();
        let mut placed: Vec<(usize, usize)> = Vec::new();
        let mut ok = true;
        for c in first..first + n {
            if self.comps[c].class != Class::Core || self.start_delay_s(c) > 0.0 {
                continue;
            }
            let r = self.comps[c].request;
            // Records a failure only while nothing is tentatively reserved.
            let found = if self.unfit.known_unfit(&r, &self.tree) {
                None
            } else {
                self.tree.find(&r, self.cfg.placement)
            };
            match found {
                Some(h) => {
                    if !saved.iter().any(|(sh, _)| *sh == h) {
                        saved.push((h, self.hosts[h].alloc));
                    }
                    self.hosts[h].alloc = self.hosts[h].alloc.add(&r);
                    let free = self.host_free(h);
                    self.tree.set(h, free);
                    placed.push((c, h));
                }
                None => {
                    if placed.is_empty() {
                        // Nothing tentative yet: a failure of the real state.
                        self.unfit.record(r);
                    }
                    ok = false;
                    break;
                }
            }
        }
        for &(h, alloc) in saved.iter().rev() {
            self.hosts[h].alloc = alloc;
            let free = self.host_free(h);
            self.tree.set(h, free);
        }
        (self.free_pos_cpu, self.free_pos_mem) = saved_pos;
        if !ok {
            return false;
        }
        let app = &mut self.apps[a];
        app.state = AState::Running;
        app.queued_s += (self.now - app.queued_since).max(0.0);
        for c in first..first + n {
            if self.comps[c].state != CState::Idle {
                continue;
            }
            let delay = self.start_delay_s(c);
            if delay > 0.0 {
                let inst = self.comps[c].inst;
                self.push(
                    self.now + delay,
                    EvKind::Submit {
                        comp: c as u32,
                        inst,
                    },
                );
            } else if self.comps[c].class == Class::Elastic {
                self.comps[c].state = CState::Pending;
                self.apps[a].pending.push(c as u32);
            }
        }
        for (c, h) in placed {
            self.start(c, h);
            if self.apps[a].state != AState::Running {
                // The host OOM killer crashed it while starting (optimistic
                // overcommit); it is queued again.
                break;
            }
        }
        true
    }

    /// Seconds after its application's admission at which component `c`
    /// is submitted (the trace's start delay; 0 when not a finite
    /// positive number).
    pub(super) fn start_delay_s(&self, c: usize) -> f64 {
        let comp = &self.comps[c];
        let d = self.wl.apps[comp.app as usize].components[comp.spec as usize].start_delay_s;
        if d.is_finite() && d > 0.0 {
            d
        } else {
            0.0
        }
    }

    /// A delayed component's submission: it waits for room like a pending
    /// elastic one (core or not), unless its application was reset since.
    pub(super) fn on_submit(&mut self, c: usize, inst: u32) {
        let a = self.comps[c].app as usize;
        if self.comps[c].inst != inst
            || self.comps[c].state != CState::Idle
            || self.apps[a].state != AState::Running
        {
            return;
        }
        self.comps[c].state = CState::Pending;
        self.apps[a].pending.push(c as u32);
        let key = self.apps[a].key;
        self.elastic_wait.insert(key);
        self.dirty = true;
    }

    /// A host for a component needing `r` (None when none fits); remembers
    /// failures so that equal or larger requests skip the tree search until
    /// room appears.
    pub(super) fn find_host(&mut self, r: &Resources) -> Option<usize> {
        if self.unfit.known_unfit(r, &self.tree) {
            return None;
        }
        let found = self.tree.find(r, self.cfg.placement);
        if found.is_none() {
            self.unfit.record(*r);
        }
        found
    }

    /// Places the pending elastic components of running app `a` that fit.
    pub(super) fn place_pending(&mut self, a: usize) {
        if self.apps[a].state != AState::Running {
            return;
        }
        let pending = std::mem::take(&mut self.apps[a].pending);
        let mut left = Vec::with_capacity(pending.len());
        for c in pending {
            let c = c as usize;
            if self.comps[c].state != CState::Pending {
                continue;
            }
            let r = self.comps[c].request;
            match self.find_host(&r) {
                Some(h) => self.start(c, h),
                None => left.push(c as u32),
            }
            if self.apps[a].state != AState::Running {
                // Starting a component triggered the host OOM killer and
                // crashed this application.
                return;
            }
        }
        let key = self.apps[a].key;
        if left.is_empty() {
            self.elastic_wait.remove(&key);
        } else {
            self.elastic_wait.insert(key);
        }
        self.apps[a].pending = left;
    }
}

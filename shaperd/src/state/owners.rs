//! Which agent reports each container (QA C12). Container ids are random
//! 256-bit values, so one reported by two agents is two agents on one host
//! or a report naming another node's container: the agent that reported it
//! first keeps it, and the other's copy is frozen in the view (see
//! [`super::RoundInput::duplicates`]). Kept up to date as reports arrive,
//! so a round does not hash every container.

use crate::protocol::ReportRequest;
use std::collections::hash_map::{Entry, RandomState};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

/// The reporting agent of every container on record, by a keyed hash of
/// its id (SipHash with this process's random keys: a report cannot be
/// crafted to collide with a container it does not know).
#[derive(Debug, Default)]
pub(super) struct Owners {
    by_id: HashMap<u64, Arc<str>>,
    keys: RandomState,
}

/// A component of a report that another agent reported first: its index in
/// the report and that agent.
pub(super) type Taken = (u32, Arc<str>);

impl Owners {
    fn key(&self, container_id: &str) -> u64 {
        self.keys.hash_one(container_id)
    }

    /// Replaces `agent`'s containers of `old` (its previous report) with
    /// those of `new`; returns `new`'s components that another agent holds,
    /// in report order.
    pub(super) fn replace(
        &mut self,
        agent: &Arc<str>,
        old: Option<&ReportRequest>,
        new: &ReportRequest,
    ) -> Vec<Taken> {
        if let Some(old) = old {
            self.remove(agent, old);
        }
        let mut taken = Vec::new();
        for (i, c) in new.components.iter().enumerate() {
            match self
                .by_id
                .entry(self.keys.hash_one(c.container_id.as_str()))
            {
                Entry::Vacant(v) => {
                    v.insert(agent.clone());
                }
                Entry::Occupied(o) if **o.get() != **agent => {
                    taken.push((i as u32, o.get().clone()));
                }
                Entry::Occupied(_) => {}
            }
        }
        taken
    }

    /// Releases the containers of `report` that `agent` holds.
    pub(super) fn remove(&mut self, agent: &Arc<str>, report: &ReportRequest) {
        for c in &report.components {
            let k = self.key(&c.container_id);
            if self.by_id.get(&k).is_some_and(|a| **a == **agent) {
                self.by_id.remove(&k);
            }
        }
    }

    pub(super) fn clear(&mut self) {
        self.by_id.clear();
    }
}

//! Which agent reports each container (QA C12). Container ids are random
//! 256-bit values, so one reported by two agents is two agents on one host
//! or a report naming another node's container: the agent that reported it
//! first keeps it, and the other's copy is frozen in the view (see
//! [`super::RoundInput::duplicates`]). Kept up to date as reports arrive,
//! so a round does not hash every container.

use crate::protocol::ReportRequest;
use std::collections::hash_map::{Entry, RandomState};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::Arc;

/// The reporting agent of every container on record, by a keyed hash of
/// its id (SipHash with this process's random keys: a report cannot be
/// crafted to collide with a container it does not know).
#[derive(Debug, Default)]
pub(super) struct Owners {
    by_id: HashMap<u64, Arc<str>, Keyed>,
    /// The keys of each agent's last report, in report order: a report
    /// hashes its ids once, and one like the last removes nothing.
    held: HashMap<Arc<str>, Vec<u64>>,
    keys: RandomState,
}

/// The keys are already keyed hashes: a map of them hashes nothing again.
type Keyed = BuildHasherDefault<KeyHasher>;

#[derive(Debug, Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here (`write_u64`); any other input is
        // folded in, so the hasher stays correct if that ever changes.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

/// A component of a report that another agent reported first: its index in
/// the report and that agent.
pub(super) type Taken = (u32, Arc<str>);

impl Owners {
    /// Records `agent`'s containers of `new` in place of its last report's;
    /// returns `new`'s components that another agent holds, in report
    /// order.
    pub(super) fn replace(&mut self, agent: &Arc<str>, new: &ReportRequest) -> Vec<Taken> {
        let keys: Vec<u64> = new
            .components
            .iter()
            .map(|c| self.keys.hash_one(c.container_id.as_str()))
            .collect();
        if let Some(old) = self.held.remove(agent) {
            if old != keys {
                let kept: HashSet<u64, Keyed> = keys.iter().copied().collect();
                let left = old.into_iter().filter(|k| !kept.contains(k));
                self.release(agent, left);
            }
        }
        let mut taken = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            match self.by_id.entry(k) {
                Entry::Vacant(v) => {
                    v.insert(agent.clone());
                }
                Entry::Occupied(o) if **o.get() != **agent => {
                    taken.push((i as u32, o.get().clone()));
                }
                Entry::Occupied(_) => {}
            }
        }
        self.held.insert(agent.clone(), keys);
        taken
    }

    /// Releases every container `agent` holds (it is forgotten or revoked).
    pub(super) fn remove(&mut self, agent: &Arc<str>) {
        if let Some(old) = self.held.remove(agent) {
            self.release(agent, old.into_iter());
        }
    }

    fn release(&mut self, agent: &Arc<str>, keys: impl Iterator<Item = u64>) {
        for k in keys {
            if self.by_id.get(&k).is_some_and(|a| **a == **agent) {
                self.by_id.remove(&k);
            }
        }
    }

    pub(super) fn clear(&mut self) {
        self.by_id.clear();
        self.held.clear();
    }
}

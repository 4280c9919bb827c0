//! The view builder: the one place where observed components become the
//! [`ClusterView`] that `decide()` reads.
//!
//! Callers push each running component with its application key and what
//! they know of the application; the builder groups components into
//! applications and applies the view rules:
//! - an application's submission time is the earliest of its components'
//!   known submission times, or else of their start times;
//! - its priority, failure count and expected remaining time are the
//!   largest reported by any of its components;
//! - a component's OOM floor ([`OomFloor`]) raises its memory usage while
//!   it holds (up to its ceiling);
//! - a component whose work done is unknown (not finite) has done its time
//!   alive.
//!
//! Applications appear in key order, components in push order.
//!
//! A caller that builds a view every round can hand the builder the
//! previous round's view ([`ViewBuilder::reusing`]): its host, application
//! and component lists are emptied and filled again, so a large view's
//! memory stays with the caller between rounds instead of going back to
//! the allocator and being faulted in again. The view built is the same.

use crate::model::{AppId, Application, ClusterView, Component, Host, HostId, Resources};
use crate::oom::OomFloor;
use std::collections::BTreeMap;

/// What a caller knows about a component's application.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AppFacts {
    pub id: AppId,
    /// Submission time; `None` = the component's start time.
    pub submitted_s: Option<f64>,
    pub priority: i32,
    pub failures: u32,
    /// Expected remaining run time (SJF key), when known.
    pub expected_remaining_s: Option<f64>,
    /// Its tenant ([`crate::Application::tenant`]; 0 outside the central
    /// shaper).
    pub tenant: u32,
}

/// Builds one round's [`ClusterView`].
#[derive(Debug)]
pub struct ViewBuilder<K> {
    now_s: f64,
    index: BTreeMap<K, usize>,
    /// `apps[..live]` are this view's applications, in push order; the
    /// rest are an earlier view's, whose component lists are reused.
    apps: Vec<Application>,
    live: usize,
    hosts: Vec<Host>,
}

/// A list kept for reuse is shrunk when its capacity is past this many
/// times its length (plus a few): [`shrink_spare`].
pub const SPARE_CAPACITY_FACTOR: usize = 2;

/// Shrinks a list kept from one round to the next when it holds far less
/// than its capacity, so that the memory held between rounds stays within
/// about twice what the last round used, after a round much larger than
/// the ones that follow.
pub fn shrink_spare<T>(v: &mut Vec<T>) {
    if v.capacity() > SPARE_CAPACITY_FACTOR * v.len() + 8 {
        v.shrink_to(v.len());
    }
}

impl<K: Ord> ViewBuilder<K> {
    pub fn new(now_s: f64) -> Self {
        Self::reusing(now_s, ClusterView::default())
    }

    /// A builder that fills `old`'s lists again (see the module docs):
    /// the view built is the one [`ViewBuilder::new`] would build.
    pub fn reusing(now_s: f64, old: ClusterView) -> Self {
        let ClusterView { mut hosts, apps } = old;
        hosts.clear();
        Self {
            now_s,
            index: BTreeMap::new(),
            apps,
            live: 0,
            hosts,
        }
    }

    /// Adds a host.
    pub fn host(&mut self, id: HostId, capacity: Resources) {
        self.hosts.push(Host { id, capacity });
    }

    /// Adds a running component of application `app`.
    pub fn component(&mut self, app: K, facts: AppFacts, mut c: Component, oom: Option<&OomFloor>) {
        if let Some(f) = oom {
            f.apply(self.now_s, &mut c);
        }
        if !c.work_done_s.is_finite() {
            c.work_done_s = (self.now_s - c.started_s).max(0.0);
        }
        let submitted = facts.submitted_s.unwrap_or(c.started_s);
        let i = match self.index.get(&app) {
            Some(&i) => i,
            None => {
                let i = self.live;
                self.index.insert(app, i);
                let fresh = Application {
                    id: facts.id,
                    submitted_s: submitted,
                    priority: facts.priority,
                    failures: facts.failures,
                    expected_remaining_s: facts.expected_remaining_s,
                    tenant: facts.tenant,
                    components: Vec::new(),
                };
                match self.apps.get_mut(i) {
                    Some(old) => {
                        let mut components = std::mem::take(&mut old.components);
                        components.clear();
                        *old = Application {
                            components,
                            ..fresh
                        };
                    }
                    None => self.apps.push(fresh),
                }
                self.live += 1;
                i
            }
        };
        let a = &mut self.apps[i];
        a.submitted_s = a.submitted_s.min(submitted);
        a.priority = a.priority.max(facts.priority);
        a.failures = a.failures.max(facts.failures);
        a.expected_remaining_s = match (a.expected_remaining_s, facts.expected_remaining_s) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        a.components.push(c);
    }

    /// The view: hosts in push order, applications in key order.
    pub fn build(self) -> ClusterView {
        let Self {
            index,
            mut apps,
            live,
            hosts,
            ..
        } = self;
        apps.truncate(live);
        shrink_spare(&mut apps);
        for a in &mut apps {
            shrink_spare(&mut a.components);
        }
        // Into key order in place: `rank[i]` is where push-order
        // application `i` goes; each swap puts one application where it
        // belongs.
        let mut rank = vec![0usize; live];
        for (r, i) in index.into_values().enumerate() {
            rank[i] = r;
        }
        for i in 0..live {
            while rank[i] != i {
                let r = rank[i];
                apps.swap(i, r);
                rank.swap(i, r);
            }
        }
        ClusterView { hosts, apps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Class, ComponentId};

    fn comp(id: u64, started_s: f64, mem_use: f64) -> Component {
        Component {
            id: ComponentId(id),
            class: Class::Core,
            host: HostId(0),
            request: Resources::new(1.0, 1e9),
            started_s,
            allocation: Resources::new(1.0, 1e9),
            usage: Resources::new(0.1, mem_use),
            forecast: None,
            protected: false,
            work_done_s: f64::NAN,
            restarts_alone: false,
            mem_floor_bytes: 0.0,
            oom_floor_bytes: 0.0,
        }
    }

    fn facts(id: u64, priority: i32, failures: u32) -> AppFacts {
        AppFacts {
            id: AppId(id),
            submitted_s: None,
            priority,
            failures,
            expected_remaining_s: None,
            tenant: 0,
        }
    }

    #[test]
    fn groups_and_merges() {
        let mut b = ViewBuilder::new(1000.0);
        b.host(HostId(0), Resources::new(4.0, 8e9));
        b.component("web", facts(1, 0, 1), comp(1, 300.0, 1e8), None);
        b.component("db", facts(2, 5, 0), comp(2, 100.0, 1e8), None);
        b.component("web", facts(1, 3, 2), comp(3, 200.0, 1e8), None);
        let v = b.build();
        assert_eq!(v.apps.len(), 2);
        assert_eq!(v.apps[0].id, AppId(2), "key order: db before web");
        let web = &v.apps[1];
        assert_eq!(web.submitted_s, 200.0);
        assert_eq!(web.priority, 3);
        assert_eq!(web.failures, 2);
        assert_eq!(web.components.len(), 2);
        assert_eq!(web.components[0].work_done_s, 700.0);
    }

    #[test]
    fn oom_floor_holds_up_to_the_request_while_it_holds() {
        let floor = OomFloor {
            mem_bytes: 0.8e9,
            until_s: 1000.0,
            max_growth: 1.0,
        };
        let mut b = ViewBuilder::new(1000.0);
        b.component(0u32, facts(0, 0, 0), comp(1, 0.0, 1e8), Some(&floor));
        let v = b.build();
        let c = &v.apps[0].components[0];
        assert_eq!(c.oom_floor_bytes, 0.8e9);
        assert_eq!(c.usage.mem_bytes, 1e8, "usage stays what was measured");
        // A floor past the request stops at it.
        let high = OomFloor {
            mem_bytes: 2e9,
            ..floor
        };
        let mut b = ViewBuilder::new(1000.0);
        b.component(0u32, facts(0, 0, 0), comp(1, 0.0, 1e8), Some(&high));
        let v = b.build();
        assert_eq!(v.apps[0].components[0].oom_floor_bytes, 1e9);
        let mut b = ViewBuilder::new(1000.5);
        b.component(0u32, facts(0, 0, 0), comp(1, 0.0, 1e8), Some(&floor));
        assert_eq!(b.build().apps[0].components[0].oom_floor_bytes, 0.0);
    }

    /// Builds a view of `pushes` (application key, start time), reusing
    /// `old` when given.
    fn view_of(pushes: &[(u8, u16)], old: Option<ClusterView>) -> ClusterView {
        let mut b = match old {
            Some(old) => ViewBuilder::reusing(1000.0, old),
            None => ViewBuilder::new(1000.0),
        };
        b.host(HostId(0), Resources::new(4.0, 8e9));
        for (k, &(app, start)) in pushes.iter().enumerate() {
            let f = facts(u64::from(app), i32::from(app % 3), u32::from(app % 2));
            b.component(app, f, comp(k as u64, f64::from(start), 1e8), None);
        }
        b.build()
    }

    proptest::proptest! {
        /// A view built on an earlier view's memory is the view built
        /// afresh, whatever the earlier view held.
        #[test]
        fn reusing_an_earlier_view_builds_the_same_view(
            before in proptest::collection::vec((0u8..12, 0u16..900), 0..60),
            now in proptest::collection::vec((0u8..12, 0u16..900), 0..60),
        ) {
            let old = view_of(&before, None);
            proptest::prop_assert_eq!(view_of(&now, Some(old)), view_of(&now, None));
        }
    }

    #[test]
    fn a_reused_component_list_much_longer_than_needed_is_shrunk() {
        let big: Vec<(u8, u16)> = (0..1000).map(|_| (0, 0)).collect();
        let v = view_of(&[(0, 0)], Some(view_of(&big, None)));
        assert_eq!(v.apps[0].components.len(), 1);
        assert!(v.apps[0].components.capacity() <= SPARE_CAPACITY_FACTOR + 8);
    }
}

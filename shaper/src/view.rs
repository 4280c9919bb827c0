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
    apps: Vec<Application>,
    hosts: Vec<Host>,
}

impl<K: Ord> ViewBuilder<K> {
    pub fn new(now_s: f64) -> Self {
        Self {
            now_s,
            index: BTreeMap::new(),
            apps: Vec::new(),
            hosts: Vec::new(),
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
                self.index.insert(app, self.apps.len());
                self.apps.push(Application {
                    id: facts.id,
                    submitted_s: submitted,
                    priority: facts.priority,
                    failures: facts.failures,
                    expected_remaining_s: facts.expected_remaining_s,
                    tenant: facts.tenant,
                    components: Vec::new(),
                });
                self.apps.len() - 1
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
        let mut slots: Vec<Option<Application>> = self.apps.into_iter().map(Some).collect();
        let apps = self
            .index
            .into_values()
            .filter_map(|i| slots.get_mut(i).and_then(Option::take))
            .collect();
        ClusterView {
            hosts: self.hosts,
            apps,
        }
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
}

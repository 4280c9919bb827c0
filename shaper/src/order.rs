//! The two orders of the kernel: the **scheduler order** (which application
//! comes first, for admission and for pessimistic planning) and the
//! **apply order** (in which order a plan's actions are carried out).
//!
//! Both are defined here once; `decide()`, the simulator's admission queue,
//! the node agent and the central shaper all use these.

use crate::config::SchedulerOrder;
use crate::model::{AppId, Application, ComponentId, Resources};
use crate::plan::{Action, Explanation, Plan};

/// Maps an f64 to a u64 with the same order as `f64::total_cmp`.
pub(crate) fn fkey(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// Higher priority first.
pub(crate) fn prio_desc(p: i32) -> u64 {
    (i64::from(i32::MAX) - i64::from(p)) as u64
}

/// An application's place in the scheduler order: smaller comes first.
/// Ties are broken by submission time, then by application id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SchedulerKey(u64, u64, u64);

/// The scheduler key of an application under `order`:
/// - `fifo`: submission time;
/// - `sjf`: expected remaining run time (unknown sorts last);
/// - `priority`: higher priority first.
pub fn scheduler_key(
    order: SchedulerOrder,
    submitted_s: f64,
    expected_remaining_s: Option<f64>,
    priority: i32,
    id: u64,
) -> SchedulerKey {
    let sub = fkey(submitted_s);
    let first = match order {
        SchedulerOrder::Fifo => sub,
        SchedulerOrder::Sjf => match expected_remaining_s {
            Some(r) if !r.is_nan() => fkey(r),
            _ => u64::MAX,
        },
        SchedulerOrder::Priority => prio_desc(priority),
    };
    SchedulerKey(first, sub, id)
}

/// The key of an application of a view.
pub fn app_key(app: &Application, order: SchedulerOrder) -> SchedulerKey {
    scheduler_key(
        order,
        app.submitted_s,
        app.expected_remaining_s,
        app.priority,
        app.id.0,
    )
}

/// Application indexes in scheduler order (ties: submission time, id, position).
pub(crate) fn scheduler_order(apps: &[Application], order: SchedulerOrder) -> Vec<u32> {
    let mut keys: Vec<(SchedulerKey, u32)> = apps
        .iter()
        .enumerate()
        .map(|(i, a)| (app_key(a, order), i as u32))
        .collect();
    keys.sort_unstable();
    keys.into_iter().map(|k| k.1).collect()
}

/// What to do to one component, in the apply order of its plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ComponentAction<'p> {
    /// Set its allocation (limits) from `from` to `to`.
    Resize {
        app: AppId,
        component: ComponentId,
        from: Resources,
        to: Resources,
        explanation: &'p Explanation,
    },
    /// Stop it. `whole_app`: its application is evicted (every component).
    Evict {
        app: AppId,
        component: ComponentId,
        whole_app: bool,
        explanation: &'p Explanation,
    },
}

impl ComponentAction<'_> {
    pub fn component(&self) -> ComponentId {
        match self {
            ComponentAction::Resize { component, .. }
            | ComponentAction::Evict { component, .. } => *component,
        }
    }

    pub fn explanation(&self) -> &Explanation {
        match self {
            ComponentAction::Resize { explanation, .. }
            | ComponentAction::Evict { explanation, .. } => explanation,
        }
    }

    /// The eviction of a whole application: a failure of it
    /// ([`Action::fails_application`]).
    pub fn fails_application(&self) -> bool {
        matches!(
            self,
            ComponentAction::Evict {
                whole_app: true,
                ..
            }
        )
    }
}

impl Plan {
    /// The plan as per-component actions, **in the apply order**: resizes
    /// that only shrink, then evictions (whole applications, then single
    /// components), then resizes that grow in any resource. `decide()`
    /// emits its actions in that order; this flattens application
    /// evictions into one action per component. Every caller applies
    /// actions in this order: shrinks and evictions only free room, so a
    /// growth never needs room that the plan has not freed first.
    pub fn component_actions(&self) -> impl Iterator<Item = ComponentAction<'_>> + '_ {
        self.actions.iter().flat_map(|a| {
            let v: Vec<ComponentAction<'_>> = match a {
                Action::Resize {
                    app,
                    component,
                    from,
                    to,
                    explanation,
                    ..
                } => vec![ComponentAction::Resize {
                    app: *app,
                    component: *component,
                    from: *from,
                    to: *to,
                    explanation,
                }],
                Action::EvictComponent {
                    app,
                    component,
                    explanation,
                    ..
                } => vec![ComponentAction::Evict {
                    app: *app,
                    component: *component,
                    whole_app: false,
                    explanation,
                }],
                Action::EvictApplication {
                    app,
                    components,
                    explanation,
                } => components
                    .iter()
                    .map(|c| ComponentAction::Evict {
                        app: *app,
                        component: *c,
                        whole_app: true,
                        explanation,
                    })
                    .collect(),
            };
            v
        })
    }
}

/// The apply-order class of an action: 0 shrink, 1 eviction, 2 growth.
/// A plan from `decide()` is sorted by it (stable).
pub fn apply_class(a: &Action) -> u8 {
    match a {
        Action::Resize { from, to, .. } => {
            if to.fits_in(from) {
                0
            } else {
                2
            }
        }
        Action::EvictApplication { .. } | Action::EvictComponent { .. } => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_order() {
        let a = scheduler_key(SchedulerOrder::Fifo, 10.0, Some(5.0), 0, 1);
        let b = scheduler_key(SchedulerOrder::Fifo, 20.0, Some(1.0), 9, 0);
        assert!(a < b);
        let a = scheduler_key(SchedulerOrder::Sjf, 10.0, Some(5.0), 0, 1);
        let b = scheduler_key(SchedulerOrder::Sjf, 20.0, Some(1.0), 9, 0);
        assert!(b < a);
        let unknown = scheduler_key(SchedulerOrder::Sjf, 0.0, None, 0, 0);
        assert!(a < unknown);
        let a = scheduler_key(SchedulerOrder::Priority, 10.0, None, 1, 1);
        let b = scheduler_key(SchedulerOrder::Priority, 20.0, None, 9, 0);
        assert!(b < a);
        // ties: submission time, then id
        let a = scheduler_key(SchedulerOrder::Priority, 10.0, None, 1, 7);
        let b = scheduler_key(SchedulerOrder::Priority, 10.0, None, 1, 3);
        assert!(b < a);
    }
}

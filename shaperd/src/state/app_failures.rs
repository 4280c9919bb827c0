//! The failure counts of applications (whole-application evictions that
//! agents acknowledged), kept bounded. A count matters while its
//! application runs: at `failure_limit` the application is no longer
//! shaped. An application that left every agent's report keeps its
//! count for [`ABSENT_RETENTION_S`], so that one that comes back (its
//! containers restarted) still carries it; beyond that, or beyond
//! [`MAX_ABSENT_PER_TENANT`] absent applications of one tenant (the
//! oldest seen first), the count is forgotten, in the store too. Without
//! this, an agent that reports new labels and acknowledges their
//! evictions grows the table (and the status, and etcd) without bound.

use super::ShaperState;

/// How long the count of an application that no agent reports is kept.
pub const ABSENT_RETENTION_S: f64 = 7.0 * 86_400.0;

/// Largest number of absent applications with a count, per tenant.
pub const MAX_ABSENT_PER_TENANT: usize = 10_000;

impl ShaperState {
    /// After a round at `now_s` whose view held `seen` (applications with
    /// a count): forgets the counts of applications absent too long or
    /// beyond the per-tenant cap, and queues their deletion from the store.
    pub(super) fn prune_app_failures(&mut self, seen: &[String], now_s: f64) {
        for app in seen {
            self.app_seen_s.insert(app.clone(), now_s);
        }
        // Counts loaded from the store or just counted start their clock.
        for app in self.app_failures.keys() {
            if !self.app_seen_s.contains_key(app) {
                self.app_seen_s.insert(app.clone(), now_s);
            }
        }
        // (tenant, last seen, application) of each absent application
        let mut absent: Vec<(&str, f64, &String)> = self
            .app_failures
            .keys()
            .filter_map(|app| {
                let seen_s = self.app_seen_s.get(app).copied().unwrap_or(now_s);
                (seen_s < now_s).then(|| {
                    let tenant = app.split_once('/').map_or("", |(t, _)| t);
                    (tenant, seen_s, app)
                })
            })
            .collect();
        // per tenant, most recently seen first
        absent.sort_by(|a, b| a.0.cmp(b.0).then(b.1.total_cmp(&a.1)));
        let mut forget: Vec<String> = Vec::new();
        let mut rank = 0usize;
        for (i, &(tenant, seen_s, app)) in absent.iter().enumerate() {
            rank = if i > 0 && absent[i - 1].0 == tenant {
                rank + 1
            } else {
                0
            };
            if rank >= MAX_ABSENT_PER_TENANT || now_s - seen_s > ABSENT_RETENTION_S {
                forget.push(app.clone());
            }
        }
        for app in forget {
            tracing::debug!(app = %app, "failure count forgotten: application absent");
            self.app_failures.remove(&app);
            self.app_seen_s.remove(&app);
            // a count of 0 deletes the stored one
            self.writes.app_failures.push((app, 0));
        }
        let counted = &self.app_failures;
        self.app_seen_s.retain(|app, _| counted.contains_key(app));
    }
}

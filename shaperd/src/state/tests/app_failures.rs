//! The failure table stays bounded: absent applications' counts are
//! forgotten after the retention or beyond the per-tenant cap, in the
//! store too; a present application's count is kept.

use super::*;
use crate::state::app_failures::{ABSENT_RETENTION_S, MAX_ABSENT_PER_TENANT};

/// Agent a reports application "kept" of tenant t.
fn report_kept(s: &mut ShaperState, now_s: f64) {
    let kept = comp("c1", "kept", Class::Core, 4.0 * GB, 1.0 * GB, 0.0);
    s.report(report("a", 10.0 * GB, vec![kept]), now_s)
        .expect("ok");
}

#[test]
fn absent_applications_counts_are_capped_and_expire() {
    let mut s = state(0.0);
    report_kept(&mut s, 11.0);
    // What an agent that acknowledges the evictions of ever new labels
    // leaves behind, plus one present application and another tenant's.
    s.app_failures.insert("t/kept".into(), 2);
    for i in 0..MAX_ABSENT_PER_TENANT + 50 {
        s.app_failures.insert(format!("t/gone-{i}"), 1);
    }
    s.app_failures.insert("u/other".into(), 1);
    s.plan_round(12.0).expect("round");
    // Seen for the first time: nothing is absent yet.
    assert_eq!(s.app_failures.len(), MAX_ABSENT_PER_TENANT + 52);
    report_kept(&mut s, 21.0);
    s.take_writes();
    s.plan_round(22.0).expect("round");
    // Tenant t keeps the cap of absent ones plus its present one; u is
    // not touched by t's.
    let t_absent = s
        .app_failures
        .keys()
        .filter(|k| k.starts_with("t/gone-"))
        .count();
    assert_eq!(t_absent, MAX_ABSENT_PER_TENANT);
    assert_eq!(s.app_failures.get("t/kept"), Some(&2));
    assert_eq!(s.app_failures.get("u/other"), Some(&1));
    let deleted: Vec<_> = s
        .take_writes()
        .app_failures
        .into_iter()
        .filter(|(_, n)| *n == 0)
        .collect();
    assert_eq!(deleted.len(), 50);
    // After the retention only the present application's count is left.
    let later = 22.0 + ABSENT_RETENTION_S + 10.0;
    report_kept(&mut s, later - 1.0);
    s.plan_round(later).expect("round");
    assert_eq!(s.app_failures.keys().collect::<Vec<_>>(), vec!["t/kept"]);
    assert_eq!(s.app_seen_s.len(), 1);
}

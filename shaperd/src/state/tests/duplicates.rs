//! A container reported by two agents (QA C12): two agents on one host, or
//! a report that names another node's container.

use super::*;

/// Agents "b" and "a" both report container "c1"; "b" reported it first
/// and keeps it. "a"'s copy is in the view frozen at its allocation and
/// protected, so "a" gets no action for it, its host still counts it, and
/// the round counts the duplicate. Once "b" no longer reports it, "a"'s
/// next report takes it over.
#[test]
fn a_container_reported_twice_is_planned_once() {
    let mut s = state(0.0);
    let c1 = comp("c1", "web", Class::Core, 4.0 * GB, 1.0 * GB, 0.0);
    let own = comp("c2", "db", Class::Core, 4.0 * GB, 1.0 * GB, 0.0);
    s.report(report("b", 10.0 * GB, vec![c1.clone()]), 11.0)
        .expect("ok");
    s.report(report("a", 10.0 * GB, vec![c1.clone(), own.clone()]), 11.0)
        .expect("ok");
    let input = s.snapshot(12.0).expect("round");
    assert_eq!(input.duplicates.len(), 1, "{:?}", input.duplicates);
    let d = &input.duplicates[0];
    assert_eq!(
        (d.container_id.as_str(), &*d.first, &*d.again),
        ("c1", "b", "a")
    );
    let copies: Vec<&shaper::Component> = input
        .view
        .apps
        .iter()
        .flat_map(|a| &a.components)
        .filter(|c| c.request.mem_bytes == 4.0 * GB && c.host == shaper::HostId(0))
        .collect();
    assert_eq!(copies.len(), 2, "a's two components");
    let frozen = copies.iter().filter(|c| c.protected).count();
    assert_eq!(frozen, 1, "a's copy of c1 is frozen");
    let plan = shaper::decide(&input.view, 12.0, s.shaper_config());
    let out = s.install(&input, &plan);
    assert_eq!(out.duplicates, 1);
    let resized = |agent: &str, s: &mut ShaperState| -> Vec<String> {
        s.report(report(agent, 10.0 * GB, vec![]), 13.0)
            .expect("ok")
            .actions
            .iter()
            .filter_map(|w| match &w.action {
                ActionKind::Resize { container_id, .. } => Some(container_id.clone()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(resized("b", &mut s), vec!["c1".to_string()]);
    assert_eq!(resized("a", &mut s), vec!["c2".to_string()]);
    // "b" stops reporting c1 (its report above was empty): "a" takes it.
    s.report(report("a", 10.0 * GB, vec![c1, own]), 14.0)
        .expect("ok");
    let input = s.snapshot(15.0).expect("round");
    assert!(input.duplicates.is_empty(), "{:?}", input.duplicates);
}

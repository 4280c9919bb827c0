//! Tenants do not reach each other through the kernel's rules or the
//! actions' explanations (QA pass of cluster mode, C2 and C3).

use super::*;
use shaper::Reason;

/// `report` as agent `agent` of tenant `tenant`.
fn report_in(
    s: &mut ShaperState,
    tenant: &str,
    req: ReportRequest,
    now_s: f64,
) -> Result<ReportResponse, Refusal> {
    let mut req = req;
    req.boot_id = 1;
    req.seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let w = who(&req.agent_id, tenant);
    s.report_as(&w, req, now_s)
}

/// The memory (bytes) team-a's container `a1` is resized to in the round
/// at 12 s, after team-a's node and optionally team-b's reported.
fn a1_target(with_b: bool) -> f64 {
    let mut s = state(0.0);
    let a1 = comp("a1", "web", Class::Core, 256.0 * MIB, 60.0 * MIB, 0.0);
    let a2 = comp("a2", "db", Class::Core, 2.0 * GB, 1.0 * GB, 0.0);
    report_in(
        &mut s,
        "team-a",
        report("na", 16.0 * GB, vec![a1, a2]),
        11.0,
    )
    .expect("ok");
    if with_b {
        // a self-declared 2 TiB application on a 4 TiB host
        let huge = comp("b1", "big", Class::Core, 2e12, 1e12, 0.0);
        report_in(&mut s, "team-b", report("nb", 4e12, vec![huge]), 11.0).expect("ok");
    }
    s.plan_round(12.0).expect("round");
    let r = report_in(&mut s, "team-a", report("na", 16.0 * GB, vec![]), 13.0).expect("ok");
    r.actions
        .iter()
        .find_map(|w| match &w.action {
            ActionKind::Resize {
                container_id, to, ..
            } if container_id == "a1" => Some(to.mem_bytes),
            _ => None,
        })
        .expect("a1 is resized")
}

const MIB: f64 = 1024.0 * 1024.0;

/// QA C2: the application-memory rule's relative reference is each
/// tenant's own; another tenant's 2 TiB application no longer raises
/// team-a's buffers (it grew a 256 MiB container to its request).
#[test]
fn another_tenants_applications_do_not_change_a_tenants_buffers() {
    let alone = a1_target(false);
    assert!(alone < 256.0 * MIB, "cut on its own: {} MiB", alone / MIB);
    assert_eq!(a1_target(true), alone);
}

/// QA C3: a node whose component is evicted with its application, because
/// the application's core component did not fit on another node, is told
/// only that: not that component's sizing, the other host's need and free
/// room, nor their indices in the view. The node of the core component
/// gets the whole explanation.
#[test]
fn an_application_eviction_tells_other_nodes_nothing_of_the_blocking_node() {
    let mut s = state(0.0);
    report_early_and_late(&mut s, 11.0);
    let out = s.plan_round(12.0).expect("round");
    assert_eq!(out.evict_application, 2, "{out:?}");
    let evict = |r: &ReportResponse| {
        r.actions
            .iter()
            .find(|w| {
                matches!(
                    w.action,
                    ActionKind::Evict {
                        whole_app: true,
                        ..
                    }
                )
            })
            .expect("evicted")
            .clone()
    };
    // node a holds only the elastic component: the core is node b's
    let mut req = report("a", 10.0 * GB, vec![]);
    req.mentions = true;
    let on_a = evict(&s.report(req, 13.0).expect("ok"));
    let e = &on_a.explanation;
    assert_eq!(e.basis, shaper::Basis::Withheld);
    assert!(e.binding.is_none(), "{e:?}");
    assert_eq!((e.mem.target, e.cpu.target), (0.0, 0.0));
    assert!(matches!(
        e.reason,
        Reason::CoreDidNotFit { component } if component.0 == shaper::WITHHELD_ID
    ));
    let line = on_a.summary_named(&|_| None, "a");
    assert!(line.contains("(another node's) did not fit"), "{line}");
    assert!(!line.contains("MiB") && !line.contains("GiB"), "{line}");
    // node b, where the core did not fit, is told why in full
    let on_b = evict(&s.report(report("b", 10.0 * GB, vec![]), 13.0).expect("ok"));
    assert_ne!(on_b.explanation.basis, shaper::Basis::Withheld);
    assert!(on_b.explanation.binding.is_some());
}

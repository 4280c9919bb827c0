use super::*;
use crate::protocol::{ActionKind, ComponentReport};
use crate::tests::component as comp;
use proptest::prelude::*;
use shaper::{Class, ComponentAction};
use std::sync::atomic::{AtomicU64, Ordering};

mod app_failures;
mod duplicates;
mod failover;
mod memory;
mod tenants;

const GB: f64 = 1e9;

static SEQ: AtomicU64 = AtomicU64::new(1);

fn who(agent: &str, tenant: &str) -> Identity {
    Identity {
        agent_id: Arc::from(agent),
        tenant: Arc::from(tenant),
        key_id: Arc::from("0000000000000000"),
        apps: Default::default(),
    }
}

/// Reports as the agent the request names, in tenant `t`, with a fresh
/// sequence number.
trait ReportAsOwner {
    fn report(&mut self, req: ReportRequest, now_s: f64) -> Result<ReportResponse, Refusal>;
}

impl ReportAsOwner for ShaperState {
    fn report(&mut self, mut req: ReportRequest, now_s: f64) -> Result<ReportResponse, Refusal> {
        req.boot_id = 1;
        req.seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let w = who(&req.agent_id, "t");
        self.report_as(&w, req, now_s)
    }
}

fn state(now_s: f64) -> ShaperState {
    let cfg = StateConfig {
        interval_s: 10.0,
        stale_after_intervals: 3,
        forget_after_intervals: 10,
        warmup_intervals: 1,
        early_round_gap_s: 1.0,
        max_components_per_report: 1000,
        limits: ServerLimits::default(),
    };
    let shaper = ShaperConfig {
        grace_period_s: 0.0,
        min_relative_change: 0.0,
        ..ShaperConfig::default()
    };
    ShaperState::new(cfg, shaper, "e1", now_s)
}

/// Host b holds app "early" (submitted first, 7.5 of 8 GB used) and the
/// core of app "late" (submitted at 50 s); host a holds late's elastic
/// component. Both hosts have 10 GB: late's core cannot fit.
fn report_early_and_late(s: &mut ShaperState, now_s: f64) {
    let mut early = comp("e1", "early", Class::Core, 8.0 * GB, 7.5 * GB, 0.0);
    early.app_submitted_s = Some(0.0);
    let mut late_core = comp("l1", "late", Class::Core, 4.0 * GB, 3.0 * GB, 50.0);
    late_core.app_submitted_s = Some(50.0);
    let mut late_el = comp("l2", "late", Class::Elastic, 2.0 * GB, 1.0 * GB, 50.0);
    late_el.app_submitted_s = Some(50.0);
    s.report(report("b", 10.0 * GB, vec![early, late_core]), now_s)
        .expect("ok");
    s.report(report("a", 10.0 * GB, vec![late_el]), now_s)
        .expect("ok");
}

fn report(agent: &str, mem_capacity: f64, components: Vec<ComponentReport>) -> ReportRequest {
    ReportRequest {
        agent_id: agent.into(),
        boot_id: 1,
        seq: 0,
        capacity: Resources::new(64.0, mem_capacity),
        components,
        acks: vec![],
        mentions: false,
        early: false,
    }
}

#[test]
fn warmup_then_rounds() {
    let mut s = state(0.0);
    assert_eq!(s.plan_round(5.0).err(), Some(SkipReason::Warmup));
    assert_eq!(s.plan_round(10.0).err(), Some(SkipReason::NoAgents));
    s.report(
        report(
            "a",
            10.0 * GB,
            vec![comp("c1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
        ),
        11.0,
    )
    .expect("ok");
    let out = s.plan_round(12.0).expect("round");
    assert_eq!(out.round, 1);
    assert_eq!(out.agents_live, 1);
    assert_eq!(out.components, 1);
    // Shrunk towards usage: one resize handed to agent a.
    assert_eq!(out.resize, 1);
    let resp = s
        .report(
            report(
                "a",
                10.0 * GB,
                vec![comp("c1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
            ),
            13.0,
        )
        .expect("ok");
    assert_eq!(resp.round, 1);
    assert_eq!(resp.actions.len(), 1);
    match &resp.actions[0].action {
        ActionKind::Resize {
            container_id, to, ..
        } => {
            assert_eq!(container_id, "c1");
            assert!(to.mem_bytes < 4.0 * GB && to.mem_bytes >= 1.0 * GB);
        }
        other => panic!("expected a resize, got {other:?}"),
    }
}

#[test]
fn agent_becomes_stale_after_n_intervals_and_gets_no_actions() {
    let mut s = state(0.0);
    s.report(
        report(
            "a",
            10.0 * GB,
            vec![comp("a1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
        ),
        1.0,
    )
    .expect("ok");
    s.report(
        report(
            "b",
            10.0 * GB,
            vec![comp("b1", "y", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
        ),
        1.0,
    )
    .expect("ok");
    // 3 intervals = 30 s: at 31.0 both are exactly at the limit (not stale).
    assert_eq!(s.agent_counts(31.0), (2, 0));
    s.report(
        report(
            "b",
            10.0 * GB,
            vec![comp("b1", "y", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
        ),
        31.0,
    )
    .expect("ok");
    assert_eq!(
        s.agent_counts(31.5),
        (1, 1),
        "a silent for 30.5 s > 3 x 10 s"
    );
    let out = s.plan_round(31.5).expect("round");
    assert_eq!(out.agents_stale, 1);
    assert_eq!(out.components, 2, "the stale host's components still count");
    assert_eq!(
        out.dropped_for_stale, 0,
        "stale components are frozen: decide plans no change for them"
    );
    assert_eq!(out.resize, 1, "only b's component is resized");
    let st = s.status(31.5);
    let a = st.agents.iter().find(|x| x.agent_id == "a").expect("a");
    assert!(a.stale);
    assert_eq!(a.pending_actions, 0);
    // a comes back: live again, and planned for.
    s.report(
        report(
            "a",
            10.0 * GB,
            vec![comp("a1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
        ),
        35.0,
    )
    .expect("ok");
    assert_eq!(s.agent_counts(35.0), (2, 0));
    let out = s.plan_round(36.0).expect("round");
    assert_eq!(out.resize, 2);
}

#[test]
fn stale_components_keep_their_last_allocation_in_the_view() {
    let mut s = state(0.0);
    let mut c = comp("a1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0);
    c.allocation = Resources::new(0.5, 3.0 * GB);
    s.report(report("a", 10.0 * GB, vec![c]), 1.0).expect("ok");
    let input = s.snapshot(100.0).expect("round");
    assert_eq!(input.stale_agents, vec!["a".to_string()]);
    let comp = &input.view.apps[0].components[0];
    assert_eq!(comp.allocation, Resources::new(0.5, 3.0 * GB));
    assert_eq!(comp.request, comp.allocation);
    assert!(comp.forecast.is_none());
    let plan = shaper::decide(&input.view, 100.0, s.shaper_config());
    // Whatever the plan says about it, nothing is handed out for a stale agent.
    let out = s.install(&input, &plan);
    assert_eq!(out.resize + out.evict_component + out.evict_application, 0);
}

#[test]
fn silent_agents_are_forgotten_after_the_limit() {
    let mut s = state(0.0);
    s.report(report("a", 10.0 * GB, vec![]), 1.0).expect("ok");
    s.report(report("b", 10.0 * GB, vec![]), 95.0).expect("ok");
    s.plan_round(100.0).expect("round");
    assert_eq!(s.status(100.0).agents.len(), 2);
    s.plan_round(101.5).expect("round");
    let names: Vec<String> = s
        .status(101.5)
        .agents
        .into_iter()
        .map(|a| a.agent_id)
        .collect();
    assert_eq!(
        names,
        vec!["b".to_string()],
        "a silent for 100.5 s > 10 x 10 s"
    );
}

#[test]
fn multi_host_app_is_evicted_everywhere_when_its_core_does_not_fit() {
    let mut s = state(0.0);
    // App "early" (submitted first) fills host b; app "late" has its core
    // on b and an elastic component on a: its core cannot fit, so both of
    // its components go, on both hosts.
    report_early_and_late(&mut s, 11.0);
    let out = s.plan_round(12.0).expect("round");
    assert_eq!(out.evict_application, 2, "{out:?}");
    let ra = s.report(report("a", 10.0 * GB, vec![]), 13.0).expect("ok");
    let evicted: Vec<&str> = ra
        .actions
        .iter()
        .filter_map(|w| match &w.action {
            ActionKind::Evict {
                container_id,
                whole_app: true,
            } => Some(container_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(evicted, vec!["l2"]);
    // Acking the eviction counts one failure for the application.
    let id = ra
        .actions
        .iter()
        .find(|w| matches!(w.action, ActionKind::Evict { .. }))
        .expect("evict")
        .id
        .clone();
    // The same action thrice in one request counts once, as first said.
    let ack = |outcome| Ack {
        action_id: id.clone(),
        outcome,
    };
    let failed = || AckOutcome::Failed {
        error: "later".into(),
    };
    let resp = s.ack(&AckRequest {
        agent_id: "a".into(),
        acks: vec![
            ack(AckOutcome::Applied),
            ack(AckOutcome::Applied),
            ack(failed()),
        ],
    });
    assert_eq!(
        resp,
        Ok(AckResponse {
            accepted: 1,
            unknown: 0
        })
    );
    assert_eq!(s.action_status(&id), Some(ActionStatus::Applied));
    assert_eq!(s.ack_counters().applied, 1);
    assert_eq!(s.status(13.0).app_failures.get("t/late"), Some(&1));
    // An ack from another agent for the same id is not accepted.
    let other = s.ack(&AckRequest {
        agent_id: "b".into(),
        acks: vec![Ack {
            action_id: id,
            outcome: AckOutcome::Applied,
        }],
    });
    assert_eq!(
        other,
        Ok(AckResponse {
            accepted: 0,
            unknown: 1
        })
    );
}

#[test]
fn acked_actions_are_not_redelivered_and_unacked_are_superseded() {
    let mut s = state(0.0);
    let r = || {
        report(
            "a",
            10.0 * GB,
            vec![
                comp("c1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0),
                comp("c2", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0),
            ],
        )
    };
    s.report(r(), 10.0).expect("ok");
    s.plan_round(10.0).expect("round");
    let first = s.report(r(), 11.0).expect("ok");
    assert_eq!(first.actions.len(), 2);
    let mut with_ack = r();
    with_ack.acks = vec![Ack {
        action_id: first.actions[0].id.clone(),
        outcome: AckOutcome::Applied,
    }];
    let second = s.report(with_ack, 12.0).expect("ok");
    assert_eq!(second.actions.len(), 1);
    assert_eq!(
        second.actions[0].id, first.actions[1].id,
        "the unacked one is delivered again, same id"
    );
    s.plan_round(20.0).expect("round");
    assert_eq!(
        s.action_status(&first.actions[1].id),
        Some(ActionStatus::Superseded)
    );
    assert_eq!(
        s.action_status(&first.actions[0].id),
        Some(ActionStatus::Applied)
    );
    let third = s.report(r(), 21.0).expect("ok");
    assert!(
        third.actions.iter().all(|w| w.id.0.starts_with("e1-2-")),
        "new round's ids"
    );
}

/// A commit hands back the plan it replaced once no agent holds it any
/// more, for the decider to reuse its action vector.
#[test]
fn a_replaced_plan_comes_back_once_no_agent_holds_it() {
    let mut s = state(0.0);
    let r = |agent: &str| {
        report(
            agent,
            10.0 * GB,
            vec![comp(
                &format!("{agent}1"),
                agent,
                Class::Core,
                4.0 * GB,
                1.0 * GB,
                0.0,
            )],
        )
    };
    s.report(r("a"), 10.0).expect("ok");
    s.report(r("b"), 10.0).expect("ok");
    let round = |s: &mut ShaperState, now_s: f64| {
        let input = s.snapshot(now_s).expect("round");
        let plan = shaper::decide(&input.view, now_s, s.shaper_config());
        let n = plan.actions.len();
        let (_, replaced) = s.commit_deferring_drops(input.prepare(plan));
        (n, replaced.into_plan().map(|p| p.actions.len()))
    };
    let (first, none) = round(&mut s, 10.0);
    assert_eq!(first, 2, "both components shrink");
    assert_eq!(none, None, "nothing was replaced");
    s.report(r("a"), 11.0).expect("ok");
    s.report(r("b"), 11.0).expect("ok");
    let (_, back) = round(&mut s, 20.0);
    assert_eq!(
        back,
        Some(first),
        "both agents moved on: round 1's plan is free"
    );
    // A stale agent is in the round too (its actions are dropped): round
    // 2's plan is free again after round 3.
    s.report(r("a"), 44.0).expect("ok");
    let (_, back) = round(&mut s, 45.0);
    assert!(back.is_some(), "round 2's plan is handed back");
}

#[test]
fn invalid_reports_change_nothing() {
    let mut s = state(0.0);
    let mut bad = report(
        "a",
        10.0 * GB,
        vec![comp("c1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
    );
    bad.components[0].request.mem_bytes = -1.0;
    assert!(s.report(bad, 1.0).is_err());
    assert_eq!(s.status(1.0).agents.len(), 0);
}

#[test]
fn impersonation_is_forbidden_and_changes_nothing() {
    let mut s = state(0.0);
    let victim = report(
        "a",
        10.0 * GB,
        vec![comp("a1", "x", Class::Core, 4.0 * GB, 1.0 * GB, 0.0)],
    );
    s.report(victim.clone(), 11.0).expect("ok");
    s.plan_round(12.0).expect("round");
    let before = s.status(12.0);
    let a_before = before.agents[0].clone();
    assert_eq!(a_before.pending_actions, 1);
    // Agent b (tenant t) reports as a: tiny capacity, no components.
    let mut fake = report("a", 1.0, vec![]);
    fake.boot_id = u64::MAX;
    let e = s.report_as(&who("b", "t"), fake, 13.0).expect_err("403");
    assert!(matches!(e, Refusal::Forbidden(_)), "{e}");
    // ... and tries to acknowledge a's action.
    let e = s
        .ack_as(
            &who("b", "t"),
            &AckRequest {
                agent_id: "a".into(),
                acks: vec![],
            },
        )
        .expect_err("403");
    assert!(matches!(e, Refusal::Forbidden(_)));
    let after = s.status(13.0);
    assert_eq!(after.agents.len(), 1);
    assert_eq!(
        after.agents[0], a_before,
        "capacity, pending actions unchanged"
    );
    assert_eq!(s.refusal_counters().forbidden, 2);
    // The victim still gets its pending action.
    let mut again = victim;
    again.boot_id = 1;
    again.seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let r = s.report_as(&who("a", "t"), again, 14.0).expect("ok");
    assert_eq!(r.actions.len(), 1);
}

#[test]
fn replayed_or_stale_reports_are_refused() {
    let mut s = state(0.0);
    let w = who("a", "t");
    let mut r = report("a", 10.0 * GB, vec![]);
    r.boot_id = 100;
    r.seq = 101;
    s.report_as(&w, r.clone(), 1.0).expect("ok");
    for (boot, seq) in [(100, 101), (100, 5), (99, 1000)] {
        let mut old = r.clone();
        old.boot_id = boot;
        old.seq = seq;
        old.capacity = Resources::new(1.0, 1.0);
        let e = s.report_as(&w, old, 2.0).expect_err("replay");
        assert!(matches!(e, Refusal::Replay { .. }), "{e}");
    }
    assert_eq!(s.status(2.0).agents[0].capacity, r.capacity);
    assert_eq!(s.status(2.0).agents[0].reports, 1);
    assert_eq!(s.refusal_counters().replayed, 3);
    // A new boot starts its own sequence.
    let mut next = r.clone();
    next.boot_id = 200;
    next.seq = 1;
    s.report_as(&w, next, 3.0).expect("new boot");
    // Forgetting the agent does not forget its sequence.
    s.begin_round(1000.0).ok();
    assert!(s.status(1000.0).agents.is_empty());
    let e = s.report_as(&w, r, 1001.0).expect_err("still a replay");
    assert!(matches!(e, Refusal::Replay { .. }));
}

#[test]
fn applications_are_keyed_by_tenant_and_oversized_components_are_rejected() {
    let mut s = state(0.0);
    // Tenant A's web fits its host.
    let a = report(
        "a",
        10.0 * GB,
        vec![comp("a-web", "web", Class::Core, 4.0 * GB, 3.0 * GB, 0.0)],
    );
    let mut a = a;
    a.boot_id = 1;
    s.report_as(&who("a", "tenant-a"), a.clone(), 11.0)
        .expect("a");
    // Tenant B's web: one component that cannot fit its tiny host (request
    // over capacity: rejected), two that do not fit together (B's web is
    // preempted, on B's host only).
    let mut b = report(
        "b",
        2.0 * GB,
        vec![
            comp("b-huge", "web", Class::Core, 100.0 * GB, 50.0 * GB, 10.0),
            comp("b-1", "web", Class::Core, 1.5 * GB, 1.5 * GB, 10.0),
            comp("b-2", "web", Class::Core, 1.5 * GB, 1.5 * GB, 10.0),
        ],
    );
    for c in &mut b.components {
        c.app_submitted_s = Some(10.0);
    }
    b.boot_id = 1;
    let rb = s
        .report_as(&who("b", "tenant-b"), b.clone(), 11.0)
        .expect("b");
    assert_eq!(rb.rejected.len(), 1);
    assert_eq!(rb.rejected[0].container_id, "b-huge");
    assert_eq!(s.refusal_counters().components_over_capacity, 1);
    assert_eq!(s.component_count(), 3);
    let out = s.plan_round(12.0).expect("round");
    assert_eq!(out.evict_application, 2, "{out:?}");
    a.seq = 1;
    let ra = s.report_as(&who("a", "tenant-a"), a, 13.0).expect("a");
    assert!(
        ra.actions
            .iter()
            .all(|w| !matches!(w.action, ActionKind::Evict { .. })),
        "no eviction reaches tenant A: {:?}",
        ra.actions
    );
    b.seq = 1;
    let rb = s.report_as(&who("b", "tenant-b"), b, 13.0).expect("b");
    assert!(rb
        .actions
        .iter()
        .all(|w| w.app == "tenant-b/web" && matches!(w.action, ActionKind::Evict { .. })));
    let st = s.status(13.0);
    assert_eq!(
        st.agents
            .iter()
            .find(|x| x.agent_id == "a")
            .map(|x| x.tenant.as_str()),
        Some("tenant-a")
    );
}

#[test]
fn caps_refuse_reports_with_nothing_changed() {
    let mut s = state(0.0);
    s.cfg.limits.max_agents = 2;
    s.cfg.limits.max_components_per_tenant = 3;
    let many = |agent: &str, n: usize| {
        report(
            agent,
            100.0 * GB,
            (0..n)
                .map(|i| comp(&format!("c{i}"), "x", Class::Elastic, GB, GB, 0.0))
                .collect(),
        )
    };
    s.report(many("a", 2), 1.0).expect("ok");
    let e = s.report(many("b", 2), 1.0).expect_err("tenant cap");
    assert!(
        matches!(
            e,
            Refusal::Limit {
                cap: Cap::TenantComponents,
                ..
            }
        ),
        "{e}"
    );
    s.report(many("b", 1), 1.0).expect("ok");
    let e = s.report(many("c", 0), 1.0).expect_err("agent cap");
    assert!(
        matches!(
            e,
            Refusal::Limit {
                cap: Cap::Agents,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(s.status(1.0).agents.len(), 2);
    assert_eq!(s.component_count(), 3);
    assert_eq!(s.refusal_counters().limit, [1, 1, 0, 0]);
    // Another tenant is not held back by the first one's cap.
    s.cfg.limits.max_agents = 3;
    let mut d = many("d", 3);
    d.boot_id = 1;
    s.report_as(&who("d", "other"), d, 1.0)
        .expect("other tenant");
    assert_eq!(s.usage().per_tenant.get("other"), Some(&3));
}

/// One simulated agent for the property below: capacity, stale or not, and
/// (app, class, request, usage) of its containers, memory in GB.
type ArbAgent = (f64, bool, Vec<(u8, bool, f64, f64)>);

fn arb_cluster() -> impl Strategy<Value = Vec<ArbAgent>> {
    prop::collection::vec(
        (
            2.0f64..12.0,
            prop::bool::weighted(0.25),
            prop::collection::vec((0u8..3, any::<bool>(), 0.5f64..4.0, 0.1f64..5.0), 0..6),
        ),
        1..5,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The lazily kept actions an agent collects are exactly the plan's
    /// component actions for its containers, in plan order, with unique
    /// ids that resolve to pending actions; stale agents get none, and the
    /// round's counts match.
    #[test]
    fn delivered_actions_are_the_plans(cluster in arb_cluster()) {
        let mut s = state(0.0);
        let now_s = 40.0;
        // Reference: (agent, container) -> (agent, container, app key, stale).
        let mut origin = std::collections::HashMap::new();
        for (i, (cap_gb, stale, comps)) in cluster.iter().enumerate() {
            let agent = format!("n{i}");
            let mut cs = Vec::new();
            for (j, (app, core, req, usage)) in comps.iter().enumerate() {
                let class = if *core { Class::Core } else { Class::Elastic };
                let req = req.min(*cap_gb);
                let cid = format!("c{i}-{j}");
                cs.push(comp(&cid, &format!("app{app}"), class, req * GB, usage * GB, 0.0));
                origin.insert(
                    (agent.clone(), cid.clone()),
                    (agent.clone(), cid, format!("t/app{app}"), *stale),
                );
            }
            let at = if *stale { 1.0 } else { now_s - 1.0 };
            s.report(report(&agent, cap_gb * GB, cs), at).expect("report accepted");
        }
        let input = s.snapshot(now_s).expect("round");
        let plan = shaper::decide(&input.view, now_s, s.shaper_config());
        let mut expected: BTreeMap<String, Vec<(String, ActionKind, String)>> = BTreeMap::new();
        let mut dropped = 0u64;
        for a in plan.component_actions() {
            let (agent, cid) = input.origin(a.component()).expect("known component");
            let (agent, cid, app, stale) = origin
                .get(&(agent.to_string(), cid.to_string()))
                .expect("reported component")
                .clone();
            if stale {
                dropped += 1;
                continue;
            }
            let kind = match a {
                ComponentAction::Resize { from, to, .. } => {
                    ActionKind::Resize { container_id: cid, from, to }
                }
                ComponentAction::Evict { whole_app, .. } => {
                    ActionKind::Evict { container_id: cid, whole_app }
                }
            };
            expected.entry(agent).or_default().push((kind.container_id().to_string(), kind, app));
        }
        let out = s.install(&input, &plan);
        prop_assert_eq!(out.dropped_for_stale, dropped);
        let total: usize = expected.values().map(Vec::len).sum();
        prop_assert_eq!(out.resize + out.evict_component + out.evict_application, total as u64);
        let mut ids = std::collections::HashSet::new();
        for (i, (cap_gb, stale, _)) in cluster.iter().enumerate() {
            let agent = format!("n{i}");
            // The agent's next report collects its actions.
            let resp = s.report(report(&agent, cap_gb * GB, vec![]), now_s + 0.5).expect("report");
            let got: Vec<(String, ActionKind, String)> = resp
                .actions
                .iter()
                .map(|w| (w.action.container_id().to_string(), w.action.clone(), w.app.clone()))
                .collect();
            let want = expected.get(&agent).cloned().unwrap_or_default();
            prop_assert!(!stale || got.is_empty());
            prop_assert_eq!(got, want);
            for w in &resp.actions {
                prop_assert!(ids.insert(w.id.clone()), "duplicate id {:?}", w.id);
                prop_assert_eq!(s.action_status(&w.id), Some(ActionStatus::Pending));
            }
        }
    }
}

/// A node whose credential is scoped to `batch-*` cannot take part in
/// another node's `web` application: its `web` component is rejected, so it
/// cannot make `web` not fit and be evicted on the other node. Unscoped, the
/// same report does exactly that.
#[test]
fn a_scoped_credential_cannot_join_another_nodes_application() {
    let web_evicted_on_a = |scope: &[&str]| {
        let mut s = state(0.0);
        let mut a = report(
            "a",
            10.0 * GB,
            vec![comp("a-web", "web", Class::Core, 4.0 * GB, 3.0 * GB, 0.0)],
        );
        a.boot_id = 1;
        s.report_as(&who("a", "t"), a.clone(), 11.0).expect("a");
        let mut m = report(
            "m",
            2.0 * GB,
            vec![
                comp("m-web-1", "web", Class::Core, 1.5 * GB, 1.5 * GB, 10.0),
                comp("m-web-2", "web", Class::Core, 1.5 * GB, 1.5 * GB, 10.0),
                comp(
                    "m-batch",
                    "batch-1",
                    Class::Elastic,
                    0.2 * GB,
                    0.1 * GB,
                    10.0,
                ),
            ],
        );
        for c in &mut m.components {
            c.app_submitted_s = Some(10.0);
        }
        let mut who_m = who("m", "t");
        let patterns: Vec<String> = scope.iter().map(|p| p.to_string()).collect();
        who_m.apps = crate::app_scope::AppScope::new(&patterns);
        let rm = s.report_as(&who_m, m, 11.0).expect("m");
        let rejected: Vec<String> = rm.rejected.into_iter().map(|r| r.container_id).collect();
        s.plan_round(12.0).expect("round");
        a.seq = 1;
        let ra = s.report_as(&who("a", "t"), a, 13.0).expect("a");
        let evicted = ra
            .actions
            .iter()
            .any(|w| matches!(w.action, ActionKind::Evict { .. }));
        (
            evicted,
            rejected,
            s.refusal_counters().components_out_of_scope,
        )
    };
    let (evicted, rejected, n) = web_evicted_on_a(&[]);
    assert!(evicted, "unscoped, m's web components evict a's");
    assert!(rejected.is_empty());
    assert_eq!(n, 0);
    let (evicted, rejected, n) = web_evicted_on_a(&["batch-*"]);
    assert!(!evicted, "scoped, a's web is untouched");
    assert_eq!(rejected, ["m-web-1", "m-web-2"]);
    assert_eq!(n, 2);
}

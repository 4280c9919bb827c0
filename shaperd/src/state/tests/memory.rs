//! Rounds built on the last rounds' memory ([`RoundMemory`]) are the
//! rounds built afresh: the same view, the same actions for every agent.

use super::*;

/// Round `k`'s reports: agents come and go, applications grow and shrink,
/// so that kept lists and views are longer or shorter than needed.
fn reports(k: usize) -> Vec<ReportRequest> {
    let agents = [3, 1, 4, 2, 4][k % 5];
    (0..agents)
        .map(|a| {
            let n = (a + k) % 4 + 1;
            let comps = (0..n)
                .map(|i| {
                    let app = format!("app{}", (i + a * k) % 3);
                    let class = if i == 0 { Class::Core } else { Class::Elastic };
                    let used = (1.0 + ((i + k) % 3) as f64) * GB;
                    comp(&format!("c{a}-{i}"), &app, class, 4.0 * GB, used, 0.0)
                })
                .collect();
            report(&format!("agent{a}"), 12.0 * GB, comps)
        })
        .collect()
}

#[test]
fn a_round_built_on_kept_memory_is_the_round_built_afresh() {
    let mut fresh = state(0.0);
    let mut kept = state(0.0);
    let mut memory = RoundMemory::default();
    let mut actions = 0;
    for k in 0..8 {
        let now_s = 10.0 * (k + 1) as f64;
        for r in reports(k) {
            let a = fresh.report(r.clone(), now_s).expect("ok");
            let b = kept.report(r, now_s).expect("ok");
            assert_eq!(a.actions, b.actions, "round {k}: the actions delivered");
        }
        let input = fresh.snapshot(now_s + 1.0).expect("round");
        let plan = shaper::decide(&input.view, now_s + 1.0, fresh.shaper_config());
        let out_fresh = fresh.install(&input, &plan);

        let snap = kept.begin_round(now_s + 1.0).expect("round");
        let reused = snap.build_reusing(&mut memory);
        assert_eq!(reused.view, input.view, "round {k}: the view");
        let plan = shaper::decide(&reused.view, now_s + 1.0, kept.shaper_config());
        let prepared = reused.prepare_reusing(plan, &mut memory);
        memory.keep_view(reused);
        let (out_kept, replaced) = kept.commit_deferring_drops(prepared);
        memory.keep(replaced.into_spares().1);
        assert_eq!(out_fresh, out_kept, "round {k}: the outcome");
        actions += out_kept.resize + out_kept.evict_component + out_kept.evict_application;
    }
    assert!(actions > 8, "the rounds act ({actions} actions)");
}

//! Unit tests of `decide()`: hosts short of CPU (`cpu_shortfall`) or memory
//! (`mem_shortfall`).

use super::*;

/// Host 0 with `capacity`, and two applications (submitted at 0 and 10 s)
/// of one core component each, requesting 2 cores and 4 GiB, with
/// forecasts `fc_a` and `fc_b` (usage 90% of them).
fn two_apps_on_one_host(capacity: (f64, f64), fc_a: (f64, f64), fc_b: (f64, f64)) -> ClusterView {
    let one = |id: u64, submitted_s: f64, fc| {
        app(
            id,
            submitted_s,
            vec![comp(10 * id, Class::Core, 0, 0.0, (2.0, 4.0 * GIB), fc)],
        )
    };
    ClusterView {
        hosts: vec![host(0, capacity.0, capacity.1)],
        apps: vec![one(1, 0.0, fc_a), one(2, 10.0, fc_b)],
    }
}

/// Component `id`'s resize in `plan`: where to, and why.
fn to_of(plan: &Plan, id: u64) -> Option<(Resources, Explanation)> {
    plan.resizes().find_map(|a| match a {
        Action::Resize {
            component,
            to,
            explanation,
            ..
        } if *component == ComponentId(id) => Some((*to, explanation.clone())),
        _ => None,
    })
}

/// A host short of CPU only: `evict` (the thesis) evicts the later
/// application; `share` keeps it, with its CPU cut to what is left and
/// the binding named; memory still evicts under `share`.
#[test]
fn cpu_shortfall_shares_cpu_and_evicts_only_for_memory() {
    let view = |mem_b: f64| two_apps_on_one_host((2.0, 8.0 * GIB), (1.5, 2.0 * GIB), (1.0, mem_b));
    let evict = ShaperConfig {
        cpu_shortfall: CpuShortfall::Evict,
        ..cfg0()
    };
    let plan = decide(&view(2.0 * GIB), 1000.0, &evict);
    assert_eq!(plan.summary.evicted_apps, 1);
    assert_eq!(plan.actions[1].app(), AppId(2));

    let share = ShaperConfig {
        cpu_shortfall: CpuShortfall::Share,
        ..cfg0()
    };
    let plan = decide(&view(2.0 * GIB), 1000.0, &share);
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_cpu, 1);
    let squeezed = plan
        .resizes()
        .find(|a| a.app() == AppId(2))
        .expect("app 2 resized");
    let Action::Resize {
        to, explanation, ..
    } = squeezed
    else {
        unreachable!()
    };
    assert!((to.cpu_cores - 0.5).abs() < 1e-9, "{to:?}");
    assert_eq!(to.mem_bytes, 2.0 * GIB);
    assert_eq!(explanation.cpu.bound, Bound::HostShare);
    let b = explanation.binding.as_deref().expect("binding");
    assert_eq!(b.resource, Resource::Cpu);
    assert!((b.needed - 1.0).abs() < 1e-9 && (b.free - 0.5).abs() < 1e-9);
    assert!(explanation.to_string().contains("left on the host"));

    // Memory that does not fit evicts, whatever `cpu_shortfall` says.
    let plan = decide(&view(7.0 * GIB), 1000.0, &share);
    assert_eq!(plan.summary.evicted_apps, 1);
    let Some(Action::EvictApplication { explanation, .. }) = plan.evictions().next() else {
        panic!("no eviction: {plan:#?}")
    };
    assert_eq!(
        explanation.binding.as_deref().map(|b| b.resource),
        Some(Resource::Mem)
    );
}

/// A host whose memory fits every component's need (current usage and
/// forecast mean) but not every buffer: `evict` (the thesis) evicts the
/// later application; `buffer` keeps it, places the needs first and gives
/// the buffers out in scheduler order, so the later application's buffer
/// is cut to what is left (explained, binding named); when the needs
/// themselves do not fit, `buffer` evicts as before.
#[test]
fn mem_shortfall_buffer_cuts_buffers_before_evicting() {
    // Forecast means 3 GiB and `mean_b` (usage 90% of that), K1 = 0.25 of
    // a 4 GiB request: memory targets 4 GiB each (the request).
    let view = |mean_b: f64, host_b: f64| {
        two_apps_on_one_host((8.0, host_b), (1.0, 3.0 * GIB), (1.0, mean_b))
    };
    let cfg = |m: MemShortfall| ShaperConfig {
        k1: 0.25,
        mem_shortfall: m,
        ..cfg0()
    };
    let plan = decide(
        &view(3.5 * GIB, 7.5 * GIB),
        1000.0,
        &cfg(MemShortfall::Evict),
    );
    let buffer_plan = |mean_b: f64, host_b: f64| {
        decide(&view(mean_b, host_b), 1000.0, &cfg(MemShortfall::Buffer))
    };
    assert_eq!(plan.summary.evicted_apps, 1, "{plan:#?}");
    assert_eq!(plan.actions.last().map(|a| a.app()), Some(AppId(2)));

    let plan = buffer_plan(3.5 * GIB, 7.5 * GIB);
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 2);
    // Needs 3 + 3.5 GiB leave 1 GiB for buffers of 1 and 0.5 GiB: each
    // gets two thirds of its own (not app 1 all of its buffer and app 2
    // none).
    let near = |a: f64, b: f64| (a - b).abs() < STEP;
    let (to, _) = to_of(&plan, 10).expect("app 1 resized");
    assert!(near(to.mem_bytes, (3.0 + 2.0 / 3.0) * GIB), "{to:?}");
    let (to, explanation) = to_of(&plan, 20).expect("app 2 resized");
    assert!(near(to.mem_bytes, (3.5 + 1.0 / 3.0) * GIB), "{to:?}");
    assert_eq!(explanation.mem.bound, Bound::HostShare);
    let b = explanation.binding.as_deref().expect("binding");
    assert_eq!(b.resource, Resource::Mem);
    assert_eq!(b.needed, 4.0 * GIB);
    assert!(near(b.free, to.mem_bytes), "{b:?}");
    assert!(explanation.to_string().contains("left on the host"));

    // Needs of 3 + 3.6 GiB on 6.9 GiB: both fit, and the 0.3 GiB left is
    // shared by the buffers of 1 and 0.4 GiB in proportion.
    let plan = buffer_plan(3.6 * GIB, 6.9 * GIB);
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 2);
    let mem_of = |id: u64| to_of(&plan, id).expect("resized").0.mem_bytes;
    assert!(near(mem_of(10), (3.0 + 0.3 / 1.4) * GIB));
    assert!(near(mem_of(20), (3.6 + 0.4 * 0.3 / 1.4) * GIB));
    assert!(mem_of(10) + mem_of(20) <= 6.9 * GIB);

    // An application over the failure limit keeps its request: its whole
    // target is need, so app 2 (failed 3 times) is not cut; the 0.5 GiB
    // left after its 4 GiB and app 1's 3 GiB need go to app 1's buffer.
    let mut failed = view(3.5 * GIB, 7.5 * GIB);
    failed.apps[1].failures = 3;
    let plan = decide(&failed, 1000.0, &cfg(MemShortfall::Buffer));
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 1);
    assert!(to_of(&plan, 20).is_none_or(|(to, _)| to.mem_bytes == 4.0 * GIB));
    assert!(near(
        to_of(&plan, 10).expect("app 1 cut").0.mem_bytes,
        3.5 * GIB
    ));

    // Needs over the host (3 + 3.6 GiB on 6.5): the later application
    // goes, as under `evict`.
    let plan = buffer_plan(3.6 * GIB, 6.5 * GIB);
    assert_eq!(plan.summary.evicted_apps, 1, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 0);
}

/// A limit cut to a host's share is whole steps (QA D8: a squeezed
/// 246.57532691955566 MiB limit, which the kernel held as 257875968
/// bytes), at least the component's need, and the cut limits still fit
/// the host, whose capacity and the needs are no whole steps either.
#[test]
fn a_cut_limit_is_whole_steps_that_fit() {
    let host_b = 7.5 * GIB + 12_345.6;
    let (mean_a, mean_b) = (3.0 * GIB + 1_234.5, 3.5 * GIB + 777.7);
    let view = two_apps_on_one_host((8.0, host_b), (1.0, mean_a), (1.0, mean_b));
    let cfg = ShaperConfig {
        k1: 0.25,
        mem_shortfall: MemShortfall::Buffer,
        ..cfg0()
    };
    let plan = decide(&view, 1000.0, &cfg);
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 2);
    let mut sum = 0.0;
    for (id, need) in [(10, mean_a), (20, mean_b)] {
        let (to, explanation) = to_of(&plan, id).expect("resized");
        assert_eq!(explanation.mem.bound, Bound::HostShare);
        assert_eq!(to.mem_bytes % MEM_STEP_BYTES, 0.0, "{to:?}");
        assert!(to.mem_bytes >= need, "{to:?}");
        sum += to.mem_bytes;
    }
    assert!(sum <= host_b, "{sum} > {host_b}");

    // Needs that fill the host but for less than a step each: rounded up,
    // the second does not fit, and its application goes (not a host
    // overcommitted by the rounding).
    let tight = 2.0 * (3.0 * GIB + 100.0);
    let view = two_apps_on_one_host(
        (8.0, tight),
        (1.0, 3.0 * GIB + 100.0),
        (1.0, 3.0 * GIB + 100.0),
    );
    let plan = decide(&view, 1000.0, &cfg);
    assert_eq!(plan.summary.evicted_apps, 1, "{plan:#?}");
    let kept = to_of(&plan, 10).map_or(4.0 * GIB, |(to, _)| to.mem_bytes);
    assert!(kept <= tight, "{kept} > {tight}");
}

/// `share` never leaves a squeezed component without CPU: on a host with
/// no CPU left it gets the floor (Docker's smallest `--cpus`).
#[test]
fn a_squeezed_component_keeps_the_cpu_floor() {
    let view = two_apps_on_one_host((2.0, 8.0 * GIB), (2.0, 1.0 * GIB), (1.0, 1.0 * GIB));
    let plan = decide(&view, 1000.0, &cfg0());
    assert_eq!(plan.evictions().count(), 0);
    let (to, _) = to_of(&plan, 20).expect("component 20 resized");
    assert_eq!(to.cpu_cores, MIN_SHARE_CPU_CORES);
}

/// `mem_shortfall = buffer` cuts an elastic component's hold (a target
/// raised to a sibling's kill mark, `mem_hold_bytes`) before any other
/// buffer, and a core component's after every other buffer: on a host
/// short of room for every buffer, an elastic component held above its
/// forecast loses its hold first and the other keeps its whole buffer,
/// while a held core component keeps its hold and the buffers are cut.
#[test]
fn elastic_holds_are_cut_first_and_core_holds_last() {
    // Means 2 GiB, K1 = 0.25 of 4 GiB: buffers of 1 GiB; app 2 is held at
    // 3 GiB, so it targets 3 + 1 = 4 GiB (1 GiB of it the hold).
    let cfg = ShaperConfig {
        k1: 0.25,
        mem_shortfall: MemShortfall::Buffer,
        ..cfg0()
    };
    let view = |host_gib: f64, class: Class| {
        let mut v = two_apps_on_one_host((8.0, host_gib * GIB), (1.0, 2.0 * GIB), (1.0, 2.0 * GIB));
        let c = &mut v.apps[1].components[0];
        c.class = class;
        if let Some(f) = c.forecast.as_mut() {
            f.mem_hold_bytes = 3.0 * GIB;
        }
        v
    };
    let near = |a: f64, b: f64| (a - b).abs() < STEP;
    let mem_of = |plan: &Plan, id: u64| to_of(plan, id).expect("resized").0.mem_bytes;
    // (host GiB, class of app 2's component, app 1's and app 2's limits)
    let cases = [
        // Room for every buffer: nothing is cut.
        (8.0, Class::Core, 3.0, 4.0),
        (8.0, Class::Elastic, 3.0, 4.0),
        // Elastic, 2.5 GiB for buffers of 1 + (1 + 1 held): the buffers
        // whole, half the hold.
        (6.5, Class::Elastic, 3.0, 3.5),
        // 1.5 GiB: no hold, and the elastic buffer cut alone, to half.
        (5.5, Class::Elastic, 3.0, 2.5),
        // Core, 2.5 GiB: the hold whole, three quarters of each buffer.
        (6.5, Class::Core, 2.75, 3.75),
        // 1.5 GiB: the hold whole, a quarter of each buffer.
        (5.5, Class::Core, 2.25, 3.25),
        // 0.5 GiB: half the hold, no buffer.
        (4.5, Class::Core, 2.0, 2.5),
    ];
    for (host_gib, class, one, two) in cases {
        let plan = decide(&view(host_gib, class), 1000.0, &cfg);
        let what = format!("{host_gib} GiB, {class:?}");
        assert_eq!(plan.evictions().count(), 0, "{what}: {plan:#?}");
        assert_eq!(
            plan.summary.squeezed_mem > 0,
            host_gib < 8.0,
            "{what}: {plan:#?}"
        );
        assert!(near(mem_of(&plan, 10), one * GIB), "{what}: app 1");
        assert!(near(mem_of(&plan, 20), two * GIB), "{what}: app 2");
    }
}

/// On a host short of room for every buffer, the elastic components'
/// buffers are cut alone first, down to `ELASTIC_CUT_FIRST_TO` of them (an
/// elastic component's kill costs its own work, a core component's its
/// application); past that, every buffer is cut evenly from there.
#[test]
fn elastic_buffers_are_cut_before_core_ones() {
    use crate::decide::squeeze::ELASTIC_CUT_FIRST_TO;
    // One application: a core and an elastic component, means 2 GiB,
    // K1 = 0.25 of 4 GiB: needs of 2 GiB and buffers of 1 GiB each.
    let cfg = ShaperConfig {
        k1: 0.25,
        mem_shortfall: MemShortfall::Buffer,
        ..cfg0()
    };
    let view = |host_gib: f64| ClusterView {
        hosts: vec![host(0, 8.0, host_gib * GIB)],
        apps: vec![app(
            1,
            0.0,
            vec![
                comp(10, Class::Core, 0, 0.0, (2.0, 4.0 * GIB), (1.0, 2.0 * GIB)),
                comp(
                    11,
                    Class::Elastic,
                    0,
                    0.0,
                    (2.0, 4.0 * GIB),
                    (1.0, 2.0 * GIB),
                ),
            ],
        )],
    };
    let near = |a: f64, b: f64| (a - b).abs() < STEP;
    let mem_of = |plan: &Plan, id: u64| to_of(plan, id).expect("resized").0.mem_bytes;
    let e = ELASTIC_CUT_FIRST_TO;
    // 1 + e GiB for buffers: the core one whole, the elastic one cut to e.
    let plan = decide(&view(5.0 + e), 1000.0, &cfg);
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 1, "{plan:#?}");
    assert!(near(mem_of(&plan, 10), 3.0 * GIB), "{plan:#?}");
    assert!(near(mem_of(&plan, 11), (2.0 + e) * GIB), "{plan:#?}");
    // Half of that: both cut by the same fraction of what they had then.
    let plan = decide(&view(4.0 + (1.0 + e) / 2.0), 1000.0, &cfg);
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 2, "{plan:#?}");
    assert!(near(mem_of(&plan, 10), 2.5 * GIB), "{plan:#?}");
    assert!(near(mem_of(&plan, 11), (2.0 + e / 2.0) * GIB), "{plan:#?}");
}

/// On a host short of room for its buffers, a component whose target is
/// its ceiling keeps its whole buffer when its even cut would take less
/// than `CEILING_CUT_MIN` of its request (a usage pressing against its
/// limit sits there, and any cut kills it); the other buffers are cut that
/// much more. A deeper cut is shared evenly as before.
#[test]
fn a_target_at_its_ceiling_is_not_cut_by_a_sliver() {
    use crate::decide::squeeze::CEILING_CUT_MIN;
    // Means 3 and 2 GiB, K1 = 0.25 of 4 GiB: buffers of 1 GiB each; app
    // 1 targets its ceiling (4 GiB), app 2 3 GiB.
    let cfg = ShaperConfig {
        k1: 0.25,
        mem_shortfall: MemShortfall::Buffer,
        ..cfg0()
    };
    let view = |host_gib: f64| {
        two_apps_on_one_host((8.0, host_gib * GIB), (1.0, 3.0 * GIB), (1.0, 2.0 * GIB))
    };
    let near = |a: f64, b: f64| (a - b).abs() < STEP;
    let mem_of = |plan: &Plan, id: u64| to_of(plan, id).map(|(to, _)| to.mem_bytes);
    // Short by less than twice the smallest cut (an even cut would take
    // under `CEILING_CUT_MIN` x 4 GiB from each): app 1 keeps its ceiling
    // (no resize), app 2 alone gives the whole shortfall.
    let short_gib = CEILING_CUT_MIN * 4.0;
    let plan = decide(&view(7.0 - short_gib), 1000.0, &cfg);
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    assert_eq!(plan.summary.squeezed_mem, 1, "{plan:#?}");
    assert_eq!(mem_of(&plan, 10), Some(4.0 * GIB), "{plan:#?}");
    let two = mem_of(&plan, 20).expect("app 2 resized");
    assert!(near(two, (3.0 - short_gib) * GIB), "{two}");
    // Short by 1 GiB: half of each buffer, the ceiling's too.
    let plan = decide(&view(6.0), 1000.0, &cfg);
    assert_eq!(plan.summary.squeezed_mem, 2, "{plan:#?}");
    assert!(
        near(mem_of(&plan, 10).expect("resized"), 3.5 * GIB),
        "{plan:#?}"
    );
    assert!(
        near(mem_of(&plan, 20).expect("resized"), 2.5 * GIB),
        "{plan:#?}"
    );
}

/// A memory reservation (`Component::mem_floor_bytes`) is a floor of the
/// target and, on a crowded host, part of the need: buffers are cut
/// around it, never into it, and when the needs do not fit the later
/// application goes.
#[test]
fn a_memory_reservation_is_never_cut() {
    // Forecasts of 1 GiB; app 2's component reserves 2.5 GiB.
    let view = |host_mem: f64| {
        let mut v = two_apps_on_one_host((8.0, host_mem), (1.0, GIB), (1.0, GIB));
        v.apps[1].components[0].mem_floor_bytes = 2.5 * GIB;
        v
    };
    let cfg = ShaperConfig {
        k1: 0.25,
        mem_shortfall: MemShortfall::Buffer,
        ..cfg0()
    };
    // Room: 1 GiB + 1 GiB of K1 for app 1, the reservation for app 2.
    let plan = decide(&view(16.0 * GIB), 1000.0, &cfg);
    let (to, _) = to_of(&plan, 10).expect("app 1 resized");
    assert_eq!(to.mem_bytes, 2.0 * GIB);
    let (to, explanation) = to_of(&plan, 20).expect("app 2 resized");
    assert_eq!(to.mem_bytes, 2.5 * GIB);
    assert_eq!(explanation.mem.bound, Bound::Reservation);
    assert!(explanation
        .to_string()
        .contains("raised to its memory reservation"));
    // A request below the reservation (a label, or no memory limit and
    // counted at its use): the reservation wins over the ceiling.
    let mut low = view(16.0 * GIB);
    low.apps[1].components[0].request.mem_bytes = 2.0 * GIB;
    let plan = decide(&low, 1000.0, &cfg);
    let (to, _) = to_of(&plan, 20).expect("app 2 resized");
    assert_eq!(to.mem_bytes, 2.5 * GIB);
    // Crowded (4 GiB): the needs 1 + 2.5 GiB fit, and app 1's buffer gets
    // the 0.5 GiB left; app 2 keeps its reservation whole.
    let plan = decide(&view(4.0 * GIB), 1000.0, &cfg);
    assert_eq!(plan.evictions().count(), 0, "{plan:#?}");
    let near = |a: f64, b: f64| (a - b).abs() < STEP;
    let (to, _) = to_of(&plan, 10).expect("app 1 cut");
    assert!(near(to.mem_bytes, 1.5 * GIB), "{to:?}");
    let (to, _) = to_of(&plan, 20).expect("app 2 resized");
    assert_eq!(to.mem_bytes, 2.5 * GIB);
    // The needs over the host (3 GiB): the later application goes.
    let plan = decide(&view(3.0 * GIB), 1000.0, &cfg);
    assert_eq!(plan.summary.evicted_apps, 1, "{plan:#?}");
    assert_eq!(plan.actions.last().map(|a| a.app()), Some(AppId(2)));
}

//! The agent loop's logic against the in-memory fake runtime (no Docker),
//! driven round by round with a manual clock.

use agent::fake::FakeCall;
use agent::runtime::CpuLimit;
use agent::NodeActionKind;

mod fake_rig;

use fake_rig::*;

#[tokio::test]
async fn idle_container_memory_is_cut_towards_usage_plus_buffer() {
    let mut r = rig(config(""));
    r.fake.add(
        "idle",
        &[ENABLE],
        Some(GIB),
        CpuLimit::Nano {
            nano_cpus: 1_000_000_000,
        },
        900.0,
    );
    for _ in 0..6 {
        r.step(&[("idle", 50 * MIB, 0.05)]).await;
    }
    let mem = r
        .fake
        .container("idle")
        .expect("exists")
        .info
        .limits
        .mem_bytes
        .expect("limited");
    assert!(
        mem < 200 * MIB,
        "limit {mem} should be cut from 1 GiB towards 50 MiB + buffer"
    );
    assert!(mem >= 50 * MIB, "limit {mem} must stay above usage");
    let cpu = r
        .fake
        .container("idle")
        .expect("exists")
        .info
        .limits
        .cpu
        .cores()
        .expect("limited");
    assert!((0.05..0.5).contains(&cpu), "cpu limit {cpu}");
    // the report explains it
    let report = r.step(&[("idle", 50 * MIB, 0.05)]).await;
    assert_eq!(report.view.containers.len(), 1);
    assert!(report.view.containers[0].forecast.is_some());
}

#[tokio::test]
async fn targets_below_the_floors_cause_one_update_then_none() {
    let mut r = rig(config(""));
    // usage + buffer is below the kernel's floors (16 MiB, 0.01 cores)
    r.fake.add(
        "tiny",
        &[ENABLE],
        Some(64 * MIB),
        CpuLimit::Nano {
            nano_cpus: 100_000_000,
        },
        900.0,
    );
    for _ in 0..6 {
        r.step(&[("tiny", 2 * MIB, 0.001)]).await;
    }
    assert_eq!(r.mem_limit("tiny"), 16 * MIB, "cut to the floor");
    let updates = r.updates_of("tiny").len();
    assert_eq!(updates, 1, "one update to the floors");
    // The kernel plans at the floors (and in whole MiB / millicores): once
    // there, the plan holds no action for the container and Docker gets no
    // call.
    for _ in 0..5 {
        let rep = r.step(&[("tiny", 2 * MIB, 0.001)]).await;
        assert!(
            rep.outcomes.is_empty(),
            "no action at the floors: {:?}",
            rep.outcomes
        );
    }
    assert_eq!(
        r.updates_of("tiny").len(),
        updates,
        "no Docker call once at the floors"
    );
}

#[tokio::test]
async fn recommend_mode_changes_nothing() {
    let mut r = rig(config("").clone_with(|c| c.actuation = agent::config::Actuation::Recommend));
    r.fake.add(
        "idle",
        &[ENABLE],
        Some(GIB),
        CpuLimit::Nano {
            nano_cpus: 1_000_000_000,
        },
        900.0,
    );
    let mut recommended = 0;
    for _ in 0..6 {
        let rep = r.step(&[("idle", 50 * MIB, 0.05)]).await;
        recommended += rep
            .outcomes
            .iter()
            .filter(|o| o.result == agent::Outcome::Recommended)
            .count();
    }
    assert!(recommended > 0, "a shrink is recommended");
    assert!(
        r.fake.calls().is_empty(),
        "no runtime change in recommend mode: {:?}",
        r.fake.calls()
    );
    assert_eq!(
        r.fake
            .container("idle")
            .expect("exists")
            .info
            .limits
            .mem_bytes,
        Some(GIB)
    );
}

#[tokio::test]
async fn unlabelled_and_protected_containers_are_never_touched() {
    let mut r = rig(config(""));
    r.fake.add(
        "stranger",
        &[],
        Some(GIB),
        CpuLimit::Nano {
            nano_cpus: 1_000_000_000,
        },
        900.0,
    );
    r.fake.add(
        "vip",
        &[ENABLE, ("tailor.protected", "true")],
        Some(GIB),
        CpuLimit::Nano {
            nano_cpus: 1_000_000_000,
        },
        900.0,
    );
    r.fake.add(
        "idle",
        &[ENABLE],
        Some(GIB),
        CpuLimit::Nano {
            nano_cpus: 1_000_000_000,
        },
        900.0,
    );
    for _ in 0..6 {
        let rep = r
            .step(&[
                ("stranger", 10 * MIB, 0.01),
                ("vip", 10 * MIB, 0.01),
                ("idle", 10 * MIB, 0.01),
            ])
            .await;
        assert!(
            rep.view.containers.iter().all(|c| c.meta.id != "stranger"),
            "unlabelled container is not managed"
        );
    }
    assert!(r.updates_of("stranger").is_empty());
    assert!(
        r.updates_of("vip").is_empty(),
        "protected container was changed: {:?}",
        r.updates_of("vip")
    );
    assert!(
        !r.updates_of("idle").is_empty(),
        "the managed one is shaped"
    );
}

#[tokio::test]
async fn overload_evicts_youngest_elastic_of_last_app_then_restarts_it() {
    // 1 GiB node; app a (core, request 700 MiB) first, app b: core + two
    // elastic (requests 300 MiB); everyone uses 150 MiB, then a uses 600
    // k2 = 0: the step in a-core's usage would make the peak model's sigma
    // (and so the buffer) huge for a few rounds; this test is about order
    // the memory hold (a day by default) is cut to 3 s so that room returns
    // within the test once a-core's usage falls back
    let mut r = rig(config(&with_capacity("", 4.0, GIB)).clone_with(|c| {
        c.shaper.k2 = 0.0;
        c.shaper.mem_hold_s = 3.0;
    }));
    let lim = Some(300 * MIB);
    let cpu = CpuLimit::Nano {
        nano_cpus: 500_000_000,
    };
    r.fake.add(
        "a-core",
        &[ENABLE, ("tailor.app", "a")],
        Some(700 * MIB),
        cpu,
        100.0,
    );
    r.fake
        .add("b-core", &[ENABLE, ("tailor.app", "b")], lim, cpu, 200.0);
    r.fake.add(
        "b-el-old",
        &[ENABLE, ("tailor.app", "b"), ("tailor.class", "elastic")],
        lim,
        cpu,
        300.0,
    );
    r.fake.add(
        "b-el-young",
        &[ENABLE, ("tailor.app", "b"), ("tailor.class", "elastic")],
        lim,
        cpu,
        400.0,
    );
    let light = 150 * MIB;
    // requests (700 + 3 x 300 MiB) exceed the node: warm the models up first
    for _ in 0..3 {
        r.clock.advance(1.0);
        for id in ["a-core", "b-core", "b-el-old", "b-el-young"] {
            r.fake.set_usage(id, light, 100_000_000);
        }
        r.agent.sample_only().await.expect("sample");
    }
    for _ in 0..3 {
        r.step(&[
            ("a-core", light, 0.1),
            ("b-core", light, 0.1),
            ("b-el-old", light, 0.1),
            ("b-el-young", light, 0.1),
        ])
        .await;
    }
    assert!(
        r.fake
            .calls()
            .iter()
            .all(|c| !matches!(c, FakeCall::Stop(..))),
        "no eviction while everything fits"
    );
    // a-core's memory grows: the node no longer fits everything
    let mut evicted = Vec::new();
    let mut b_failures = Vec::new();
    for _ in 0..5 {
        let rep = r
            .step(&[
                ("a-core", 600 * MIB, 0.1),
                ("b-core", light, 0.1),
                ("b-el-old", light, 0.1),
                ("b-el-young", light, 0.1),
            ])
            .await;
        for o in &rep.outcomes {
            if matches!(o.action.kind, NodeActionKind::Evict { .. })
                && o.result == agent::Outcome::Applied
            {
                evicted.push(o.action.container_id.clone());
            }
        }
        b_failures.extend(
            rep.view
                .containers
                .iter()
                .filter(|c| c.meta.name == "b-core")
                .map(|c| c.app_failures),
        );
    }
    assert_eq!(
        evicted,
        vec!["b-el-young".to_string()],
        "the youngest elastic of the last application goes first"
    );
    // the kernel's rule (`Action::fails_application`): an elastic
    // component's eviction is not a failure of its application
    assert!(b_failures.len() >= 4, "{b_failures:?}");
    assert!(b_failures.iter().all(|&n| n == 0), "{b_failures:?}");
    assert_eq!(r.agent.evicted().len(), 1);
    // load drops again: room returns, the evicted container comes back
    let mut restarted = false;
    for _ in 0..8 {
        let rep = r
            .step(&[
                ("a-core", light, 0.1),
                ("b-core", light, 0.1),
                ("b-el-old", light, 0.1),
            ])
            .await;
        if rep.restarted.iter().any(|n| n == "b-el-young") {
            restarted = true;
            break;
        }
    }
    assert!(restarted, "evicted container restarted when room returned");
    assert!(r
        .fake
        .calls()
        .contains(&FakeCall::Start("b-el-young".into())));
    assert!(r.agent.evicted().is_empty());
}

#[tokio::test]
async fn daemon_down_fails_rounds_then_recovers() {
    let mut r = rig(config(""));
    r.fake
        .add("c", &[ENABLE], Some(GIB), CpuLimit::Unlimited, 900.0);
    r.step(&[("c", 10 * MIB, 0.1)]).await;
    r.fake.set_down(true);
    r.clock.advance(1.0);
    assert!(r.agent.round().await.is_err());
    assert!(r.agent.round().await.is_err());
    r.fake.set_down(false);
    let rep = r.step(&[("c", 10 * MIB, 0.1)]).await;
    assert_eq!(rep.view.containers.len(), 1);
    assert_eq!(r.agent.shared().metrics.rounds(), (4, 2));
}

#[tokio::test]
async fn one_failing_container_does_not_stop_the_round() {
    let mut r = rig(config(""));
    let one = CpuLimit::Nano {
        nano_cpus: 1_000_000_000,
    };
    r.fake.add("bad", &[ENABLE], Some(GIB), one, 900.0);
    r.fake.add("good", &[ENABLE], Some(GIB), one, 900.0);
    r.fake.fail_stats("bad");
    let mut last = None;
    for _ in 0..7 {
        last = Some(r.step(&[("good", 10 * MIB, 0.1)]).await);
    }
    let rep = last.expect("ran");
    assert!(rep.errors.iter().any(|e| e.contains("bad")));
    assert!(
        !r.updates_of("good").is_empty(),
        "the healthy container is still shaped: {:#?}",
        rep.outcomes
    );
    assert!(
        r.updates_of("bad").is_empty(),
        "no forecast: targets its request"
    );
    // a vanishing container is not an error either
    r.fake.remove("good");
    let rep = r.step(&[]).await;
    assert!(rep.view.containers.iter().all(|c| c.meta.id != "good"));
}

#[tokio::test]
async fn shutdown_restores_requests_and_keeps_containers_running() {
    let mut r = rig(config(""));
    r.fake.add(
        "c",
        &[ENABLE],
        Some(GIB),
        CpuLimit::Nano {
            nano_cpus: 2_000_000_000,
        },
        900.0,
    );
    r.fake.add("u", &[ENABLE], None, CpuLimit::Unlimited, 900.0);
    for _ in 0..6 {
        r.step(&[("c", 20 * MIB, 0.05), ("u", 20 * MIB, 0.05)])
            .await;
    }
    assert!(
        r.fake
            .container("c")
            .expect("c")
            .info
            .limits
            .mem_bytes
            .expect("limited")
            < GIB
    );
    let restored = r.agent.shutdown().await;
    // "u" was never resized: nothing to restore (agent/src/agent/reconcile.rs
    // tests what an unlimited container the agent did limit gets back)
    assert_eq!(restored, vec!["c".to_string()]);
    let limits = r.fake.container("c").expect("c").info.limits;
    assert_eq!(limits.mem_bytes, Some(GIB));
    assert_eq!(
        limits.cpu,
        CpuLimit::Nano {
            nano_cpus: 2_000_000_000
        }
    );
    // unlimited at start and never resized: no limit invented
    let limits = r.fake.container("u").expect("u").info.limits;
    assert_eq!((limits.mem_bytes, limits.cpu), (None, CpuLimit::Unlimited));
    assert!(r.updates_of("u").is_empty(), "{:?}", r.updates_of("u"));
    assert!(r
        .fake
        .calls()
        .iter()
        .all(|c| !matches!(c, FakeCall::Stop(..))));
}

/// Issue 12: a container started without limits next to labelled ones never
/// counts as the whole node (no eviction for it) and, by default, gets no
/// limit; it is still reported with a request estimated from its use.
#[tokio::test]
async fn unlimited_container_counts_at_its_use_and_gets_no_limit() {
    let cfg = config("").clone_with(|c| c.manage_unlimited = false);
    let mut r = rig(cfg);
    for id in ["a", "b"] {
        r.fake.add(
            id,
            &[ENABLE],
            Some(2 * GIB),
            CpuLimit::Nano {
                nano_cpus: 1_500_000_000,
            },
            900.0,
        );
    }
    r.fake
        .add("free", &[ENABLE], None, CpuLimit::Unlimited, 900.0);
    let mut last = None;
    for _ in 0..8 {
        last = Some(
            r.step(&[
                ("a", 1200 * MIB, 1.2),
                ("b", 1200 * MIB, 1.2),
                ("free", 32 * MIB, 0.3),
            ])
            .await,
        );
    }
    let report = last.expect("rounds ran");
    assert!(
        r.fake
            .calls()
            .iter()
            .all(|c| !matches!(c, FakeCall::Stop(..))),
        "no eviction: {:?}",
        r.fake.calls()
    );
    assert!(r.updates_of("free").is_empty(), "no limit for 'free'");
    let free = r.fake.container("free").expect("exists").info.limits;
    assert_eq!((free.mem_bytes, free.cpu), (None, CpuLimit::Unlimited));
    let c = report
        .view
        .containers
        .iter()
        .find(|c| c.meta.id == "free")
        .expect("reported");
    assert!(
        c.request.cpu_cores < 1.0 && c.allocation.cpu_cores < 1.0,
        "request {:?} allocation {:?} must come from use, not the node",
        c.request,
        c.allocation
    );
    assert!(c.request.mem_bytes < (256 * MIB) as f64);
    for o in report
        .outcomes
        .iter()
        .filter(|o| o.action.container_id == "free")
    {
        assert_eq!(o.result, agent::Outcome::Refused, "{o:?}");
    }
}

/// Issue 12: a container throttled in the last rounds keeps its CPU limit
/// (its memory is still shaped).
#[tokio::test]
async fn throttled_container_cpu_is_not_shrunk() {
    let mut r = rig(config(""));
    r.fake.add(
        "hot",
        &[ENABLE],
        Some(GIB),
        CpuLimit::Nano {
            nano_cpus: 2_000_000_000,
        },
        900.0,
    );
    for _ in 0..8 {
        r.fake.add_throttling("hot", 5, 20_000_000);
        r.step(&[("hot", 50 * MIB, 0.1)]).await;
    }
    let limits = r.fake.container("hot").expect("exists").info.limits;
    assert_eq!(limits.cpu.cores(), Some(2.0), "CPU not shrunk");
    assert!(
        limits.mem_bytes.expect("limited") < 300 * MIB,
        "memory still shaped: {:?}",
        limits.mem_bytes
    );
    assert!(r.agent.shared().metrics.throttled_periods() >= 35);
    // once throttling stops for a few rounds, the CPU is shaped again
    for _ in 0..6 {
        r.step(&[("hot", 50 * MIB, 0.1)]).await;
    }
    let cpu = r
        .fake
        .container("hot")
        .expect("exists")
        .info
        .limits
        .cpu
        .cores();
    assert!(cpu.is_some_and(|c| c < 1.0), "cpu {cpu:?}");
}

/// Three young 1-core containers on a 2-core host, all idle: their limits
/// overcommit the cores as Docker allows, and none is squeezed to the CPU
/// floor (the latest one was, to 0.01 core, for the whole grace period).
#[tokio::test]
async fn overcommitted_cpu_limits_on_an_idle_host_are_not_squeezed() {
    let mut r = rig(config("").clone_with(|c| {
        c.shaper.grace_period_s = 600.0;
        c.capacity.cpu_cores = Some(2.0);
    }));
    for name in ["c1", "c2", "c3"] {
        r.fake.add(
            name,
            &[ENABLE],
            Some(GIB),
            CpuLimit::Nano {
                nano_cpus: 1_000_000_000,
            },
            990.0,
        );
    }
    for _ in 0..4 {
        r.step(&[
            ("c1", 50 * MIB, 0.05),
            ("c2", 50 * MIB, 0.05),
            ("c3", 50 * MIB, 0.05),
        ])
        .await;
    }
    for name in ["c1", "c2", "c3"] {
        let cpu = r
            .fake
            .container(name)
            .expect("exists")
            .info
            .limits
            .cpu
            .cores()
            .expect("limited");
        assert!(cpu >= 0.9, "{name}: cpu limit {cpu} on an idle host");
    }
}

/// QA D3: a flat load whose counters the runtime reads up to 0.95 s after
/// each round asked (Docker answers at its collector's tick) is sampled as
/// a flat rate: the rate divides by the time between the runtime's reads.
/// The same counters without read times (the rounds' clock) are not flat.
#[tokio::test]
async fn flat_cpu_load_read_at_jittered_times_is_a_flat_rate() {
    let mut r = rig(config(""));
    let one = CpuLimit::Nano {
        nano_cpus: 1_000_000_000,
    };
    r.fake.add("timed", &[ENABLE], Some(GIB), one, 900.0);
    r.fake.add("untimed", &[ENABLE], Some(GIB), one, 900.0);
    let cores = 0.02;
    let mut last_read: Option<f64> = None;
    let mut timed = Vec::new();
    let mut untimed = Vec::new();
    for (i, jitter) in [0.9, 0.0, 0.8, 0.1, 0.95, 0.05, 0.5, 0.0, 0.7]
        .into_iter()
        .enumerate()
    {
        // the next round's clock, plus the runtime's delay
        let read = r.clock_now() + 1.0 + jitter;
        // the counters at that read: `cores` since the previous read
        let used = last_read.map_or(0.0, |p| cores * (read - p));
        last_read = Some(read);
        r.fake.set_read_time("timed", Some(read));
        let rep = r
            .step(&[("timed", 50 * MIB, used), ("untimed", 50 * MIB, used)])
            .await;
        let rate = |id: &str| {
            rep.view
                .containers
                .iter()
                .find(|c| c.meta.id == id)
                .map(|c| c.usage.cpu_cores)
        };
        if i > 0 {
            // the first sample gives no rate yet
            timed.extend(rate("timed"));
            untimed.extend(rate("untimed"));
        }
    }
    assert_eq!(
        timed.len(),
        8,
        "a rate from the second sample on: {timed:?}"
    );
    for rate in &timed {
        assert!((rate - cores).abs() < 1e-6, "flat at {cores}: {timed:?}");
    }
    let spread = |v: &[f64]| {
        v.iter().copied().fold(f64::MIN, f64::max) - v.iter().copied().fold(f64::MAX, f64::min)
    };
    assert!(
        spread(&untimed) > cores / 2.0,
        "the rounds' clock alone mis-measures it: {untimed:?}"
    );
}

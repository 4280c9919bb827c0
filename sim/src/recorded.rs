//! Agent recordings in the simulator (`--workload recorded:PATH`).
//!
//! - [`check_parity`] replays a recording round by round through a fresh
//!   node kernel (`shaper::node::NodeKernel`, the code the agent runs) with
//!   the recorded configuration, at the recording's interval, and compares
//!   each round's plan with the decisions the agent recorded.
//! - [`recorded_workload`] turns a recording into a simulator workload (one
//!   host with the node's capacity; applications by `tailor.app`; each
//!   container's recorded usage as its usage series), so `replay`, `tune`
//!   and `frontier` run on what a real host saw.
//!
//! # What a round must hold ([`read_recording`])
//!
//! Every round's values are checked with the readers' shared rule
//! ([`datasets::bounds::in_range`]); the first one out of range is an error
//! naming the file, the line and the key (`line 7:
//! containers[0].request.mem_bytes: 1e300 is above the largest accepted,
//! ...`), and nothing of the recording is used:
//! - `at_s` in [0, 1e10] (Unix seconds) and after the previous round's:
//!   rounds are one interval apart in a replay, so a time that goes back
//!   or stands still is a spliced or damaged file (or a clock stepped
//!   back while recording), not something to replay quietly;
//! - `capacity` in (0, 1e6] cores and (0, 2^60] bytes in every round;
//! - per container: `request`, `allocation`, `usage` and the `sample`'s
//!   amounts in [0, 1e6] cores and [0, 2^60] bytes, `mem_floor_bytes` in
//!   [0, 2^60], `started_s` at most 1e10 (a negative one is accepted:
//!   Docker's zero time reads as about -6.2e10); an `id` at most once a
//!   round;
//! - `forecasts`: one per container;
//! - an `oom_kill` event's `limit_bytes` in [0, 2^60] and `at_s` in [0,
//!   1e10]. A kill of a container the recording never sampled is kept
//!   and ignored (it can start and die between two rounds).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use datasets::bounds::{in_range, positive, show, MAX_BYTES, MAX_CORES, MAX_UNIX_S};
use datasets::recording::RecordReader;
use datasets::workload::{
    AppSpec, ComponentSpec, HostSpec, OomRestart, RequestChange, Shape, UsageSeries, Workload,
};
use shaper::node::{NodeAction, NodeActionKind, NodeKernel};
use shaper::record::{KernelEvent, Record, RecordingHeader, RoundRecord};
use shaper::{Decider, Forecasts, Resources, ShaperConfig};

use crate::SimError;

/// One difference between a recorded and a replayed decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub round: u64,
    pub container: String,
    /// The recorded decision (`None`: the agent did nothing to it).
    pub recorded: Option<String>,
    /// The replayed decision (`None`: the replay does nothing to it).
    pub replayed: Option<String>,
}

/// The result of a parity check.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parity {
    /// Rounds replayed.
    pub rounds: u64,
    /// Rounds whose decisions were compared (planned locally).
    pub compared_rounds: u64,
    /// Recorded actions compared.
    pub actions: u64,
    /// Forecasts compared.
    pub forecasts: u64,
    pub mismatches: Vec<Mismatch>,
}

impl std::fmt::Display for Parity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "parity: {} rounds, {} actions, {} mismatches",
            self.rounds,
            self.actions,
            self.mismatches.len()
        )?;
        for m in &self.mismatches {
            writeln!(
                f,
                "  round {} container {}: recorded {} vs replayed {}",
                m.round,
                m.container,
                m.recorded.as_deref().unwrap_or("nothing"),
                m.replayed.as_deref().unwrap_or("nothing")
            )?;
        }
        Ok(())
    }
}

/// A recording: its header and rounds.
#[derive(Clone, Debug)]
pub struct Recording {
    pub header: RecordingHeader,
    pub rounds: Vec<RoundRecord>,
}

/// An OOM-killed container wanted more than the limit that killed it: its
/// censored peak is this factor above that limit.
const CENSORED_ABOVE: f64 = 1.001;

/// Largest number of rounds read from one recording.
pub const MAX_ROUNDS: usize = 10_000_000;

/// Reads a whole recording.
pub fn read_recording(path: &Path) -> Result<Recording, SimError> {
    let mut r = RecordReader::open(path)?;
    let bad = |msg: String| SimError::Parse {
        path: path.display().to_string(),
        message: msg,
    };
    let header = match r.read_next::<Record>()? {
        Some(Record::Header(h)) => *h,
        Some(Record::Round(_)) => return Err(bad("line 1: expected the header record".into())),
        None => return Err(bad("empty recording".into())),
    };
    if header.version != shaper::record::RECORD_VERSION {
        return Err(bad(format!(
            "record version {} (this tailor reads {})",
            header.version,
            shaper::record::RECORD_VERSION
        )));
    }
    // a replay runs at the recorded interval: the simulator's range
    let (lo, hi) = (crate::config::MIN_INTERVAL_S, crate::config::MAX_INTERVAL_S);
    if !(lo..=hi).contains(&header.interval_s) {
        return Err(bad(format!(
            "line 1: header: interval_s must be in [{lo}, {hi}], got {}",
            tailor_core::short_num(header.interval_s)
        )));
    }
    header
        .shaper
        .validate()
        .map_err(|e| bad(format!("header: {e}")))?;
    header
        .forecaster
        .validate()
        .map_err(|e| bad(format!("header: forecaster: {e}")))?;
    let mut rounds: Vec<RoundRecord> = Vec::new();
    while let Some(rec) = r.read_next::<Record>()? {
        match rec {
            Record::Round(round) => {
                if rounds.len() >= MAX_ROUNDS {
                    return Err(bad(format!("more than {MAX_ROUNDS} rounds")));
                }
                check_round(&round, rounds.last().map(|p| p.at_s))
                    .map_err(|e| bad(format!("line {}: {e}", r.line())))?;
                rounds.push(round);
            }
            Record::Header(_) => {
                return Err(bad(format!("line {}: a second header", r.line())));
            }
        }
    }
    Ok(Recording { header, rounds })
}

/// Checks one round's values (see the module docs); the error names the
/// key. `prev_at_s`: the previous round's time.
fn check_round(r: &RoundRecord, prev_at_s: Option<f64>) -> Result<(), String> {
    in_range("at_s", r.at_s, 0.0, MAX_UNIX_S)?;
    if let Some(p) = prev_at_s.filter(|&p| r.at_s <= p) {
        return Err(format!(
            "at_s: {} is not after the previous round's, {}",
            show(r.at_s),
            show(p)
        ));
    }
    positive("capacity.cpu_cores", r.capacity.cpu_cores, MAX_CORES)?;
    positive("capacity.mem_bytes", r.capacity.mem_bytes, MAX_BYTES)?;
    let amounts = |key: &str, x: Resources| -> Result<(), String> {
        in_range(&format!("{key}.cpu_cores"), x.cpu_cores, 0.0, MAX_CORES)?;
        in_range(&format!("{key}.mem_bytes"), x.mem_bytes, 0.0, MAX_BYTES)?;
        Ok(())
    };
    let mut ids = std::collections::HashSet::new();
    for (i, c) in r.containers.iter().enumerate() {
        let k = format!("containers[{i}]");
        if !ids.insert(c.meta.id.as_str()) {
            return Err(format!(
                "{k}.id: {:?} is in the round twice (one sample per container)",
                c.meta.id
            ));
        }
        amounts(&format!("{k}.request"), c.request)?;
        amounts(&format!("{k}.allocation"), c.allocation)?;
        amounts(&format!("{k}.usage"), c.usage)?;
        if let Some(x) = &c.sample {
            if let Some(cpu) = x.cpu_cores {
                in_range(&format!("{k}.sample.cpu_cores"), cpu, 0.0, MAX_CORES)?;
            }
            in_range(
                &format!("{k}.sample.mem_bytes"),
                x.mem_bytes,
                0.0,
                MAX_BYTES,
            )?;
            if let Some(p) = x.mem_peak_bytes {
                in_range(&format!("{k}.sample.mem_peak_bytes"), p, 0.0, MAX_BYTES)?;
            }
        }
        in_range(
            &format!("{k}.mem_floor_bytes"),
            c.meta.mem_floor_bytes,
            0.0,
            MAX_BYTES,
        )?;
        in_range(
            &format!("{k}.started_s"),
            c.meta.started_s,
            f64::MIN,
            MAX_UNIX_S,
        )?;
    }
    if r.forecasts.len() != r.containers.len() {
        return Err(format!(
            "forecasts: {} for {} containers (one per container)",
            r.forecasts.len(),
            r.containers.len()
        ));
    }
    for (i, e) in r.events.iter().enumerate() {
        if let KernelEvent::OomKill {
            limit_bytes, at_s, ..
        } = e
        {
            in_range(
                &format!("events[{i}].limit_bytes"),
                *limit_bytes,
                0.0,
                MAX_BYTES,
            )?;
            in_range(&format!("events[{i}].at_s"), *at_s, 0.0, MAX_UNIX_S)?;
        }
    }
    Ok(())
}

fn describe(a: &NodeAction) -> String {
    match &a.kind {
        NodeActionKind::Resize { from, to } => format!(
            "resize {:.3} -> {:.3} cores, {:.1} -> {:.1} MiB",
            from.cpu_cores,
            to.cpu_cores,
            from.mem_bytes / 1048576.0,
            to.mem_bytes / 1048576.0
        ),
        NodeActionKind::Evict { whole_app: true } => "evict (whole application)".into(),
        NodeActionKind::Evict { whole_app: false } => "evict".into(),
    }
}

/// A forecast as a mismatch line shows it: means and sigmas in cores and
/// MiB (the calibration tables are compared, not printed).
fn describe_forecast(f: Option<&Forecasts>) -> String {
    match f {
        None => "no forecast".into(),
        Some(f) => format!(
            "forecast cpu {:.3} ± {:.3} cores, memory {:.1} ± {:.1} MiB (hold {:.1} MiB)",
            f.cpu.mean,
            f.cpu.std,
            f.mem.mean / 1048576.0,
            f.mem.std / 1048576.0,
            f.mem_hold_bytes / 1048576.0
        ),
    }
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// Forecasts agree: the same presence, means and stds within 1e-9
/// relative, calibration tables within 1e-6 relative (they are f32). The
/// recorded samples read back exactly (serde_json's `float_roundtrip`:
/// without it, parsing could be one ulp off and a model's fit could drift
/// from the agent's), so this only forgives printing noise.
fn same_forecast(a: &Option<Forecasts>, b: &Option<Forecasts>) -> bool {
    let table = |x: &[f32], y: &[f32]| {
        x.iter().zip(y).all(|(&p, &q)| {
            let (p, q) = (f64::from(p), f64::from(q));
            p == q || (p - q).abs() <= 1e-6 * p.abs().max(q.abs())
        })
    };
    let pred = |x: &shaper::Predictive, y: &shaper::Predictive| {
        close(x.mean, y.mean)
            && close(x.std, y.std)
            && match (&x.calibration, &y.calibration) {
                (None, None) => true,
                (Some(c), Some(d)) => table(&c.upper, &d.upper) && table(&c.lower, &d.lower),
                _ => false,
            }
    };
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => pred(&x.cpu, &y.cpu) && pred(&x.mem, &y.mem),
        _ => false,
    }
}

fn same(a: &NodeAction, b: &NodeAction) -> bool {
    match (&a.kind, &b.kind) {
        (
            NodeActionKind::Resize { from: f1, to: t1 },
            NodeActionKind::Resize { from: f2, to: t2 },
        ) => [
            (f1.cpu_cores, f2.cpu_cores),
            (f1.mem_bytes, f2.mem_bytes),
            (t1.cpu_cores, t2.cpu_cores),
            (t1.mem_bytes, t2.mem_bytes),
        ]
        .iter()
        .all(|&(x, y)| close(x, y)),
        (k1, k2) => k1 == k2,
    }
}

/// Replays `rec` through a fresh node kernel and compares, round by round,
/// the replayed plan with the recorded decisions (and every forecast with
/// the recorded one). `shaper` replaces the recorded kernel config (to show
/// that a changed rule is caught).
pub fn check_parity(rec: &Recording, shaper: Option<&ShaperConfig>) -> Result<Parity, SimError> {
    let cfg = shaper.cloned().unwrap_or_else(|| rec.header.shaper.clone());
    let mut kernel = NodeKernel::new(cfg, rec.header.forecaster.clone(), rec.header.interval_s)?;
    if let Some(models) = &rec.header.models {
        // A restarted agent's run: from the models it restored.
        kernel
            .restore(models.clone())
            .map_err(|e| SimError::Workload(format!("header: the restored models: {e}")))?;
    }
    let mut decider = Decider::new();
    let mut p = Parity::default();
    for r in &rec.rounds {
        p.rounds += 1;
        for e in &r.events {
            kernel.apply(e);
        }
        let view = kernel.observe(&rec.header.node, r.at_s, r.capacity, r.containers.clone());
        // forecasts: the kernel's models
        for (c, recorded) in view.containers.iter().zip(&r.forecasts) {
            p.forecasts += 1;
            if !same_forecast(&c.forecast, recorded) {
                let recorded = describe_forecast(recorded.as_ref());
                let mut replayed = describe_forecast(c.forecast.as_ref());
                if replayed == recorded {
                    replayed.push_str(" (differs beyond these digits or in its calibration)");
                }
                p.mismatches.push(Mismatch {
                    round: r.round,
                    container: c.meta.name.clone(),
                    recorded: Some(recorded),
                    replayed: Some(replayed),
                });
            }
        }
        // decisions: only rounds planned on this node
        let Some(recorded) = &r.decisions else {
            continue;
        };
        if r.source != "local" {
            continue;
        }
        p.compared_rounds += 1;
        let replayed = kernel.plan(&view, &mut decider).actions;
        p.actions += recorded.len() as u64;
        let by_container = |v: &[NodeAction]| -> BTreeMap<String, NodeAction> {
            v.iter()
                .map(|a| (a.container_id.clone(), a.clone()))
                .collect()
        };
        let (rec_map, rep_map) = (by_container(recorded), by_container(&replayed));
        let order = |v: &[NodeAction]| -> Vec<String> {
            v.iter().map(|a| a.container_id.clone()).collect()
        };
        let names: BTreeMap<&str, &str> = r
            .containers
            .iter()
            .map(|c| (c.meta.id.as_str(), c.meta.name.as_str()))
            .collect();
        let mut ids: Vec<&String> = rec_map.keys().chain(rep_map.keys()).collect();
        ids.sort();
        ids.dedup();
        for id in ids {
            let (a, b) = (rec_map.get(id), rep_map.get(id));
            let ok = match (a, b) {
                (Some(a), Some(b)) => same(a, b),
                (None, None) => true,
                _ => false,
            };
            if !ok {
                p.mismatches.push(Mismatch {
                    round: r.round,
                    container: names.get(id.as_str()).copied().unwrap_or(id).to_string(),
                    recorded: a.map(describe),
                    replayed: b.map(describe),
                });
            }
        }
        if rec_map.len() == rep_map.len() && order(recorded) != order(&replayed) {
            p.mismatches.push(Mismatch {
                round: r.round,
                container: "(apply order)".into(),
                recorded: Some(order(recorded).join(",")),
                replayed: Some(order(&replayed).join(",")),
            });
        }
    }
    Ok(p)
}

/// A recording as a simulator workload: one host with the node's largest
/// recorded capacity; one application per application key, arriving at
/// its first container's first round; one component per container whose
/// usage series is what the agent sampled (relative to its request), with
/// the in-interval memory peaks where the agent read them, and whose work
/// is its time alive in the recording. An OOM kill the agent saw is kept
/// as a censored demand: the peak of the interval it ended is at least
/// just above the limit that killed it (what it wanted is unknown, but more
/// than that), so a replay at the recorded sizing kills it too and a
/// smaller sizing cannot look safe. A container whose
/// restart policy starts it again alone (`restarts_alone` in any round)
/// restarts alone after an OOM kill and continues its usage
/// ([`OomRestart::Component`]); the others re-run their application. A
/// request that changed while recorded (a limit changed by hand, which the
/// agent adopts) is a request change at the sample it was first seen. A
/// container's memory reservation, as last recorded, is its memory floor.
pub fn recorded_workload(rec: &Recording, name: &str) -> Result<Workload, SimError> {
    let Some(first) = rec.rounds.first() else {
        return Err(SimError::Workload(format!("recording {name} has no round")));
    };
    let origin = first.at_s;
    let interval = rec.header.interval_s;
    struct Seen {
        app: String,
        class: datasets::workload::Class,
        priority: i32,
        request: Resources,
        /// The request changes seen (a limit changed by hand, adopted as
        /// the container's request), at their sample.
        changes: Vec<RequestChange>,
        first_s: f64,
        restarts_alone: bool,
        /// Its memory reservation as last recorded.
        mem_floor_bytes: f64,
        cpu: Vec<f32>,
        mem: Vec<f32>,
        peak: Vec<f32>,
        /// A peak above the mean was read or an OOM kill seen.
        has_peak: bool,
    }
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    let mut capacity = Resources::ZERO;
    let rel = |v: f64, req: f64| if req > 0.0 { (v / req) as f32 } else { 0.0 };
    for r in &rec.rounds {
        capacity = Resources::new(
            capacity.cpu_cores.max(r.capacity.cpu_cores),
            capacity.mem_bytes.max(r.capacity.mem_bytes),
        );
        for c in &r.containers {
            let s = seen.entry(c.meta.id.clone()).or_insert_with(|| Seen {
                app: c.meta.app.clone(),
                class: c.meta.class,
                priority: c.meta.priority,
                request: c.request,
                changes: Vec::new(),
                first_s: r.at_s - origin,
                restarts_alone: false,
                mem_floor_bytes: 0.0,
                cpu: Vec::new(),
                mem: Vec::new(),
                peak: Vec::new(),
                has_peak: false,
            });
            s.restarts_alone |= c.meta.restarts_alone;
            s.mem_floor_bytes = c.meta.mem_floor_bytes;
            let in_force = s.changes.last().map_or(s.request, |x| x.request);
            if c.request != in_force {
                s.changes.push(RequestChange {
                    at_elapsed_s: s.mem.len() as f64 * interval,
                    request: c.request,
                });
            }
            let mem = rel(c.usage.mem_bytes, s.request.mem_bytes);
            let peak = c
                .sample
                .as_ref()
                .and_then(|x| x.mem_peak_bytes)
                .map_or(mem, |p| rel(p, s.request.mem_bytes).max(mem));
            s.has_peak |= peak > mem;
            s.cpu.push(rel(c.usage.cpu_cores, s.request.cpu_cores));
            s.mem.push(mem);
            s.peak.push(peak);
        }
        for e in &r.events {
            if let KernelEvent::OomKill {
                container_id,
                limit_bytes,
                ..
            } = e
            {
                // The interval that ended in the kill: this round's sample
                // of a container restarted in place, else its last one.
                if let Some(s) = seen.get_mut(container_id) {
                    let wanted = rel(*limit_bytes * CENSORED_ABOVE, s.request.mem_bytes);
                    if let Some(p) = s.peak.last_mut() {
                        *p = p.max(wanted);
                        s.has_peak = true;
                    }
                }
            }
        }
    }
    if !(capacity.cpu_cores > 0.0 && capacity.mem_bytes > 0.0) {
        return Err(SimError::Workload(format!(
            "recording {name}: node capacity must be positive, got {} cores and {} bytes",
            capacity.cpu_cores, capacity.mem_bytes
        )));
    }
    let mut apps: BTreeMap<String, AppSpec> = BTreeMap::new();
    for s in seen.into_values() {
        let n = apps.len() as u64;
        let app = apps.entry(s.app.clone()).or_insert_with(|| AppSpec {
            id: n,
            arrival_s: s.first_s,
            priority: s.priority,
            components: Vec::new(),
        });
        app.arrival_s = app.arrival_s.min(s.first_s);
        app.priority = app.priority.max(s.priority);
        let work_s = s.mem.len() as f64 * interval;
        let mut usage = UsageSeries::new(
            interval,
            Shape::scaled(Arc::from(s.cpu), s.request.cpu_cores),
            Shape::scaled(Arc::from(s.mem), s.request.mem_bytes),
        );
        if s.has_peak {
            usage.mem_peak_bytes = Some(Shape::scaled(Arc::from(s.peak), s.request.mem_bytes));
        }
        let mut c = ComponentSpec::new(s.class, s.request, work_s, usage);
        if s.restarts_alone {
            c.oom_restart = OomRestart::Component;
        }
        c.request_changes = s.changes;
        c.mem_floor_bytes = s.mem_floor_bytes;
        app.components.push(c);
    }
    let mut apps: Vec<AppSpec> = apps.into_values().collect();
    apps.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.id.cmp(&b.id)));
    Ok(Workload {
        name: format!("recorded:{name}"),
        hosts: vec![HostSpec { capacity }],
        apps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shaper::node::{ContainerMeta, ContainerSample, Sample};

    const MIB: f64 = 1024.0 * 1024.0;

    fn round(i: u64, mem_mib: f64, peak_mib: Option<f64>, events: Vec<KernelEvent>) -> RoundRecord {
        RoundRecord {
            round: i,
            at_s: 100.0 + i as f64,
            capacity: Resources::new(2.0, 1024.0 * MIB),
            events,
            containers: vec![ContainerSample {
                meta: ContainerMeta::core("c", "c", "web", 50.0),
                request: Resources::new(1.0, 256.0 * MIB),
                allocation: Resources::new(1.0, 128.0 * MIB),
                usage: Resources::new(0.1, mem_mib * MIB),
                sample: Some(Sample {
                    cpu_cores: Some(0.1),
                    mem_bytes: mem_mib * MIB,
                    mem_peak_bytes: peak_mib.map(|p| p * MIB),
                }),
                app_failures: 0,
                oom_kills: 0,
            }],
            labels: BTreeMap::new(),
            forecasts: vec![None],
            source: "local".into(),
            decisions: None,
        }
    }

    /// A one-second recording of `rounds`.
    fn recording(rounds: Vec<RoundRecord>) -> Recording {
        Recording {
            header: RecordingHeader {
                version: shaper::record::RECORD_VERSION,
                node: "n".into(),
                interval_s: 1.0,
                actuation: "shape".into(),
                mode: "standalone".into(),
                shaper: ShaperConfig::default(),
                forecaster: Default::default(),
                models: None,
            },
            rounds,
        }
    }

    /// The recorded in-interval peaks are the replay's peaks, and an OOM
    /// kill at 128 MiB makes that interval's peak just above 128 MiB
    /// although the samples never showed more than 100 MiB.
    #[test]
    fn peaks_and_oom_kills_are_kept_as_demand() {
        let kill = KernelEvent::OomKill {
            container_id: "c".into(),
            limit_bytes: 128.0 * MIB,
            at_s: 102.0,
        };
        let rec = recording(vec![
            round(0, 50.0, None, vec![]),
            round(1, 60.0, Some(100.0), vec![]),
            round(2, 20.0, None, vec![kill]),
            round(3, 30.0, None, vec![]),
        ]);
        let wl = recorded_workload(&rec, "t").expect("workload");
        let u = &wl.apps[0].components[0].usage;
        let peaks: Vec<f64> = (0..4).map(|i| u.mem_peak(i) / MIB).collect();
        assert!((peaks[0] - 50.0).abs() < 1e-3, "{peaks:?}");
        assert!((peaks[1] - 100.0).abs() < 1e-3, "{peaks:?}");
        assert!(peaks[2] > 128.0 && peaks[2] < 129.0, "{peaks:?}");
        assert!((peaks[3] - 30.0).abs() < 1e-3, "{peaks:?}");
        assert!(
            (u.mem_bytes.at(2) / MIB - 20.0).abs() < 1e-3,
            "the mean is kept"
        );
    }

    /// A recorded memory reservation is the replayed component's floor:
    /// an idle container is sized down to it, not below.
    #[test]
    fn a_recorded_reservation_is_a_floor() {
        let run = |floor_mib: f64| {
            let mut rounds: Vec<RoundRecord> =
                (0..300).map(|i| round(i, 20.0, None, vec![])).collect();
            for r in &mut rounds {
                r.containers[0].meta.mem_floor_bytes = floor_mib * MIB;
            }
            let wl = recorded_workload(&recording(rounds), "t").expect("workload");
            assert_eq!(wl.apps[0].components[0].mem_floor_bytes, floor_mib * MIB);
            let cfg = crate::SimConfig {
                interval_s: 1.0,
                shaper: ShaperConfig {
                    grace_period_s: 0.0,
                    ..ShaperConfig::uniform()
                },
                ..Default::default()
            };
            let r = crate::simulate(&wl, &cfg, None).expect("replay");
            r.metrics.mem_alloc_byte_s / MIB
        };
        let (free, floored) = (run(0.0), run(200.0));
        // 300 s of a 256 MiB request: shaped far below 200 MiB on average
        // without the floor, at least 200 MiB all along with it.
        assert!(free < 100.0 * 300.0, "{free} MiB s");
        assert!(floored >= 200.0 * 299.0, "{floored} MiB s");
        assert!(floored <= 256.0 * 300.0, "{floored} MiB s");
    }

    /// A header whose interval the simulator cannot run at is refused
    /// naming the file, the line and the key (it failed later with an
    /// error that named neither).
    #[test]
    fn a_header_interval_out_of_range_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("rec.jsonl");
        let mut rec = recording(vec![]);
        rec.header.interval_s = 1e-300;
        let line = serde_json::to_string(&Record::Header(Box::new(rec.header))).expect("json");
        std::fs::write(&path, format!("{line}\n")).expect("write");
        let err = read_recording(&path).expect_err("refused").to_string();
        assert!(
            err.contains("rec.jsonl")
                && err.contains("line 1: header: interval_s must be in [0.1, 86400]"),
            "{err}"
        );
    }

    /// A limit changed by hand while recorded (the agent adopts it as the
    /// request) is a request change at the sample it was first seen; the
    /// usage stays in bytes.
    #[test]
    fn a_request_changed_by_hand_is_a_request_change() {
        let mut rounds: Vec<RoundRecord> = (0..4).map(|i| round(i, 50.0, None, vec![])).collect();
        for r in &mut rounds[2..] {
            r.containers[0].request = Resources::new(0.5, 512.0 * MIB);
        }
        let rec = recording(rounds);
        let wl = recorded_workload(&rec, "t").expect("workload");
        let c = &wl.apps[0].components[0];
        assert_eq!(c.request, Resources::new(1.0, 256.0 * MIB));
        assert_eq!(
            c.request_changes,
            vec![RequestChange {
                at_elapsed_s: 2.0,
                request: Resources::new(0.5, 512.0 * MIB),
            }]
        );
        assert_eq!(c.request_at(1.9), c.request);
        assert!((c.usage.mem_bytes.at(3) / MIB - 50.0).abs() < 1e-3);
    }
    /// Writes `rec` as a recording file and reads it back.
    fn read_back(rec: &Recording) -> Result<Recording, String> {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("rec.jsonl");
        let mut text =
            serde_json::to_string(&Record::Header(Box::new(rec.header.clone()))).expect("json");
        text.push('\n');
        for r in &rec.rounds {
            text.push_str(&serde_json::to_string(&Record::Round(r.clone())).expect("json"));
            text.push('\n');
        }
        std::fs::write(&path, text).expect("write");
        read_recording(&path).map_err(|e| e.to_string())
    }

    /// QA E4: a round's values are checked as the trace readers check
    /// theirs: 1e300 or negative amounts, a capacity of 0 or 1e300, a time
    /// that goes back and a container twice in a round are errors naming
    /// the file, the line and the key (they replayed with absurd figures or
    /// were silently ignored).
    #[test]
    fn out_of_range_round_values_are_refused_naming_the_line_and_key() {
        let base = || {
            (0..4)
                .map(|i| round(i, 50.0, None, vec![]))
                .collect::<Vec<_>>()
        };
        assert!(read_back(&recording(base())).is_ok());
        type Edit = fn(&mut RoundRecord);
        let cases: [(Edit, &str); 10] = [
            (
                |r| r.containers[0].request.mem_bytes = 1e300,
                "containers[0].request.mem_bytes: 1e300 is above the largest accepted",
            ),
            (
                |r| r.containers[0].usage.mem_bytes = 1e300,
                "containers[0].usage.mem_bytes: 1e300 is above",
            ),
            (
                |r| r.containers[0].usage.mem_bytes = -1e9,
                "containers[0].usage.mem_bytes: -1000000000 is negative",
            ),
            (
                |r| r.containers[0].request.cpu_cores = -1.0,
                "containers[0].request.cpu_cores: -1 is negative",
            ),
            (
                |r| {
                    if let Some(s) = r.containers[0].sample.as_mut() {
                        s.mem_peak_bytes = Some(1e300);
                    }
                },
                "containers[0].sample.mem_peak_bytes: 1e300 is above",
            ),
            (
                |r| r.capacity.mem_bytes = 1e300,
                "capacity.mem_bytes: 1e300 is above",
            ),
            (
                |r| r.capacity.cpu_cores = 0.0,
                "capacity.cpu_cores: 0 must be above 0",
            ),
            (
                |r| r.at_s = 50.0,
                "at_s: 50 is not after the previous round's, 101",
            ),
            (
                |r| {
                    let c = r.containers[0].clone();
                    r.containers.push(c);
                    r.forecasts.push(None);
                },
                "containers[1].id: \"c\" is in the round twice",
            ),
            (|r| r.forecasts.clear(), "forecasts: 0 for 1 containers"),
        ];
        for (edit, want) in cases {
            let mut rounds = base();
            edit(&mut rounds[2]);
            let e = read_back(&recording(rounds)).expect_err(want);
            // the header is line 1: round 2 is line 4
            assert!(
                e.contains("rec.jsonl") && e.contains(&format!("line 4: {want}")),
                "{want}: {e}"
            );
        }
    }
}

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
use shaper::record::{KernelEvent, Record, RecordingHeader, RoundRecord};
use shaper::Resources;

use crate::SimError;

mod parity;
pub use parity::{check_parity, Mismatch, Parity};

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
/// A round the agent's memory watch ran early (between two scheduled
/// rounds) is no interval of its own: its peaks and OOM kills join the
/// interval the next round closes, so a replay sees the growth that
/// triggered it as fast as the agent did (the last round of a recording,
/// if early, is kept as an interval).
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
        /// The sample of an early round (cpu, mem, peak), for the next
        /// round's interval.
        early: Option<(f32, f32, f32)>,
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
                early: None,
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
            let cpu = rel(c.usage.cpu_cores, s.request.cpu_cores);
            if r.early {
                let before = s.early.map_or(0.0, |e| e.2);
                s.early = Some((cpu, mem, peak.max(before)));
                continue;
            }
            let peak = s.early.take().map_or(peak, |e| peak.max(e.2));
            s.has_peak |= peak > mem;
            s.cpu.push(cpu);
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
                    if let Some(p) = s.early.as_mut().map(|e| &mut e.2).or(s.peak.last_mut()) {
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
    for mut s in seen.into_values() {
        if let Some((cpu, mem, peak)) = s.early.take() {
            s.has_peak |= peak > mem;
            s.cpu.push(cpu);
            s.mem.push(mem);
            s.peak.push(peak);
        }
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
mod tests;

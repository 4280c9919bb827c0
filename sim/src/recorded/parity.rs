//! [`check_parity`]: a recording replayed round by round through a fresh
//! node kernel, its plans compared with the decisions the agent recorded.

use std::collections::BTreeMap;

use shaper::node::{NodeAction, NodeActionKind, NodeKernel};
use shaper::{Decider, Forecasts, ShaperConfig};

use super::Recording;
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

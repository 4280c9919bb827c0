//! Validation of the requests agents send: names, amounts, forecasts,
//! acks. Every error names its key path; nothing is accepted that the
//! shaper's arithmetic cannot carry.

use crate::{Ack, AckOutcome, AckRequest, ReportRequest, MAX_ERROR_LEN, MAX_NAME_LEN};
use shaper::{Predictive, Resources};
use std::fmt;

// Key paths are `Display` and formatted only when there is an error: a
// report of 100 components is validated 1,000 times a second at scale.

fn check_name(what: impl fmt::Display, s: &str, errors: &mut Vec<String>) {
    if s.is_empty() {
        errors.push(format!("{what} is empty"));
    } else if s.len() > MAX_NAME_LEN {
        errors.push(format!("{what} is longer than {MAX_NAME_LEN} bytes"));
    } else if s.chars().any(|c| c.is_control()) {
        errors.push(format!("{what} contains control characters"));
    }
}

/// Largest magnitude of a reported amount (cores, bytes, a forecast's
/// mean or std): far above any machine, and small enough that the
/// shaper's sums and buffers over them stay finite (a value that passes
/// validation never turns into a `null` in the answer).
pub const MAX_REPORTED_VALUE: f64 = 1e18;

/// Largest calibration multiplier of a reported forecast.
pub const MAX_CALIBRATION_MULTIPLIER: f32 = 1e6;

fn check_resources(what: impl fmt::Display, r: &Resources, errors: &mut Vec<String>) {
    for (name, v) in [("cpu_cores", r.cpu_cores), ("mem_bytes", r.mem_bytes)] {
        if !(0.0..=MAX_REPORTED_VALUE).contains(&v) {
            errors.push(format!(
                "{what}.{name} must be in [0, {MAX_REPORTED_VALUE:e}] (got {v})"
            ));
        }
    }
}

fn check_amount(what: impl fmt::Display, x: f64, errors: &mut Vec<String>) {
    if !(0.0..=MAX_REPORTED_VALUE).contains(&x) {
        errors.push(format!("{what} must be in [0, {MAX_REPORTED_VALUE:e}]"));
    }
}

fn check_predictive(what: impl fmt::Display, p: &Predictive, errors: &mut Vec<String>) {
    if !(-MAX_REPORTED_VALUE..=MAX_REPORTED_VALUE).contains(&p.mean) {
        errors.push(format!(
            "{what}.mean must be finite, of magnitude at most {MAX_REPORTED_VALUE:e}"
        ));
    }
    if !(0.0..=MAX_REPORTED_VALUE).contains(&p.std) {
        errors.push(format!("{what}.std must be in [0, {MAX_REPORTED_VALUE:e}]"));
    }
    if let Some(c) = &p.calibration {
        if c.upper
            .iter()
            .chain(c.lower.iter())
            .any(|m| !(0.0..=MAX_CALIBRATION_MULTIPLIER).contains(m))
        {
            errors.push(format!(
                "{what}.calibration multipliers must be in [0, {MAX_CALIBRATION_MULTIPLIER:e}]"
            ));
        }
    }
}

fn check_opt_time(what: impl fmt::Display, v: Option<f64>, errors: &mut Vec<String>) {
    if let Some(v) = v {
        if !v.is_finite() || v < 0.0 {
            errors.push(format!("{what} must be finite and >= 0"));
        }
    }
}

/// `components[i].field`, formatted on demand.
#[derive(Clone, Copy)]
struct At(usize, &'static str);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "components[{}].{}", self.0, self.1)
    }
}

impl ReportRequest {
    /// Every problem with the report's content (the server answers 400 with
    /// all of them). `max_components` bounds the number of components.
    pub fn validate(&self, max_components: usize) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        check_name("agent_id", &self.agent_id, &mut errors);
        check_resources("capacity", &self.capacity, &mut errors);
        if self.components.len() > max_components {
            errors.push(format!(
                "{} components, more than the limit of {max_components}",
                self.components.len()
            ));
        }
        let mut seen = std::collections::HashSet::with_capacity(self.components.len());
        for (i, c) in self.components.iter().enumerate() {
            // Stop at a bounded number of messages: a huge bad report must not
            // produce a huge answer.
            if errors.len() >= 20 {
                errors.push("... (more errors not shown)".to_string());
                break;
            }
            check_name(At(i, "container_id"), &c.container_id, &mut errors);
            check_name(At(i, "app"), &c.app, &mut errors);
            check_resources(At(i, "request"), &c.request, &mut errors);
            check_resources(At(i, "allocation"), &c.allocation, &mut errors);
            check_resources(At(i, "usage"), &c.usage, &mut errors);
            if let Some(f) = &c.forecast {
                check_predictive(At(i, "forecast.cpu"), &f.cpu, &mut errors);
                check_predictive(At(i, "forecast.mem"), &f.mem, &mut errors);
                for (key, x) in [
                    ("forecast.mem_hold_bytes", f.mem_hold_bytes),
                    ("forecast.mem_small_hold_bytes", f.mem_small_hold_bytes),
                ] {
                    check_amount(At(i, key), x, &mut errors);
                }
            }
            check_amount(At(i, "mem_floor_bytes"), c.mem_floor_bytes, &mut errors);
            check_amount(At(i, "oom_floor_bytes"), c.oom_floor_bytes, &mut errors);
            if !c.started_s.is_finite() || c.started_s < 0.0 {
                errors.push(format!("{} must be finite and >= 0", At(i, "started_s")));
            }
            check_opt_time(At(i, "work_done_s"), c.work_done_s, &mut errors);
            check_opt_time(At(i, "app_submitted_s"), c.app_submitted_s, &mut errors);
            check_opt_time(
                At(i, "expected_remaining_s"),
                c.expected_remaining_s,
                &mut errors,
            );
            if !seen.insert(c.container_id.as_str()) {
                errors.push(format!(
                    "{} {:?} is reported twice",
                    At(i, "container_id"),
                    c.container_id
                ));
            }
        }
        check_acks(&self.acks, max_components, &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

fn check_acks(acks: &[Ack], max: usize, errors: &mut Vec<String>) {
    if acks.len() > max {
        errors.push(format!("{} acks, more than the limit of {max}", acks.len()));
    }
    for (i, a) in acks.iter().enumerate().take(max) {
        if errors.len() >= 20 {
            break;
        }
        check_name(format_args!("acks[{i}].action_id"), &a.action_id.0, errors);
        if let AckOutcome::Failed { error } = &a.outcome {
            if error.len() > MAX_ERROR_LEN {
                errors.push(format!(
                    "acks[{i}].outcome.error is longer than {MAX_ERROR_LEN} bytes"
                ));
            }
        }
    }
}

impl AckRequest {
    pub fn validate(&self, max_acks: usize) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        check_name("agent_id", &self.agent_id, &mut errors);
        check_acks(&self.acks, max_acks, &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

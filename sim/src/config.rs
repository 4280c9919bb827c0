//! `SimConfig`: the simulator's TOML configuration.
//!
//! ```toml
//! interval_s = 300.0            # seconds between shaping rounds
//! seed = 0                      # seed of generated (synthetic) workloads
//! backfill = false              # strict scheduler order (true: later apps may pass a blocked one)
//! placement = "first_fit"       # first_fit | worst_fit
//! # max_time_s = 86400.0        # stop at this simulated time (default: run to completion)
//! max_restarts = 1000           # an app killed or evicted at more instants is abandoned (failed)
//! # oom_restart = "component"   # application | component; default: the workload's own
//! parallel_forecasts = true     # update forecasters on all cores (same results)
//! forecaster_source = "model"   # model ([forecaster] table) | oracle (true future usage)
//!
//! [shaper]                      # the kernel's config (shaper::ShaperConfig), as in the agent;
//! policy = "pessimistic"        #   `order` is also the scheduler order
//! k1 = 0.3
//! k2 = 3.0
//! # horizon_samples = 1         # default: one interval's worth of samples
//! min_history_samples = 3       # a model's forecast is used after this many samples
//!
//! [forecaster]                  # forecaster::config::ModelConfig
//! kind = "gp"
//! calibrated = true
//! ```

use std::path::Path;

use datasets::workload::OomRestart;
use forecaster::config::ModelConfig;
use serde::{Deserialize, Serialize};
use shaper::ShaperConfig;
use tailor_core::ConfigErrors;
pub use tailor_core::{MAX_INTERVAL_S, MIN_INTERVAL_S};

use crate::engine::{EngineConfig, OptimisticGrowth};
use crate::placement::Placement;
use crate::SimError;

/// Latest `max_time_s` (about 100 years).
pub const MAX_TIME_S: f64 = 3.2e9;
/// Largest `max_restarts`.
pub const MAX_RESTARTS: u32 = 1_000_000;

/// Where the shaper's forecasts come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForecasterSource {
    /// The model of the `[forecaster]` table, one per component and resource.
    #[default]
    Model,
    /// The exact future peak (simulator only; `forecaster::Oracle`, built
    /// from window peaks).
    Oracle,
}

/// The simulator's configuration. Every field has a default (see
/// [`SimConfig::default`]), so an empty file is valid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Seconds between two shaping rounds. Default 300.
    pub interval_s: f64,
    /// Seed of generated workloads (`synthetic`). Default 0. The engine
    /// itself draws no random numbers.
    pub seed: u64,
    /// Let queued applications pass one that does not fit. Default false.
    pub backfill: bool,
    /// Host choice. Default `first_fit`.
    pub placement: Placement,
    /// Stop at this simulated time. Default: absent = run to completion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_time_s: Option<f64>,
    /// An application killed or evicted (a failure) more than this many
    /// times is abandoned and counts as failed, so that every run ends
    /// (components stopped at the same instant count once). Default 1000.
    pub max_restarts: u32,
    /// What an OOM kill or an eviction does, for every component:
    /// `application` (the thesis: a core component's kill re-runs its
    /// application from its start) or `component` (the component alone
    /// restarts and continues its usage where it was stopped). Default: absent = the workload's own
    /// (Google 2019 tasks and Alibaba gpu-v2025 instances restart alone,
    /// every other workload re-runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oom_restart: Option<OomRestart>,
    /// Update forecasters in parallel. Default true (results identical).
    pub parallel_forecasts: bool,
    /// `model` (default) or `oracle`.
    pub forecaster_source: ForecasterSource,
    /// Optimistic policy only: `host_oom` (default; an unplanned growth
    /// overcommits the host and the host OOM killer acts) or `refuse` (the
    /// thesis: a growth that does not fit is refused and the component dies
    /// when its usage crosses the allocation it kept).
    pub optimistic_growth: OptimisticGrowth,
    /// The `[shaper]` table; its `order` is also the scheduler's queue order.
    pub shaper: ShaperConfig,
    /// The `[forecaster]` table (used when `forecaster_source = "model"`).
    pub forecaster: ModelConfig,
}

impl Default for SimConfig {
    fn default() -> Self {
        let e = EngineConfig::default();
        Self {
            interval_s: e.interval_s,
            seed: 0,
            backfill: e.backfill,
            placement: e.placement,
            max_time_s: e.max_time_s,
            max_restarts: e.max_restarts,
            oom_restart: e.oom_restart,
            parallel_forecasts: e.parallel_forecasts,
            forecaster_source: ForecasterSource::Model,
            optimistic_growth: e.optimistic_growth,
            shaper: ShaperConfig::default(),
            forecaster: ModelConfig::default(),
        }
    }
}

impl SimConfig {
    /// Parses TOML and validates it.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Self, SimError> {
        let cfg: SimConfig = toml::from_str(text).map_err(|e| SimError::Parse {
            path: origin.to_string(),
            message: e.to_string(),
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Reads, parses and validates a TOML file.
    pub fn load(path: &Path) -> Result<Self, SimError> {
        let text = std::fs::read_to_string(path).map_err(|source| SimError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_toml_str(&text, &path.display().to_string())
    }

    /// Every problem at once, with dotted key paths. Ranges (so that every
    /// accepted value runs in bounded time and memory): `interval_s`
    /// [0.1, 86400]; `max_time_s` (0, 3.2e9] (about 100 years);
    /// `max_restarts` [1, 1000000]; `[shaper]`
    /// (the kernel's config, horizon and history included) and
    /// `[forecaster]` as their own `validate()`.
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        e.range(
            "interval_s",
            self.interval_s,
            MIN_INTERVAL_S,
            MAX_INTERVAL_S,
        );
        if let Some(t) = self.max_time_s {
            e.check("max_time_s", t > 0.0 && t <= MAX_TIME_S, || {
                format!(
                    "must be in (0, {MAX_TIME_S}], got {}",
                    tailor_core::short_num(t)
                )
            });
        }
        e.range("max_restarts", self.max_restarts, 1, MAX_RESTARTS);
        e.nested("shaper", self.shaper.validate());
        e.nested("forecaster", self.forecaster.validate());
        e.into_result()
    }

    /// The engine's part of the configuration.
    pub fn engine(&self) -> EngineConfig {
        EngineConfig {
            interval_s: self.interval_s,
            backfill: self.backfill,
            placement: self.placement,
            max_time_s: self.max_time_s,
            max_restarts: self.max_restarts,
            oom_restart: self.oom_restart,
            parallel_forecasts: self.parallel_forecasts,
            optimistic_growth: self.optimistic_growth,
            warm_samples: match self.forecaster_source {
                ForecasterSource::Oracle => 0,
                ForecasterSource::Model => self.forecaster.warm_samples(),
            },
        }
    }

    /// Name of the forecaster in reports: `oracle` or the model kind.
    pub fn forecaster_label(&self) -> String {
        match self.forecaster_source {
            ForecasterSource::Oracle => "oracle".to_string(),
            ForecasterSource::Model => self.forecaster.kind.as_str().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_default_and_valid() {
        let c = SimConfig::from_toml_str("", "test").expect("valid");
        assert_eq!(c, SimConfig::default());
    }

    #[test]
    fn full_example_parses() {
        let text = r#"
interval_s = 60.0
seed = 7
placement = "worst_fit"
forecaster_source = "oracle"
[shaper]
policy = "optimistic"
horizon_samples = 2
k1 = 0.1
k2 = 2.0
[forecaster]
kind = "last"
"#;
        let c = SimConfig::from_toml_str(text, "test").expect("valid");
        assert_eq!(c.interval_s, 60.0);
        assert_eq!(c.placement, Placement::WorstFit);
        assert_eq!(c.forecaster_label(), "oracle");
        assert_eq!(c.shaper.k1, 0.1);
    }

    #[test]
    fn the_previous_defaults_file_is_the_uniform_form_with_the_gp() {
        // configs/previous-defaults.toml reproduces the figures of docs/results.md
        // measured before the shipped defaults changed: it must not drift.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/previous-defaults.toml");
        let c = SimConfig::load(&path).expect("configs/previous-defaults.toml is valid");
        assert_eq!(c.shaper, shaper::ShaperConfig::uniform());
        assert_eq!(c.forecaster.kind, forecaster::config::ModelKind::Gp);
        assert_eq!(
            SimConfig {
                shaper: c.shaper.clone(),
                forecaster: c.forecaster.clone(),
                ..SimConfig::default()
            },
            c,
            "only the shaper and the forecaster kind differ from the defaults"
        );
    }

    #[test]
    fn oom_restart_overrides_the_workload_or_is_refused_by_name() {
        let c = SimConfig::from_toml_str("oom_restart = \"component\"", "t").expect("valid");
        assert_eq!(c.oom_restart, Some(OomRestart::Component));
        assert_eq!(c.engine().oom_restart, Some(OomRestart::Component));
        assert_eq!(SimConfig::default().oom_restart, None);
        match SimConfig::from_toml_str("oom_restart = \"task\"", "f.toml") {
            Err(SimError::Parse { path, message }) => {
                assert_eq!(path, "f.toml");
                assert!(message.contains("oom_restart"), "{message}");
            }
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn unknown_keys_are_rejected() {
        assert!(SimConfig::from_toml_str("intervall_s = 3.0", "t").is_err());
        assert!(SimConfig::from_toml_str("[shaper]\nkk = 1", "t").is_err());
    }

    #[test]
    fn issue_13_values_get_a_clear_error() {
        for (text, key) in [
            ("interval_s = 1e-9", "interval_s"),
            ("interval_s = 1e300", "interval_s"),
            (
                "[shaper]\nhorizon_samples = 9223372036854775807",
                "shaper.horizon_samples",
            ),
            (
                "[shaper]\nmin_history_samples = 9223372036854775807",
                "shaper.min_history_samples",
            ),
            ("max_time_s = inf", "max_time_s"),
            ("max_restarts = 0", "max_restarts"),
            ("max_restarts = 1000001", "max_restarts"),
        ] {
            match SimConfig::from_toml_str(text, "t") {
                Err(SimError::Config(e)) => assert_eq!(e.keys(), vec![key], "{text}"),
                other => panic!("{text}: expected a config error, got {other:?}"),
            }
        }
    }

    #[test]
    fn all_errors_reported_at_once() {
        let text =
            "interval_s = -1.0\nmax_time_s = 0.0\n[shaper]\nk1 = -1.0\nhorizon_samples = 0\n";
        let err = SimConfig::from_toml_str(text, "t")
            .expect_err("invalid")
            .to_string();
        for key in [
            "interval_s",
            "shaper.horizon_samples",
            "max_time_s",
            "shaper.k1",
        ] {
            assert!(err.contains(key), "{key} missing from {err}");
        }
    }
}

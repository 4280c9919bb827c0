//! Model selection: one serde config that builds any forecaster.
//!
//! The simulator and the agent call [`ModelConfig::build`]; the CLI maps its
//! `--model` flag to [`ModelKind`].

use serde::{Deserialize, Serialize};

use crate::arima::{ArimaConfig, AutoArima};
use crate::baselines::{LastValue, PeakConfig, Vpa, VpaConfig, WindowPeak};
use crate::calibration::{Calibrated, CalibrationConfig};
use crate::gp::{Gp, GpConfig};
use crate::{ConfigErrors, ForecastError, Forecaster};

/// Which model to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Auto-ARIMA (`forecaster::arima`).
    Arima,
    /// History-kernel Gaussian process (default).
    #[default]
    Gp,
    /// Last value.
    Last,
    /// Moving-window peak.
    Peak,
    /// Kubernetes-VPA-style decaying percentile.
    Vpa,
}

impl ModelKind {
    /// Every kind, in CLI order.
    pub const ALL: [ModelKind; 5] = [
        ModelKind::Arima,
        ModelKind::Gp,
        ModelKind::Last,
        ModelKind::Peak,
        ModelKind::Vpa,
    ];

    /// The lowercase name (`"arima"`, `"gp"`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            ModelKind::Arima => "arima",
            ModelKind::Gp => "gp",
            ModelKind::Last => "last",
            ModelKind::Peak => "peak",
            ModelKind::Vpa => "vpa",
        }
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ModelKind {
    type Err = ForecastError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ModelKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                ForecastError::InvalidConfig(format!(
                    "unknown model {s:?} (expected arima, gp, last, peak or vpa)"
                ))
            })
    }
}

/// Everything needed to build one forecaster. Defaults: `kind = gp`,
/// `calibrated = true`, every sub-config at its own defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Model to build (default `gp`).
    pub kind: ModelKind,
    /// Wrap the model in [`Calibrated`] (default true).
    pub calibrated: bool,
    /// Calibration wrapper settings.
    pub calibration: CalibrationConfig,
    /// Auto-ARIMA settings.
    pub arima: ArimaConfig,
    /// GP settings.
    pub gp: GpConfig,
    /// Moving-window peak settings.
    pub peak: PeakConfig,
    /// VPA-style recommender settings.
    pub vpa: VpaConfig,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            kind: ModelKind::Gp,
            calibrated: true,
            calibration: CalibrationConfig::default(),
            arima: ArimaConfig::default(),
            gp: GpConfig::default(),
            peak: PeakConfig::default(),
            vpa: VpaConfig::default(),
        }
    }
}

impl ModelConfig {
    /// Default config of one kind.
    pub fn of_kind(kind: ModelKind) -> Self {
        Self {
            kind,
            ..Self::default()
        }
    }

    /// Checks every sub-config (all of them, whatever `kind` is) and reports
    /// every problem at once, keys relative to the `[forecaster]` table
    /// (`gp.history`, `arima.window`, ...).
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        e.nested("calibration", self.calibration.validate());
        e.nested("arima", self.arima.validate());
        e.nested("gp", self.gp.validate());
        e.nested("peak", self.peak.validate());
        e.nested("vpa", self.vpa.validate());
        e.into_result()
    }

    /// Builds the configured model (wrapped in [`Calibrated`] when
    /// `calibrated`). Fails on an invalid config.
    pub fn build(&self) -> Result<Box<dyn Forecaster>, ForecastError> {
        self.validate()?;
        let model: Box<dyn Forecaster> = match self.kind {
            ModelKind::Arima => Box::new(AutoArima::new(self.arima.clone())?),
            ModelKind::Gp => Box::new(Gp::new(self.gp.clone())?),
            ModelKind::Last => Box::new(LastValue::new()),
            ModelKind::Peak => Box::new(WindowPeak::new(self.peak.clone())?),
            ModelKind::Vpa => Box::new(Vpa::new(self.vpa.clone())?),
        };
        if self.calibrated {
            Ok(Box::new(Calibrated::new(model, self.calibration.clone())?))
        } else {
            Ok(model)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_calibrated_gp() {
        let c = ModelConfig::default();
        assert_eq!(c.kind, ModelKind::Gp);
        assert!(c.calibrated);
        let m = c.build().expect("default builds");
        assert_eq!(m.name(), "gp");
        assert!(m.forecast(1).calibration.is_some());
    }

    #[test]
    fn every_kind_builds_and_forecasts() {
        for kind in ModelKind::ALL
            .into_iter()
            .filter(|k| *k != ModelKind::Arima)
        {
            for calibrated in [false, true] {
                let mut m = ModelConfig {
                    kind,
                    calibrated,
                    ..ModelConfig::default()
                }
                .build()
                .expect("builds");
                assert_eq!(m.name(), kind.as_str());
                for i in 0..50 {
                    m.observe(1.0 + (i % 7) as f64).expect("finite");
                }
                let p = m.forecast(3);
                assert!(p.mean.is_finite() && p.std.is_finite(), "{kind}: {p:?}");
                assert_eq!(p.calibration.is_some(), calibrated);
                assert_eq!(m.observed(), 50);
            }
        }
    }

    #[test]
    fn serde_round_trip_and_unknown_fields() {
        let c = ModelConfig {
            kind: ModelKind::Vpa,
            calibrated: false,
            ..ModelConfig::default()
        };
        let s = serde_json::to_string(&c).expect("ser");
        assert!(s.contains("\"kind\":\"vpa\""));
        let back: ModelConfig = serde_json::from_str(&s).expect("de");
        assert_eq!(back, c);
        let partial: ModelConfig =
            serde_json::from_str(r#"{"kind":"peak","peak":{"window":6}}"#).expect("partial");
        assert_eq!(partial.peak.window, 6);
        assert!(partial.calibrated);
        assert!(serde_json::from_str::<ModelConfig>(r#"{"kind":"gp","bogus":1}"#).is_err());
        assert!(serde_json::from_str::<ModelConfig>(r#"{"gp":{"histroy":3}}"#).is_err());
    }

    #[test]
    fn validate_collects_errors_from_every_section() {
        let mut c = ModelConfig::default();
        c.gp.history = 0;
        c.peak.window = 0;
        c.vpa.margin = 0.5;
        c.arima.window = 0;
        let e = c.validate().expect_err("invalid").to_string();
        assert!(
            e.contains("gp.history") && e.contains("peak.window") && e.contains("vpa.margin"),
            "{e}"
        );
        assert!(c.build().is_err());
        assert!("nope".parse::<ModelKind>().is_err());
        assert_eq!("arima".parse::<ModelKind>().expect("ok"), ModelKind::Arima);
    }
}

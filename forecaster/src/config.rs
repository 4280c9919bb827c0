//! Model selection: one serde config that builds any forecaster.
//!
//! The simulator and the agent call [`ModelConfig::build`]; the CLI maps its
//! `--model` flag to [`ModelKind`].

use serde::{Deserialize, Serialize};

use crate::arima::{ArimaConfig, AutoArima};
use crate::baselines::{LastValue, PeakConfig, Vpa, VpaConfig, WindowPeak};
use crate::calibration::{Calibrated, CalibrationConfig};
use crate::gp::{Gp, GpConfig};
use crate::vpa::{VpaForecaster, VpaRecommenderConfig, VpaResource};
use crate::{ConfigErrors, ForecastError, Forecaster};

/// Which model to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Auto-ARIMA (`forecaster::arima`).
    Arima,
    /// History-kernel Gaussian process.
    Gp,
    /// Last value (default: with the kernel's one-day memory hold and
    /// buffers, the best of the forecasters on every trace we replayed; see
    /// docs/results.md, "Defaults").
    #[default]
    Last,
    /// Moving-window peak.
    Peak,
    /// The Kubernetes VPA recommender, ported faithfully (`forecaster::vpa`).
    Vpa,
    /// The older simplified VPA-style decaying percentile
    /// ([`crate::baselines::Vpa`]).
    #[serde(rename = "vpa-simple")]
    VpaSimple,
}

impl ModelKind {
    /// Every kind, in CLI order.
    pub const ALL: [ModelKind; 6] = [
        ModelKind::Arima,
        ModelKind::Gp,
        ModelKind::Last,
        ModelKind::Peak,
        ModelKind::Vpa,
        ModelKind::VpaSimple,
    ];

    /// The lowercase name (`"arima"`, `"gp"`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            ModelKind::Arima => "arima",
            ModelKind::Gp => "gp",
            ModelKind::Last => "last",
            ModelKind::Peak => "peak",
            ModelKind::Vpa => "vpa",
            ModelKind::VpaSimple => "vpa-simple",
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
                    "unknown model {s:?} (expected arima, gp, last, peak, vpa or vpa-simple)"
                ))
            })
    }
}

/// Everything needed to build one forecaster. Defaults: `kind = gp`,
/// `calibrated = true`, every sub-config at its own defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Model to build (default `last`).
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
    /// Faithful VPA recommender settings (model `vpa`).
    pub vpa: VpaRecommenderConfig,
    /// Simplified VPA-style settings (model `vpa-simple`; this section was
    /// `vpa` before the faithful port).
    pub vpa_simple: VpaConfig,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            kind: ModelKind::Last,
            calibrated: true,
            calibration: CalibrationConfig::default(),
            arima: ArimaConfig::default(),
            gp: GpConfig::default(),
            peak: PeakConfig::default(),
            vpa: VpaRecommenderConfig::default(),
            vpa_simple: VpaConfig::default(),
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
        e.nested("vpa_simple", self.vpa_simple.validate());
        if let Err(err) = self.vpa.validate() {
            e.push("vpa", err.to_string());
        }
        e.into_result()
    }

    /// Samples a model of this kind needs before it leaves its fallback
    /// (it is "warm"): GP `history + min_train`, ARIMA `min_samples`, 1 for
    /// the baselines.
    pub fn warm_samples(&self) -> usize {
        match self.kind {
            ModelKind::Gp => self.gp.history + self.gp.min_train,
            ModelKind::Arima => self.arima.min_samples,
            ModelKind::Last | ModelKind::Peak | ModelKind::Vpa | ModelKind::VpaSimple => 1,
        }
    }

    /// Builds the configured model (wrapped in [`Calibrated`] when
    /// `calibrated`). Fails on an invalid config. A `vpa` model feeds the
    /// resource named in `vpa.resource` (memory by default); see
    /// [`ModelConfig::build_for`].
    pub fn build(&self) -> Result<Box<dyn Forecaster>, ForecastError> {
        self.build_vpa_resource(self.vpa.resource)
    }

    /// Like [`ModelConfig::build`], for the model of one resource: the
    /// faithful VPA treats CPU and memory differently (memory keeps one
    /// peak per 24 h interval), so callers holding one model per resource
    /// should build each with its resource. Other kinds ignore it.
    ///
    /// `unit` is how many cores or bytes one observed unit is (the request,
    /// for a caller that feeds usage / request; 1 for absolute values).
    /// Only the `vpa` kind reads it: the VPA's absolute constants (buckets
    /// from 10 MB / 0.01 core, the pod minimum, the OOM bump) mean what
    /// they mean in Kubernetes only in real bytes and cores.
    pub fn build_for(
        &self,
        resource: tailor_core::Resource,
        unit: f64,
    ) -> Result<Box<dyn Forecaster>, ForecastError> {
        let resource = match resource {
            tailor_core::Resource::Cpu => VpaResource::Cpu,
            tailor_core::Resource::Mem => VpaResource::Mem,
        };
        self.build_scaled(resource, unit)
    }

    /// A workload aggregate of the faithful VPA for `resource`, shared by
    /// the models of one application's components
    /// ([`ModelConfig::build_vpa_attached`]): the VPA keeps one state per
    /// workload, fed by all its containers, one sample every
    /// `sample_interval_s`.
    pub fn vpa_aggregate(
        &self,
        resource: tailor_core::Resource,
        sample_interval_s: f64,
    ) -> Result<crate::vpa::SharedVpa, ForecastError> {
        self.validate()?;
        let resource = match resource {
            tailor_core::Resource::Cpu => VpaResource::Cpu,
            tailor_core::Resource::Mem => VpaResource::Mem,
        };
        VpaForecaster::shared(VpaRecommenderConfig {
            resource,
            sample_interval_s,
            ..self.vpa.clone()
        })
    }

    /// The model of one component attached to its workload's aggregate
    /// `shared` (a `vpa` config only): component number `container`, its
    /// first sample at `start_s` on the aggregate's clock, `unit` bytes or
    /// cores per observed unit (its request). A memory model also keeps the
    /// aggregate's sample count (the VPA's confidence), as the CPU samples
    /// of the real VPA would. Wrapped in [`Calibrated`] when `calibrated`.
    pub fn build_vpa_attached(
        &self,
        shared: crate::vpa::SharedVpa,
        container: u64,
        start_s: f64,
        unit: f64,
    ) -> Result<Box<dyn Forecaster>, ForecastError> {
        if self.kind != ModelKind::Vpa {
            return Err(ForecastError::InvalidConfig(format!(
                "a shared VPA aggregate needs kind = \"vpa\" (got {:?})",
                self.kind.as_str()
            )));
        }
        let f = VpaForecaster::attach(shared, container, start_s)?.with_unit(unit)?;
        let mem = f.resource() == VpaResource::Mem;
        let model: Box<dyn Forecaster> = Box::new(f.with_cpu_clock(mem));
        if self.calibrated {
            Ok(Box::new(Calibrated::new(model, self.calibration.clone())?))
        } else {
            Ok(model)
        }
    }

    fn build_vpa_resource(
        &self,
        resource: VpaResource,
    ) -> Result<Box<dyn Forecaster>, ForecastError> {
        self.build_scaled(resource, self.vpa.unit)
    }

    fn build_scaled(
        &self,
        resource: VpaResource,
        unit: f64,
    ) -> Result<Box<dyn Forecaster>, ForecastError> {
        self.validate()?;
        let model: Box<dyn Forecaster> = match self.kind {
            ModelKind::Arima => Box::new(AutoArima::new(self.arima.clone())?),
            ModelKind::Gp => Box::new(Gp::new(self.gp.clone())?),
            ModelKind::Last => Box::new(LastValue::new()),
            ModelKind::Peak => Box::new(WindowPeak::new(self.peak.clone())?),
            ModelKind::Vpa => Box::new(VpaForecaster::new(VpaRecommenderConfig {
                resource,
                unit,
                ..self.vpa.clone()
            })?),
            ModelKind::VpaSimple => Box::new(Vpa::new(self.vpa_simple.clone())?),
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
    fn default_is_calibrated_last_value() {
        let c = ModelConfig::default();
        assert_eq!(c.kind, ModelKind::Last);
        assert_eq!(ModelKind::default(), ModelKind::Last);
        assert!(c.calibrated);
        let m = c.build().expect("default builds");
        assert_eq!(m.name(), "last");
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
        c.vpa_simple.margin = 0.5;
        c.vpa.safety_margin_fraction = -2.0;
        c.arima.window = 0;
        let e = c.validate().expect_err("invalid").to_string();
        assert!(
            e.contains("gp.history")
                && e.contains("peak.window")
                && e.contains("vpa_simple.margin")
                && e.contains("vpa.safety_margin_fraction"),
            "{e}"
        );
        assert!(c.build().is_err());
        assert!("nope".parse::<ModelKind>().is_err());
        assert_eq!("arima".parse::<ModelKind>().expect("ok"), ModelKind::Arima);
        assert_eq!(
            "vpa-simple".parse::<ModelKind>().expect("ok"),
            ModelKind::VpaSimple
        );
    }

    #[test]
    fn vpa_kinds_and_sections() {
        let c: ModelConfig = serde_json::from_str(
            r#"{"kind":"vpa","calibrated":false,"vpa":{"target_memory_percentile":0.95,"safety_margin_fraction":0.05}}"#,
        )
        .expect("faithful section");
        assert_eq!(c.kind, ModelKind::Vpa);
        assert_eq!(c.vpa.target_memory_percentile, 0.95);
        let old: ModelConfig =
            serde_json::from_str(r#"{"kind":"vpa-simple","vpa_simple":{"margin":1.3}}"#)
                .expect("old section under its new name");
        assert_eq!(old.kind, ModelKind::VpaSimple);
        assert_eq!(old.vpa_simple.margin, 1.3);
        assert_eq!(old.build().expect("builds").name(), "vpa-simple");
        // An old-style [vpa] section is refused with the key named.
        let e = serde_json::from_str::<ModelConfig>(r#"{"kind":"vpa","vpa":{"margin":1.15}}"#)
            .expect_err("old keys in the faithful section");
        assert!(e.to_string().contains("margin"), "{e}");
        // build_for picks the VPA's resource path.
        let mut cpu = c
            .build_for(tailor_core::Resource::Cpu, 1.0)
            .expect("builds");
        let mut mem = c
            .build_for(tailor_core::Resource::Mem, 1.0)
            .expect("builds");
        for _ in 0..3 {
            cpu.observe(0.5).expect("ok");
            mem.observe(0.5e9).expect("ok");
        }
        assert_eq!(cpu.name(), "vpa");
        let (pc, pm) = (cpu.forecast(1), mem.forecast(1));
        // This config's margin is 5%.
        assert!(pc.mean >= 0.5 * 1.05 && pc.mean < 0.6, "{pc:?}");
        assert!(pm.mean >= 0.5e9 * 1.05 && pm.mean < 0.6e9, "{pm:?}");
    }
}

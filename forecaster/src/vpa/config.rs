//! Configuration of the faithful VPA recommender. Field names follow the
//! recommender's command-line flags (`pkg/recommender/config/config.go`,
//! `docs/flags.md`) in snake case with units; defaults are the VPA's.

use serde::{Deserialize, Serialize};

use super::histogram_options::HistogramOptions;
use crate::ForecastError;

/// `minSampleWeight`: the weight of a CPU sample before decay.
pub const MIN_SAMPLE_WEIGHT: f64 = 0.1;
/// `epsilon`: the lightest histogram bucket that counts as non-empty.
pub const HISTOGRAM_EPSILON: f64 = 0.001 * MIN_SAMPLE_WEIGHT;
/// CPU histogram: first bucket 0.01 core wide, last starting at >= 1000 cores.
pub const CPU_HISTOGRAM_FIRST_BUCKET_CORES: f64 = 0.01;
/// CPU histogram range, cores.
pub const CPU_HISTOGRAM_MAX_CORES: f64 = 1000.0;
/// Memory histogram: first bucket 10 MB wide.
pub const MEMORY_HISTOGRAM_FIRST_BUCKET_BYTES: f64 = 1e7;
/// Memory histogram range: 1 TB.
pub const MEMORY_HISTOGRAM_MAX_BYTES: f64 = 1e12;

/// How a CPU sample is weighted before decay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuSampleWeight {
    /// Every sample weighs `minSampleWeight` = 0.1: the VPA since 1.4.0
    /// (kubernetes/autoscaler commit ca812b36a3, Feb 2025) and today.
    #[default]
    Constant,
    /// `max(request_cores, 0.1)`: the VPA up to 1.3, where raising the
    /// request made the history so far decay faster.
    Request,
}

/// Which series a [`super::VpaForecaster`] feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VpaResource {
    /// CPU, in cores times `unit`.
    Cpu,
    /// Memory, in bytes times `unit` (default).
    #[default]
    Mem,
}

/// Everything the faithful VPA needs: aggregation (histograms, memory
/// windows, OOM bump), recommendation (percentiles, margin, confidence,
/// minimum resources) and the [`super::VpaForecaster`] adapter's time and
/// unit. Serde: every field optional, unknown fields rejected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VpaRecommenderConfig {
    /// `--recommendation-margin-fraction` (0.15): every estimate is raised by this
    /// fraction. A frontier knob.
    pub safety_margin_fraction: f64,
    /// `--pod-recommendation-min-cpu-millicores` (25), split evenly over the
    /// containers of a pod.
    pub pod_min_cpu_millicores: f64,
    /// `--pod-recommendation-min-memory-mb` (250, in MiB), split likewise.
    pub pod_min_memory_mb: f64,
    /// `--target-cpu-percentile` (0.9).
    pub target_cpu_percentile: f64,
    /// `--recommendation-lower-bound-cpu-percentile` (0.5).
    pub lower_bound_cpu_percentile: f64,
    /// `--recommendation-upper-bound-cpu-percentile` (0.95).
    pub upper_bound_cpu_percentile: f64,
    /// `--confidence-interval-cpu` (24 h), seconds.
    pub confidence_interval_cpu_s: f64,
    /// `--target-memory-percentile` (0.9). A frontier knob.
    pub target_memory_percentile: f64,
    /// `--recommendation-lower-bound-memory-percentile` (0.5).
    pub lower_bound_memory_percentile: f64,
    /// `--recommendation-upper-bound-memory-percentile` (0.95).
    pub upper_bound_memory_percentile: f64,
    /// `--confidence-interval-memory` (24 h), seconds.
    pub confidence_interval_memory_s: f64,
    /// `--memory-aggregation-interval` (24 h), seconds: each container adds
    /// one memory sample per interval, the running peak of that interval.
    pub memory_aggregation_interval_s: f64,
    /// `--memory-aggregation-interval-count` (8): the aggregate expires after
    /// this many intervals without samples.
    pub memory_aggregation_interval_count: u32,
    /// `--memory-histogram-decay-half-life` (24 h), seconds.
    pub memory_histogram_decay_half_life_s: f64,
    /// `--cpu-histogram-decay-half-life` (24 h), seconds.
    pub cpu_histogram_decay_half_life_s: f64,
    /// `--oom-bump-up-ratio` (1.2).
    pub oom_bump_up_ratio: f64,
    /// `--oom-min-bump-up-bytes` (100 MiB).
    pub oom_min_bump_up_bytes: f64,
    /// `HistogramBucketSizeGrowth` (0.05): each bucket is this fraction
    /// wider than the previous one.
    pub histogram_bucket_size_growth: f64,
    /// CPU sample weight (`constant`, today's VPA, or `request`, VPA <= 1.3).
    pub cpu_sample_weight: CpuSampleWeight,
    /// Adapter only: the resource a `Forecaster` built from this config feeds.
    pub resource: VpaResource,
    /// Adapter only: seconds between two observed samples (300).
    pub sample_interval_s: f64,
    /// Adapter only: VPA units (bytes or cores) per observed unit (1.0).
    pub unit: f64,
}

impl Default for VpaRecommenderConfig {
    fn default() -> Self {
        Self {
            safety_margin_fraction: 0.15,
            pod_min_cpu_millicores: 25.0,
            pod_min_memory_mb: 250.0,
            target_cpu_percentile: 0.9,
            lower_bound_cpu_percentile: 0.5,
            upper_bound_cpu_percentile: 0.95,
            confidence_interval_cpu_s: 86_400.0,
            target_memory_percentile: 0.9,
            lower_bound_memory_percentile: 0.5,
            upper_bound_memory_percentile: 0.95,
            confidence_interval_memory_s: 86_400.0,
            memory_aggregation_interval_s: 86_400.0,
            memory_aggregation_interval_count: 8,
            memory_histogram_decay_half_life_s: 86_400.0,
            cpu_histogram_decay_half_life_s: 86_400.0,
            oom_bump_up_ratio: 1.2,
            oom_min_bump_up_bytes: 100.0 * 1024.0 * 1024.0,
            histogram_bucket_size_growth: 0.05,
            cpu_sample_weight: CpuSampleWeight::Constant,
            resource: VpaResource::Mem,
            sample_interval_s: 300.0,
            unit: 1.0,
        }
    }
}

impl VpaRecommenderConfig {
    /// Checks every field and reports every problem at once, each naming
    /// its key (`vpa.<field>`).
    pub fn validate(&self) -> Result<(), ForecastError> {
        let mut errs = Vec::new();
        let mut check = |ok: bool, key: &str, value: f64, rule: &str| {
            if !ok {
                errs.push(format!("vpa.{key} = {value} {rule}"));
            }
        };
        let pct = |p: f64| (0.0..=1.0).contains(&p);
        for (key, p) in [
            ("target_cpu_percentile", self.target_cpu_percentile),
            (
                "lower_bound_cpu_percentile",
                self.lower_bound_cpu_percentile,
            ),
            (
                "upper_bound_cpu_percentile",
                self.upper_bound_cpu_percentile,
            ),
            ("target_memory_percentile", self.target_memory_percentile),
            (
                "lower_bound_memory_percentile",
                self.lower_bound_memory_percentile,
            ),
            (
                "upper_bound_memory_percentile",
                self.upper_bound_memory_percentile,
            ),
        ] {
            check(pct(p), key, p, "must be in [0, 1]");
        }
        let m = self.safety_margin_fraction;
        check(
            m.is_finite() && m > -1.0 && m <= 10.0,
            "safety_margin_fraction",
            m,
            "must be in (-1, 10]",
        );
        for (key, v) in [
            ("pod_min_cpu_millicores", self.pod_min_cpu_millicores),
            ("pod_min_memory_mb", self.pod_min_memory_mb),
            ("oom_min_bump_up_bytes", self.oom_min_bump_up_bytes),
        ] {
            check(v.is_finite() && v >= 0.0, key, v, "must be finite and >= 0");
        }
        for (key, v) in [
            ("confidence_interval_cpu_s", self.confidence_interval_cpu_s),
            (
                "confidence_interval_memory_s",
                self.confidence_interval_memory_s,
            ),
            (
                "memory_aggregation_interval_s",
                self.memory_aggregation_interval_s,
            ),
            (
                "memory_histogram_decay_half_life_s",
                self.memory_histogram_decay_half_life_s,
            ),
            (
                "cpu_histogram_decay_half_life_s",
                self.cpu_histogram_decay_half_life_s,
            ),
            ("sample_interval_s", self.sample_interval_s),
            ("unit", self.unit),
        ] {
            check(v.is_finite() && v > 0.0, key, v, "must be finite and > 0");
        }
        let c = self.memory_aggregation_interval_count;
        check(
            c >= 1,
            "memory_aggregation_interval_count",
            c as f64,
            "must be >= 1",
        );
        let r = self.oom_bump_up_ratio;
        check(
            r.is_finite() && r >= 1.0,
            "oom_bump_up_ratio",
            r,
            "must be finite and >= 1",
        );
        let g = self.histogram_bucket_size_growth;
        check(
            g.is_finite() && (0.001..=1.0).contains(&g),
            "histogram_bucket_size_growth",
            g,
            "must be in [0.001, 1]",
        );
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ForecastError::InvalidConfig(errs.join("; ")))
        }
    }

    /// `cpuHistogramOptions`: exponential, 0.01 core to 1000 cores.
    pub fn cpu_histogram_options(&self) -> Result<HistogramOptions, ForecastError> {
        HistogramOptions::exponential(
            CPU_HISTOGRAM_MAX_CORES,
            CPU_HISTOGRAM_FIRST_BUCKET_CORES,
            1.0 + self.histogram_bucket_size_growth,
            HISTOGRAM_EPSILON,
        )
    }

    /// `memoryHistogramOptions`: exponential, 10 MB to 1 TB.
    pub fn memory_histogram_options(&self) -> Result<HistogramOptions, ForecastError> {
        HistogramOptions::exponential(
            MEMORY_HISTOGRAM_MAX_BYTES,
            MEMORY_HISTOGRAM_FIRST_BUCKET_BYTES,
            1.0 + self.histogram_bucket_size_growth,
            HISTOGRAM_EPSILON,
        )
    }

    /// Length of the memory aggregation window
    /// (`interval * interval_count`), seconds.
    pub fn memory_aggregation_window_s(&self) -> f64 {
        self.memory_aggregation_interval_s * self.memory_aggregation_interval_count as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_vpa_flags() {
        let c = VpaRecommenderConfig::default();
        c.validate().expect("defaults valid");
        assert_eq!(c.target_memory_percentile, 0.9);
        assert_eq!(c.safety_margin_fraction, 0.15);
        assert_eq!(c.oom_min_bump_up_bytes, 104_857_600.0);
        assert_eq!(c.memory_aggregation_window_s(), 8.0 * 86_400.0);
    }

    #[test]
    fn errors_name_every_bad_key() {
        let c = VpaRecommenderConfig {
            target_memory_percentile: 1.5,
            safety_margin_fraction: f64::NAN,
            memory_aggregation_interval_s: 0.0,
            oom_bump_up_ratio: 0.5,
            memory_aggregation_interval_count: 0,
            unit: -1.0,
            ..VpaRecommenderConfig::default()
        };
        let e = c.validate().expect_err("invalid").to_string();
        for key in [
            "vpa.target_memory_percentile",
            "vpa.safety_margin_fraction",
            "vpa.memory_aggregation_interval_s",
            "vpa.oom_bump_up_ratio",
            "vpa.memory_aggregation_interval_count",
            "vpa.unit",
        ] {
            assert!(e.contains(key), "{key} missing from {e}");
        }
    }

    #[test]
    fn serde_partial_and_unknown_fields() {
        let c: VpaRecommenderConfig = serde_json::from_str(
            r#"{"target_memory_percentile":0.95,"safety_margin_fraction":0.3,"cpu_sample_weight":"request"}"#,
        )
        .expect("partial");
        assert_eq!(c.target_memory_percentile, 0.95);
        assert_eq!(c.safety_margin_fraction, 0.3);
        assert_eq!(c.cpu_sample_weight, CpuSampleWeight::Request);
        assert_eq!(c.pod_min_memory_mb, 250.0);
        let e = serde_json::from_str::<VpaRecommenderConfig>(r#"{"margin":1.15}"#)
            .expect_err("unknown");
        assert!(e.to_string().contains("margin"), "{e}");
    }
}

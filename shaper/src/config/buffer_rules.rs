//! The constant buffer term's rules: what a kill costs (class, the
//! application's size and memory) and how long a small component holds
//! its memory. One `impl` of [`ShaperConfig`], read by the agent, the
//! central shaper and the simulator alike.

use super::{ShaperConfig, GIB_BYTES, MAX_K1};
use crate::model::{AppSize, Class};

/// The memory-weighted median of `xs` (non-negative sizes): the smallest
/// `x` such that the sizes up to `x` make at least half the total. 0 for
/// an empty or all-zero list. Reorders `xs`.
pub fn weighted_median(xs: &mut [f64]) -> f64 {
    xs.sort_unstable_by(f64::total_cmp);
    let total: f64 = xs.iter().map(|x| x.max(0.0)).sum();
    let mut acc = 0.0;
    for &x in xs.iter() {
        acc += x.max(0.0);
        if acc >= total / 2.0 && acc > 0.0 {
            return x;
        }
    }
    0.0
}

impl ShaperConfig {
    /// Whether an application's constant buffer term follows its memory
    /// (`app_mem_ref_gib` or `app_mem_ref_rel` set, and a slope).
    pub fn app_mem_rule(&self) -> bool {
        (self.app_mem_ref_gib > 0.0 || self.app_mem_ref_rel > 0.0) && self.app_k1_slope > 0.0
    }

    /// The reference (GiB) of the application-memory rule in a view whose
    /// applications hold `app_mem_bytes` of memory request each:
    /// `app_mem_ref_gib`, or `app_mem_ref_rel` times their memory-weighted
    /// median; 0 when the rule is off. Reorders `app_mem_bytes`.
    pub fn app_mem_ref_in(&self, app_mem_bytes: &mut [f64]) -> f64 {
        if !self.app_mem_rule() {
            0.0
        } else if self.app_mem_ref_gib > 0.0 {
            self.app_mem_ref_gib
        } else {
            self.app_mem_ref_rel * weighted_median(app_mem_bytes) / GIB_BYTES
        }
    }

    /// Whether the size rules count an application of size `app` as small
    /// (its components get `small_app_k1`): fewer running components than
    /// `small_app_components`. Both size rules are for applications that
    /// one kill fails whole: an application whose components all restart
    /// alone ([`AppSize::restarts_alone`]) is small only when it runs one
    /// component (its kill stops the whole service) and
    /// `small_app_components` >= 2.
    pub fn is_small_app(&self, app: AppSize) -> bool {
        let limit = self.small_app_components as usize;
        if app.restarts_alone {
            // A kill restarts one of a service's tasks; only a lone task's
            // kill takes the whole service down.
            app.components < limit.min(2)
        } else {
            app.components < limit
        }
    }

    /// Whether a component of class `class` in an application of size
    /// `app` is sized as a small application's ([`Self::is_small_app`]),
    /// or as one of the few core components of an application with
    /// elastic ones: fewer than `small_app_components` (a core kill re-runs
    /// every one of its components; its elastic ones, each a task's work,
    /// are not). Such a component gets at least `small_app_k1`
    /// ([`Self::k1_for_class`]) and the longer memory hold
    /// (`small_app_mem_hold_s`). An elastic component never is: its kill
    /// fails nothing.
    pub fn is_small(&self, app: AppSize, class: Class) -> bool {
        class != Class::Elastic && (self.is_small_app(app) || self.has_few_core(app, class))
    }

    fn has_few_core(&self, app: AppSize, class: Class) -> bool {
        class == Class::Core
            && !app.restarts_alone
            && app.core_components < app.components
            && app.core_components < self.small_app_components as usize
    }

    /// The constant buffer term (fraction of the request) of a component
    /// of an application of size `app`: `small_app_k1` for a small
    /// application ([`Self::is_small_app`]), else `k1`, raised to
    /// `app_k1_slope * ln(ref_gib / app_mem_gib)` when the
    /// application-memory rule is on (`ref_gib`: [`Self::app_mem_ref_in`]
    /// of the view; at most [`MAX_K1`]) and the application does not
    /// restart alone (a kill does not fail it).
    pub fn k1_for(&self, app: AppSize, ref_gib: f64) -> f64 {
        let k1 = if self.is_small_app(app) {
            self.small_app_k1
        } else {
            self.k1
        };
        if !app.restarts_alone && self.app_mem_rule() && ref_gib > 0.0 {
            let gib = app.mem_bytes.max(0.0) / GIB_BYTES;
            let by_size = self.app_k1_slope * (ref_gib / gib).ln();
            // No memory at all: +inf, capped.
            k1.max(by_size.min(MAX_K1))
        } else {
            k1
        }
    }

    /// The constant buffer term of a component of class `class` in an
    /// application of size `app` whose K1 is `app_k1` ([`Self::k1_for`]),
    /// following what its kill costs:
    /// - an elastic component (its kill restarts it alone):
    ///   `elastic_k1_factor * k1`, at most `app_k1`;
    /// - one of the few core components of an application with elastic
    ///   ones ([`Self::is_small`]): at least `small_app_k1`;
    /// - any other core component of an application that does not restart
    ///   alone (its kill fails the application): at least
    ///   `core_k1_factor * k1`;
    /// - else `app_k1`.
    ///
    /// Never more than [`MAX_K1`] unless `app_k1` is.
    pub fn k1_for_class(&self, app: AppSize, app_k1: f64, class: Class) -> f64 {
        if class == Class::Elastic {
            app_k1.min(self.elastic_k1_factor * self.k1)
        } else if self.has_few_core(app, class) {
            app_k1.max(self.small_app_k1)
        } else if !app.restarts_alone {
            app_k1.max((self.core_k1_factor * self.k1).min(MAX_K1))
        } else {
            app_k1
        }
    }

    /// The constant buffer term `k1` of a component of class `class`
    /// (`restarts_alone` as [`crate::model::Component::restarts_alone`])
    /// at age `age_s`: at least `young_core_k1` while it is younger than
    /// `young_core_s` and its kill fails its application (core, not
    /// restarting alone). A NaN age is not young (the grace period holds
    /// such a component at its request anyway).
    pub fn young_k1(&self, k1: f64, class: Class, restarts_alone: bool, age_s: f64) -> f64 {
        if class == Class::Core && !restarts_alone && age_s < self.young_core_s {
            k1.max(self.young_core_k1)
        } else {
            k1
        }
    }

    /// The memory hold of a small component ([`Self::is_small`]) in
    /// seconds: `small_app_mem_hold_s` when it is longer than
    /// `mem_hold_s` and some application can be small
    /// (`small_app_components` > 0), else 0 (off).
    pub fn small_hold_s(&self) -> f64 {
        if self.small_app_components > 0 && self.small_app_mem_hold_s > self.mem_hold_s {
            self.small_app_mem_hold_s
        } else {
            0.0
        }
    }
}

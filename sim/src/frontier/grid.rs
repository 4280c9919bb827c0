//! What `tailor frontier` sweeps ([`FrontierGrid`]) and the points it
//! expands to over a base configuration ([`point_specs`]): the tailor
//! families' K1 x K2 (and the swept `[shaper]` keys) and `memory_risk`
//! points, the VPA's own knobs, the baseline and the oracle.

use std::collections::BTreeMap;

use forecaster::config::ModelConfig;
use shaper::{Policy, ShaperConfig};
use tailor_core::ConfigErrors;

use super::{
    Family, Sizing, DEFAULT_K1, DEFAULT_K2, DEFAULT_MEMORY_RISK, DEFAULT_VPA_MARGIN,
    DEFAULT_VPA_PERCENTILE, MAX_LIST,
};
use crate::config::{ForecasterSource, SimConfig};
use crate::runner::{baseline_of, oracle_of, without_tailor_buffers};
use crate::SimError;

/// What to sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct FrontierGrid {
    pub k1: Vec<f64>,
    pub k2: Vec<f64>,
    /// Empty: no risk-targeted points.
    pub memory_risk: Vec<f64>,
    /// `[shaper] sibling_hold_s` values for the tailor families' points.
    /// Empty: the base config's value only (and no `sibling_hold_s` param).
    pub sibling_hold_s: Vec<f64>,
    /// `[shaper] mem_margin` values for the tailor families' K1/K2 points.
    /// Empty: the base config's value only (and no `mem_margin` param).
    pub mem_margin: Vec<f64>,
    /// `[shaper] small_app_k1` values for the tailor families' K1/K2
    /// points (the base config's `small_app_components` says which
    /// applications are small; it must be set). Empty: the base config's
    /// value only (and no `small_app_k1` param).
    pub small_app_k1: Vec<f64>,
    /// `[shaper] app_k1_slope` values for the tailor families' K1/K2
    /// points (the base config's `app_mem_ref_gib` or `app_mem_ref_rel`
    /// must be set). Empty:
    /// the base config's value only (and no `app_k1_slope` param).
    pub app_k1_slope: Vec<f64>,
    /// `[shaper] core_k1_factor` values for the tailor families' K1/K2
    /// points. Empty: the base config's value only (and no param).
    pub core_k1_factor: Vec<f64>,
    /// `[shaper] elastic_k1_factor` values for the tailor families' K1/K2
    /// points. Empty: the base config's value only (and no param).
    pub elastic_k1_factor: Vec<f64>,
    pub vpa_percentile: Vec<f64>,
    pub vpa_margin: Vec<f64>,
    /// Families to sweep (baseline and oracle always run).
    pub families: Vec<Family>,
}

impl Default for FrontierGrid {
    fn default() -> Self {
        Self {
            k1: DEFAULT_K1.to_vec(),
            k2: DEFAULT_K2.to_vec(),
            memory_risk: DEFAULT_MEMORY_RISK.to_vec(),
            sibling_hold_s: Vec::new(),
            mem_margin: Vec::new(),
            small_app_k1: Vec::new(),
            app_k1_slope: Vec::new(),
            core_k1_factor: Vec::new(),
            elastic_k1_factor: Vec::new(),
            vpa_percentile: DEFAULT_VPA_PERCENTILE.to_vec(),
            vpa_margin: DEFAULT_VPA_MARGIN.to_vec(),
            families: Family::SWEPT.to_vec(),
        }
    }
}

impl FrontierGrid {
    /// Every problem at once. Ranges: K1 [0, shaper MAX_K1], K2 [0,
    /// MAX_K2], memory_risk [1e-9, 0.25], sibling_hold_s [0, 1e9],
    /// mem_margin [0, shaper MAX_MEM_MARGIN], small_app_k1 and
    /// app_k1_slope [0, MAX_K1], core_k1_factor [1, 100],
    /// elastic_k1_factor [0, 1], VPA
    /// percentile (0, 1), margin [0, 10]; at most [`MAX_LIST`] values per
    /// list, K1/K2/percentile/margin lists non-empty when their family is
    /// swept.
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        let lists: [(&str, &Vec<f64>, f64, f64, bool); 11] = [
            ("k1", &self.k1, 0.0, shaper::config::MAX_K1, true),
            ("k2", &self.k2, 0.0, shaper::config::MAX_K2, true),
            (
                "memory_risk",
                &self.memory_risk,
                shaper::config::MIN_MEMORY_RISK,
                shaper::config::MAX_MEMORY_RISK,
                false,
            ),
            (
                "sibling_hold_s",
                &self.sibling_hold_s,
                0.0,
                shaper::config::MAX_SIBLING_HOLD_S,
                false,
            ),
            (
                "mem_margin",
                &self.mem_margin,
                0.0,
                shaper::config::MAX_MEM_MARGIN,
                false,
            ),
            (
                "small_app_k1",
                &self.small_app_k1,
                0.0,
                shaper::config::MAX_K1,
                false,
            ),
            (
                "app_k1_slope",
                &self.app_k1_slope,
                0.0,
                shaper::config::MAX_K1,
                false,
            ),
            (
                "core_k1_factor",
                &self.core_k1_factor,
                1.0,
                shaper::config::MAX_CORE_K1_FACTOR,
                false,
            ),
            (
                "elastic_k1_factor",
                &self.elastic_k1_factor,
                0.0,
                1.0,
                false,
            ),
            (
                "vpa_percentile",
                &self.vpa_percentile,
                1e-6,
                1.0 - 1e-6,
                true,
            ),
            ("vpa_margin", &self.vpa_margin, 0.0, 10.0, true),
        ];
        for (name, values, lo, hi, needed) in lists {
            e.check(name, values.len() <= MAX_LIST, || {
                format!("at most {MAX_LIST} values, got {}", values.len())
            });
            let used = match name {
                "k1" | "k2" | "memory_risk" | "sibling_hold_s" | "mem_margin" | "small_app_k1"
                | "app_k1_slope" | "core_k1_factor" | "elastic_k1_factor" => {
                    self.families.iter().any(|f| f.is_tailor())
                }
                _ => self.families.contains(&Family::Vpa),
            };
            if needed && used {
                e.check(name, !values.is_empty(), || "must not be empty".to_string());
            }
            for v in values {
                e.range(name, *v, lo, hi);
            }
        }
        e.check("families", !self.families.is_empty(), || {
            "sweep at least one forecaster".to_string()
        });
        e.into_result()
    }
}

/// One configuration to run.
#[derive(Clone, Debug)]
pub struct PointSpec {
    pub family: Family,
    pub sizing: Sizing,
    pub params: BTreeMap<String, f64>,
    pub cfg: SimConfig,
}

/// A swept dimension's values, or one `None` (the base config's value, and
/// no param) when it is not swept.
fn swept(values: &[f64]) -> Vec<Option<f64>> {
    if values.is_empty() {
        vec![None]
    } else {
        values.iter().copied().map(Some).collect()
    }
}

/// One optional dimension of the K1/K2 points: its param name, its swept
/// values and the `[shaper]` field it sets.
type Dim<'a> = (&'static str, &'a [f64], fn(&mut ShaperConfig, f64));

/// Every combination of the swept dimensions' values (a dimension that is
/// not swept contributes nothing), in the order given, the last varying
/// fastest: each as its params and the base config with them set.
fn sweep_product(base: &SimConfig, dims: &[Dim]) -> Vec<(Vec<(&'static str, f64)>, SimConfig)> {
    let mut out = vec![(Vec::new(), base.clone())];
    for &(name, values, set) in dims {
        let mut next = Vec::with_capacity(out.len() * values.len().max(1));
        for (kv, cfg) in &out {
            for v in swept(values) {
                let (mut kv, mut cfg) = (kv.clone(), cfg.clone());
                if let Some(x) = v {
                    set(&mut cfg.shaper, x);
                    kv.push((name, x));
                }
                next.push((kv, cfg));
            }
        }
        out = next;
    }
    out
}

fn params(kv: &[(&str, f64)]) -> BTreeMap<String, f64> {
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The points of `grid` over `base`: the baseline first, the oracle second,
/// then every swept family in `grid.families` order.
pub fn point_specs(base: &SimConfig, grid: &FrontierGrid) -> Result<Vec<PointSpec>, SimError> {
    if base.shaper.policy == Policy::Baseline {
        return Err(SimError::Config(ConfigErrors::single(
            "shaper.policy",
            "the frontier needs a shaping policy (optimistic or pessimistic), not baseline",
        )));
    }
    grid.validate()?;
    if !grid.small_app_k1.is_empty() && base.shaper.small_app_components == 0 {
        return Err(SimError::Config(ConfigErrors::single(
            "small_app_k1",
            "sweeping it needs small_app_components > 0 (`--small-app-components N` or `[shaper] small_app_components` in the config): no application is small",
        )));
    }
    if !grid.app_k1_slope.is_empty()
        && base.shaper.app_mem_ref_gib <= 0.0
        && base.shaper.app_mem_ref_rel <= 0.0
    {
        return Err(SimError::Config(ConfigErrors::single(
            "app_k1_slope",
            "sweeping it needs app_mem_ref_gib or app_mem_ref_rel > 0 (`--app-mem-ref-gib GIB`, `--app-mem-ref-rel X`, or either key in the config's [shaper]): no application's K1 follows its memory",
        )));
    }
    let mut cell = base.clone();
    cell.parallel_forecasts = false;
    cell.shaper.memory_risk = None;
    let mut out = vec![PointSpec {
        family: Family::Baseline,
        sizing: Sizing::Request,
        params: BTreeMap::new(),
        cfg: baseline_of(&cell),
    }];
    out.push(PointSpec {
        family: Family::Oracle,
        sizing: Sizing::K1k2,
        params: params(&[("k1", 0.0), ("k2", 0.0)]),
        cfg: oracle_of(&cell),
    });
    let mut families = grid.families.clone();
    families.dedup();
    for fam in families {
        let Some(kind) = fam.model_kind() else {
            continue;
        };
        let mut m = cell.clone();
        m.forecaster_source = ForecasterSource::Model;
        if fam == Family::Vpa {
            m.forecaster = ModelConfig {
                kind,
                calibrated: false,
                ..base.forecaster.clone()
            };
            without_tailor_buffers(&mut m.shaper);
            // The VPA's own memory window, not tailor's hold on top.
            m.shaper.mem_hold_s = 0.0;
            for &p in &grid.vpa_percentile {
                for &margin in &grid.vpa_margin {
                    let mut c = m.clone();
                    c.forecaster.vpa.target_memory_percentile = p;
                    c.forecaster.vpa.safety_margin_fraction = margin;
                    out.push(PointSpec {
                        family: fam,
                        sizing: Sizing::Vpa,
                        params: params(&[
                            ("target_memory_percentile", p),
                            ("safety_margin_fraction", margin),
                        ]),
                        cfg: c,
                    });
                }
            }
            continue;
        }
        m.forecaster.kind = kind;
        // The hold is a param only when swept, so default outputs keep
        // their labels.
        for hold in swept(&grid.sibling_hold_s) {
            let mut m = m.clone();
            let mut kv: Vec<(&str, f64)> = Vec::with_capacity(4);
            if let Some(h) = hold {
                m.shaper.sibling_hold_s = h;
                kv.push(("sibling_hold_s", h));
            }
            let with = |extra: &[(&str, f64)]| {
                let mut all = kv.clone();
                all.extend_from_slice(extra);
                params(&all)
            };
            // The margin, the small applications' K1, the K1 slope by
            // application memory and the kill-cost factors, like the hold,
            // are params only when swept.
            for (extra, mc) in sweep_product(
                &m,
                &[
                    ("mem_margin", &grid.mem_margin, |s, x| s.mem_margin = x),
                    ("small_app_k1", &grid.small_app_k1, |s, x| {
                        s.small_app_k1 = x
                    }),
                    ("app_k1_slope", &grid.app_k1_slope, |s, x| {
                        s.app_k1_slope = x
                    }),
                    ("core_k1_factor", &grid.core_k1_factor, |s, x| {
                        s.core_k1_factor = x
                    }),
                    ("elastic_k1_factor", &grid.elastic_k1_factor, |s, x| {
                        s.elastic_k1_factor = x
                    }),
                ],
            ) {
                for &k2 in &grid.k2 {
                    for &k1 in &grid.k1 {
                        let mut c = mc.clone();
                        c.shaper.k1 = k1;
                        c.shaper.k2 = k2;
                        let mut kv = vec![("k1", k1), ("k2", k2)];
                        kv.extend_from_slice(&extra);
                        out.push(PointSpec {
                            family: fam,
                            sizing: Sizing::K1k2,
                            params: with(&kv),
                            cfg: c,
                        });
                    }
                }
            }
            for &r in &grid.memory_risk {
                let mut c = m.clone();
                c.shaper.memory_risk = Some(r);
                out.push(PointSpec {
                    family: fam,
                    sizing: Sizing::MemoryRisk,
                    params: with(&[("memory_risk", r), ("k1", c.shaper.k1), ("k2", c.shaper.k2)]),
                    cfg: c,
                });
            }
        }
    }
    for p in &out {
        p.cfg.validate()?;
    }
    Ok(out)
}

//! Priors for young components: what their siblings and predecessors used.
//!
//! Most components live shorter than the history a model needs to fit, yet
//! siblings (the other components of an application) and earlier
//! incarnations (a restarted task, a container recreated under the same
//! name) use nearly the same share of their request. A [`PriorBook`] pools
//! the **relative** usage (`usage / request`) that every component feeds its
//! own models, under each of its keys, so a component without enough
//! history of its own can be sized from its peers' from its first round.
//!
//! ## How a prior is pooled
//! Per key and resource the book keeps exponentially decayed moments of the
//! relative samples of every component that joined the key (half-life
//! `[shaper] prior_half_life_s`), and of the first differences of each
//! component's series. The pooled variance is split in two:
//! * **within**: how much one component's series moves around its own
//!   level, `E[(x_t − x_{t−1})²] / 2`;
//! * **between**: the spread of levels between siblings, the rest of the
//!   pooled variance (at least 5% of it).
//!
//! A key is usable as a prior only once at least two incarnations joined
//! it (so a component is never its own "prior"). Both variances are
//! inflated by `1 + 1 / members` (few members) and by `1 + age /
//! half-life`, where age is the time since the key last received a sample:
//! an old prior is a less certain one.
//!
//! ## Sibling jumps
//! Each component also reports its new highs: how far a memory sample (or
//! the mark of its OOM kill, [`PriorBook::raise_mem_high`]) rose above the
//! peak of its own held samples before it (the memory hold,
//! `[shaper] mem_hold_s`). A key keeps the largest, decayed towards 0 with
//! the same half-life. Past its sibling hold, a component's memory forecast
//! stays at least at its own held peak plus that jump, within the siblings'
//! high-water mark (`[shaper] sibling_jump`): a rise one sibling made is one
//! the others may make at their own time, since real siblings share only a
//! fifth of their jumps (docs/results.md, "Sibling jumps").
//!
//! ## How a prior hands over to the component's own model
//! A component with `n` own samples (mean `x̄`, latest `x_n`) gets the
//! normal-normal update of its level: precision `1/between + n/within`,
//! level `(μp/between + n x̄/within) / precision`. Its forecast is
//! `N(max(level, x_n), within + 1/precision)`: with no samples, the
//! siblings' distribution; with many, its own level with the siblings'
//! within-series noise. The more alike the siblings (small between), the
//! longer the prior's level dominates.
//!
//! Once the component's own model is warm (it has seen the samples it
//! needs to fit, and at least `min_history_samples`) the own model alone
//! forecasts. See [`crate::models::ComponentModels::forecast_with`].

use crate::model::Predictive;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::hash::Hash;

/// Exponentially decayed weighted moments of relative samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    /// Total weight (samples).
    pub w: f64,
    /// Weighted sum.
    pub s1: f64,
    /// Weighted sum of squares.
    pub s2: f64,
    /// Weight of first differences (consecutive samples of one component).
    #[serde(default)]
    pub dw: f64,
    /// Weighted sum of squared first differences.
    #[serde(default)]
    pub d2: f64,
    /// High-water mark: the largest sample, decayed towards the mean with
    /// the book's half-life (see [`PriorBook::absorb`]); 0 when empty.
    #[serde(default)]
    pub hi: f64,
    /// Largest new high: how far one member's sample rose above the peak
    /// of its own held samples, decayed towards 0 with the book's
    /// half-life; 0 when none rose.
    #[serde(default)]
    pub jump: f64,
}

impl Moments {
    /// Adds one sample of weight 1 (non-finite values are ignored).
    pub fn add(&mut self, x: f64) {
        if x.is_finite() {
            self.w += 1.0;
            self.s1 += x;
            self.s2 += x * x;
            self.hi = self.hi.max(x);
        }
    }

    /// Records that a member's sample rose `e` above its own held peak.
    pub fn add_jump(&mut self, e: f64) {
        if e.is_finite() && e > 0.0 {
            self.jump = self.jump.max(e);
        }
    }

    /// Adds the first difference `x - prev` of one component's series.
    pub fn add_diff(&mut self, x: f64, prev: f64) {
        let d = x - prev;
        if d.is_finite() {
            self.dw += 1.0;
            self.d2 += d * d;
        }
    }

    /// Adds another set of moments.
    pub fn merge(&mut self, o: &Moments) {
        self.w += o.w;
        self.s1 += o.s1;
        self.s2 += o.s2;
        self.dw += o.dw;
        self.d2 += o.d2;
        self.hi = self.hi.max(o.hi);
        self.jump = self.jump.max(o.jump);
    }

    /// Multiplies every weight by `f` (decay); the high-water mark moves
    /// the same share of the way down to the mean.
    pub fn scale(&mut self, f: f64) {
        if let Some(m) = self.mean() {
            self.hi = m + (self.hi - m) * f;
        }
        self.jump *= f;
        self.w *= f;
        self.s1 *= f;
        self.s2 *= f;
        self.dw *= f;
        self.d2 *= f;
    }

    /// Variance within one component's series, from first differences
    /// (`E[d^2] / 2` for independent noise); `None` without differences.
    pub fn within_var(&self) -> Option<f64> {
        (self.dw > 0.0).then(|| (self.d2 / self.dw / 2.0).max(0.0))
    }

    pub fn mean(&self) -> Option<f64> {
        (self.w > 0.0).then(|| self.s1 / self.w)
    }

    /// The (biased) variance, never negative.
    pub fn var(&self) -> Option<f64> {
        let m = self.mean()?;
        Some((self.s2 / self.w - m * m).max(0.0))
    }
}

/// Relative moments of a CPU and a memory series.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PairMoments {
    pub cpu: Moments,
    pub mem: Moments,
}

impl PairMoments {
    pub fn merge(&mut self, o: &PairMoments) {
        self.cpu.merge(&o.cpu);
        self.mem.merge(&o.mem);
    }

    pub fn is_empty(&self) -> bool {
        self.cpu.w <= 0.0 && self.mem.w <= 0.0
    }
}

/// One resource's prior in relative units (a share of the request): the
/// siblings' mean level, the variance of levels between them, and the
/// variance of one component's series around its level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Level {
    pub mean: f64,
    pub between_var: f64,
    pub within_var: f64,
    /// The members' decayed high-water mark (largest sample; for memory,
    /// also the bumped allocation of an OOM kill).
    pub high: f64,
    /// The members' decayed largest new high ([`Moments::jump`]).
    pub jump: f64,
}

/// The largest OOM kill of a key's members: the allocation it left behind
/// (relative to the request, bumped as by [`crate::oom::OomFloor`]) and the
/// killed member's age at the kill, in samples. Unlike the high-water mark
/// it does not decay: a member younger than that age (plus the sibling
/// hold) is held at the mark, so the next incarnation of a killed
/// application, and siblings started after the kill, do not meet the same
/// peak at the same age again ([`crate::models::ComponentModels::forecast_with`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillMark {
    pub mem_rel: f64,
    pub age_samples: u64,
}

impl KillMark {
    /// The larger mark and the larger age of two (each on its own).
    fn max(self, o: KillMark) -> KillMark {
        KillMark {
            mem_rel: self.mem_rel.max(o.mem_rel),
            age_samples: self.age_samples.max(o.age_samples),
        }
    }
}

impl Level {
    /// The predictive of a component with no samples of its own.
    pub fn predictive(&self) -> Predictive {
        Predictive::gaussian(self.mean, (self.between_var + self.within_var).sqrt())
    }
}

/// A prior in relative units, per resource.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RelPrior {
    pub cpu: Level,
    pub mem: Level,
    /// The largest OOM kill under any of the component's keys (not only
    /// the one the levels come from); the default when none was killed.
    pub kill: KillMark,
}

/// Settings of a [`PriorBook`] (from `[shaper]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriorSettings {
    pub half_life_s: f64,
    pub max_keys: usize,
}

/// One key's pooled samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriorEntry {
    pub moments: PairMoments,
    /// Incarnations that joined the key.
    pub members: u32,
    /// When the moments were last updated (caller's clock, seconds).
    pub updated_s: f64,
    /// The members' largest OOM kill.
    #[serde(default)]
    pub kill: KillMark,
}

/// Pooled relative usage per key (application, lineage, image, ...).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(
    serialize = "K: Serialize + Eq + Hash",
    deserialize = "K: Deserialize<'de> + Eq + Hash"
))]
#[serde(deny_unknown_fields)]
pub struct PriorBook<K> {
    entries: HashMap<K, PriorEntry>,
    /// New keys refused because the book was full.
    #[serde(default)]
    pub refused_keys: u64,
    /// A full book is swept for decayed keys only from this time on:
    /// before it, no key can have decayed (see [`PriorBook::slot`]).
    #[serde(skip)]
    next_sweep_s: f64,
}

impl<K: Eq + Hash> PartialEq for PriorBook<K> {
    fn eq(&self, o: &Self) -> bool {
        self.entries == o.entries && self.refused_keys == o.refused_keys
    }
}

impl<K> Default for PriorBook<K> {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            refused_keys: 0,
            next_sweep_s: f64::NEG_INFINITY,
        }
    }
}

/// Decay factor over `dt_s` for a half-life (1 when either is not positive).
fn decay(dt_s: f64, half_life_s: f64) -> f64 {
    if dt_s > 0.0 && half_life_s > 0.0 && half_life_s.is_finite() {
        (-(dt_s / half_life_s) * std::f64::consts::LN_2).exp()
    } else {
        1.0
    }
}

impl<K: Hash + Eq + Clone> PriorBook<K> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entry(&self, key: &K) -> Option<&PriorEntry> {
        self.entries.get(key)
    }

    /// The entry for `key`, created when there is room (old entries are
    /// dropped first when the book is full).
    fn slot(&mut self, key: &K, now_s: f64, s: &PriorSettings) -> Option<&mut PriorEntry> {
        if !self.entries.contains_key(key) {
            if self.entries.len() >= s.max_keys && now_s >= self.next_sweep_s {
                // Forget what has decayed to (almost) nothing: 20 half-lives.
                let horizon = 20.0 * s.half_life_s;
                self.entries.retain(|_, e| now_s - e.updated_s < horizon);
                // Nothing left (nor added from now on) decays before the
                // oldest update left: a full book is not swept again
                // before then, so refusing a key costs O(1), not a pass
                // over a million keys (a replay of 120,000 applications
                // slowed down 10-fold once its book was full).
                let oldest_s = self
                    .entries
                    .values()
                    .map(|e| e.updated_s)
                    .fold(now_s, f64::min);
                self.next_sweep_s = oldest_s + horizon;
            }
            if self.entries.len() >= s.max_keys {
                self.refused_keys += 1;
                return None;
            }
            self.entries.insert(
                key.clone(),
                PriorEntry {
                    updated_s: now_s,
                    ..PriorEntry::default()
                },
            );
        }
        self.entries.get_mut(key)
    }

    /// A new incarnation joins `key` (a component started, a container
    /// appeared): counted once per incarnation.
    pub fn join(&mut self, key: &K, now_s: f64, s: &PriorSettings) {
        if let Some(e) = self.slot(key, now_s, s) {
            e.members = e.members.saturating_add(1);
        }
    }

    /// Adds samples (relative units) to `key`, decaying what it held.
    pub fn absorb(&mut self, key: &K, m: &PairMoments, now_s: f64, s: &PriorSettings) {
        if m.is_empty() {
            return;
        }
        if let Some(e) = self.slot(key, now_s, s) {
            let f = decay(now_s - e.updated_s, s.half_life_s);
            e.moments.cpu.scale(f);
            e.moments.mem.scale(f);
            e.moments.merge(m);
            e.updated_s = e.updated_s.max(now_s);
        }
    }

    /// Records that a component of `key` was OOM-killed at an allocation
    /// of `mem_rel` (relative to its request, already bumped as by
    /// [`crate::oom::OomFloor`]): the key's memory high-water mark rises
    /// to it, so its siblings and its next incarnation start at least
    /// there (the VPA records such a kill as a peak of the workload).
    /// `age_samples`: the samples the killed component had seen; the
    /// key's [`KillMark`] keeps the largest mark and age. `jump_rel`: how
    /// far the mark is above the component's own held peak, a jump of
    /// the key ([`Moments::jump`]).
    pub fn raise_mem_high(
        &mut self,
        key: &K,
        mem_rel: f64,
        age_samples: u64,
        jump_rel: f64,
        now_s: f64,
        s: &PriorSettings,
    ) {
        if !mem_rel.is_finite() || mem_rel <= 0.0 {
            return;
        }
        if let Some(e) = self.slot(key, now_s, s) {
            e.moments.mem.hi = e.moments.mem.hi.max(mem_rel);
            e.moments.mem.add_jump(jump_rel);
            e.kill = e.kill.max(KillMark {
                mem_rel,
                age_samples,
            });
        }
    }

    /// The prior of the first usable key in `keys` (most specific first),
    /// with the largest [`KillMark`] of all of them.
    pub fn prior(&self, keys: &[K], now_s: f64, s: &PriorSettings) -> Option<RelPrior> {
        let mut first = None;
        let mut kill = KillMark::default();
        for e in keys.iter().filter_map(|k| self.entries.get(k)) {
            kill = kill.max(e.kill);
            if first.is_none() {
                first = entry_prior(e, now_s, s);
            }
        }
        first.map(|p| RelPrior { kill, ..p })
    }
}

/// Fewest decayed samples per resource that make a prior.
const MIN_PRIOR_WEIGHT: f64 = 1.0;

/// Smallest share of the pooled variance counted as between-component
/// spread: even identical-looking siblings leave a component's own samples
/// some say.
const MIN_BETWEEN_SHARE: f64 = 0.05;

fn entry_prior(e: &PriorEntry, now_s: f64, s: &PriorSettings) -> Option<RelPrior> {
    if e.members < 2 {
        return None;
    }
    let age = (now_s - e.updated_s).max(0.0);
    let age_factor = if s.half_life_s > 0.0 {
        1.0 + age / s.half_life_s
    } else {
        1.0
    };
    let inflate = (1.0 + 1.0 / f64::from(e.members)) * age_factor;
    let one = |m: &Moments| -> Option<Level> {
        if m.w < MIN_PRIOR_WEIGHT {
            return None;
        }
        let mean = m.mean()?;
        let total = m.var()?;
        let within = m.within_var().unwrap_or(0.0).min(total);
        let between = (total - within).max(MIN_BETWEEN_SHARE * total);
        let l = Level {
            mean,
            between_var: between * inflate,
            within_var: within * inflate,
            high: m.hi.max(mean),
            jump: m.jump,
        };
        (mean.is_finite()
            && l.between_var.is_finite()
            && l.within_var.is_finite()
            && l.high.is_finite()
            && l.jump.is_finite())
        .then_some(l)
    };
    Some(RelPrior {
        cpu: one(&e.moments.cpu)?,
        mem: one(&e.moments.mem)?,
        kill: KillMark::default(),
    })
}

/// A component's predictive from its prior and its own samples so far
/// (`own`, with `last` its latest one): the normal-normal update of its
/// level, `precision = 1/between + n/within`, mean never below its latest
/// sample; predictive variance `within + 1/precision` (see the module docs).
pub fn blend(prior: &Level, own: &Moments, last: Option<f64>) -> Predictive {
    let Some(x) = own.mean().filter(|x| x.is_finite()) else {
        return prior.predictive();
    };
    let n = own.w;
    let tiny = 1e-12;
    let (b, w) = (prior.between_var.max(tiny), prior.within_var.max(tiny));
    let precision = 1.0 / b + n / w;
    let level = (prior.mean / b + n * x / w) / precision;
    let mean = last
        .filter(|l| l.is_finite())
        .map_or(level, |l| level.max(l));
    Predictive::gaussian(mean, (prior.within_var + 1.0 / precision).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: PriorSettings = PriorSettings {
        half_life_s: 3600.0,
        max_keys: 4,
    };

    fn moments(xs: &[f64]) -> PairMoments {
        let mut m = PairMoments::default();
        for &x in xs {
            m.cpu.add(x);
            m.mem.add(x);
        }
        m
    }

    #[test]
    fn a_lone_member_is_not_its_own_prior() {
        let mut b: PriorBook<&str> = PriorBook::new();
        b.join(&"web", 0.0, &S);
        b.absorb(&"web", &moments(&[0.5, 0.5]), 0.0, &S);
        assert!(b.prior(&["web"], 0.0, &S).is_none());
        b.join(&"web", 10.0, &S);
        let p = b.prior(&["web"], 10.0, &S).expect("two members");
        assert!((p.mem.mean - 0.5).abs() < 1e-12);
    }

    #[test]
    fn spread_between_siblings_and_age_widen_the_prior() {
        let mut b: PriorBook<&str> = PriorBook::new();
        for x in [0.2, 0.4, 0.6] {
            b.join(&"app", 0.0, &S);
            let mut m = moments(&[x, x]);
            m.mem.add_diff(x, x);
            b.absorb(&"app", &m, 0.0, &S);
        }
        let p = b.prior(&["app"], 0.0, &S).expect("prior");
        assert!((p.mem.mean - 0.4).abs() < 1e-12);
        // constant series: all the spread is between siblings; x (1 + 1/3)
        assert_eq!(p.mem.within_var, 0.0);
        assert!((p.mem.between_var - 0.08 / 3.0 * 4.0 / 3.0).abs() < 1e-12);
        let old = b.prior(&["app"], 3600.0, &S).expect("prior");
        assert!((old.mem.between_var / p.mem.between_var - 2.0).abs() < 1e-9);
    }

    #[test]
    fn most_specific_usable_key_wins() {
        let mut b: PriorBook<&str> = PriorBook::new();
        for k in ["lineage", "app"] {
            b.join(&k, 0.0, &S);
            b.join(&k, 0.0, &S);
        }
        b.absorb(&"app", &moments(&[0.9]), 0.0, &S);
        b.absorb(&"lineage", &moments(&[0.1]), 0.0, &S);
        let p = b.prior(&["lineage", "app"], 0.0, &S).expect("prior");
        assert!((p.mem.mean - 0.1).abs() < 1e-12);
        let p = b.prior(&["none", "app"], 0.0, &S).expect("prior");
        assert!((p.mem.mean - 0.9).abs() < 1e-12);
    }

    #[test]
    fn old_samples_decay_and_the_book_is_bounded() {
        let mut b: PriorBook<u32> = PriorBook::new();
        b.join(&0, 0.0, &S);
        b.join(&0, 0.0, &S);
        b.absorb(&0, &moments(&[1.0]), 0.0, &S);
        b.absorb(&0, &moments(&[0.0]), 3600.0, &S);
        // the first sample weighs half: mean = 0.5 / 1.5
        let p = b.prior(&[0], 3600.0, &S).expect("prior");
        assert!((p.mem.mean - 1.0 / 3.0).abs() < 1e-12);
        for k in 1..10 {
            b.join(&k, 3600.0, &S);
        }
        assert_eq!(b.len(), S.max_keys);
        assert_eq!(b.refused_keys, 6);
        // the keys last updated at 3,600 s decay for 20 half-lives: no
        // room until then, room from then on
        let expiry_s = 3600.0 + 20.0 * S.half_life_s;
        b.join(&41, expiry_s - 1.0, &S);
        assert!(b.entry(&41).is_none());
        assert_eq!(b.refused_keys, 7);
        b.join(&42, expiry_s, &S);
        assert!(b.entry(&42).is_some());
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn blend_hands_over_to_own_samples() {
        let prior = Level {
            mean: 0.8,
            between_var: 0.01,
            within_var: 0.0025,
            high: 0.0,
            jump: 0.0,
        };
        assert_eq!(blend(&prior, &Moments::default(), None), prior.predictive());
        let mut own = Moments::default();
        own.add(0.4);
        // precision 100 + 400: level (80 + 160) / 500 = 0.48
        let b = blend(&prior, &own, Some(0.4));
        assert!((b.mean - 0.48).abs() < 1e-12);
        assert!((b.std - (0.0025f64 + 1.0 / 500.0).sqrt()).abs() < 1e-12);
        for _ in 0..999 {
            own.add(0.4);
        }
        let b = blend(&prior, &own, Some(0.4));
        assert!((b.mean - 0.4).abs() < 1e-3);
        assert!((b.std - 0.05).abs() < 1e-3);
        // never below the latest sample
        assert!((blend(&prior, &own, Some(0.9)).mean - 0.9).abs() < 1e-12);
    }

    #[test]
    fn the_largest_jump_is_pooled_and_decays_to_nothing() {
        let mut b: PriorBook<&str> = PriorBook::new();
        for (x, jump) in [(0.2, 0.1), (0.6, 0.3)] {
            let mut m = moments(&[x]);
            m.mem.add_jump(jump);
            m.mem.add_jump(-1.0);
            m.mem.add_jump(f64::NAN);
            b.join(&"app", 0.0, &S);
            b.absorb(&"app", &m, 0.0, &S);
        }
        let p = b.prior(&["app"], 0.0, &S).expect("prior");
        assert!((p.mem.jump - 0.3).abs() < 1e-12);
        assert_eq!(p.cpu.jump, 0.0, "cpu jumps are not pooled");
        // one half-life later, half of it
        b.absorb(&"app", &moments(&[0.4]), 3600.0, &S);
        let p = b.prior(&["app"], 3600.0, &S).expect("prior");
        assert!((p.mem.jump - 0.15).abs() < 1e-12, "{}", p.mem.jump);
    }

    #[test]
    fn high_water_mark_decays_to_the_mean_and_rises_with_a_kill() {
        let mut b: PriorBook<&str> = PriorBook::new();
        for x in [0.2, 0.6] {
            b.join(&"app", 0.0, &S);
            b.absorb(&"app", &moments(&[x]), 0.0, &S);
        }
        let p = b.prior(&["app"], 0.0, &S).expect("prior");
        assert!((p.mem.high - 0.6).abs() < 1e-12);
        // one half-life later the mark is half-way down to the mean (0.4)
        b.absorb(&"app", &moments(&[0.4]), 3600.0, &S);
        let p = b.prior(&["app"], 3600.0, &S).expect("prior");
        assert!((p.mem.high - 0.5).abs() < 1e-12, "{}", p.mem.high);
        b.raise_mem_high(&"app", 0.9, 5, 0.0, 3600.0, &S);
        let p = b.prior(&["app"], 3600.0, &S).expect("prior");
        assert!((p.mem.high - 0.9).abs() < 1e-12);
        assert!((p.cpu.high - 0.5).abs() < 1e-12, "cpu untouched");
        b.raise_mem_high(&"app", f64::NAN, 9, 0.0, 3600.0, &S);
        assert!(b.prior(&["app"], 3600.0, &S).expect("prior").mem.high == 0.9);
        // The kill mark does not decay; a lower, older kill keeps the
        // larger mark and takes the larger age.
        b.absorb(&"app", &moments(&[0.4]), 36_000.0, &S);
        b.raise_mem_high(&"app", 0.7, 8, 0.0, 36_000.0, &S);
        let p = b.prior(&["app"], 36_000.0, &S).expect("prior");
        assert!(p.mem.high < 0.75, "{}", p.mem.high);
        let want = KillMark {
            mem_rel: 0.9,
            age_samples: 8,
        };
        assert_eq!(p.kill, want);
        // It comes from any key, not only the one the levels come from.
        for x in [0.2, 0.3] {
            b.join(&"lineage", 0.0, &S);
            b.absorb(&"lineage", &moments(&[x]), 36_000.0, &S);
        }
        let p = b.prior(&["lineage", "app"], 36_000.0, &S).expect("prior");
        assert!((p.mem.mean - 0.25).abs() < 1e-12, "levels of the lineage");
        assert_eq!(p.kill, want);
        let p = b.prior(&["lineage"], 36_000.0, &S).expect("prior");
        assert_eq!(p.kill, KillMark::default());
    }

    proptest! {
        #[test]
        fn priors_are_finite_and_inside_the_samples(
            xs in proptest::collection::vec(0.0f64..4.0, 1..50),
            ages in proptest::collection::vec(0.0f64..1e6, 1..50),
        ) {
            let mut b: PriorBook<u8> = PriorBook::new();
            let mut t = 0.0;
            for (i, x) in xs.iter().enumerate() {
                t += ages[i % ages.len()];
                b.join(&1, t, &S);
                b.absorb(&1, &moments(&[*x]), t, &S);
            }
            if let Some(p) = b.prior(&[1], t + 1.0, &S) {
                let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = xs.iter().cloned().fold(0.0, f64::max);
                prop_assert!(p.mem.mean.is_finite() && p.mem.predictive().std.is_finite());
                prop_assert!(p.mem.mean >= lo - 1e-9 && p.mem.mean <= hi + 1e-9);
                prop_assert!(p.mem.between_var >= 0.0 && p.mem.within_var >= 0.0);
            }
        }
    }
}

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
//! `[shaper] prior_half_life_s`). The pooled variance therefore carries both
//! the spread *between* siblings and each one's variation over time. A key
//! is usable as a prior only once at least two incarnations joined it (so a
//! component is never its own "prior"). Its variance is inflated:
//! * by `1 + 1 / members` for a small number of members, and
//! * by `1 + age / half-life`, where age is the time since the key last
//!   received a sample: an old prior is a less certain one.
//!
//! ## How a prior hands over to the component's own model
//! With `n` own samples (mean `x̄`, variance `s²`) and `n0 =
//! prior_weight_samples`, the forecast is the mixture of the prior
//! `N(μp, σp²)` with weight `wp = n0 / (n0 + n)` and of the component's own
//! samples with weight `wo = n / (n0 + n)`:
//!
//! `mean = wp μp + wo x̄`, `var = wp σp² + wo s² + wp wo (μp − x̄)²`.
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
}

impl Moments {
    /// Adds one sample of weight 1 (non-finite values are ignored).
    pub fn add(&mut self, x: f64) {
        if x.is_finite() {
            self.w += 1.0;
            self.s1 += x;
            self.s2 += x * x;
        }
    }

    /// Adds another set of moments.
    pub fn merge(&mut self, o: &Moments) {
        self.w += o.w;
        self.s1 += o.s1;
        self.s2 += o.s2;
    }

    /// Multiplies every weight by `f` (decay).
    pub fn scale(&mut self, f: f64) {
        self.w *= f;
        self.s1 *= f;
        self.s2 *= f;
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

/// A prior in relative units (a share of the request), per resource.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RelPrior {
    pub cpu: Predictive,
    pub mem: Predictive,
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
            if self.entries.len() >= s.max_keys {
                // Forget what has decayed to (almost) nothing: 20 half-lives.
                let horizon = 20.0 * s.half_life_s;
                self.entries.retain(|_, e| now_s - e.updated_s < horizon);
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

    /// The prior of the first usable key in `keys` (most specific first).
    pub fn prior<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k K>,
        now_s: f64,
        s: &PriorSettings,
    ) -> Option<RelPrior>
    where
        K: 'k,
    {
        keys.into_iter()
            .find_map(|k| self.entries.get(k).and_then(|e| entry_prior(e, now_s, s)))
    }
}

/// Fewest decayed samples per resource that make a prior.
const MIN_PRIOR_WEIGHT: f64 = 1.0;

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
    let one = |m: &Moments| -> Option<Predictive> {
        if m.w < MIN_PRIOR_WEIGHT {
            return None;
        }
        let mean = m.mean()?;
        let var = m.var()? * inflate;
        (mean.is_finite() && var.is_finite()).then(|| Predictive::gaussian(mean, var.sqrt()))
    };
    Some(RelPrior {
        cpu: one(&e.moments.cpu)?,
        mem: one(&e.moments.mem)?,
    })
}

/// The mixture of a prior with `own` samples, `n0` the prior's weight in
/// samples (see the module docs).
pub fn blend(prior: &Predictive, own: &Moments, n0: f64) -> Predictive {
    let (Some(x), Some(s2)) = (own.mean(), own.var()) else {
        return *prior;
    };
    let n = own.w;
    let wp = n0 / (n0 + n);
    let wo = 1.0 - wp;
    let mean = wp * prior.mean + wo * x;
    let d = prior.mean - x;
    let var = wp * prior.std * prior.std + wo * s2 + wp * wo * d * d;
    Predictive::gaussian(mean, var.max(0.0).sqrt())
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
        assert!(b.prior([&"web"], 0.0, &S).is_none());
        b.join(&"web", 10.0, &S);
        let p = b.prior([&"web"], 10.0, &S).expect("two members");
        assert!((p.mem.mean - 0.5).abs() < 1e-12);
    }

    #[test]
    fn spread_between_siblings_and_age_widen_the_prior() {
        let mut b: PriorBook<&str> = PriorBook::new();
        for x in [0.2, 0.4, 0.6] {
            b.join(&"app", 0.0, &S);
            b.absorb(&"app", &moments(&[x, x]), 0.0, &S);
        }
        let p = b.prior([&"app"], 0.0, &S).expect("prior");
        assert!((p.mem.mean - 0.4).abs() < 1e-12);
        let sd_fresh = p.mem.std;
        // biased pooled sd = 0.1633; x (1 + 1/3)
        assert!((sd_fresh - (0.08f64 / 3.0 * 4.0 / 3.0).sqrt()).abs() < 1e-9);
        let old = b.prior([&"app"], 3600.0, &S).expect("prior");
        assert!((old.mem.std / sd_fresh - 2f64.sqrt()).abs() < 1e-9);
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
        let p = b.prior([&"lineage", &"app"], 0.0, &S).expect("prior");
        assert!((p.mem.mean - 0.1).abs() < 1e-12);
        let p = b.prior([&"none", &"app"], 0.0, &S).expect("prior");
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
        let p = b.prior([&0], 3600.0, &S).expect("prior");
        assert!((p.mem.mean - 1.0 / 3.0).abs() < 1e-12);
        for k in 1..10 {
            b.join(&k, 3600.0, &S);
        }
        assert_eq!(b.len(), S.max_keys);
        assert_eq!(b.refused_keys, 6);
        // far later, the old keys make room again
        b.join(&42, 1e9, &S);
        assert!(b.entry(&42).is_some());
    }

    #[test]
    fn blend_hands_over_to_own_samples() {
        let prior = Predictive::gaussian(0.8, 0.1);
        assert_eq!(blend(&prior, &Moments::default(), 5.0), prior);
        let mut own = Moments::default();
        for _ in 0..5 {
            own.add(0.4);
        }
        let b = blend(&prior, &own, 5.0);
        assert!((b.mean - 0.6).abs() < 1e-12);
        // 0.5 * 0.01 + 0 + 0.25 * 0.16
        assert!((b.std - (0.005f64 + 0.04).sqrt()).abs() < 1e-12);
        for _ in 0..995 {
            own.add(0.4);
        }
        assert!((blend(&prior, &own, 5.0).mean - 0.4).abs() < 0.003);
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
            if let Some(p) = b.prior([&1], t + 1.0, &S) {
                let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = xs.iter().cloned().fold(0.0, f64::max);
                prop_assert!(p.mem.mean.is_finite() && p.mem.std.is_finite());
                prop_assert!(p.mem.mean >= lo - 1e-9 && p.mem.mean <= hi + 1e-9);
                prop_assert!(p.mem.std >= 0.0);
            }
        }
    }
}

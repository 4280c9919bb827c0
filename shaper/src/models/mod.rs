//! Per-component model management: normalisation, history, warm-up and
//! horizon.
//!
//! Every component has one model per resource ([`ComponentModels`]). Models
//! see usage **relative to the component's request** (`usage / request`),
//! whatever the caller: the agent, the simulator and a replayed recording
//! feed the same numbers, a model's parameters mean the same thing for a
//! 64 MiB and a 64 GiB container, and a forecast from a sibling or a
//! predecessor can be carried over at another request. Forecasts are
//! scaled back to absolute units (cores, bytes) with the request in force.
//!
//! Which forecast a component gets ([`ComponentModels::forecast_with`],
//! reported as a [`ForecastSource`]):
//! 1. **own**: its own model, once the model is warm (it has seen the
//!    samples it needs to fit, [`ComponentModels::with_warm_samples`]) and
//!    `[shaper] min_history_samples` samples of both resources;
//! 2. **prior**: before that, the prior of its siblings or predecessors
//!    ([`crate::prior`]) mixed with its own samples so far, when one exists
//!    and `[shaper] prior` is on;
//! 3. **fallback**: else, past `min_history_samples`, its model's own
//!    fallback (last value, wide band); before, no forecast, and the shaper
//!    keeps the component at its request.
//!
//! The horizon (samples whose peak is forecast) is [`horizon_samples`].
//! Memory samples should be the peak within the sample's interval when the
//! caller has one (cgroup `memory.peak`, a trace's `max_memory`): the OOM
//! killer acts on the peak, not the mean.

use crate::config::ShaperConfig;
use crate::hold::Hold;
use crate::model::{Forecasts, Predictive, Resource, Resources};
use crate::prior::{blend, PairMoments, RelPrior};
use forecaster::{ForecastError, Forecaster};
use serde::{Deserialize, Serialize};

/// Where a component's forecast came from this round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForecastSource {
    /// Its own warm model.
    Own,
    /// Its siblings' or predecessors' prior, mixed with its own samples.
    Prior,
    /// Its model's fallback, or no forecast (kept at its request).
    Fallback,
}

impl ForecastSource {
    pub fn as_str(&self) -> &'static str {
        match self {
            ForecastSource::Own => "own",
            ForecastSource::Prior => "prior",
            ForecastSource::Fallback => "fallback",
        }
    }
}

/// Usage relative to the request (0 when the request is not positive).
pub fn normalise(value: f64, request: f64) -> f64 {
    if request > 0.0 && request.is_finite() {
        value / request
    } else {
        0.0
    }
}

/// A relative level scaled back to absolute units (0 for a request that
/// is not a finite positive number).
fn absolute(rel: f64, request: f64) -> f64 {
    if request > 0.0 && request.is_finite() {
        rel * request
    } else {
        0.0
    }
}

/// A forecast of relative usage scaled back to absolute units.
pub fn denormalise(p: Predictive, request: f64) -> Predictive {
    let by = absolute(1.0, request);
    Predictive {
        mean: p.mean * by,
        std: p.std * by,
        calibration: p.calibration,
    }
}

/// The default horizon covers at least this much time (the agent's 10 s
/// rounds forecast the peak of the next minute).
pub const DEFAULT_MIN_HORIZON_S: f64 = 60.0;

/// The forecast horizon in samples: `[shaper] horizon_samples` when set,
/// else enough samples to cover the time until the next round and at least
/// [`DEFAULT_MIN_HORIZON_S`]: `ceil(max(round_interval_s, 60) /
/// sample_interval_s)`, at least 1.
pub fn horizon_samples(cfg: &ShaperConfig, round_interval_s: f64, sample_interval_s: f64) -> usize {
    cfg.horizon_samples.unwrap_or_else(|| {
        let n = round_interval_s.max(DEFAULT_MIN_HORIZON_S) / sample_interval_s;
        if n.is_finite() && n > 0.0 {
            n.ceil()
                .clamp(1.0, crate::config::MAX_HORIZON_SAMPLES as f64) as usize
        } else {
            1
        }
    })
}

/// One component's CPU and memory models.
pub struct ComponentModels {
    cpu: Box<dyn Forecaster>,
    mem: Box<dyn Forecaster>,
    /// Forecasts from the first sample on (the simulator's oracle, which
    /// knows the future).
    always_warm: bool,
    /// Samples the models need to fit (before: their fallback).
    warm_samples: usize,
    /// Every relative sample seen (for the mixture with a prior).
    own: PairMoments,
    /// Relative samples not yet handed to a prior book.
    pending: PairMoments,
    /// Latest relative samples (CPU, memory).
    last: (Option<f64>, Option<f64>),
    /// The peak of the recent relative memory samples ([`hold_samples`]).
    mem_hold: Hold,
    /// The same over a small application's longer window
    /// ([`small_hold_samples`]).
    small_hold: Hold,
    /// Samples before which the siblings' high-water mark still holds
    /// ([`sibling_hold_samples`]).
    sibling_hold: usize,
    /// Samples inherited from a predecessor ([`ComponentModels::inheriting`]):
    /// they warm the models but are not this incarnation's age.
    inherited_samples: usize,
    /// Samples of this incarnation seen before its models were rebuilt in
    /// place ([`ComponentModels::continuing`]) and no longer in them: they
    /// count towards its age.
    earlier_samples: usize,
    /// The latest memory forecast handed out, waiting for its score.
    tracked: Option<Tracked>,
}

/// A memory forecast (relative to the request) and the largest relative
/// memory sample seen since: its score for [`crate::risk`].
#[derive(Clone, Copy, Debug)]
struct Tracked {
    source: ForecastSource,
    mean_rel: f64,
    std_rel: f64,
    peak_rel: Option<f64>,
}

/// Most samples a component's inheritable history holds.
pub const MAX_HISTORY_SAMPLES: usize = 4_096;

/// One sample relative to the request in force.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelSample {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    pub mem: f64,
}

/// Rewrites samples relative to request `from` as relative to request
/// `to`, so that their absolute values are kept: what a component's
/// history becomes when its request changes in place (see
/// [`ComponentModels::continuing`]). A request that is not a positive
/// number counts as 1, as in [`ComponentModels::build`].
pub fn rescale_history<'a>(
    samples: impl IntoIterator<Item = &'a mut RelSample>,
    from: Resources,
    to: Resources,
) {
    let cpu = rescale_factor(from.cpu_cores, to.cpu_cores);
    let mem = rescale_factor(from.mem_bytes, to.mem_bytes);
    for s in samples {
        s.cpu = s.cpu.map(|c| c * cpu);
        s.mem *= mem;
    }
}

/// `from / to`, each taken as 1 when it is not a positive number.
fn rescale_factor(from: f64, to: f64) -> f64 {
    unit(from) / unit(to)
}

/// What one observed unit stands for at request `r`: `r`, or 1 when it
/// is not a positive number.
fn unit(r: f64) -> f64 {
    if r > 0.0 && r.is_finite() {
        r
    } else {
        1.0
    }
}

/// How many of its last samples a component hands to its successor (a
/// container recreated under the same name, a task restarted after a
/// kill or an eviction): twice what its model needs to be warm, at least
/// 64, at most [`MAX_HISTORY_SAMPLES`]. The agent and the simulator keep
/// the same number, so a successor starts equally warm in both.
pub fn history_cap(warm_samples: usize, cfg: &ShaperConfig) -> usize {
    (2 * warm_samples.max(cfg.min_history_samples)).clamp(64, MAX_HISTORY_SAMPLES)
}

/// `seconds / sample_interval_s` rounded up, at most 1e9 (0 when the
/// result is not a positive number).
fn samples_in(seconds: f64, sample_interval_s: f64) -> usize {
    let n = seconds / sample_interval_s;
    if n.is_finite() && n > 0.0 {
        n.ceil().min(1e9) as usize
    } else {
        0
    }
}

/// The peaks a component's memory holds keep, relative to its request
/// ([`ComponentModels::held_peaks`]): the one-day hold's and a small
/// application's week-long one's (0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeldPeaks {
    #[serde(default)]
    pub day_rel: f64,
    #[serde(default)]
    pub week_rel: f64,
}

impl HeldPeaks {
    /// True when neither hold keeps anything.
    pub fn is_none(&self) -> bool {
        self.day_rel == 0.0 && self.week_rel == 0.0
    }
}

/// Buckets of a small application's memory hold (a week in days).
pub const SMALL_HOLD_BUCKETS: usize = 7;

/// A small application's memory hold in samples ([`ShaperConfig::small_hold_s`]
/// over the interval, rounded up; 0 when off or the interval unknown).
pub fn small_hold_samples(cfg: &ShaperConfig, sample_interval_s: f64) -> usize {
    samples_in(cfg.small_hold_s(), sample_interval_s)
}

/// The memory hold in samples: `[shaper] mem_hold_s / sample_interval_s`,
/// rounded up, at most 1e9 (0 when the hold is off or the interval
/// unknown). A hold costs the same bounded memory at any length
/// ([`crate::hold`]).
pub fn hold_samples(cfg: &ShaperConfig, sample_interval_s: f64) -> usize {
    samples_in(cfg.mem_hold_s, sample_interval_s)
}

/// The samples for which a component's memory is held at its siblings'
/// high-water mark: `[shaper] sibling_hold_s / sample_interval_s`, rounded
/// up (0 when off or the interval unknown).
pub fn sibling_hold_samples(cfg: &ShaperConfig, sample_interval_s: f64) -> usize {
    samples_in(cfg.sibling_hold_s, sample_interval_s)
}

impl std::fmt::Debug for ComponentModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentModels")
            .field("model", &self.cpu.name())
            .field("cpu_observed", &self.cpu.observed())
            .field("mem_observed", &self.mem.observed())
            .finish()
    }
}

impl ComponentModels {
    /// Two fresh models from `build`, called once per resource with the
    /// absolute units one observed unit stands for (the `request` in force
    /// now, as the models see usage / request; 1 when it is not positive).
    pub fn build(
        request: Resources,
        build: impl Fn(Resource, f64) -> Result<Box<dyn Forecaster>, ForecastError>,
    ) -> Result<Self, ForecastError> {
        Ok(Self::fresh(
            build(Resource::Cpu, unit(request.cpu_cores))?,
            build(Resource::Mem, unit(request.mem_bytes))?,
            false,
        ))
    }

    /// `cpu` and `mem` with nothing observed, no hold and no history.
    fn fresh(cpu: Box<dyn Forecaster>, mem: Box<dyn Forecaster>, always_warm: bool) -> Self {
        Self {
            cpu,
            mem,
            always_warm,
            warm_samples: 1,
            own: PairMoments::default(),
            pending: PairMoments::default(),
            last: (None, None),
            mem_hold: Hold::default(),
            small_hold: Hold::default(),
            sibling_hold: 0,
            inherited_samples: 0,
            earlier_samples: 0,
            tracked: None,
        }
    }

    /// Sets the samples the models need before they fit (their
    /// [`forecaster::config::ModelConfig::warm_samples`]); default 1.
    pub fn with_warm_samples(mut self, n: usize) -> Self {
        self.warm_samples = n.max(1);
        self
    }

    /// Holds memory forecasts at the largest of the last `n` samples (see
    /// [`hold_samples`]); default 0, no hold.
    pub fn with_mem_hold(mut self, n: usize) -> Self {
        self.mem_hold = Hold::new(n);
        self
    }

    /// Keeps the largest of the last `n` samples for a small application's
    /// sizing (`Forecasts::mem_small_hold_bytes`; see
    /// [`small_hold_samples`]); default 0, none.
    pub fn with_small_hold(mut self, n: usize) -> Self {
        self.small_hold = Hold::with_buckets(n, SMALL_HOLD_BUCKETS);
        self
    }

    /// Holds memory forecasts at the siblings' high-water mark for the
    /// first `n` samples (see [`sibling_hold_samples`]); default 0: only
    /// while sized from the prior.
    pub fn with_sibling_hold(mut self, n: usize) -> Self {
        self.sibling_hold = n;
        self
    }

    /// Models that forecast from the start (the simulator's oracle).
    pub fn always_warm(cpu: Box<dyn Forecaster>, mem: Box<dyn Forecaster>) -> Self {
        Self::fresh(cpu, mem, true)
    }

    /// Feeds one sample in absolute units; a missing CPU value (no rate
    /// yet: the first sample of a cumulative counter) feeds memory only.
    /// A value a model rejects (non-finite) leaves it unchanged.
    pub fn observe(&mut self, cpu_cores: Option<f64>, mem_bytes: f64, request: Resources) {
        self.observe_relative(
            cpu_cores.map(|c| normalise(c, request.cpu_cores)),
            normalise(mem_bytes, request.mem_bytes),
        );
    }

    /// Feeds one sample already relative to the request (a checkpointed
    /// history, a predecessor's).
    pub fn observe_relative(&mut self, cpu: Option<f64>, mem: f64) {
        if let Some(x) = cpu {
            match self.cpu.observe(x) {
                Ok(()) => {
                    self.own.cpu.add(x);
                    self.pending.cpu.add(x);
                    if let Some(p) = self.last.0 {
                        self.pending.cpu.add_diff(x, p);
                    }
                    self.last.0 = Some(x);
                }
                Err(e) => tracing::debug!(error = %e, "cpu sample rejected"),
            }
        }
        match self.mem.observe(mem) {
            Ok(()) => {
                self.own.mem.add(mem);
                self.pending.mem.add(mem);
                if let Some(p) = self.last.1 {
                    self.pending.mem.add_diff(mem, p);
                }
                self.last.1 = Some(mem);
                // A new high: how far this sample rose above the held peak
                // of the ones before it (pooled as the siblings' jump).
                if self.mem.observed() > 1 {
                    let jump = self.jump_to(mem);
                    self.pending.mem.add_jump(jump);
                }
                self.mem_hold.push(mem);
                self.small_hold.push(mem);
                if let Some(t) = self.tracked.as_mut() {
                    t.peak_rel = Some(t.peak_rel.map_or(mem, |p| p.max(mem)));
                }
            }
            Err(e) => tracing::debug!(error = %e, "memory sample rejected"),
        }
    }

    /// Fresh models rebuilt from a predecessor's history ([`history_cap`]
    /// samples at most, oldest first): its samples are observed, but not
    /// pooled into the priors again (they were when first seen). They warm
    /// the models; the incarnation's age ([`ComponentModels::age_samples`])
    /// still starts at 0, as the successor starts its life over (a task
    /// re-run from its start, a recreated container).
    pub fn inheriting(self, history: &[RelSample]) -> Self {
        let mut m = self.restoring(history);
        m.inherited_samples = m.observed();
        m
    }

    /// The peaks its memory holds keep (relative to the request), for a
    /// checkpoint: they reach further back than the history it carries.
    pub fn held_peaks(&self) -> HeldPeaks {
        HeldPeaks {
            day_rel: self.mem_hold.max(),
            week_rel: self.small_hold.max(),
        }
    }

    /// Puts a checkpoint's held peaks back into the holds, as their oldest
    /// sample (before [`ComponentModels::restoring`] replays the history):
    /// a peak is then held one whole window from the restart, never less
    /// than it would have been. Negative or non-finite peaks are ignored.
    pub fn with_held_peaks(mut self, p: HeldPeaks) -> Self {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if ok(p.day_rel) {
            self.mem_hold.push(p.day_rel);
        }
        if ok(p.week_rel) {
            self.small_hold.push(p.week_rel);
        }
        self
    }

    /// [`ComponentModels::inheriting`] for the component's own history (a
    /// checkpoint restored after an agent restart): its samples count
    /// towards its age.
    pub fn restoring(mut self, history: &[RelSample]) -> Self {
        for s in history {
            self.observe_relative(s.cpu, s.mem);
        }
        self.take_pending();
        self
    }

    /// Follows an in-place request change from `from` to `to` without a
    /// rebuild, when both models keep their state in absolute units
    /// ([`Forecaster::rescale`]: the faithful VPA); the holds and the latest
    /// samples are rescaled with them. False, and nothing changed,
    /// otherwise: rebuild with [`ComponentModels::continuing`].
    pub fn rescale_in_place(&mut self, from: Resources, to: Resources) -> bool {
        let cpu = rescale_factor(from.cpu_cores, to.cpu_cores);
        let mem = rescale_factor(from.mem_bytes, to.mem_bytes);
        if !self.cpu.rescale(cpu) {
            return false;
        }
        if !self.mem.rescale(mem) {
            self.cpu.rescale(1.0 / cpu);
            return false;
        }
        self.mem_hold = self.mem_hold.scaled(mem);
        self.small_hold = self.small_hold.scaled(mem);
        self.last = (self.last.0.map(|x| x * cpu), self.last.1.map(|x| x * mem));
        self.tracked = None;
        true
    }

    /// Fresh models that carry on `previous`, a component's models whose
    /// request changed in place from `from` to `to` (an operator's resize,
    /// a trace's request change): they are rebuilt from `history`, its
    /// recent samples already [rescaled](rescale_history) to `to`, and
    /// take over its memory holds rescaled the same way (so a held peak
    /// keeps its size in bytes and expires when it would have) and its
    /// age (samples older than `history` still count). The agent and the
    /// simulator both rebuild this way, from at most [`history_cap`]
    /// samples, so a change costs the same whatever the component's age.
    pub fn continuing(
        self,
        previous: &Self,
        history: &[RelSample],
        from: Resources,
        to: Resources,
    ) -> Self {
        let mut m = self.restoring(history);
        let f = rescale_factor(from.mem_bytes, to.mem_bytes);
        m.mem_hold = previous.mem_hold.scaled(f);
        m.small_hold = previous.small_hold.scaled(f);
        m.earlier_samples = previous.age_samples().saturating_sub(m.observed());
        m
    }

    /// The relative samples seen since the last call, for a prior book.
    pub fn take_pending(&mut self) -> PairMoments {
        std::mem::take(&mut self.pending)
    }

    /// The score of the latest memory forecast against the largest sample
    /// seen since ([`crate::risk::score`]), once a sample followed it;
    /// each forecast is scored once. `killed_at_bytes`: the component was
    /// OOM-killed at this peak (absolute), which counts as a sample.
    pub fn take_score(
        &mut self,
        killed_at_bytes: Option<f64>,
        request_mem_bytes: f64,
    ) -> Option<(ForecastSource, f64)> {
        let mut t = self.tracked?;
        if let Some(b) = killed_at_bytes {
            let k = normalise(b, request_mem_bytes);
            t.peak_rel = Some(t.peak_rel.map_or(k, |p| p.max(k)));
        }
        let peak = t.peak_rel?;
        self.tracked = None;
        crate::risk::score(peak, t.mean_rel, t.std_rel).map(|z| (t.source, z))
    }

    /// [`ComponentModels::forecast_with`]; with `[shaper] memory_risk` set,
    /// remembered for its score, then with memory calibrated by `risk`
    /// (see [`crate::risk`]).
    pub fn forecast_calibrated(
        &mut self,
        horizon: usize,
        request: Resources,
        cfg: &ShaperConfig,
        prior: Option<&RelPrior>,
        risk: &crate::risk::RiskCalibration,
    ) -> (Option<Forecasts>, ForecastSource) {
        let (mut f, source) = self.forecast_with(horizon, request, cfg, prior);
        if cfg.memory_risk.is_none() {
            // nothing to calibrate: no scores kept
            return (f, source);
        }
        self.tracked = f.as_ref().map(|f| Tracked {
            source,
            mean_rel: normalise(f.mem.mean, request.mem_bytes),
            std_rel: normalise(f.mem.std, request.mem_bytes),
            peak_rel: None,
        });
        if let Some(f) = f.as_mut() {
            risk.calibrate(source, &mut f.mem, request.mem_bytes, (cfg.k1, cfg.k2));
        }
        (f, source)
    }

    /// Samples seen by the model that has seen fewer.
    pub fn observed(&self) -> usize {
        self.cpu.observed().min(self.mem.observed())
    }

    /// Samples seen in this incarnation (inherited ones not counted): the
    /// age the sibling and kill holds compare with a kill's age, which is
    /// recorded in the same units.
    pub fn age_samples(&self) -> usize {
        self.observed().saturating_sub(self.inherited_samples) + self.earlier_samples
    }

    /// How far `mem_rel` (a share of the request) is above the peak of
    /// the held memory samples: the jump a sample or an OOM kill at that
    /// mark makes ([`crate::prior::PriorBook::raise_mem_high`]); 0 without
    /// the hold.
    pub fn jump_to(&self, mem_rel: f64) -> f64 {
        if self.mem_hold.is_on() {
            (mem_rel - self.mem_hold.max()).max(0.0)
        } else {
            0.0
        }
    }

    /// True once the models' own forecasts are used (they are warm and
    /// past `min_history_samples`).
    pub fn ready(&self, cfg: &ShaperConfig) -> bool {
        self.always_warm || self.observed() >= cfg.min_history_samples.max(self.warm_samples)
    }

    /// The forecast of the peak over the next `horizon` samples in
    /// absolute units, and where it came from (see the module docs).
    /// `prior` is the component's prior in relative units, when it has
    /// one; it is ignored when `[shaper] prior` is off. `None` when no
    /// source has an answer or a model answers with a non-finite value.
    pub fn forecast_with(
        &self,
        horizon: usize,
        request: Resources,
        cfg: &ShaperConfig,
        prior: Option<&RelPrior>,
    ) -> (Option<Forecasts>, ForecastSource) {
        let (rel, source) = if self.ready(cfg) {
            (
                Some((self.cpu.forecast(horizon), self.mem.forecast(horizon))),
                ForecastSource::Own,
            )
        } else if let Some(p) = prior.filter(|_| cfg.prior) {
            (
                Some((
                    blend(&p.cpu, &self.own.cpu, self.last.0),
                    blend(&p.mem, &self.own.mem, self.last.1),
                )),
                ForecastSource::Prior,
            )
        } else if self.observed() >= cfg.min_history_samples {
            (
                Some((self.cpu.forecast(horizon), self.mem.forecast(horizon))),
                ForecastSource::Fallback,
            )
        } else {
            (None, ForecastSource::Fallback)
        };
        let Some((cpu, mut mem)) = rel else {
            return (None, source);
        };
        // Memory grows at once and shrinks only after it stayed lower for
        // the hold; a young component stays at least at its siblings'
        // high-water mark (an OOM kill is never the way to learn a peak),
        // an older one at least its own held peak plus the largest new
        // high a sibling made, within that mark (`sibling_jump`), and one
        // younger than a killed sibling was at its kill (plus the sibling
        // hold) at least at that kill's mark.
        let mut kill_hold = 0.0;
        if self.mem_hold.is_on() && !self.always_warm {
            let mut floor = self.mem_hold.max();
            if let Some(p) = prior {
                let n = self.age_samples();
                if source == ForecastSource::Prior || n < self.sibling_hold {
                    floor = floor.max(p.mem.high);
                } else if cfg.sibling_jump {
                    floor = floor.max((floor + p.mem.jump).min(p.mem.high));
                }
                // through the sample it was killed in
                let until = p.kill.age_samples.saturating_add(self.sibling_hold as u64);
                if (n as u64) <= until {
                    kill_hold = p.kill.mem_rel;
                }
            }
            if floor.is_finite() && floor > mem.mean {
                mem.mean = floor;
            }
        }
        // (only when above the held forecast: 0, and so left off the
        // wire, while the week's peak is the day's)
        let small_hold = if self.small_hold.is_on() && !self.always_warm {
            Some(self.small_hold.max())
                .filter(|&x| x > mem.mean)
                .unwrap_or(0.0)
        } else {
            0.0
        };
        let mem = denormalise(mem, request.mem_bytes);
        let f = Forecasts {
            cpu: denormalise(cpu, request.cpu_cores),
            mem_hold_bytes: absolute(kill_hold, request.mem_bytes).max(0.0),
            mem_small_hold_bytes: absolute(small_hold, request.mem_bytes).max(0.0),
            mem,
        };
        let finite = |p: &Predictive| p.mean.is_finite() && p.std.is_finite();
        if finite(&f.cpu)
            && finite(&f.mem)
            && f.mem_hold_bytes.is_finite()
            && f.mem_small_hold_bytes.is_finite()
        {
            (Some(f), source)
        } else {
            (None, ForecastSource::Fallback)
        }
    }
}

#[cfg(test)]
mod tests;

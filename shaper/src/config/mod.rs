//! Shaper parameters: a flat serde struct that the agent, the central shaper
//! and the simulator embed as a `[shaper]` TOML table, and that `tailor tune`
//! writes a snippet of.
//!
//! ```toml
//! [shaper]
//! policy = "pessimistic"          # baseline | optimistic | pessimistic
//! k1 = 0.05                        # constant buffer term, fraction of the request
//! k2 = 1.0                         # dynamic buffer term, band level (sigmas)
//! small_app_components = 5         # apps with fewer running (core) components are small:
//! small_app_k1 = 0.6               #   their (core components') constant buffer term
//! core_k1_factor = 1.2             # a core kill fails its app: at least this x k1
//! elastic_k1_factor = 0.4          # an elastic kill loses its own work: this x k1
//! young_core_k1 = 0.0              # a component whose kill fails its app: at least this
//! young_core_s = 3600.0            #   constant buffer term while younger (0: off)
//! app_mem_ref_rel = 0.2            # apps below ref = this x the view's memory-weighted
//! app_k1_slope = 0.3               #   median app get max(k1, slope * ln(ref / app memory))
//! app_mem_ref_gib = 0.0            # or an absolute ref (GiB; when set, replaces the relative one)
//! order = "fifo"                   # fifo | sjf | priority
//! victim_order = "oldest_first_keep"  # | lowest_priority_first | least_work_lost
//! cpu_shortfall = "share"          # CPU that does not fit: share (throttle) | evict
//! mem_shortfall = "buffer"         # memory that does not fit: buffer (needs first, buffers cut evenly) | evict
//! grace_period_s = 600.0
//! failure_limit = 3
//! max_growth = 1.0                 # ceiling = request * max_growth
//! min_relative_change = 0.05       # hysteresis
//! # max_evictions_per_round = 10   # unlimited when absent
//! min_cpu_cores = 0.01            # floors (limits are also rounded up to
//! min_mem_bytes = 16777216         #   millicores and whole MiB)
//! # horizon_samples = 6            # default: samples until the next round, >= 1 minute
//! min_history_samples = 3          # own model used after this many samples
//! prior = true                     # young components sized from siblings/predecessors
//! prior_half_life_s = 21600.0      #   pooled samples decay with this half-life
//! prior_max_keys = 1000000
//! mem_hold_s = 86400.0             # memory shrinks only below the peak of the last day
//! small_app_mem_hold_s = 604800.0  #   a small app's only below the peak of the last week
//! sibling_hold_s = 1200.0          # own-model components: at least their siblings' peak this long,
//! sibling_jump = true              #   then their own peak + the siblings' largest new high
//! mem_shrink_max_fraction = 1.0    # a memory shrink takes at most this share of the limit a round
//! oom_bump_bytes = 104857600       # OOM floor: max(L + bump, L * factor)
//! oom_bump_factor = 1.2
//! oom_memory_s = 86400.0           #   held this long after a kill
//! ```
//!
//! This is the kernel's one configuration: every sizing rule (buffers,
//! floors, rounding, OOM floor, model warm-up and horizon, scheduler order)
//! reads it here, in the agent, the central shaper and the simulator alike.

use serde::{Deserialize, Serialize};

/// Which shaping policy `decide()` runs (thesis section 4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Allocation = request, forever; no evictions (the reference run).
    Baseline,
    /// Borg/Omega-like: resize every component to forecast + buffer, no
    /// planning, no evictions; overload is left to the OS (or simulator).
    Optimistic,
    /// Thesis Algorithm 3: plan allocations in scheduler order and evict
    /// deliberately what does not fit.
    #[default]
    Pessimistic,
}

impl Policy {
    pub fn as_str(&self) -> &'static str {
        match self {
            Policy::Baseline => "baseline",
            Policy::Optimistic => "optimistic",
            Policy::Pessimistic => "pessimistic",
        }
    }
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "baseline" => Ok(Policy::Baseline),
            "optimistic" => Ok(Policy::Optimistic),
            "pessimistic" => Ok(Policy::Pessimistic),
            other => Err(format!(
                "unknown policy {other:?} (expected \"baseline\", \"optimistic\" or \"pessimistic\")"
            )),
        }
    }
}

/// The order in which applications are served (Algorithm 3 line 6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedulerOrder {
    /// Submission time, earliest first (ties: application id).
    #[default]
    Fifo,
    /// Expected remaining run time, shortest first; unknown last (ties:
    /// submission time, then id).
    Sjf,
    /// Priority, highest first (ties: submission time, then id).
    Priority,
}

/// Which elastic components are kept first (and so which are evicted first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VictimOrder {
    /// The thesis: per application, right after its core components, keep
    /// elastic components oldest first (longest alive), so the youngest go.
    #[default]
    OldestFirstKeep,
    /// Borg-like: place every application's core components first, then keep
    /// elastic components cluster-wide by application priority, highest
    /// first, so the lowest-priority elastic components go first.
    LowestPriorityFirst,
    /// Place every application's core components first, then keep elastic
    /// components cluster-wide by work done (`work_done_s`), most first, so
    /// the components whose eviction loses the least work go first.
    LeastWorkLost,
}

impl VictimOrder {
    pub fn as_str(&self) -> &'static str {
        match self {
            VictimOrder::OldestFirstKeep => "oldest_first_keep",
            VictimOrder::LowestPriorityFirst => "lowest_priority_first",
            VictimOrder::LeastWorkLost => "least_work_lost",
        }
    }
}

/// What pessimistic planning does when a component's CPU target does not
/// fit on its host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuShortfall {
    /// The thesis (Algorithm 3): CPU is planned like memory; a component
    /// (or its application) that does not fit is evicted.
    Evict,
    /// CPU is compressible: a component whose CPU target does not fit gets
    /// what is left of its host's CPU (at least `min_cpu_cores`) and runs
    /// throttled. Only memory evicts. Components are served in scheduler
    /// order, so the latest applications are the ones slowed down.
    #[default]
    Share,
}

/// What pessimistic planning does when a component's memory target does
/// not fit on its host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemShortfall {
    /// The thesis (Algorithm 3): the component (a core one: its whole
    /// application) is evicted.
    Evict,
    /// Every component's need is placed first: its current peak usage
    /// (the OOM floor included) and its forecast's mean, or for an
    /// application over the failure limit its whole target. Only a need
    /// that does not fit is evicted. The buffers (or, in the grace period,
    /// the unused part of the request) come after; on a host without room
    /// for all of them, every one is cut by the same fraction. A large
    /// application is not evicted whole because one of its components
    /// lacks a few megabytes of buffer on one host. The default.
    #[default]
    Buffer,
}

impl MemShortfall {
    pub fn as_str(&self) -> &'static str {
        match self {
            MemShortfall::Evict => "evict",
            MemShortfall::Buffer => "buffer",
        }
    }
}

impl CpuShortfall {
    pub fn as_str(&self) -> &'static str {
        match self {
            CpuShortfall::Evict => "evict",
            CpuShortfall::Share => "share",
        }
    }
}

/// Largest accepted forecast horizon and history requirement (samples).
pub const MAX_HORIZON_SAMPLES: usize = 10_000;

/// Shaper parameters. Every field has a default (see [`ShaperConfig::default`]),
/// so an empty `[shaper]` table is valid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShaperConfig {
    /// Default `pessimistic`.
    pub policy: Policy,
    /// Constant buffer term: `k1 * request` per resource. Default 0.05:
    /// with the size rules below, the shipped defaults are the best point
    /// of the Google 2011 and 2019 frontiers that stays within every
    /// failure budget on all of them (docs/results.md, "Defaults").
    pub k1: f64,
    /// Dynamic buffer term: `forecast.upper(k2) - forecast.mean` (`k2 * sigma`
    /// for a Gaussian forecast). Default 1.0.
    pub k2: f64,
    /// Memory buffer proportional to the forecast: `mem_margin *
    /// forecast.mean`, added to the K1/K2 buffer (not to risk-targeted
    /// memory). The Kubernetes VPA's safety margin has this form: a jump
    /// in a task's memory scales with its level, so a margin on the level
    /// covers a small and a large task alike, where `k1 * request` gives a
    /// task using a fifth of its request four times the room of one using
    /// nearly all of it. Default 0 (the thesis's K1/K2 only).
    pub mem_margin: f64,
    /// An application with fewer running components than this is small:
    /// its components' constant buffer is `small_app_k1 * request` instead
    /// of `k1 * request`. A failed application counts as one whatever its
    /// size, while a large one gives back many components' memory, and the
    /// jumps that kill come job by job: under a budget of failed
    /// applications the buffer is better spent on the small ones (see the
    /// docs/results.md, "Small applications"). Counted in the view `decide()` gets:
    /// on a node, the application's containers on that node; in the
    /// central shaper and the simulator, across the cluster. Default 5.
    /// The core components of an application with elastic ones count the
    /// same way: fewer core components than this get at least
    /// `small_app_k1` (a core kill fails the application; its elastic
    /// ones get `elastic_k1_factor * k1`: [`Self::k1_for_class`]).
    /// Neither size rule applies to an application whose components all
    /// restart alone (a kill does not fail it: [`crate::model::AppSize::restarts_alone`]),
    /// except that such an application with one running component (a
    /// lone service task or container, whose kill takes the whole service
    /// down) gets `small_app_k1` when `small_app_components` >= 2.
    pub small_app_components: u32,
    /// The constant buffer term of a small application's components
    /// (fraction of the request; see `small_app_components`), but for its
    /// elastic ones (`elastic_k1_factor`). Default 0.6.
    pub small_app_k1: f64,
    /// The constant buffer term of a core component whose kill fails its
    /// application (one that does not restart alone:
    /// [`crate::model::AppSize::restarts_alone`]) is at least `core_k1_factor * k1`.
    /// With `elastic_k1_factor`, the buffer follows what a kill costs: a
    /// core kill re-runs the whole application, an elastic one only its
    /// own task's work. Default 1.2 (docs/results.md, "The buffer follows what a
    /// kill costs"); 1, with `elastic_k1_factor` 1 and no size rule,
    /// gives every component K1, as in the thesis.
    pub core_k1_factor: f64,
    /// The constant buffer term of an elastic component is
    /// `elastic_k1_factor * k1`, and never more than its application's:
    /// its kill restarts it alone and fails nothing, so neither size rule
    /// applies to it. Default 0.4 (docs/results.md, "The buffer follows what a
    /// kill costs").
    pub elastic_k1_factor: f64,
    /// A component whose kill fails its application (a core component that
    /// does not restart alone) gets at least `young_core_k1` as its
    /// constant buffer term (fraction of the request) until it is
    /// `young_core_s` old. A young model has seen too little to know how
    /// far its component can jump: a band fitted on a few flat samples
    /// collapses (its sigma falls to ~1e-7 of the request), and a jump of
    /// 1-5% of the request past the forecast then kills. Over 20 draws of
    /// the bundled slice's usage pool, 10 of the 12 core kills that failed
    /// an application came in the first hour, 8 of all 12 within 5% of the
    /// request above the allocation. With 0.15 for an hour they fail 5 instead of 12
    /// (of 7,260), but the windows of Google 2011 lose 1.5-9.7 points of the
    /// oracle's saving for no fewer failures (docs/results.md, "Young core
    /// components"). Default 0: off.
    pub young_core_k1: f64,
    /// How long `young_core_k1` holds, in seconds of the component's age.
    /// Default 3600.
    pub young_core_s: f64,
    /// Reference application size in GiB of memory request (the sum over
    /// its running components, counted in the view as for
    /// `small_app_components`): an application holding `m` GiB gets
    /// `max(k1, app_k1_slope * ln(app_mem_ref_gib / m))` as its components'
    /// constant buffer term (at most [`MAX_K1`]; and never less than the
    /// small-application rule gives it). Under a budget of failed
    /// applications this is the buffer that minimises the memory held for
    /// a given expected number of failures when a jump past `k1 * request`
    /// comes with probability falling as `exp(-k1 / app_k1_slope)`: the
    /// optimum gives an application a buffer term falling with the log of
    /// its memory (docs/results.md, "Small applications"). Default 0: the relative
    /// reference `app_mem_ref_rel` is used; when set, it replaces it.
    pub app_mem_ref_gib: f64,
    /// The reference of the application-memory rule relative to the view:
    /// `app_mem_ref_rel` times the memory-weighted median of its
    /// applications' memory (the size below which applications hold half
    /// the view's memory request; [`weighted_median`]), worked out every
    /// round. It scales with the workload, where `app_mem_ref_gib` must be
    /// read off each one. Default 0.2 (docs/results.md, "Defaults re-chosen after
    /// the oracle correction"); 0 with `app_mem_ref_gib` 0: off.
    pub app_mem_ref_rel: f64,
    /// How fast the constant buffer term grows as an application's memory
    /// falls below `app_mem_ref_gib`: `app_k1_slope` more per factor `e`
    /// (fraction of the request). Default 0.3.
    pub app_k1_slope: f64,
    /// Application order. Default `fifo`.
    pub order: SchedulerOrder,
    /// Elastic keep/victim order. Default `oldest_first_keep` (the thesis).
    pub victim_order: VictimOrder,
    /// A CPU target that does not fit: `share` (default: squeeze it to
    /// what is left on the host) or `evict` (the thesis).
    pub cpu_shortfall: CpuShortfall,
    /// A memory target that does not fit: `buffer` (default: cut to what
    /// is left on the host, never below current usage and the forecast's
    /// mean; evict only when that does not fit) or `evict` (the thesis).
    pub mem_shortfall: MemShortfall,
    /// Components younger than this keep their request (their models have
    /// too little history). Default 600 s (thesis: 10 minutes).
    pub grace_period_s: f64,
    /// Applications that failed this many times or more (OOM kills of
    /// their components, evictions of the whole application; not an
    /// elastic component's eviction: [`crate::Action::fails_application`])
    /// are no longer shaped: their components keep their request. Default 3.
    pub failure_limit: u32,
    /// Ceiling of a component's allocation = `request * max_growth`.
    /// Default 1.0 (never above the request). Must be >= 1.
    pub max_growth: f64,
    /// Hysteresis: a resize whose relative change is below this in both
    /// resources is skipped (the component keeps its current allocation),
    /// except a growth needed to stay above current usage. Default 0.05.
    pub min_relative_change: f64,
    /// At most this many components evicted per round; absent = unlimited.
    /// Would-be victims beyond the cap are kept (the agent sets 1 when it
    /// is absent: `agent::config`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_evictions_per_round: Option<u32>,
    /// Allocation floor for CPU (cores), applied before the ceiling.
    /// Default 0.01.
    pub min_cpu_cores: f64,
    /// Allocation floor for memory (bytes), applied before the ceiling.
    /// Default 16 MiB.
    pub min_mem_bytes: f64,
    /// Forecast horizon in usage samples: models forecast the peak of the
    /// next `horizon_samples` samples. Default: absent = the samples that
    /// cover the time until the next round, and at least one minute
    /// (`ceil(max(round interval, 60 s) / sample interval)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub horizon_samples: Option<usize>,
    /// A component's own model is used once it has seen this many samples;
    /// before that the component keeps its request. Default 3.
    pub min_history_samples: usize,
    /// After an OOM kill at limit L, memory is held at or above
    /// `max(L + oom_bump_bytes, L * oom_bump_factor)` for `oom_memory_s`.
    /// Defaults 100 MiB, 1.2 and 86,400 s: as long as the memory hold (the
    /// VPA keeps a kill as a peak of its one-day window). With 3600 s, a
    /// restarted task of Google 2011 parts 0-3 crashed again at the same
    /// peak once the floor had lapsed (docs/results.md, "OOM floor for a day").
    pub oom_bump_bytes: f64,
    pub oom_bump_factor: f64,
    pub oom_memory_s: f64,
    /// Risk-targeted memory sizing: the probability that a component's
    /// memory peak crosses its allocation before the next round. When set,
    /// memory is sized from the forecasts' conformal calibration pooled
    /// over the node's components ([`crate::risk`]) instead of `k1`/`k2`;
    /// absent = the thesis's K1/K2 buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_risk: Option<f64>,
    /// Size components whose own model is not warm yet from their
    /// siblings' and predecessors' usage (see [`crate::prior`]). Default
    /// true; false = such components keep their request (or, past
    /// `min_history_samples`, get their model's fallback).
    pub prior: bool,
    /// Half-life of pooled samples; a prior's variance also grows by
    /// `1 + age / half-life`. Default 21600 s (6 h).
    pub prior_half_life_s: f64,
    /// Most keys (applications, lineages) the prior book holds. Default
    /// 1,000,000.
    pub prior_max_keys: usize,
    /// A component's memory forecast never falls below the largest of its
    /// own samples (interval peaks) of the last `mem_hold_s` seconds, and a
    /// young component's never below its siblings' high-water mark: memory
    /// grows at once and shrinks only after usage has stayed lower this
    /// long. 0 = no hold. Default 86400 s: one day, the Kubernetes VPA's
    /// memory peak window, and at least as good as shorter holds on every
    /// trace we measured (docs/results.md, "Memory hold").
    pub mem_hold_s: f64,
    /// The memory hold of a small application's components (those the
    /// size rules give `small_app_k1`: [`Self::is_small`]), when longer
    /// than `mem_hold_s`: their allocation never falls below the largest
    /// of their own samples of the last `small_app_mem_hold_s` seconds
    /// (kept as 7 buckets of a seventh each). A small application's kill
    /// fails it whole, or takes a lone service down, while a hold longer
    /// than a day costs only the components that live longer than a day:
    /// services whose busy day comes back within the week (Bitbrains VMs:
    /// docs/results.md, "A small application holds its memory for a week"). On a
    /// host without room for every buffer, what it adds above the
    /// forecast is cut as a buffer is (`mem_shortfall = "buffer"`). 0 or
    /// at most `mem_hold_s`: off. Default 604,800 s (7 days; the
    /// Kubernetes VPA keeps 8 days of daily peaks).
    pub small_app_mem_hold_s: f64,
    /// For its first `sibling_hold_s` seconds of samples, a component's
    /// memory forecast never falls below its siblings' and predecessors'
    /// high-water mark (see [`crate::prior`]), even once its own model is
    /// warm: a model that has seen an hour of a task may not have seen its
    /// peak yet. Needs the memory hold (`mem_hold_s > 0`). 0: only while
    /// the component is sized from its prior. Default 1,200 s
    /// (docs/results.md, "Defaults"). A trace-dependent trade
    /// (docs/results.md, "Savings frontier (Google 2011 parts 0-3)"): on
    /// Google 2011 parts 0-3 (`peak`, K1 = 0.3, K2 = 0) 7,200 s cuts the
    /// failed apps from 0.28% to 0.09% and reclaims 76,945 GiB-h instead
    /// of 70,660 (fewer re-runs); on the bundled slice, whose fast models
    /// are warm within minutes, it holds everything for the slice's whole
    /// length and the frontier's best at a 1% budget falls from 578.2 to
    /// 336.3 GiB-h.
    pub sibling_hold_s: f64,
    /// After the sibling hold, a component's memory forecast never falls
    /// below its own held peak plus its siblings' largest new high (how
    /// far one of them rose above its own held peak, decayed with
    /// `prior_half_life_s`), capped at the siblings' high-water mark (see
    /// [`crate::prior`], "Sibling jumps"). A jump one sibling made is one
    /// the others may make at their own time: siblings share a fifth of
    /// their jumps on Google 2011's per-task series, not all of them.
    /// Needs the memory hold. Default true (docs/results.md, "Sibling jumps").
    pub sibling_jump: bool,
    /// A memory shrink takes at most this fraction of the current
    /// allocation in one round (growths are never held back). Default 1.0:
    /// a shrink goes to its target at once (the memory hold already waits
    /// a day before any shrink).
    pub mem_shrink_max_fraction: f64,
}

impl Default for ShaperConfig {
    fn default() -> Self {
        Self {
            policy: Policy::Pessimistic,
            k1: 0.05,
            k2: 1.0,
            mem_margin: 0.0,
            small_app_components: 5,
            small_app_k1: 0.6,
            core_k1_factor: 1.2,
            elastic_k1_factor: 0.4,
            young_core_k1: 0.0,
            young_core_s: 3600.0,
            app_mem_ref_gib: 0.0,
            app_k1_slope: 0.3,
            app_mem_ref_rel: 0.2,
            order: SchedulerOrder::Fifo,
            victim_order: VictimOrder::OldestFirstKeep,
            cpu_shortfall: CpuShortfall::Share,
            mem_shortfall: MemShortfall::Buffer,
            grace_period_s: 600.0,
            failure_limit: 3,
            max_growth: 1.0,
            min_relative_change: 0.05,
            max_evictions_per_round: None,
            min_cpu_cores: 0.01,
            min_mem_bytes: 16.0 * 1048576.0,
            horizon_samples: None,
            min_history_samples: 3,
            oom_bump_bytes: 100.0 * 1048576.0,
            oom_bump_factor: 1.2,
            oom_memory_s: 86_400.0,
            memory_risk: None,
            prior: true,
            prior_half_life_s: 21_600.0,
            prior_max_keys: 1_000_000,
            mem_hold_s: 86_400.0,
            small_app_mem_hold_s: 604_800.0,
            sibling_hold_s: 1200.0,
            sibling_jump: true,
            mem_shrink_max_fraction: 1.0,
        }
    }
}

mod buffer_rules;
pub use buffer_rules::weighted_median;
pub use tailor_core::{ConfigError, ConfigErrors};

/// Largest `prior_max_keys`.
pub const MAX_PRIOR_KEYS: usize = 10_000_000;
/// Smallest `memory_risk` (per component and round).
pub const MIN_MEMORY_RISK: f64 = 1e-9;
/// Largest `memory_risk`: a quarter of the rounds (band level 0.67).
pub const MAX_MEMORY_RISK: f64 = 0.25;
/// Largest `sibling_hold_s` (about 31 years: bounded only so that sums of
/// times stay finite).
pub const MAX_SIBLING_HOLD_S: f64 = 1e9;
/// Largest `k1` (buffer as a fraction of the request).
pub const MAX_K1: f64 = 10.0;
/// Bytes in a GiB.
const GIB_BYTES: f64 = (1u64 << 30) as f64;
/// Largest `mem_margin` (buffer as a fraction of the forecast).
pub const MAX_MEM_MARGIN: f64 = 10.0;
/// Largest `core_k1_factor`.
pub const MAX_CORE_K1_FACTOR: f64 = 100.0;
/// Largest `k2` (band level in sigmas).
pub const MAX_K2: f64 = 100.0;
/// Longest grace period: one year.
pub const MAX_GRACE_PERIOD_S: f64 = 365.0 * 86_400.0;
/// Largest `max_growth`.
pub const MAX_GROWTH: f64 = 1_000.0;
/// Largest CPU floor (cores).
pub const MAX_MIN_CPU_CORES: f64 = 1.0e6;
/// Largest memory floor (bytes): 1 PiB.
pub const MAX_MIN_MEM_BYTES: f64 = (1u64 << 50) as f64;

impl ShaperConfig {
    /// One constant buffer for every component, as in the thesis: K1 = 0.3,
    /// K2 = 3, no application-size rule, no sibling hold or jump; every other
    /// setting at its default. These were the shipped defaults until the
    /// frontiers showed the size rules' gain (docs/results.md, "Defaults"); the
    /// unit tests whose arithmetic assumes one K1 for all pin it.
    pub fn uniform() -> Self {
        Self {
            k1: 0.3,
            k2: 3.0,
            small_app_components: 0,
            small_app_k1: 0.3,
            core_k1_factor: 1.0,
            elastic_k1_factor: 1.0,
            young_core_k1: 0.0,
            app_mem_ref_rel: 0.0,
            app_k1_slope: 0.25,
            sibling_hold_s: 0.0,
            sibling_jump: false,
            ..Self::default()
        }
    }

    /// Checks every setting and reports every problem at once (keys as
    /// written in the `[shaper]` table). Ranges:
    ///
    /// | key | accepted |
    /// |---|---|
    /// | `k1` | [0, 10] |
    /// | `k2` | [0, 100] |
    /// | `mem_margin` | [0, 10] |
    /// | `small_app_components` | [0, 1000000] |
    /// | `small_app_k1` | [0, 10] |
    /// | `core_k1_factor` | [1, 100] |
    /// | `elastic_k1_factor` | [0, 1] |
    /// | `young_core_k1` | [0, 10] |
    /// | `young_core_s` | [0, 1e9] |
    /// | `app_mem_ref_gib` | [0, 1e9] |
    /// | `app_k1_slope` | [0, 10] |
    /// | `app_mem_ref_rel` | [0, 1e6] (`app_mem_ref_gib`, when set, replaces it) |
    /// | `grace_period_s` | [0, 31536000] (one year) |
    /// | `failure_limit` | [1, 1000000] |
    /// | `max_growth` | [1, 1000] |
    /// | `min_relative_change` | [0, 1) |
    /// | `min_cpu_cores` | [0, 1e6] |
    /// | `min_mem_bytes` | [0, 2^50] (1 PiB) |
    /// | `memory_risk` | [1e-9, 0.25] |
    /// | `prior_half_life_s` | [1, 1e9] |
    /// | `prior_max_keys` | [1, 10000000] |
    /// | `mem_hold_s` | [0, 1e9] |
    /// | `small_app_mem_hold_s` | [0, 1e9] |
    /// | `sibling_hold_s` | [0, 1e9] |
    /// | `mem_shrink_max_fraction` | (0, 1] |
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut e = ConfigErrors::new();
        e.range("k1", self.k1, 0.0, MAX_K1);
        e.range("k2", self.k2, 0.0, MAX_K2);
        e.range("mem_margin", self.mem_margin, 0.0, MAX_MEM_MARGIN);
        e.range(
            "small_app_components",
            self.small_app_components,
            0,
            1_000_000,
        );
        e.range("small_app_k1", self.small_app_k1, 0.0, MAX_K1);
        e.range(
            "core_k1_factor",
            self.core_k1_factor,
            1.0,
            MAX_CORE_K1_FACTOR,
        );
        e.range("elastic_k1_factor", self.elastic_k1_factor, 0.0, 1.0);
        e.range("young_core_k1", self.young_core_k1, 0.0, MAX_K1);
        e.range("young_core_s", self.young_core_s, 0.0, 1e9);
        e.range("app_mem_ref_gib", self.app_mem_ref_gib, 0.0, 1e9);
        e.range("app_k1_slope", self.app_k1_slope, 0.0, MAX_K1);
        e.range("app_mem_ref_rel", self.app_mem_ref_rel, 0.0, 1e6);
        e.range(
            "grace_period_s",
            self.grace_period_s,
            0.0,
            MAX_GRACE_PERIOD_S,
        );
        e.check("failure_limit", self.failure_limit >= 1, || {
            "must be >= 1 (0 would leave every application unshaped)".to_string()
        });
        e.range("failure_limit", self.failure_limit, 0, 1_000_000);
        e.range("max_growth", self.max_growth, 1.0, MAX_GROWTH);
        e.check(
            "min_relative_change",
            (0.0..1.0).contains(&self.min_relative_change),
            || {
                format!(
                    "must be in [0, 1), got {}",
                    tailor_core::short_num(self.min_relative_change)
                )
            },
        );
        e.range("min_cpu_cores", self.min_cpu_cores, 0.0, MAX_MIN_CPU_CORES);
        e.range("min_mem_bytes", self.min_mem_bytes, 0.0, MAX_MIN_MEM_BYTES);
        e.range_opt(
            "horizon_samples",
            self.horizon_samples,
            1,
            MAX_HORIZON_SAMPLES,
        );
        e.range(
            "min_history_samples",
            self.min_history_samples,
            1,
            MAX_HORIZON_SAMPLES,
        );
        e.range("oom_bump_bytes", self.oom_bump_bytes, 0.0, 1e15);
        e.range("oom_bump_factor", self.oom_bump_factor, 1.0, 100.0);
        e.range("oom_memory_s", self.oom_memory_s, 0.0, 1e9);
        e.range_opt(
            "memory_risk",
            self.memory_risk,
            MIN_MEMORY_RISK,
            MAX_MEMORY_RISK,
        );
        e.range("prior_half_life_s", self.prior_half_life_s, 1.0, 1e9);
        e.range("prior_max_keys", self.prior_max_keys, 1, MAX_PRIOR_KEYS);
        e.range("mem_hold_s", self.mem_hold_s, 0.0, 1e9);
        e.range("small_app_mem_hold_s", self.small_app_mem_hold_s, 0.0, 1e9);
        e.range(
            "sibling_hold_s",
            self.sibling_hold_s,
            0.0,
            MAX_SIBLING_HOLD_S,
        );
        e.check(
            "mem_shrink_max_fraction",
            self.mem_shrink_max_fraction > 0.0 && self.mem_shrink_max_fraction <= 1.0,
            || {
                format!(
                    "must be in (0, 1], got {}",
                    tailor_core::short_num(self.mem_shrink_max_fraction)
                )
            },
        );
        e.into_result()
    }

    /// The prior book's settings.
    pub fn prior_settings(&self) -> crate::prior::PriorSettings {
        crate::prior::PriorSettings {
            half_life_s: self.prior_half_life_s,
            max_keys: self.prior_max_keys,
        }
    }
}

#[cfg(test)]
mod tests;

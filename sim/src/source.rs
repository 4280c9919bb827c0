//! Workload sources named on the command line:
//! `bundled`, `google2011:DIR`, `google2019:DIR`, `alibaba-gpu:PATH`,
//! `synthetic:SEED[:APPS]`, `recorded:PATH`.

use std::path::PathBuf;

use datasets::pool::PoolPhase;
use datasets::workload::{Resources, Workload};

use crate::SimError;
use tailor_core::ConfigErrors;

/// Where a workload comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadSource {
    /// `datasets::bundled_workload()`: the Google 2011 slice embedded in the binary.
    Bundled,
    /// `datasets::google2011::build_workload(DIR)` with an optional cap on
    /// the number of applications.
    Google2011 {
        dir: PathBuf,
        max_apps: Option<usize>,
    },
    /// `datasets::google2019::build_workload(DIR)`: every Google 2019
    /// instance_usage task CSV under DIR (e.g.
    /// `../shared/data/google-2019/instance_usage`), jobs as applications.
    Google2019 { dir: PathBuf },
    /// `datasets::alibaba_gpu::build_workload(PATH)`: an Alibaba GPU-cluster
    /// instance or pod list (gpu-v2025 `disaggregated_DLRM_trace.csv`,
    /// gpu-v2023 `openb_pod_list_*.csv`), or a directory of them; usage
    /// drawn from the pool.
    AlibabaGpu { path: PathBuf },
    /// `datasets::bitbrains::build_workload(PATH)`: a Bitbrains GWA-T-12
    /// per-VM file or a directory of them (e.g.
    /// `../shared/data/bitbrains-rnd/2013-7`), one application per VM, with
    /// the trace's own usage.
    Bitbrains { path: PathBuf },
    /// The thesis-style synthetic generator.
    Synthetic { seed: u64, apps: Option<usize> },
    /// An agent recording (`[record]` in agent.toml).
    Recorded { path: PathBuf },
}

/// A workload named `PREFIX` + a path: its prefix, the error when the
/// path is missing, and how it is built from the path.
type PathKind = (&'static str, &'static str, fn(PathBuf) -> WorkloadSource);

const PATH_KINDS: [PathKind; 5] = [
    ("google2011:", "missing directory", |dir| {
        WorkloadSource::Google2011 {
            dir,
            max_apps: None,
        }
    }),
    ("google2019:", "missing directory", |dir| {
        WorkloadSource::Google2019 { dir }
    }),
    ("alibaba-gpu:", "missing path", |path| {
        WorkloadSource::AlibabaGpu { path }
    }),
    ("bitbrains:", "missing path", |path| {
        WorkloadSource::Bitbrains { path }
    }),
    ("recorded:", "missing path", |path| {
        WorkloadSource::Recorded { path }
    }),
];

impl std::str::FromStr for WorkloadSource {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| {
            SimError::Config(ConfigErrors::single(
                "workload",
                format!(
                    "{why} in {s:?} (expected bundled, google2011:DIR, google2019:DIR, alibaba-gpu:PATH, bitbrains:PATH, synthetic:SEED[:APPS] or recorded:PATH)"
                ),
            ))
        };
        if s == "bundled" {
            return Ok(WorkloadSource::Bundled);
        }
        for (prefix, missing, make) in PATH_KINDS {
            if let Some(path) = s.strip_prefix(prefix) {
                if path.is_empty() {
                    return Err(bad(missing));
                }
                return Ok(make(PathBuf::from(path)));
            }
        }
        if let Some(rest) = s.strip_prefix("synthetic:") {
            let mut parts = rest.split(':');
            let seed = parts
                .next()
                .filter(|p| !p.is_empty())
                .ok_or_else(|| bad("missing seed"))?
                .parse::<u64>()
                .map_err(|_| bad("seed is not an unsigned integer"))?;
            let apps = match parts.next() {
                None => None,
                Some(a) => {
                    let n = a
                        .parse::<usize>()
                        .map_err(|_| bad("APPS is not an unsigned integer"))?;
                    if !(1..=datasets::synthetic::MAX_APPS).contains(&n) {
                        return Err(bad(&format!(
                            "APPS must be in [1, {}], got {n}",
                            datasets::synthetic::MAX_APPS
                        )));
                    }
                    Some(n)
                }
            };
            if parts.next().is_some() {
                return Err(bad("too many ':' parts"));
            }
            return Ok(WorkloadSource::Synthetic { seed, apps });
        }
        Err(bad("unknown workload"))
    }
}

impl WorkloadSource {
    /// Whether building the workload draws random numbers (from a seed):
    /// the bundled slice, Google 2011, Alibaba GPU (usage from the pool)
    /// and synthetic workloads do; Google 2019, Bitbrains and recorded ones
    /// do not.
    pub fn is_seeded(&self) -> bool {
        matches!(
            self,
            WorkloadSource::Bundled
                | WorkloadSource::Google2011 { .. }
                | WorkloadSource::AlibabaGpu { .. }
                | WorkloadSource::Synthetic { .. }
        )
    }

    /// The seed [`load`](Self::load) uses: `SEED` of `synthetic:SEED`,
    /// else `config_seed` (the simulator config's `seed`).
    pub fn base_seed(&self, config_seed: u64) -> u64 {
        match self {
            WorkloadSource::Synthetic { seed, .. } => *seed,
            _ => config_seed,
        }
    }

    /// Builds the workload with every random choice drawn from `seed`
    /// (see [`crate::seeds`]) and the tasks of a pooled job placed on its
    /// shape by `phase` (bundled, Google 2011 and Alibaba GPU workloads);
    /// identical to [`load`](Self::load) for workloads that are not
    /// [`is_seeded`](Self::is_seeded).
    pub fn load_seeded(&self, seed: u64, phase: PoolPhase) -> Result<Workload, SimError> {
        let mut wl = match self {
            WorkloadSource::Bundled => {
                let cfg = datasets::google2011::Google2011Config {
                    seed,
                    pool_phase: phase,
                    ..datasets::bundled::bundled_config()
                };
                datasets::bundled::bundled_workload_with(&cfg)?.0
            }
            WorkloadSource::Google2011 { dir, max_apps } => {
                let cfg = datasets::google2011::Google2011Config {
                    max_apps: *max_apps,
                    seed,
                    pool_phase: phase,
                    ..Default::default()
                };
                datasets::google2011::build_workload(dir, &cfg)?
            }
            WorkloadSource::AlibabaGpu { path } => {
                let cfg = datasets::alibaba_gpu::AlibabaGpuConfig {
                    seed,
                    pool_phase: phase,
                    ..Default::default()
                };
                datasets::alibaba_gpu::build_workload(path, &cfg)?
            }
            WorkloadSource::Synthetic { apps, .. } => return synthetic(seed, *apps),
            WorkloadSource::Google2019 { .. }
            | WorkloadSource::Bitbrains { .. }
            | WorkloadSource::Recorded { .. } => return self.load(),
        };
        // A pooled workload names its draw (seed 0 is the default one).
        if seed != 0 {
            wl.name = format!("{}:seed={seed}", wl.name);
        }
        Ok(wl)
    }

    /// Builds the workload.
    pub fn load(&self) -> Result<Workload, SimError> {
        match self {
            WorkloadSource::Bundled => datasets::bundled_workload().map_err(SimError::from),
            WorkloadSource::Google2011 { dir, max_apps } => {
                let cfg = datasets::google2011::Google2011Config {
                    max_apps: *max_apps,
                    ..Default::default()
                };
                datasets::google2011::build_workload(dir, &cfg).map_err(SimError::from)
            }
            WorkloadSource::Google2019 { dir } => {
                let cfg = datasets::google2019::Google2019Config::default();
                datasets::google2019::build_workload(dir, &cfg).map_err(SimError::from)
            }
            WorkloadSource::AlibabaGpu { path } => {
                let cfg = datasets::alibaba_gpu::AlibabaGpuConfig::default();
                datasets::alibaba_gpu::build_workload(path, &cfg).map_err(SimError::from)
            }
            WorkloadSource::Bitbrains { path } => {
                let cfg = datasets::bitbrains::BitbrainsConfig::default();
                datasets::bitbrains::build_workload(path, &cfg).map_err(SimError::from)
            }
            WorkloadSource::Synthetic { seed, apps } => synthetic(*seed, *apps),
            WorkloadSource::Recorded { path } => {
                let rec = crate::recorded::read_recording(path)?;
                crate::recorded::recorded_workload(&rec, &path.display().to_string())
            }
        }
    }
}

/// `datasets::synthetic::generate` with its defaults (thesis scale: 250
/// hosts of 32 cores / 128 GiB, 150,000 applications) unless `apps` is given.
fn synthetic(seed: u64, apps: Option<usize>) -> Result<Workload, SimError> {
    let mut cfg = datasets::synthetic::SyntheticConfig {
        seed,
        ..Default::default()
    };
    if let Some(n) = apps {
        cfg.apps = n;
    }
    datasets::synthetic::generate(&cfg).map_err(SimError::from)
}

/// Largest `--stretch` and `--capacity-scale` factor.
pub const MAX_FACTOR: f64 = 1_000.0;

/// Refuses a `factor` outside (0, [`MAX_FACTOR`]], naming the setting `key`.
fn check_factor(key: &str, factor: f64) -> Result<(), SimError> {
    if factor > 0.0 && factor <= MAX_FACTOR {
        return Ok(());
    }
    Err(SimError::Config(ConfigErrors::single(
        key,
        format!(
            "must be in (0, {MAX_FACTOR}], got {}",
            tailor_core::short_num(factor)
        ),
    )))
}

/// Multiplies every host's capacity by `factor` (in (0, 1000]): a smaller cluster
/// for the same applications, to create contention. Applications that no
/// longer fit are rejected by the engine (and counted as rejected).
pub fn scale_capacity(wl: &mut Workload, factor: f64) -> Result<(), SimError> {
    check_factor("capacity_scale", factor)?;
    for h in &mut wl.hosts {
        h.capacity = Resources::new(h.capacity.cpu_cores * factor, h.capacity.mem_bytes * factor);
    }
    Ok(())
}

/// Keeps the first `n` applications by arrival (the workload is sorted by
/// arrival).
pub fn keep_first_apps(wl: &mut Workload, n: usize) {
    wl.apps.truncate(n);
}

/// Keeps the applications whose longest component runs at least
/// `min_work_s` seconds (long-running services: the ones a model that needs
/// tens of usage samples can forecast before they end).
pub fn keep_long_apps(wl: &mut Workload, min_work_s: f64) {
    wl.apps
        .retain(|a| a.components.iter().map(|c| c.work_s).fold(0.0, f64::max) >= min_work_s);
}

/// Slows the whole workload down `factor` times (>= 1 typically): arrival
/// times and every component's work are multiplied by it, the usage series
/// keep their sample interval (components read `factor` times more of
/// their real series). Queueing structure and offered load stay the same;
/// each component lives long enough for models that need tens of samples
/// (the GP needs `history + min_train` = 25 by default, two hours of
/// 5-minute samples, longer than almost every Google 2011 part-0 task).
pub fn stretch_time(wl: &mut Workload, factor: f64) -> Result<(), SimError> {
    check_factor("stretch", factor)?;
    for a in &mut wl.apps {
        a.arrival_s *= factor;
        for c in &mut a.components {
            c.work_s *= factor;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `KIND:PATH` of a slice shipped in `data/`.
    fn shipped(kind: &str, slice: &str) -> WorkloadSource {
        let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../data")).join(slice);
        format!("{kind}:{}", dir.display()).parse().expect("parse")
    }

    #[test]
    fn loads_the_bundled_google_2019_slice() {
        let src = shipped("google2019", "google-2019-slice");
        let wl = src.load().expect("load");
        assert!(wl.name.starts_with("google-2019:"));
        assert_eq!(wl.apps.len(), 2);
        assert!(wl
            .apps
            .iter()
            .flat_map(|a| &a.components)
            .all(|c| c.usage.mem_peak_bytes.is_some()));
        assert!(wl
            .apps
            .iter()
            .flat_map(|a| &a.components)
            .any(|c| !c.request_changes.is_empty()));
        let missing: WorkloadSource = "google2019:/nonexistent/dir".parse().expect("parse");
        let err = missing.load().expect_err("missing dir");
        assert!(err.to_string().contains("/nonexistent/dir"), "{err}");
    }

    /// The shipped Alibaba GPU slices replay end to end: every application
    /// completes, the baseline (allocation = request) fails none.
    #[test]
    fn replays_the_shipped_alibaba_gpu_slices() {
        for (sub, hosts) in [("gpu-v2025", None), ("gpu-v2023", Some(1523))] {
            let src = shipped("alibaba-gpu", &format!("alibaba-gpu-slice/{sub}"));
            assert!(src.is_seeded());
            let wl = src.load().expect("load");
            assert_eq!(wl.name, format!("alibaba-gpu:{sub}"));
            if let Some(n) = hosts {
                assert_eq!(wl.hosts.len(), n, "one host per node");
            }
            let seeded = src.load_seeded(3, PoolPhase::Task).expect("seeded");
            assert_eq!(seeded.name, format!("alibaba-gpu:{sub}:seed=3"));
            assert_ne!(seeded.apps, wl.apps, "another seed, other usage");
            assert_eq!(src.load_seeded(0, PoolPhase::Job).expect("seed 0"), wl);
            let cfg = crate::SimConfig {
                parallel_forecasts: false,
                ..crate::SimConfig::default()
            };
            let (run, base) = crate::runner::replay(&wl, &cfg, true, None).expect("replay");
            let base = base.expect("baseline run");
            let n = wl.apps.len();
            assert_eq!(base.summary.apps, n, "{sub}");
            assert_eq!(base.summary.apps_completed, n, "{sub}: {:?}", base.summary);
            assert_eq!(base.summary.failed_app_fraction, 0.0, "{sub}");
            assert_eq!(base.summary.oom_kills, 0, "{sub}");
            assert_eq!(run.summary.apps_completed, n, "{sub}: {:?}", run.summary);
            assert!(run.summary.mem_alloc_gib_h <= base.summary.mem_alloc_gib_h);
        }
        let missing: WorkloadSource = "alibaba-gpu:/nonexistent/x.csv".parse().expect("parse");
        let err = missing.load().expect_err("missing file");
        assert!(err.to_string().contains("/nonexistent/x.csv"), "{err}");
    }

    /// The shipped Bitbrains slice replays end to end: every VM completes,
    /// the baseline (allocation = request) fails none.
    #[test]
    fn replays_the_shipped_bitbrains_slice() {
        let src = shipped("bitbrains", "bitbrains-slice");
        assert!(!src.is_seeded());
        let wl = src.load().expect("load");
        assert_eq!(wl.name, "bitbrains:bitbrains-slice");
        assert_eq!(src.load_seeded(3, PoolPhase::Task).expect("seeded"), wl);
        let cfg = crate::SimConfig {
            parallel_forecasts: false,
            ..crate::SimConfig::default()
        };
        let (run, base) = crate::runner::replay(&wl, &cfg, true, None).expect("replay");
        let base = base.expect("baseline run");
        let n = wl.apps.len();
        assert_eq!(base.summary.apps_completed, n, "{:?}", base.summary);
        assert_eq!(base.summary.oom_kills, 0);
        assert_eq!(run.summary.apps_completed, n, "{:?}", run.summary);
        assert!(run.summary.mem_alloc_gib_h < base.summary.mem_alloc_gib_h);
        let missing: WorkloadSource = "bitbrains:/nonexistent/dir".parse().expect("parse");
        let err = missing.load().expect_err("missing dir");
        assert!(err.to_string().contains("/nonexistent/dir"), "{err}");
    }

    #[test]
    fn parses() {
        assert_eq!(
            "bundled".parse::<WorkloadSource>().ok(),
            Some(WorkloadSource::Bundled)
        );
        assert_eq!(
            "google2011:/x/y".parse::<WorkloadSource>().ok(),
            Some(WorkloadSource::Google2011 {
                dir: "/x/y".into(),
                max_apps: None
            })
        );
        assert_eq!(
            "google2019:/d".parse::<WorkloadSource>().ok(),
            Some(WorkloadSource::Google2019 { dir: "/d".into() })
        );
        assert_eq!(
            "alibaba-gpu:../d/x.csv".parse::<WorkloadSource>().ok(),
            Some(WorkloadSource::AlibabaGpu {
                path: "../d/x.csv".into()
            })
        );
        assert_eq!(
            "bitbrains:/b".parse::<WorkloadSource>().ok(),
            Some(WorkloadSource::Bitbrains { path: "/b".into() })
        );
        assert_eq!(
            "synthetic:7:100".parse::<WorkloadSource>().ok(),
            Some(WorkloadSource::Synthetic {
                seed: 7,
                apps: Some(100)
            })
        );
        assert_eq!(
            "synthetic:7".parse::<WorkloadSource>().ok(),
            Some(WorkloadSource::Synthetic {
                seed: 7,
                apps: None
            })
        );
        for bad in [
            "",
            "google2011:",
            "google2019:",
            "alibaba-gpu:",
            "alibaba_gpu:x",
            "bitbrains:",
            "synthetic:",
            "synthetic:x",
            "synthetic:1:2:3",
            "synthetic:1:99999999999",
            "synthetic:1:0",
            "foo",
        ] {
            assert!(bad.parse::<WorkloadSource>().is_err(), "{bad}");
        }
    }
}

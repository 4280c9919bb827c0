//! The workloads of a run over seeds (`--seeds N`), built one at a time:
//! each seed's workload is dropped before the next one is built, so memory
//! stays that of one workload whatever N (QA: `--seeds 10` of a large
//! synthetic workload built all ten first and passed 3.8 GB).

use datasets::workload::Workload;

use crate::SimError;

/// Builds the workload of one seed.
pub type LoadSeed<'a> = Box<dyn FnMut(u64) -> Result<Workload, SimError> + 'a>;

/// The first seed's workload, built ahead (so that bad input fails before
/// any output is made, and callers can look at it), and how to build the
/// others when their turn comes.
pub struct SeededWorkloads<'a> {
    first: Workload,
    seeds: Vec<u64>,
    load: LoadSeed<'a>,
}

impl<'a> SeededWorkloads<'a> {
    /// `first` is the workload of `seeds[0]`; `load` builds the others.
    /// An error when `seeds` is empty.
    pub fn new(first: Workload, seeds: Vec<u64>, load: LoadSeed<'a>) -> Result<Self, SimError> {
        if seeds.is_empty() {
            return Err(SimError::Workload("no seed to run".to_string()));
        }
        Ok(SeededWorkloads { first, seeds, load })
    }

    /// One workload, run once (its seed only labels the run).
    pub fn one(wl: Workload, seed: u64) -> Self {
        SeededWorkloads {
            first: wl,
            seeds: vec![seed],
            load: Box::new(|s| {
                Err(SimError::Workload(format!(
                    "seed {s}: only one workload was given"
                )))
            }),
        }
    }

    /// The first seed's workload.
    pub fn first(&self) -> &Workload {
        &self.first
    }

    /// The seeds, in the order they run.
    pub fn seeds(&self) -> &[u64] {
        &self.seeds
    }

    /// Calls `f(seed, workload)` for every seed in order, building each
    /// workload when its turn comes and dropping it after `f` returns.
    /// Stops at the first error (`f`'s, or a build's).
    pub fn for_each<E: From<SimError>>(
        self,
        mut f: impl FnMut(u64, &Workload) -> Result<(), E>,
    ) -> Result<(), E> {
        let SeededWorkloads {
            first,
            seeds,
            mut load,
        } = self;
        f(seeds[0], &first)?;
        drop(first);
        for &seed in &seeds[1..] {
            let wl = load(seed)?;
            f(seed, &wl)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn named(name: &str) -> Workload {
        Workload {
            name: name.to_string(),
            hosts: Vec::new(),
            apps: Vec::new(),
        }
    }

    /// Each workload is built only when its turn comes, after the previous
    /// one's turn ended, and in the order of the seeds.
    #[test]
    fn workloads_are_built_one_at_a_time_in_seed_order() {
        let log = RefCell::new(Vec::new());
        let seeded = SeededWorkloads::new(
            named("s7"),
            vec![7, 8, 9],
            Box::new(|s| {
                log.borrow_mut().push(format!("build {s}"));
                Ok(named(&format!("s{s}")))
            }),
        )
        .expect("seeds");
        seeded
            .for_each(|s, wl| -> Result<(), SimError> {
                assert_eq!(wl.name, format!("s{s}"));
                log.borrow_mut().push(format!("run {s}"));
                Ok(())
            })
            .expect("runs");
        assert_eq!(
            log.into_inner(),
            ["run 7", "build 8", "run 8", "build 9", "run 9"]
        );
    }

    #[test]
    fn a_failed_build_stops_the_runs() {
        let seeded = SeededWorkloads::new(
            named("s0"),
            vec![0, 1, 2],
            Box::new(|s| Err(SimError::Workload(format!("seed {s} broke")))),
        )
        .expect("seeds");
        let mut ran = Vec::new();
        let err = seeded
            .for_each(|s, _| -> Result<(), SimError> {
                ran.push(s);
                Ok(())
            })
            .expect_err("seed 1 fails");
        assert_eq!(ran, [0]);
        assert!(err.to_string().contains("seed 1 broke"), "{err}");
        assert!(SeededWorkloads::new(named("x"), vec![], Box::new(|_| unreachable!())).is_err());
    }
}

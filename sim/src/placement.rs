//! Host selection for the application scheduler.
//!
//! A segment tree over hosts keeps, per subtree, the largest free CPU and the
//! largest free memory (free = capacity - sum of allocations: the scheduler
//! is reservation-centric and admits by allocation, never by usage). Both
//! placement rules answer in O(log H) on typical clusters:
//!
//! * [`Placement::FirstFit`] (default): the lowest-index host where the
//!   component fits in both resources.
//! * [`Placement::WorstFit`]: the host with the most free memory among those
//!   where the component fits (spreads load; ties go to the lowest index).

use serde::{Deserialize, Serialize};
use tailor_core::Resources;

/// Which host a component goes to when several fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Lowest-index host that fits (packs hosts, leaves big holes elsewhere).
    #[default]
    FirstFit,
    /// Host with the most free memory that fits (spreads load).
    WorstFit,
}

/// Relative tolerance on fit checks, absorbs float drift of running sums.
const FIT_TOL: f64 = 1e-9;

/// True when `need` fits in `free` (with a tiny tolerance for float drift).
pub fn fits(need: &Resources, free_cpu: f64, free_mem: f64) -> bool {
    need.cpu_cores <= free_cpu + FIT_TOL * need.cpu_cores.abs().max(1.0)
        && need.mem_bytes <= free_mem + FIT_TOL * need.mem_bytes.abs().max(1.0)
}

/// Max-free segment tree over hosts.
#[derive(Clone, Debug)]
pub struct FreeTree {
    n: usize,
    size: usize,
    cpu: Vec<f64>,
    mem: Vec<f64>,
}

impl FreeTree {
    /// A tree over `n` hosts, all with zero free resources.
    pub fn new(n: usize) -> Self {
        let size = n.max(1).next_power_of_two();
        Self {
            n,
            size,
            cpu: vec![f64::NEG_INFINITY; 2 * size],
            mem: vec![f64::NEG_INFINITY; 2 * size],
        }
    }

    /// Number of hosts.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when the tree has no host.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Sets host `i`'s free resources.
    pub fn set(&mut self, i: usize, free: Resources) {
        if i >= self.n {
            return;
        }
        let mut p = self.size + i;
        self.cpu[p] = free.cpu_cores;
        self.mem[p] = free.mem_bytes;
        while p > 1 {
            p /= 2;
            self.cpu[p] = self.cpu[2 * p].max(self.cpu[2 * p + 1]);
            self.mem[p] = self.mem[2 * p].max(self.mem[2 * p + 1]);
        }
    }

    /// Largest free CPU and largest free memory over all hosts (maybe on
    /// different hosts): a quick necessary condition for any fit.
    pub fn max_free(&self) -> Resources {
        Resources::new(self.cpu[1], self.mem[1])
    }

    /// Host chosen by `rule` for a component needing `need`, if any fits.
    pub fn find(&self, need: &Resources, rule: Placement) -> Option<usize> {
        match rule {
            Placement::FirstFit => self.first_fit(1, need),
            Placement::WorstFit => {
                let mut best: Option<(usize, f64)> = None;
                self.worst_fit(1, need, &mut best);
                best.map(|(i, _)| i)
            }
        }
    }

    fn first_fit(&self, node: usize, need: &Resources) -> Option<usize> {
        if !fits(need, self.cpu[node], self.mem[node]) {
            return None;
        }
        if node >= self.size {
            let i = node - self.size;
            return (i < self.n).then_some(i);
        }
        self.first_fit(2 * node, need)
            .or_else(|| self.first_fit(2 * node + 1, need))
    }

    fn worst_fit(&self, node: usize, need: &Resources, best: &mut Option<(usize, f64)>) {
        if !fits(need, self.cpu[node], self.mem[node]) {
            return;
        }
        if let Some((_, m)) = best {
            // Nothing in this subtree can beat the best found so far.
            if self.mem[node] <= *m {
                return;
            }
        }
        if node >= self.size {
            let i = node - self.size;
            if i < self.n {
                *best = Some((i, self.mem[node]));
            }
            return;
        }
        // Visit the child with more free memory first; left first on ties
        // (deterministic, lowest index wins ties).
        let (a, b) = if self.mem[2 * node + 1] > self.mem[2 * node] {
            (2 * node + 1, 2 * node)
        } else {
            (2 * node, 2 * node + 1)
        };
        self.worst_fit(a, need, best);
        self.worst_fit(b, need, best);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(free: &[(f64, f64)], need: &Resources, rule: Placement) -> Option<usize> {
        let ok = free
            .iter()
            .enumerate()
            .filter(|(_, f)| fits(need, f.0, f.1));
        match rule {
            Placement::FirstFit => ok.map(|(i, _)| i).next(),
            Placement::WorstFit => {
                let mut best: Option<(usize, f64)> = None;
                for (i, f) in ok {
                    if best.map_or(true, |(_, m)| f.1 > m) {
                        best = Some((i, f.1));
                    }
                }
                best.map(|(i, _)| i)
            }
        }
    }

    #[test]
    fn first_fit_picks_lowest_index() {
        let mut t = FreeTree::new(3);
        t.set(0, Resources::new(1.0, 1.0));
        t.set(1, Resources::new(4.0, 4.0));
        t.set(2, Resources::new(8.0, 8.0));
        assert_eq!(
            t.find(&Resources::new(2.0, 2.0), Placement::FirstFit),
            Some(1)
        );
        assert_eq!(
            t.find(&Resources::new(2.0, 2.0), Placement::WorstFit),
            Some(2)
        );
        assert_eq!(t.find(&Resources::new(9.0, 1.0), Placement::FirstFit), None);
        // cpu fits on host 2, mem only on host 0: no single host fits.
        t.set(0, Resources::new(1.0, 10.0));
        assert_eq!(t.find(&Resources::new(5.0, 9.0), Placement::FirstFit), None);
    }

    proptest! {
        #[test]
        fn matches_brute_force(
            free in proptest::collection::vec((0.0f64..10.0, 0.0f64..10.0), 1..40),
            need in (0.0f64..10.0, 0.0f64..10.0),
        ) {
            let mut t = FreeTree::new(free.len());
            for (i, f) in free.iter().enumerate() {
                t.set(i, Resources::new(f.0, f.1));
            }
            let need = Resources::new(need.0, need.1);
            for rule in [Placement::FirstFit, Placement::WorstFit] {
                let got = t.find(&need, rule);
                let want = brute(&free, &need, rule);
                match (got, want) {
                    (Some(g), Some(w)) if rule == Placement::WorstFit => {
                        prop_assert!((free[g].1 - free[w].1).abs() < 1e-12);
                    }
                    (g, w) => prop_assert_eq!(g, w),
                }
            }
        }
    }
}

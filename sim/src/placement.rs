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

/// Direction factors of the pruning keys (see [`FreeTree`]).
const DIRS: [f64; 5] = [1.0 / 16.0, 0.25, 1.0, 4.0, 16.0];

/// Max-free segment tree over hosts.
///
/// Besides the largest free CPU and memory per subtree (maybe on different
/// hosts), every node keeps, for a few fixed directions `f`, the largest
/// `min(f * cpu_free / cpu_scale, mem_free / mem_scale)` of one host. A host
/// that fits a request `(c, m)` has that key `>= min(f * c / cpu_scale, m /
/// mem_scale)`, so a subtree whose key is below it holds no fitting host and
/// is skipped. This is exact (the same host is found) and stops the search
/// from wandering into subtrees whose free CPU and free memory sit on
/// different hosts, which a full cluster makes common.
#[derive(Clone, Debug)]
pub struct FreeTree {
    n: usize,
    size: usize,
    cpu: Vec<f64>,
    mem: Vec<f64>,
    keys: Vec<[f64; DIRS.len()]>,
    inv_scale: (f64, f64),
}

impl FreeTree {
    /// A tree over `n` hosts, all with zero free resources; keys in units of
    /// one core and one byte.
    pub fn new(n: usize) -> Self {
        Self::with_scale(n, Resources::new(1.0, 1.0))
    }

    /// A tree over `n` hosts whose pruning keys are in units of `scale`
    /// (e.g. the largest host's capacity; any positive scale is exact).
    pub fn with_scale(n: usize, scale: Resources) -> Self {
        let inv = |x: f64| {
            if x.is_finite() && x > 0.0 {
                1.0 / x
            } else {
                1.0
            }
        };
        let size = n.max(1).next_power_of_two();
        Self {
            n,
            size,
            cpu: vec![f64::NEG_INFINITY; 2 * size],
            mem: vec![f64::NEG_INFINITY; 2 * size],
            keys: vec![[f64::NEG_INFINITY; DIRS.len()]; 2 * size],
            inv_scale: (inv(scale.cpu_cores), inv(scale.mem_bytes)),
        }
    }

    /// The pruning keys of free resources `(cpu, mem)`.
    fn keys_of(&self, cpu: f64, mem: f64) -> [f64; DIRS.len()] {
        let (c, m) = (cpu * self.inv_scale.0, mem * self.inv_scale.1);
        DIRS.map(|f| (f * c).min(m))
    }

    /// The smallest keys a host fitting `need` can have (fit tolerance
    /// included).
    fn need_keys(&self, need: &Resources) -> [f64; DIRS.len()] {
        let c = need.cpu_cores - FIT_TOL * need.cpu_cores.abs().max(1.0);
        let m = need.mem_bytes - FIT_TOL * need.mem_bytes.abs().max(1.0);
        self.keys_of(c, m)
    }

    /// True when node `node` may hold a host fitting `need` (`nk` = its
    /// [`FreeTree::need_keys`]).
    fn may_fit(&self, node: usize, need: &Resources, nk: &[f64; DIRS.len()]) -> bool {
        fits(need, self.cpu[node], self.mem[node])
            && self.keys[node].iter().zip(nk).all(|(k, n)| k >= n)
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
        self.keys[p] = self.keys_of(free.cpu_cores, free.mem_bytes);
        while p > 1 {
            p /= 2;
            let (l, r) = (2 * p, 2 * p + 1);
            self.cpu[p] = self.cpu[l].max(self.cpu[r]);
            self.mem[p] = self.mem[l].max(self.mem[r]);
            let (kl, kr) = (self.keys[l], self.keys[r]);
            for (d, k) in self.keys[p].iter_mut().enumerate() {
                *k = kl[d].max(kr[d]);
            }
        }
    }

    /// Largest free CPU and largest free memory over all hosts (maybe on
    /// different hosts): a quick necessary condition for any fit.
    pub fn max_free(&self) -> Resources {
        Resources::new(self.cpu[1], self.mem[1])
    }

    /// Host chosen by `rule` for a component needing `need`, if any fits.
    pub fn find(&self, need: &Resources, rule: Placement) -> Option<usize> {
        let nk = self.need_keys(need);
        match rule {
            Placement::FirstFit => self.first_fit(1, need, &nk),
            Placement::WorstFit => {
                let mut best: Option<(usize, f64)> = None;
                self.worst_fit(1, need, &nk, &mut best);
                best.map(|(i, _)| i)
            }
        }
    }

    /// True when `need` fits in host `i`'s free resources.
    pub fn fits_on(&self, i: usize, need: &Resources) -> bool {
        i < self.n && fits(need, self.cpu[self.size + i], self.mem[self.size + i])
    }

    fn first_fit(&self, node: usize, need: &Resources, nk: &[f64; DIRS.len()]) -> Option<usize> {
        if !self.may_fit(node, need, nk) {
            return None;
        }
        if node >= self.size {
            let i = node - self.size;
            return (i < self.n).then_some(i);
        }
        self.first_fit(2 * node, need, nk)
            .or_else(|| self.first_fit(2 * node + 1, need, nk))
    }

    fn worst_fit(
        &self,
        node: usize,
        need: &Resources,
        nk: &[f64; DIRS.len()],
        best: &mut Option<(usize, f64)>,
    ) {
        if !self.may_fit(node, need, nk) {
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
        self.worst_fit(a, need, nk, best);
        self.worst_fit(b, need, nk, best);
    }
}

/// Requests that recently found no host, so that the scheduler does not
/// search the tree again for them (or for anything at least as large) while
/// the cluster stays full. A 2-D first-fit search can visit most of the
/// tree when the largest free CPU and the largest free memory sit on
/// different hosts, and a full cluster with thousands of pending elastic
/// components asks the same question after every event.
///
/// Exact: a request `r` is reported unfit only when it dominates a recorded
/// failure `f` (`r >= f` in both resources, so `r` fails wherever `f` did:
/// [`fits`] is monotone in the request) and fits on none of the hosts whose
/// free resources grew since the cache was last emptied (every other host
/// has at most the room it had when `f` failed). The cache empties itself
/// when more than [`UnfitCache::MAX_GAINED`] hosts gained room.
#[derive(Clone, Debug, Default)]
pub struct UnfitCache {
    failed: Vec<Resources>,
    next: usize,
    gained: Vec<u32>,
}

impl UnfitCache {
    /// Failures remembered (oldest replaced first).
    pub const MAX_FAILED: usize = 16;
    /// Hosts that may gain room before the cache is emptied.
    pub const MAX_GAINED: usize = 8;

    /// True when `need` certainly fits on no host of `tree`.
    pub fn known_unfit(&self, need: &Resources, tree: &FreeTree) -> bool {
        self.failed
            .iter()
            .any(|f| need.cpu_cores >= f.cpu_cores && need.mem_bytes >= f.mem_bytes)
            && !self.gained.iter().any(|&h| tree.fits_on(h as usize, need))
    }

    /// Records that `need` found no host (with the tree as it is now).
    pub fn record(&mut self, need: Resources) {
        if self.failed.len() < Self::MAX_FAILED {
            self.failed.push(need);
        } else {
            self.failed[self.next] = need;
            self.next = (self.next + 1) % Self::MAX_FAILED;
        }
    }

    /// Host `h`'s free resources grew.
    pub fn gained(&mut self, h: usize) {
        if self.failed.is_empty() || self.gained.contains(&(h as u32)) {
            return;
        }
        if self.gained.len() >= Self::MAX_GAINED {
            self.clear();
        } else {
            self.gained.push(h as u32);
        }
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.failed.clear();
        self.gained.clear();
        self.next = 0;
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
                    if best.is_none_or(|(_, m)| f.1 > m) {
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

    #[test]
    fn crossed_free_resources_are_pruned() {
        // Free CPU and free memory on alternating hosts: no host fits a
        // request needing both, and the answer is still exact.
        let n = 1000;
        let mut t = FreeTree::with_scale(n, Resources::new(32.0, 128.0));
        for i in 0..n {
            let f = if i % 2 == 0 {
                Resources::new(30.0, 1.0)
            } else {
                Resources::new(1.0, 120.0)
            };
            t.set(i, f);
        }
        let need = Resources::new(2.0, 2.0);
        assert_eq!(t.find(&need, Placement::FirstFit), None);
        t.set(777, Resources::new(2.0, 2.0));
        assert_eq!(t.find(&need, Placement::FirstFit), Some(777));
        assert_eq!(t.find(&need, Placement::WorstFit), Some(777));
    }

    proptest! {
        /// The unfit cache never hides a host that fits: after any sequence
        /// of free-resource changes (reported through `gained` when they
        /// grow) and recorded failures, `known_unfit` implies no host fits.
        #[test]
        fn unfit_cache_is_exact(
            init in proptest::collection::vec((0.0f64..10.0, 0.0f64..10.0), 1..20),
            ops in proptest::collection::vec(
                (0usize..20, (0.0f64..10.0, 0.0f64..10.0), (0.0f64..10.0, 0.0f64..10.0)),
                1..60,
            ),
        ) {
            let n = init.len();
            let mut t = FreeTree::with_scale(n, Resources::new(10.0, 10.0));
            let mut free: Vec<Resources> =
                init.iter().map(|f| Resources::new(f.0, f.1)).collect();
            for (i, f) in free.iter().enumerate() {
                t.set(i, *f);
            }
            let mut cache = UnfitCache::default();
            for (h, f, need) in ops {
                let h = h % n;
                let f = Resources::new(f.0, f.1);
                if f.cpu_cores > free[h].cpu_cores || f.mem_bytes > free[h].mem_bytes {
                    cache.gained(h);
                }
                free[h] = f;
                t.set(h, f);
                let need = Resources::new(need.0, need.1);
                let found = t.find(&need, Placement::FirstFit);
                if cache.known_unfit(&need, &t) {
                    prop_assert_eq!(found, None);
                }
                if found.is_none() {
                    cache.record(need);
                }
            }
        }
    }

    proptest! {
        #[test]
        fn matches_brute_force(
            free in proptest::collection::vec((0.0f64..10.0, 0.0f64..10.0), 1..40),
            need in (0.0f64..10.0, 0.0f64..10.0),
            scale in (0.01f64..100.0, 0.01f64..100.0),
        ) {
            let mut t = FreeTree::with_scale(free.len(), Resources::new(scale.0, scale.1));
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

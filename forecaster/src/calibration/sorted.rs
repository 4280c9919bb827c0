//! Sorted views of the calibration's error window: the window kept sorted
//! as errors come and go, its two sides, their quantiles and the median
//! deviation from its median.

use std::collections::VecDeque;

/// Where the `p` quantile of `n` sorted values lies: the indices `i <= j`
/// of the two values it interpolates and the weight `f` of the second.
fn position(n: usize, p: f64) -> (usize, usize, f64) {
    let pos = p.clamp(0.0, 1.0) * (n - 1) as f64;
    let i = pos.floor() as usize;
    (i, (i + 1).min(n - 1), pos - i as f64)
}

/// Empirical quantile of sorted values (linear interpolation).
pub(super) fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    Side::Up(sorted).quantile(p)
}

/// One side of the ascending errors `z`, read in place: the errors
/// themselves (the upper tail's side) or their negations `-z` in
/// ascending order (the lower tail's), so that both tails are fitted by
/// one code path without a negated copy. Negation is exact, so `Down`'s
/// quantiles are the same bits as those of a negated, reversed copy.
#[derive(Clone, Copy, Debug)]
pub(super) enum Side<'a> {
    /// `z` ascending.
    Up(&'a [f64]),
    /// `-z` ascending, read from `z` ascending.
    Down(&'a [f64]),
}

impl Side<'_> {
    pub(super) fn len(&self) -> usize {
        match self {
            Side::Up(v) | Side::Down(v) => v.len(),
        }
    }

    /// The `k`-th smallest value of this side.
    #[inline]
    pub(super) fn at(&self, k: usize) -> f64 {
        match self {
            Side::Up(v) => v[k],
            Side::Down(v) => -v[v.len() - 1 - k],
        }
    }

    /// Empirical quantile (linear interpolation; 0 when empty).
    pub(super) fn quantile(&self, p: f64) -> f64 {
        let n = self.len();
        if n == 0 {
            return 0.0;
        }
        let (i, j, f) = position(n, p);
        let (a, b) = (self.at(i), self.at(j));
        a + (b - a) * f
    }

    /// The values above `u0`, largest first (the tail's excesses are
    /// summed in this order).
    pub(super) fn above(&self, u0: f64) -> impl Iterator<Item = f64> + '_ {
        (0..self.len())
            .rev()
            .map(move |k| self.at(k))
            .take_while(move |&z| z > u0)
    }
}

/// The median of `|z - med|` over the ascending `sorted`: the deviations
/// are merged in ascending order only up to the median's two values, the
/// same bits as [`quantile_sorted`] of their full sort (0 when empty).
pub(super) fn median_deviation(sorted: &[f64], med: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    let (i, j, f) = position(n, 0.5);
    let mut merged = Deviations::new(sorted, med).skip(i);
    let a = merged.next().unwrap_or(0.0);
    let b = if j > i { merged.next().unwrap_or(a) } else { a };
    a + (b - a) * f
}

/// `|z - med|` for every `z` of an ascending slice, in ascending order:
/// the two sides of `med` merged (each side is already in order), the
/// same values a sort would give.
struct Deviations<'a> {
    below: &'a [f64],
    above: &'a [f64],
    med: f64,
}

impl<'a> Deviations<'a> {
    fn new(sorted: &'a [f64], med: f64) -> Self {
        let split = sorted.partition_point(|&z| z < med);
        let (below, above) = sorted.split_at(split);
        Self { below, above, med }
    }
}

impl Iterator for Deviations<'_> {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        let lo = self.below.last().map(|z| (z - self.med).abs());
        let hi = self.above.first().map(|z| (z - self.med).abs());
        match (lo, hi) {
            (Some(a), Some(b)) if a.total_cmp(&b).is_le() => {
                self.below = &self.below[..self.below.len() - 1];
                Some(a)
            }
            (_, Some(b)) => {
                self.above = &self.above[1..];
                Some(b)
            }
            (Some(a), None) => {
                self.below = &self.below[..self.below.len() - 1];
                Some(a)
            }
            (None, None) => None,
        }
    }
}

/// The latest `window` standardised errors, in arrival order and sorted:
/// the table is rebuilt from the sorted values after every observation, and
/// keeping them sorted as they come and go (a binary search and a shift of
/// at most `window` values) replaces a sort of the whole window each time.
#[derive(Clone, Debug, Default)]
pub(super) struct ErrorWindow {
    order: VecDeque<f64>,
    sorted: Vec<f64>,
}

impl ErrorWindow {
    /// Records `z` (finite), dropping the oldest error when `window` are kept.
    pub(super) fn push(&mut self, z: f64, window: usize) {
        if self.order.len() >= window {
            if let Some(old) = self.order.pop_front() {
                // the same bits are in `sorted`: any equal entry will do
                if let Ok(i) = self.sorted.binary_search_by(|x| x.total_cmp(&old)) {
                    self.sorted.remove(i);
                }
            }
        }
        self.order.push_back(z);
        let i = self.sorted.partition_point(|x| x.total_cmp(&z).is_lt());
        self.sorted.insert(i, z);
    }

    /// The errors in arrival order.
    pub(super) fn in_order(&self) -> impl Iterator<Item = f64> + '_ {
        self.order.iter().copied()
    }

    /// The errors in ascending order.
    pub(super) fn sorted(&self) -> &[f64] {
        &self.sorted
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The kept window is the latest `window` errors, its sorted view
        /// exactly their sort, and the merged deviations exactly the sort
        /// of `|z - med|`: the tables are the ones a full sort would give.
        #[test]
        fn the_sorted_window_and_its_deviations_match_a_full_sort(
            zs in proptest::collection::vec(
                prop_oneof![-8.0f64..8.0, Just(0.0), Just(-0.0), Just(1.5)],
                0..120,
            ),
            window in 10usize..40,
        ) {
            let mut w = super::ErrorWindow::default();
            for &z in &zs {
                w.push(z, window);
            }
            let kept: Vec<f64> = zs[zs.len().saturating_sub(window)..].to_vec();
            prop_assert_eq!(w.order.iter().copied().collect::<Vec<_>>(), kept.clone());
            let mut sorted = kept;
            sorted.sort_by(f64::total_cmp);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(w.sorted()), bits(&sorted));
            let med = super::quantile_sorted(&sorted, 0.5);
            let mut dev: Vec<f64> = sorted.iter().map(|z| (z - med).abs()).collect();
            dev.sort_by(f64::total_cmp);
            let merged: Vec<f64> = super::Deviations::new(&sorted, med).collect();
            prop_assert_eq!(bits(&merged), bits(&dev));
            prop_assert_eq!(
                super::median_deviation(&sorted, med).to_bits(),
                super::quantile_sorted(&dev, 0.5).to_bits()
            );
            // the lower side reads a negated, reversed copy in place
            let down: Vec<f64> = sorted.iter().rev().map(|z| -z).collect();
            let side = super::Side::Down(&sorted);
            for p in [0.0, 0.15, 0.5, 0.85, 0.999, 1.0] {
                prop_assert_eq!(
                    side.quantile(p).to_bits(),
                    super::quantile_sorted(&down, p).to_bits()
                );
            }
            let u0 = side.quantile(0.85);
            let above: Vec<f64> = down.iter().rev().copied().take_while(|&z| z > u0).collect();
            prop_assert_eq!(bits(&side.above(u0).collect::<Vec<_>>()), bits(&above));
        }
    }
}

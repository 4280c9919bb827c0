//! Sorted views of the calibration's error window: the window kept sorted
//! as errors come and go, its quantiles and the sorted deviations from
//! its median.

use std::collections::VecDeque;

/// Empirical quantile of sorted values (linear interpolation).
pub(super) fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    let pos = p.clamp(0.0, 1.0) * (n - 1) as f64;
    let i = pos.floor() as usize;
    let j = (i + 1).min(n - 1);
    let f = pos - i as f64;
    sorted[i] + (sorted[j] - sorted[i]) * f
}

/// `|z - med|` for every `z` of the ascending `sorted`, in ascending order:
/// the two sides of `med` merged (each side is already in order), the
/// same values a sort would give.
pub(super) fn deviations_sorted(sorted: &[f64], med: f64) -> Vec<f64> {
    let split = sorted.partition_point(|&z| z < med);
    let (below, above) = sorted.split_at(split);
    let mut out = Vec::with_capacity(sorted.len());
    let (mut i, mut j) = (below.len(), 0);
    while i > 0 || j < above.len() {
        let lo = (i > 0).then(|| (below[i - 1] - med).abs());
        let hi = above.get(j).map(|z| (z - med).abs());
        match (lo, hi) {
            (Some(a), Some(b)) if a.total_cmp(&b).is_le() => {
                out.push(a);
                i -= 1;
            }
            (_, Some(b)) => {
                out.push(b);
                j += 1;
            }
            (Some(a), None) => {
                out.push(a);
                i -= 1;
            }
            (None, None) => break,
        }
    }
    out
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
            prop_assert_eq!(bits(&super::deviations_sorted(&sorted, med)), bits(&dev));
        }
    }
}

//! Exact Gaussian likelihood of a pure AR(p) model without the Kalman
//! filter: the innovations of the first `p` observations come from the
//! Durbin-Levinson predictors of orders 0..p-1 (obtained from `phi` by the
//! step-down recursion), with prediction variances
//! `v_t = gamma_0 prod_{k <= t} (1 - pi_k^2)`, and every later one is the
//! plain AR residual with variance 1. These are exactly the innovations
//! and gains of the state-space filter started from the stationary
//! covariance (no linear solve for that covariance, no covariance
//! recursion), at O(p^2 + n p).

use super::kalman::{LikeSums, MAX_R};

/// Likelihood sums of the stationary AR(p) model `phi` on `w`, as
/// [`super::kalman::arma_likelihood`] with no MA part (observations whose
/// prediction variance is `>= 1e4` are left out, as there). `None` when
/// the AR part is not stationary or `p > MAX_R`.
pub(crate) fn ar_likelihood(w: &[f64], phi: &[f64]) -> Option<LikeSums> {
    let p = phi.len();
    if p > MAX_R {
        return None;
    }
    // rows[k][..k]: the Durbin-Levinson coefficients of order k
    let mut rows = [[0.0; MAX_R]; MAX_R + 1];
    rows[p][..p].copy_from_slice(phi);
    // one_minus[k] = 1 - pi_k^2 (k = 1..=p)
    let mut one_minus = [1.0; MAX_R + 1];
    for k in (1..=p).rev() {
        let a = rows[k][k - 1];
        let den = 1.0 - a * a;
        if !(den > 0.0) {
            return None;
        }
        one_minus[k] = den;
        let (lo, hi) = rows.split_at_mut(k);
        let (prev, cur) = (&mut lo[k - 1], &hi[0]);
        for j in 0..k - 1 {
            prev[j] = (cur[j] + a * cur[k - 2 - j]) / den;
        }
    }
    // gamma_0 for unit innovation variance
    let mut v = 1.0 / one_minus[1..=p].iter().product::<f64>();
    if !v.is_finite() {
        return None;
    }
    let mut ssq = 0.0;
    let mut sumlog = 0.0;
    let mut nu = 0usize;
    for (t, &wt) in w.iter().enumerate() {
        let (coef, gain) = if t < p {
            if t > 0 {
                v *= one_minus[t];
            }
            (&rows[t][..t], v)
        } else {
            (&rows[p][..p], 1.0)
        };
        let mut resid = wt;
        for (j, c) in coef.iter().enumerate() {
            resid -= c * w[t - j - 1];
        }
        if gain < 1e4 {
            nu += 1;
            ssq += resid * resid / gain;
            if t < p {
                sumlog += gain.ln();
            }
        }
    }
    Some(LikeSums { ssq, sumlog, nu })
}

#[cfg(test)]
mod tests {
    use super::super::kalman::SsModel;
    use super::*;

    #[test]
    fn matches_the_kalman_filter() {
        let y: Vec<f64> = (0..60)
            .map(|i| ((i * 37) % 23) as f64 * 0.1 + 0.02 * i as f64 - 1.0)
            .collect();
        for phi in [
            vec![],
            vec![0.6],
            vec![0.5, -0.2],
            vec![0.2, 0.1, -0.1],
            vec![1.2, -0.5, 0.1, 0.05, -0.02],
            vec![0.3, 0.2, 0.1, 0.1, 0.05, 0.1],
        ] {
            let mut m = SsModel::new(&phi, &[], 0).expect("model");
            let a = m.filter(&y, None);
            let b = ar_likelihood(&y, &phi).expect("stationary");
            assert_eq!(a.nu, b.nu, "{phi:?}");
            assert!((a.ssq - b.ssq).abs() <= 1e-9 * a.ssq, "{phi:?}");
            assert!((a.sumlog - b.sumlog).abs() <= 1e-9, "{phi:?}");
        }
        assert!(ar_likelihood(&y, &[1.0]).is_none());
        assert!(ar_likelihood(&y, &[0.5, 0.6]).is_none());
    }
}

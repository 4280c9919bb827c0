//! Unit tests of the state-space filter, the ARMA likelihood and the
//! stationary covariance.

use super::*;

#[test]
fn ar1_likelihood_matches_closed_form() {
    // Exact Gaussian AR(1) likelihood (sigma2 = 1 concentrated form):
    // first obs variance 1/(1-phi^2), then e_t = y_t - phi y_{t-1}.
    let phi = 0.6;
    let y = [0.3, -0.1, 0.8, 1.2, 0.4, -0.5, 0.0, 0.9];
    let mut m = SsModel::new(&[phi], &[], 0).expect("model");
    let s = m.filter(&y, None);
    let v0 = 1.0 / (1.0 - phi * phi);
    let mut ssq = y[0] * y[0] / v0;
    for t in 1..y.len() {
        let e = y[t] - phi * y[t - 1];
        ssq += e * e;
    }
    assert_eq!(s.nu, y.len());
    assert!((s.ssq - ssq).abs() < 1e-12, "{} vs {}", s.ssq, ssq);
    assert!((s.sumlog - v0.ln()).abs() < 1e-12);
}

#[test]
fn stationary_cov_ma1_and_arma11() {
    // MA(1): Var(y) = 1 + theta^2 ; state 2 = theta e_t, Var = theta^2,
    // Cov = theta.
    let th = 0.4;
    let q0 = stationary_cov(&[], &[th], 2).expect("q0");
    assert!((q0[0] - (1.0 + th * th)).abs() < 1e-12);
    assert!((q0[1] - th).abs() < 1e-12);
    assert!((q0[3] - th * th).abs() < 1e-12);
    // ARMA(1,1): Var(y) = (1 + 2 phi theta + theta^2) / (1 - phi^2)
    let (ph, th) = (0.5, 0.3);
    let q0 = stationary_cov(&[ph], &[th], 2).expect("q0");
    let want = (1.0 + 2.0 * ph * th + th * th) / (1.0 - ph * ph);
    assert!((q0[0] - want).abs() < 1e-12, "{} vs {}", q0[0], want);
}

#[test]
fn arma_likelihood_matches_the_general_filter() {
    let y: Vec<f64> = (0..60)
        .map(|i| ((i * 37) % 23) as f64 * 0.1 + 0.02 * i as f64)
        .collect();
    for (phi, theta) in [
        (vec![], vec![]),
        (vec![0.6], vec![]),
        (vec![0.5, -0.2], vec![0.3, 0.1]),
        (vec![], vec![-0.7]),
        (vec![0.2, 0.1, -0.1], vec![0.4]),
    ] {
        let mut m = SsModel::new(&phi, &theta, 0).expect("model");
        let a = m.filter(&y, None);
        let b = arma_likelihood(&y, &phi, &theta, 1e-14).expect("stationary");
        assert_eq!(a.nu, b.nu);
        assert!((a.ssq - b.ssq).abs() <= 1e-10 * a.ssq, "{phi:?} {theta:?}");
        assert!((a.sumlog - b.sumlog).abs() <= 1e-10, "{phi:?} {theta:?}");
        // d = 1: the diffuse filter on y equals the ARMA filter on the
        // differences up to O(1 / kappa)
        let mut m1 = SsModel::new(&phi, &theta, 1).expect("model");
        let a1 = m1.filter(&y, None);
        let dy: Vec<f64> = y.windows(2).map(|w| w[1] - w[0]).collect();
        let b1 = arma_likelihood(&dy, &phi, &theta, 1e-14).expect("stationary");
        assert_eq!(a1.nu, b1.nu);
        assert!(
            (a1.ssq - b1.ssq).abs() <= 1e-5 * a1.ssq,
            "{} {}",
            a1.ssq,
            b1.ssq
        );
        assert!(
            (a1.sumlog - b1.sumlog).abs() <= 1e-5,
            "{} {}",
            a1.sumlog,
            b1.sumlog
        );
    }
    assert!(arma_likelihood(&y, &[1.0], &[], 1e-14).is_none());
}

#[test]
fn unit_root_has_no_stationary_cov() {
    assert!(SsModel::new(&[1.0], &[], 0).is_none());
    assert!(stationary_cov(&[0.5, 0.5], &[0.0], 2).is_none());
}

#[test]
fn psi_weights_known_values() {
    // AR(1): psi_j = phi^j
    let psi = psi_weights(&[0.5], &[], 0, 4);
    assert_eq!(psi, vec![1.0, 0.5, 0.25, 0.125]);
    // MA(1): 1, theta, 0, 0
    let psi = psi_weights(&[], &[0.3], 0, 4);
    assert_eq!(psi, vec![1.0, 0.3, 0.0, 0.0]);
    // random walk: all ones
    let psi = psi_weights(&[], &[], 1, 4);
    assert_eq!(psi, vec![1.0; 4]);
    // ARIMA(0,1,1): 1, 1 + theta, 1 + theta, ...
    let psi = psi_weights(&[], &[-0.4], 1, 3);
    assert!((psi[1] - 0.6).abs() < 1e-15 && (psi[2] - 0.6).abs() < 1e-15);
    // ARIMA(0,2,0): 1, 2, 3, 4
    let psi = psi_weights(&[], &[], 2, 4);
    assert_eq!(psi, vec![1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn kalman_forecast_variance_matches_psi_weights_for_ar1() {
    let phi = 0.7;
    let y: Vec<f64> = (0..40).map(|i| ((i * 7) % 11) as f64 * 0.1 - 0.5).collect();
    let mut m = SsModel::new(&[phi], &[], 0).expect("model");
    m.filter(&y, None);
    let fc = m.forecast(4);
    let psi = psi_weights(&[phi], &[], 0, 4);
    let mut acc = 0.0;
    for k in 0..4 {
        acc += psi[k] * psi[k];
        assert!(
            (fc[k].1 - acc).abs() < 1e-9,
            "step {k}: {} vs {}",
            fc[k].1,
            acc
        );
        assert!((fc[k].0 - y[39] * phi.powi(k as i32 + 1)).abs() < 1e-12);
    }
}

/// `P = sum_j T^j R R' T'^j` by iterating `P <- T P T' + R R'`.
fn brute(phi: &[f64], theta: &[f64], r: usize) -> Vec<f64> {
    let mut t = vec![0.0; r * r];
    for i in 0..r {
        if i < phi.len() {
            t[i * r] = phi[i];
        }
        if i + 1 < r {
            t[i * r + i + 1] = 1.0;
        }
    }
    let mut rv = vec![0.0; r];
    rv[0] = 1.0;
    rv[1..=theta.len()].copy_from_slice(theta);
    let mut pm = vec![0.0; r * r];
    for _ in 0..5000 {
        let mut tp = vec![0.0; r * r];
        for i in 0..r {
            for j in 0..r {
                tp[i * r + j] = (0..r).map(|k| t[i * r + k] * pm[k * r + j]).sum();
            }
        }
        for i in 0..r {
            for j in 0..r {
                pm[i * r + j] =
                    (0..r).map(|k| tp[i * r + k] * t[j * r + k]).sum::<f64>() + rv[i] * rv[j];
            }
        }
    }
    pm
}

#[test]
fn stationary_cov_matches_the_lyapunov_sum() {
    for (phi, theta) in [
        (vec![0.5, -0.2], vec![0.3, 0.1]),
        (vec![], vec![-0.7, 0.2, 0.1]),
        (vec![0.2, 0.1, -0.1], vec![0.4]),
        (vec![1.2, -0.5, 0.1, 0.05, -0.02], vec![0.3, -0.2, 0.1]),
        (vec![0.3], vec![0.5, 0.4, 0.3, 0.2, 0.1]),
        (vec![0.9, -0.3, 0.1, 0.1, 0.05, 0.02], vec![]),
    ] {
        let r = phi.len().max(theta.len() + 1);
        assert!(r <= MAX_R);
        let mut th = vec![0.0; r - 1];
        th[..theta.len()].copy_from_slice(&theta);
        let got = stationary_cov(&phi, &th, r).expect("stationary");
        let want = brute(&phi, &th, r);
        for k in 0..r * r {
            let tol = 1e-9 * want[0].abs().max(1.0);
            assert!((got[k] - want[k]).abs() <= tol, "{phi:?} {theta:?} {k}");
        }
    }
}

/// The elimination of the augmented system in one pass (the code before
/// the factorisation was cached): the reference for bit-identical results.
/// Unconditional covariance of the stationary ARMA state (r x r, row major):
/// solves `P = T P T' + R R'` over the upper triangle by Gaussian
/// elimination. `theta` has length `r - 1` (zero padded). `None` when the
/// system is singular (unit-root AR) or the result is not finite.
fn stationary_cov_reference(phi: &[f64], theta: &[f64], r: usize) -> Option<[f64; MAX_R * MAX_R]> {
    let p = phi.len();
    let ph = |i: usize| if i < p { phi[i] } else { 0.0 };
    let rv = |i: usize| {
        if i == 0 {
            1.0
        } else {
            theta.get(i - 1).copied().unwrap_or(0.0)
        }
    };
    // index of (i, j), i <= j
    let nvar = r * (r + 1) / 2;
    let mut pos = [0usize; MAX_R * MAX_R];
    let mut k = 0;
    for i in 0..r {
        for j in i..r {
            pos[i * r + j] = k;
            pos[j * r + i] = k;
            k += 1;
        }
    }
    const NV: usize = MAX_R * (MAX_R + 1) / 2;
    let mut a = [0.0; NV * (NV + 1)];
    let w = nvar + 1;
    for i in 0..r {
        for j in i..r {
            let row = pos[i * r + j];
            a[row * w + row] += 1.0;
            // (T P T')_{ij} = phi_i phi_j P00 + phi_i P[0][j+1] + phi_j P[i+1][0] + P[i+1][j+1]
            let (pi, pj) = (ph(i), ph(j));
            if pi != 0.0 && pj != 0.0 {
                a[row * w + pos[0]] -= pi * pj;
            }
            if pi != 0.0 && j + 1 < r {
                a[row * w + pos[j + 1]] -= pi;
            }
            if pj != 0.0 && i + 1 < r {
                a[row * w + pos[(i + 1) * r]] -= pj;
            }
            if i + 1 < r && j + 1 < r {
                a[row * w + pos[(i + 1) * r + j + 1]] -= 1.0;
            }
            a[row * w + nvar] = rv(i) * rv(j);
        }
    }
    // Gaussian elimination with partial pivoting.
    for col in 0..nvar {
        let mut best = col;
        let mut bv = a[col * w + col].abs();
        for row in (col + 1)..nvar {
            let v = a[row * w + col].abs();
            if v > bv {
                bv = v;
                best = row;
            }
        }
        if !(bv > 1e-12) {
            return None;
        }
        if best != col {
            for c in 0..w {
                a.swap(col * w + c, best * w + c);
            }
        }
        let piv = a[col * w + col];
        for row in (col + 1)..nvar {
            let f = a[row * w + col] / piv;
            if f != 0.0 {
                for c in col..w {
                    a[row * w + c] -= f * a[col * w + c];
                }
            }
        }
    }
    let mut x = [0.0; NV];
    for row in (0..nvar).rev() {
        let mut s = a[row * w + nvar];
        for c in (row + 1)..nvar {
            s -= a[row * w + c] * x[c];
        }
        x[row] = s / a[row * w + row];
    }
    let mut out = [0.0; MAX_R * MAX_R];
    for i in 0..r {
        for j in 0..r {
            out[i * r + j] = x[pos[i * r + j]];
        }
    }
    if out[..r * r].iter().all(|v| v.is_finite()) && out[0] > 0.0 {
        Some(out)
    } else {
        None
    }
}

#[test]
fn stationary_cov_is_bit_identical_to_one_elimination() {
    let mut seed = 12345u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    for r in 1..=MAX_R {
        for p in 0..=r {
            for _ in 0..30 {
                let phi: Vec<f64> = (0..p).map(|_| 0.6 * next() / p as f64).collect();
                let th: Vec<f64> = (0..r - 1).map(|_| next()).collect();
                // twice with the same phi (the cached factors), new theta
                for _ in 0..2 {
                    let th: Vec<f64> = th.iter().map(|v| v * next()).collect();
                    let got = stationary_cov(&phi, &th, r);
                    let want = stationary_cov_reference(&phi, &th, r);
                    match (got, want) {
                        (Some(g), Some(w)) => {
                            for k in 0..r * r {
                                assert_eq!(g[k].to_bits(), w[k].to_bits(), "{phi:?} {th:?} {k}");
                            }
                        }
                        (None, None) => {}
                        _ => panic!("{phi:?} {th:?}"),
                    }
                }
            }
        }
    }
    assert!(stationary_cov(&[0.5, 0.5], &[0.0], 2).is_none());
    assert!(stationary_cov(&[0.5, 0.5], &[0.3], 2).is_none());
}

#[test]
fn replayed_gains_are_bit_identical() {
    let y: Vec<f64> = (0..80).map(|t| ((t * 7 % 13) as f64 - 6.0) * 0.3).collect();
    let z: Vec<f64> = y.iter().map(|v| v - 0.25).collect();
    for (phi, theta) in [
        (vec![0.5, -0.2], vec![0.3]),
        (vec![], vec![0.95]),
        (vec![0.3, 0.1, 0.05, -0.1, 0.02], vec![0.4, 0.1]),
    ] {
        let mut sums = Vec::new();
        for data in [&y, &z] {
            // a fresh run (another model in between), then a replay
            arma_likelihood(&y[..10], &[0.1], &[0.2, 0.1], 1e-9);
            let fresh = arma_likelihood(data, &phi, &theta, 1e-9).expect("fresh");
            sums.push(fresh);
        }
        arma_likelihood(&y, &phi, &theta, 1e-9);
        let replay = arma_likelihood(&z, &phi, &theta, 1e-9).expect("replay");
        let short = arma_likelihood(&z[..30], &phi, &theta, 1e-9).expect("replay");
        arma_likelihood(&y[..10], &[0.1], &[0.2, 0.1], 1e-9);
        let fresh_short = arma_likelihood(&z[..30], &phi, &theta, 1e-9).expect("fresh");
        for (a, b) in [(replay, sums[1]), (short, fresh_short)] {
            assert_eq!(a.ssq.to_bits(), b.ssq.to_bits());
            assert_eq!(a.sumlog.to_bits(), b.sumlog.to_bits());
            assert_eq!(a.nu, b.nu);
        }
    }
}

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

use super::*;

#[test]
fn partrans_roundtrip_and_stationarity() {
    let phi = [0.5, -0.3, 0.1];
    let mut raw = [0.0; 3];
    assert!(invpartrans(&phi, &mut raw));
    let mut back = [0.0; 3];
    partrans(&raw, &mut back);
    for i in 0..3 {
        assert!((back[i] - phi[i]).abs() < 1e-12);
    }
    // any raw vector maps to a stationary polynomial
    for raw in [[2.5, -3.0, 1.5], [-4.0, 4.0, 0.5], [0.1, 0.2, 3.0]] {
        let mut ph = [0.0; 3];
        partrans(&raw, &mut ph);
        assert!(roots_outside(&ph, 1.0), "{ph:?}");
    }
    // non-stationary AR is refused
    assert!(!invpartrans(&[1.2], &mut [0.0]));
    assert!(!invpartrans(&[0.6, 0.5], &mut [0.0; 2]));
}

#[test]
fn roots_outside_matches_known_roots() {
    // 1 - 0.5 z: root 2
    assert!(roots_outside(&[0.5], 1.9));
    assert!(!roots_outside(&[0.5], 2.1));
    // 1 - 1.5 z + 0.56 z^2 = (1 - 0.7 z)(1 - 0.8 z): roots 1.4286, 1.25
    assert!(roots_outside(&[1.5, -0.56], 1.2));
    assert!(!roots_outside(&[1.5, -0.56], 1.3));
}

fn ar1_series(n: usize, phi: f64, seed: u64) -> Vec<f64> {
    let mut s = seed;
    let mut y = 0.0;
    (0..n)
        .map(|_| {
            // xorshift + Box-Muller-ish sum of uniforms
            let mut u = 0.0;
            for _ in 0..12 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                u += (s >> 11) as f64 / (1u64 << 53) as f64;
            }
            y = phi * y + (u - 6.0);
            y
        })
        .collect()
}

#[test]
fn fits_ar1_and_recovers_phi() {
    let y: Vec<f64> = ar1_series(400, 0.7, 7).iter().map(|v| v + 10.0).collect();
    let fit = fit_arima(
        &y,
        Spec {
            p: 1,
            d: 0,
            q: 0,
            constant: true,
        },
        None,
        None,
        100,
        Optimizer::Reference,
        true,
    )
    .expect("fit");
    assert!((fit.ar()[0] - 0.7).abs() < 0.1, "{:?}", fit.ar());
    assert!((fit.constant_coef().expect("mean") - 10.0).abs() < 0.5);
    assert!((fit.sigma2() - 1.0).abs() < 0.2, "{}", fit.sigma2());
    // the ML optimum: perturbing phi lowers the likelihood
    let fc = fit.forecast(3);
    assert!(fc.iter().all(|(m, s)| m.is_finite() && *s > 0.0));
    assert!(fc[0].1 < fc[2].1);
}

#[test]
fn warm_start_reaches_the_cold_optimum() {
    let y: Vec<f64> = ar1_series(120, 0.5, 3);
    let spec = Spec {
        p: 1,
        d: 0,
        q: 1,
        constant: true,
    };
    let cold = fit_arima(&y, spec, None, None, 100, Optimizer::Reference, true).expect("cold");
    let warm = fit_arima(
        &y,
        spec,
        Some(Warm {
            ar: &[0.3],
            ma: &[0.1],
            beta: Some(0.0),
        }),
        None,
        100,
        Optimizer::Fast,
        true,
    )
    .expect("warm");
    assert!((cold.log_likelihood() - warm.log_likelihood()).abs() < 1e-6);
}

//! KPSS level-stationarity test and the number of differences, as
//! statsforecast's `ndiffs` (statsmodels `kpss(x, "c", nlags)` with
//! `nlags = floor(3 sqrt(n) / 13)`, p-value interpolated in the KPSS 1992
//! table, difference while `p < alpha`, at most `max_d` times).

const CRIT: [f64; 4] = [0.347, 0.463, 0.574, 0.739];
const PVALS: [f64; 4] = [0.10, 0.05, 0.025, 0.01];

fn is_constant(x: &[f64]) -> bool {
    x.iter().all(|v| *v == x[0])
}

/// KPSS statistic for level stationarity with `nlags` Bartlett lags.
/// `None` when it cannot be computed (too short, zero variance).
pub fn kpss_stat(x: &[f64], nlags: usize) -> Option<f64> {
    let n = x.len();
    if n < 2 || nlags >= n {
        return None;
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    let mut cum = 0.0;
    let mut eta = 0.0;
    for v in x {
        cum += v - mean;
        eta += cum * cum;
    }
    let nf = n as f64;
    eta /= nf * nf;
    let mut s_hat: f64 = x.iter().map(|v| (v - mean) * (v - mean)).sum();
    for i in 1..=nlags {
        let mut prod = 0.0;
        for t in i..n {
            prod += (x[t] - mean) * (x[t - i] - mean);
        }
        s_hat += 2.0 * prod * (1.0 - i as f64 / (nlags as f64 + 1.0));
    }
    s_hat /= nf;
    if !(s_hat > 0.0) {
        return None;
    }
    Some(eta / s_hat)
}

/// The table p-value of a KPSS statistic, clamped to [0.01, 0.10] (numpy
/// `interp`).
pub fn kpss_pvalue(stat: f64) -> f64 {
    if stat <= CRIT[0] {
        return PVALS[0];
    }
    if stat >= CRIT[3] {
        return PVALS[3];
    }
    for i in 0..3 {
        if stat <= CRIT[i + 1] {
            let f = (stat - CRIT[i]) / (CRIT[i + 1] - CRIT[i]);
            return PVALS[i] + f * (PVALS[i + 1] - PVALS[i]);
        }
    }
    PVALS[3]
}

fn needs_diff(x: &[f64], alpha: f64) -> bool {
    let nlags = (3.0 * (x.len() as f64).sqrt() / 13.0).floor() as usize;
    match kpss_stat(x, nlags) {
        Some(s) => kpss_pvalue(s) < alpha,
        None => false,
    }
}

/// Number of first differences (0..=max_d) that make `x` level stationary
/// by repeated KPSS tests at level `alpha` (clamped to [0.01, 0.1]).
/// Reproduces statsforecast's `ndiffs`, including that it drops the first
/// value of each differenced series before testing it again.
pub fn ndiffs(x: &[f64], alpha: f64, max_d: usize) -> usize {
    let alpha = alpha.clamp(0.01, 0.1);
    let mut d = 0;
    if x.is_empty() || is_constant(x) {
        return 0;
    }
    let mut cur: Vec<f64> = x.to_vec();
    let mut dodiff = needs_diff(&cur, alpha);
    while dodiff && d < max_d {
        d += 1;
        let next: Vec<f64> = cur.windows(2).skip(1).map(|w| w[1] - w[0]).collect();
        cur = next;
        if cur.is_empty() || is_constant(&cur) {
            return d;
        }
        dodiff = needs_diff(&cur, alpha);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                let mut u = 0.0;
                for _ in 0..12 {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    u += (s >> 11) as f64 / (1u64 << 53) as f64;
                }
                u - 6.0
            })
            .collect()
    }

    #[test]
    fn white_noise_needs_no_difference() {
        let mut zero = 0;
        for seed in 1..=20 {
            if ndiffs(&noise(100, seed), 0.05, 2) == 0 {
                zero += 1;
            }
        }
        assert!(zero >= 17, "only {zero}/20 white-noise series got d = 0");
    }

    #[test]
    fn random_walk_needs_one_difference() {
        let mut one = 0;
        for seed in 1..=20 {
            let mut acc = 0.0;
            let rw: Vec<f64> = noise(200, seed)
                .iter()
                .map(|e| {
                    acc += e;
                    acc
                })
                .collect();
            if ndiffs(&rw, 0.05, 2) == 1 {
                one += 1;
            }
        }
        assert!(one >= 15, "only {one}/20 random walks got d = 1");
    }

    #[test]
    fn pvalue_interpolation() {
        assert_eq!(kpss_pvalue(0.1), 0.10);
        assert_eq!(kpss_pvalue(2.0), 0.01);
        assert!((kpss_pvalue(0.463) - 0.05).abs() < 1e-12);
        assert!((kpss_pvalue((0.347 + 0.463) / 2.0) - 0.075).abs() < 1e-12);
    }

    #[test]
    fn statistic_matches_statsmodels() {
        // statsmodels.tsa.stattools.kpss([1,3,2,5,4,6,8,7,9,10], "c", nlags=1)[0]
        let x = [1.0, 3.0, 2.0, 5.0, 4.0, 6.0, 8.0, 7.0, 9.0, 10.0];
        let s = kpss_stat(&x, 1).expect("stat");
        assert!((s - 0.5952015355086373).abs() < 1e-12, "{s}");
    }
}

//! State-space form of an ARIMA(p, d, q) model and its exact Gaussian
//! likelihood by a Kalman filter (Gardner, Harvey & Phillips 1980; Harvey
//! 1989), following R's `arima` / statsforecast's `arima_like` line by line:
//! the stationary part starts from its unconditional covariance `Q0` and the
//! `d` differencing states from a diffuse prior `kappa = 1e6`; observations
//! whose prediction variance is `>= 1e4` (the diffuse ones) do not enter the
//! likelihood.

/// Largest supported AR order and MA order + 1 (r = max(p, q + 1)).
pub(crate) const MAX_R: usize = 6;
/// Largest supported number of differences.
pub(crate) const MAX_D: usize = 2;
/// Largest state dimension.
pub(crate) const MAX_RD: usize = MAX_R + MAX_D;
const KAPPA: f64 = 1e6;

mod lyap;
pub(crate) use lyap::stationary_cov;

/// The state-space model with its filter state (`a`, `P`) and initial
/// covariance `Pn`.
#[derive(Clone, Debug)]
#[allow(dead_code)] // q: kept with p for debugging output
pub(crate) struct SsModel {
    pub p: usize,
    pub q: usize,
    pub r: usize,
    pub d: usize,
    pub rd: usize,
    pub phi: [f64; MAX_R],
    /// MA coefficients padded with zeros to `r - 1`.
    pub theta: [f64; MAX_R],
    pub delta: [f64; MAX_D],
    pub a: [f64; MAX_RD],
    pub pmat: [f64; MAX_RD * MAX_RD],
    pub pn: [f64; MAX_RD * MAX_RD],
    /// Relative change of the filtered covariance below which the filter
    /// treats it as converged (1e-14 by default: exact to rounding).
    pub steady_tol: f64,
}

/// Sums of one likelihood pass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LikeSums {
    pub ssq: f64,
    pub sumlog: f64,
    pub nu: usize,
}

impl SsModel {
    /// Builds the model for `phi`, `theta` and `d` differences. `None` when
    /// the orders are too large or the stationary covariance cannot be solved
    /// (a non-stationary `phi`).
    pub fn new(phi: &[f64], theta: &[f64], d: usize) -> Option<Self> {
        let p = phi.len();
        let q = theta.len();
        let r = p.max(q + 1);
        if r > MAX_R || d > MAX_D {
            return None;
        }
        let mut m = SsModel {
            p,
            q,
            r,
            d,
            rd: r + d,
            phi: [0.0; MAX_R],
            theta: [0.0; MAX_R],
            delta: [0.0; MAX_D],
            a: [0.0; MAX_RD],
            pmat: [0.0; MAX_RD * MAX_RD],
            pn: [0.0; MAX_RD * MAX_RD],
            steady_tol: 1e-14,
        };
        m.phi[..p].copy_from_slice(phi);
        m.theta[..q].copy_from_slice(theta);
        match d {
            0 => {}
            1 => m.delta[0] = 1.0,
            _ => {
                m.delta[0] = 2.0;
                m.delta[1] = -1.0;
            }
        }
        m.init_pn()?;
        Some(m)
    }

    #[inline]
    fn idx(&self, i: usize, j: usize) -> usize {
        i * self.rd + j
    }

    fn init_pn(&mut self) -> Option<()> {
        let (r, rd) = (self.r, self.rd);
        self.pn = [0.0; MAX_RD * MAX_RD];
        if r == 1 {
            let v = if self.p > 0 {
                let den = 1.0 - self.phi[0] * self.phi[0];
                if den <= 0.0 {
                    return None;
                }
                1.0 / den
            } else {
                1.0
            };
            self.pn[0] = v;
        } else {
            let q0 = stationary_cov(&self.phi[..self.p], &self.theta[..r - 1], r)?;
            for i in 0..r {
                for j in 0..r {
                    self.pn[i * rd + j] = q0[i * r + j];
                }
            }
        }
        for i in 0..self.d {
            let k = r + i;
            self.pn[k * rd + k] = KAPPA;
        }
        self.a = [0.0; MAX_RD];
        Some(())
    }

    /// `anew = T a`.
    #[inline]
    fn predict_state(&self, a: &[f64; MAX_RD], anew: &mut [f64; MAX_RD]) {
        let (p, r, d) = (self.p, self.r, self.d);
        for i in 0..r {
            let mut tmp = if i < r - 1 { a[i + 1] } else { 0.0 };
            if i < p {
                tmp += self.phi[i] * a[0];
            }
            anew[i] = tmp;
        }
        if d > 0 {
            anew[(r + 1)..(r + d)].copy_from_slice(&a[r..(r + d - 1)]);
            let mut tmp = a[0];
            for i in 0..d {
                tmp += self.delta[i] * a[r + i];
            }
            anew[r] = tmp;
        }
    }

    /// `pnew = T P T' + V`.
    #[inline]
    fn predict_cov(
        &self,
        pm: &[f64; MAX_RD * MAX_RD],
        pnew: &mut [f64; MAX_RD * MAX_RD],
        mm: &mut [f64; MAX_RD * MAX_RD],
    ) {
        let (p, r, d, rd) = (self.p, self.r, self.d, self.rd);
        // mm = T P
        for i in 0..r {
            for j in 0..rd {
                let mut tmp = 0.0;
                if i < p {
                    tmp += self.phi[i] * pm[j];
                }
                if i < r - 1 {
                    tmp += pm[(i + 1) * rd + j];
                }
                mm[i * rd + j] = tmp;
            }
        }
        if d > 0 {
            for j in 0..rd {
                let mut tmp = pm[j];
                for k in 0..d {
                    tmp += self.delta[k] * pm[(r + k) * rd + j];
                }
                mm[r * rd + j] = tmp;
            }
            for i in 1..d {
                for j in 0..rd {
                    mm[(r + i) * rd + j] = pm[(r + i - 1) * rd + j];
                }
            }
        }
        // pnew = mm T'
        for i in 0..rd {
            for j in 0..r {
                let mut tmp = 0.0;
                if j < p {
                    tmp += self.phi[j] * mm[i * rd];
                }
                if j < r - 1 {
                    tmp += mm[i * rd + j + 1];
                }
                pnew[i * rd + j] = tmp;
            }
            if d > 0 {
                let mut tmp = mm[i * rd];
                for k in 0..d {
                    tmp += self.delta[k] * mm[i * rd + r + k];
                }
                pnew[i * rd + r] = tmp;
                for j in 1..d {
                    pnew[i * rd + r + j] = mm[i * rd + r + j - 1];
                }
            }
        }
        // + V, V = R R', R = (1, theta_1..theta_{r-1}, 0..)
        for i in 0..r {
            let vi = if i == 0 { 1.0 } else { self.theta[i - 1] };
            if vi == 0.0 {
                continue;
            }
            for j in 0..r {
                let vj = if j == 0 { 1.0 } else { self.theta[j - 1] };
                pnew[i * rd + j] += vi * vj;
            }
        }
    }

    /// Runs the filter over `y` from the initial state (a = 0, P = Pn),
    /// leaving the filtered state at the end in `self.a` / `self.pmat`.
    /// With `resid`, stores the standardized innovations `resid0/sqrt(gain)`.
    pub fn filter(&mut self, y: &[f64], mut resid: Option<&mut Vec<f64>>) -> LikeSums {
        let (r, d, rd) = (self.r, self.d, self.rd);
        let mut ssq = 0.0;
        let mut logs = LogGainSum::new();
        let mut nu = 0usize;
        let mut a = [0.0; MAX_RD];
        let mut anew = [0.0; MAX_RD];
        let mut pm = [0.0; MAX_RD * MAX_RD];
        let mut pnew = self.pn;
        let mut mvec = [0.0; MAX_RD];
        if let Some(res) = resid.as_deref_mut() {
            res.clear();
        }
        // Once the filtered covariance stops changing (to 1e-14 relative),
        // the gain is constant: the remaining steps only update the state.
        let mut steady = false;
        let mut gain = 1.0;
        let mut mm = [0.0; MAX_RD * MAX_RD];
        for (l, &yl) in y.iter().enumerate() {
            self.predict_state(&a, &mut anew);
            if !steady {
                if l > 0 {
                    self.predict_cov(&pm, &mut pnew, &mut mm);
                }
                for i in 0..rd {
                    let mut tmp = pnew[i * rd];
                    for j in 0..d {
                        tmp += pnew[i * rd + r + j] * self.delta[j];
                    }
                    mvec[i] = tmp;
                }
                gain = mvec[0];
                for j in 0..d {
                    gain += self.delta[j] * mvec[r + j];
                }
            }
            let mut resid0 = yl - anew[0];
            for i in 0..d {
                resid0 -= self.delta[i] * anew[r + i];
            }
            if gain < 1e4 {
                nu += 1;
                ssq += resid0 * resid0 / gain;
                logs.add(gain, steady);
            }
            if let Some(res) = resid.as_deref_mut() {
                res.push(resid0 / gain.sqrt());
            }
            for i in 0..rd {
                a[i] = anew[i] + mvec[i] * resid0 / gain;
            }
            if !steady {
                let mut change: f64 = 0.0;
                let mut size: f64 = 0.0;
                for i in 0..rd {
                    for j in 0..rd {
                        let v = pnew[i * rd + j] - mvec[i] * mvec[j] / gain;
                        change = change.max((v - pm[i * rd + j]).abs());
                        size = size.max(v.abs());
                        pm[i * rd + j] = v;
                    }
                }
                if l > 0 && change <= self.steady_tol * size.max(1.0) {
                    steady = true;
                }
            }
        }
        self.a = a;
        self.pmat = pm;
        LikeSums {
            ssq,
            sumlog: logs.total(),
            nu,
        }
    }

    /// Kalman forecast from the filtered state: `(mean, variance / sigma2)`
    /// for steps 1..=h (the mean excludes any regression term).
    pub fn forecast(&self, h: usize) -> Vec<(f64, f64)> {
        let (r, d, rd) = (self.r, self.d, self.rd);
        let mut a = self.a;
        let mut anew = [0.0; MAX_RD];
        let mut pm = self.pmat;
        let mut pnew = [0.0; MAX_RD * MAX_RD];
        let mut mm = [0.0; MAX_RD * MAX_RD];
        let mut out = Vec::with_capacity(h);
        for _ in 0..h {
            self.predict_state(&a, &mut anew);
            a = anew;
            self.predict_cov(&pm, &mut pnew, &mut mm);
            pm = pnew;
            let mut z = [0.0; MAX_RD];
            z[0] = 1.0;
            z[r..r + d].copy_from_slice(&self.delta[..d]);
            let mut mean = 0.0;
            for i in 0..rd {
                mean += z[i] * a[i];
            }
            let mut var = 0.0;
            for i in 0..rd {
                if z[i] == 0.0 {
                    continue;
                }
                for j in 0..rd {
                    var += z[i] * z[j] * pm[self.idx(i, j)];
                }
            }
            out.push((mean, var));
        }
        out
    }
}

/// Likelihood sums of the stationary ARMA(p, q) model (no differencing)
/// on `w`: the same Kalman filter as [`SsModel::filter`] with `d = 0`,
/// written for that case (one pass over the upper triangle of the
/// covariance per step, no state kept). `None` when the AR part is not
/// stationary or the orders are too large.
pub(crate) fn arma_likelihood(
    w: &[f64],
    phi: &[f64],
    theta: &[f64],
    steady_tol: f64,
) -> Option<LikeSums> {
    let p = phi.len();
    let q = theta.len();
    if q == 0 {
        // pure AR: the same innovations without the filter
        return super::arlike::ar_likelihood(w, phi);
    }
    let r = p.max(q + 1);
    if r > MAX_R {
        return None;
    }
    let mut ph = [0.0; MAX_R];
    ph[..p].copy_from_slice(phi);
    // R = (1, theta_1, .., theta_{r-1})
    let mut v = [0.0; MAX_R];
    v[0] = 1.0;
    v[1..=q].copy_from_slice(theta);
    // the gains depend on (phi, theta) only: reuse the last sequence
    let mut key = [0u64; 2 * MAX_R + 2];
    for i in 0..MAX_R {
        key[i] = ph[i].to_bits();
        key[MAX_R + i] = v[i].to_bits();
    }
    key[2 * MAX_R] = r as u64;
    key[2 * MAX_R + 1] = steady_tol.to_bits();
    if let Some(s) = GAINS.with(|c| {
        let c = c.borrow();
        (c.key == key && (c.steady_at.is_some() || c.gain.len() >= w.len())).then(|| match r {
            1 => arma_replay::<1>(w, &ph, &c),
            2 => arma_replay::<2>(w, &ph, &c),
            3 => arma_replay::<3>(w, &ph, &c),
            4 => arma_replay::<4>(w, &ph, &c),
            5 => arma_replay::<5>(w, &ph, &c),
            _ => arma_replay::<MAX_R>(w, &ph, &c),
        })
    }) {
        return Some(s);
    }
    let mut pnew = [0.0; S * S];
    if r == 1 {
        let den = 1.0 - ph[0] * ph[0];
        if !(den > 0.0) {
            return None;
        }
        pnew[0] = 1.0 / den;
    } else {
        let q0 = stationary_cov(&ph[..p], &v[1..r], r)?;
        for i in 0..r {
            for j in 0..r {
                pnew[i * S + j] = q0[i * r + j];
            }
        }
    }
    GAINS.with(|c| {
        let c = &mut *c.borrow_mut();
        c.key = key;
        c.gain.clear();
        c.kg.clear();
        c.steady_at = None;
        Some(match r {
            1 => arma_filter::<1>(w, &ph, &v, pnew, steady_tol, c),
            2 => arma_filter::<2>(w, &ph, &v, pnew, steady_tol, c),
            3 => arma_filter::<3>(w, &ph, &v, pnew, steady_tol, c),
            4 => arma_filter::<4>(w, &ph, &v, pnew, steady_tol, c),
            5 => arma_filter::<5>(w, &ph, &v, pnew, steady_tol, c),
            _ => arma_filter::<MAX_R>(w, &ph, &v, pnew, steady_tol, c),
        })
    })
}

/// The gain sequence of the last [`arma_filter`] run, per thread: it depends
/// on the coefficients only, so a run with the same `(phi, theta)` on other
/// data (a finite-difference step in the mean) replays it instead of
/// updating the covariance (the same operations on the data, bit-identical).
struct GainSeq {
    /// Bits of phi, theta (padded), r and the steady tolerance.
    key: [u64; 2 * MAX_R + 2],
    /// Prediction variance and Kalman gain of each step until steady.
    gain: Vec<f64>,
    kg: Vec<[f64; MAX_R]>,
    /// Step after which the gain was held fixed.
    steady_at: Option<usize>,
}

thread_local! {
    static GAINS: std::cell::RefCell<GainSeq> = const {
        std::cell::RefCell::new(GainSeq {
            key: [u64::MAX; 2 * MAX_R + 2],
            gain: Vec::new(),
            kg: Vec::new(),
            steady_at: None,
        })
    };
}

/// [`arma_filter`] with the recorded gains of `seq` (which covers `w`).
///
/// Its data pass repeats [`arma_filter`]'s on purpose. Running a fresh
/// likelihood as a gain pass followed by this one removes the copy, but
/// the worst bench series then took 193-197 us per update against
/// 187 us fused (`ARIMA_BENCH_SUMMARY_ONLY=1 cargo bench -p forecaster
/// --bench arima`, 2026-11-29): the fused loop overlaps the covariance
/// recursion with the data pass.
fn arma_replay<const R: usize>(w: &[f64], ph: &[f64; MAX_R], seq: &GainSeq) -> LikeSums {
    let mut a = [0.0; S];
    let mut anew = [0.0; S];
    let mut kg = [0.0; MAX_R];
    let mut ssq = 0.0;
    let mut logs = LogGainSum::new();
    let mut nu = 0usize;
    let mut gain = 1.0;
    for (l, &wl) in w.iter().enumerate() {
        for i in 0..R {
            anew[i] = ph[i] * a[0] + a[i + 1];
        }
        let steady = seq.steady_at.is_some_and(|s| l > s);
        if !steady {
            gain = seq.gain[l];
            kg = seq.kg[l];
        }
        let resid = wl - anew[0];
        if gain < 1e4 {
            nu += 1;
            ssq += resid * resid / gain;
            logs.add(gain, steady);
        }
        for i in 0..R {
            a[i] = anew[i] + kg[i] * resid;
        }
    }
    LikeSums {
        ssq,
        sumlog: logs.total(),
        nu,
    }
}

/// Row stride of [`arma_filter`]'s matrices, with a zero row/column at r.
const S: usize = MAX_R + 1;

/// The filter loop of [`arma_likelihood`] for state dimension `R` (a
/// compile-time constant so that the small loops unroll), from the initial
/// covariance `pnew`.
fn arma_filter<const R: usize>(
    w: &[f64],
    ph: &[f64; MAX_R],
    v: &[f64; MAX_R],
    mut pnew: [f64; S * S],
    steady_tol: f64,
    seq: &mut GainSeq,
) -> LikeSums {
    let mut pm = [0.0; S * S];
    let mut a = [0.0; S];
    let mut anew = [0.0; S];
    let mut kg = [0.0; MAX_R];
    let mut ssq = 0.0;
    let mut logs = LogGainSum::new();
    let mut nu = 0usize;
    let mut gain = 1.0;
    let mut steady = false;
    for (l, &wl) in w.iter().enumerate() {
        // predict: anew = T a (a[R] is a permanent 0)
        for i in 0..R {
            anew[i] = ph[i] * a[0] + a[i + 1];
        }
        if !steady {
            if l > 0 {
                // pnew = T P T' + R R' over the upper triangle (row/column
                // R of pm are zeros)
                let p00 = pm[0];
                for i in 0..R {
                    let pi = ph[i];
                    for j in i..R {
                        let pj = ph[j];
                        let val = pi * pj * p00
                            + pi * pm[j + 1]
                            + pj * pm[(i + 1) * S]
                            + pm[(i + 1) * S + j + 1]
                            + v[i] * v[j];
                        pnew[i * S + j] = val;
                        pnew[j * S + i] = val;
                    }
                }
            }
            gain = pnew[0];
            for i in 0..R {
                kg[i] = pnew[i * S] / gain;
            }
            seq.gain.push(gain);
            seq.kg.push(kg);
        }
        let resid = wl - anew[0];
        if gain < 1e4 {
            nu += 1;
            ssq += resid * resid / gain;
            logs.add(gain, steady);
        }
        for i in 0..R {
            a[i] = anew[i] + kg[i] * resid;
        }
        if !steady {
            let mut change: f64 = 0.0;
            let mut size: f64 = 0.0;
            for i in 0..R {
                let mi = pnew[i * S];
                for j in i..R {
                    let val = pnew[i * S + j] - mi * pnew[j * S] / gain;
                    change = change.max((val - pm[i * S + j]).abs());
                    size = size.max(val.abs());
                    pm[i * S + j] = val;
                    pm[j * S + i] = val;
                }
            }
            if l > 0 && change <= steady_tol * size.max(1.0) {
                steady = true;
                seq.steady_at = Some(l);
            }
        }
    }
    LikeSums {
        ssq,
        sumlog: logs.total(),
        nu,
    }
}

/// Psi weights psi_0..psi_{h-1} of the integrated model
/// `phi(B) (1 - B)^d y_t = theta(B) e_t`: the k-step forecast error variance
/// is `sigma2 * sum_{j<k} psi_j^2` (thesis 4.2.1).
pub fn psi_weights(phi: &[f64], theta: &[f64], d: usize, h: usize) -> Vec<f64> {
    // full AR polynomial phi*(B) = phi(B) (1 - B)^d, as coefficients of
    // y_t = sum phistar_i y_{t-i} + ...
    // poly of 1 - sum phi_i B^i
    let mut poly = vec![1.0];
    poly.extend(phi.iter().map(|c| -c));
    for _ in 0..d {
        let mut next = vec![0.0; poly.len() + 1];
        for (i, c) in poly.iter().enumerate() {
            next[i] += c;
            next[i + 1] -= c;
        }
        poly = next;
    }
    let phistar: Vec<f64> = poly[1..].iter().map(|c| -c).collect();
    let mut psi = vec![0.0; h];
    for j in 0..h {
        let mut v = if j == 0 {
            1.0
        } else if j <= theta.len() {
            theta[j - 1]
        } else {
            0.0
        };
        for (i, c) in phistar.iter().enumerate() {
            let lag = i + 1;
            if lag <= j {
                v += c * psi[j - lag];
            }
        }
        psi[j] = v;
    }
    psi
}

/// Sum of `ln(gain)` over the filter's steps, taken as the log of a running
/// product (flushed before it can overflow; gains are in (0, 1e4)), and as
/// one cached log once the filter has reached its steady state.
#[derive(Clone, Copy, Debug)]
struct LogGainSum {
    sum: f64,
    prod: f64,
    steady_ln: f64,
}

impl LogGainSum {
    fn new() -> Self {
        Self {
            sum: 0.0,
            prod: 1.0,
            steady_ln: f64::NAN,
        }
    }

    #[inline]
    fn add(&mut self, gain: f64, steady: bool) {
        if steady {
            if self.steady_ln.is_nan() {
                self.steady_ln = gain.ln();
            }
            self.sum += self.steady_ln;
        } else {
            self.prod *= gain;
            if !(1e-200..=1e200).contains(&self.prod) {
                self.sum += self.prod.ln();
                self.prod = 1.0;
            }
        }
    }

    fn total(self) -> f64 {
        self.sum + self.prod.ln()
    }
}

#[cfg(test)]
mod tests;

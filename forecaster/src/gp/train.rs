//! The GP's training set: the pairwise squared time and history distances
//! of its inputs, and a query's distances to them.

use super::simd::{self, simd_op};

/// Squared time and history distances of a query to each training input,
/// into `dt2` and `dh2` (cleared first), row by row: the reference that
/// [`hankel_query_distances`] is checked against.
#[cfg(test)]
pub(super) fn query_distances(
    x: &[f64],
    dim: usize,
    q: &[f64],
    dt2: &mut Vec<f64>,
    dh2: &mut Vec<f64>,
) {
    dt2.clear();
    dh2.clear();
    for row in x.chunks_exact(dim) {
        let t = row[0] - q[0];
        dt2.push(t * t);
        dh2.push(
            row[1..]
                .iter()
                .zip(&q[1..])
                .map(|(a, b)| (a - b) * (a - b))
                .sum(),
        );
    }
}

/// Squared time and history distances of a query `q` (time, then
/// history) to each training input (the row-by-row sums of
/// `query_distances`) for inputs with time column `t` whose history
/// columns are a Hankel matrix of `xw` (row `r`'s history is
/// `xw[r..r + q.len() - 1]`, as [`super::Patterns`] builds them): the same
/// sums in the same order, run over all rows at once (contiguous columns,
/// which vectorise).
#[inline(always)]
pub fn hankel_query_distances(
    t: &[f64],
    xw: &[f64],
    q: &[f64],
    dt2: &mut Vec<f64>,
    dh2: &mut Vec<f64>,
) {
    let n = t.len();
    dt2.clear();
    dt2.extend(t.iter().map(|&tr| {
        let d = tr - q[0];
        d * d
    }));
    dh2.clear();
    dh2.resize(n, 0.0);
    for (c, &qc) in q.iter().enumerate().skip(1) {
        for (s, &a) in dh2.iter_mut().zip(&xw[c - 1..]) {
            let u = a - qc;
            *s += u * u;
        }
    }
}

/// A training set: pairwise squared time and history distances of the
/// (scaled) inputs and the (standardised) targets.
#[derive(Clone, Debug, Default)]
pub struct TrainSet {
    /// Number of training points.
    pub n: usize,
    /// Row-major `n x n` squared time distances.
    pub dt2: Vec<f64>,
    /// Row-major `n x n` squared history distances.
    pub dh2: Vec<f64>,
    /// Targets.
    pub y: Vec<f64>,
}

impl TrainSet {
    /// Builds the distance matrices of row-major inputs `x` (`n` rows of
    /// `d`, column 0 = time).
    pub fn new(x: &[f64], d: usize, y: &[f64]) -> Self {
        let mut ts = Self::default();
        ts.rebuild(x, d, y);
        ts
    }

    /// [`TrainSet::new`] into these buffers (no allocation once they have
    /// grown to the training set's size).
    pub fn rebuild(&mut self, x: &[f64], d: usize, y: &[f64]) {
        let n = y.len();
        self.n = n;
        self.y.clear();
        self.y.extend_from_slice(y);
        for b in [&mut self.dt2, &mut self.dh2] {
            b.clear();
            b.resize(n * n, 0.0);
        }
        let (dt2, dh2) = (&mut self.dt2, &mut self.dh2);
        for i in 0..n {
            let xi = &x[i * d..(i + 1) * d];
            for j in 0..i {
                let xj = &x[j * d..(j + 1) * d];
                let t = xi[0] - xj[0];
                let mut s = 0.0;
                for (a, b) in xi[1..].iter().zip(&xj[1..]) {
                    let u = a - b;
                    s += u * u;
                }
                dt2[i * n + j] = t * t;
                dt2[j * n + i] = t * t;
                dh2[i * n + j] = s;
                dh2[j * n + i] = s;
            }
        }
    }

    /// [`TrainSet::rebuild`] from patterns, whose history columns are a
    /// Hankel matrix of their scaled window ([`super::Patterns::xw`]): the
    /// same sums in the same order, run over all earlier rows of a row at
    /// once (contiguous, so they vectorise).
    pub fn rebuild_patterns(&mut self, p: &super::Patterns) {
        simd::dispatch(RebuildPatterns { ts: self, p })
    }

    /// [`TrainSet::rebuild_patterns`] on the baseline instruction set
    /// (tests).
    #[cfg(test)]
    pub(super) fn rebuild_patterns_scalar(&mut self, p: &super::Patterns) {
        simd::scalar(RebuildPatterns { ts: self, p })
    }

    #[inline(always)]
    fn rebuild_patterns_at(&mut self, p: &super::Patterns) {
        let (n, d, xw) = (p.y.len(), p.dim, &p.xw[..]);
        self.n = n;
        self.y.clear();
        self.y.extend_from_slice(&p.y);
        for b in [&mut self.dt2, &mut self.dh2] {
            b.clear();
            b.resize(n * n, 0.0);
        }
        let (dt2, dh2) = (&mut self.dt2, &mut self.dh2);
        for i in 0..n {
            let row = &mut dh2[i * n..i * n + i];
            for (c, &a) in xw[i..i + d - 1].iter().enumerate() {
                for (s, &b) in row.iter_mut().zip(&xw[c..c + i]) {
                    let u = a - b;
                    *s += u * u;
                }
            }
            let ti = p.t[i];
            for j in 0..i {
                let t = ti - p.t[j];
                dt2[i * n + j] = t * t;
                dt2[j * n + i] = t * t;
                dh2[j * n + i] = dh2[i * n + j];
            }
        }
    }

    fn median_of(&self, f: impl Fn(usize) -> f64) -> f64 {
        let mut v: Vec<f64> = Vec::with_capacity(self.n * self.n / 2);
        for i in 0..self.n {
            for j in 0..i {
                let r = f(i * self.n + j).sqrt();
                if r > 0.0 && r.is_finite() {
                    v.push(r);
                }
            }
        }
        if v.is_empty() {
            return 1.0;
        }
        let mid = v.len() / 2;
        let (_, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
        *m
    }

    /// Median nonzero time distance (1 when none).
    pub fn median_time_distance(&self) -> f64 {
        self.median_of(|k| self.dt2[k])
    }

    /// Median nonzero history distance (1 when none).
    pub fn median_history_distance(&self) -> f64 {
        self.median_of(|k| self.dh2[k])
    }

    /// Median nonzero full (unscaled) distance (1 when none).
    pub fn median_distance(&self) -> f64 {
        self.median_of(|k| self.dt2[k] + self.dh2[k])
    }
}

// The Hankel rebuild, compiled for every instruction set ([`simd`]).
simd_op!(struct RebuildPatterns<'t, 'p> { ts: &'t mut TrainSet, p: &'p super::Patterns } -> () {
    ts.rebuild_patterns_at(p)
});

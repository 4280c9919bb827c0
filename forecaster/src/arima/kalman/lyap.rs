//! Unconditional covariance of the stationary ARMA state: the discrete
//! Lyapunov equation `P = T P T' + R R'` over the upper triangle, solved by
//! Gaussian elimination with partial pivoting.
//!
//! The matrix of that system depends on the AR coefficients only (the MA
//! part enters the right-hand side), so its factorisation is kept per
//! thread for the last `(r, phi)`: the finite-difference gradient steps in
//! the MA coefficients and the mean of an ARMA likelihood reuse it. The
//! factorisation and the solve do the same floating-point operations, in
//! the same order, as one elimination of the augmented system, so results
//! are identical with or without the cache.

use super::MAX_R;
use std::cell::RefCell;

/// Largest number of unknowns, r (r + 1) / 2.
const NV: usize = MAX_R * (MAX_R + 1) / 2;

/// LU factors of the system for one `(r, phi)`: multipliers below the
/// diagonal (in the row positions they had when computed), `U` on and above
/// it, and the pivot row chosen at each step.
struct Factor {
    r: usize,
    phi_bits: [u64; MAX_R],
    /// False when the system is singular (a unit-root AR part).
    ok: bool,
    a: [[f64; NV]; NV],
    piv: [usize; NV],
}

thread_local! {
    static LAST: RefCell<Option<Box<Factor>>> = const { RefCell::new(None) };
}

/// Index of (i, j) in the upper triangle, row by row.
#[inline]
fn pos(r: usize, i: usize, j: usize) -> usize {
    let (i, j) = if i <= j { (i, j) } else { (j, i) };
    i * r - i * i.saturating_sub(1) / 2 + j - i
}

/// Unconditional covariance of the stationary ARMA state (r x r, row major):
/// solves `P = T P T' + R R'` over the upper triangle by Gaussian
/// elimination. `theta` has length `r - 1` (zero padded). `None` when the
/// system is singular (unit-root AR) or the result is not finite.
pub(crate) fn stationary_cov(phi: &[f64], theta: &[f64], r: usize) -> Option<[f64; MAX_R * MAX_R]> {
    let mut ph = [0.0; MAX_R];
    for (i, v) in phi.iter().enumerate().take(r) {
        ph[i] = *v;
    }
    let mut phi_bits = [0u64; MAX_R];
    for i in 0..MAX_R {
        phi_bits[i] = ph[i].to_bits();
    }
    // phi entries beyond r do not enter the system (as in the reference)
    let nvar = r * (r + 1) / 2;
    let rv = |i: usize| {
        if i == 0 {
            1.0
        } else {
            theta.get(i - 1).copied().unwrap_or(0.0)
        }
    };
    let mut rhs = [0.0; NV];
    for i in 0..r {
        for j in i..r {
            rhs[pos(r, i, j)] = rv(i) * rv(j);
        }
    }
    let x = LAST.with(|cell| {
        let mut slot = cell.borrow_mut();
        let hit = matches!(slot.as_deref(), Some(f) if f.r == r && f.phi_bits == phi_bits);
        if !hit {
            let f = slot.get_or_insert_with(|| {
                Box::new(Factor {
                    r: 0,
                    phi_bits: [0; MAX_R],
                    ok: false,
                    a: [[0.0; NV]; NV],
                    piv: [0; NV],
                })
            });
            f.r = r;
            f.phi_bits = phi_bits;
            build(&ph, r, &mut f.a);
            f.ok = match nvar {
                1 => factor::<1>(&mut f.a, &mut f.piv),
                3 => factor::<3>(&mut f.a, &mut f.piv),
                6 => factor::<6>(&mut f.a, &mut f.piv),
                10 => factor::<10>(&mut f.a, &mut f.piv),
                15 => factor::<15>(&mut f.a, &mut f.piv),
                _ => factor::<NV>(&mut f.a, &mut f.piv),
            };
        }
        let f = slot.as_deref().expect("factor just stored");
        if !f.ok {
            return None;
        }
        Some(match nvar {
            1 => solve::<1>(&f.a, &f.piv, rhs),
            3 => solve::<3>(&f.a, &f.piv, rhs),
            6 => solve::<6>(&f.a, &f.piv, rhs),
            10 => solve::<10>(&f.a, &f.piv, rhs),
            15 => solve::<15>(&f.a, &f.piv, rhs),
            _ => solve::<NV>(&f.a, &f.piv, rhs),
        })
    })?;
    let mut out = [0.0; MAX_R * MAX_R];
    for i in 0..r {
        for j in 0..r {
            out[i * r + j] = x[pos(r, i, j)];
        }
    }
    if out[..r * r].iter().all(|v| v.is_finite()) && out[0] > 0.0 {
        Some(out)
    } else {
        None
    }
}

/// The system matrix `I - (T (.) T')` over the upper triangle.
fn build(ph: &[f64; MAX_R], r: usize, a: &mut [[f64; NV]; NV]) {
    *a = [[0.0; NV]; NV];
    for i in 0..r {
        for j in i..r {
            let row = &mut a[pos(r, i, j)];
            row[pos(r, i, j)] += 1.0;
            // (T P T')_{ij} = phi_i phi_j P00 + phi_i P[0][j+1] + phi_j P[i+1][0] + P[i+1][j+1]
            let (pi, pj) = (ph[i], ph[j]);
            if pi != 0.0 && pj != 0.0 {
                row[pos(r, 0, 0)] -= pi * pj;
            }
            if pi != 0.0 && j + 1 < r {
                row[pos(r, 0, j + 1)] -= pi;
            }
            if pj != 0.0 && i + 1 < r {
                row[pos(r, i + 1, 0)] -= pj;
            }
            if i + 1 < r && j + 1 < r {
                row[pos(r, i + 1, j + 1)] -= 1.0;
            }
        }
    }
}

/// In-place LU with partial pivoting of the leading `N x N` block. Rows are
/// swapped from the pivot column on, so each multiplier stays where it was
/// computed. False when a pivot is below 1e-12 (singular).
fn factor<const N: usize>(a: &mut [[f64; NV]; NV], piv: &mut [usize; NV]) -> bool {
    for col in 0..N {
        let mut best = col;
        let mut bv = a[col][col].abs();
        for (row, ar) in a.iter().enumerate().take(N).skip(col + 1) {
            let v = ar[col].abs();
            if v > bv {
                bv = v;
                best = row;
            }
        }
        if !(bv > 1e-12) {
            return false;
        }
        piv[col] = best;
        if best != col {
            let (top, bottom) = a.split_at_mut(best);
            top[col][col..N].swap_with_slice(&mut bottom[0][col..N]);
        }
        let pivrow = a[col];
        let p = pivrow[col];
        for row in a.iter_mut().take(N).skip(col + 1) {
            let f = row[col] / p;
            row[col] = f;
            if f != 0.0 {
                for c in (col + 1)..N {
                    row[c] -= f * pivrow[c];
                }
            }
        }
    }
    true
}

/// Solves with the factors of [`factor`]: the same operations on `rhs` as
/// the elimination of the augmented system, then back substitution.
fn solve<const N: usize>(a: &[[f64; NV]; NV], piv: &[usize; NV], mut rhs: [f64; NV]) -> [f64; NV] {
    for col in 0..N {
        rhs.swap(col, piv[col]);
        let b = rhs[col];
        for row in (col + 1)..N {
            let f = a[row][col];
            if f != 0.0 {
                rhs[row] -= f * b;
            }
        }
    }
    let mut x = [0.0; NV];
    for row in (0..N).rev() {
        let mut s = rhs[row];
        for c in (row + 1)..N {
            s -= a[row][c] * x[c];
        }
        x[row] = s / a[row][row];
    }
    x
}

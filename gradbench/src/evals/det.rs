//! det: the determinant of an ℓ × ℓ matrix A by expansion by minors along the first row,
//! det M = Σⱼ (−1)ʲ M₀ⱼ det S₀ⱼ (S₀ⱼ: M without row 0 and column j), recursively, and its
//! gradient ∂ det A/∂Aᵢⱼ = (−1)ⁱ⁺ʲ det A₍ᵢⱼ₎ (the cofactors), from the pullback of the
//! recursion below.
//!
//! The recursion is the C++ reference's, except that it stops at 3 × 3 minors, whose two last
//! levels (`det3`) are one loop with the same products and sums. Each call of a function
//! with a slice parameter gives that slice's whole tangent back (a `Vec` of ℓ² per call), and
//! a recursive function's pullback is boxed, so the calls are what the gradient pays for:
//! stopping at 3 × 3 divides their number by about 6 against 1 × 1 minors (at ℓ = 11, 8 M
//! calls instead of 108 M, whose tapes would not fit in memory).

use super::{Input, Module, timed};
use adjoint::prelude::*;
use serde::Deserialize;

/// The eval's input: the matrix `A`, row-major, and its edge `ell`.
#[derive(Deserialize)]
pub struct Det {
    /// The ℓ² entries of A, row by row.
    #[serde(rename = "A")]
    pub a: Vec<f64>,
    /// The edge ℓ, at least 1.
    pub ell: usize,
}

impl Input for Det {
    fn check(&self) -> Result<(), String> {
        if self.ell == 0 {
            Err("`ell` is 0; the determinant needs a matrix of at least 1 × 1".into())
        } else if self.a.len() != self.ell * self.ell {
            Err(format!(
                "`A` has {} entries where `ell` = {} needs ell² = {}",
                self.a.len(),
                self.ell,
                self.ell * self.ell
            ))
        } else {
            Ok(())
        }
    }
}

/// The determinant of the m × m minor of the n × n matrix `a` whose rows and columns are
/// listed by `r` and `c`, computed as the C++ reference does: `r[n]` is the minor's first
/// row and `r[i]` the row after row i (likewise `c` for columns), so that removing a row or
/// column is one link changed, and restored after the recursive call.
#[differentiable]
fn det_of_minor(
    a: &[f64],
    n: usize,
    m: usize,
    #[no_derivative] r: &mut [usize],
    #[no_derivative] c: &mut [usize],
) -> f64 {
    let r0 = r[n];
    let mut cj = c[n];
    if m == 1 {
        a[r0 * n + cj]
    } else if m == 3 {
        let (r1, c1) = (r[r0], c[cj]);
        let (r2, c2) = (r[r1], c[c1]);
        let (i0, i1, i2) = (r0 * n, r1 * n, r2 * n);
        det3([
            a[i0 + cj],
            a[i0 + c1],
            a[i0 + c2],
            a[i1 + cj],
            a[i1 + c1],
            a[i1 + c2],
            a[i2 + cj],
            a[i2 + c1],
            a[i2 + c2],
        ])
    } else {
        let mut det = 0.0;
        let mut positive = true;
        r[n] = r[r0];
        let mut cj1 = n;
        for _ in 0..m {
            let m0j = a[r0 * n + cj];
            c[cj1] = c[cj];
            let det_s = det_of_minor(a, n, m - 1, r, c);
            c[cj1] = cj;
            if positive {
                det += m0j * det_s;
            } else {
                det -= m0j * det_s;
            }
            cj1 = cj;
            cj = c[cj];
            positive = !positive;
        }
        r[n] = r0;
        det
    }
}

/// The columns of the 2 × 2 minor left when column j of a 3 × 3 matrix is removed, in order,
/// and the sign of its term.
const OTHERS: [(usize, usize, f64); 3] = [(1, 2, 1.0), (0, 2, -1.0), (0, 1, 1.0)];

/// The determinant of a 3 × 3 matrix `m` (row-major): the last two levels of
/// [`det_of_minor`]'s expansion in one loop, Σⱼ ±m₀ⱼ (m₁ₚ m₂ᵩ − m₁ᵩ m₂ₚ), with the products and
/// sums of the recursion in the same order (so the same value to the last bit).
#[differentiable]
fn det3(m: [f64; 9]) -> f64 {
    let mut det = 0.0;
    for j in 0..3 {
        let (p, q, sign) = OTHERS[j];
        let minor = m[3 + p] * m[6 + q] - m[3 + q] * m[6 + p];
        det += sign * (m[j] * minor);
    }
    det
}

/// det A for the ℓ × ℓ matrix `a` (row-major), by `det_of_minor` on the whole matrix.
#[differentiable]
pub fn det(a: &[f64], ell: usize) -> f64 {
    let mut r: Vec<usize> = (1..=ell).chain([0]).collect();
    let mut c: Vec<usize> = (1..=ell).chain([0]).collect();
    det_of_minor(a, ell, ell, &mut r, &mut c)
}

/// `primal` = det A, `gradient` = ∇ det A (row-major) from `det`'s pullback.
pub const MODULE: Module = Module {
    name: "det",
    functions: &[
        ("primal", |input| timed(input, |i: &Det| det(&i.a, i.ell))),
        ("gradient", |input| {
            timed(input, |i: &Det| -> Vec<f64> {
                gradient(det_vjp(&i.a, i.ell))
            })
        }),
    ],
};

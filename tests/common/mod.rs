//! Shared gradient checking for the integration tests: central finite differences in `f64`,
//! compared with the pullbacks that `#[differentiable]` generates.
//!
//! Inputs and outputs are [`Vector`]s: `f64` and (nested) tuples of them, so that a function
//! of 1..4 scalars, a tuple parameter or a method's `(Self::Tangent, x)` are all checked the
//! same way, one coordinate at a time.
//!
//! # Tolerance
//! The central difference `(f(x + h) - f(x - h)) / 2h` with `h = STEP · max(1, |x|)` has a
//! truncation error of about `h² |f'''| / 6 ≈ 1e-12 |f'''|` and a rounding error of about
//! `ε |f| / h ≈ 2e-10 |f|`. The check allows `TOL · (1 + |analytic|)` with `TOL = 1e-6`, more
//! than 1000 times both for the well-scaled points the tests use, plus the rounding term
//! `8 ε |f| / h` explicitly so that large values of `f` do not need a looser `TOL`.

// Each test binary uses its own subset of the helpers.
#![allow(dead_code, unused_macros)]

pub mod affine1;
pub mod layers;
pub mod tensors;

use std::fmt::Debug;

/// Relative step of the central differences.
pub const STEP: f64 = 1e-6;
/// Relative and absolute tolerance of the finite-difference check (see the module docs).
pub const TOL: f64 = 1e-6;
/// Tolerance between a generated gradient and the same derivative written by hand: both are
/// the same formula evaluated in a possibly different order, so only rounding differs.
pub const EXACT_TOL: f64 = 1e-12;
/// Tolerance between an `f32` gradient and the `f64` one: a few dozen roundings at
/// `f32::EPSILON ≈ 1.2e-7`.
pub const F32_TOL: f64 = 1e-5;

/// A point of `Rⁿ` made of `f64`s: a scalar or a (nested) tuple of them.
pub trait Vector: Copy + Debug {
    /// The number of scalar coordinates.
    const DIM: usize;
    /// Coordinate `i`, counting the leaves left to right.
    fn get(&self, i: usize) -> f64;
    /// Sets coordinate `i`.
    fn set(&mut self, i: usize, value: f64);
}

impl Vector for f64 {
    const DIM: usize = 1;
    fn get(&self, i: usize) -> f64 {
        assert_eq!(i, 0);
        *self
    }
    fn set(&mut self, i: usize, value: f64) {
        assert_eq!(i, 0);
        *self = value;
    }
}

macro_rules! tuple_vector {
    ($(($($t:ident $idx:tt),+))*) => {$(
        impl<$($t: Vector),+> Vector for ($($t,)+) {
            const DIM: usize = 0 $(+ $t::DIM)+;
            // The last `i -= ..` of the chain is never read.
            #[allow(unused_assignments)]
            fn get(&self, mut i: usize) -> f64 {
                $(
                    if i < $t::DIM {
                        return self.$idx.get(i);
                    }
                    i -= $t::DIM;
                )+
                panic!("coordinate out of range")
            }
            #[allow(unused_assignments)]
            fn set(&mut self, mut i: usize, value: f64) {
                $(
                    if i < $t::DIM {
                        self.$idx.set(i, value);
                        return;
                    }
                    i -= $t::DIM;
                )+
                panic!("coordinate out of range")
            }
        }
    )*};
}

tuple_vector! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
}

/// Arrays (and nested arrays) of coordinates are points too, so that `check!` and the helpers
/// of `common` take array parameters and gradients.
impl<V: Vector, const N: usize> Vector for [V; N] {
    const DIM: usize = N * V::DIM;
    fn get(&self, i: usize) -> f64 {
        self[i / V::DIM].get(i % V::DIM)
    }
    fn set(&mut self, i: usize, value: f64) {
        self[i / V::DIM].set(i % V::DIM, value);
    }
}

/// A `Vec` tangent as an array: a `Vec` tangent may be shorter than its value (the zero
/// tangent is the empty vector); the missing coordinates are zeros.
pub fn padded<const N: usize>(v: &[f64]) -> [f64; N] {
    assert!(v.len() <= N, "tangent of length {} for {N} values", v.len());
    std::array::from_fn(|i| v.get(i).copied().unwrap_or(0.0))
}

/// Checks the gradient of a function of a `Vec<f64>` against `want` and finite differences.
pub fn check_vec<const N: usize>(
    name: &str,
    f: impl Fn(Vec<f64>) -> f64,
    at: [f64; N],
    got: &[f64],
    want: [f64; N],
) {
    let got = padded::<N>(got);
    assert_close(name, got, want);
    check_gradient(name, |a: [f64; N]| f(a.to_vec()), at, got);
}

fn coords<V: Vector>(v: &V) -> Vec<f64> {
    (0..V::DIM).map(|i| v.get(i)).collect()
}

/// Checks a vector-Jacobian product by finite differences: for every input coordinate `i`,
/// `<J eᵢ, w> = <eᵢ, Jᵀ w>` where `vjp = Jᵀ w` is what the pullback returned for the seed `w`.
pub fn check_vjp<A: Vector, B: Vector>(name: &str, f: impl Fn(A) -> B, at: A, seed: B, vjp: A) {
    for i in 0..A::DIM {
        let x = at.get(i);
        let h = STEP * x.abs().max(1.0);
        let (mut plus, mut minus) = (at, at);
        plus.set(i, x + h);
        minus.set(i, x - h);
        // The step actually taken, after rounding `x ± h`.
        let width = plus.get(i) - minus.get(i);
        let (fp, fm) = (f(plus), f(minus));
        let mut directional = 0.0;
        let mut magnitude = 0.0;
        for j in 0..B::DIM {
            let w = seed.get(j);
            directional += w * (fp.get(j) - fm.get(j));
            magnitude += w.abs() * fp.get(j).abs().max(fm.get(j).abs());
        }
        let fd = directional / width;
        let analytic = vjp.get(i);
        let tol = TOL * (1.0 + analytic.abs()) + 8.0 * f64::EPSILON * magnitude / width;
        assert!(
            analytic.is_finite() && fd.is_finite() && (fd - analytic).abs() <= tol,
            "{name}: coordinate {i} at {at:?} (seed {seed:?}): pullback gives {analytic}, \
             finite differences {fd} (tolerance {tol:e})"
        );
    }
}

/// Checks the gradient of a scalar function by finite differences.
pub fn check_gradient<A: Vector>(name: &str, f: impl Fn(A) -> f64, at: A, grad: A) {
    check_vjp(name, f, at, 1.0, grad);
}

/// Asserts that a generated gradient equals the hand-computed one up to rounding
/// ([`EXACT_TOL`], relative to `max(1, |want|)`).
pub fn assert_close<V: Vector>(name: &str, got: V, want: V) {
    assert_within(name, &coords(&got), &coords(&want), EXACT_TOL);
}

/// Asserts that an `f32` result agrees with the `f64` one to [`F32_TOL`].
pub fn assert_close_f32(name: &str, got: f32, want: f64) {
    assert_within(name, &[f64::from(got)], &[want], F32_TOL);
}

fn assert_within(name: &str, got: &[f64], want: &[f64], tol: f64) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{name}: coordinate {i}: got {g}, expected {w} (got {got:?}, expected {want:?})"
        );
    }
}

/// `check!(f, f_vjp; x, y => (dx, dy))`: the gradient of the scalar function `f` at `(x, y)`
/// is `(dx, dy)` up to rounding, and agrees with finite differences. 1 to 4 arguments; `f` and
/// `f_vjp` may be paths or closures.
macro_rules! check {
    ($f:expr, $vjp:expr; $a:expr => $want:expr) => {{
        let at = $a;
        let got = ::adjoint::gradient($vjp(at));
        $crate::common::assert_close(stringify!($f), got, $want);
        $crate::common::check_gradient(stringify!($f), |a| $f(a), at, got);
    }};
    ($f:expr, $vjp:expr; $a:expr, $b:expr => $want:expr) => {{
        let at = ($a, $b);
        let got = ::adjoint::gradient($vjp(at.0, at.1));
        $crate::common::assert_close(stringify!($f), got, $want);
        $crate::common::check_gradient(stringify!($f), |(a, b)| $f(a, b), at, got);
    }};
    ($f:expr, $vjp:expr; $a:expr, $b:expr, $c:expr => $want:expr) => {{
        let at = ($a, $b, $c);
        let got = ::adjoint::gradient($vjp(at.0, at.1, at.2));
        $crate::common::assert_close(stringify!($f), got, $want);
        $crate::common::check_gradient(stringify!($f), |(a, b, c)| $f(a, b, c), at, got);
    }};
    ($f:expr, $vjp:expr; $a:expr, $b:expr, $c:expr, $d:expr => $want:expr) => {{
        let at = ($a, $b, $c, $d);
        let got = ::adjoint::gradient($vjp(at.0, at.1, at.2, at.3));
        $crate::common::assert_close(stringify!($f), got, $want);
        $crate::common::check_gradient(stringify!($f), |(a, b, c, d)| $f(a, b, c, d), at, got);
    }};
}
#[allow(unused_imports)] // not every test binary uses it
pub(crate) use check;

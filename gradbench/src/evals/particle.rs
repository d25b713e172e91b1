//! particle: a charged particle starting at (0, 8) with velocity (0.75, 0) moves in the
//! potential p(x; w) = 1/|x − (10, 10 − w)| + 1/|x − (10, 0)| of two fixed charges, by naive
//! Euler steps of Δt = 0.1 with acceleration −∇ₓp, until it crosses the x axis; f(w) is the
//! square of the crossing's x coordinate (found by linear interpolation). The answer is the
//! argmin of f by gradient descent from the input w (`gd::argmin`), the algorithm of the
//! upstream tools (the kit's C++ reference holds only the potential).
//!
//! Nested AD: the Euler loop needs the inner gradient ∇ₓp, the descent the outer derivative
//! f′(w) through the whole loop, inner gradient included. The functions are named by the modes
//! (outer, inner):
//! - `ff`: f′ by dual numbers (`naive_euler::<Dual<f64>>`), ∇ₓp by two sweeps of the forward
//!   companion `accel_jvp` (forward-over-forward);
//! - `fr`: f′ by dual numbers, ∇ₓp by the pullback `accel_vjp` (forward-over-reverse);
//! - `rf`: f′ by the pullback of [`naive_euler_dual`], the Euler loop whose ∇ₓp is two dual
//!   sweeps of `accel` (`dual(..)` in, `dual_eps(..)` out), differentiated by the reverse macro
//!   through the dual operations (reverse-over-forward);
//! - `rr` is not supported: reverse-over-reverse would need the reverse macro to differentiate
//!   code that calls a pullback (`gradient(accel_vjp(..))`), and it cannot differentiate its
//!   own output ([`super::UNSUPPORTED`] has the message).

use super::{Input, Module, gd, timed};
use adjoint::prelude::*;
use serde::Deserialize;

/// The eval's input: the starting control parameter.
#[derive(Deserialize)]
pub struct Particle {
    /// The starting w.
    pub w: f64,
}

impl Input for Particle {
    fn check(&self) -> Result<(), String> {
        if self.w.is_finite() {
            Ok(())
        } else {
            Err(format!("`w` is {}; it must be finite", self.w))
        }
    }
}

/// p(x) = Σⱼ 1/|x − cⱼ| for the two charges cⱼ.
// By index: a loop over a range is replayed by the pullback, where `for c in &charges` would be
// taped (a heap tape per call; measured 7× slower on `fr`).
#[allow(clippy::needless_range_loop)]
#[differentiable(forward)]
pub fn accel<T: Float>(charges: [[T; 2]; 2], x: [T; 2]) -> T {
    let mut a = T::ZERO;
    for j in 0..2 {
        let dx = charges[j][0] - x[0];
        let dy = charges[j][1] - x[1];
        a += T::ONE / (dx * dx + dy * dy).sqrt();
    }
    a
}

/// ∇ₓp by the forward companion, one sweep per coordinate of x.
fn accel_gradient_forward<T: Float>(charges: [[T; 2]; 2], x: [T; 2]) -> [T; 2] {
    let none = [[T::ZERO; 2]; 2];
    let (_, gx) = accel_jvp(charges, x, none, [T::ONE, T::ZERO]);
    let (_, gy) = accel_jvp(charges, x, none, [T::ZERO, T::ONE]);
    [gx, gy]
}

/// ∇ₓp by the pullback.
fn accel_gradient_reverse<T: Float + UnitSeed>(charges: [[T; 2]; 2], x: [T; 2]) -> [T; 2] {
    let (_, gx) = gradient(accel_vjp(charges, x));
    gx
}

/// f(w): the Euler loop, with ∇ₓp from `inner`.
fn naive_euler<T: Float>(w: T, inner: impl Fn([[T; 2]; 2], [T; 2]) -> [T; 2]) -> T {
    let f = T::from_f64;
    let charges = [[f(10.0), f(10.0) - w], [f(10.0), f(0.0)]];
    let mut x = [f(0.0), f(8.0)];
    let mut xdot = [f(0.75), f(0.0)];
    let delta_t = f(1e-1);
    loop {
        let g = inner(charges, x);
        let xddot = [-g[0], -g[1]];
        x = [x[0] + delta_t * xdot[0], x[1] + delta_t * xdot[1]];
        if x[1] <= T::ZERO {
            let delta_t_f = -x[1] / xdot[1];
            let x_t_f = x[0] + delta_t_f * xdot[0];
            return x_t_f * x_t_f;
        }
        xdot = [xdot[0] + delta_t * xddot[0], xdot[1] + delta_t * xddot[1]];
    }
}

/// f(w) for `rf`, the Euler loop of `naive_euler` (same operations, same rounding) with
/// ∇ₓp by two sweeps of `accel` on dual numbers, written for the reverse macro: it leaves
/// the loop by `break` and does the interpolation after it.
#[differentiable]
pub fn naive_euler_dual(w: f64) -> f64 {
    let charges = [
        [dual(10.0, 0.0), dual(10.0 - w, 0.0)],
        [dual(10.0, 0.0), dual(0.0, 0.0)],
    ];
    let mut x = [0.0, 8.0];
    let mut xdot = [0.75, 0.0];
    let delta_t = 1e-1;
    loop {
        let gx = dual_eps(accel(charges, [dual(x[0], 1.0), dual(x[1], 0.0)]));
        let gy = dual_eps(accel(charges, [dual(x[0], 0.0), dual(x[1], 1.0)]));
        x = [x[0] + delta_t * xdot[0], x[1] + delta_t * xdot[1]];
        if x[1] <= 0.0 {
            break;
        }
        xdot = [xdot[0] + delta_t * -gx, xdot[1] + delta_t * -gy];
    }
    let delta_t_f = -x[1] / xdot[1];
    let x_t_f = x[0] + delta_t_f * xdot[0];
    x_t_f * x_t_f
}

/// `rf`: the argmin of f from `w0`, f′ by the pullback of [`naive_euler_dual`].
fn rf(w0: f64) -> f64 {
    gd::argmin(
        |w| naive_euler_dual(w[0]),
        |w| [gradient(naive_euler_dual_vjp(w[0]))],
        [w0],
    )[0]
}

/// `ff`: the argmin of f from `w0`, f′ by dual numbers, ∇ₓp by the forward companion.
fn ff(w0: f64) -> f64 {
    gd::argmin(
        |w| naive_euler(w[0], accel_gradient_forward),
        |w| [naive_euler(Dual::variable(w[0]), accel_gradient_forward).eps],
        [w0],
    )[0]
}

/// `fr`: the argmin of f from `w0`, f′ by dual numbers, ∇ₓp by the pullback.
fn fr(w0: f64) -> f64 {
    gd::argmin(
        |w| naive_euler(w[0], accel_gradient_reverse),
        |w| [naive_euler(Dual::variable(w[0]), accel_gradient_reverse).eps],
        [w0],
    )[0]
}

/// `ff`, `fr` (outer forward mode by dual numbers, inner forward / reverse by the
/// companions) and `rf` (outer reverse mode over inner dual sweeps).
pub const MODULE: Module = Module {
    name: "particle",
    functions: &[
        ("ff", |input| timed(input, |i: &Particle| ff(i.w))),
        ("fr", |input| timed(input, |i: &Particle| fr(i.w))),
        ("rf", |input| timed(input, |i: &Particle| rf(i.w))),
    ],
};

//! ode: the classical Runge-Kutta method (RK4) with s steps of size h = 2/s on [0, 2] for
//! y₀′ = x₀, yᵢ′ = xᵢ yᵢ₋₁ (i > 0), y(0) = 0, and the gradient of the last component of the
//! solution, ∂y_{n−1}(2)/∂x, from the pullback of the steps below.
//!
//! One step from y, with f(y)₀ = x₀ and f(y)ᵢ = xᵢ yᵢ₋₁:
//! k₁ = f(y), k₂ = f(y + h k₁/2), k₃ = f(y + h k₂/2), k₄ = f(y + h k₃),
//! y ← y + h (k₁ + 2k₂ + 2k₃ + k₄)/6.
//! For n ≤ 4 the method is exact (the augmented system is nilpotent of order ≤ 5), so its
//! gradient is the closed form of the `manual` tool, ∂y_{n−1}/∂xᵢ = y_{n−1}/xᵢ with
//! y_{n−1}(2) = Πᵢ xᵢ · 2ⁿ/n!.

use super::{Input, Module, timed};
use adjoint::prelude::*;
use serde::Deserialize;

/// The eval's input: the coefficients `x` and the number of steps `s`.
#[derive(Deserialize)]
pub struct Ode {
    /// The coefficients x₀, …, x_{n−1}, at least one.
    pub x: Vec<f64>,
    /// The number of Runge-Kutta steps, at least one.
    pub s: usize,
}

impl Input for Ode {
    fn check(&self) -> Result<(), String> {
        if self.x.is_empty() {
            Err("`x` is empty; the system needs at least one coefficient".into())
        } else if self.s == 0 {
            Err(format!(
                "`s` is 0 (with {} coefficients in `x`); Runge-Kutta needs at least one step",
                self.x.len()
            ))
        } else {
            Ok(())
        }
    }
}

/// y(2) by s RK4 steps, each value by the C++ reference's expression (so the same numbers to
/// the last bit), with each stage's f and the state it leads to in one loop
/// (`kᵢ = xᵢ tᵢ₋₁`, `t′ᵢ = yᵢ + h kᵢ/2`) instead of two, and the new state written to a second
/// buffer that is then swapped in, where the reference adds to y in place.
///
/// Both changes are for the pullback: a loop whose iterations write elements from values the
/// loop does not change is replayed backwards rather than taped, but keeps a copy of every
/// vector it reads (10 copies of n per step here, 15 with the reference's loops); an in-place
/// `y[i] += ..` reads what it writes, so it would be taped element by element.
#[differentiable]
pub fn ode(x: &[f64], s: usize) -> Vec<f64> {
    let n = x.len();
    let h = 2.0 / s as f64;
    let mut y = vec![0.0; n];
    let mut k1 = vec![0.0; n];
    let mut k2 = vec![0.0; n];
    let mut k3 = vec![0.0; n];
    let mut t1 = vec![0.0; n];
    let mut t2 = vec![0.0; n];
    let mut t3 = vec![0.0; n];
    let mut next = vec![0.0; n];
    for _ in 0..s {
        k1[0] = x[0];
        t1[0] = y[0] + h * x[0] / 2.0;
        for i in 1..n {
            let k = x[i] * y[i - 1];
            k1[i] = k;
            t1[i] = y[i] + h * k / 2.0;
        }
        k2[0] = x[0];
        t2[0] = y[0] + h * x[0] / 2.0;
        for i in 1..n {
            let k = x[i] * t1[i - 1];
            k2[i] = k;
            t2[i] = y[i] + h * k / 2.0;
        }
        k3[0] = x[0];
        t3[0] = y[0] + h * x[0];
        for i in 1..n {
            let k = x[i] * t2[i - 1];
            k3[i] = k;
            t3[i] = y[i] + h * k;
        }
        next[0] = y[0] + h * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + x[0]) / 6.0;
        for i in 1..n {
            let k4 = x[i] * t3[i - 1];
            next[i] = y[i] + h * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4) / 6.0;
        }
        std::mem::swap(&mut y, &mut next);
    }
    y
}

/// y_{n−1}(2), the component the eval differentiates.
#[differentiable]
pub fn ode_last(x: &[f64], s: usize) -> f64 {
    let y = ode(x, s);
    y[x.len() - 1]
}

/// `primal` = y(2), `gradient` = ∇ₓ y_{n−1}(2) from `ode_last`'s pullback.
pub const MODULE: Module = Module {
    name: "ode",
    functions: &[
        ("primal", |input| timed(input, |i: &Ode| ode(&i.x, i.s))),
        ("gradient", |input| {
            timed(input, |i: &Ode| -> Vec<f64> {
                gradient(ode_last_vjp(&i.x, i.s))
            })
        }),
    ],
};

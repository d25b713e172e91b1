//! saddle: the saddle point of f(x, y) = (x₁² + y₁²) − (x₂² + y₂²) over p₁ = (x₁, y₁) and
//! p₂ = (x₂, y₂) by nested gradient descent (`gd`) from the input s: first
//! p₁* = argmin over p₁ of maxₚ₂ f(p₁, p₂), the inner max by an argmax from s, then
//! p₂* = argmax over p₂ of f(p₁*, p₂) from s; the answer is (p₁*, p₂*). This is the algorithm of
//! the upstream tools (the kit's C++ reference holds only f).
//!
//! Nested AD: the inner argmax needs ∇ₚ₂f, the outer argmin the derivative of
//! g(p₁) = f(p₁, argmaxₚ₂ f(p₁, p₂)) through the whole inner descent. The functions are named
//! by the modes (outer, inner); the final argmax uses the inner mode:
//! - `ff`: ∂g by dual numbers (one sweep of `max_primal::<Dual<f64>>` per coordinate of p₁),
//!   ∇ₚ₂f by two sweeps of the forward companion `objective_jvp` (forward-over-forward);
//! - `fr`: ∂g by dual numbers, ∇ₚ₂f by the pullback `objective_vjp` (forward-over-reverse).

use super::{Input, Module, gd, timed};
use adjoint::prelude::*;
use serde::Deserialize;

/// The eval's input: the starting point s of every descent.
#[derive(Deserialize)]
pub struct Saddle {
    /// s, two numbers.
    pub start: Vec<f64>,
}

impl Input for Saddle {
    fn check(&self) -> Result<(), String> {
        if self.start.len() != 2 {
            Err(format!(
                "`start` has {} numbers; it must have 2",
                self.start.len()
            ))
        } else if let Some(v) = self.start.iter().find(|v| !v.is_finite()) {
            Err(format!("`start` holds {v}; it must be finite"))
        } else {
            Ok(())
        }
    }
}

/// f(p₁, p₂) = (x₁² + y₁²) − (x₂² + y₂²).
#[differentiable(forward)]
pub fn objective<T: Float>(p1: [T; 2], p2: [T; 2]) -> T {
    (p1[0] * p1[0] + p1[1] * p1[1]) - (p2[0] * p2[0] + p2[1] * p2[1])
}

/// ∇ₚ₂f by the forward companion, one sweep per coordinate of p₂.
fn inner_forward<T: Float>(p1: [T; 2], p2: [T; 2]) -> [T; 2] {
    let none = [T::ZERO; 2];
    let (_, gx) = objective_jvp(p1, p2, none, [T::ONE, T::ZERO]);
    let (_, gy) = objective_jvp(p1, p2, none, [T::ZERO, T::ONE]);
    [gx, gy]
}

/// ∇ₚ₂f by the pullback.
fn inner_reverse<T: Float + UnitSeed>(p1: [T; 2], p2: [T; 2]) -> [T; 2] {
    gradient(objective_vjp(p1, p2)).1
}

/// argmaxₚ₂ f(p₁, p₂) from `start`, ∇ₚ₂f from `inner`.
fn inner_argmax<T: Float>(
    p1: [T; 2],
    start: [T; 2],
    inner: impl Fn([T; 2], [T; 2]) -> [T; 2],
) -> [T; 2] {
    gd::argmax(|p2| objective(p1, *p2), |p2| inner(p1, *p2), start)
}

/// g(p₁) = f(p₁, argmaxₚ₂ f(p₁, p₂)), the inner descent from `start`.
fn max_primal<T: Float>(p1: [T; 2], start: [T; 2], inner: impl Fn([T; 2], [T; 2]) -> [T; 2]) -> T {
    objective(p1, inner_argmax(p1, start, inner))
}

/// (p₁*, p₂*) with ∂g by dual numbers (one sweep per coordinate of p₁) and the inner
/// gradient from `inner`, at `f64` and at `Dual<f64>`.
fn solve_forward_outer(
    start: [f64; 2],
    inner: impl Fn([f64; 2], [f64; 2]) -> [f64; 2],
    inner_dual: impl Fn([Dual<f64>; 2], [Dual<f64>; 2]) -> [Dual<f64>; 2] + Copy,
) -> [f64; 4] {
    let dual_start = start.map(Dual::constant);
    let outer_gradient = |p1: &[f64; 2]| {
        let sweep = |j: usize| {
            let seeded = [0, 1].map(|i| Dual::new(p1[i], if i == j { 1.0 } else { 0.0 }));
            max_primal(seeded, dual_start, inner_dual).eps
        };
        [sweep(0), sweep(1)]
    };
    let p1 = gd::argmin(|p1| max_primal(*p1, start, &inner), outer_gradient, start);
    let p2 = inner_argmax(p1, start, &inner);
    [p1[0], p1[1], p2[0], p2[1]]
}

fn start(input: &Saddle) -> [f64; 2] {
    [input.start[0], input.start[1]]
}

/// `ff` and `fr` (outer forward mode by dual numbers, inner forward / reverse by the
/// companions).
pub const MODULE: Module = Module {
    name: "saddle",
    functions: &[
        ("ff", |input| {
            timed(input, |i: &Saddle| {
                solve_forward_outer(start(i), inner_forward, inner_forward)
            })
        }),
        ("fr", |input| {
            timed(input, |i: &Saddle| {
                solve_forward_outer(start(i), inner_reverse, inner_reverse)
            })
        }),
    ],
};

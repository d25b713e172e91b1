//! The Rosenbrock functions that `benches/rosenbrock.rs` times against hand-written gradients
//! and `benches/steps.rs` times next to PyTorch and JAX; both include this file by path.

use adjoint::prelude::*;

/// The dimension of the n-D function.
pub const N: usize = 100;

/// f(x, y) = (1 − x)² + 100 (y − x²)²: straight-line code.
#[differentiable]
pub fn rosen2(x: f64, y: f64) -> f64 {
    let a = 1.0 - x;
    let b = y - x * x;
    a * a + 100.0 * b * b
}

/// Σᵢ (1 − xᵢ)² + 100 (xᵢ₊₁ − xᵢ²)² over `[f64; N]`: a `for` loop reading `x[i]`, `x[i + 1]`.
#[differentiable]
pub fn rosen(x: [f64; N]) -> f64 {
    let mut s = 0.0;
    for i in 0..N - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

//! llsq: y(x) = ½ Σᵢ (sᵢ − Σⱼ xⱼ tᵢʲ)² over n points tᵢ = −1 + 2i/(n − 1), sᵢ = sign(tᵢ), and its
//! gradient ∂y/∂xⱼ = −Σᵢ rᵢ tᵢʲ (rᵢ the residual), from the pullback of the loops below.

use super::{Input, Module, timed};
use adjoint::prelude::*;
use serde::Deserialize;

/// The eval's input: the coefficients `x` and the number of points `n`.
#[derive(Deserialize)]
pub struct Llsq {
    /// The polynomial's coefficients x₀, x₁, ….
    pub x: Vec<f64>,
    /// The number of sample points, at least 2.
    pub n: usize,
}

impl Input for Llsq {
    fn check(&self) -> Result<(), String> {
        if self.n < 2 {
            Err(format!(
                "`n` is {}; the points tᵢ = −1 + 2i/(n − 1) need n ≥ 2",
                self.n
            ))
        } else {
            Ok(())
        }
    }
}

/// The i-th of n points in [−1, 1].
fn t(i: usize, n: usize) -> f64 {
    -1.0 + i as f64 * 2.0 / (n as f64 - 1.0)
}

/// sign(t): −1, 0 or 1.
fn sign(t: f64) -> f64 {
    if t > 0.0 {
        1.0
    } else if t < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// y(x), computed as the C++ reference does: per point, the residual by powers of tᵢ.
#[differentiable]
pub fn llsq(x: &[f64], n: usize) -> f64 {
    let mut sum = 0.0;
    for i in 0..n {
        let ti = t(i, n);
        let mut inner = sign(ti);
        let mut mul = 1.0;
        for &xj in x.iter() {
            inner -= xj * mul;
            mul *= ti;
        }
        sum += inner * inner;
    }
    sum / 2.0
}

/// `primal` = y(x), `gradient` = ∇y(x) from `llsq`'s pullback.
pub const MODULE: Module = Module {
    name: "llsq",
    functions: &[
        ("primal", |input| timed(input, |i: &Llsq| llsq(&i.x, i.n))),
        ("gradient", |input| {
            timed(input, |i: &Llsq| -> Vec<f64> {
                gradient(llsq_vjp(&i.x, i.n))
            })
        }),
    ],
};

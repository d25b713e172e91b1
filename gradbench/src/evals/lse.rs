//! lse: LSE(x) = a + ln Σᵢ exp(xᵢ − a) with a = maxᵢ xᵢ (the log-sum-exp trick), and its
//! gradient ∂LSE/∂xᵢ = exp(xᵢ − LSE(x)), the softmax, from the pullback of the loops below.
//! (`a`'s own derivative cancels: ∂/∂a [a + ln Σ exp(xᵢ − a)] = 1 − Σ softmax = 0.)

use super::{Input, Module, timed};
use adjoint::prelude::*;
use serde::Deserialize;

/// The eval's input: the vector `x`.
#[derive(Deserialize)]
pub struct Lse {
    /// The values, at least one.
    pub x: Vec<f64>,
}

impl Input for Lse {
    fn check(&self) -> Result<(), String> {
        if self.x.is_empty() {
            Err("`x` is empty; log-sum-exp needs at least one value".into())
        } else {
            Ok(())
        }
    }
}

/// LSE(x), computed as the C++ reference does: the maximum in one loop, the shifted sum of
/// exponentials in another.
#[differentiable]
pub fn lse(x: &[f64]) -> f64 {
    let mut a = x[0];
    for &xi in x.iter() {
        a = a.max(xi);
    }
    let mut s = 0.0;
    for &xi in x.iter() {
        s += (xi - a).exp();
    }
    s.ln() + a
}

/// `primal` = LSE(x), `gradient` = ∇LSE(x) from `lse`'s pullback.
pub const MODULE: Module = Module {
    name: "lse",
    functions: &[
        ("primal", |input| timed(input, |i: &Lse| lse(&i.x))),
        ("gradient", |input| {
            timed(input, |i: &Lse| -> Vec<f64> { gradient(lse_vjp(&i.x)) })
        }),
    ],
};

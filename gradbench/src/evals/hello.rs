//! hello: f(x) = x², and its derivative 2x ("double"), the protocol's smoke test.

use super::{Input, Module, timed};
use adjoint::prelude::*;

/// x².
#[differentiable]
pub fn square(x: f64) -> f64 {
    x * x
}

impl Input for f64 {}

/// `square`, and `double` = d(x²)/dx = 2x from `square`'s pullback.
pub const MODULE: Module = Module {
    name: "hello",
    functions: &[
        ("square", |input| timed(input, |x: &f64| square(*x))),
        ("double", |input| {
            timed(input, |x: &f64| gradient(square_vjp(*x)))
        }),
    ],
};

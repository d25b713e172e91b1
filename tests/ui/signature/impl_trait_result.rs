use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> impl Into<f64> {
    x * x
}

fn main() {}

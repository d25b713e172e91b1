use adjoint::prelude::*;

#[differentiable]
fn f(x: impl Into<f64>) -> f64 {
    x.into()
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    x.floor() * 2.0
}

fn main() {}

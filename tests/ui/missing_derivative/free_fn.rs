use adjoint::prelude::*;

fn square(x: f64) -> f64 {
    x * x
}

#[differentiable]
fn f(x: f64) -> f64 {
    square(x) + 1.0
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn scale(x: f64, #[no_derivative] y: f64) -> f64 {
    x * y
}

#[differentiable]
fn f(x: f64) -> f64 {
    scale(2.0, x)
}

fn main() {}

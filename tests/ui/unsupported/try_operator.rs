use adjoint::prelude::*;

#[differentiable]
fn f(x: f64, #[no_derivative] y: Option<f64>) -> Option<f64> {
    Some(x * y?)
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(x: f64, #[no_derivative] y: Option<f64>) -> f64 {
    let z = Some(x * y?);
    x * 2.0
}

fn main() {}

use adjoint::prelude::*;

#[differentiable(wrt(x, y))]
fn f(x: f64, #[no_derivative] y: f64) -> f64 {
    x * y
}

fn main() {}

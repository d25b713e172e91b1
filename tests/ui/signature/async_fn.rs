use adjoint::prelude::*;

#[differentiable]
async fn f(x: f64) -> f64 {
    x * 2.0
}

fn main() {}

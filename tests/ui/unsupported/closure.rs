use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let double = |v: f64| v * x;
    double(2.0)
}

fn main() {}

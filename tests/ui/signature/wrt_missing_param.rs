use adjoint::prelude::*;

#[differentiable(wrt(x, y))]
fn f(x: f64, z: f64) -> f64 {
    x * z
}

fn main() {}

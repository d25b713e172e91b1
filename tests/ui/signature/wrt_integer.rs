use adjoint::prelude::*;

#[differentiable(wrt(x, n))]
fn f(x: f64, n: i32) -> f64 {
    x * 2.0 + n as f64
}

fn main() {}

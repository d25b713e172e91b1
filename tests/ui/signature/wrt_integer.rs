use adjoint::prelude::*;

#[differentiable(wrt(x, n))]
fn f(x: f64, n: i32) -> f64 {
    let _ = n;
    x * 2.0
}

fn main() {}

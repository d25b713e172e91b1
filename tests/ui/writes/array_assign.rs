use adjoint::prelude::*;

#[differentiable]
fn f(x: f64, y: f64) -> f64 {
    let (mut a, mut b) = (x, y * y);
    [a, b] = [b, a];
    a * 2.0 + b
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut p = (x, x);
    p.0 = 2.0;
    p.0 * p.1
}

fn main() {}

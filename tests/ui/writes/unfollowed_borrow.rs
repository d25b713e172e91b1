use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut a = x;
    let pair = (&mut a, 1.0);
    *pair.0 = 2.0;
    a
}

fn main() {}

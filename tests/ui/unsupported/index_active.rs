use adjoint::prelude::*;

#[differentiable]
fn f(xs: (f64, f64), i: usize) -> f64 {
    let v = [xs.0, xs.1];
    v[i] * 2.0
}

fn main() {}

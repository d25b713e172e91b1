use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = 0.0;
    let mut store = || y = x;
    store();
    y * 2.0
}

fn main() {}

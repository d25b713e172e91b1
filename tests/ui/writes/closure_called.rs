use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = 0.0;
    let mut add = |v: f64| y += v;
    let _ = add(x);
    y * 2.0
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let y = if x > 1.0 { return x * x } else { x * 3.0 };
    y * x
}

fn main() {}

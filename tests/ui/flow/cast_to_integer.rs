use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    (x as i64) as f64
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> i32 {
    (x > 0.0) as i32
}

fn main() {}

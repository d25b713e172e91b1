use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> i32 {
    x as i32
}

fn main() {}

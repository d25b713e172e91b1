use adjoint::prelude::*;

#[differentiable(forward)]
fn f(x: f64) -> f64 {
    let k = x as i64;
    x * k as f64
}

fn main() {}

// Forward mode does not match on an active value: the error names the scrutinee.
use adjoint::prelude::*;

#[differentiable(forward)]
fn g(x: f64) -> f64 {
    let v = Some(x);
    match v {
        Some(y) => y * 2.0,
        None => 0.0,
    }
}

fn main() {}

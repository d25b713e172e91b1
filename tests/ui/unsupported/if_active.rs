use adjoint::prelude::*;

#[differentiable]
fn f(x: f64, flag: bool) -> f64 {
    if flag { x * 2.0 } else { x }
}

fn main() {}

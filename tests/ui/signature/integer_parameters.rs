use adjoint::prelude::*;

#[differentiable]
fn f(n: usize, flag: bool) -> f64 {
    if flag { n as f64 } else { 0.0 }
}

fn main() {}

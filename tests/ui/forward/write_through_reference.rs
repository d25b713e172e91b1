// Reverse mode follows `let r = &mut a; *r = ..`; forward mode does not yet, and says so at
// the write rather than losing the derivative.
use adjoint::prelude::*;

#[differentiable(forward)]
fn f(x: f64) -> f64 {
    let mut a = 1.0;
    let r = &mut a;
    *r = x * x;
    a
}

fn main() {}

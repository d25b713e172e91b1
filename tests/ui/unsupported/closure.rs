use adjoint::prelude::*;

/// `y` changes after the closure is made, so the closure is not inlined: its call is an error.
#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = x;
    let scale = |v: f64| v * y;
    let a = scale(2.0);
    y = 3.0 * x;
    a + y
}

fn main() {}

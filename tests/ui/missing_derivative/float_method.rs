use adjoint::prelude::*;

/// `to_radians` has no derivative rule: the error names it and `f64` at the call.
#[differentiable]
fn f(x: f64) -> f64 {
    x.to_radians() * x
}

fn main() {}

use adjoint::prelude::*;

/// Forward mode: `to_radians` has no JVP; the error says so at the call.
#[differentiable(forward)]
fn f(x: f64) -> f64 {
    x.to_radians() * x
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(x: f64, #[no_derivative] out: &mut f64) -> f64 {
    *out = x * 2.0;
    x
}

fn main() {}

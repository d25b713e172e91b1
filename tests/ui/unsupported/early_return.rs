use adjoint::prelude::*;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    if n == 0 {
        return x;
    }
    x * 2.0
}

fn main() {}

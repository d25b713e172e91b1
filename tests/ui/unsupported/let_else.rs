use adjoint::prelude::*;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let (a, 0) = (x, n) else { panic!() };
    a * 2.0
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) {
    println!("{}", x * 2.0);
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(xs: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for x in xs.iter() {
        s += *x;
    }
    s
}

fn main() {}

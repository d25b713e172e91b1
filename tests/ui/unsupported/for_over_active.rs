use adjoint::prelude::*;

#[differentiable]
fn f(xs: Vec<f64>, ys: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for (a, b) in xs.iter().zip(ys.iter()) {
        s += a * b;
    }
    s
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(xs: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for w in xs.rchunks(2) {
        s += w[0] * w[1];
    }
    s
}

fn main() {}

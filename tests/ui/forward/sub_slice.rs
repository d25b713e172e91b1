use adjoint::prelude::*;

#[differentiable]
fn norm2(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x * x;
    }
    s
}

#[differentiable(forward)]
fn tail(v: Vec<f64>) -> f64 {
    norm2(&v[1..])
}

fn main() {}

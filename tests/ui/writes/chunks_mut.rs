use adjoint::prelude::*;

#[differentiable]
fn f(v: Vec<f64>, x: f64) -> f64 {
    let mut v = v;
    for c in v.chunks_mut(2) {
        c[0] *= x;
    }
    v[0] + v[2]
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(v: Vec<f64>, x: f64) -> f64 {
    let mut v = v;
    for t in v.iter_mut() {
        let t = t;
        *t *= x;
    }
    v[0] + v[1]
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(v: Vec<f64>, x: f64) -> f64 {
    let mut v = v;
    let s = v.as_mut_slice();
    s[0] = x * x;
    v[0] + v[1]
}

fn main() {}

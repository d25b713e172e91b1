use adjoint::prelude::*;

#[differentiable]
fn f(v: Vec<f64>) -> f64 {
    let mut items = v.into_iter();
    let mut s = 0.0;
    while let Some(t) = items.next() {
        s += t * t;
    }
    s
}

fn main() {}

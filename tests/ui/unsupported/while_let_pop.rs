use adjoint::prelude::*;

#[differentiable]
fn f(v: Vec<f64>) -> f64 {
    let mut stack = v;
    let mut s = 0.0;
    while let Some(t) = stack.pop() {
        s += t * t;
    }
    s
}

fn main() {}

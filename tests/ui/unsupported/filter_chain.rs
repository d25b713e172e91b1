use adjoint::prelude::*;

// A filtered sum that does not name its type (a typed one, `.sum::<f64>()`, is taken), and
// a filtered sum in forward mode.
#[differentiable]
fn f(v: Vec<f64>) -> f64 {
    v.iter().filter(|x| **x > 0.0).map(|x| x * x).sum()
}

#[differentiable(forward)]
fn k(v: Vec<f64>) -> f64 {
    v.iter().filter(|x| **x > 0.0).map(|x| x * x).sum::<f64>()
}

#[differentiable(forward)]
fn g(v: Vec<f64>) -> f64 {
    v.iter().take_while(|x| **x > 0.0).map(|x| x * x).sum::<f64>()
}

#[differentiable(forward)]
fn h(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for x in v.iter().filter(|x| **x > 0.0) {
        s += x * x;
    }
    s
}

fn main() {}

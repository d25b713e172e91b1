use adjoint::prelude::*;

// A filtered sum that does not name its type (a typed one, `.sum::<f64>()`, is taken).
#[differentiable]
fn f(v: Vec<f64>) -> f64 {
    v.iter().filter(|x| **x > 0.0).map(|x| x * x).sum()
}

#[differentiable(forward)]
fn g(v: Vec<f64>) -> f64 {
    v.iter().take_while(|x| **x > 0.0).map(|x| x * x).sum::<f64>()
}

fn main() {}

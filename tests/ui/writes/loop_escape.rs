use adjoint::prelude::*;
use std::cell::Cell;

#[differentiable]
fn f(x: f64, n: usize, #[no_derivative] log: &Cell<f64>) -> f64 {
    let mut i = 0;
    while i < n {
        log.set(x * 2.0);
        i += 1;
    }
    x
}

fn main() {}

use adjoint::prelude::*;
use std::cell::Cell;

#[differentiable]
fn f(x: f64, #[no_derivative] cell: &Cell<f64>) -> f64 {
    cell.set(x * 2.0);
    x
}

fn main() {}

// Forward mode does not build struct literals from active values yet (reverse mode does):
// the error is at the literal and names the active value.
use adjoint::prelude::*;

#[derive(Clone, Debug, Differentiable)]
struct Point {
    x: f64,
    y: f64,
}

#[differentiable(forward)]
fn norm2(x: f64) -> f64 {
    let p = Point { x, y: 2.0 * x };
    p.x * p.x + p.y * p.y
}

fn main() {}

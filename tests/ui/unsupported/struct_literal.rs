use adjoint::prelude::*;

struct Point {
    x: f64,
    y: f64,
}

#[differentiable]
fn f(x: f64) -> f64 {
    let p = Point { x, y: 2.0 };
    p.x * p.y
}

fn main() {}

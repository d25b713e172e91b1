use adjoint::prelude::*;

#[derive(Clone, Differentiable)]
struct Point {
    x: f64,
    y: f64,
}

#[differentiable]
fn f(x: f64, #[no_derivative] base: Point) -> f64 {
    let p = Point { x, ..base };
    p.x * p.y
}

fn main() {}

use adjoint::prelude::*;

#[derive(Clone, Differentiable)]
enum Shape {
    Circle(f64),
    Empty,
}

#[differentiable]
fn area(s: Shape) -> f64 {
    match s {
        Shape::Circle(0.0) => 1.0,
        Shape::Circle(r) => r * r,
        Shape::Empty => 0.0,
    }
}

fn main() {}

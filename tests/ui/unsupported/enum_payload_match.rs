use adjoint::prelude::*;

enum Shape {
    Circle(f64),
    Square(f64),
}

#[differentiable]
fn area(r: f64, round: bool) -> f64 {
    let s = if round { Shape::Circle(r) } else { Shape::Square(r) };
    match s {
        Shape::Circle(r) => 3.14 * r * r,
        Shape::Square(a) => a * a,
    }
}

fn main() {}

use adjoint::prelude::*;

// Differentiable by hand (the tangent of the radius), without the derive's payload rules.
#[derive(Clone)]
enum Shape {
    Circle(f64),
    Empty,
}

impl Differentiable for Shape {
    type Tangent = f64;
    fn move_by(&mut self, t: &f64) {
        if let Shape::Circle(r) = self {
            *r += t;
        }
    }
}

#[differentiable]
fn area(s: Shape) -> f64 {
    match s {
        Shape::Circle(r) => r * r,
        Shape::Empty => 0.0,
    }
}

fn main() {}

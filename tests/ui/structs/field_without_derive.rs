use adjoint::prelude::*;

struct Point {
    x: f64,
    y: f64,
}

impl Differentiable for Point {
    type Tangent = (f64, f64);
    fn move_by(&mut self, t: &(f64, f64)) {
        self.x += t.0;
        self.y += t.1;
    }
}

#[differentiable]
fn f(p: Point) -> f64 {
    p.x * p.y
}

fn main() {}

use adjoint::prelude::*;

struct Counter(f64);

impl Differentiable for Counter {
    type Tangent = f64;
    fn move_by(&mut self, t: &f64) {
        self.0 += t;
    }
}

impl Counter {
    #[differentiable]
    fn bump(&mut self, x: f64) -> f64 {
        self.0 * x
    }
}

fn main() {}

use adjoint::prelude::*;

// A `&mut self` method is differentiated on a copy of the receiver: `Counter` needs `Clone`.
#[derive(Differentiable)]
struct Counter {
    n: f64,
}

impl Counter {
    #[differentiable]
    fn bump(&mut self, x: f64) -> f64 {
        self.n = self.n * x;
        self.n
    }
}

fn main() {}

use adjoint::prelude::*;

#[derive(Clone, Differentiable)]
struct Acc {
    total: f64,
}

impl Acc {
    #[differentiable(forward)]
    fn add(&mut self, x: f64) {
        self.total += x * x;
    }
}

fn main() {}

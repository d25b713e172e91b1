use adjoint::prelude::*;

trait Twice {
    fn twice(self) -> f64;
}

impl Twice for f64 {
    fn twice(self) -> f64 {
        2.0 * self
    }
}

#[differentiable]
fn f(x: f64) -> f64 {
    x.twice() * x
}

fn main() {}

use adjoint::prelude::*;

mod helpers {
    pub fn square(x: f64) -> f64 {
        x * x
    }
}

#[differentiable]
fn f(x: f64) -> f64 {
    helpers::square(x)
}

fn main() {}

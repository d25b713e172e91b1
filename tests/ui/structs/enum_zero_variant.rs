use adjoint::prelude::*;

#[derive(Clone, Differentiable)]
enum Level {
    Zero,
    High(f64),
}

fn main() {}

use adjoint::prelude::*;

#[derive(Clone, Differentiable)]
enum Side {
    Left(f64),
    Right(f64),
}

#[differentiable]
fn length(s: Side) -> f64 {
    match s {
        Side::Left(x) | Side::Right(x) => x * x,
    }
}

fn main() {}

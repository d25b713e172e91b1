use adjoint::prelude::*;

#[derive(Clone, Debug, Differentiable)]
struct Pt {
    x: f64,
    y: f64,
}

#[differentiable]
fn f(p: Pt) -> f64 {
    match p {
        Pt { x, y } if x > y => x * y,
        Pt { x, .. } => x,
    }
}

fn main() {}

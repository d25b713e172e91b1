use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = x;
    let z = loop {
        y = y * x;
        if y > 10.0 {
            break y;
        }
    };
    z
}

fn main() {}

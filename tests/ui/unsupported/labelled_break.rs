use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = x;
    y = 'block: {
        if y > 1.0 {
            break 'block y * x;
        }
        y * 3.0
    };
    y
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = x;
    y = 'block: {
        y = y * x;
        if y > 1.0 { break 'block y * x } else { y * 3.0 }
    };
    y
}

fn main() {}

use adjoint::prelude::*;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let mut y = x;
    'block: {
        for _ in 0..n {
            y = y * x;
        }
        if y > 10.0 {
            break 'block;
        }
        y = y * 2.0;
    }
    y
}

fn main() {}

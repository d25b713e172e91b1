use adjoint::prelude::*;

static mut LAST: f64 = 0.0;

#[differentiable]
fn f(x: f64) -> f64 {
    unsafe {
        LAST = x;
    }
    x * 2.0
}

fn main() {}

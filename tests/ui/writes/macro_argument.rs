use adjoint::prelude::*;

macro_rules! set {
    ($v:ident, $e:expr) => {
        $v = $e;
    };
}

#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = 1.0;
    set!(y, y * x);
    y
}

fn main() {}

use adjoint::prelude::*;

struct Config {
    scale: f64,
}

#[differentiable]
fn f(x: f64, _config: &Config) -> f64 {
    x * 2.0
}

fn main() {}

use adjoint::prelude::*;

struct Stats {
    last: f64,
}

#[differentiable]
fn f(x: f64, #[no_derivative] stats: &mut Stats) -> f64 {
    stats.last = x;
    x * 2.0
}

fn main() {}

use adjoint::prelude::*;

fn total(x: &[f64]) -> f64 {
    x.iter().sum()
}

#[derivative_of(total)]
fn total_rule(x: &[f64]) -> (f64, impl FnOnce(f64) -> Vec<f64>) {
    let n = x.len();
    (total(x), move |d| vec![d; n])
}

fn main() {}

use adjoint::prelude::*;

fn cube(x: f64) -> f64 {
    x * x * x
}

#[derivative_of(cube)]
fn cube_rule(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (x * x * x, move |d| 3.0 * x * x * d)
}

#[derivative_of(cube)]
fn other_cube_rule(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (x * x * x, move |d| 3.0 * x * x * d)
}

fn main() {}

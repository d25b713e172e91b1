use adjoint::prelude::*;

fn cube(x: f64) -> f64 {
    x * x * x
}

#[derivative_of(cube)]
fn cube_rule(x: f32) -> (f32, impl FnOnce(f32) -> f32) {
    (x * x * x, move |d| 3.0 * x * x * d)
}

fn main() {}

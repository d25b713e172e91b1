// A `#[derivative_of]` rule without `jvp = ..` has no forward form: forward-mode code that
// calls the function fails at the call, naming the rule's companion.
use adjoint::prelude::*;

fn cube(x: f64) -> f64 {
    x * x * x
}

#[derivative_of(cube)]
fn cube_vjp(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (x * x * x, move |d| d * 3.0 * x * x)
}

#[differentiable(forward)]
fn f(x: f64) -> f64 {
    cube(x) + x
}

fn main() {}

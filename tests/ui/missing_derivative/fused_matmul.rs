use adjoint::prelude::*;

/// A type whose `matmul` has no derivative, in an expression the macro fuses: the error
/// names the missing rule at the `matmul` written, as for an unfused call.
#[derive(Clone, Copy)]
struct Scale(f64);

impl Scale {
    fn matmul(&self, x: &f64) -> f64 {
        self.0 * x
    }
}

#[differentiable(wrt(x, c))]
fn f(s: Scale, x: f64, c: f64) -> f64 {
    (s.matmul(&x) + c).tanh()
}

fn main() {}

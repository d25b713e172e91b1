//! `Affine1`: a user type with its own `#[differentiable]` `matmul`, so that an expression
//! like `tanh(p.matmul(x) + c)` is not a tensor expression and takes the unfused rules.

use adjoint::prelude::*;

/// `Affine1(k, m).matmul(x) = k·x + m`, over floats.
#[derive(Clone, Copy, Debug)]
pub struct Affine1(pub f64, pub f64);

impl Differentiable for Affine1 {
    type Tangent = (f64, f64);
    fn move_by(&mut self, t: &(f64, f64)) {
        self.0 += t.0;
        self.1 += t.1;
    }
}

impl Affine1 {
    /// `k·x + m`: `∂/∂k = x`, `∂/∂m = 1`, `∂/∂x = k`.
    #[differentiable]
    pub fn matmul(self, x: f64) -> f64 {
        self.0 * x + self.1
    }
}

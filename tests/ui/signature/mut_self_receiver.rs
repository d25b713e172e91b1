use adjoint::prelude::*;

#[derive(Clone, Debug, Differentiable)]
struct Lin {
    w: f64,
}

impl Lin {
    #[differentiable]
    fn scale(&mut self, s: f64) {
        self.w *= s;
    }
}

fn main() {}

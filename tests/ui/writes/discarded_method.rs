use adjoint::prelude::*;

#[derive(Clone, Differentiable)]
struct Scale {
    k: f64,
}

#[differentiable]
impl Scale {
    #[differentiable]
    fn apply(&self, x: f64) -> f64 {
        self.k * x
    }
}

#[differentiable]
fn f(k: f64, x: f64) -> f64 {
    let mut s = Scale { k };
    s.apply(x);
    s.k * x
}

fn main() {}

use adjoint::prelude::*;

#[derive(Clone, Differentiable)]
struct Scale {
    k: f64,
}

impl Scale {
    fn apply(&self, x: f64) -> f64 {
        self.k * x
    }

    // No `use<..>`: the pullback would keep `self` borrowed.
    #[derivative_of(Scale::apply)]
    fn apply_rule(&self, x: f64) -> (f64, impl FnOnce(f64) -> (ScaleTangent, f64)) {
        let k = self.k;
        (k * x, move |d| (ScaleTangent { k: d * x }, k * d))
    }
}

fn main() {}

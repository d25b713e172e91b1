use adjoint::prelude::*;

#[derive(Clone, Differentiable)]
struct Scale {
    k: f64,
}

impl Scale {
    fn apply(&self, x: f64) -> f64 {
        self.k * x
    }

    // The pullback forgets the tangent of `self`.
    #[derivative_of(Scale::apply)]
    fn apply_rule(&self, x: f64) -> (f64, impl use<> + FnOnce(f64) -> f64) {
        let k = self.k;
        (k * x, move |d| k * d)
    }
}

fn main() {}

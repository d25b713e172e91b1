use adjoint::prelude::*;

struct Scale(f64);

impl Scale {
    fn apply(&self, x: f64) -> f64 {
        self.0 * x
    }

    #[derivative_of(Scale::apply)]
    fn apply_rule(&self, x: f64) -> (f64, impl FnOnce(f64) -> f64) {
        let k = self.0;
        (k * x, move |d| k * d)
    }
}

fn main() {}

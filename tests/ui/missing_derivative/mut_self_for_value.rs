use adjoint::prelude::*;

// A `&mut self` method is followed as a statement (`a.add(x);`); called for its value, the
// error says so at the call, not only that `add` has no rule.
#[derive(Clone, Differentiable)]
struct Acc {
    total: f64,
}

#[differentiable]
impl Acc {
    #[differentiable]
    fn add(&mut self, x: f64) -> f64 {
        self.total = self.total + x * x;
        self.total
    }
}

#[differentiable]
fn f(x: f64) -> f64 {
    let mut a = Acc { total: x };
    let y = a.add(x);
    y * a.total
}

fn main() {}

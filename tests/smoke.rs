use adjoint::prelude::*;

#[differentiable]
fn f(x: f64, y: f64) -> f64 {
    x * y + x.sin()
}

#[differentiable]
fn g(x: f64, n: usize) -> f64 {
    let mut acc = x;
    acc *= x;
    let (a, b) = (acc, x.exp());
    println!("{n} {a}");
    a + b * f(x, 2.0)
}

mod m {
    use adjoint::prelude::*;
    #[differentiable]
    pub fn h<T: Float>(x: T) -> T {
        x.tanh() * x
    }
}

struct Poly(f64, f64);
impl Differentiable for Poly {
    type Tangent = (f64, f64);
    fn move_by(&mut self, t: &(f64, f64)) {
        self.0 += t.0;
        self.1 += t.1;
    }
}
impl Poly {
    #[differentiable]
    fn eval(&self, x: f64) -> f64 {
        self.0 * x + self.1 * x * x
    }
}

trait Layer {
    #[differentiable]
    fn forward(&self, x: f64) -> f64;
}
impl Layer for Poly {
    #[differentiable]
    fn forward(&self, x: f64) -> f64 {
        self.eval(x).tanh()
    }
}

fn cube(x: f64) -> f64 {
    x * x * x
}
#[derivative_of(cube)]
fn cube_vjp(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (x * x * x, move |d| 3.0 * x * x * d)
}
#[differentiable]
fn uses_cube(x: f64) -> f64 {
    cube(x) + m::h(x)
}

#[test]
fn smoke() {
    let (v, pb) = f_vjp(2.0, 3.0);
    assert_eq!(v, 6.0 + 2f64.sin());
    assert_eq!(pb(1.0), (3.0 + 2f64.cos(), 2.0));
    let dg = gradient(g_vjp(0.5, 3));
    println!("{dg}");
    let (_, d) = value_with_gradient(m::h_vjp(0.3f32));
    println!("{d}");
    let p = Poly(1.0, 2.0);
    let (v, (dp, dx)) = value_with_gradient(p.eval_vjp(3.0));
    assert_eq!(v, 21.0);
    assert_eq!(dp, (3.0, 9.0));
    assert_eq!(dx, 13.0);
    let (_, (dp, dx)) = value_with_gradient(p.forward_vjp(0.1));
    println!("{dp:?} {dx}");
    println!("{}", gradient(uses_cube_vjp(2.0)));
}

#[test]
fn local_items() {
    fn sq(x: f64) -> f64 {
        x * x
    }
    #[derivative_of(sq)]
    fn my_sq_rule(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
        (x * x, move |d| 2.0 * x * d)
    }
    #[differentiable]
    fn inner(x: f64) -> f64 {
        x.exp()
    }
    #[differentiable]
    fn outer(x: f64) -> f64 {
        inner(x) * sq(x)
    }
    let g = gradient(outer_vjp(1.5));
    let e = 1.5f64.exp();
    assert!((g - (e * 2.25 + e * 3.0)).abs() < 1e-12);
}

//! Differentiable code calling differentiable code: across modules (by path, by import, by
//! `crate::`/`super::`/`self::` path), generic functions over `Float` in `f32` and `f64`,
//! inherent methods, trait methods (required and default), and associated functions.
//! Every gradient is checked against the math in the comment (up to rounding) and against
//! finite differences.

mod common;

use adjoint::prelude::*;
use common::{assert_close, assert_close_f32, check, check_gradient};

// ---------------------------------------------------------------------------------------------
// Modules
// ---------------------------------------------------------------------------------------------

mod m {
    use adjoint::prelude::*;

    /// g = x² + 1: g' = 2x.
    #[differentiable]
    pub fn g(x: f64) -> f64 {
        x * x + 1.0
    }

    /// x³: 3x².
    #[differentiable]
    pub fn cube<T: Float>(x: T) -> T {
        x * x * x
    }

    pub mod inner {
        use adjoint::prelude::*;

        /// h = √(x² + 1), calling `super::g`: h' = x/√(x² + 1).
        #[differentiable]
        pub fn h(x: f64) -> f64 {
            super::g(x).sqrt()
        }
    }
}

use m::inner::{h, h_vjp};
use m::{g, g_vjp};

/// 2g(x) by path: d/dx = 4x.
#[differentiable]
fn call_by_path(x: f64) -> f64 {
    m::g(x) * 2.0
}

/// g + h through `use m::{g, g_vjp}`: d/dx = 2x + x/√(x² + 1).
#[differentiable]
fn call_imported(x: f64) -> f64 {
    g(x) + h(x)
}

/// x·h(x) by `crate::` path: d/dx = h + x²/h = (2x² + 1)/√(x² + 1).
#[differentiable]
fn call_crate_path(x: f64) -> f64 {
    crate::m::inner::h(x) * x
}

/// A generic callee with and without turbofish: 2x³, d/dx = 6x².
#[differentiable]
fn call_turbofish(x: f64) -> f64 {
    m::cube::<f64>(x) + m::cube(x)
}

/// g(g(x)) = (x² + 1)² + 1: d/dx = 4x(x² + 1).
#[differentiable]
fn call_chain(x: f64) -> f64 {
    m::g(m::g(x))
}

/// A call on constants is data: g(2)·x = 5x, d/dx = 5.
#[differentiable]
fn call_on_constant(x: f64) -> f64 {
    m::g(2.0) * x
}

mod caller {
    use adjoint::prelude::*;

    /// 3x.
    #[differentiable]
    pub fn local(x: f64) -> f64 {
        3.0 * x
    }

    /// g(x) + 3x through `super::` and `self::`: d/dx = 2x + 3.
    #[differentiable]
    pub fn k(x: f64) -> f64 {
        super::m::g(x) + self::local(x)
    }
}

/// f32 through a module: x³ in f32, d/dx = 3x².
#[differentiable]
fn call_f32(x: f32) -> f32 {
    m::cube(x)
}

#[test]
fn calls_across_modules() {
    check!(call_by_path, call_by_path_vjp; 1.5 => 6.0);
    let x = 0.75_f64;
    let r = (x * x + 1.0).sqrt();
    check!(call_imported, call_imported_vjp; x => 2.0 * x + x / r);
    check!(call_crate_path, call_crate_path_vjp; x => (2.0 * x * x + 1.0) / r);
    check!(h, h_vjp; x => x / r);
    check!(g, g_vjp; x => 2.0 * x);
    check!(call_turbofish, call_turbofish_vjp; 2.0 => 24.0);
    check!(call_chain, call_chain_vjp; 1.5 => 4.0 * 1.5 * 3.25);
    check!(call_on_constant, call_on_constant_vjp; 7.0 => 5.0);
    check!(caller::k, caller::k_vjp; 2.0 => 7.0);
    assert_eq!(gradient(call_f32_vjp(2.0)), 12.0_f32);
}

#[test]
fn local_items_in_a_function_body() {
    // sin(x)·(x + 1): d/dx = cos x (x + 1) + sin x.
    #[differentiable]
    fn inner(x: f64) -> f64 {
        x.sin()
    }
    #[differentiable]
    fn outer(x: f64) -> f64 {
        inner(x) * (x + 1.0)
    }
    let x = 0.3_f64;
    check!(outer, outer_vjp; x => x.cos() * (x + 1.0) + x.sin());
}

// ---------------------------------------------------------------------------------------------
// Generic functions
// ---------------------------------------------------------------------------------------------

/// 3x² + 1: d/dx = 6x.
#[differentiable]
fn gpoly<T: Float>(x: T) -> T {
    x * x * T::from_f64(3.0) + T::ONE
}

/// ln(1 + eˣ): d/dx = σ(x).
#[differentiable]
fn gsoftplus<T: Float>(x: T) -> T {
    x.exp().ln_1p()
}

/// sin(xy) + y/x: ∇ = (y cos xy − y/x², x cos xy + 1/x).
#[differentiable]
fn gtwo<T: Float>(x: T, y: T) -> T {
    (x * y).sin() + y / x
}

/// gpoly · gsoftplus, calling generics with and without turbofish: (6x)·sp + (3x² + 1)·σ.
#[differentiable]
fn gcall<T: Float>(x: T) -> T {
    gpoly(x) * gsoftplus::<T>(x)
}

/// x tanh x with a `where` clause: d/dx = tanh x + x(1 − tanh² x).
#[differentiable]
fn gwhere<T>(x: T) -> T
where
    T: Float,
{
    x.tanh() * x
}

/// x·s with the scale s held as data: d/dx = s.
#[differentiable]
fn gscale<T: Float>(x: T, #[no_derivative] s: f64) -> T {
    x * T::from_f64(s)
}

/// xᴺ with a const generic: d/dx = N xᴺ⁻¹.
#[differentiable]
fn gpow<T: Float, const N: i32>(x: T) -> T {
    x.powi(N)
}

/// Two type parameters, the second one data: a·b, d/da = b.
#[differentiable]
fn gpair<A: Float, B: Float>(a: A, #[no_derivative] b: B) -> A {
    a * A::from_f64(b.to_f64())
}

/// x² of a float read through a reference: d/dx = 2x.
#[differentiable]
fn gsquare_ref<T: Float>(x: &T) -> T {
    *x * *x
}

/// (2a)² + a, the square of a local taken by reference (its pullback kept `&b` borrowed
/// past `b`'s scope: E0597 in the generated code): d/da = 8a + 1.
#[differentiable]
fn square_of_local(a: f64) -> f64 {
    let b = a * 2.0;
    gsquare_ref(&b) + a
}

/// The same from a generic caller, the local a sum: (a + a)²·a, d/da = 12a².
#[differentiable]
fn gsquare_of_local<T: Float>(a: T) -> T {
    let b = a + a;
    gsquare_ref(&b) * a
}

/// x sin x in f32: d/dx = sin x + x cos x.
#[differentiable]
fn f32_only(x: f32) -> f32 {
    x * x.sin()
}

/// x·y + (x·y in f32): ∇ = (2y, 2x), the tangent of y in f32.
#[differentiable]
fn mixed_precision(x: f64, y: f32) -> f64 {
    x * (y as f64) + (x as f32 * y) as f64
}

#[test]
fn generic_functions() {
    check!(gpoly::<f64>, gpoly_vjp::<f64>; 1.5 => 9.0);
    let x = 0.6_f64;
    let s = 1.0 / (1.0 + (-x).exp());
    check!(gsoftplus::<f64>, gsoftplus_vjp::<f64>; x => s);
    let (x, y) = (1.2_f64, 0.7_f64);
    check!(gtwo::<f64>, gtwo_vjp::<f64>; x, y => (
        y * (x * y).cos() - y / (x * x),
        x * (x * y).cos() + 1.0 / x,
    ));
    let x = 0.6_f64;
    let sp = x.exp().ln_1p();
    check!(gcall::<f64>, gcall_vjp::<f64>; x => 6.0 * x * sp + (3.0 * x * x + 1.0) * s);
    let t = x.tanh();
    check!(gwhere::<f64>, gwhere_vjp::<f64>; x => t + x * (1.0 - t * t));
    check!(|x| gscale::<f64>(x, 2.5), |x| gscale_vjp::<f64>(x, 2.5); 1.0 => 2.5);
    check!(gpow::<f64, 3>, gpow_vjp::<f64, 3>; 2.0 => 12.0);
    check!(gpow::<f64, -1>, gpow_vjp::<f64, -1>; 2.0 => -0.25);
    check!(|a| gpair(a, 4.0_f32), |a| gpair_vjp(a, 4.0_f32); 1.5 => 4.0);
    check!(|x| gsquare_ref::<f64>(&x), |x| gsquare_ref_vjp::<f64>(&x); 1.5 => 3.0);
    check!(square_of_local, square_of_local_vjp; 3.0 => 25.0);
    check!(gsquare_of_local::<f64>, gsquare_of_local_vjp::<f64>; 0.5 => 3.0);
}

#[test]
fn generic_functions_in_f32() {
    // The f32 gradients agree with the f64 ones to f32 precision.
    for x in [-1.5_f32, -0.2, 0.6, 2.0] {
        let x64 = f64::from(x);
        assert_eq!(gradient(gpoly_vjp(x)), 6.0 * x);
        let s = 1.0 / (1.0 + (-x64).exp());
        assert_close_f32("gsoftplus", gradient(gsoftplus_vjp(x)), s);
        assert_close_f32("gcall", gradient(gcall_vjp(x)), gradient(gcall_vjp(x64)));
        assert_close_f32("gwhere", gradient(gwhere_vjp(x)), gradient(gwhere_vjp(x64)));
        let (dx, dy) = gradient(gtwo_vjp(x, 0.7));
        let (dx64, dy64) = gradient(gtwo_vjp(x64, f64::from(0.7_f32)));
        assert_close_f32("gtwo", dx, dx64);
        assert_close_f32("gtwo", dy, dy64);
        let want = x64.sin() + x64 * x64.cos();
        assert_close_f32("f32_only", gradient(f32_only_vjp(x)), want);
    }
    assert_eq!(gradient(gscale_vjp(1.0_f32, 2.5)), 2.5_f32);
    assert_eq!(gradient(gpow_vjp::<f32, 2>(3.0)), 6.0_f32);
    // f32 finite differences would need an f32 step; compare the f32 function to the f64
    // check instead: both are the same generic code.
    check_gradient(
        "f32_only",
        |x: f64| x * x.sin(),
        0.5,
        f64::from(gradient(f32_only_vjp(0.5))),
    );
}

#[test]
fn mixed_precision_casts() {
    let (x, y) = (1.5_f64, 2.0_f32);
    let (dx, dy) = gradient(mixed_precision_vjp(x, y));
    assert_eq!((dx, dy), (4.0, 3.0_f32));
    // The f32 rounding inside defeats f64 finite differences of the function itself (a step
    // of 1e-6 is below f32's resolution), so they are taken of the same math in f64, 2xy.
    check_gradient(
        "mixed_precision",
        |(x, y)| 2.0 * x * y,
        (x, f64::from(y)),
        (dx, f64::from(dy)),
    );
}

// ---------------------------------------------------------------------------------------------
// Methods, traits and associated functions
// ---------------------------------------------------------------------------------------------

/// `w·x + b`, with the tangent `(∂w, ∂b)`.
#[derive(Clone, Copy, Debug)]
struct Affine(f64, f64);

impl Differentiable for Affine {
    type Tangent = (f64, f64);
    fn move_by(&mut self, t: &(f64, f64)) {
        self.0 += t.0;
        self.1 += t.1;
    }
}

impl Affine {
    /// wx + b: ∂self = (x, 1), ∂x = w.
    #[differentiable]
    fn apply(&self, x: f64) -> f64 {
        self.0 * x + self.1
    }

    /// tanh(wx + b), calling a method on `self`: with s = 1 − tanh²(wx + b),
    /// ∂self = (s x, s), ∂x = s w.
    #[differentiable]
    fn activate(&self, x: f64) -> f64 {
        self.apply(x).tanh()
    }

    /// `self` by value: wbx, ∂self = (bx, wx), ∂x = wb.
    #[differentiable]
    fn by_value(self, x: f64) -> f64 {
        self.0 * self.1 * x
    }

    /// Only x: (wx + b)·x, d/dx = 2wx + b.
    #[differentiable(wrt(x))]
    fn frozen(&self, x: f64) -> f64 {
        self.apply(x) * x
    }

    /// Only self: eʷ + bx, ∂self = (eʷ, x).
    #[differentiable(wrt(self))]
    fn params_only(&self, x: f64) -> f64 {
        self.0.exp() + self.1 * x
    }

    /// The same with `#[no_derivative]` on the other parameter.
    #[differentiable]
    fn params_only_no_derivative(&self, #[no_derivative] x: f64) -> f64 {
        self.0.exp() + self.1 * x
    }

    /// An associated function: xk, ∇ = (k, x).
    #[differentiable(associated)]
    fn scale(x: f64, k: f64) -> f64 {
        x * k
    }

    /// An associated function that mentions `Self`: 2(wx + b), ∂p = (2x, 2), ∂x = 2w.
    #[differentiable]
    fn eval_at(p: &Self, x: f64) -> f64 {
        p.apply(x) * 2.0
    }

    /// `Self::scale` on a method result: 3(wx + b), ∂self = (3x, 3), ∂x = 3w.
    #[differentiable]
    fn scaled_apply(&self, x: f64) -> f64 {
        Self::scale(self.apply(x), 3.0)
    }

    /// `Affine::scale(x, w) + Self::eval_at(self, x)` = wx + 2(wx + b):
    /// ∂self = (3x, 2), ∂x = 3w.
    #[differentiable]
    fn type_paths(&self, x: f64) -> f64 {
        Affine::scale(x, self.0) + Self::eval_at(self, x)
    }
}

/// A model with a required and a default method.
trait Model {
    #[differentiable]
    fn forward(&self, x: f64) -> f64;

    /// (forward(x) − t)², t data.
    #[differentiable]
    fn loss(&self, x: f64, #[no_derivative] t: f64) -> f64 {
        let e = self.forward(x) - t;
        e * e
    }
}

impl Model for Affine {
    /// wx + b.
    #[differentiable]
    fn forward(&self, x: f64) -> f64 {
        self.apply(x)
    }
}

/// `a·x²`, overriding the default `loss`.
#[derive(Clone, Copy, Debug)]
struct Quad(f64);

impl Differentiable for Quad {
    type Tangent = (f64,);
    fn move_by(&mut self, t: &(f64,)) {
        self.0 += t.0;
    }
}

impl Model for Quad {
    /// ax²: ∂self = (x²,), ∂x = 2ax.
    #[differentiable]
    fn forward(&self, x: f64) -> f64 {
        self.0 * x * x
    }

    /// |ax² − t|: ∂self = (sgn · x²,), ∂x = sgn · 2ax.
    #[differentiable]
    fn loss(&self, x: f64, #[no_derivative] t: f64) -> f64 {
        (self.forward(x) - t).abs()
    }
}

/// A generic caller of trait methods: loss(x, 1) + forward(x).
#[differentiable]
fn total<M: Model + Differentiable>(model: &M, x: f64) -> f64 {
    model.loss(x, 1.0) + model.forward(x)
}

/// A struct parameter of a free function: ∂p = (x, 1), ∂x = w.
#[differentiable]
fn predict(p: &Affine, x: f64) -> f64 {
    p.apply(x)
}

/// Fully qualified trait calls: 2(wx + b) via two spellings, ∂p = (2x, 2), ∂x = 2w.
#[differentiable]
fn qualified(p: &Affine, x: f64) -> f64 {
    <Affine as Model>::forward(p, x) + Model::forward(p, x)
}

/// Trait calls on a local (the companions of methods marked alone return boxed pullbacks that
/// do not borrow the receiver; until then this was rustc's E0597 inside generated code):
/// 2(2x + 1), d/dx = 4.
#[differentiable]
fn qualified_on_local(x: f64) -> f64 {
    let p = Affine(2.0, 1.0);
    <Affine as Model>::forward(&p, x) + Model::forward(&p, x)
}

/// The method chain on a by-value parameter: (wx + b) tanh(wx + b), as `method_chain`.
#[differentiable]
fn method_chain_by_value(p: Affine, x: f64) -> f64 {
    p.apply(x) * p.activate(x)
}

/// A model differentiated together with its input through a method chain:
/// apply(x)·activate(x) = (wx + b) tanh(wx + b).
#[differentiable]
fn method_chain(p: &Affine, x: f64) -> f64 {
    p.apply(x) * p.activate(x)
}

/// Splits `((w, b), x)` into a model and an input, for finite differences over both.
fn affine_at(f: impl Fn(&Affine, f64) -> f64) -> impl Fn(((f64, f64), f64)) -> f64 {
    move |((w, b), x)| f(&Affine(w, b), x)
}

#[test]
fn inherent_methods() {
    let (w, b, x) = (1.5_f64, -0.5_f64, 0.8_f64);
    let p = Affine(w, b);
    let at = ((w, b), x);
    let u = w * x + b;

    let got = gradient(p.apply_vjp(x));
    assert_eq!(got, ((x, 1.0), w));
    check_gradient("apply", affine_at(|p, x| p.apply(x)), at, got);

    let s = 1.0 - u.tanh().powi(2);
    let got = gradient(p.activate_vjp(x));
    assert_close("activate", got, ((s * x, s), s * w));
    check_gradient("activate", affine_at(|p, x| p.activate(x)), at, got);

    let got = gradient(p.by_value_vjp(x));
    assert_close("by_value", got, ((b * x, w * x), w * b));
    check_gradient("by_value", affine_at(|p, x| p.by_value(x)), at, got);

    let got = gradient(p.frozen_vjp(x));
    assert_close("frozen", got, 2.0 * w * x + b);
    check_gradient("frozen", |x| p.frozen(x), x, got);

    let got = gradient(p.params_only_vjp(x));
    assert_close("params_only", got, (w.exp(), x));
    check_gradient(
        "params_only",
        |(w, b)| Affine(w, b).params_only(x),
        (w, b),
        got,
    );
    assert_eq!(gradient(p.params_only_no_derivative_vjp(x)), got);

    let got = gradient(p.scaled_apply_vjp(x));
    assert_close("scaled_apply", got, ((3.0 * x, 3.0), 3.0 * w));
    check_gradient("scaled_apply", affine_at(|p, x| p.scaled_apply(x)), at, got);

    let got = gradient(p.type_paths_vjp(x));
    assert_close("type_paths", got, ((3.0 * x, 2.0), 3.0 * w));
    check_gradient("type_paths", affine_at(|p, x| p.type_paths(x)), at, got);
}

#[test]
fn associated_functions() {
    check!(Affine::scale, Affine::scale_vjp; 2.0, 3.0 => (3.0, 2.0));
    let (w, b, x) = (1.5_f64, -0.5_f64, 0.8_f64);
    let got = gradient(Affine::eval_at_vjp(&Affine(w, b), x));
    assert_eq!(got, ((2.0 * x, 2.0), 2.0 * w));
    check_gradient("eval_at", affine_at(Affine::eval_at), ((w, b), x), got);
}

#[test]
fn trait_methods() {
    let (w, b, x, t) = (1.5_f64, -0.5_f64, 0.8_f64, 2.0_f64);
    let p = Affine(w, b);
    let at = ((w, b), x);
    // Required method.
    let got = gradient(p.forward_vjp(x));
    assert_eq!(got, ((x, 1.0), w));
    // Default method: e = wx + b − t, loss = e², ∂self = (2ex, 2e), ∂x = 2ew.
    let e = w * x + b - t;
    let got = gradient(p.loss_vjp(x, t));
    assert_close("loss", got, ((2.0 * e * x, 2.0 * e), 2.0 * e * w));
    check_gradient("loss", affine_at(|p, x| p.loss(x, t)), at, got);

    // An impl overriding the default: |ax² − t| with a = 3, x = 0.8: ax² = 1.92 < 2.
    let (a, x) = (3.0_f64, 0.8_f64);
    let q = Quad(a);
    let got = gradient(q.loss_vjp(x, t));
    assert_close("Quad::loss", got, ((-x * x,), -2.0 * a * x));
    check_gradient("Quad::loss", |((a,), x)| Quad(a).loss(x, t), ((a,), x), got);
    let got = gradient(q.forward_vjp(x));
    assert_close("Quad::forward", got, ((x * x,), 2.0 * a * x));
}

#[test]
fn generic_callers_of_trait_methods() {
    // total = (wx + b − 1)² + wx + b: ∂self = ((2e + 1)x, 2e + 1), ∂x = (2e + 1)w.
    let (w, b, x) = (1.5_f64, -0.5_f64, 0.8_f64);
    let e = w * x + b - 1.0;
    let got = gradient(total_vjp(&Affine(w, b), x));
    assert_close(
        "total",
        got,
        ((((2.0 * e + 1.0) * x), 2.0 * e + 1.0), (2.0 * e + 1.0) * w),
    );
    check_gradient("total", affine_at(total), ((w, b), x), got);
    // total for Quad = |ax² − 1| + ax², with ax² = 1.92 > 1: ∂a = 2x², ∂x = 4ax.
    let (a, x) = (3.0_f64, 0.8_f64);
    let got = gradient(total_vjp(&Quad(a), x));
    assert_close("total::<Quad>", got, ((2.0 * x * x,), 4.0 * a * x));
    check_gradient(
        "total::<Quad>",
        |((a,), x)| total(&Quad(a), x),
        ((a,), x),
        got,
    );

    let got = gradient(predict_vjp(&Affine(w, b), x));
    assert_eq!(got, ((x, 1.0), w));
    let got = gradient(qualified_vjp(&Affine(w, b), x));
    assert_eq!(got, ((2.0 * x, 2.0), 2.0 * w));
    check_gradient("qualified", affine_at(qualified), ((w, b), x), got);

    let u = w * x + b;
    let th = u.tanh();
    // d(u tanh u) = (tanh u + u(1 − tanh² u)) du, du = (x, 1; w).
    let k = th + u * (1.0 - th * th);
    let got = gradient(method_chain_vjp(&Affine(w, b), x));
    assert_close("method_chain", got, ((k * x, k), k * w));
    check_gradient("method_chain", affine_at(method_chain), ((w, b), x), got);
    let got = gradient(method_chain_by_value_vjp(Affine(w, b), x));
    assert_close("method_chain_by_value", got, ((k * x, k), k * w));
    let by_value = |((w, b), x)| method_chain_by_value(Affine(w, b), x);
    check_gradient("method_chain_by_value", by_value, ((w, b), x), got);
    let got = gradient(qualified_on_local_vjp(x));
    assert_eq!(got, 4.0);
    check_gradient("qualified_on_local", qualified_on_local, x, got);
}

#[test]
fn gradient_descent_with_move_by() {
    // Fit w·x + b to the point (2, 3) from (0, 0): the loss goes down.
    let mut p = Affine(0.0, 0.0);
    let before = p.loss(2.0, 3.0);
    for _ in 0..50 {
        let (dp, _) = gradient(p.loss_vjp(2.0, 3.0));
        p.move_by(&dp.scaled(-0.05));
    }
    let after = p.loss(2.0, 3.0);
    assert!(after < 1e-6 * before, "loss {before} → {after}");
}

//! `#[derive(Differentiable)]`: tangent structs, field reads in differentiable code, training.

use adjoint::prelude::*;
use adjoint::{Backend, TensorTangent};

/// `y = a x² + b x + c`, with a name that is not differentiated.
#[derive(Differentiable)]
struct Quadratic {
    a: f64,
    b: f64,
    c: f64,
    #[no_derivative]
    name: String,
}

// On the impl, so that the pullbacks of its methods do not borrow `self` (a `Quadratic`
// built inside differentiable code can be used).
#[differentiable]
impl Quadratic {
    #[differentiable]
    fn at(&self, x: f64) -> f64 {
        self.a * x * x + self.b * x + self.c
    }
}

/// A generic tuple struct.
#[derive(Differentiable)]
struct Pair<T: Float>(T, T);

/// Nested structs and a vector of layers. A struct read as a field of an active value is
/// cloned, so it derives `Clone`.
#[derive(Clone, Differentiable)]
struct Scale {
    k: f64,
}

#[derive(Differentiable)]
struct Stack {
    first: Scale,
    rest: Vec<f64>,
}

#[differentiable]
fn squared_error(q: &Quadratic, x: f64, y: f64) -> f64 {
    let r = q.at(x) - y;
    r * r
}

#[differentiable]
fn pair_product<T: Float>(p: &Pair<T>, x: T) -> T {
    p.0 * p.1 * x
}

#[differentiable]
fn stacked(s: &Stack, x: f64) -> f64 {
    let mut y = s.first.k * x;
    for i in 0..s.rest.len() {
        y *= s.rest[i];
    }
    y
}

#[test]
fn tangent_struct_has_the_vector_space_operations() {
    let t = QuadraticTangent {
        a: 1.0,
        b: 2.0,
        c: 3.0,
    };
    let u = t.clone()
        + QuadraticTangent {
            a: 1.0,
            b: 1.0,
            c: 1.0,
        } * 2.0;
    assert_eq!((u.a, u.b, u.c), (3.0, 4.0, 5.0));
    let z = <QuadraticTangent as TangentVector>::zero();
    assert_eq!((z.a, z.b, z.c), (0.0, 0.0, 0.0));
    let mut q = Quadratic {
        a: 1.0,
        b: 1.0,
        c: 1.0,
        name: "q".into(),
    };
    q.move_by(&u);
    assert_eq!((q.a, q.b, q.c, q.name.as_str()), (4.0, 5.0, 6.0, "q"));
    assert!(format!("{t:?}").contains("QuadraticTangent"));
}

#[test]
fn field_reads_of_active_structs() {
    let q = Quadratic {
        a: 2.0,
        b: -1.0,
        c: 0.5,
        name: "q".into(),
    };
    // ∂/∂(a, b, c) of a x² + b x + c is (x², x, 1); ∂/∂x = 2 a x + b
    let (dq, dx) = gradient(q.at_vjp(3.0));
    assert_eq!((dq.a, dq.b, dq.c, dx), (9.0, 3.0, 1.0, 11.0));

    let p = Pair(2.0f32, 3.0);
    let (dp, dx) = gradient(pair_product_vjp(&p, 4.0));
    assert_eq!((dp.0, dp.1, dx), (12.0, 8.0, 6.0));

    let s = Stack {
        first: Scale { k: 2.0 },
        rest: vec![3.0, 5.0],
    };
    // y = k x r₀ r₁: ∂k = x r₀ r₁, ∂r₀ = k x r₁, ∂r₁ = k x r₀, ∂x = k r₀ r₁
    let (ds, dx) = gradient(stacked_vjp(&s, 1.5));
    assert_eq!(ds.first.k, 1.5 * 3.0 * 5.0);
    assert_eq!(ds.rest, vec![2.0 * 1.5 * 5.0, 2.0 * 1.5 * 3.0]);
    assert_eq!(dx, 30.0);
}

#[test]
fn a_derived_model_trains_to_the_data() {
    // Fit y = 3x² − 2x + 1 with plain gradient descent.
    let data: Vec<(f64, f64)> = (0..21)
        .map(|i| {
            let x = -1.0 + 0.1 * f64::from(i);
            (x, 3.0 * x * x - 2.0 * x + 1.0)
        })
        .collect();
    let mut q = Quadratic {
        a: 0.0,
        b: 0.0,
        c: 0.0,
        name: "fit".into(),
    };
    let mut loss = f64::INFINITY;
    for _ in 0..2000 {
        let mut grad = <QuadraticTangent as TangentVector>::zero();
        loss = 0.0;
        for &(x, y) in &data {
            let (l, (dq, _, _)) = value_with_gradient(squared_error_vjp(&q, x, y));
            loss += l;
            grad += dq;
        }
        q.move_by(&(grad * (-0.1 / data.len() as f64)));
    }
    assert!(loss / (data.len() as f64) < 1e-6, "loss {loss}");
    assert!((q.a - 3.0).abs() < 1e-2 && (q.b + 2.0).abs() < 1e-2 && (q.c - 1.0).abs() < 1e-2);
}

#[differentiable]
fn build_and_use(x: f64, y: f64) -> f64 {
    let q = Quadratic {
        a: x * y,
        b: y,
        c: 1.0,
        name: String::from("built"),
    };
    q.at(2.0)
}

#[test]
fn struct_literals_of_active_values() {
    // q = (a, b, c) = (x y, y, 1) at 2: 4 x y + 2 y + 1 → ∂x = 4 y, ∂y = 4 x + 2
    assert_eq!(gradient(build_and_use_vjp(1.5, 2.0)), (8.0, 8.0));
}

#[differentiable]
impl<T: Float> Pair<T> {
    #[differentiable]
    fn weighted(&self, x: &T) -> T {
        self.0 * *x + self.1
    }
}

#[differentiable]
trait Model {
    #[differentiable]
    fn predict(&self, x: f64) -> f64;
}

#[differentiable]
impl Model for Scale {
    #[differentiable]
    fn predict(&self, x: f64) -> f64 {
        self.k * x
    }
}

#[differentiable]
fn uses_locals(x: f64) -> f64 {
    let p = Pair(x, 2.0);
    let y = x * 3.0;
    let s = Scale { k: x };
    p.weighted(&y) + s.predict(y)
}

#[test]
fn annotated_blocks_give_pullbacks_that_borrow_nothing() {
    // p.weighted(&y) = x · 3x + 2; s.predict(y) = x · 3x → 6x² + 2, derivative 12x
    assert_eq!(gradient(uses_locals_vjp(0.5)), 6.0);
}

/// A layer generic over the backend, in an annotated generic impl.
#[derive(Clone, Differentiable)]
struct Gain<B: Backend = Cpu> {
    w: Tensor<B>,
}

#[differentiable]
impl<B: Backend> Gain<B> {
    #[differentiable]
    fn apply(&self, x: &Tensor<B>) -> Tensor<B> {
        x * &self.w
    }
}

#[test]
fn generic_impls_over_the_backend() {
    let g = Gain::<Cpu> {
        w: Tensor::from_vec(vec![2.0_f64, 3.0], &[2]),
    };
    let x = Tensor::from_vec(vec![5.0_f64, 7.0], &[2]);
    let (dg, dx) = gradient(sum_of(&g, &x));
    assert_eq!(dg.w.unwrap().to_vec_f64(), vec![5.0, 7.0]);
    assert_eq!(dx.unwrap().to_vec_f64(), vec![2.0, 3.0]);
}

fn sum_of(
    g: &Gain,
    x: &Tensor,
) -> (
    Tensor,
    impl FnOnce(TensorTangent) -> (GainTangent, TensorTangent),
) {
    applied_sum_vjp(g, x)
}

#[differentiable]
fn applied_sum(g: &Gain, x: &Tensor) -> Tensor {
    g.apply(x).sum_all()
}

/// `#[no_derivative]` fields are data, read freely in differentiable code.
#[derive(Clone, Differentiable)]
struct Configured {
    w: f64,
    #[no_derivative]
    scale: f64,
    #[no_derivative]
    repeats: usize,
    #[no_derivative]
    eps: f64,
}

#[differentiable]
impl Configured {
    #[differentiable(forward)]
    fn apply(&self, x: f64) -> f64 {
        let mut y = x;
        for _ in 0..self.repeats {
            y = y * self.w * self.scale;
        }
        y + self.eps
    }

    #[differentiable]
    fn normalized(
        &self,
        x: &Tensor,
        #[no_derivative] g: &Tensor,
        #[no_derivative] b: &Tensor,
    ) -> Tensor {
        x.layer_norm(g, b, self.eps).sum_all() * self.w
    }
}

#[test]
fn no_derivative_fields_are_data() {
    let c = Configured {
        w: 2.0,
        scale: 0.5,
        repeats: 3,
        eps: 1e-5,
    };
    // y = x (w s)³ + eps: ∂w = 3 x w² s³, ∂x = (w s)³; scale, repeats and eps get no tangent
    let (dc, dx) = gradient(c.apply_vjp(1.5));
    assert_eq!((dc.w, dx), (3.0 * 1.5 * 4.0 * 0.125, 1.0));
    // Forward mode reads the `#[no_derivative]` fields (a float factor, the loop's bound, an
    // offset) as data: J·(ẇ, ẋ) = ∂w·ẇ + ∂x·ẋ.
    let (value, jv) = c.apply_jvp(1.5, &ConfiguredTangent { w: 0.5 }, -2.0);
    assert_eq!(value, c.apply(1.5));
    assert_eq!(jv, dc.w * 0.5 + dx * -2.0);
    // the sum of a layer norm is 0 whatever x, so the w-derivative is 0
    let x = Tensor::from_vec(vec![1.0_f64, 2.0, 4.0], &[1, 3]);
    let (g, b) = (
        Tensor::from_vec(vec![1.0_f64; 3], &[3]),
        Tensor::from_vec(vec![0.0_f64; 3], &[3]),
    );
    let (dc, _) = gradient(c.normalized_vjp(&x, &g, &b));
    assert!(dc.w.abs() < 1e-12, "{}", dc.w);
}

/// An integer `#[no_derivative]` field turned into a float (`k as f64`, `k as f32`): the
/// conversion's derivative is zero, as of any function of an integer. `c·x³·k + (k as f32) as
/// f64`: ∂c = x³·k, ∂x = 3c·x²·k. In forward mode too, where the field has no tangent (the
/// tangent struct has no `k`; reading `t.k` was rustc's E0609 in generated code).
#[differentiable(forward)]
fn counted(p: &Counted, x: f64) -> f64 {
    let n = p.k as f64;
    p.c * x * x * x * n + (p.k as f32) as f64
}

#[derive(Clone, Differentiable)]
struct Counted {
    c: f64,
    #[no_derivative]
    k: usize,
}

#[test]
fn integer_fields_convert_to_floats_with_a_zero_derivative() {
    let (c, k, x) = (2.0, 3, 1.5);
    let p = Counted { c, k };
    let (value, pullback) = counted_vjp(&p, x);
    let (dp, dx) = pullback(1.0);
    let kf = k as f64;
    assert_eq!(value, c * x * x * x * kf + kf);
    assert_eq!((dp.c, dx), (x * x * x * kf, 3.0 * c * x * x * kf));
    // Central differences in c and x.
    let h = 1e-6;
    let f = |c: f64, x: f64| counted(&Counted { c, k }, x);
    let dc_fd = (f(c + h, x) - f(c - h, x)) / (2.0 * h);
    let dx_fd = (f(c, x + h) - f(c, x - h)) / (2.0 * h);
    assert!(
        (dc_fd - dp.c).abs() < 1e-6 && (dx_fd - dx).abs() < 1e-6,
        "{dc_fd} {dx_fd}"
    );
    // Forward: J·(ċ, ẋ) = x³k·ċ + 3cx²k·ẋ, against the pullback's gradient.
    let (tc, tx) = (0.5, -2.0);
    let (forward_value, jv) = counted_jvp(&p, x, &CountedTangent { c: tc }, tx);
    assert_eq!(forward_value, value);
    assert_eq!(jv, dp.c * tc + dx * tx);
}

/// Layers in a `Vec` and in an array, read as `p.layers[i].k`.
#[derive(Clone, Differentiable)]
struct Deep {
    layers: Vec<Scale>,
    pair: [Scale; 2],
}

#[differentiable]
fn deep(p: &Deep, x: f64) -> f64 {
    let mut y = x;
    for i in 0..p.layers.len() {
        y *= p.layers[i].k;
    }
    y * p.pair[0].k + p.pair[1].k
}

#[test]
fn vec_and_array_fields() {
    let p = Deep {
        layers: vec![Scale { k: 2.0 }, Scale { k: 3.0 }],
        pair: [Scale { k: 5.0 }, Scale { k: 7.0 }],
    };
    // y = x k0 k1 q0 + q1
    let (dp, dx) = gradient(deep_vjp(&p, 1.5));
    let ks: Vec<f64> = dp.layers.iter().map(|t| t.k).collect();
    assert_eq!(ks, vec![1.5 * 3.0 * 5.0, 1.5 * 2.0 * 5.0]);
    assert_eq!((dp.pair[0].k, dp.pair[1].k, dx), (1.5 * 6.0, 1.0, 30.0));
}

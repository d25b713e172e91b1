//! The gradient-check harness of the rule tests: central differences in `f64` and the
//! dot-product test, driven by one line per op.
//!
//! A line gives the op's name, its inputs and a closure calling the rule; the harness checks
//! every input element's derivative `∂⟨w, f(x)⟩/∂xᵢ` by central differences against the
//! pullback of a random cotangent `w`, and checks `⟨J v, w⟩ = ⟨v, Jᵀ w⟩` for a random
//! direction `v`, with `J v` from central differences.

use crate::NoTangent;
use crate::tensor::{Cpu, DType, Tensor, TensorTangent};

/// An `f64` CPU tensor.
pub(crate) type T64 = Tensor<Cpu>;
/// A pullback returning one tangent per tensor input.
pub(crate) type Pb = Box<dyn FnOnce(TensorTangent) -> Vec<TensorTangent>>;

/// The tangent slots of a pullback's result that belong to tensor inputs.
pub(crate) trait IntoTangents {
    fn into_tangents(self) -> Vec<TensorTangent>;
}

impl IntoTangents for TensorTangent {
    fn into_tangents(self) -> Vec<TensorTangent> {
        vec![self]
    }
}

/// The host tangent of a scalar operand is checked by exact tests, not by the harness.
impl IntoTangents for f64 {
    fn into_tangents(self) -> Vec<TensorTangent> {
        vec![]
    }
}

impl IntoTangents for NoTangent {
    fn into_tangents(self) -> Vec<TensorTangent> {
        vec![]
    }
}

macro_rules! tuple_into {
    ($($n:ident)*) => {
        impl<$($n: IntoTangents),*> IntoTangents for ($($n,)*) {
            #[allow(non_snake_case)]
            fn into_tangents(self) -> Vec<TensorTangent> {
                let ($($n,)*) = self;
                let mut v = Vec::new();
                $(v.extend($n.into_tangents());)*
                v
            }
        }
    };
}
tuple_into!(A);
tuple_into!(A C);
tuple_into!(A C D);
tuple_into!(A C D E);

/// Boxes a rule's `(value, pullback)` for the harness.
pub(crate) fn boxed<P, R>((y, pb): (T64, P)) -> (T64, Pb)
where
    P: FnOnce(TensorTangent) -> R + 'static,
    R: IntoTangents,
{
    (y, Box::new(move |d| pb(d).into_tangents()))
}

/// An `f64` tensor from values.
pub(crate) fn t64(data: &[f64], shape: &[usize]) -> T64 {
    Tensor::from_vec(data.to_vec(), shape)
}

/// Seeded `U[-1, 1)` `f64` values.
pub(crate) fn rand(shape: &[usize], seed: u64) -> T64 {
    Tensor::rand_uniform_on(shape, -1.0, 1.0, seed, DType::F64, &Cpu)
}

/// Seeded `U[0.5, 2)` `f64` values (for `ln`, `sqrt`, ...).
pub(crate) fn pos(shape: &[usize], seed: u64) -> T64 {
    Tensor::rand_uniform_on(shape, 0.5, 2.0, seed, DType::F64, &Cpu)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn perturbed(inputs: &[T64], which: usize, delta: &[f64]) -> Vec<T64> {
    let mut v = inputs.to_vec();
    let x: Vec<f64> = inputs[which]
        .to_vec_f64()
        .iter()
        .zip(delta)
        .map(|(a, d)| a + d)
        .collect();
    v[which] = t64(&x, inputs[which].shape());
    v
}

fn close(name: &str, what: &str, got: f64, want: f64) {
    let tol = 1e-5 * (1.0 + want.abs());
    assert!(
        (got - want).abs() <= tol,
        "{name}: {what}: pullback gives {got}, finite differences {want}"
    );
}

/// Checks the rule `f` at `inputs` (all differentiated) against central differences.
pub(crate) fn check(name: &str, inputs: &[T64], f: impl Fn(&[T64]) -> (T64, Pb)) {
    const H: f64 = 1e-6;
    let (y, pb) = f(inputs);
    let w = rand(y.shape(), 7).to_vec_f64();
    let grads = pb(TensorTangent::Dense(t64(&w, y.shape())));
    assert_eq!(grads.len(), inputs.len(), "{name}: one tangent per input");
    let value = |xs: &[T64]| dot(&f(xs).0.to_vec_f64(), &w);
    for (i, (x, g)) in inputs.iter().zip(&grads).enumerate() {
        let g = g.clone().to_tensor_like(x);
        assert_eq!(
            g.shape(),
            x.shape(),
            "{name}: tangent {i} has the input's shape"
        );
        let g = g.to_vec_f64();
        let mut e = vec![0.0; x.len()];
        for j in 0..x.len() {
            e[j] = H;
            let up = value(&perturbed(inputs, i, &e));
            e[j] = -H;
            let down = value(&perturbed(inputs, i, &e));
            e[j] = 0.0;
            close(
                name,
                &format!("∂/∂x{i}[{j}]"),
                g[j],
                (up - down) / (2.0 * H),
            );
        }
        // Dot-product test: ⟨J v, w⟩ = ⟨v, Jᵀ w⟩ along a random direction v.
        let v: Vec<f64> = rand(x.shape(), 11 + i as u64).to_vec_f64();
        let hv: Vec<f64> = v.iter().map(|a| a * H).collect();
        let mhv: Vec<f64> = v.iter().map(|a| -a * H).collect();
        let jv_w =
            (value(&perturbed(inputs, i, &hv)) - value(&perturbed(inputs, i, &mhv))) / (2.0 * H);
        close(name, &format!("⟨J v, w⟩ for input {i}"), dot(&v, &g), jv_w);
    }
}

/// One-line check of a binary rule on random inputs of the two shapes; `f` calls the rule
/// trait (e.g. `|a, b| AddRule::add_vjp(a, b, [true, true])`) or method.
pub(crate) fn check_binary<P, R>(
    name: &str,
    a: &[usize],
    b: &[usize],
    f: impl Fn(&T64, &T64) -> (T64, P),
) where
    P: FnOnce(TensorTangent) -> R + 'static,
    R: IntoTangents,
{
    check(name, &[rand(a, 1), rand(b, 2)], |xs| {
        boxed(f(&xs[0], &xs[1]))
    });
}

/// One-line check of a unary rule at `x`.
pub(crate) fn check_unary<P, R>(name: &str, x: T64, f: impl Fn(&T64) -> (T64, P))
where
    P: FnOnce(TensorTangent) -> R + 'static,
    R: IntoTangents,
{
    check(name, &[x], |xs| boxed(f(&xs[0])));
}

/// A rule's `(value, pullback)` keeping only the first tangent slot (the others belong to
/// non-differentiable inputs such as labels or ids).
pub(crate) fn first<P, R>(
    (y, pb): (T64, P),
) -> (T64, impl FnOnce(TensorTangent) -> (TensorTangent,))
where
    P: FnOnce(TensorTangent) -> (TensorTangent, R),
{
    (y, move |d| (pb(d).0,))
}

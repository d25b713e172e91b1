//! The fused affine map `y = f(Σₖ Aₖ·op(Bₖ) + Σⱼ cⱼ)`: a sum of matrix products (`op(B)` is
//! `B` or, for `a.matmul(&b.t())`, `Bᵀ` read in place) and broadcast terms (biases), then an
//! activation `f` (none, `tanh`, `sigmoid` or `relu`).
//!
//! Nobody calls it by name. `#[differentiable]` code writes the ordinary expression, an RNN
//! cell `(h.matmul(w) + x.matmul(u) + b).tanh()` or a layer `x.matmul(w) + b`, and the macro
//! turns each such expression into one call of `affine_rule` (`macros/src/fusion.rs`) where
//! the operands are tensors (`site.rs` beside this file dispatches). One op instead of up
//! to six: the products are summed into one buffer (the second with β = 1,
//! [`Backend::matmul_acc`]), the biases are added and the activation applied in that buffer,
//! and the pullback is one rule instead of a chain of them. That is what an overhead-bound
//! workload (the RNN of `benches/steps.rs`, 32 hidden units) spends its time on: per op, the
//! buffer and its handle, the shape checks and the record of the pullback.
//!
//! Derivative, with `z` the sum and `y = f(z)`: `z̄ = ȳ·f′(z)`, computed from `y` (`1 − y²`,
//! `y(1 − y)`, `𝟙(y > 0)`) as the activations' own rules do; `c̄ⱼ = Σ↓ z̄` (summed over the
//! axes `cⱼ` was broadcast along); `Āₖ = z̄·op(Bₖ)ᵀ` and `B̄ₖ = Aₖᵀ·z̄` (`z̄ᵀ·Aₖ` for a transposed
//! `Bₖ`: the tangent of `B` as stored), each only if needed, a 2-D `Bₖ`'s kept as its operands
//! ([`TensorTangent::Outer`]), as [`matmul`](Tensor::matmul)'s.
//!
//! Products of other ranks or shapes, and biases that widen the result, are computed by the
//! unfused ops (same values, same errors); the pullback is the same for both.

pub(crate) mod site;

use super::arith::binary_given;
use super::matmul::matmul_tangents;
use super::slot;
use crate::TangentVector;
use crate::tensor::shape::broadcast_shape;
use crate::tensor::{Backend, MatmulSpec, Shape, Tensor, TensorTangent};
use adjoint_backend::{BinaryOp, UnaryOp};

/// The activation applied after the sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epilogue {
    /// `y = z`.
    Identity,
    /// `y = tanh z`; `z̄ = ȳ·(1 − y²)`.
    Tanh,
    /// `y = 1/(1 + e⁻ᶻ)`; `z̄ = ȳ·y(1 − y)`.
    Sigmoid,
    /// `y = max(z, 0)`; `z̄ = ȳ·𝟙(y > 0)` (0 at 0).
    Relu,
}

/// An activation's kernels: its name, its op, and the kernel of `z̄` from `(y, ȳ)`.
struct Kernels {
    name: &'static str,
    op: UnaryOp,
    grad: BinaryOp,
}

impl Epilogue {
    /// The activation's op and the kernel of `z̄ = grad(y, ȳ)`, `None` for the identity.
    pub(crate) fn ops(self) -> Option<(UnaryOp, BinaryOp)> {
        self.kernels().map(|k| (k.op, k.grad))
    }

    /// The activation's kernels, `None` for the identity (`y = z`, `z̄ = ȳ`).
    fn kernels(self) -> Option<Kernels> {
        let (name, op, grad) = match self {
            Epilogue::Identity => return None,
            Epilogue::Tanh => ("tanh", UnaryOp::Tanh, BinaryOp::TanhGrad),
            Epilogue::Sigmoid => ("sigmoid", UnaryOp::Sigmoid, BinaryOp::SigmoidGrad),
            // `ȳ·(a > 0 ? 1 : 0)` with `a = y`: `y > 0` exactly where `z > 0`.
            Epilogue::Relu => ("relu", UnaryOp::Relu, BinaryOp::LeakyReluGrad(0.0)),
        };
        Some(Kernels { name, op, grad })
    }
}

/// Rule of `f(Σₖ leaves[2k]·op(leaves[2k+1]) + Σ leaves[2·products..])` (see the module
/// docs), where `op(b)` is `bᵀ` (last two axes) if bit `k` of `transposed` is set (the
/// expression was `a.matmul(&b.t())`: the product reads `b` transposed, with no copy), else `b`:
/// the value and the pullback to the tangents of all `N` leaves.
///
/// # Panics
/// If `products` is 0 or more than `N / 2`; if the shapes or dtypes do not fit (with the
/// message of the op they do not fit: `matmul` or `add`).
#[track_caller]
pub(crate) fn affine_rule<B: Backend, const N: usize>(
    leaves: [Tensor<B>; N],
    products: usize,
    transposed: u32,
    act: Epilogue,
    needs: [bool; N],
) -> (
    Tensor<B>,
    impl FnOnce(TensorTangent<B>) -> [TensorTangent<B>; N] + use<B, N>,
) {
    assert!(
        (1..=N / 2).contains(&products),
        "affine_rule: {products} products of {N} leaves"
    );
    let refs = leaves.each_ref();
    let t = move |k: usize| transposed >> k & 1 == 1;
    let y = match fast_shape(&refs, products, t) {
        Some([m, n]) => fused(&refs, products, t, act, [m, n]),
        None => unfused(&refs, products, t, act),
    };
    let any = needs.iter().any(|&n| n);
    let saved_y = (any && act.kernels().is_some()).then(|| y.clone());
    // A layer `f(x·W + b)` whose bias needs its tangent `Σᵢ z̄[i, :]`: taken by the op that
    // writes `z̄` where that op runs (below).
    let bias_sums = products == 1
        && N == 3
        && needs[2]
        && matches!(*y.shape(), [_, n] if matches!(*leaves[2].shape(), [q] | [1, q] if q == n));
    let mut i = 0;
    let saved: [Saved<B>; N] = leaves.map(|leaf| {
        i += 1;
        Saved::of(leaf, i - 1, products, needs)
    });
    (y, move |d: TensorTangent<B>| {
        let mut bias_tangent = None;
        let dz = match (act.kernels(), saved_y) {
            // `ȳ` a product not yet computed and a bias that needs its tangent: `z̄` and the
            // bias's `Σᵢ z̄[i, :]` in one op, the rows summed as they are written.
            (Some(k), Some(y))
                if bias_sums
                    && let TensorTangent::Outer(p) = &d
                    && let Some((dz, sums)) = p.with_grad_sums(&y, k.grad) =>
            {
                bias_tangent = Some(sums);
                TensorTangent::Dense(dz)
            }
            // `ȳ` a product not yet computed (the next layer's `z̄·Wᵀ`): `z̄` in one op, the
            // derivative applied as the product is written.
            (Some(k), Some(y))
                if let TensorTangent::Outer(p) = &d
                    && let Some(dz) = p.with_grad(&y, k.grad) =>
            {
                TensorTangent::Dense(dz)
            }
            // As the activations' own rules: written into `ȳ`'s buffer when it is unshared.
            (Some(k), Some(y)) => super::slot_owned(true, d.settled(), |d| {
                binary_given((&y).into(), d.into(), k.grad, k.name)
            }),
            _ => d.settled(),
        };
        let mut out: [TensorTangent<B>; N] = std::array::from_fn(|_| TensorTangent::Zero);
        for k in 0..products {
            let (a, b) = (2 * k, 2 * k + 1);
            let needs = [needs[a], needs[b]];
            if !needs[0] && !needs[1] {
                continue;
            }
            let (sa, sb) = (saved[a].shape(), saved[b].shape());
            // The product's own tangent, where the sum broadcast it wider.
            let widened;
            let dk = match &dz {
                TensorTangent::Dense(d) if !is_product_shape(d.shape(), sa, sb, t(k)) => {
                    widened = TensorTangent::Dense(d.sum_to(&product_shape(sa, sb, t(k))));
                    &widened
                }
                other => other,
            };
            let kept = [saved[a].tensor(), saved[b].tensor()];
            let (da, db) = matmul_tangents(dk, kept, [sa, sb], needs, t(k));
            (out[a], out[b]) = (da, db);
        }
        for j in 2 * products..N {
            out[j] = match bias_tangent.take() {
                Some(sums) => TensorTangent::Dense(sums.with_shape(saved[j].shape())),
                None => slot(needs[j], &dz, |d| d.sum_to(saved[j].shape())),
            };
        }
        out
    })
}

/// What the pullback keeps of a leaf: the tensor where its partner in a product needs a
/// tangent (a factor's tangent is computed from the other factor), else its shape where it
/// needs one itself, else nothing.
enum Saved<B: Backend> {
    Tensor(Tensor<B>),
    Shape(Shape),
    Nothing,
}

impl<B: Backend> Saved<B> {
    /// What to keep of leaf `i`.
    fn of<const N: usize>(leaf: Tensor<B>, i: usize, products: usize, needs: [bool; N]) -> Self {
        if i < 2 * products && needs[i ^ 1] {
            Saved::Tensor(leaf)
        } else if needs[i] {
            Saved::Shape(leaf.shape_owned())
        } else {
            Saved::Nothing
        }
    }

    fn tensor(&self) -> Option<&Tensor<B>> {
        match self {
            Saved::Tensor(t) => Some(t),
            _ => None,
        }
    }

    /// The leaf's shape (kept whenever its tangent or its partner's is needed).
    fn shape(&self) -> &[usize] {
        match self {
            Saved::Tensor(t) => t.shape(),
            Saved::Shape(s) => s,
            Saved::Nothing => &[],
        }
    }
}

/// The shape of `a·op(b)` (`op(b) = bᵀ` if `transposed`), batch axes broadcast, for shapes
/// `matmul` accepted.
fn product_shape(a: &[usize], b: &[usize], transposed: bool) -> Shape {
    let (ra, rb) = (a.len(), b.len());
    let mut out = broadcast_shape("matmul", &a[..ra - 2], &b[..rb - 2]).expect("validated");
    out.extend_from_slice(&[a[ra - 2], b[rb - if transposed { 2 } else { 1 }]]);
    out
}

/// Whether `out` is [`product_shape`]`(a, b, transposed)`, without building it for matrices.
fn is_product_shape(out: &[usize], a: &[usize], b: &[usize], transposed: bool) -> bool {
    match (a, b) {
        ([m, _], [r, c]) => out == [*m, if transposed { *r } else { *c }],
        _ => out == product_shape(a, b, transposed).as_slice(),
    }
}

/// `[m, n]` when every product is 2-D with that result, every bias broadcasts into it without
/// widening it, and all leaves have one float dtype: the case [`fused`] computes.
fn fast_shape<B: Backend, const N: usize>(
    leaves: &[&Tensor<B>; N],
    products: usize,
    transposed: impl Fn(usize) -> bool,
) -> Option<[usize; 2]> {
    let dtype = leaves[0].dtype();
    if !dtype.is_float() || leaves.iter().any(|t| t.dtype() != dtype) {
        return None;
    }
    // `op(b)` as `[k, n]`.
    let op = |k: usize| match *leaves[2 * k + 1].shape() {
        [r, c] if transposed(k) => Some([c, r]),
        [r, c] => Some([r, c]),
        _ => None,
    };
    let (m, n) = (*leaves[0].shape().first()?, op(0)?[1]);
    let fits_product = |k: usize| {
        let a = leaves[2 * k].shape();
        a.len() == 2 && op(k).is_some_and(|[inner, cols]| a[1] == inner && a[0] == m && cols == n)
    };
    let products_fit = (0..products).all(fits_product);
    let biases_fit = leaves[2 * products..]
        .iter()
        .all(|c| broadcast_shape("add", c.shape(), &[m, n]).is_ok_and(|s| s.as_slice() == [m, n]));
    (products_fit && biases_fit).then_some([m, n])
}

/// The fused case: the products summed into one new buffer, the biases added and the
/// activation applied in it. The sums run in the unfused order (each product in full, added to
/// the sum so far, then each bias), so the values are the unfused ones to the last bit.
fn fused<B: Backend, const N: usize>(
    leaves: &[&Tensor<B>; N],
    products: usize,
    transposed: impl Fn(usize) -> bool,
    act: Epilogue,
    [m, n]: [usize; 2],
) -> Tensor<B> {
    let spec = |k: usize| MatmulSpec {
        batch: 1,
        m,
        k: leaves[2 * k].shape()[1],
        n,
        lhs_batch_stride: 0,
        rhs_batch_stride: 0,
        lhs_transposed: false,
        rhs_transposed: transposed(k),
    };
    let (a, b) = (leaves[0].storage(), leaves[1].storage());
    let biases = &leaves[2 * products..];
    let row_bias = |c: &Tensor<B>| matches!(*c.shape(), [q] | [1, q] if q == n);
    if products == 1 && biases.len() <= 1 && biases.iter().all(|c| row_bias(c)) {
        // A layer `f(x·W + b)`: one op, the bias and activation applied as the product's
        // blocks are written (the values of the steps below, to the last bit).
        let bias = biases.first().map(|c| c.storage());
        let z = B::matmul_epilogue(a, b, &spec(0), bias, act.kernels().map(|k| k.op));
        return Tensor::from_storage(z, [m, n]);
    }
    let mut z = B::matmul(a, b, &spec(0));
    for k in 1..products {
        let (a, b) = (leaves[2 * k].storage(), leaves[2 * k + 1].storage());
        B::matmul_acc(a, b, &spec(k), 1.0, &mut z);
    }
    for c in biases {
        if c.len() == m * n {
            // Broadcast only along axes of size 1: the elements line up.
            B::binary_assign(BinaryOp::Add, &mut z, c.storage(), true);
        } else {
            // `[n]`, `[1]`, `[]` or a 2-D `[p, q]`, as a 2-D shape aligned with `[m, n]`.
            let shape = match *c.shape() {
                [p, q] => [p, q],
                [q] => [1, q],
                _ => [1, 1],
            };
            z = B::binary(BinaryOp::Add, (&z, &[m, n]), (c.storage(), &shape), &[m, n]);
        }
    }
    if let Some(k) = act.kernels() {
        B::unary_assign(k.op, &mut z);
    }
    Tensor::from_storage(z, [m, n])
}

/// Any other case, by the unfused ops (which report what does not fit).
#[track_caller]
fn unfused<B: Backend, const N: usize>(
    leaves: &[&Tensor<B>; N],
    products: usize,
    transposed: impl Fn(usize) -> bool,
    act: Epilogue,
) -> Tensor<B> {
    let product = |k: usize| {
        let (a, b) = (leaves[2 * k], leaves[2 * k + 1]);
        if transposed(k) {
            a.matmul(&b.t())
        } else {
            a.matmul(b)
        }
    };
    let mut z = product(0);
    for k in 1..products {
        z = z + product(k);
    }
    for &c in &leaves[2 * products..] {
        z = z + c;
    }
    match act.kernels() {
        Some(k) => z.unary(k.op, k.name),
        None => z,
    }
}

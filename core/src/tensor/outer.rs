//! [`OuterSum`]: a matrix product `op(A)·op(G)` kept as its operands until it is known where it goes.
//!
//! The tangent of the weight `W` of `y = x·W` is `xᵀ·ȳ`, a sum of one outer product per row.
//! When `W` is used in every iteration of a loop (an RNN over time steps), its tangent is the
//! sum of one such product per iteration, and computing each product as it comes into a buffer
//! of its own costs an allocation and an elementwise sum per iteration besides the product —
//! for a batch-1 RNN, small operations whose fixed cost is most of their time. Kept as its
//! operands, the product is computed where it is read: added into the accumulator's buffer
//! by one GEMM with β = 1 ([`Backend::matmul_acc`]) when the accumulator is a tensor no other
//! tensor shares, else into a new buffer.
//!
//! An earlier version kept every product of a loop pending and multiplied them out once, as
//! one product of the stacked rows (`[A₁; …; A_T]ᵀ·[G₁; …; G_T]`, as cuDNN computes recurrent
//! weight gradients). On the CPU the stacking cost more than it saved: a copy of every operand
//! into the stacks (one call per product, as the GEMM-accumulate is), the operands held alive
//! until the end, and the bookkeeping of the list. On the 100-step RNN of `benches/steps.rs`
//! (callgrind, an uncommitted probe of that loop) the stacking and its final products were a
//! sixth of the instructions and the products added as they come are about as many, but the
//! whole gradient runs 7% fewer instructions and about 11% faster (docs/tensors.md).

use super::{Backend, DType, Tensor, TensorTangent};
use crate::ops::matmul::{gemm, gemm_acc, product_spec};
use adjoint_backend::{BinaryOp, MatmulSpec};
use std::sync::OnceLock;

/// `op(A)·op(G)` of two matrices of one dtype and device, `op` transposing where a flag is
/// set: an `[m, n]` tensor not yet computed. A weight's tangent `Aᵀ·G` (`A: [k, m]`, `G: [k,
/// n]`), or an input's `G·Wᵀ` (`G: [m, k]`, `W: [n, k]`).
///
/// Made by the pullback of [`Tensor::matmul`] for 2-D operands; added into an accumulator by
/// [`TangentVector::plus_assign`](crate::TangentVector::plus_assign), computed with an
/// activation's derivative applied by the fused layer's pullback (`core/src/ops/affine.rs`:
/// [`Backend::matmul_grad`]), and computed by [`to_tensor`](OuterSum::to_tensor) (which every
/// other accessor of [`TensorTangent`](super::TensorTangent) calls).
#[derive(Clone, Debug)]
pub struct OuterSum<B: Backend> {
    /// `A`, stored `[k, m]` (transposed) or `[m, k]`.
    a: Tensor<B>,
    /// `G`, stored `[k, n]` or `[n, k]` (transposed).
    g: Tensor<B>,
    /// Whether `A` and `G` are read transposed.
    transposed: [bool; 2],
    /// The product, once a reader by reference has computed it (a gradient's norm, then the
    /// optimizer's step): read again, it is not computed again.
    product: OnceLock<Tensor<B>>,
}

impl<B: Backend> OuterSum<B> {
    /// The tangent `aᵀ·g` for 2-D `a: [k, m]`, `g: [k, n]`: kept as the two operands if they
    /// hold no more elements than the product or 64 Ki (`k·(m + n) ≤ max(m·n, 2¹⁶)`), else
    /// computed (a large batch against a small weight: the operands would hold more memory
    /// than the product, for longer).
    pub(crate) fn tangent(a: Tensor<B>, g: Tensor<B>) -> TensorTangent<B> {
        assert!(
            a.rank() == 2 && g.rank() == 2 && a.shape()[0] == g.shape()[0],
            "OuterSum: operands {:?} and {:?} are not [k, m] and [k, n]",
            a.shape(),
            g.shape()
        );
        let (k, [m, n]) = (a.shape()[0], [a.shape()[1], g.shape()[1]]);
        if k * (m + n) > (m * n).max(1 << 16) {
            return TensorTangent::Dense(gemm(&a, true, &g, false));
        }
        TensorTangent::Outer(OuterSum {
            transposed: [true, false],
            a,
            g,
            product: OnceLock::new(),
        })
    }

    /// The tangent `g·op(w)ᵀ` of `x` in `y = x·op(w)` for 2-D `g = ȳ` and `w` (`op(w) = wᵀ`
    /// if `w_transposed`), kept as its operands: both live on anyway (`w` is the weight, and
    /// `g` its tangent's operand), and the reader may be a layer's pullback that applies its
    /// activation's derivative as the product is written.
    pub(crate) fn input(g: Tensor<B>, w: Tensor<B>, w_transposed: bool) -> TensorTangent<B> {
        let k = if w_transposed {
            w.shape()[0]
        } else {
            w.shape()[1]
        };
        assert!(
            g.rank() == 2 && w.rank() == 2 && g.shape()[1] == k,
            "OuterSum: operands {:?} and {:?} are not [m, k] and op(w) [k, n]",
            g.shape(),
            w.shape()
        );
        TensorTangent::Outer(OuterSum {
            transposed: [false, !w_transposed],
            a: g,
            g: w,
            product: OnceLock::new(),
        })
    }

    /// The shape `[m, n]` of the product.
    pub fn shape(&self) -> [usize; 2] {
        let [ta, tg] = self.transposed;
        [
            self.a.shape()[usize::from(ta)],
            self.g.shape()[usize::from(!tg)],
        ]
    }

    /// `op(A)·op(G)` into a new tensor.
    fn product(&self) -> Tensor<B> {
        let [ta, tg] = self.transposed;
        gemm(&self.a, ta, &self.g, tg)
    }

    /// `acc ← acc + γ·op(A)·op(G)` in the buffer `acc`.
    fn accumulate(&self, factor: f64, acc: &mut B::Storage) {
        let [ta, tg] = self.transposed;
        gemm_acc(&self.a, ta, &self.g, tg, factor, acc);
    }

    /// `grad(y, op(A)·op(G))` elementwise ([`Backend::matmul_grad`]): the tangent `z̄ = ȳ·f′(z)`
    /// of an activation `y = f(z)` whose `ȳ` is this product, in one op. `None` where `y` does
    /// not have the product's shape and dtype, or the product was computed already.
    pub(crate) fn with_grad(&self, y: &Tensor<B>, grad: BinaryOp) -> Option<Tensor<B>> {
        let spec = self.grad_spec(y)?;
        let z = B::matmul_grad(self.a.storage(), self.g.storage(), &spec, y.storage(), grad);
        Some(Tensor::from_storage(z, y.shape()))
    }

    /// The product's spec for [`with_grad`](OuterSum::with_grad) and
    /// [`with_grad_sums`](OuterSum::with_grad_sums): `None` where `y` does not fit the product
    /// or the product was computed already.
    fn grad_spec(&self, y: &Tensor<B>) -> Option<MatmulSpec> {
        if self.is_computed() || !self.fits(y) {
            return None;
        }
        let [ta, tg] = self.transposed;
        Some(product_spec(self.a.shape(), ta, self.g.shape(), tg))
    }

    /// [`with_grad`](OuterSum::with_grad) and the sums of the result's rows, `Σᵢ z̄[i, :]`
    /// (`[n]`, the values of `z̄.sum_to(&[n])`): `z̄` and the tangent of a bias added to every
    /// row of `z`, in one op ([`Backend::matmul_grad_sums`]). `None` where
    /// [`with_grad`](OuterSum::with_grad) gives none.
    pub(crate) fn with_grad_sums(
        &self,
        y: &Tensor<B>,
        grad: BinaryOp,
    ) -> Option<(Tensor<B>, Tensor<B>)> {
        let spec = self.grad_spec(y)?;
        let (a, g) = (self.a.storage(), self.g.storage());
        let (z, sums) = B::matmul_grad_sums(a, g, &spec, y.storage(), grad);
        let n = y.shape()[1];
        Some((
            Tensor::from_storage(z, y.shape()),
            Tensor::from_storage(sums, [n]),
        ))
    }

    /// The dtype of the operands and the product.
    pub fn dtype(&self) -> DType {
        self.a.dtype()
    }

    /// The dtype and device of the operands.
    fn kind(&self) -> (DType, B::Device) {
        (self.a.dtype(), self.a.device())
    }

    /// Whether `t` has the product's shape, dtype and device (so that the product can be
    /// added into it).
    pub(crate) fn fits(&self, t: &Tensor<B>) -> bool {
        t.shape() == self.shape() && (t.dtype(), t.device()) == self.kind()
    }

    /// `acc ← acc + op(A)·op(G)` ([`fits`](OuterSum::fits) holds): in `acc`'s buffer by a GEMM with
    /// β = 1 if no other tensor shares it, else into a new one.
    pub(crate) fn add_to(self, acc: &mut Tensor<B>) {
        if self.is_computed() {
            *acc = self.into_tensor() + &*acc;
            return;
        }
        match acc.unique_storage_mut() {
            Some(buf) => self.accumulate(1.0, buf),
            None => *acc = self.into_tensor() + &*acc,
        }
    }

    /// Whether the product has been computed and kept (by [`computed`](OuterSum::computed), a
    /// reader by reference): adding that tensor is then cheaper than
    /// [`add_scaled_into`](OuterSum::add_scaled_into)'s GEMM.
    pub fn is_computed(&self) -> bool {
        self.product.get().is_some()
    }

    /// `target ← target + γ·op(A)·op(G)` in `target`'s own buffer (copied first if another tensor
    /// shares it), by one GEMM with α = γ and β = 1: neither the product nor a scaled operand
    /// is stored. Plain SGD's step (`γ = −lr`) on a weight whose gradient is a product not
    /// yet computed: the gradient's buffer and the update's pass over it are saved, and so is
    /// a pass scaling one operand (1.9% of the MNIST MLP step; docs/perf-log.md, 20th and 23rd
    /// sessions).
    ///
    /// # Panics
    /// If `target` does not have the product's shape, dtype and device.
    #[track_caller]
    pub fn add_scaled_into(&self, factor: f64, target: &mut Tensor<B>) {
        assert!(
            self.fits(target),
            "OuterSum: a product of shape {:?} ({:?}) cannot be added into a tensor of shape {:?} ({:?})",
            self.shape(),
            self.dtype(),
            target.shape(),
            target.dtype()
        );
        self.accumulate(factor, target.storage_mut());
    }

    /// The product as one `[m, n]` tensor, computed on the first read by reference and kept.
    pub fn computed(&self) -> &Tensor<B> {
        self.product.get_or_init(|| self.product())
    }

    /// The product as one `[m, n]` tensor.
    pub fn to_tensor(&self) -> Tensor<B> {
        match self.product.get() {
            Some(t) => t.clone(),
            None => self.product(),
        }
    }

    /// The product as one `[m, n]` tensor (the operands are released).
    pub fn into_tensor(self) -> Tensor<B> {
        self.to_tensor()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TangentVector;

    fn t(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape)
    }

    /// Integers in −5..=5, so that every sum below is exact in `f64` in any order.
    fn ints(rows: usize, cols: usize, seed: usize) -> Tensor {
        let v = (0..rows * cols).map(|i| ((i * 7 + seed * 3) % 11) as f64 - 5.0);
        t(v.collect(), &[rows, cols])
    }

    /// The address of a dense tangent's buffer.
    fn buffer(t: &TensorTangent) -> *const <crate::tensor::Cpu as Backend>::Storage {
        match t {
            TensorTangent::Dense(t) => t.storage(),
            other => panic!("expected a dense tangent, got {other:?}"),
        }
    }

    #[test]
    fn products_add_up_in_the_accumulators_buffer() {
        // [1 2]ᵀ[3 4 5] = [[3 4 5] [6 8 10]], [1 −1]ᵀ[1 0 2] = [[1 0 2] [−1 0 −2]],
        // [0 1]ᵀ[1 1 1] = [[0 0 0] [1 1 1]].
        let p1 = OuterSum::tangent(t(vec![1., 2.], &[1, 2]), t(vec![3., 4., 5.], &[1, 3]));
        let p2 = OuterSum::tangent(t(vec![1., -1.], &[1, 2]), t(vec![1., 0., 2.], &[1, 3]));
        let p3 = OuterSum::tangent(t(vec![0., 1.], &[1, 2]), t(vec![1., 1., 1.], &[1, 3]));
        let mut acc = TensorTangent::zero();
        acc.plus_assign(p1);
        assert!(matches!(&acc, TensorTangent::Outer(s) if s.shape() == [2, 3]));
        acc.plus_assign(p2);
        let first = buffer(&acc);
        acc.plus_assign(p3);
        assert_eq!(
            buffer(&acc),
            first,
            "the third product goes into the same buffer"
        );
        assert_eq!(acc.unwrap().to_vec_f64(), vec![4., 4., 7., 6., 9., 9.]);
    }

    #[test]
    fn a_product_added_to_a_dense_tangent_either_way_round() {
        let (a, g) = (ints(3, 4, 1), ints(3, 5, 2));
        let d = ints(4, 5, 3);
        let want = (a.t().matmul(&g) + &d).to_vec_f64();
        let product = || OuterSum::tangent(a.clone(), g.clone());
        let mut acc = TensorTangent::Dense(d.clone());
        acc.plus_assign(product());
        assert_eq!(acc.unwrap().to_vec_f64(), want);
        let mut acc = product();
        acc.plus_assign(TensorTangent::Dense(d.clone()));
        assert_eq!(acc.unwrap().to_vec_f64(), want);
        // `d` is shared with the accumulators above: never written.
        assert_eq!(d.to_vec_f64(), ints(4, 5, 3).to_vec_f64());
    }

    #[test]
    #[should_panic(expected = "tangent plus: shapes differ")]
    fn a_product_of_another_shape_is_not_added() {
        let mut acc = TensorTangent::Dense(ints(4, 5, 3));
        acc.plus_assign(OuterSum::tangent(ints(3, 5, 1), ints(3, 4, 2)));
    }

    #[test]
    fn a_product_larger_than_the_limit_is_computed_at_once() {
        // 5000·(8 + 8) = 80000 elements > 2¹⁶.
        let (a, g) = (ints(5000, 8, 1), ints(5000, 8, 2));
        let want = a.t().matmul(&g);
        let tangent = OuterSum::tangent(a, g);
        assert!(matches!(tangent, TensorTangent::Dense(_)));
        assert_eq!(tangent.unwrap(), want);
    }

    #[test]
    fn a_scaled_product_is_added_into_the_target() {
        // The product by the plain loops (`[4, 3]·[3, 5]`, then a pass for the factor) and by
        // the GEMM (`[120, 3]·[3, 100]`, the factor its α).
        for (m, n) in [(4, 5), (120, 100)] {
            let (a, g) = (ints(3, m, 1), ints(3, n, 2));
            let target = ints(m, n, 3);
            let want = (a.t().matmul(&g) * -0.5 + &target).to_vec_f64();
            let TensorTangent::Outer(sum) = OuterSum::tangent(a, g) else {
                panic!("small operands are kept")
            };
            let mut t = target.clone();
            assert!(!sum.is_computed());
            sum.add_scaled_into(-0.5, &mut t);
            assert!(!sum.is_computed(), "the product was not stored");
            assert_eq!(t.to_vec_f64(), want, "[{m}, {n}]");
            // `target` shared its buffer with `t`: it was copied, not written.
            assert_eq!(target.to_vec_f64(), ints(m, n, 3).to_vec_f64());
            // A reader by reference computes it once and keeps it.
            let first = sum.computed().storage() as *const _;
            assert!(sum.is_computed());
            assert_eq!(sum.computed().storage() as *const _, first);
        }
    }

    #[test]
    fn an_input_tangent_is_the_product_with_the_weight_transposed() {
        // ȳ: [3, 4] of y = x·op(w), x: [3, 5], against w: [4, 5] stored transposed (y = x·wᵀ)
        // and w: [5, 4] as is; x̄ = ȳ·op(w)ᵀ.
        let g = ints(3, 4, 1);
        for (w, transposed) in [(ints(4, 5, 2), true), (ints(5, 4, 2), false)] {
            let op_w = if transposed { w.t() } else { w.clone() };
            let want = g.matmul(&op_w.t()).to_vec_f64();
            let TensorTangent::Outer(sum) = OuterSum::input(g.clone(), w, transposed) else {
                panic!("an input's tangent is kept as its operands")
            };
            assert_eq!(sum.shape(), [3, 5]);
            assert_eq!(sum.to_tensor().to_vec_f64(), want);
            // With a ReLU's derivative applied: ȳ where y > 0, else 0.
            let y = ints(3, 5, 4);
            let masked: Vec<f64> = want
                .iter()
                .zip(y.to_vec_f64())
                .map(|(&d, y)| if y > 0.0 { d } else { 0.0 * d })
                .collect();
            let dz = sum
                .with_grad(&y, BinaryOp::LeakyReluGrad(0.0))
                .expect("fits");
            assert_eq!(dz.to_vec_f64(), masked);
            // Not for a `y` of another shape.
            assert!(sum.with_grad(&ints(5, 3, 4), BinaryOp::TanhGrad).is_none());
        }
    }

    #[test]
    #[should_panic(
        expected = "a product of shape [4, 5] (F64) cannot be added into a tensor of shape [5, 4] (F64)"
    )]
    fn a_scaled_product_checks_the_targets_shape() {
        let TensorTangent::Outer(sum) = OuterSum::tangent(ints(3, 4, 1), ints(3, 5, 2)) else {
            panic!("small operands are kept")
        };
        sum.add_scaled_into(1.0, &mut ints(5, 4, 3));
    }

    #[test]
    fn a_sum_of_products_reads_like_its_tensor() {
        // [2 3]·[1 4] = 14.
        let sum = OuterSum::tangent(t(vec![2., 3.], &[2, 1]), t(vec![1., 4.], &[2, 1]));
        let dense = TensorTangent::Dense(t(vec![14.], &[1, 1]));
        assert_eq!(sum, dense);
        assert_eq!(sum.dense_ref().unwrap().to_vec_f64(), vec![14.]);
        assert_eq!(sum.clone().plus(dense).unwrap().to_vec_f64(), vec![28.]);
        assert_eq!(sum.clone().scaled(0.5).unwrap().to_vec_f64(), vec![7.]);
        assert!(matches!(sum.settled(), TensorTangent::Dense(_)));
    }
}

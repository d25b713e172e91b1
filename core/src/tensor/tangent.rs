//! [`TensorTangent`]: the tangent of a tensor, and the [`Differentiable`] impl of [`Tensor`].

use super::{Backend, Cpu, OuterSum, Tensor};
use crate::{Differentiable, TangentVector, UnitSeed};
use adjoint_backend::BinaryOp;

/// The derivative with respect to a [`Tensor`]: a tensor of the same shape, a symbolic zero,
/// or a sum of matrix products not yet computed.
///
/// `Zero` carries no shape and allocates nothing: it is what a pullback returns for an input
/// nobody asked a derivative for, and what [`TangentVector::zero`] gives. Adding `Zero` to a
/// dense tangent returns the dense tangent unchanged (no copy).
///
/// `Outer` is what the pullback of [`matmul`](Tensor::matmul) gives its 2-D right operand (a
/// weight): `xᵀ·ȳ` kept as `x` and `ȳ`, so that the tangents of a weight used in every
/// iteration of a loop are each computed straight into the accumulator's buffer instead of
/// into a buffer of their own that is then added (see [`OuterSum`]), and so that plain SGD
/// adds `−γ·xᵀ·ȳ` straight into the weight (one GEMM, no gradient buffer:
/// [`Sgd`](crate::optim::Sgd)). The public `_vjp` functions that `#[differentiable]`
/// generates return a weight's gradient in this form; [`dense`](TensorTangent::dense),
/// [`unwrap`](TensorTangent::unwrap), [`dense_ref`](TensorTangent::dense_ref),
/// [`to_tensor_like`](TensorTangent::to_tensor_like), [`map`](TensorTangent::map), `==` and
/// the optimizers compute it, and [`settled`](TangentVector::settled) turns a whole tangent
/// (a model's) into `Zero` and `Dense` parts.
///
/// ```
/// use adjoint::prelude::*;
/// let g = TensorTangent::Dense(Tensor::ones(&[2]));
/// let z = TensorTangent::zero();
/// assert_eq!(g.clone().plus(z).unwrap().to_vec_f32(), vec![1.0, 1.0]);
/// ```
#[derive(Clone, Debug)]
pub enum TensorTangent<B: Backend = Cpu> {
    /// The zero tangent, of whatever shape is needed.
    Zero,
    /// A tangent stored as a tensor of the primal's shape.
    Dense(Tensor<B>),
    /// `op(A)·op(G)` of a 2-D primal, computed when read or added into an accumulator.
    Outer(OuterSum<B>),
}

impl<B: Backend> PartialEq for TensorTangent<B> {
    /// Equal values: a sum of products equals the tensor it computes to.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (TensorTangent::Zero, TensorTangent::Zero) => true,
            (TensorTangent::Zero, _) | (_, TensorTangent::Zero) => false,
            (a, b) => a.clone().unwrap() == b.clone().unwrap(),
        }
    }
}

impl<B: Backend> TensorTangent<B> {
    /// Whether this is the symbolic zero.
    pub fn is_zero(&self) -> bool {
        matches!(self, TensorTangent::Zero)
    }

    /// The dense tangent (a sum of products computed), or `None` for the symbolic zero.
    pub fn dense(self) -> Option<Tensor<B>> {
        match self {
            TensorTangent::Zero => None,
            TensorTangent::Dense(t) => Some(t),
            TensorTangent::Outer(sum) => Some(sum.into_tensor()),
        }
    }

    /// The dense tangent by reference, or `None` for the symbolic zero (for readers that hold
    /// the tangent by reference, like gradient clipping and the optimizers). A sum of products
    /// is computed on the first such read and kept ([`OuterSum::computed`]), so later readers
    /// do not compute it again.
    pub fn dense_ref(&self) -> Option<&Tensor<B>> {
        match self {
            TensorTangent::Zero => None,
            TensorTangent::Dense(t) => Some(t),
            TensorTangent::Outer(sum) => Some(sum.computed()),
        }
    }

    /// The dense tangent.
    ///
    /// # Panics
    /// If it is the symbolic zero; use [`to_tensor_like`](TensorTangent::to_tensor_like) to get
    /// zeros instead.
    #[track_caller]
    pub fn unwrap(self) -> Tensor<B> {
        self.dense().unwrap_or_else(|| {
            panic!("TensorTangent::unwrap on the symbolic zero tangent (no derivative flowed here)")
        })
    }

    /// The dense tangent, or zeros shaped like `primal` for the symbolic zero.
    pub fn to_tensor_like(self, primal: &Tensor<B>) -> Tensor<B> {
        self.dense().unwrap_or_else(|| primal.zeros_like())
    }

    /// `f` applied to a dense tangent; zero stays zero (for linear maps, as in pullbacks).
    pub fn map(self, f: impl FnOnce(Tensor<B>) -> Tensor<B>) -> Self {
        match self.dense() {
            None => TensorTangent::Zero,
            Some(t) => TensorTangent::Dense(f(t)),
        }
    }
}

impl<B: Backend> From<Tensor<B>> for TensorTangent<B> {
    fn from(t: Tensor<B>) -> Self {
        TensorTangent::Dense(t)
    }
}

impl<B: Backend> TangentVector for TensorTangent<B> {
    fn zero() -> Self {
        TensorTangent::Zero
    }

    /// Elementwise sum; the shapes of two dense tangents must be equal. The sum goes into the
    /// buffer of either tangent that no other tensor shares (see `+` on owned tensors), so
    /// accumulating into a gradient (`plus_assign`) allocates nothing.
    ///
    /// A product not yet computed ([`OuterSum`]) is computed into the other tangent's buffer
    /// (a GEMM with β = 1) where that buffer is unshared; two such products make a dense
    /// tangent (one computed, the other added into it).
    #[track_caller]
    fn plus(mut self, other: Self) -> Self {
        self.plus_assign(other);
        self
    }

    /// [`plus`](TangentVector::plus) into `self`: a dense tangent adds into its own buffer when
    /// no other tensor shares it, and a product not yet computed is computed into it.
    #[track_caller]
    fn plus_assign(&mut self, other: Self) {
        match (&mut *self, other) {
            (_, TensorTangent::Zero) => {}
            (this @ TensorTangent::Zero, t) => *this = t,
            (TensorTangent::Dense(a), TensorTangent::Outer(p)) if p.fits(a) => p.add_to(a),
            (this @ TensorTangent::Outer(_), other) => {
                // A product as the accumulator (a loop's, after its first step): the other
                // tangent, made dense, becomes the buffer the product is added into.
                let product = std::mem::replace(this, other.settled());
                this.plus_assign(product);
            }
            (TensorTangent::Dense(a), TensorTangent::Dense(b))
                if a.shape() == b.shape() && a.dtype() == b.dtype() && a.dtype().is_float() =>
            {
                // The accumulator of a loop: its buffer is its own after the first step.
                match a.unique_storage_mut() {
                    Some(buf) => B::binary_assign(BinaryOp::Add, buf, b.storage(), true),
                    None => *a = b + &*a,
                }
            }
            (this, other) => {
                let a = std::mem::replace(this, TensorTangent::Zero).unwrap();
                let b = other.unwrap();
                assert_eq!(a.shape(), b.shape(), "tangent plus: shapes differ");
                *this = TensorTangent::Dense(a + b);
            }
        }
    }

    fn scaled(self, factor: f64) -> Self {
        self.map(|t| &t * factor)
    }

    /// `Zero` or `Dense`: a sum of products is computed.
    fn settled(self) -> Self {
        match self {
            TensorTangent::Outer(sum) => TensorTangent::Dense(sum.into_tensor()),
            t => t,
        }
    }
}

impl<B: Backend> Differentiable for Tensor<B> {
    type Tangent = TensorTangent<B>;

    /// `self ← self + tangent` (a new buffer; other clones keep the old values).
    #[track_caller]
    fn move_by(&mut self, tangent: &TensorTangent<B>) {
        if let Some(t) = tangent.dense_ref() {
            assert_eq!(
                self.shape(),
                t.shape(),
                "move_by: tangent shape differs from the tensor's"
            );
            *self = &*self + t;
        }
    }
}

impl<B: Backend> UnitSeed for Tensor<B> {
    /// A tensor of ones of the result's shape.
    ///
    /// # Panics
    /// If the tensor has more than one element (its gradient is not defined: use the pullback
    /// with an explicit seed).
    #[track_caller]
    fn unit_seed(&self) -> TensorTangent<B> {
        assert!(
            self.len() == 1,
            "gradient: the result has shape {:?}; a gradient needs a one-element result (reduce it with sum or mean, or call the pullback with a seed)",
            self.shape()
        );
        TensorTangent::Dense(self.ones_like())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(v: &[f64]) -> TensorTangent {
        TensorTangent::Dense(Tensor::from_vec(v.to_vec(), &[v.len()]))
    }

    #[test]
    fn plus_assign_adds_in_place_into_an_unshared_buffer() {
        let mut acc = dense(&[1.0, 2.0, 3.0]);
        let ptr = |t: &TensorTangent| match t {
            TensorTangent::Dense(t) => t.storage() as *const <Cpu as Backend>::Storage,
            _ => std::ptr::null(),
        };
        let first = ptr(&acc);
        acc.plus_assign(dense(&[10.0, 20.0, 30.0]));
        assert_eq!(ptr(&acc), first, "the unshared buffer is reused");
        assert_eq!(acc.clone().unwrap().to_vec_f64(), vec![11.0, 22.0, 33.0]);
        acc.plus_assign(TensorTangent::Zero);
        assert_eq!(acc.unwrap().to_vec_f64(), vec![11.0, 22.0, 33.0]);
    }

    #[test]
    fn plus_assign_never_writes_a_shared_buffer() {
        let mut acc = dense(&[1.0, 2.0]);
        let alias = acc.clone();
        acc.plus_assign(dense(&[0.5, 0.25]));
        assert_eq!(acc.unwrap().to_vec_f64(), vec![1.5, 2.25]);
        assert_eq!(alias.unwrap().to_vec_f64(), vec![1.0, 2.0]);
        // A zero accumulator takes the tangent itself, which a later sum must not modify.
        let t = dense(&[4.0]);
        let mut acc = TensorTangent::zero();
        acc.plus_assign(t.clone());
        acc.plus_assign(dense(&[1.0]));
        assert_eq!(acc.unwrap().to_vec_f64(), vec![5.0]);
        assert_eq!(t.unwrap().to_vec_f64(), vec![4.0]);
    }

    #[test]
    #[should_panic(expected = "tangent plus: shapes differ")]
    fn plus_assign_checks_shapes() {
        let mut acc = dense(&[1.0, 2.0]);
        acc.plus_assign(dense(&[1.0]));
    }
}

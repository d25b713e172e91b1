//! Layout ops. `reshape`, `squeeze` and `unsqueeze` share the buffer; `permute`, `transpose`
//! and `broadcast_to` copy into a new contiguous buffer.
//!
//! | method | `x̄` |
//! |---|---|
//! | `reshape(s)` / `squeeze(a)` / `unsqueeze(a)` | ȳ reshaped to x's shape |
//! | `permute(p)` / `transpose(a, b)` | ȳ permuted by p⁻¹ / transposed back |
//! | `broadcast_to(s)` | ȳ summed over the broadcast axes |

use super::forward::{linear, linear_jvp};
use super::slot;
use crate::NoTangent;
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::shape::{aligned, broadcast_shape, normalize_axis};
use crate::tensor::{Backend, Tensor, TensorTangent};

/// Pullback slots of a layout op with one constant argument.
pub(crate) type OneArg<B> = (TensorTangent<B>, NoTangent);

macro_rules! layout_rule {
    ($(#[$doc:meta])* $vjp:ident $jvp:ident($($arg:ident: $ty:ty),*) => $fwd:ident, |$d:ident, $x:ident| $back:expr; $n:literal, ($($slot:ty),*)) => {
        $(#[$doc])*
        #[track_caller]
        pub fn $vjp(&self, $($arg: $ty,)* needs: [bool; $n]) -> (Self, impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, $($slot),*) + use<B>) {
            let y = self.$fwd($($arg),*);
            let $x = self.shape_owned();
            (y, move |d| (slot(needs[0], &d, |$d| $back), $(<$slot>::default()),*))
        }

        #[doc = concat!("Forward rule of [`", stringify!($fwd), "`](Tensor::", stringify!($fwd), "), linear: `ẏ = ", stringify!($fwd), "(ẋ)`.")]
        #[track_caller]
        pub fn $jvp(&self, $($arg: $ty,)* t: (Option<&TensorTangent<B>>, $(Option<$slot>),*)) -> (Self, Option<TensorTangent<B>>) {
            (self.$fwd($($arg),*), linear(t.0, |d| d.$fwd($($arg),*)))
        }
    };
}

impl<B: Backend> Tensor<B> {
    /// The same elements with shape `shape` (same number of elements; shares the buffer).
    /// Derivative: `x̄ = ȳ` reshaped back.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// let y = x.reshape(&[3, 2]);
    /// assert_eq!((y.shape(), y.to_vec_f64()), (&[3, 2][..], x.to_vec_f64()));
    /// ```
    ///
    /// # Panics
    /// If the element counts differ.
    #[track_caller]
    pub fn reshape(&self, shape: &[usize]) -> Self {
        or_panic(self.try_reshape(shape))
    }

    /// [`reshape`](Tensor::reshape) returning an error on a size mismatch instead of panicking.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// assert_eq!(x.try_reshape(&[6]).unwrap().shape(), [6]);
    /// let e = x.try_reshape(&[4]).unwrap_err();
    /// assert_eq!(e.to_string(), "reshape: cannot reshape [2, 3] (6 elements) to [4]");
    /// ```
    pub fn try_reshape(&self, shape: &[usize]) -> Result<Self, TensorError> {
        ensure(
            shape.iter().product::<usize>() == self.len(),
            "reshape",
            || {
                format!(
                    "cannot reshape {:?} ({} elements) to {shape:?}",
                    self.shape(),
                    self.len()
                )
            },
        )?;
        Ok(self.with_shape(shape))
    }

    /// Axes reordered: output axis `i` is input axis `perm[i]` (copies). Derivative: `x̄ = ȳ`
    /// permuted by the inverse permutation.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1, 2, 3]);
    /// let y = x.permute(&[2, 0, 1]);
    /// assert_eq!(y.shape(), [3, 1, 2]);
    /// assert_eq!(y.to_vec_f64(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    /// ```
    ///
    /// # Panics
    /// If `perm` is not a permutation of `0..rank`.
    #[track_caller]
    pub fn permute(&self, perm: &[usize]) -> Self {
        or_panic(self.try_permute(perm))
    }

    /// [`permute`](Tensor::permute) returning an error on a bad permutation instead of
    /// panicking.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// let e = x.try_permute(&[0, 0]).unwrap_err();
    /// assert_eq!(e.to_string(), "permute: [0, 0] is not a permutation of the axes of [2, 3]");
    /// ```
    pub fn try_permute(&self, perm: &[usize]) -> Result<Self, TensorError> {
        let mut seen = vec![false; self.rank()];
        let ok = perm.len() == self.rank()
            && perm
                .iter()
                .all(|&p| p < seen.len() && !std::mem::replace(&mut seen[p], true));
        ensure(ok, "permute", || {
            format!(
                "{perm:?} is not a permutation of the axes of {:?}",
                self.shape()
            )
        })?;
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(self.clone());
        }
        let shape: Vec<usize> = perm.iter().map(|&p| self.shape()[p]).collect();
        Ok(Tensor::from_storage(
            B::permute(self.storage(), self.shape(), perm),
            shape,
        ))
    }

    /// Axes `a` and `b` swapped (negative axes count from the end): a
    /// [`permute`](Tensor::permute). Derivative: `x̄ = ȳ` with the same axes swapped back.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 1, 2]);
    /// assert_eq!(x.transpose(0, -1).shape(), [2, 1, 3]);
    /// assert_eq!(x.transpose(0, -1).to_vec_f64(), [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
    /// ```
    ///
    /// # Panics
    /// On an axis out of range.
    #[track_caller]
    pub fn transpose(&self, a: isize, b: isize) -> Self {
        let (a, b) = (self.axis("transpose", a), self.axis("transpose", b));
        let mut perm: Vec<usize> = (0..self.rank()).collect();
        perm.swap(a, b);
        self.permute(&perm)
    }

    /// The transpose of the last two axes (a matrix transpose), `y[…, j, i] = x[…, i, j]`.
    /// Derivative: `x̄ = ȳᵀ`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// assert_eq!(x.t().to_vec_f64(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     (x.t() * Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])).sum_all()
    /// }
    /// // The weights transposed back.
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
    /// ```
    ///
    /// # Panics
    /// If the rank is below 2.
    #[track_caller]
    pub fn t(&self) -> Self {
        self.transpose(-2, -1)
    }

    /// `x` repeated along broadcast axes up to `shape` (NumPy rules; copies). Derivative:
    /// `x̄ = ȳ` summed over the broadcast axes ([`sum_to`](Tensor::sum_to)).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let b = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    /// assert_eq!(b.broadcast_to(&[3, 2]).to_vec_f64(), [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]);
    ///
    /// #[differentiable]
    /// fn f(b: &Tensor) -> Tensor {
    ///     b.broadcast_to(&[3, 2]).sum_all()
    /// }
    /// assert_eq!(gradient(f_vjp(&b)).unwrap().to_vec_f64(), [3.0, 3.0]);
    /// ```
    ///
    /// # Panics
    /// If `x`'s shape does not broadcast to `shape`.
    #[track_caller]
    pub fn broadcast_to(&self, shape: &[usize]) -> Self {
        or_panic(self.try_broadcast_to(shape))
    }

    /// [`broadcast_to`](Tensor::broadcast_to) returning an error instead of panicking when the
    /// shape does not broadcast.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    /// let e = x.try_broadcast_to(&[2, 3]).unwrap_err();
    /// assert_eq!(e.to_string(), "broadcast_to: shape [2] does not broadcast to [2, 3]");
    /// ```
    pub fn try_broadcast_to(&self, shape: &[usize]) -> Result<Self, TensorError> {
        let ok = self.rank() <= shape.len()
            && broadcast_shape("broadcast_to", self.shape(), shape).as_deref() == Ok(shape);
        ensure(ok, "broadcast_to", || {
            format!("shape {:?} does not broadcast to {shape:?}", self.shape())
        })?;
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let from = aligned(self.shape(), shape.len());
        Ok(Tensor::from_storage(
            B::broadcast(self.storage(), &from, shape),
            shape,
        ))
    }

    /// Removes axis `axis`, which must have size 1 (shares the buffer). Derivative: `x̄ = ȳ`
    /// with the axis put back.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0], &[2, 1]);
    /// assert_eq!(x.squeeze(-1).shape(), [2]);
    /// ```
    ///
    /// # Panics
    /// On an axis out of range or of a size other than 1.
    #[track_caller]
    pub fn squeeze(&self, axis: isize) -> Self {
        let a = self.axis("squeeze", axis);
        assert!(
            self.shape()[a] == 1,
            "squeeze: axis {axis} of shape {:?} has size {}, not 1",
            self.shape(),
            self.shape()[a]
        );
        let mut shape = self.shape().to_vec();
        shape.remove(a);
        self.with_shape(shape)
    }

    /// Inserts an axis of size 1 at position `axis` (`0..=rank`; negative counts from the end,
    /// `-1` appends; shares the buffer). Derivative: `x̄ = ȳ` with the axis removed.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    /// assert_eq!(x.unsqueeze(0).shape(), [1, 2]);
    /// assert_eq!(x.unsqueeze(-1).shape(), [2, 1]);
    /// ```
    ///
    /// # Panics
    /// On a position beyond the rank.
    #[track_caller]
    pub fn unsqueeze(&self, axis: isize) -> Self {
        let a = or_panic(normalize_axis(
            "unsqueeze",
            axis,
            self.rank() + 1,
            self.shape(),
        ));
        let mut shape = self.shape().to_vec();
        shape.insert(a, 1);
        self.with_shape(shape)
    }

    /// All axes from `start` on merged into one: `[a, b, c, d].flatten_from(1) = [a, b·c·d]`
    /// (shares the buffer). Derivative: `x̄ = ȳ` reshaped back.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::zeros(&[2, 3, 4]);
    /// assert_eq!(x.flatten_from(1).shape(), [2, 12]);
    /// ```
    ///
    /// # Panics
    /// If `start` is beyond the rank.
    #[track_caller]
    pub fn flatten_from(&self, start: usize) -> Self {
        assert!(
            start <= self.rank(),
            "flatten_from: start {start} beyond the rank of {:?}",
            self.shape()
        );
        let mut shape = self.shape()[..start].to_vec();
        shape.push(self.shape()[start..].iter().product());
        self.with_shape(shape)
    }

    #[track_caller]
    pub(crate) fn axis(&self, op: &'static str, axis: isize) -> usize {
        or_panic(normalize_axis(op, axis, self.rank(), self.shape()))
    }

    layout_rule!(
        /// Derivative rule of [`reshape`](Tensor::reshape).
        reshape_vjp_full reshape_jvp_full(shape: &[usize]) => reshape, |d, x| d.reshape(&x); 2, (NoTangent)
    );
    layout_rule!(
        /// Derivative rule of [`broadcast_to`](Tensor::broadcast_to).
        broadcast_to_vjp_full broadcast_to_jvp_full(shape: &[usize]) => broadcast_to, |d, x| d.sum_to(&x); 2, (NoTangent)
    );
    layout_rule!(
        /// Derivative rule of [`squeeze`](Tensor::squeeze).
        squeeze_vjp_full squeeze_jvp_full(axis: isize) => squeeze, |d, x| d.reshape(&x); 2, (NoTangent)
    );
    layout_rule!(
        /// Derivative rule of [`unsqueeze`](Tensor::unsqueeze).
        unsqueeze_vjp_full unsqueeze_jvp_full(axis: isize) => unsqueeze, |d, x| d.reshape(&x); 2, (NoTangent)
    );
    layout_rule!(
        /// Derivative rule of [`flatten_from`](Tensor::flatten_from).
        flatten_from_vjp_full flatten_from_jvp_full(start: usize) => flatten_from, |d, x| d.reshape(&x); 2, (NoTangent)
    );
    layout_rule!(
        /// Derivative rule of [`t`](Tensor::t).
        t_vjp_full t_jvp_full() => t, |d, x| { let _ = x; d.t() }; 1, ()
    );

    /// Derivative rule of [`permute`](Tensor::permute): `x̄ = ȳ` permuted by `perm⁻¹`.
    #[track_caller]
    pub fn permute_vjp_full(
        &self,
        perm: &[usize],
        needs: [bool; 2],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> OneArg<B> + use<B>) {
        let y = self.permute(perm);
        let mut inverse = vec![0; perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p] = i;
        }
        (y, move |d| {
            (slot(needs[0], &d, |d| d.permute(&inverse)), NoTangent)
        })
    }

    /// Derivative rule of [`transpose`](Tensor::transpose).
    #[track_caller]
    pub fn transpose_vjp_full(
        &self,
        a: isize,
        b: isize,
        needs: [bool; 3],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent, NoTangent) + use<B>,
    ) {
        (self.transpose(a, b), move |d| {
            (
                slot(needs[0], &d, |d| d.transpose(a, b)),
                NoTangent,
                NoTangent,
            )
        })
    }
}

linear_jvp! {
    /// Forward rule of [`permute`](Tensor::permute), linear: `ẏ = ẋ` permuted by `perm`.
    permute_jvp_full(perm: &[usize] => NoTangent) => |d| d.permute(perm);
    /// Forward rule of [`transpose`](Tensor::transpose), linear: `ẏ = ẋ` with axes `a`, `b`
    /// swapped.
    transpose_jvp_full(a: isize => NoTangent, b: isize => NoTangent) => |d| d.transpose(a, b);
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_unary, rand};

    #[test]
    fn layout_rules() {
        let x = || rand(&[2, 3, 4], 9);
        check_unary("reshape", x(), |x| {
            x.reshape_vjp_full(&[6, 4], [true, false])
        });
        check_unary("permute", x(), |x| {
            x.permute_vjp_full(&[2, 0, 1], [true, false])
        });
        check_unary("transpose", x(), |x| {
            x.transpose_vjp_full(0, -1, [true, false, false])
        });
        check_unary("t", x(), |x| x.t_vjp_full([true]));
        check_unary("broadcast_to", rand(&[3, 1], 9), |x| {
            x.broadcast_to_vjp_full(&[2, 3, 4], [true, false])
        });
        check_unary("squeeze", rand(&[3, 1], 9), |x| {
            x.squeeze_vjp_full(1, [true, false])
        });
        check_unary("unsqueeze", x(), |x| {
            x.unsqueeze_vjp_full(-1, [true, false])
        });
        check_unary("flatten_from", x(), |x| {
            x.flatten_from_vjp_full(1, [true, false])
        });
    }

    #[test]
    fn values() {
        let x = crate::Tensor::from_vec(vec![1.0_f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        assert_eq!(x.t().to_vec_f32(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(x.t().shape(), &[3, 2]);
        assert_eq!(x.unsqueeze(0).shape(), &[1, 2, 3]);
        assert!(x.reshape(&[3, 2]).shares_storage_with(&x));
    }

    #[test]
    #[should_panic(expected = "reshape: cannot reshape [2, 3] (6 elements) to [4]")]
    fn bad_reshape() {
        let _ = crate::Tensor::zeros(&[2, 3]).reshape(&[4]);
    }
}

//! Comparisons and selection.
//!
//! Comparisons return a mask: a tensor of the operands' float dtype holding `1` where the
//! relation holds and `0` elsewhere (broadcast shapes). Masks are constants: comparisons have no
//! derivative rule, so calling one on active values in `#[differentiable]` code keeps it as
//! written, and the mask carries no tangent.
//!
//! `where_(mask, a, b)` picks `a` where `mask ≠ 0` and `b` elsewhere, broadcasting all three;
//! its rule sends `ȳ` to `a` where the mask is set and to `b` elsewhere (summed over broadcast
//! axes), and gives the mask no tangent.

use super::forward::{linear, sum_terms, zero_if};
use super::slot;
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::shape::{aligned, broadcast_shape};
use crate::tensor::{Backend, Tensor, TensorTangent};
use adjoint_backend::BinaryOp;

macro_rules! comparisons {
    ($($(#[$doc:meta])* $name:ident $vjp:ident $jvp:ident $op:ident;)*) => {
        impl<B: Backend> Tensor<B> {$(
            $(#[$doc])*
            ///
            /// # Panics
            /// If the shapes do not broadcast or the dtypes differ.
            #[track_caller]
            pub fn $name(&self, rhs: &Self) -> Self {
                self.binary(rhs, BinaryOp::$op, stringify!($name))
            }

            #[doc = concat!("Rule of [`", stringify!($name), "`](Tensor::", stringify!($name), "): a step function, so both tangents are zero (symbolic, no work).")]
            #[track_caller]
            pub fn $vjp(&self, rhs: &Self, _needs: [bool; 2]) -> (Self, impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, TensorTangent<B>) + use<B>) {
                (self.$name(rhs), |_| (TensorTangent::Zero, TensorTangent::Zero))
            }

            #[doc = concat!("Forward rule of [`", stringify!($name), "`](Tensor::", stringify!($name), "): a step function, so the tangent is zero (symbolic, no work).")]
            #[track_caller]
            pub fn $jvp(&self, rhs: &Self, t: (Option<&TensorTangent<B>>, Option<&TensorTangent<B>>)) -> (Self, Option<TensorTangent<B>>) {
                (self.$name(rhs), zero_if(t.0.is_some() || t.1.is_some()))
            }
        )*}
    };
}

comparisons! {
    /// The mask `𝟙(a = b)` (1 where equal, else 0), with broadcasting. Derivative: zero for
    /// both operands (a step function).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    /// assert_eq!(a.eq_mask(&Tensor::from_vec(vec![2.0], &[1])).to_vec_f64(), [0.0, 1.0, 0.0]);
    /// ```
    eq_mask eq_mask_vjp_full eq_mask_jvp_full Eq;
    /// The mask `𝟙(a < b)`, with broadcasting. Derivative: zero for both operands.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    /// assert_eq!(a.lt(&Tensor::from_vec(vec![2.0], &[1])).to_vec_f64(), [1.0, 0.0, 0.0]);
    /// ```
    lt lt_vjp_full lt_jvp_full Lt;
    /// The mask `𝟙(a ≤ b)`, with broadcasting. Derivative: zero for both operands.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    /// assert_eq!(a.le(&Tensor::from_vec(vec![2.0], &[1])).to_vec_f64(), [1.0, 1.0, 0.0]);
    /// ```
    le le_vjp_full le_jvp_full Le;
    /// The mask `𝟙(a > b)`, with broadcasting. Derivative: zero for both operands, so a mask
    /// computed from an active value is a constant factor:
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![-1.0, 2.0, 3.0], &[3]);
    /// assert_eq!(x.gt(&Tensor::from_vec(vec![0.0], &[1])).to_vec_f64(), [0.0, 1.0, 1.0]);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     (x * x.gt(&Tensor::from_vec(vec![0.0], &[1]))).sum_all() // Σ of the positive x
    /// }
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.0, 1.0, 1.0]);
    /// ```
    gt gt_vjp_full gt_jvp_full Gt;
    /// The mask `𝟙(a ≥ b)`, with broadcasting. Derivative: zero for both operands.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    /// assert_eq!(a.ge(&Tensor::from_vec(vec![2.0], &[1])).to_vec_f64(), [0.0, 1.0, 1.0]);
    /// ```
    ge ge_vjp_full ge_jvp_full Ge;
}

impl<B: Backend> Tensor<B> {
    /// `mask ≠ 0 ? on_true : on_false` elementwise, all three broadcast together; `self` is the
    /// mask (any float tensor, e.g. from [`gt`](Tensor::gt)). Derivative: `ā = Σ↓ ȳ·𝟙(mask ≠ 0)`
    /// for `on_true`, `b̄ = Σ↓ ȳ·𝟙(mask = 0)` for `on_false`, zero for the mask.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let mask = Tensor::from_vec(vec![1.0, 0.0, 1.0], &[3]);
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    /// let b = Tensor::from_vec(vec![-1.0], &[1]);
    /// assert_eq!(mask.where_(&a, &b).to_vec_f64(), [1.0, -1.0, 3.0]);
    ///
    /// #[differentiable(wrt(a, b))]
    /// fn f(mask: &Tensor, a: &Tensor, b: &Tensor) -> Tensor {
    ///     mask.where_(a, b).sum_all()
    /// }
    /// let (da, db) = gradient(f_vjp(&mask, &a, &b));
    /// assert_eq!(da.unwrap().to_vec_f64(), [1.0, 0.0, 1.0]);
    /// assert_eq!(db.unwrap().to_vec_f64(), [1.0]); // b is broadcast, picked once
    /// ```
    ///
    /// # Panics
    /// If the shapes do not broadcast or the branch dtypes differ.
    #[track_caller]
    pub fn where_(&self, on_true: &Self, on_false: &Self) -> Self {
        or_panic(self.try_where(on_true, on_false))
    }

    /// [`where_`](Tensor::where_) returning an error on bad input (shapes that do not broadcast,
    /// a tensor not of a float dtype, branch dtypes that differ) instead of panicking.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let mask = Tensor::from_vec(vec![1.0, 0.0, 1.0], &[3]);
    /// let e = mask.try_where(&mask, &Tensor::from_vec(vec![0.0; 2], &[2])).unwrap_err();
    /// assert!(e.to_string().starts_with("where_: shapes [3] and [2] do not broadcast"));
    /// ```
    pub fn try_where(&self, on_true: &Self, on_false: &Self) -> Result<Self, TensorError> {
        self.check_float("where_")?;
        on_true.check_float("where_")?;
        ensure(on_true.dtype() == on_false.dtype(), "where_", || {
            format!(
                "branch dtypes differ: {:?} and {:?}",
                on_true.dtype(),
                on_false.dtype()
            )
        })?;
        let out = broadcast_shape("where_", self.shape(), on_true.shape())?;
        let out = broadcast_shape("where_", &out, on_false.shape())?;
        let r = out.len();
        let (m, t, f) = (
            aligned(self.shape(), r),
            aligned(on_true.shape(), r),
            aligned(on_false.shape(), r),
        );
        let s = B::select(
            (self.storage(), &m),
            (on_true.storage(), &t),
            (on_false.storage(), &f),
            &out,
        );
        Ok(Tensor::from_storage(s, out))
    }

    /// Derivative rule of [`where_`](Tensor::where_): `ā = Σ↓ ȳ·𝟙(mask)`, `b̄ = Σ↓ ȳ·𝟙(¬mask)`;
    /// the mask's tangent is the symbolic zero (a mask is piecewise constant).
    #[track_caller]
    #[allow(
        non_snake_case,
        reason = "generated code calls the rule of `where_` as `where__vjp_full`"
    )]
    pub fn where__vjp_full(
        &self,
        on_true: &Self,
        on_false: &Self,
        needs: [bool; 3],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, TensorTangent<B>, TensorTangent<B>) + use<B>,
    ) {
        let y = self.where_(on_true, on_false);
        let mask = self.clone();
        let (st, sf) = (on_true.shape_owned(), on_false.shape_owned());
        (y, move |d| {
            let zero = |d: &Tensor<B>| d.scalar_like(0.0);
            let dt = slot(needs[1], &d, |d| mask.where_(d, &zero(d)).sum_to(&st));
            let df = slot(needs[2], &d, |d| mask.where_(&zero(d), d).sum_to(&sf));
            (TensorTangent::Zero, dt, df)
        })
    }

    /// Forward rule of [`where_`](Tensor::where_): `ẏ = where(mask, ȧ, 0) + where(mask, 0, ḃ)`;
    /// the mask has no tangent.
    #[track_caller]
    #[allow(
        non_snake_case,
        reason = "generated code calls the rule of `where_` as `where__jvp_full`"
    )]
    pub fn where__jvp_full(
        &self,
        on_true: &Self,
        on_false: &Self,
        t: (
            Option<&TensorTangent<B>>,
            Option<&TensorTangent<B>>,
            Option<&TensorTangent<B>>,
        ),
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = self.where_(on_true, on_false);
        let zero = |d: &Tensor<B>| d.scalar_like(0.0);
        let dt = linear(t.1, |d| self.where_(d, &zero(d)));
        let df = linear(t.2, |d| self.where_(&zero(d), d));
        let mask = zero_if(t.0.is_some());
        let ty = sum_terms(y.shape(), [mask, dt, df]);
        (y, ty)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{boxed, check, rand};

    #[test]
    fn where_rule() {
        let mask = rand(&[3, 1], 3).gt(&rand(&[1], 4));
        check("where_", &[rand(&[3, 4], 1), rand(&[4], 2)], |xs| {
            let (y, pb) = mask.where__vjp_full(&xs[0], &xs[1], [false, true, true]);
            boxed((y, move |d| {
                let (_, a, b) = pb(d);
                (a, b)
            }))
        });
    }

    #[test]
    fn masks() {
        let a = crate::Tensor::from_vec(vec![1.0_f32, 2.0, 3.0], &[3]);
        let b = crate::Tensor::scalar(2.0);
        assert_eq!(a.gt(&b).to_vec_f32(), vec![0.0, 0.0, 1.0]);
        assert_eq!(a.le(&b).to_vec_f32(), vec![1.0, 1.0, 0.0]);
        assert_eq!(
            a.eq_mask(&b).where_(&a, &b.neg()).to_vec_f32(),
            vec![-2.0, 2.0, -2.0]
        );
    }
}

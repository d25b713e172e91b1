//! Arithmetic between a tensor `t` and an `f64` scalar `s` (applied in the tensor's dtype).
//!
//! Only `f64` scalars are accepted, so that a literal (`&x * 2.0`) has one meaning and needs no
//! suffix; an `f32` variable converts losslessly with `f64::from(v)`.
//!
//! | op | value | `t̄` | `s̄` |
//! |---|---|---|---|
//! | `t + s`, `s + t` | t + s | ȳ | Σ ȳ |
//! | `t - s` | t − s | ȳ | −Σ ȳ |
//! | `s - t` | s − t | −ȳ | Σ ȳ |
//! | `t * s`, `s * t` | s·t | s·ȳ | Σ ȳ·t |
//! | `t / s` | t / s | ȳ / s | −Σ ȳ·t / s² |
//! | `s / t` | s / t | −ȳ·y / t | Σ ȳ / t |
//!
//! The scalar's tangent is a host number: computing it (only when the scalar is active)
//! downloads one value from the device.
//!
//! ```
//! use adjoint::prelude::*;
//! let t = Tensor::from_vec(vec![1.0, 4.0], &[2]);
//! assert_eq!((2.0 - &t / 4.0).to_vec_f64(), [1.75, 1.0]);
//!
//! #[differentiable]
//! fn f(t: &Tensor, s: f64) -> Tensor {
//!     (t * s).sum_all()
//! }
//! let (dt, ds) = gradient(f_vjp(&t, 3.0));
//! assert_eq!(dt.unwrap().to_vec_f64(), [3.0, 3.0]); // s·ȳ
//! assert_eq!(ds, 5.0); // Σ ȳ·t
//! ```

use super::forward::{TangentArg, linear, self_adjoint_jvp, sum_terms};
use super::slot;
use crate::Float;
use crate::NoTangent;
use crate::TangentVector;
use crate::rules::operators::{AddJvp, DivJvp, MulJvp, SubJvp};
use crate::rules::operators::{AddRule, DivRule, MulRule, SubRule};
use crate::tensor::{Backend, Tensor, TensorTangent};
use adjoint_backend::UnaryOp;

impl<B: Backend> Tensor<B> {
    /// `t + c` elementwise; derivative `t̄ = ȳ` (`c` is a constant: to differentiate with
    /// respect to it, write `t + c`, see the [module docs](self)).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let t = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    /// assert_eq!(t.add_scalar(0.5).to_vec_f64(), [1.5, 2.5]);
    ///
    /// #[differentiable]
    /// fn f(t: &Tensor) -> Tensor {
    ///     (t.add_scalar(1.0) * t).sum_all() // Σ (t + 1)·t, t̄ = 2t + 1
    /// }
    /// assert_eq!(gradient(f_vjp(&t)).unwrap().to_vec_f64(), [3.0, 5.0]);
    /// ```
    ///
    /// # Panics
    /// If the tensor is not of a float dtype.
    #[track_caller]
    pub fn add_scalar(&self, c: f64) -> Self {
        self.unary(UnaryOp::AddScalar(c), "add_scalar")
    }

    /// `c · t` elementwise; derivative `t̄ = c·ȳ` (`c` is a constant; `t * c` also
    /// differentiates with respect to `c`).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let t = Tensor::from_vec(vec![1.0, -2.0], &[2]);
    /// assert_eq!(t.mul_scalar(3.0).to_vec_f64(), [3.0, -6.0]);
    ///
    /// #[differentiable]
    /// fn f(t: &Tensor) -> Tensor {
    ///     t.mul_scalar(3.0).sum_all()
    /// }
    /// assert_eq!(gradient(f_vjp(&t)).unwrap().to_vec_f64(), [3.0, 3.0]);
    /// ```
    ///
    /// # Panics
    /// If the tensor is not of a float dtype.
    #[track_caller]
    pub fn mul_scalar(&self, c: f64) -> Self {
        self.unary(UnaryOp::MulScalar(c), "mul_scalar")
    }

    /// Derivative rule of [`add_scalar`](Tensor::add_scalar); `c` is a constant.
    #[track_caller]
    pub fn add_scalar_vjp_full(
        &self,
        c: f64,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent) + use<B>,
    ) {
        (self.add_scalar(c), move |d: TensorTangent<B>| {
            (slot(needs[0], &d, |d| d.clone()), NoTangent)
        })
    }

    /// Derivative rule of [`mul_scalar`](Tensor::mul_scalar); `c` is a constant.
    #[track_caller]
    pub fn mul_scalar_vjp_full(
        &self,
        c: f64,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent) + use<B>,
    ) {
        (self.mul_scalar(c), move |d: TensorTangent<B>| {
            (slot(needs[0], &d, |d| d.mul_scalar(c)), NoTangent)
        })
    }

    /// The sum of all elements as a host number (used for scalar tangents).
    pub(crate) fn sum_to_host(&self) -> f64 {
        self.sum_all().to_scalar()
    }
}

/// Which scalar operation, and on which side the scalar stands.
#[derive(Clone, Copy)]
enum Kind {
    Add,
    SubScalar,
    ScalarSub,
    Mul,
    DivScalar,
    ScalarDiv,
}

/// The value and pullback of `t ∘ s`; the pullback returns `(t̄, s̄)`.
#[track_caller]
fn scalar_rule<B: Backend, S: Float>(
    t: &Tensor<B>,
    s: S,
    kind: Kind,
    needs: [bool; 2],
) -> (
    Tensor<B>,
    impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, S) + use<B, S>,
) {
    let c = s.to_f64();
    let y = match kind {
        Kind::Add => t.add_scalar(c),
        Kind::SubScalar => t.add_scalar(-c),
        Kind::ScalarSub => t.neg().add_scalar(c),
        Kind::Mul => t.mul_scalar(c),
        Kind::DivScalar => t.mul_scalar(1.0 / c),
        Kind::ScalarDiv => t.unary(UnaryOp::DivScalarBy(c), "div"),
    };
    let keep_t = (needs[1] || matches!(kind, Kind::ScalarDiv)).then(|| t.clone());
    let keep_y = matches!(kind, Kind::ScalarDiv).then(|| y.clone());
    (y, move |d: TensorTangent<B>| {
        // Both results read `d`: a sum of products is computed once.
        let d = d.settled();
        let dt = slot(needs[0], &d, |d| match kind {
            Kind::Add | Kind::SubScalar => d.clone(),
            Kind::ScalarSub => d.neg(),
            Kind::Mul => d.mul_scalar(c),
            Kind::DivScalar => d.mul_scalar(1.0 / c),
            Kind::ScalarDiv => d
                .mul(keep_y.as_ref().expect("kept"))
                .div(keep_t.as_ref().expect("kept"))
                .neg(),
        });
        let ds = match &d {
            TensorTangent::Dense(d) if needs[1] => {
                let t = keep_t.as_ref().expect("kept");
                let v = match kind {
                    Kind::Add | Kind::ScalarSub => d.sum_to_host(),
                    Kind::SubScalar => -d.sum_to_host(),
                    Kind::Mul => d.mul(t).sum_to_host(),
                    Kind::DivScalar => -d.mul(t).sum_to_host() / (c * c),
                    Kind::ScalarDiv => d.div(t).sum_to_host(),
                };
                S::from_f64(v)
            }
            _ => S::ZERO,
        };
        (dt, ds)
    })
}

/// Implements the operator and rule traits for `tensor ∘ scalar` and `scalar ∘ tensor`.
macro_rules! scalar_operator {
    ($Op:ident $op:ident $Rule:ident $vjp:ident $tk:ident $sk:ident; $($S:ty),*; $($T:ty),*) => {
        scalar_operator!(@scalars $Op $op $Rule $vjp $tk $sk [$($S),*] [$($T),*]);
    };
    (@scalars $Op:ident $op:ident $Rule:ident $vjp:ident $tk:ident $sk:ident [$($S:ty),*] $ts:tt) => {
        $( scalar_operator!(@tensors $Op $op $Rule $vjp $tk $sk $S $ts); )*
    };
    (@tensors $Op:ident $op:ident $Rule:ident $vjp:ident $tk:ident $sk:ident $S:ty [$($T:ty),*]) => {$(
        impl<B: Backend> std::ops::$Op<$S> for $T {
            type Output = Tensor<B>;
            #[track_caller]
            fn $op(self, s: $S) -> Tensor<B> {
                scalar_rule(&self, s, Kind::$tk, [false, false]).0
            }
        }
        impl<B: Backend> std::ops::$Op<$T> for $S {
            type Output = Tensor<B>;
            #[track_caller]
            fn $op(self, t: $T) -> Tensor<B> {
                scalar_rule(&t, self, Kind::$sk, [false, false]).0
            }
        }
        impl<B: Backend> $Rule<$S> for $T {
            type Output = Tensor<B>;
            type LhsTangent = TensorTangent<B>;
            type RhsTangent = $S;
            #[track_caller]
            #[allow(refining_impl_trait, reason = "callers see that the pullback borrows nothing, so operators on `&local` work")]
            fn $vjp(self, s: $S, needs: [bool; 2]) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, $S) + use<B>) {
                scalar_rule(&self, s, Kind::$tk, needs)
            }
        }
        impl<B: Backend> $Rule<$T> for $S {
            type Output = Tensor<B>;
            type LhsTangent = $S;
            type RhsTangent = TensorTangent<B>;
            #[track_caller]
            #[allow(refining_impl_trait, reason = "callers see that the pullback borrows nothing, so operators on `&local` work")]
            fn $vjp(self, t: $T, needs: [bool; 2]) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> ($S, TensorTangent<B>) + use<B>) {
                let (y, pb) = scalar_rule(&t, self, Kind::$sk, [needs[1], needs[0]]);
                (y, move |d| {
                    let (dt, ds) = pb(d);
                    (ds, dt)
                })
            }
        }
    )*};
}

self_adjoint_jvp! {
    /// Forward rule of [`add_scalar`](Tensor::add_scalar): `ẏ = ẋ`.
    add_scalar_jvp_full = add_scalar_vjp_full(c: f64 => NoTangent);
    /// Forward rule of [`mul_scalar`](Tensor::mul_scalar): `ẏ = c·ẋ`.
    mul_scalar_jvp_full = mul_scalar_vjp_full(c: f64 => NoTangent);
}

/// The forward rule of `t ∘ s` (or `s ∘ t`, by `kind`): `ẏ = ∂y/∂t·ṫ + ∂y/∂s·ṡ`.
#[track_caller]
fn scalar_jvp<B: Backend, S: Float>(
    t: &Tensor<B>,
    s: S,
    kind: Kind,
    tangents: (Option<impl TangentArg<B>>, Option<S>),
) -> (Tensor<B>, Option<TensorTangent<B>>) {
    let c = s.to_f64();
    let y = scalar_rule(t, s, kind, [false, false]).0;
    let dt = linear(tangents.0, |d| match kind {
        Kind::Add | Kind::SubScalar => d.clone(),
        Kind::ScalarSub => d.neg(),
        Kind::Mul => d.mul_scalar(c),
        Kind::DivScalar => d.mul_scalar(1.0 / c),
        Kind::ScalarDiv => d.mul(&y).div(t).neg(),
    });
    let ds = tangents.1.map(|ds| {
        let ds = ds.to_f64();
        TensorTangent::Dense(match kind {
            Kind::Add | Kind::ScalarSub => y.full_like(ds),
            Kind::SubScalar => y.full_like(-ds),
            Kind::Mul => t.mul_scalar(ds),
            Kind::DivScalar => t.mul_scalar(-ds / (c * c)),
            Kind::ScalarDiv => t.recip().mul_scalar(ds),
        })
    });
    let ty = sum_terms(y.shape(), [dt, ds]);
    (y, ty)
}

/// The forward operators between a tensor (`T`, its tangent `TT`) and a scalar `S`, both
/// orders.
macro_rules! scalar_operator_jvp {
    ($Trait:ident $method:ident $tk:ident $sk:ident; $S:ty; $([$($T:tt)*] [$($TT:tt)*]),*) => {$(
        impl<'a, B: Backend> $Trait<$S> for $($T)* {
            type Output = Tensor<B>;
            type LhsTangent = $($TT)*;
            type RhsTangent = $S;
            type OutTangent = TensorTangent<B>;
            #[track_caller]
            fn $method(self, s: $S, t: (Option<$($TT)*>, Option<$S>)) -> (Tensor<B>, Option<TensorTangent<B>>) {
                scalar_jvp(&self, s, Kind::$tk, t)
            }
        }
        impl<'a, B: Backend> $Trait<$($T)*> for $S {
            type Output = Tensor<B>;
            type LhsTangent = $S;
            type RhsTangent = $($TT)*;
            type OutTangent = TensorTangent<B>;
            #[track_caller]
            fn $method(self, t: $($T)*, ts: (Option<$S>, Option<$($TT)*>)) -> (Tensor<B>, Option<TensorTangent<B>>) {
                scalar_jvp(&t, self, Kind::$sk, (ts.1, ts.0))
            }
        }
    )*};
}

scalar_operator_jvp!(AddJvp add_jvp Add Add; f64; [Tensor<B>] [TensorTangent<B>], [&'a Tensor<B>] [&'a TensorTangent<B>]);
scalar_operator_jvp!(SubJvp sub_jvp SubScalar ScalarSub; f64; [Tensor<B>] [TensorTangent<B>], [&'a Tensor<B>] [&'a TensorTangent<B>]);
scalar_operator_jvp!(MulJvp mul_jvp Mul Mul; f64; [Tensor<B>] [TensorTangent<B>], [&'a Tensor<B>] [&'a TensorTangent<B>]);
scalar_operator_jvp!(DivJvp div_jvp DivScalar ScalarDiv; f64; [Tensor<B>] [TensorTangent<B>], [&'a Tensor<B>] [&'a TensorTangent<B>]);

scalar_operator!(Add add AddRule add_vjp Add Add; f64; Tensor<B>, &Tensor<B>);
scalar_operator!(Sub sub SubRule sub_vjp SubScalar ScalarSub; f64; Tensor<B>, &Tensor<B>);
scalar_operator!(Mul mul MulRule mul_vjp Mul Mul; f64; Tensor<B>, &Tensor<B>);
scalar_operator!(Div div DivRule div_vjp DivScalar ScalarDiv; f64; Tensor<B>, &Tensor<B>);

#[cfg(test)]
mod tests {
    use super::super::testing::{check_unary, pos, rand};
    use crate::rules::operators::{AddRule, DivRule, MulRule, SubRule};
    use crate::{Tensor, TensorTangent};

    #[test]
    fn tensor_scalar_rules() {
        check_unary("t + s", rand(&[2, 3], 1), |t| {
            AddRule::add_vjp(t.clone(), 2.5_f64, [true, false])
        });
        check_unary("s - t", rand(&[2, 3], 1), |t| {
            SubRule::sub_vjp(2.5_f64, t.clone(), [false, true])
        });
        check_unary("t * s", rand(&[2, 3], 1), |t| {
            MulRule::mul_vjp(t.clone(), -1.5_f64, [true, false])
        });
        check_unary("t / s", rand(&[2, 3], 1), |t| {
            DivRule::div_vjp(t.clone(), 4.0_f64, [true, false])
        });
        check_unary("s / t", pos(&[2, 3], 1), |t| {
            DivRule::div_vjp(3.0_f64, t.clone(), [false, true])
        });
    }

    #[test]
    fn scalar_tangents() {
        let t = Tensor::from_vec(vec![1.0_f64, 2.0, 3.0], &[3]);
        let ones = || TensorTangent::Dense(t.ones_like());
        let (_, pb) = MulRule::mul_vjp(&t, 2.0_f64, [false, true]);
        assert_eq!(pb(ones()).1, 6.0);
        let (_, pb) = DivRule::div_vjp(&t, 2.0_f64, [false, true]);
        assert_eq!(pb(ones()).1, -1.5);
        let (y, pb) = SubRule::sub_vjp(1.0_f64, &t, [true, true]);
        assert_eq!(y.to_vec_f64(), vec![0.0, -1.0, -2.0]);
        let (ds, dt) = pb(ones());
        assert_eq!(
            (ds, dt.unwrap().to_vec_f64()),
            (3.0, vec![-1.0, -1.0, -1.0])
        );
    }

    #[test]
    fn literals_default_to_f64_and_keep_the_tensor_dtype() {
        let t = Tensor::ones(&[2]);
        let y = &t * 2.0 + 1.0;
        assert_eq!(y.to_vec_f32(), vec![3.0, 3.0]);
        assert_eq!((1.0 - &t).to_vec_f32(), vec![0.0, 0.0]);
    }
}

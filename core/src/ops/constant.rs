//! Rules of the constants made from a tensor's shape: `zeros_like`, `ones_like`, `full_like`
//! and `scalar_like` ([`create`](crate::tensor)). Their values do not depend on the input's
//! values, so every derivative is zero: `x̄ = 0` (the symbolic zero, no work), and the fill
//! value gets no tangent. With these, `x.full_like(c)` and friends can be called on active
//! values in `#[differentiable]` code.

use super::forward::zero_if;
use crate::NoTangent;
use crate::tensor::{Backend, Tensor, TensorTangent};

macro_rules! constant_rules {
    ($($(#[$doc:meta])* $name:ident $vjp:ident $jvp:ident ($($arg:ident: $ty:ty),*) $n:literal, ($($slot:ty),*);)*) => {
        impl<B: Backend> Tensor<B> {$(
            $(#[$doc])*
            pub fn $vjp(&self, $($arg: $ty,)* _needs: [bool; $n]) -> (Self, impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, $($slot),*) + use<B>) {
                (self.$name($($arg),*), |_| (TensorTangent::Zero, $(<$slot>::default()),*))
            }

            #[doc = concat!("Forward rule of [`", stringify!($name), "`](Tensor::", stringify!($name), "): the value is a constant, so its tangent is zero (symbolic, no work).")]
            pub fn $jvp(&self, $($arg: $ty,)* t: (Option<&TensorTangent<B>>, $(Option<$slot>),*)) -> (Self, Option<TensorTangent<B>>) {
                (self.$name($($arg),*), zero_if(t.0.is_some()))
            }
        )*}
    };
}

constant_rules! {
    /// Derivative rule of [`zeros_like`](Tensor::zeros_like): `x̄ = 0`.
    zeros_like zeros_like_vjp_full zeros_like_jvp_full() 1, ();
    /// Derivative rule of [`ones_like`](Tensor::ones_like): `x̄ = 0`.
    ones_like ones_like_vjp_full ones_like_jvp_full() 1, ();
    /// Derivative rule of [`full_like`](Tensor::full_like): `x̄ = 0`; the value is a constant.
    full_like full_like_vjp_full full_like_jvp_full(value: f64) 2, (NoTangent);
    /// Derivative rule of [`scalar_like`](Tensor::scalar_like): `x̄ = 0`; the value is a
    /// constant.
    scalar_like scalar_like_vjp_full scalar_like_jvp_full(value: f64) 2, (NoTangent);
}

#[cfg(test)]
mod tests {
    use super::super::testing::rand;
    use crate::TensorTangent;

    #[test]
    fn constants_have_zero_derivatives() {
        let x = rand(&[2, 3], 1);
        let (y, pb) = x.full_like_vjp_full(2.5, [true, false]);
        assert_eq!((y.shape(), y.to_vec_f64()), (&[2, 3][..], vec![2.5; 6]));
        assert!(pb(TensorTangent::Dense(y.clone())).0.is_zero());
        let (y, pb) = x.zeros_like_vjp_full([true]);
        assert_eq!(y.to_vec_f64(), vec![0.0; 6]);
        assert!(pb(TensorTangent::Dense(y)).0.is_zero());
        let (y, pb) = x.ones_like_vjp_full([true]);
        assert_eq!(y.to_vec_f64(), vec![1.0; 6]);
        assert!(pb(TensorTangent::Dense(y)).0.is_zero());
        let (y, pb) = x.scalar_like_vjp_full(-1.0, [true, false]);
        assert_eq!((y.shape(), y.to_scalar()), (&[][..], -1.0));
        assert!(pb(TensorTangent::Dense(y)).0.is_zero());
    }
}

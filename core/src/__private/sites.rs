//! Choosing the rule of a recorded call: the rule given the recorded value where the receiver's
//! type has one, the method's own rule otherwise.
//!
//! A recomputed loop records each expensive call (`x.tanh()`, see [`Cached`](super::Cached))
//! and its pullback differentiates the call from the recorded value `y`. `f32`, `f64` and
//! [`Tensor`] have such rules ([`GivenRule`]); another type with a method of the same name (a
//! user type whose `tanh` is `#[differentiable]`) has only its own rule, `tanh_vjp_full`. The
//! macro does not see types, so it emits both and lets method resolution pick:
//!
//! ```text
//! site::<recorded::tanh, _, _, _>(x, |x| with_value_slot(x.tanh_vjp_full([n0]))).rule(y, [n0, n1])
//! ```
//!
//! [`SiteGiven::rule`] takes the [`Site`] by value and exists only when the receiver's type
//! has a [`GivenRule`] for the method; [`SitePlain::rule`] takes it by reference, so method
//! lookup, which tries the receiver by value before borrowing it, reaches it only when the
//! first does not apply. The fallback calls the method again (no saving, the same gradient).

use super::NoTangent;
use crate::tensor::{Backend, Tensor, TensorTangent};
use std::cell::Cell;
use std::marker::PhantomData;

/// Marker types naming the recorded methods (`recorded::tanh`), one per method the macro
/// records (`macros/src/cache.rs::CACHED`).
#[allow(non_camel_case_types)]
pub mod recorded {
    macro_rules! markers {
        ($($name:ident)*) => {$(
            #[doc = concat!("The method `", stringify!($name), "`.")]
            pub struct $name;
        )*};
    }
    markers!(acos asin atan cbrt cos cosh exp exp2 exp_m1 ln ln_1p log10 log2 sin sinh tan tanh);
}

/// A rule of method `N` built from the method's value `y`, recorded by the forward pass.
pub trait GivenRule<N> {
    /// The method's value (and the receiver's type, up to a reference).
    type Value;
    /// The tangent of the value and of the receiver.
    type Tangent;
    /// The tangent slot of the recorded value (ignored: the value is inactive).
    type Other;

    /// `(y, ȳ ↦ (x̄, _))` without calling the method.
    #[allow(clippy::type_complexity)] // a rule's shape: (value, pullback), as every rule's
    fn given(
        self,
        y: Self::Value,
        needs: [bool; 2],
    ) -> (
        Self::Value,
        impl FnOnce(Self::Tangent) -> (Self::Tangent, Self::Other),
    );
}

macro_rules! float_given {
    ($($t:ty),* ; $names:tt) => {$( float_given!(@one $t $names); )*};
    (@one $t:ty [$($name:ident $given:ident)*]) => {$(
        impl GivenRule<recorded::$name> for $t {
            type Value = $t;
            type Tangent = $t;
            type Other = $t;
            #[inline(always)]
            fn given(self, y: $t, needs: [bool; 2]) -> ($t, impl FnOnce($t) -> ($t, $t)) {
                super::FloatMethods::$given(self, y, needs)
            }
        }
    )*};
}

float_given!(f32, f64; [
    acos acos_given_vjp_full asin asin_given_vjp_full atan atan_given_vjp_full
    cbrt cbrt_given_vjp_full cos cos_given_vjp_full cosh cosh_given_vjp_full
    exp exp_given_vjp_full exp2 exp2_given_vjp_full exp_m1 exp_m1_given_vjp_full
    ln ln_given_vjp_full ln_1p ln_1p_given_vjp_full log10 log10_given_vjp_full
    log2 log2_given_vjp_full sin sin_given_vjp_full sinh sinh_given_vjp_full
    tan tan_given_vjp_full tanh tanh_given_vjp_full
]);

macro_rules! tensor_given {
    ($($name:ident $given:ident)*) => {$(
        impl<B: Backend> GivenRule<recorded::$name> for Tensor<B> {
            type Value = Tensor<B>;
            type Tangent = TensorTangent<B>;
            type Other = NoTangent;
            #[inline(always)]
            fn given(
                self,
                y: Tensor<B>,
                needs: [bool; 2],
            ) -> (Tensor<B>, impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent)) {
                self.$given(y, needs)
            }
        }
    )*};
}

tensor_given!(
    cos cos_given_vjp_full exp exp_given_vjp_full ln ln_given_vjp_full
    sin sin_given_vjp_full tanh tanh_given_vjp_full
);

/// A borrowed receiver has the rule of the value it points to (a clone: a copy for floats,
/// a shared handle for tensors).
impl<N, X: GivenRule<N> + Clone> GivenRule<N> for &X {
    type Value = X::Value;
    type Tangent = X::Tangent;
    type Other = X::Other;
    #[inline(always)]
    fn given(
        self,
        y: X::Value,
        needs: [bool; 2],
    ) -> (X::Value, impl FnOnce(X::Tangent) -> (X::Tangent, X::Other)) {
        self.clone().given(y, needs)
    }
}

/// A recorded call's receiver and the method's own rule, `plain`, for method `N`.
pub struct Site<T, F, N>(Cell<Option<(T, F)>>, PhantomData<N>);

/// The site of a recorded call of method `N` on `receiver` (see the module docs).
#[inline(always)]
pub fn site<N, T, R, F: FnOnce(T) -> R>(receiver: T, plain: F) -> Site<T, F, N> {
    Site(Cell::new(Some((receiver, plain))), PhantomData)
}

impl<T, F, N> Site<T, F, N> {
    #[inline(always)]
    fn parts(&self) -> (T, F) {
        self.0
            .take()
            .expect("a recorded call's rule is chosen once")
    }
}

/// The rule from the recorded value, for receivers whose type has one.
pub trait SiteGiven {
    /// The method's value.
    type Value;
    /// The tangent of the value and of the receiver.
    type Tangent;
    /// The tangent slot of the recorded value.
    type Other;

    /// [`GivenRule::given`] of the receiver.
    #[allow(clippy::type_complexity)] // a rule's shape: (value, pullback), as every rule's
    fn rule(
        self,
        y: Self::Value,
        needs: [bool; 2],
    ) -> (
        Self::Value,
        impl FnOnce(Self::Tangent) -> (Self::Tangent, Self::Other),
    );
}

impl<T: GivenRule<N>, F, N> SiteGiven for Site<T, F, N> {
    type Value = T::Value;
    type Tangent = T::Tangent;
    type Other = T::Other;
    #[inline(always)]
    fn rule(
        self,
        y: T::Value,
        needs: [bool; 2],
    ) -> (T::Value, impl FnOnce(T::Tangent) -> (T::Tangent, T::Other)) {
        self.parts().0.given(y, needs)
    }
}

/// The method's own rule, for receivers of any other type (the recorded value is not used).
pub trait SitePlain {
    /// What the method's rule returns.
    type Out;

    /// The method's rule, called on the receiver.
    fn rule<Y>(self, y: Y, needs: [bool; 2]) -> Self::Out;
}

impl<T, R, F: FnOnce(T) -> R, N> SitePlain for &Site<T, F, N> {
    type Out = R;
    #[inline(always)]
    fn rule<Y>(self, _: Y, _: [bool; 2]) -> R {
        let (receiver, plain) = self.parts();
        plain(receiver)
    }
}

/// A method's rule `(y, ȳ ↦ (x̄,))` with a second, empty tangent slot for the recorded value,
/// so that both rules of a [`Site`] have the same shape.
#[inline(always)]
pub fn with_value_slot<V, D, G, P: FnOnce(D) -> (G,)>(
    (value, pullback): (V, P),
) -> (V, impl FnOnce(D) -> (G, NoTangent)) {
    (value, move |d| {
        let (g,) = pullback(d);
        (g, NoTangent)
    })
}

#[cfg(test)]
mod tests {
    use super::{NoTangent, SiteGiven as _, SitePlain as _, recorded, site, with_value_slot};
    use crate::tensor::{Tensor, TensorTangent};

    /// A fallback that marks its result: value 100, tangent 100·ȳ.
    fn marked<T>(_: T) -> (f64, impl FnOnce(f64) -> (f64, NoTangent)) {
        with_value_slot((100.0, |d: f64| (100.0 * d,)))
    }

    #[test]
    fn floats_use_the_recorded_value() {
        // The recorded value 0.25 (not tanh 0.5), the rule 1 − y² from it.
        let (y, pullback) =
            site::<recorded::tanh, _, _, _>(0.5_f64, marked).rule(0.25, [true, false]);
        assert_eq!(y, 0.25);
        assert_eq!(pullback(2.0).0, 2.0 * (1.0 - 0.0625));
        let (y, pullback) =
            site::<recorded::exp, _, _, _>(&1.5_f32, marked).rule(4.0, [true, false]);
        assert_eq!((y, pullback(0.5).0), (4.0, 2.0));
    }

    #[test]
    fn tensors_use_the_recorded_value() {
        let x = Tensor::from_vec(vec![0.5_f64], &[1]);
        let y = Tensor::from_vec(vec![0.25_f64], &[1]);
        let seed = || TensorTangent::Dense(Tensor::from_vec(vec![2.0_f64], &[1]));
        let grad = |t: TensorTangent| t.dense().expect("a dense tangent").to_vec_f64();
        // 2·(1 − 0.25²) = 1.875, by value and by reference.
        let (value, pullback) =
            site::<recorded::tanh, _, _, _>(x.clone(), marked).rule(y.clone(), [true, false]);
        assert_eq!(value.to_vec_f64(), vec![0.25]);
        assert_eq!(grad(pullback(seed()).0), vec![1.875]);
        let (value, pullback) = site::<recorded::tanh, _, _, _>(&x, marked).rule(y, [true, false]);
        assert_eq!(value.to_vec_f64(), vec![0.25]);
        assert_eq!(grad(pullback(seed()).0), vec![1.875]);
    }

    #[test]
    fn other_types_use_their_own_rule() {
        struct Own;
        let (y, pullback) = site::<recorded::tanh, _, _, _>(Own, marked).rule(0.25, [true, false]);
        assert_eq!((y, pullback(2.0).0), (100.0, 200.0));
        // A float method the tensor has no recorded rule for.
        let x = Tensor::from_vec(vec![0.5_f64], &[1]);
        let (y, _) = site::<recorded::sinh, _, _, _>(x, marked).rule(0.25, [true, false]);
        assert_eq!(y, 100.0);
    }
}

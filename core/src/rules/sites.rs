//! Choosing the rule of a recorded call: the rule given the recorded value where the receiver's
//! type has one, the method's own rule otherwise.
//!
//! A recomputed loop records each expensive call (`x.tanh()`, see [`Cached`](super::cached::Cached))
//! and its pullback differentiates the call from the recorded value `y`. `f32` and `f64`
//! (`rules/methods.rs`, which also defines the [`recorded`](super::methods::recorded) markers) and
//! tensors (`ops/unary.rs`) have such rules ([`GivenRule`]); another type with a method of the same name (a
//! user type whose `tanh` is `#[differentiable]`) has only its own rule, `tanh_vjp_full`. The
//! macro does not see types, so it emits both and lets method resolution pick:
//!
//! ```text
//! site::<recorded::tanh, _, _, _>(x, |x| with_value_slot(x.tanh_vjp_full([n0]))).rule(y, [n0, n1])
//! ```
//!
//! The inherent [`Site::rule`] takes the site by value and exists only when the receiver's
//! type has a [`GivenRule`] for the method; [`SitePlain::rule`] takes it by reference, so
//! method lookup, which tries the receiver by value before borrowing it, reaches it only when
//! the first does not apply. The fallback calls the method again (no saving, the same gradient).

use crate::NoTangent;
use std::cell::Cell;
use std::marker::PhantomData;

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

impl<T: GivenRule<N>, F, N> Site<T, F, N> {
    /// The rule from the recorded value, for receivers whose type has one
    /// ([`GivenRule::given`]).
    #[inline(always)]
    #[allow(clippy::type_complexity)] // a rule's shape: (value, pullback), as every rule's
    pub fn rule(
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
    use super::{NoTangent, SitePlain as _, site, with_value_slot};
    use crate::rules::methods::recorded;
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

//! The two traits at the heart of adjoint: [`Differentiable`] values and their
//! [`TangentVector`]s.

/// A vector space of derivatives: the type of a gradient or of a small change of a
/// [`Differentiable`] value.
///
/// Mathematically a tangent type is an additive group (Swift calls it `AdditiveArithmetic`):
/// it has a [`zero`](TangentVector::zero) and an associative, commutative
/// [`plus`](TangentVector::plus). Pullbacks return tangents, and the adjoint of a value used
/// several times is the `plus` of the adjoints of its uses.
///
/// `zero()` takes no shape on purpose: types whose size is only known at run time (tensors,
/// vectors) represent zero symbolically, so that "no derivative flows here" costs nothing.
///
/// # Example
/// ```
/// use adjoint::prelude::*;
/// let t = (1.0_f64, 2.0_f32).plus((0.5, 0.5));
/// assert_eq!(t, (1.5, 2.5));
/// assert_eq!(<(f64, f32)>::zero(), (0.0, 0.0));
/// ```
pub trait TangentVector: Clone + Sized {
    /// The additive identity: `t.plus(zero()) == t`.
    fn zero() -> Self;

    /// The sum `self + other`.
    fn plus(self, other: Self) -> Self;

    /// `self = self + other`, in place.
    fn plus_assign(&mut self, other: Self) {
        let this = std::mem::replace(self, Self::zero());
        *self = this.plus(other);
    }

    /// The product `factor · self`, e.g. `-learning_rate · gradient`.
    fn scaled(self, factor: f64) -> Self;
}

/// A value that can be differentiated: it has a [`Tangent`](Differentiable::Tangent) type and
/// can be moved along a tangent.
///
/// `move_by` is the exponential map of Swift's `Differentiable`: for the flat spaces used in
/// machine learning it is `self += tangent`, which is exactly a gradient-descent update when the
/// tangent is `-learning_rate · gradient`.
///
/// # Example
/// ```
/// use adjoint::prelude::*;
/// let mut x = 1.0_f64;
/// x.move_by(&0.25);
/// assert_eq!(x, 1.25);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not differentiable",
    label = "`{Self}` does not implement `Differentiable`",
    note = "differentiable values are floats, tuples of them, and types that implement `adjoint::Differentiable`",
    note = "if this parameter is data rather than an input to differentiate, mark it `#[no_derivative]` or leave it out of `wrt(...)`"
)]
pub trait Differentiable {
    /// The type of derivatives with respect to `Self` (`f64` for `f64`, a tuple of tangents
    /// for a tuple, a tangent struct for a model).
    type Tangent: TangentVector;

    /// Moves `self` along `tangent`: `self ← self + tangent`.
    fn move_by(&mut self, tangent: &Self::Tangent);

    /// The zero tangent at `self`. Defaults to the symbolic [`TangentVector::zero`].
    fn zero_tangent(&self) -> Self::Tangent {
        Self::Tangent::zero()
    }
}

macro_rules! float_impls {
    ($($t:ty),*) => {$(
        impl TangentVector for $t {
            #[inline(always)]
            fn zero() -> Self {
                0.0
            }
            #[inline(always)]
            fn plus(self, other: Self) -> Self {
                self + other
            }
            #[inline(always)]
            fn plus_assign(&mut self, other: Self) {
                *self += other;
            }
            #[inline(always)]
            fn scaled(self, factor: f64) -> Self {
                self * factor as $t
            }
        }

        impl Differentiable for $t {
            type Tangent = $t;
            #[inline(always)]
            fn move_by(&mut self, tangent: &$t) {
                *self += *tangent;
            }
        }
    )*};
}
float_impls!(f32, f64);

impl TangentVector for () {
    fn zero() -> Self {}
    fn plus(self, _: Self) -> Self {}
    fn scaled(self, _: f64) -> Self {}
}

impl Differentiable for () {
    type Tangent = ();
    fn move_by(&mut self, _: &()) {}
}

macro_rules! tuple_impls {
    ($(($($name:ident $idx:tt),+))*) => {$(
        impl<$($name: TangentVector),+> TangentVector for ($($name,)+) {
            #[inline(always)]
            fn zero() -> Self {
                ($($name::zero(),)+)
            }
            #[inline(always)]
            fn plus(self, other: Self) -> Self {
                ($(self.$idx.plus(other.$idx),)+)
            }
            #[inline(always)]
            fn plus_assign(&mut self, other: Self) {
                $(self.$idx.plus_assign(other.$idx);)+
            }
            #[inline(always)]
            fn scaled(self, factor: f64) -> Self {
                ($(self.$idx.scaled(factor),)+)
            }
        }

        impl<$($name: Differentiable),+> Differentiable for ($($name,)+) {
            type Tangent = ($($name::Tangent,)+);
            #[inline(always)]
            fn move_by(&mut self, tangent: &Self::Tangent) {
                $(self.$idx.move_by(&tangent.$idx);)+
            }
            fn zero_tangent(&self) -> Self::Tangent {
                ($(self.$idx.zero_tangent(),)+)
            }
        }
    )*};
}
tuple_impls! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}

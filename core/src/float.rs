//! [`Float`]: the scalar types differentiable code can be generic over.

use crate::{Differentiable, TangentVector};
use std::fmt::{Debug, Display};
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, Sub, SubAssign};

/// A real floating-point scalar (`f32` or `f64`) that is its own tangent.
///
/// Write generic differentiable code against this trait:
/// ```
/// use adjoint::prelude::*;
///
/// #[differentiable]
/// fn softplus<T: Float>(x: T) -> T {
///     x.exp().ln_1p()
/// }
///
/// let (_, dx) = value_with_gradient(softplus_vjp(0.0_f32));
/// assert!((dx - 0.5).abs() < 1e-6);
/// ```
/// The methods mirror the inherent methods of `f32`/`f64` with the same names and meaning; the
/// derivative of each one is in [`crate::rules::methods`].
pub trait Float:
    Copy
    + PartialOrd
    + Debug
    + Display
    + Default
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + Differentiable<Tangent = Self>
    + TangentVector
    + FloatMath
{
    /// `0`.
    const ZERO: Self;
    /// `1`.
    const ONE: Self;
    /// The nearest value of this type to `v`.
    fn from_f64(v: f64) -> Self;
    /// `self` widened (or kept) as `f64`.
    fn to_f64(self) -> f64;
}

macro_rules! forward_methods {
    (unary: $($u:ident)*; binary: $($b:ident)*) => {
        /// The elementary functions of [`Float`], with the meaning of the inherent methods of the
        /// same name on `f32`/`f64`; their derivatives are in [`crate::rules::methods`].
        ///
        /// # Example
        /// ```
        /// use adjoint::prelude::*;
        /// fn logistic<T: Float>(x: T) -> T {
        ///     T::ONE / (T::ONE + (-x).exp())
        /// }
        /// assert_eq!(logistic(0.0_f32), 0.5);
        /// ```
        pub trait FloatMath: Sized {
            $(
                #[doc = concat!("`", stringify!($u), "(self)`, as the inherent float method.")]
                fn $u(self) -> Self;
            )*
            $(
                #[doc = concat!("`", stringify!($b), "(self, other)`, as the inherent float method.")]
                fn $b(self, other: Self) -> Self;
            )*
            /// `self` raised to the integer power `n`.
            fn powi(self, n: i32) -> Self;
            /// `self * a + b` with one rounding.
            fn mul_add(self, a: Self, b: Self) -> Self;
            /// `self` limited to `[lo, hi]`: `lo` below it, `hi` above it, `self` inside (and
            /// for NaN), as the inherent float method (a default, so that implementations
            /// written before it need no change).
            #[inline(always)]
            fn clamp(self, lo: Self, hi: Self) -> Self
            where
                Self: PartialOrd,
            {
                if self < lo {
                    lo
                } else if self > hi {
                    hi
                } else {
                    self
                }
            }
        }
        /// The names of the methods of [`FloatMath`], for the test that each has its rules.
        #[cfg(test)]
        pub(crate) const METHOD_NAMES: &[&str] =
            &[$(stringify!($u),)* $(stringify!($b),)* "powi", "mul_add", "clamp"];
        float_math_impl!(f32; unary: $($u)*; binary: $($b)*);
        float_math_impl!(f64; unary: $($u)*; binary: $($b)*);
    };
}

macro_rules! float_math_impl {
    ($t:ident; unary: $($u:ident)*; binary: $($b:ident)*) => {
        impl FloatMath for $t {
            $(#[inline(always)] fn $u(self) -> Self { $t::$u(self) })*
            $(#[inline(always)] fn $b(self, other: Self) -> Self { $t::$b(self, other) })*
            #[inline(always)]
            fn powi(self, n: i32) -> Self { $t::powi(self, n) }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self { $t::mul_add(self, a, b) }
            #[inline(always)]
            fn clamp(self, lo: Self, hi: Self) -> Self { $t::clamp(self, lo, hi) }
        }

        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn from_f64(v: f64) -> Self { v as $t }
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
        }
    };
}

forward_methods! {
    unary: sin cos tan asin acos atan sinh cosh tanh exp exp2 exp_m1 ln ln_1p log2 log10 sqrt
           cbrt recip abs signum floor ceil round trunc fract;
    binary: atan2 powf log max min hypot
}

/// `T::ONE` with `T` inferred from its use: the start of a `.product()` over an active
/// iterator chain, which `#[differentiable]` writes as a loop (d1/dx = 0).
#[doc(hidden)]
#[inline(always)]
pub fn one<T: Float>() -> T {
    T::ONE
}

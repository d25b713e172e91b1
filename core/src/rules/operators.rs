//! Derivative rules of Rust's arithmetic operators and of `as` casts between float types.
//!
//! | expression | value `y` | `ā` (lhs tangent) | `b̄` (rhs tangent) |
//! |---|---|---|---|
//! | `a + b` | a + b | ȳ | ȳ |
//! | `a - b` | a − b | ȳ | −ȳ |
//! | `a * b` | a · b | ȳ · b | ȳ · a |
//! | `a / b` | a / b | ȳ / b | −ȳ · y / b |
//! | `a % b` | a − b·trunc(a/b) | ȳ | −ȳ · trunc(a/b) |
//! | `-a` | −a | −ȳ | |
//! | `a as T` | a (rounded to `T`) | ȳ (converted back) | |
//!
//! `%` follows PyTorch's `fmod`: the derivative with respect to `b` is taken piecewise, ignoring
//! the jumps of `trunc`.
//!
//! # Example
//! Generated code calls the rules; calling one by hand shows the contract:
//! ```
//! use adjoint::rules::operators::MulRule;
//! let (y, pullback) = 3.0_f64.mul_vjp(4.0, [true, false]);
//! assert_eq!(y, 12.0);
//! assert_eq!(pullback(1.0), (4.0, 0.0)); // ∂/∂a = b; ∂/∂b was not needed
//! ```

use crate::{Differentiable, Float};

/// The tangent type of `T`.
pub type TangentOf<T> = <T as Differentiable>::Tangent;

/// `&x ∘ y`, `x ∘ &y`, `&x ∘ &y` for a float type: the rule of the values.
macro_rules! reference_rules {
    ($trait:ident $method:ident $($t:ident)*) => {$(
        impl $trait<$t> for &$t {
            type Output = $t;
            type LhsTangent = $t;
            type RhsTangent = $t;
            #[inline(always)]
            fn $method(self, rhs: $t, needs: [bool; 2]) -> ($t, impl FnOnce($t) -> ($t, $t)) {
                <$t as $trait>::$method(*self, rhs, needs)
            }
        }

        impl $trait<&$t> for $t {
            type Output = $t;
            type LhsTangent = $t;
            type RhsTangent = $t;
            #[inline(always)]
            fn $method(self, rhs: &$t, needs: [bool; 2]) -> ($t, impl FnOnce($t) -> ($t, $t)) {
                <$t as $trait>::$method(self, *rhs, needs)
            }
        }

        impl $trait<&$t> for &$t {
            type Output = $t;
            type LhsTangent = $t;
            type RhsTangent = $t;
            #[inline(always)]
            fn $method(self, rhs: &$t, needs: [bool; 2]) -> ($t, impl FnOnce($t) -> ($t, $t)) {
                <$t as $trait>::$method(*self, *rhs, needs)
            }
        }
    )*};
}

macro_rules! binary_rules {
    ($(
        $(#[$doc:meta])*
        $trait:ident :: $method:ident => |$a:ident, $b:ident, $y:ident, $d:ident| ($da:expr, $db:expr);
    )*) => {$(
        $(#[$doc])*
        pub trait $trait<Rhs = Self>: Sized {
            /// The type of the result.
            type Output: Differentiable;
            /// The tangent type of the left operand.
            type LhsTangent;
            /// The tangent type of the right operand.
            type RhsTangent;
            /// The result and its pullback `ȳ ↦ (ā, b̄)`; `needs` says which tangents to compute.
            fn $method(
                self,
                rhs: Rhs,
                needs: [bool; 2],
            ) -> (
                Self::Output,
                impl FnOnce(TangentOf<Self::Output>) -> (Self::LhsTangent, Self::RhsTangent),
            );
        }

        reference_rules!($trait $method f32 f64);

        impl<T: Float> $trait for T {
            type Output = T;
            type LhsTangent = T;
            type RhsTangent = T;
            #[inline(always)]
            #[allow(unused_variables)]
            fn $method(self, rhs: T, needs: [bool; 2]) -> (T, impl FnOnce(T) -> (T, T)) {
                let ($a, $b) = (self, rhs);
                let $y = binary_rules!(@eval $trait $a $b);
                ($y, move |$d: T| {
                    (
                        if needs[0] { $da } else { T::ZERO },
                        if needs[1] { $db } else { T::ZERO },
                    )
                })
            }
        }
    )*};
    (@eval AddRule $a:ident $b:ident) => { $a + $b };
    (@eval SubRule $a:ident $b:ident) => { $a - $b };
    (@eval MulRule $a:ident $b:ident) => { $a * $b };
    (@eval DivRule $a:ident $b:ident) => { $a / $b };
    (@eval RemRule $a:ident $b:ident) => { $a % $b };
}

binary_rules! {
    /// Rule of `a + b`.
    AddRule::add_vjp => |a, b, y, d| (d, d);
    /// Rule of `a - b`.
    SubRule::sub_vjp => |a, b, y, d| (d, -d);
    /// Rule of `a * b`.
    MulRule::mul_vjp => |a, b, y, d| (d * b, d * a);
    /// Rule of `a / b`.
    DivRule::div_vjp => |a, b, y, d| (d / b, -d * y / b);
    /// Rule of `a % b` (PyTorch's `fmod` convention).
    RemRule::rem_vjp => |a, b, y, d| (d, -d * (a / b).trunc());
}

/// An operator's operand given by reference (`&x * y`, or a `&f64` parameter), as the value
/// its rule takes: rules are implemented for values, and references are cloned (a copy for
/// floats, a reference-count increment for tensors).
pub trait Operand {
    /// The value type.
    type Value;
    /// The value.
    fn operand(self) -> Self::Value;
}

impl<T: Clone> Operand for &T {
    type Value = T;
    #[inline(always)]
    fn operand(self) -> T {
        self.clone()
    }
}

/// See [`Operand`].
#[inline(always)]
pub fn operand<T: Operand>(x: T) -> T::Value {
    x.operand()
}

/// Rule of unary `-a`: `ā = −ȳ`.
pub trait NegRule: Sized {
    /// The type of the result.
    type Output: Differentiable;
    /// The tangent type of the operand.
    type Tangent;
    /// The result and its pullback `ȳ ↦ (−ȳ,)`.
    #[allow(
        clippy::type_complexity,
        reason = "the pullback's signature is the rule's contract"
    )]
    fn neg_vjp(
        self,
        needs: [bool; 1],
    ) -> (
        Self::Output,
        impl FnOnce(TangentOf<Self::Output>) -> (Self::Tangent,),
    );
}

impl<T: Float> NegRule for T {
    type Output = T;
    type Tangent = T;
    #[inline(always)]
    fn neg_vjp(self, needs: [bool; 1]) -> (T, impl FnOnce(T) -> (T,)) {
        (-self, move |d: T| (if needs[0] { -d } else { T::ZERO },))
    }
}

/// Rule of `a as To` between float types: the value is rounded to `To`, the tangent converted
/// back (`ā = ȳ as From`).
pub trait CastRule<To>: Sized {
    /// The converted value and its pullback.
    fn cast_vjp(self, needs: [bool; 1]) -> (To, impl FnOnce(To) -> (Self,));
}

impl<From: Float, To: Float> CastRule<To> for From {
    #[inline(always)]
    fn cast_vjp(self, needs: [bool; 1]) -> (To, impl FnOnce(To) -> (From,)) {
        (To::from_f64(self.to_f64()), move |d: To| {
            (if needs[0] {
                From::from_f64(d.to_f64())
            } else {
                From::ZERO
            },)
        })
    }
}

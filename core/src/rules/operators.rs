//! Derivative rules of Rust's arithmetic operators and of `as` casts between float types.
//!
//! Each operator has a reverse rule (`MulRule::mul_vjp`: the value and a pullback) and a
//! forward rule (`MulJvp::mul_jvp`: the value and its tangent ẏ from the operands' tangents
//! ȧ, ḃ, each an `Option` where `None` is zero; see [`forward`](super::forward)).
//!
//! | expression | value `y` | `ā` (lhs tangent) | `b̄` (rhs tangent) | `ẏ` (forward) |
//! |---|---|---|---|---|
//! | `a + b` | a + b | ȳ | ȳ | ȧ + ḃ |
//! | `a - b` | a − b | ȳ | −ȳ | ȧ − ḃ |
//! | `a * b` | a · b | ȳ · b | ȳ · a | ȧ · b + ḃ · a |
//! | `a / b` | a / b | ȳ / b | −ȳ · y / b | ȧ / b − ḃ · y / b |
//! | `a % b` | a − b·trunc(a/b) | ȳ | −ȳ · trunc(a/b) | ȧ − ḃ · trunc(a/b) |
//! | `-a` | −a | −ȳ | | −ȧ |
//! | `a as T` | a (rounded to `T`) | ȳ (converted back) | | ȧ (rounded to `T`) |
//!
//! The forward terms are the pullback's with ȧ (or ḃ) in place of ȳ: for scalars the Jacobian
//! is its own transpose. A term whose tangent is `None` is not computed, and ẏ is `None` when
//! both are.
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
//!
//! use adjoint::rules::operators::MulJvp;
//! assert_eq!(3.0_f64.mul_jvp(4.0, (Some(1.0), None)), (12.0, Some(4.0))); // ẏ = ȧ · b
//! assert_eq!(3.0_f64.mul_jvp(4.0, (None, None)), (12.0, None));
//! ```

use super::forward::plus_opt;
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

/// The forward rules of `&x ∘ y`, `x ∘ &y`, `&x ∘ &y` for a float type: the rule of the
/// values, the tangent of an operand passed by reference being a reference too.
macro_rules! reference_jvps {
    ($trait:ident $method:ident $($t:ident)*) => {$(
        reference_jvps!(@impl $trait $method $t: &'a $t, $t);
        reference_jvps!(@impl $trait $method $t: $t, &'a $t);
        reference_jvps!(@impl $trait $method $t: &'a $t, &'a $t);
    )*};
    (@impl $trait:ident $method:ident $t:ident: $lhs:ty, $rhs:ty) => {
        impl<'a> $trait<$rhs> for $lhs {
            type Output = $t;
            type LhsTangent = $lhs;
            type RhsTangent = $rhs;
            type OutTangent = $t;
            #[inline(always)]
            fn $method(self, rhs: $rhs, t: (Option<$lhs>, Option<$rhs>)) -> ($t, Option<$t>) {
                let t = (t.0.map(Scalar::scalar), t.1.map(Scalar::scalar));
                <$t as $trait>::$method(self.scalar(), rhs.scalar(), t)
            }
        }
    };
}

/// A float or a reference to one, as the float (for the reference rules above).
trait Scalar<T> {
    fn scalar(self) -> T;
}

impl<T: Float> Scalar<T> for T {
    #[inline(always)]
    fn scalar(self) -> T {
        self
    }
}

impl<T: Float> Scalar<T> for &T {
    #[inline(always)]
    fn scalar(self) -> T {
        *self
    }
}

macro_rules! binary_rules {
    ($(
        $trait:ident :: $method:ident, $jtrait:ident :: $jmethod:ident:
            $a:ident $op:tt $b:ident => |$y:ident, $d:ident| ($da:expr, $db:expr);
    )*) => {$(
        #[doc = concat!("Rule of `", stringify!($a $op $b), "`: the pullback maps ȳ = `", stringify!($d), "` to (`", stringify!($da), "`, `", stringify!($db), "`).")]
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

        #[doc = concat!("Forward rule (JVP) of `", stringify!($a $op $b), "`: the value `y` and its tangent ẏ = ∂y/∂a · ȧ + ∂y/∂b · ḃ, `None` when both input tangents are `None` (see [`forward`](crate::rules::forward)). For floats the terms are the pullback's with the input tangent for ȳ: ẏ = `", stringify!($da), "` at `", stringify!($d), "` = ȧ, plus `", stringify!($db), "` at `", stringify!($d), "` = ḃ.")]
        pub trait $jtrait<Rhs = Self>: Sized {
            /// The type of the result, as in the reverse rule.
            type Output;
            /// The tangent of the left operand as it is passed (`T` for a `T`, `&T` for a `&T`).
            type LhsTangent;
            /// The tangent of the right operand as it is passed.
            type RhsTangent;
            /// The tangent type of the result.
            type OutTangent;
            /// The result and its tangent, from the operands' tangents `(ȧ, ḃ)`.
            fn $jmethod(
                self,
                rhs: Rhs,
                t: (Option<Self::LhsTangent>, Option<Self::RhsTangent>),
            ) -> (Self::Output, Option<Self::OutTangent>);
        }

        reference_rules!($trait $method f32 f64);
        reference_jvps!($jtrait $jmethod f32 f64);

        impl<T: Float> $trait for T {
            type Output = T;
            type LhsTangent = T;
            type RhsTangent = T;
            #[inline(always)]
            #[allow(unused_variables)]
            fn $method(self, rhs: T, needs: [bool; 2]) -> (T, impl FnOnce(T) -> (T, T)) {
                let ($a, $b) = (self, rhs);
                let $y = $a $op $b;
                ($y, move |$d: T| {
                    (
                        if needs[0] { $da } else { T::ZERO },
                        if needs[1] { $db } else { T::ZERO },
                    )
                })
            }
        }

        impl<T: Float> $jtrait for T {
            type Output = T;
            type LhsTangent = T;
            type RhsTangent = T;
            type OutTangent = T;
            #[inline(always)]
            #[allow(unused_variables)]
            fn $jmethod(self, rhs: T, t: (Option<T>, Option<T>)) -> (T, Option<T>) {
                let ($a, $b) = (self, rhs);
                let $y = $a $op $b;
                ($y, plus_opt(t.0.map(|$d: T| $da), t.1.map(|$d: T| $db)))
            }
        }
    )*

        /// Every operator with its value, forward and reverse rules in `f64`, and its forward
        /// rule with operands by reference, for the tests (an operator added to the table is
        /// tested with no further edit).
        #[cfg(test)]
        pub(crate) const TABLE: &[crate::rules::tests::Operator] = &[$(
            crate::rules::tests::Operator {
                rule: crate::rules::tests::Binary {
                    name: stringify!($a $op $b),
                    value: |$a, $b| $a $op $b,
                    jvp: |$a, $b, t| $jtrait::$jmethod($a, $b, t),
                    vjp: |$a, $b, w| {
                        let (_, pullback) = $trait::$method($a, $b, [true, true]);
                        pullback(w)
                    },
                },
                by_reference: |$a, $b, t| [
                    $jtrait::$jmethod(&$a, $b, (t.0.as_ref(), t.1)),
                    $jtrait::$jmethod($a, &$b, (t.0, t.1.as_ref())),
                    $jtrait::$jmethod(&$a, &$b, (t.0.as_ref(), t.1.as_ref())),
                ],
            },
        )*];
    };
}

binary_rules! {
    AddRule::add_vjp, AddJvp::add_jvp: a + b => |y, d| (d, d);
    SubRule::sub_vjp, SubJvp::sub_jvp: a - b => |y, d| (d, -d);
    MulRule::mul_vjp, MulJvp::mul_jvp: a * b => |y, d| (d * b, d * a);
    DivRule::div_vjp, DivJvp::div_jvp: a / b => |y, d| (d / b, -d * y / b);
    // `fmod`'s convention: the jumps of `trunc` are ignored.
    RemRule::rem_vjp, RemJvp::rem_jvp: a % b => |y, d| (d, -d * (a / b).trunc());
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

/// `k as f32` / `k as f64` of an integer `k` that reached differentiable code as part of an
/// active value (a `#[no_derivative]` field of an active struct): the value is Rust's `as`
/// conversion, and the derivative is zero, as of every function of an integer (`x as i64` of
/// an active float is rejected by the macro, so no integer here depends on a differentiated
/// value). The pullback's zero is absorbed by the field read it flows back to.
macro_rules! integer_casts {
    ($($int:ty),*) => {$(
        impl CastRule<f32> for $int {
            #[inline(always)]
            fn cast_vjp(self, _needs: [bool; 1]) -> (f32, impl FnOnce(f32) -> ($int,)) {
                (self as f32, |_| (0,))
            }
        }
        impl CastRule<f64> for $int {
            #[inline(always)]
            fn cast_vjp(self, _needs: [bool; 1]) -> (f64, impl FnOnce(f64) -> ($int,)) {
                (self as f64, |_| (0,))
            }
        }
        impl CastJvp<f32> for $int {
            #[inline(always)]
            fn cast_jvp(self, _t: (Option<$int>,)) -> (f32, Option<f32>) {
                (self as f32, None)
            }
        }
        impl CastJvp<f64> for $int {
            #[inline(always)]
            fn cast_jvp(self, _t: (Option<$int>,)) -> (f64, Option<f64>) {
                (self as f64, None)
            }
        }
    )*};
}
integer_casts!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
);

/// Forward rule (JVP) of unary `-a`: ẏ = −ȧ (`None` for `None`).
pub trait NegJvp: Sized {
    /// The type of the result, as in [`NegRule`].
    type Output;
    /// The tangent of the operand as it is passed.
    type Tangent;
    /// The tangent type of the result.
    type OutTangent;
    /// The result and its tangent.
    fn neg_jvp(self, t: (Option<Self::Tangent>,)) -> (Self::Output, Option<Self::OutTangent>);
}

impl<T: Float> NegJvp for T {
    type Output = T;
    type Tangent = T;
    type OutTangent = T;
    #[inline(always)]
    fn neg_jvp(self, t: (Option<T>,)) -> (T, Option<T>) {
        (-self, t.0.map(|d| -d))
    }
}

/// Forward rule (JVP) of `a as To` between float types: the value and the tangent are both
/// rounded to `To` (ẏ = ȧ as To; `None` for `None`).
pub trait CastJvp<To>: Sized {
    /// The converted value and its tangent.
    fn cast_jvp(self, t: (Option<Self>,)) -> (To, Option<To>);
}

impl<From: Float, To: Float> CastJvp<To> for From {
    #[inline(always)]
    fn cast_jvp(self, t: (Option<From>,)) -> (To, Option<To>) {
        let convert = |x: From| To::from_f64(x.to_f64());
        (convert(self), t.0.map(convert))
    }
}

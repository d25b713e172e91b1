//! [`Dual`]: the dual number `re + eps·ε` (`ε² = 0`), a [`Float`] that carries one directional
//! derivative, so that differentiable code generic over `T: Float` nests.
//!
//! For a smooth `f`, Taylor's theorem with `ε² = 0` gives exactly
//! `f(a + bε) = f(a) + f'(a)·b·ε`: evaluating `f` on `Dual::new(x, v)` returns `f(x)` in `re`
//! and the directional derivative `f'(x)·v` in `eps`. Each operator and method below computes
//! its `eps` by the same forward rule that `f_jvp` uses (the tables of
//! [`crate::rules::operators`] and [`crate::rules::methods`]), evaluated in `T`; since those
//! rules are generic over `T: Float`, `Dual<Dual<f64>>` gives second (and `Dual<Dual<Dual<_>>>`
//! third) derivatives with no further code.
//!
//! Running a generated `f_vjp::<Dual<f64>>` at `x + ε·v` and pulling back the seed `1` gives
//! the gradient `∇f(x)` in `re` and the Hessian-vector product `H(x)·v` in `eps`
//! (forward-over-reverse); `f_jvp::<Dual<f64>>` at `x + ε·u` with tangent `v` gives `∂f·v` in
//! `re` and the second directional derivative `uᵀ H v` in `eps` (forward-over-forward).
//!
//! Comparisons (`==`, `<`, `max`'s choice, branches of generic code) look at `re` only: a
//! branch is taken for the primal value and differentiated as the branch taken, as in `f_jvp`.

use crate::gradient::UnitSeed;
use crate::rules::operators::{AddJvp, DivJvp, MulJvp, NegJvp, RemJvp, SubJvp};
use crate::{Differentiable, Float, TangentVector};
use std::cmp::Ordering;
use std::fmt;
use std::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign,
};

/// The dual number `re + eps·ε` with `ε² = 0`: a value and one directional derivative of it.
///
/// `f(a + bε) = f(a) + f'(a)·b·ε` for every operator and [`FloatMath`](crate::FloatMath)
/// method; generic code over `T: Float` run on `Dual<T>` returns its value in `re` and its
/// derivative along the input `eps` in `eps`.
///
/// # Example
/// ```
/// use adjoint::prelude::*;
/// fn f<T: Float>(x: T) -> T {
///     x * x.sin()
/// }
/// let y = f(Dual::new(2.0, 1.0)); // f'(x) = sin x + x cos x
/// assert_eq!(y.re, f(2.0));
/// assert_eq!(y.eps, 2.0_f64.sin() + 2.0 * 2.0_f64.cos());
/// // Nested: the second derivative, f''(x) = 2 cos x − x sin x.
/// let y = f(Dual::new(Dual::new(2.0, 1.0), Dual::new(1.0, 0.0)));
/// assert!((y.eps.eps - (2.0 * 2.0_f64.cos() - 2.0 * 2.0_f64.sin())).abs() < 1e-14);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Dual<T> {
    /// The value (real part) `a`.
    pub re: T,
    /// The derivative part `b`, the coefficient of `ε`.
    pub eps: T,
}

impl<T: Float> Dual<T> {
    /// `re + eps·ε`.
    #[inline(always)]
    pub const fn new(re: T, eps: T) -> Self {
        Dual { re, eps }
    }

    /// The constant `re + 0·ε` (its derivative is zero).
    #[inline(always)]
    pub fn constant(re: T) -> Self {
        Dual { re, eps: T::ZERO }
    }

    /// The variable `re + 1·ε` (its derivative with respect to itself is one).
    #[inline(always)]
    pub fn variable(re: T) -> Self {
        Dual { re, eps: T::ONE }
    }

    /// Builds the dual from a forward rule's `(value, tangent)`; the tangent is `Some` since
    /// every input tangent was.
    #[inline(always)]
    pub(crate) fn from_rule((re, eps): (T, Option<T>)) -> Self {
        Dual {
            re,
            eps: eps.unwrap_or(T::ZERO),
        }
    }
}

macro_rules! dual_binary_ops {
    ($($op:ident $method:ident $assign:ident $assign_method:ident $jvp:ident $jvp_method:ident;)*) => {$(
        #[doc = concat!("`(a + ȧε) ", stringify!($method), " (b + ḃε)`: the value `a ", stringify!($method), " b` and, in `eps`, its forward rule [`", stringify!($jvp), "`] at (ȧ, ḃ).")]
        impl<T: Float> $op for Dual<T> {
            type Output = Self;
            #[inline(always)]
            fn $method(self, rhs: Self) -> Self {
                Dual::from_rule($jvp::$jvp_method(self.re, rhs.re, (Some(self.eps), Some(rhs.eps))))
            }
        }

        #[doc = concat!("`self = self ", stringify!($method), " rhs`, as [`", stringify!($op), "`].")]
        impl<T: Float> $assign for Dual<T> {
            #[inline(always)]
            fn $assign_method(&mut self, rhs: Self) {
                *self = $op::$method(*self, rhs);
            }
        }
    )*};
}

dual_binary_ops! {
    Add add AddAssign add_assign AddJvp add_jvp;
    Sub sub SubAssign sub_assign SubJvp sub_jvp;
    Mul mul MulAssign mul_assign MulJvp mul_jvp;
    Div div DivAssign div_assign DivJvp div_jvp;
    Rem rem RemAssign rem_assign RemJvp rem_jvp;
}

/// `−(a + ȧε) = −a − ȧε`.
impl<T: Float> Neg for Dual<T> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Dual::from_rule(self.re.neg_jvp((Some(self.eps),)))
    }
}

/// Equality of the values `re` (the derivative parts are not compared), so that a branch of
/// generic code is taken as for the primal.
impl<T: Float> PartialEq for Dual<T> {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.re == other.re
    }
}

/// The order of the values `re`, as [`PartialEq`].
impl<T: Float> PartialOrd for Dual<T> {
    #[inline(always)]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.re.partial_cmp(&other.re)
    }
}

/// `re + epsε`, each part formatted with the given options (`{:.3}` applies to both).
impl<T: Float> fmt::Display for Dual<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.re, f)?;
        f.write_str(" + ")?;
        fmt::Display::fmt(&self.eps, f)?;
        f.write_str("ε")
    }
}

/// The dual numbers form a vector space part by part: `(a + ȧε) + (b + ḃε) = (a+b) + (ȧ+ḃ)ε`.
impl<T: Float> TangentVector for Dual<T> {
    #[inline(always)]
    fn zero() -> Self {
        Dual::new(T::zero(), T::zero())
    }
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        Dual::new(self.re.plus(other.re), self.eps.plus(other.eps))
    }
    #[inline(always)]
    fn scaled(self, factor: f64) -> Self {
        Dual::new(self.re.scaled(factor), self.eps.scaled(factor))
    }
}

/// A dual is its own tangent, as a float is: a cotangent `w + ẇε` of the reverse pass carries
/// the cotangent `w` and its derivative `ẇ` along the input direction.
impl<T: Float> Differentiable for Dual<T> {
    type Tangent = Self;
    #[inline(always)]
    fn move_by(&mut self, tangent: &Self) {
        *self = self.plus(*tangent);
    }
}

/// The seed `1 + 0ε`: `gradient` of `f_vjp::<Dual<_>>` at `x + εv` gives `∇f + (H·v)ε`.
impl<T: Float> UnitSeed for Dual<T> {
    #[inline(always)]
    fn unit_seed(&self) -> Self {
        Self::ONE
    }
}

/// `ZERO`, `ONE` and the conversions are constants (derivative part 0); `to_f64` reads `re`.
impl<T: Float> Float for Dual<T> {
    const ZERO: Self = Dual {
        re: T::ZERO,
        eps: T::ZERO,
    };
    const ONE: Self = Dual {
        re: T::ONE,
        eps: T::ZERO,
    };
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        Dual::constant(T::from_f64(v))
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.re.to_f64()
    }
}

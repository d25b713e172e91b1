//! The elementwise ops as kernel types: one type per op, whose `eval` is `#[inline(always)]`,
//! so that the loops of [`loops`](super::loops), monomorphised per kernel, have the op inlined
//! into each of their builds (AVX-512, AVX2 + FMA, baseline), whatever its size. A closure
//! cannot be marked so, and one called from three builds is no longer inlined for being
//! called once: the exact GELU's would then be a call per element.
//!
//! The ops without parameters evaluate the op's own scalar meaning with the variant fixed
//! ([`UnaryOp::eval`] folds to straight-line code); the transcendental ones run the float
//! type's [`Elementary`] kernel; the others hold their constants, converted once.

use super::super::math::Elementary;
use crate::{BinaryOp, UnaryOp};
use adjoint_backend::Real;

/// A unary kernel `x ↦ f(x)`.
pub(crate) trait Map<T>: Sync {
    /// `f(x)`.
    fn eval(&self, x: T) -> T;
}

/// A binary kernel `(x, y) ↦ f(x, y)`.
pub(crate) trait Zip<T>: Sync {
    /// `f(x, y)`.
    fn eval(&self, x: T, y: T) -> T;
}

/// Unit types whose kernel is `$enum::$v.eval` (the variants without parameters), with the
/// parameters `$params` (`(x)` or `(x, y)`).
macro_rules! fixed {
    ($trait:ident, $enum:ident, $params:tt, [$($v:ident),*]) => {$(
        fixed!(@one $trait, $enum, $params, $v);
    )*};
    (@one $trait:ident, $enum:ident, ($($x:ident),*), $v:ident) => {
        #[doc = concat!("[`", stringify!($enum), "::", stringify!($v), "`]'s scalar meaning.")]
        pub(crate) struct $v;

        impl<T: Real> $trait<T> for $v {
            #[inline(always)]
            fn eval(&self, $($x: T),*) -> T {
                $enum::$v.eval($($x),*)
            }
        }
    };
}

/// Unit types whose kernel is `x.$method(..)`, a method of [`Elementary`] (the `f32` vector
/// kernels), with the parameters `$params` (`(x)` or `(x, y)`).
macro_rules! elementary {
    ($trait:ident, $params:tt, [$($v:ident => $method:ident),*]) => {$(
        elementary!(@one $trait, $params, $v, $method);
    )*};
    (@one $trait:ident, ($x:ident $(, $y:ident)?), $v:ident, $method:ident) => {
        #[doc = concat!("[`Elementary::", stringify!($method), "`].")]
        pub(crate) struct $v;

        impl<T: Elementary + Sync> $trait<T> for $v {
            #[inline(always)]
            fn eval(&self, $x: T $(, $y: T)?) -> T {
                $x.$method($($y)?)
            }
        }
    };
}

/// Kernel types of the [`UnaryOp`]s.
pub(crate) mod unary {
    use super::*;

    fixed!(
        Map,
        UnaryOp,
        (x),
        [Neg, Sqrt, Rsqrt, Recip, Abs, Sign, Relu, Sin, Cos]
    );
    elementary!(Map, (x), [
        Tanh => tanh_elementwise, Exp => exp_elementwise, Ln => ln_elementwise,
        Sigmoid => sigmoid_elementwise, Silu => silu_elementwise, Gelu => gelu_elementwise,
        GeluErf => gelu_erf_elementwise
    ]);

    /// Types holding one constant `c`, with the kernel `|x, c| expression`.
    macro_rules! with_constant {
        ($($(#[$doc:meta])* $v:ident(|$x:ident, $c:ident| $e:expr)),*) => {$(
            $(#[$doc])*
            pub(crate) struct $v<T>(pub T);

            impl<T: Real + Sync> Map<T> for $v<T> {
                #[inline(always)]
                fn eval(&self, $x: T) -> T {
                    let $c = self.0;
                    $e
                }
            }
        )*};
    }
    with_constant!(
        /// `x + c`.
        AddScalar(|x, c| x + c),
        /// `x·c`.
        MulScalar(|x, c| x * c),
        /// `c / x`.
        DivScalarBy(|x, c| c / x),
        /// `x` above 0, else `x·a`.
        LeakyRelu(|x, a| if x > T::zero() { x } else { x * a }),
        /// `xᵖ`.
        Powf(|x, p| x.powf(p))
    );

    /// `min(max(x, lo), hi)`.
    pub(crate) struct Clamp<T>(pub T, pub T);

    impl<T: Real + Sync> Map<T> for Clamp<T> {
        #[inline(always)]
        fn eval(&self, x: T) -> T {
            x.max(self.0).min(self.1)
        }
    }

    /// A binary kernel with its right operand fixed: `x ↦ k(x, s)`.
    pub(crate) struct Right<'a, K, T>(pub &'a K, pub T);

    impl<T: Copy + Sync, K: Zip<T>> Map<T> for Right<'_, K, T> {
        #[inline(always)]
        fn eval(&self, x: T) -> T {
            self.0.eval(x, self.1)
        }
    }

    /// A binary kernel with its left operand fixed: `y ↦ k(s, y)`.
    pub(crate) struct Left<'a, K, T>(pub &'a K, pub T);

    impl<T: Copy + Sync, K: Zip<T>> Map<T> for Left<'_, K, T> {
        #[inline(always)]
        fn eval(&self, y: T) -> T {
            self.0.eval(self.1, y)
        }
    }
}

/// Kernel types of the [`BinaryOp`]s: `eval(x, ȳ)` of a `*Grad` op is `ȳ·f′(x)`.
pub(crate) mod binary {
    use super::*;

    fixed!(
        Zip,
        BinaryOp,
        (x, y),
        [
            Add,
            Sub,
            Mul,
            Div,
            Max,
            Min,
            Pow,
            Eq,
            Lt,
            Le,
            Gt,
            Ge,
            TanhGrad,
            SigmoidGrad
        ]
    );
    elementary!(Zip, (x, d), [
        GeluGrad => gelu_grad, GeluErfGrad => gelu_erf_grad, SiluGrad => silu_grad
    ]);

    /// `d` where `x > 0`, else `d·s`.
    pub(crate) struct LeakyReluGrad<T>(pub T);

    impl<T: Real + Sync> Zip<T> for LeakyReluGrad<T> {
        #[inline(always)]
        fn eval(&self, x: T, d: T) -> T {
            if x > T::zero() { d } else { d * self.0 }
        }
    }

    /// `d` where `lo ≤ x ≤ hi`, else 0.
    pub(crate) struct ClampGrad<T>(pub T, pub T);

    impl<T: Real + Sync> Zip<T> for ClampGrad<T> {
        #[inline(always)]
        fn eval(&self, x: T, d: T) -> T {
            if x >= self.0 && x <= self.1 {
                d
            } else {
                T::zero()
            }
        }
    }
}

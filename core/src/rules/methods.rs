//! Derivative rules of the float methods, one line per method.
//!
//! Each line gives the local derivative(s) in terms of the input `x` (and `o`, the other
//! argument) and the output `y`. Both rules of a method are generated from its line:
//! * the reverse rule `x.<m>_vjp_full(.., needs)` returns a pullback that multiplies them by
//!   the output tangent `ȳ`: `x̄ = ȳ · ∂x` (and `ō = ȳ · ∂o`);
//! * the forward rule `x.<m>_jvp_full(.., t)` multiplies them by the input tangents and adds:
//!   `ẏ = ẋ · ∂x + ȯ · ∂o`. The tangents are `Option`s, `None` being zero (see
//!   [`forward`](super::forward)); a term is computed only where its tangent is `Some`, and `ẏ`
//!   is `None` when all are. The receiver's tangent is passed by reference (`Option<&T>`), as
//!   generated code passes it.
//!
//! The conventions below hold for both rules alike, since they share the derivative.
//!
//! | method | derivative |
//! |---|---|
//! | `sin` `cos` `tan` | `cos x`, `−sin x`, `1 + y²` |
//! | `asin` `acos` `atan` | `1/√(1−x²)`, `−1/√(1−x²)`, `1/(1+x²)` |
//! | `sinh` `cosh` `tanh` | `cosh x`, `sinh x`, `1 − y²` |
//! | `exp` `exp2` `exp_m1` | `y`, `y · ln 2`, `y + 1` |
//! | `ln` `ln_1p` `log2` `log10` | `1/x`, `1/(1+x)`, `1/(x ln 2)`, `1/(x ln 10)` |
//! | `sqrt` `cbrt` `recip` | `1/(2y)`, `1/(3y²)`, `−y²` |
//! | `abs` `signum` | `signum(x)` (0 at 0), `0` |
//! | `floor` `ceil` `round` `trunc` `fract` | `0`, `0`, `0`, `0`, `1` |
//! | `powi(n)` | `n · xⁿ⁻¹` (0 when n = 0) |
//! | `powf(p)` | `∂x = p · xᵖ⁻¹`, `∂p = y · ln x` (0 where x = 0 and p ≥ 0) |
//! | `atan2(o)` | `∂x = o/(x²+o²)`, `∂o = −x/(x²+o²)` |
//! | `log(b)` | `∂x = 1/(x ln b)`, `∂b = −ln x/(b ln² b)` |
//! | `hypot(o)` | `∂x = x/y`, `∂o = o/y` |
//! | `max(o)` `min(o)` | the selected argument gets `ȳ`; on a tie each gets `ȳ/2` (`ẏ = (ẋ + ȯ)/2`) |
//! | `mul_add(a, b)` | `∂x = a`, `∂a = x`, `∂b = 1` |
//!
//! # Conventions where the derivative is undefined
//! They are PyTorch's, so that results agree with it bit for bit in spirit:
//! * `abs` at `0` has derivative `0` (PyTorch: `grad · sgn(x)`).
//! * `signum` has derivative `0` everywhere, also at the jump.
//! * `max`/`min` split the tangent evenly on a tie (PyTorch's `maximum`/`minimum`); forward,
//!   the tangent on a tie is the mean `(ẋ + ȯ)/2`.
//! * `powf` gives `∂p = 0` at `x = 0` for `p ≥ 0` instead of `0 · (−∞)`, and `∂x = 0` for
//!   `p = 0` (also at `x = 0`, where `0 · 0⁻¹` would be NaN).
//! * `sqrt` at `0`, `ln` at `0`, `hypot` at `(0, 0)` follow IEEE arithmetic (`∞`, `∞`, NaN),
//!   as PyTorch does.
//!
//! * `floor`, `ceil`, `round`, `trunc` are piecewise constant: derivative `0` everywhere, also
//!   at the jumps; `fract = x − trunc(x)` has derivative `1`.

//! # Example
//! ```
//! use adjoint::rules::methods::FloatMethods;
//! let (y, pullback) = 0.0_f64.sin_vjp_full([true]);
//! assert_eq!((y, pullback(1.0)), (0.0, (1.0,)));
//! assert_eq!(0.0_f64.sin_jvp_full((Some(&2.0),)), (0.0, Some(2.0))); // ẏ = ẋ · cos 0
//! assert_eq!(0.0_f64.sin_jvp_full((None,)), (0.0, None));
//! ```

use super::forward::plus_opt;
use super::sites::GivenRule;
use crate::NoTangent;
use crate::{Dual, Float, FloatMath};

/// Which input `x.clamp(lo, hi)` is: 1 (`lo`) when x < lo, 2 (`hi`) when x > hi, else 0 (`x`,
/// also at the bounds and for NaN, which `clamp` returns).
#[inline(always)]
fn clamped_input<T: Float>(x: T, lo: T, hi: T) -> usize {
    if x < lo {
        1
    } else if x > hi {
        2
    } else {
        0
    }
}

macro_rules! method_rules {
    (
        unary: [$( $name:ident $vjp:ident $jvp:ident $(given $given:ident)? => |$x:ident, $y:ident| $dx:expr; )*]
        binary: [$( $bname:ident $bvjp:ident $bjvp:ident => |$bx:ident, $bo:ident, $by:ident| ($bdx:expr, $bdo:expr); )*]
    ) => {
        /// The derivative rules of the [`Float`] methods, called by generated code as
        /// `x.<method>_vjp_full(args.., needs)`.
        pub trait FloatMethods: Float {
            $(
                #[doc = concat!("Rule of `", stringify!($name), "`: ȳ ↦ (ȳ · `", stringify!($dx), "`,).")]
                fn $vjp(self, needs: [bool; 1]) -> (Self, impl FnOnce(Self) -> (Self,));
                #[doc = concat!("Forward rule of `", stringify!($name), "`: ẋ ↦ ẋ · `", stringify!($dx), "` (`None` for `None`).")]
                fn $jvp(self, t: (Option<&Self>,)) -> (Self, Option<Self>);
            )*
            $(
                #[doc = concat!("Rule of `", stringify!($bname), "`: ȳ ↦ (ȳ · `", stringify!($bdx), "`, ȳ · `", stringify!($bdo), "`).")]
                fn $bvjp(self, other: Self, needs: [bool; 2]) -> (Self, impl FnOnce(Self) -> (Self, Self));
                #[doc = concat!("Forward rule of `", stringify!($bname), "`: (ẋ, ȯ) ↦ ẋ · `", stringify!($bdx), "` + ȯ · `", stringify!($bdo), "`, a term only where its tangent is `Some`.")]
                fn $bjvp(self, other: Self, t: (Option<&Self>, Option<Self>)) -> (Self, Option<Self>);
            )*
            /// Rule of `powi`: ȳ ↦ (ȳ · n · xⁿ⁻¹, no tangent for `n`).
            fn powi_vjp_full(self, n: i32, needs: [bool; 2]) -> (Self, impl FnOnce(Self) -> (Self, NoTangent));
            /// Rule of `mul_add`: ȳ ↦ (ȳ · a, ȳ · x, ȳ).
            fn mul_add_vjp_full(self, a: Self, b: Self, needs: [bool; 3]) -> (Self, impl FnOnce(Self) -> (Self, Self, Self));
            /// Forward rule of `powi`: ẋ ↦ ẋ · n · xⁿ⁻¹ (`n` has no tangent).
            fn powi_jvp_full(self, n: i32, t: (Option<&Self>, Option<NoTangent>)) -> (Self, Option<Self>);
            /// Forward rule of `mul_add`: (ẋ, ȧ, ḃ) ↦ ẋ · a + ȧ · x + ḃ.
            fn mul_add_jvp_full(self, a: Self, b: Self, t: (Option<&Self>, Option<Self>, Option<Self>)) -> (Self, Option<Self>);
            /// Rule of `clamp(lo, hi)`: ȳ goes to the one input the value is: `lo` when
            /// x < lo, `hi` when x > hi, else x (at x = lo or x = hi too).
            fn clamp_vjp_full(self, lo: Self, hi: Self, needs: [bool; 3]) -> (Self, impl FnOnce(Self) -> (Self, Self, Self));
            /// Forward rule of `clamp(lo, hi)`: the tangent of the input the value is.
            fn clamp_jvp_full(self, lo: Self, hi: Self, t: (Option<&Self>, Option<Self>, Option<Self>)) -> (Self, Option<Self>);
            /// Rule of `sin_cos`: (s, c) = (sin x, cos x); x̄ = s̄ · cos x − c̄ · sin x.
            fn sin_cos_vjp_full(self, needs: [bool; 1]) -> ((Self, Self), impl FnOnce((Self, Self)) -> (Self,));
            /// Forward rule of `sin_cos`: ẋ ↦ (ẋ · cos x, −ẋ · sin x).
            fn sin_cos_jvp_full(self, t: (Option<&Self>,)) -> ((Self, Self), Option<(Self, Self)>);
        }

        impl<T: Float> FloatMethods for T {
            $(
                #[inline(always)]
                #[allow(unused_variables)]
                fn $vjp(self, needs: [bool; 1]) -> (T, impl FnOnce(T) -> (T,)) {
                    let $x = self;
                    let $y = self.$name();
                    ($y, move |d: T| (if needs[0] { d * $dx } else { T::ZERO },))
                }
                #[inline(always)]
                #[allow(unused_variables)]
                fn $jvp(self, t: (Option<&T>,)) -> (T, Option<T>) {
                    let $x = self;
                    let $y = self.$name();
                    ($y, t.0.map(|t| *t * $dx))
                }
            )*
            $(
                #[inline(always)]
                #[allow(unused_variables)]
                fn $bvjp(self, other: T, needs: [bool; 2]) -> (T, impl FnOnce(T) -> (T, T)) {
                    let ($bx, $bo) = (self, other);
                    let $by = self.$bname(other);
                    ($by, move |d: T| (
                        if needs[0] { d * $bdx } else { T::ZERO },
                        if needs[1] { d * $bdo } else { T::ZERO },
                    ))
                }
                #[inline(always)]
                #[allow(unused_variables)]
                fn $bjvp(self, other: T, t: (Option<&T>, Option<T>)) -> (T, Option<T>) {
                    let ($bx, $bo) = (self, other);
                    let $by = self.$bname(other);
                    ($by, plus_opt(t.0.map(|t| *t * $bdx), t.1.map(|t| t * $bdo)))
                }
            )*
            #[inline(always)]
            fn powi_vjp_full(self, n: i32, needs: [bool; 2]) -> (T, impl FnOnce(T) -> (T, NoTangent)) {
                let x = self;
                (x.powi(n), move |d: T| (if needs[0] { d * powi_derivative(x, n) } else { T::ZERO }, NoTangent))
            }
            #[inline(always)]
            fn powi_jvp_full(self, n: i32, t: (Option<&T>, Option<NoTangent>)) -> (T, Option<T>) {
                (self.powi(n), t.0.map(|t| *t * powi_derivative(self, n)))
            }
            #[inline(always)]
            fn mul_add_vjp_full(self, a: T, b: T, needs: [bool; 3]) -> (T, impl FnOnce(T) -> (T, T, T)) {
                let x = self;
                (x.mul_add(a, b), move |d: T| (
                    if needs[0] { d * a } else { T::ZERO },
                    if needs[1] { d * x } else { T::ZERO },
                    if needs[2] { d } else { T::ZERO },
                ))
            }
            #[inline(always)]
            fn mul_add_jvp_full(self, a: T, b: T, t: (Option<&T>, Option<T>, Option<T>)) -> (T, Option<T>) {
                let x = self;
                (x.mul_add(a, b), plus_opt(plus_opt(t.0.map(|t| *t * a), t.1.map(|t| t * x)), t.2))
            }
            #[inline(always)]
            fn clamp_vjp_full(self, lo: T, hi: T, needs: [bool; 3]) -> (T, impl FnOnce(T) -> (T, T, T)) {
                let which = clamped_input(self, lo, hi);
                let pick = move |i: usize, d: T| if needs[i] && which == i { d } else { T::ZERO };
                (self.clamp(lo, hi), move |d: T| (pick(0, d), pick(1, d), pick(2, d)))
            }
            #[inline(always)]
            fn clamp_jvp_full(self, lo: T, hi: T, t: (Option<&T>, Option<T>, Option<T>)) -> (T, Option<T>) {
                let tangent = match clamped_input(self, lo, hi) {
                    0 => t.0.copied(),
                    1 => t.1,
                    _ => t.2,
                };
                // `None` where the input the value is has none: its tangent is zero.
                (self.clamp(lo, hi), tangent)
            }
            #[inline(always)]
            fn sin_cos_vjp_full(self, needs: [bool; 1]) -> ((T, T), impl FnOnce((T, T)) -> (T,)) {
                let (s, c) = (self.sin(), self.cos());
                ((s, c), move |(ds, dc): (T, T)| (if needs[0] { ds * c - dc * s } else { T::ZERO },))
            }
            #[inline(always)]
            fn sin_cos_jvp_full(self, t: (Option<&T>,)) -> ((T, T), Option<(T, T)>) {
                let (s, c) = (self.sin(), self.cos());
                ((s, c), t.0.map(|t| (*t * c, -(*t * s))))
            }
        }

        /// The methods of a dual number from the forward rules of this table, evaluated in `T`:
        /// `f(a + ȧε) = f(a) + f'(a)·ȧ·ε`, the derivative `f'` being the table's.
        impl<T: Float> FloatMath for Dual<T> {
            $(
                #[doc = concat!("`", stringify!($name), "`(a + ȧε) = `", stringify!($name), "`(a) + ȧ · (`", stringify!($dx), "`) · ε, at x = a and y = `", stringify!($name), "`(a).")]
                #[inline(always)]
                fn $name(self) -> Self {
                    Dual::from_rule(self.re.$jvp((Some(&self.eps),)))
                }
            )*
            $(
                #[doc = concat!("`", stringify!($bname), "`(a + ȧε, b + ḃε) = `", stringify!($bname), "`(a, b) + (ȧ · `", stringify!($bdx), "` + ḃ · `", stringify!($bdo), "`) · ε, at x = a and o = b.")]
                #[inline(always)]
                fn $bname(self, other: Self) -> Self {
                    Dual::from_rule(self.re.$bjvp(other.re, (Some(&self.eps), Some(other.eps))))
                }
            )*
            /// `(a + ȧε)ⁿ = aⁿ + ȧ · n · aⁿ⁻¹ ε` (0 for n = 0).
            #[inline(always)]
            fn powi(self, n: i32) -> Self {
                Dual::from_rule(self.re.powi_jvp_full(n, (Some(&self.eps), None)))
            }
            /// `(x + ẋε) · (a + ȧε) + (b + ḃε) = (x·a + b) + (ẋ·a + ȧ·x + ḃ)ε`.
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                Dual::from_rule(self.re.mul_add_jvp_full(a.re, b.re, (Some(&self.eps), Some(a.eps), Some(b.eps))))
            }
            /// `clamp(x + ẋε, lo + l̇ε, hi + ḣε)`: the dual number of the input the value is.
            #[inline(always)]
            fn clamp(self, lo: Self, hi: Self) -> Self {
                Dual::from_rule(self.re.clamp_jvp_full(lo.re, hi.re, (Some(&self.eps), Some(lo.eps), Some(hi.eps))))
            }
        }

        /// Every unary method of the table with its value, forward and reverse rules in `f64`,
        /// for the tests (a method added to the table is tested with no further edit).
        #[cfg(test)]
        pub(crate) const UNARY_TABLE: &[crate::rules::tests::Unary] = &[$(
            crate::rules::tests::Unary {
                name: stringify!($name),
                value: |x| x.$name(),
                jvp: |x, t| x.$jvp((t.as_ref(),)),
                vjp: |x, w| {
                    let (_, pullback) = x.$vjp([true]);
                    pullback(w).0
                },
            },
        )*];

        /// Every binary method of the table, as [`UNARY_TABLE`].
        #[cfg(test)]
        pub(crate) const BINARY_TABLE: &[crate::rules::tests::Binary] = &[$(
            crate::rules::tests::Binary {
                name: stringify!($bname),
                value: |x, o| x.$bname(o),
                jvp: |x, o, t| x.$bjvp(o, (t.0.as_ref(), t.1)),
                vjp: |x, o, w| {
                    let (_, pullback) = x.$bvjp(o, [true, true]);
                    pullback(w)
                },
            },
        )*];

        /// Marker types naming the methods that a recomputed loop records (`recorded::tanh`,
        /// see `Site` in `rules/sites.rs`): those with a rule from their value below. The
        /// macro's list (`macros/src/cache.rs::CACHED`) names the same methods.
        #[allow(non_camel_case_types)]
        pub mod recorded {
            $($(
                #[doc = concat!("The method `", stringify!($name), "` (float rule `", stringify!($given), "`).")]
                pub struct $name;
            )?)*
        }

        $($(
            #[doc = concat!("Rule of `", stringify!($name), "` given its value `y` (recorded by the forward pass of a loop that its pullback runs again): ȳ ↦ (ȳ · `", stringify!($dx), "`, 0).")]
            #[inline(always)]
            #[allow(unused_variables)]
            fn $given<T: Float>($x: T, $y: T, needs: [bool; 2]) -> (T, impl FnOnce(T) -> (T, T)) {
                ($y, move |d: T| (if needs[0] { d * $dx } else { T::ZERO }, T::ZERO))
            }
            given_rule_for_floats!($name $given f32 f64);
        )?)*
    };
}

/// `GivenRule<recorded::$name>` for each float type, from the generic rule `$given`.
macro_rules! given_rule_for_floats {
    ($name:ident $given:ident $($t:ty)*) => {$(
        impl GivenRule<recorded::$name> for $t {
            type Value = $t;
            type Tangent = $t;
            type Other = $t;
            #[inline(always)]
            fn given(self, y: $t, needs: [bool; 2]) -> ($t, impl FnOnce($t) -> ($t, $t)) {
                $given(self, y, needs)
            }
        }
    )*};
}

/// `∂ xⁿ/∂x = n · xⁿ⁻¹`, taken as 0 for `n = 0` (also at `x = 0`, where `0 · 0⁻¹` is NaN).
fn powi_derivative<T: Float>(x: T, n: i32) -> T {
    if n == 0 {
        T::ZERO
    } else {
        T::from_f64(f64::from(n)) * x.powi(n - 1)
    }
}

fn one<T: Float>() -> T {
    T::ONE
}

fn half<T: Float>() -> T {
    T::from_f64(0.5)
}

/// `∂ max(x, o)/∂x`: 1 where `x` is selected, ½ on a tie (PyTorch's `maximum`).
fn select_first<T: Float>(x: T, o: T, first_wins: bool) -> T {
    if x == o {
        half()
    } else if first_wins {
        one()
    } else {
        T::ZERO
    }
}

/// `∂ xᵖ/∂x = p · xᵖ⁻¹`, taken as 0 for `p = 0` (PyTorch's convention; `0 · 0⁻¹` is NaN).
fn pow_base_derivative<T: Float>(x: T, p: T) -> T {
    if p == T::ZERO {
        T::ZERO
    } else {
        p * x.powf(p - one::<T>())
    }
}

/// `∂ xᵖ/∂p = y · ln x`, taken as 0 at `x = 0, p ≥ 0` (PyTorch's convention).
fn pow_exponent_derivative<T: Float>(x: T, p: T, y: T) -> T {
    if x == T::ZERO && p >= T::ZERO {
        T::ZERO
    } else {
        y * x.ln()
    }
}

/// `signum` with `signum(±0) = 0`, as the derivative of `abs`.
fn sign_or_zero<T: Float>(x: T) -> T {
    if x == T::ZERO { T::ZERO } else { x.signum() }
}

method_rules! {
    unary: [
        sin sin_vjp_full sin_jvp_full given sin_given_vjp_full => |x, y| x.cos();
        cos cos_vjp_full cos_jvp_full given cos_given_vjp_full => |x, y| -x.sin();
        tan tan_vjp_full tan_jvp_full given tan_given_vjp_full => |x, y| one::<T>() + y * y;
        asin asin_vjp_full asin_jvp_full given asin_given_vjp_full => |x, y| (one::<T>() - x * x).sqrt().recip();
        acos acos_vjp_full acos_jvp_full given acos_given_vjp_full => |x, y| -(one::<T>() - x * x).sqrt().recip();
        atan atan_vjp_full atan_jvp_full given atan_given_vjp_full => |x, y| (one::<T>() + x * x).recip();
        sinh sinh_vjp_full sinh_jvp_full given sinh_given_vjp_full => |x, y| x.cosh();
        cosh cosh_vjp_full cosh_jvp_full given cosh_given_vjp_full => |x, y| x.sinh();
        tanh tanh_vjp_full tanh_jvp_full given tanh_given_vjp_full => |x, y| one::<T>() - y * y;
        exp exp_vjp_full exp_jvp_full given exp_given_vjp_full => |x, y| y;
        exp2 exp2_vjp_full exp2_jvp_full given exp2_given_vjp_full => |x, y| y * T::from_f64(std::f64::consts::LN_2);
        exp_m1 exp_m1_vjp_full exp_m1_jvp_full given exp_m1_given_vjp_full => |x, y| y + one::<T>();
        ln ln_vjp_full ln_jvp_full given ln_given_vjp_full => |x, y| x.recip();
        ln_1p ln_1p_vjp_full ln_1p_jvp_full given ln_1p_given_vjp_full => |x, y| (one::<T>() + x).recip();
        log2 log2_vjp_full log2_jvp_full given log2_given_vjp_full => |x, y| (x * T::from_f64(std::f64::consts::LN_2)).recip();
        log10 log10_vjp_full log10_jvp_full given log10_given_vjp_full => |x, y| (x * T::from_f64(std::f64::consts::LN_10)).recip();
        sqrt sqrt_vjp_full sqrt_jvp_full => |x, y| half::<T>() / y;
        cbrt cbrt_vjp_full cbrt_jvp_full given cbrt_given_vjp_full => |x, y| (T::from_f64(3.0) * y * y).recip();
        recip recip_vjp_full recip_jvp_full => |x, y| -(y * y);
        abs abs_vjp_full abs_jvp_full => |x, y| sign_or_zero(x);
        signum signum_vjp_full signum_jvp_full => |x, y| T::ZERO;
        floor floor_vjp_full floor_jvp_full => |x, y| T::ZERO;
        ceil ceil_vjp_full ceil_jvp_full => |x, y| T::ZERO;
        round round_vjp_full round_jvp_full => |x, y| T::ZERO;
        trunc trunc_vjp_full trunc_jvp_full => |x, y| T::ZERO;
        fract fract_vjp_full fract_jvp_full => |x, y| one::<T>();
    ]
    binary: [
        atan2 atan2_vjp_full atan2_jvp_full => |x, o, y| (o / (x * x + o * o), -x / (x * x + o * o));
        powf powf_vjp_full powf_jvp_full => |x, o, y| (pow_base_derivative(x, o), pow_exponent_derivative(x, o, y));
        log log_vjp_full log_jvp_full => |x, o, y| ((x * o.ln()).recip(), -x.ln() / (o * o.ln() * o.ln()));
        hypot hypot_vjp_full hypot_jvp_full => |x, o, y| (x / y, o / y);
        max max_vjp_full max_jvp_full => |x, o, y| (select_first(x, o, x > o), select_first(o, x, o > x));
        min min_vjp_full min_jvp_full => |x, o, y| (select_first(x, o, x < o), select_first(o, x, o < x));
    ]
}

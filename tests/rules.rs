//! Every derivative rule of `adjoint_core::rules`, one table line each: the generated gradient
//! equals the derivative written by hand and agrees with finite differences at several points
//! of the rule's domain, in `f64` and in `f32`. Exact values and the documented conventions at
//! kinks are checked separately below.

mod common;

use adjoint::prelude::*;
use common::{assert_close, assert_close_f32, check_gradient};
use std::f64::consts::{LN_2, LN_10};

/// A rule of one argument.
struct Unary {
    name: &'static str,
    f: fn(f64) -> f64,
    grad: fn(f64) -> f64,
    grad32: fn(f32) -> f32,
    /// The derivative, by hand.
    d: fn(f64) -> f64,
    at: &'static [f64],
    /// Whether `f` is smooth at every point of `at`, so that finite differences apply.
    smooth: bool,
}

/// A rule of two arguments.
struct Binary {
    name: &'static str,
    f: fn(f64, f64) -> f64,
    grad: fn(f64, f64) -> (f64, f64),
    grad32: fn(f32, f32) -> (f32, f32),
    d: fn(f64, f64) -> (f64, f64),
    at: &'static [(f64, f64)],
}

/// Writes, for every line, a module with the generic differentiable function `f<T: Float>` that
/// applies the rule, and a table entry for it.
macro_rules! rule_table {
    (
        unary { $($u:ident: |$x:ident| $ubody:expr, d = $ud:expr, at $uat:expr $(, $kink:ident)?;)* }
        binary { $($b:ident: |$bx:ident, $by:ident| $bbody:expr, d = $bd:expr, at $bat:expr;)* }
    ) => {
        $(
            mod $u {
                use adjoint::prelude::*;
                #[differentiable]
                pub fn f<T: Float>($x: T) -> T {
                    $ubody
                }
            }
        )*
        $(
            mod $b {
                use adjoint::prelude::*;
                #[differentiable]
                pub fn f<T: Float>($bx: T, $by: T) -> T {
                    $bbody
                }
            }
        )*
        const UNARY: &[Unary] = &[$(
            Unary {
                name: stringify!($u),
                f: $u::f::<f64>,
                grad: |x| gradient($u::f_vjp(x)),
                grad32: |x| gradient($u::f_vjp(x)),
                d: $ud,
                at: &$uat,
                smooth: rule_table!(@smooth $($kink)?),
            },
        )*];
        const BINARY: &[Binary] = &[$(
            Binary {
                name: stringify!($b),
                f: $b::f::<f64>,
                grad: |x, y| gradient($b::f_vjp(x, y)),
                grad32: |x, y| gradient($b::f_vjp(x, y)),
                d: $bd,
                at: &$bat,
            },
        )*];
    };
    (@smooth) => { true };
    (@smooth piecewise_constant) => { false };
}

rule_table! {
    unary {
        neg: |x| -x, d = |_| -1.0, at [-2.0, 0.0, 1.5];
        sin: |x| x.sin(), d = |x| x.cos(), at [-2.0, -0.5, 0.0, 1.0, 3.0];
        cos: |x| x.cos(), d = |x| -x.sin(), at [-2.0, -0.5, 0.0, 1.0, 3.0];
        tan: |x| x.tan(), d = |x| 1.0 / (x.cos() * x.cos()), at [-1.2, -0.3, 0.0, 0.7, 1.2];
        asin: |x| x.asin(), d = |x| 1.0 / (1.0 - x * x).sqrt(), at [-0.9, -0.3, 0.0, 0.5, 0.9];
        acos: |x| x.acos(), d = |x| -1.0 / (1.0 - x * x).sqrt(), at [-0.9, -0.3, 0.0, 0.5, 0.9];
        atan: |x| x.atan(), d = |x| 1.0 / (1.0 + x * x), at [-3.0, -0.5, 0.0, 1.0, 4.0];
        sinh: |x| x.sinh(), d = |x| x.cosh(), at [-2.0, -0.5, 0.0, 1.0, 2.0];
        cosh: |x| x.cosh(), d = |x| x.sinh(), at [-2.0, -0.5, 0.0, 1.0, 2.0];
        tanh: |x| x.tanh(), d = |x| 1.0 / (x.cosh() * x.cosh()), at [-2.0, -0.5, 0.0, 1.0, 2.0];
        exp: |x| x.exp(), d = |x| x.exp(), at [-3.0, -1.0, 0.0, 0.5, 2.0];
        exp2: |x| x.exp2(), d = |x| x.exp2() * LN_2, at [-3.0, -1.0, 0.0, 0.5, 2.0];
        exp_m1: |x| x.exp_m1(), d = |x| x.exp(), at [-3.0, -1e-3, 0.0, 0.5, 2.0];
        ln: |x| x.ln(), d = |x| 1.0 / x, at [0.1, 0.5, 1.0, 2.0, 10.0];
        ln_1p: |x| x.ln_1p(), d = |x| 1.0 / (1.0 + x), at [-0.5, -1e-3, 0.0, 0.5, 3.0];
        log2: |x| x.log2(), d = |x| 1.0 / (x * LN_2), at [0.1, 0.5, 1.0, 2.0, 10.0];
        log10: |x| x.log10(), d = |x| 1.0 / (x * LN_10), at [0.1, 0.5, 1.0, 2.0, 10.0];
        sqrt: |x| x.sqrt(), d = |x| 0.5 / x.sqrt(), at [0.01, 0.5, 1.0, 4.0, 9.0];
        cbrt: |x| x.cbrt(), d = |x| 1.0 / (3.0 * x.cbrt().powi(2)), at [-8.0, -0.5, 0.3, 1.0, 8.0];
        recip: |x| x.recip(), d = |x| -1.0 / (x * x), at [-2.0, -0.5, 0.25, 1.0, 3.0];
        abs: |x| x.abs(), d = |x| x.signum(), at [-2.0, -0.5, 0.5, 3.0];
        signum: |x| x.signum(), d = |_| 0.0, at [-2.0, -0.5, 0.0, 0.5, 3.0], piecewise_constant;
        powi3: |x| x.powi(3), d = |x| 3.0 * x * x, at [-2.0, -0.5, 0.0, 1.0, 1.5];
        powi_neg2: |x| x.powi(-2), d = |x| -2.0 / (x * x * x), at [-2.0, -0.5, 0.5, 2.0];
        powi1: |x| x.powi(1), d = |_| 1.0, at [-2.0, 0.0, 3.0];
        powi0: |x| x.powi(0), d = |_| 0.0, at [-2.0, 0.0, 3.0];
    }
    binary {
        add: |x, y| x + y, d = |_, _| (1.0, 1.0), at [(1.0, 2.0), (-0.5, 3.0), (0.0, 0.0)];
        sub: |x, y| x - y, d = |_, _| (1.0, -1.0), at [(1.0, 2.0), (-0.5, 3.0), (0.0, 0.0)];
        mul: |x, y| x * y, d = |x, y| (y, x), at [(1.0, 2.0), (-0.5, 3.0), (0.0, 0.0)];
        div: |x, y| x / y, d = |x, y| (1.0 / y, -x / (y * y)), at [(1.0, 2.0), (-0.5, 3.0), (0.0, -0.7)];
        // Away from the jumps of `trunc(x / y)`.
        rem: |x, y| x % y, d = |x, y| (1.0, -(x / y).trunc()),
            at [(7.5, 2.0), (-7.5, 2.0), (5.3, -1.5), (0.7, 3.0)];
        atan2: |x, o| x.atan2(o), d = |x, o| (o / (x * x + o * o), -x / (x * x + o * o)),
            at [(1.0, 1.0), (-2.0, 0.5), (0.5, -3.0), (3.0, -0.1)];
        powf: |x, p| x.powf(p), d = |x, p| (p * x.powf(p - 1.0), x.powf(p) * x.ln()),
            at [(2.0, 3.0), (0.5, 2.5), (3.0, -1.5), (1.5, 0.0)];
        log: |x, b| x.log(b), d = |x, b| (1.0 / (x * b.ln()), -x.ln() / (b * b.ln() * b.ln())),
            at [(8.0, 2.0), (0.5, 10.0), (3.0, 0.3)];
        hypot: |x, y| x.hypot(y), d = |x, y| (x / x.hypot(y), y / x.hypot(y)),
            at [(3.0, 4.0), (-1.0, 2.0), (0.5, -0.5)];
        max: |x, y| x.max(y), d = |x, y| if x > y { (1.0, 0.0) } else { (0.0, 1.0) },
            at [(3.0, 2.0), (-1.0, 4.0), (0.5, -0.5)];
        min: |x, y| x.min(y), d = |x, y| if x < y { (1.0, 0.0) } else { (0.0, 1.0) },
            at [(3.0, 2.0), (-1.0, 4.0), (0.5, -0.5)];
    }
}

#[test]
fn unary_rules() {
    for rule in UNARY {
        for &x in rule.at {
            let got = (rule.grad)(x);
            assert_close(rule.name, got, (rule.d)(x));
            if rule.smooth {
                check_gradient(rule.name, rule.f, x, got);
            }
            let x32 = x as f32;
            assert_close_f32(rule.name, (rule.grad32)(x32), (rule.d)(f64::from(x32)));
        }
    }
}

#[test]
fn binary_rules() {
    for rule in BINARY {
        for &(x, y) in rule.at {
            let got = (rule.grad)(x, y);
            assert_close(rule.name, got, (rule.d)(x, y));
            check_gradient(rule.name, |(x, y)| (rule.f)(x, y), (x, y), got);
            let (x32, y32) = (x as f32, y as f32);
            let (dx32, dy32) = (rule.grad32)(x32, y32);
            let (dx, dy) = (rule.d)(f64::from(x32), f64::from(y32));
            assert_close_f32(rule.name, dx32, dx);
            assert_close_f32(rule.name, dy32, dy);
        }
    }
}

#[test]
fn every_rule_is_in_the_table() {
    // 21 methods of `rules::methods` (plus `powi` in 4 variants), unary `-`; 5 operators and
    // 6 binary methods; `mul_add` and casts have their own tests below.
    assert_eq!(UNARY.len(), 1 + 21 + 4);
    assert_eq!(BINARY.len(), 5 + 6);
}

mod mul_add {
    use adjoint::prelude::*;
    #[differentiable]
    pub fn f<T: Float>(x: T, a: T, b: T) -> T {
        x.mul_add(a, b)
    }
}

#[test]
fn mul_add_rule() {
    // ∂(x·a + b) = (a, x, 1).
    for (x, a, b) in [(2.0, 3.0, 4.0), (-0.5, 1.5, -2.0), (0.0, 0.0, 0.0)] {
        let got = gradient(mul_add::f_vjp(x, a, b));
        assert_eq!(got, (a, x, 1.0));
        check_gradient("mul_add", |(x, a, b)| mul_add::f(x, a, b), (x, a, b), got);
    }
    assert_eq!(gradient(mul_add::f_vjp(2.0_f32, 3.0, 4.0)), (3.0, 2.0, 1.0));
}

mod casts {
    use adjoint::prelude::*;
    #[differentiable]
    pub fn narrow(x: f64) -> f32 {
        x as f32
    }
    #[differentiable]
    pub fn widen(x: f32) -> f64 {
        x as f64
    }
    #[differentiable]
    #[allow(clippy::unnecessary_cast)] // the identity cast is a case of the cast rule
    pub fn same(x: f64) -> f64 {
        x as f64
    }
    #[differentiable]
    pub fn round_trip(x: f64) -> f64 {
        (x * 3.0) as f32 as f64
    }
}

#[test]
fn cast_rules() {
    // The tangent goes back through the cast unchanged: `ā = ȳ as From`.
    let (v, pb) = casts::narrow_vjp(1.5);
    assert_eq!(v, 1.5_f32);
    assert_eq!(pb(2.0_f32), 2.0_f64);
    let (v, pb) = casts::widen_vjp(1.5_f32);
    assert_eq!(v, 1.5_f64);
    assert_eq!(pb(0.25_f64), 0.25_f32);
    assert_eq!(gradient(casts::same_vjp(7.0)), 1.0);
    // d/dx (3x as f32 as f64) = 3: the cast rule rounds the value, not the tangent.
    assert_eq!(gradient(casts::round_trip_vjp(0.1)), 3.0);
    // A tangent that f32 cannot hold is rounded on the way back.
    let (_, pb) = casts::widen_vjp(1.0_f32);
    assert_eq!(pb(0.1_f64), 0.1_f32);
}

#[test]
fn exact_values() {
    assert_eq!(gradient(sin::f_vjp(0.0)), 1.0);
    assert_eq!(gradient(cos::f_vjp(0.0)), 0.0);
    assert_eq!(gradient(tan::f_vjp(0.0)), 1.0);
    assert_eq!(gradient(atan::f_vjp(1.0)), 0.5);
    assert_eq!(gradient(tanh::f_vjp(0.0)), 1.0);
    assert_eq!(gradient(cosh::f_vjp(0.0)), 0.0);
    assert_eq!(gradient(exp::f_vjp(0.0)), 1.0);
    assert_eq!(gradient(exp2::f_vjp(0.0)), LN_2);
    assert_eq!(gradient(exp2::f_vjp(3.0)), 8.0 * LN_2);
    assert_eq!(gradient(exp_m1::f_vjp(0.0)), 1.0);
    assert_eq!(gradient(ln::f_vjp(2.0)), 0.5);
    assert_eq!(gradient(ln_1p::f_vjp(1.0)), 0.5);
    assert_eq!(gradient(sqrt::f_vjp(4.0)), 0.25);
    assert_eq!(gradient(cbrt::f_vjp(8.0)), 1.0 / 12.0);
    assert_eq!(gradient(cbrt::f_vjp(-8.0)), 1.0 / 12.0);
    assert_eq!(gradient(recip::f_vjp(2.0)), -0.25);
    assert_eq!(gradient(asin::f_vjp(0.0)), 1.0);
    assert_eq!(gradient(acos::f_vjp(0.0)), -1.0);
    assert_eq!(gradient(neg::f_vjp(5.0)), -1.0);
    assert_eq!(gradient(powi3::f_vjp(2.0)), 12.0);
    assert_eq!(gradient(powi_neg2::f_vjp(2.0)), -0.25);
    assert_eq!(gradient(add::f_vjp(3.0, 4.0)), (1.0, 1.0));
    assert_eq!(gradient(sub::f_vjp(3.0, 4.0)), (1.0, -1.0));
    assert_eq!(gradient(mul::f_vjp(3.0, 4.0)), (4.0, 3.0));
    assert_eq!(gradient(div::f_vjp(1.0, 2.0)), (0.5, -0.25));
    // 7.5 % 2 = 1.5 = 7.5 − 2·3: ∂y = −trunc(7.5/2) = −3.
    assert_eq!(gradient(rem::f_vjp(7.5, 2.0)), (1.0, -3.0));
    assert_eq!(gradient(rem::f_vjp(-7.5, 2.0)), (1.0, 3.0));
    assert_eq!(gradient(atan2::f_vjp(1.0, 1.0)), (0.5, -0.5));
    assert_eq!(gradient(powf::f_vjp(2.0, 3.0)), (12.0, 8.0 * LN_2));
    // ∂b log_b x = −ln x / (b ln² b) = −3 ln 2 / (2 ln² 2): equal up to the rounding of ln 8.
    assert_close(
        "log",
        gradient(log::f_vjp(8.0, 2.0)),
        (1.0 / (8.0 * LN_2), -1.5 / LN_2),
    );
    assert_eq!(gradient(hypot::f_vjp(3.0, 4.0)), (0.6, 0.8));
    assert_eq!(gradient(max::f_vjp(3.0, 2.0)), (1.0, 0.0));
    assert_eq!(gradient(min::f_vjp(3.0, 2.0)), (0.0, 1.0));
    // The same in f32.
    assert_eq!(gradient(sqrt::f_vjp(4.0_f32)), 0.25);
    assert_eq!(gradient(mul::f_vjp(3.0_f32, 4.0)), (4.0, 3.0));
    assert_eq!(gradient(hypot::f_vjp(3.0_f32, 4.0)), (0.6, 0.8));
    assert_eq!(gradient(powi3::f_vjp(2.0_f32)), 12.0);
}

#[test]
fn pullbacks_are_linear_in_the_seed() {
    // The pullback multiplies the seed: ȳ ↦ ȳ · ∂y/∂x.
    let (_, pb) = sin::f_vjp(0.0);
    assert_eq!(pb(-3.0), -3.0);
    let (_, pb) = mul::f_vjp(3.0, 4.0);
    assert_eq!(pb(0.5), (2.0, 1.5));
    let (_, pb) = div::f_vjp(1.0, 2.0);
    assert_eq!(pb(2.0), (1.0, -0.5));
}

#[test]
fn abs_at_zero_is_zero() {
    assert_eq!(gradient(abs::f_vjp(0.0)), 0.0);
    assert_eq!(gradient(abs::f_vjp(-0.0)), 0.0);
    assert_eq!(gradient(abs::f_vjp(0.0_f32)), 0.0);
    assert_eq!(gradient(abs::f_vjp(-2.0)), -1.0);
    assert_eq!(gradient(abs::f_vjp(3.0)), 1.0);
}

#[test]
fn max_and_min_split_ties() {
    assert_eq!(gradient(max::f_vjp(2.0, 2.0)), (0.5, 0.5));
    assert_eq!(gradient(min::f_vjp(2.0, 2.0)), (0.5, 0.5));
    assert_eq!(gradient(max::f_vjp(0.0, -0.0)), (0.5, 0.5));
    assert_eq!(gradient(min::f_vjp(-1.5_f32, -1.5)), (0.5, 0.5));
    let (_, pb) = max::f_vjp(2.0, 2.0);
    assert_eq!(pb(3.0), (1.5, 1.5));
}

#[test]
fn signum_has_zero_derivative_everywhere() {
    for x in [-2.0, -0.0, 0.0, 1e-300, 3.0, f64::INFINITY] {
        assert_eq!(gradient(signum::f_vjp(x)), 0.0);
    }
}

#[test]
fn powf_exponent_derivative_at_zero_base() {
    // ∂p xᵖ = xᵖ ln x is taken as 0 at x = 0 for p ≥ 0 (rather than 0 · (−∞) = NaN).
    for p in [0.5, 1.0, 2.0, 3.5] {
        let (dx, dp) = gradient(powf::f_vjp(0.0, p));
        assert_eq!(dp, 0.0, "p = {p}");
        // ∂x = p · 0^(p−1): infinite for p < 1, 1 for p = 1, 0 above.
        let want = if p < 1.0 {
            f64::INFINITY
        } else if p == 1.0 {
            1.0
        } else {
            0.0
        };
        assert_eq!(dx, want, "p = {p}");
    }
    assert_eq!(gradient(powf::f_vjp(0.0_f32, 2.0)), (0.0, 0.0));
    // At x = 0, p = 0 both derivatives are 0: ∂p as above, and ∂x = p · xᵖ⁻¹ = 0 · 0⁻¹ is
    // masked to 0 (PyTorch's convention, as `powi` with n = 0) rather than NaN.
    assert_eq!(gradient(powf::f_vjp(0.0, 0.0)), (0.0, 0.0));
    assert_eq!(gradient(powf::f_vjp(0.0_f32, 0.0)), (0.0, 0.0));
}

#[test]
fn powi_with_exponent_zero() {
    // d/dx x⁰ = 0 everywhere, including x = 0 where n · xⁿ⁻¹ would be 0 · ∞.
    for x in [-2.0, -0.0, 0.0, 3.0] {
        assert_eq!(gradient(powi0::f_vjp(x)), 0.0);
    }
    assert_eq!(gradient(powi1::f_vjp(0.0)), 1.0);
    assert_eq!(gradient(powi3::f_vjp(0.0)), 0.0);
}

#[test]
fn ieee_results_at_singular_points() {
    // Documented: sqrt at 0, ln at 0 and hypot at (0, 0) follow IEEE arithmetic.
    assert_eq!(gradient(sqrt::f_vjp(0.0)), f64::INFINITY);
    assert_eq!(gradient(ln::f_vjp(0.0)), f64::INFINITY);
    let (dx, dy) = gradient(hypot::f_vjp(0.0_f64, 0.0));
    assert!(dx.is_nan() && dy.is_nan());
}

#[test]
#[should_panic(expected = "pullback gives")]
fn the_checker_rejects_a_wrong_gradient() {
    // The finite-difference check is not vacuous: 1.001 · cos x is caught.
    let x = 0.5_f64;
    check_gradient("sin", f64::sin, x, 1.001 * x.cos());
}

#[test]
#[should_panic(expected = "expected")]
fn the_exact_comparison_rejects_a_wrong_gradient() {
    assert_close("sin", gradient(sin::f_vjp(0.5)), 0.5_f64.cos() + 1e-9);
}

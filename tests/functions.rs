//! Free `#[differentiable]` functions of increasing complexity: compositions, bindings
//! (`let`, shadowing, `let mut`, compound assignment, blocks), tuples, parameters that are or
//! are not differentiated, and inactive code. Every gradient is checked against the math in
//! the comment (up to rounding) and against finite differences.

mod common;

use adjoint::prelude::*;
use common::{assert_close, check, check_gradient, check_vjp};

// ---------------------------------------------------------------------------------------------
// Compositions
// ---------------------------------------------------------------------------------------------

/// d/dx x² = 2x.
#[differentiable]
fn square(x: f64) -> f64 {
    x * x
}

/// ∇(2x − y/4 + 1) = (2, −1/4).
#[differentiable]
fn affine(x: f64, y: f64) -> f64 {
    2.0 * x - y / 4.0 + 1.0
}

/// d/dx (x³ − 2x² + x − 5) = 3x² − 4x + 1.
#[differentiable]
fn cubic(x: f64) -> f64 {
    x * x * x - 2.0 * x * x + x - 5.0
}

/// ∇(xyz) = (yz, xz, xy).
#[differentiable]
fn product3(x: f64, y: f64, z: f64) -> f64 {
    x * y * z
}

/// ∇((x + y)/(x − y)) = (−2y, 2x)/(x − y)².
#[differentiable]
fn quotient(x: f64, y: f64) -> f64 {
    (x + y) / (x - y)
}

/// d/dx (sin x · cos x) = cos² x − sin² x.
#[differentiable]
fn sin_cos(x: f64) -> f64 {
    x.sin() * x.cos()
}

/// d/dx ln(1 + e^{sin x}) = e^{sin x} cos x / (1 + e^{sin x}).
#[differentiable]
fn nested(x: f64) -> f64 {
    x.sin().exp().ln_1p()
}

/// σ(x) = 1/(1 + e⁻ˣ), σ' = σ(1 − σ).
#[differentiable]
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// softplus' = σ.
#[differentiable]
fn softplus(x: f64) -> f64 {
    x.exp().ln_1p()
}

/// g = exp(−(x − μ)²/(2σ²)): ∂x = −g (x − μ)/σ², ∂μ = g (x − μ)/σ², ∂σ = g (x − μ)²/σ³.
#[differentiable]
fn gaussian(x: f64, mu: f64, sigma: f64) -> f64 {
    (-(x - mu) * (x - mu) / (2.0 * sigma * sigma)).exp()
}

/// Rosenbrock: ∂x = −2(1 − x) − 400x(y − x²), ∂y = 200(y − x²).
#[differentiable]
fn rosenbrock(x: f64, y: f64) -> f64 {
    (1.0 - x).powi(2) + 100.0 * (y - x * x).powi(2)
}

/// ab + c/d − d sin a: ∇ = (b − d cos a, a, 1/d, −c/d² − sin a).
#[differentiable]
fn four(a: f64, b: f64, c: f64, d: f64) -> f64 {
    a * b + c / d - a.sin() * d
}

/// x·x + sin x · x + x/(x + 1): d/dx = 2x + x cos x + sin x + 1/(x + 1)².
#[differentiable]
fn many_uses(x: f64) -> f64 {
    x * x + x.sin() * x + x / (x + 1.0)
}

/// ∇‖(x, y, z)‖ = (x, y, z)/‖(x, y, z)‖.
#[differentiable]
fn norm3(x: f64, y: f64, z: f64) -> f64 {
    (x * x + y * y + z * z).sqrt()
}

/// ∇ ln(eᵃ + eᵇ) = softmax(a, b).
#[differentiable]
fn log_sum_exp(a: f64, b: f64) -> f64 {
    (a.exp() + b.exp()).ln()
}

/// xʸ + yˣ: ∂x = y xʸ⁻¹ + yˣ ln y, ∂y = xʸ ln x + x yˣ⁻¹.
#[differentiable]
fn pow_pair(x: f64, y: f64) -> f64 {
    x.powf(y) + y.powf(x)
}

/// θ·r with θ = atan2(y, x), r = hypot(x, y): ∂y = θ y/r + x/r, ∂x = θ x/r − y/r.
#[differentiable]
fn arc_length(y: f64, x: f64) -> f64 {
    y.atan2(x) * x.hypot(y)
}

/// min(max(x, lo), hi): the gradient goes to whichever argument is selected.
#[differentiable]
fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
    x.max(lo).min(hi)
}

/// −(x % y)·x + 1/y: ∂x = −(x % y) − x, ∂y = x·trunc(x/y) − 1/y².
#[differentiable]
fn mixed_ops(x: f64, y: f64) -> f64 {
    (x % y) * -x + y.recip()
}

/// A constant: the gradient is 0.
#[differentiable]
fn constant(_x: f64) -> f64 {
    3.0
}

/// The identity: the gradient is 1.
#[differentiable]
fn identity(x: f64) -> f64 {
    x
}

/// A parameter that does not reach the result gets a zero tangent: ∇ = (2, 0).
#[differentiable]
fn ignores_second(x: f64, _y: f64) -> f64 {
    x * 2.0
}

/// −((−x)(−x)) = −x²: d/dx = −2x.
#[differentiable]
fn negations(x: f64) -> f64 {
    -(-x * -x)
}

/// tan(x)·x^2.5 − log₁₀(x)·cbrt(x) + mul_add: several rules in one expression.
/// d/dx = (1 + tan² x) x^2.5 + 2.5 tan x · x^1.5 − cbrt x/(x ln 10) − log₁₀ x/(3 x^{2/3}) + 2
#[differentiable]
fn kitchen_sink(x: f64) -> f64 {
    x.tan() * x.powf(2.5) - x.log10() * x.cbrt() + x.mul_add(2.0, 1.0)
}

/// The same value passed to every parameter: four(x, x, x, x) = x² + 1 − x sin x,
/// d/dx = 2x − sin x − x cos x.
#[differentiable]
fn same_argument(x: f64) -> f64 {
    four(x, x, x, x)
}

/// A method called on a call's result: sin(four(x, 1, 0, 1)) = sin(x − sin x),
/// d/dx = cos(x − sin x)(1 − cos x).
#[differentiable]
fn method_on_call(x: f64) -> f64 {
    four(x, 1.0, 0.0, 1.0).sin()
}

/// Unary minus binds looser than a method call: −(x²), d/dx = −2x.
#[differentiable]
fn neg_of_method(x: f64) -> f64 {
    -x.powi(2)
}

/// Methods on literal receivers: max(2, x) + 0.5ˣ: d/dx = [x > 2] + 0.5ˣ ln 0.5.
#[differentiable]
fn literal_receivers(x: f64) -> f64 {
    2.0_f64.max(x) + 0.5_f64.powf(x)
}

#[test]
fn compositions() {
    check!(square, square_vjp; 3.0 => 6.0);
    check!(affine, affine_vjp; 1.0, 2.0 => (2.0, -0.25));
    check!(cubic, cubic_vjp; 2.0 => 5.0);
    check!(product3, product3_vjp; 2.0, 3.0, 5.0 => (15.0, 10.0, 6.0));
    check!(quotient, quotient_vjp; 3.0, 1.0 => (-0.5, 1.5));
    let x = 0.7_f64;
    check!(sin_cos, sin_cos_vjp; x => x.cos().powi(2) - x.sin().powi(2));
    let e = x.sin().exp();
    check!(nested, nested_vjp; x => e * x.cos() / (1.0 + e));
    let s = 1.0 / (1.0 + (-x).exp());
    check!(sigmoid, sigmoid_vjp; x => s * (1.0 - s));
    check!(softplus, softplus_vjp; x => s);
    let (x, mu, sigma) = (1.5_f64, 0.5_f64, 2.0_f64);
    let g = (-(x - mu).powi(2) / (2.0 * sigma * sigma)).exp();
    check!(gaussian, gaussian_vjp; x, mu, sigma => (
        -g * (x - mu) / (sigma * sigma),
        g * (x - mu) / (sigma * sigma),
        g * (x - mu).powi(2) / sigma.powi(3),
    ));
    check!(rosenbrock, rosenbrock_vjp; 0.5, 1.0 => (-151.0, 150.0));
    let (a, b, c, d) = (0.3_f64, -1.2_f64, 2.0_f64, 4.0_f64);
    check!(four, four_vjp; a, b, c, d => (b - d * a.cos(), a, 1.0 / d, -c / (d * d) - a.sin()));
    let x = 1.3_f64;
    check!(many_uses, many_uses_vjp; x =>
        2.0 * x + x * x.cos() + x.sin() + 1.0 / ((x + 1.0) * (x + 1.0)));
    check!(norm3, norm3_vjp; 1.0, 2.0, 2.0 => (1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0));
    let (a, b) = (0.5_f64, -1.0_f64);
    let z = a.exp() + b.exp();
    check!(log_sum_exp, log_sum_exp_vjp; a, b => (a.exp() / z, b.exp() / z));
    let (x, y) = (1.5_f64, 2.5_f64);
    check!(pow_pair, pow_pair_vjp; x, y => (
        y * x.powf(y - 1.0) + y.powf(x) * y.ln(),
        x.powf(y) * x.ln() + x * y.powf(x - 1.0),
    ));
    let (y, x) = (1.0_f64, 2.0_f64);
    let (theta, r) = (y.atan2(x), x.hypot(y));
    check!(arc_length, arc_length_vjp; y, x => (theta * y / r + x / r, theta * x / r - y / r));
    check!(clamp, clamp_vjp; 1.0, 0.0, 2.0 => (1.0, 0.0, 0.0));
    check!(clamp, clamp_vjp; -1.0, 0.0, 2.0 => (0.0, 1.0, 0.0));
    check!(clamp, clamp_vjp; 5.0, 0.0, 2.0 => (0.0, 0.0, 1.0));
    check!(mixed_ops, mixed_ops_vjp; 7.5, 2.0 => (-9.0, 22.25));
    check!(constant, constant_vjp; 2.0 => 0.0);
    check!(identity, identity_vjp; 2.0 => 1.0);
    check!(ignores_second, ignores_second_vjp; 2.0, 7.0 => (2.0, 0.0));
    check!(negations, negations_vjp; 3.0 => -6.0);
    let x = 0.5_f64;
    check!(same_argument, same_argument_vjp; x => 2.0 * x - x.sin() - x * x.cos());
    check!(method_on_call, method_on_call_vjp; x => (x - x.sin()).cos() * (1.0 - x.cos()));
    check!(neg_of_method, neg_of_method_vjp; 1.5 => -3.0);
    check!(literal_receivers, literal_receivers_vjp; 3.0 => 1.0 + 0.125 * 0.5_f64.ln());
    check!(literal_receivers, literal_receivers_vjp; 1.0 => 0.5 * 0.5_f64.ln());
    let x = 0.8_f64;
    check!(kitchen_sink, kitchen_sink_vjp; x =>
        (1.0 + x.tan().powi(2)) * x.powf(2.5) + 2.5 * x.tan() * x.powf(1.5)
            - x.cbrt() / (x * std::f64::consts::LN_10)
            - x.log10() / (3.0 * x.cbrt().powi(2))
            + 2.0);
}

#[test]
fn exact_gradients_are_exact() {
    // Where the arithmetic is exact, so is the generated gradient.
    assert_eq!(gradient(square_vjp(3.0)), 6.0);
    assert_eq!(gradient(cubic_vjp(2.0)), 5.0);
    assert_eq!(gradient(product3_vjp(2.0, 3.0, 5.0)), (15.0, 10.0, 6.0));
    assert_eq!(gradient(rosenbrock_vjp(0.5, 1.0)), (-151.0, 150.0));
    assert_eq!(gradient(mixed_ops_vjp(7.5, 2.0)), (-9.0, 22.25));
    assert_eq!(value_with_gradient(cubic_vjp(2.0)), (-3.0, 5.0));
}

// ---------------------------------------------------------------------------------------------
// Bindings
// ---------------------------------------------------------------------------------------------

/// a = 2x, b = a + 1, c = b·a = 4x² + 2x: d/dx = 8x + 2.
#[differentiable]
#[allow(clippy::let_and_return)] // returning a binding is the case under test
fn let_chain(x: f64) -> f64 {
    let a = x * 2.0;
    let b = a + 1.0;
    let c = b * a;
    c
}

/// √(x² + x): d/dx = (2x + 1)/(2√(x² + x)).
#[differentiable]
#[allow(clippy::let_and_return)] // returning a binding is the case under test
fn shadowing(x: f64) -> f64 {
    let y = x * x;
    let y = y + x;
    let y = y.sqrt();
    y
}

/// sin(3x): d/dx = 3 cos 3x (the parameter itself is shadowed).
#[differentiable]
#[allow(clippy::let_and_return)] // returning a binding is the case under test
fn shadow_param(x: f64) -> f64 {
    let x = x * 3.0;
    let x = x.sin();
    x
}

/// y = x; y = y·y; y = y + x: x² + x, d/dx = 2x + 1.
#[differentiable]
#[allow(clippy::assign_op_pattern)] // plain reassignment is the case under test
fn let_mut_reassign(x: f64) -> f64 {
    let mut y = x;
    y = y * y;
    y = y + x;
    y
}

/// a = ((x + y − 1)·x)/y = x²/y + x − x/y (then `%= 100` leaves it unchanged):
/// ∂x = 2x/y + 1 − 1/y, ∂y = (x − x²)/y².
#[differentiable]
fn compound_all(x: f64, y: f64) -> f64 {
    let mut a = x;
    a += y;
    a -= 1.0;
    a *= x;
    a /= y;
    a %= 100.0;
    a
}

/// acc = 2(x + x²): d/dx = 2 + 4x. The accumulator starts inactive.
#[differentiable]
fn compound_from_zero(x: f64) -> f64 {
    let mut acc = 0.0;
    acc += x;
    acc += x * x;
    acc *= 2.0;
    acc
}

/// e^{2x} + x: d/dx = 2e^{2x} + 1.
#[differentiable]
fn block_expr(x: f64) -> f64 {
    let y = {
        let t = x * 2.0;
        t.exp()
    };
    y + { x }
}

/// (xy + x)²: ∂x = 2(xy + x)(y + 1), ∂y = 2(xy + x)x.
#[differentiable]
fn nested_blocks(x: f64, y: f64) -> f64 {
    {
        let a = x * y;
        {
            let b = a + x;
            b * b
        }
    }
}

/// The inner `y` is local to its block: the result is 2x, d/dx = 2.
#[differentiable]
fn inner_shadow(x: f64) -> f64 {
    let y = x * 2.0;
    {
        let y = y * 100.0;
        let _ = y;
    }
    y
}

/// An assignment inside a block updates the outer variable: 3x², d/dx = 6x.
#[differentiable]
fn assign_in_block(x: f64) -> f64 {
    let mut y = x;
    {
        y = y * y;
    }
    y * 3.0
}

/// eˣ·x with a final `return`: d/dx = eˣ(1 + x).
#[differentiable]
#[allow(clippy::needless_return)] // a final `return` is one of the supported forms
fn return_last(x: f64) -> f64 {
    let y = x.exp();
    return y * x;
}

/// `b` keeps the old value of `a`: the result is y·x, ∇ = (y, x).
#[differentiable]
fn reassign_keeps_copies(x: f64, y: f64) -> f64 {
    let mut a = x;
    let b = a;
    a = y;
    a * b
}

/// *r · *r with r = &x: d/dx = 2x.
#[differentiable]
fn deref_local(x: f64) -> f64 {
    let r = &x;
    *r * *r
}

/// Typed bindings: (2x)·x, d/dx = 4x.
#[differentiable]
fn typed_let(x: f64) -> f64 {
    let y: f64 = x * 2.0;
    let (a, b): (f64, f64) = (y, x);
    a * b
}

/// A compound assignment inside a block: a = x + x², a·x = x² + x³, d/dx = 2x + 3x².
#[differentiable]
fn compound_in_block(x: f64) -> f64 {
    let mut a = x;
    {
        a += x * x;
    }
    a * x
}

/// A compound assignment reading its own target: a = x; a *= a; a += a: 2x², d/dx = 4x.
#[differentiable]
fn compound_self(x: f64) -> f64 {
    let mut a = x;
    a *= a;
    a += a;
    a
}

/// A binding declared first and assigned later: 2x, d/dx = 2.
#[differentiable]
#[allow(clippy::needless_late_init)] // late initialisation is the case under test
fn late_init(x: f64) -> f64 {
    let y;
    y = x * 2.0;
    y
}

/// `.clone()` keeps the derivative: x·x, d/dx = 2x.
#[differentiable]
#[allow(clippy::clone_on_copy)] // `clone` is the case under test
fn clones(x: f64) -> f64 {
    let y = x.clone();
    y * x
}

#[test]
fn bindings() {
    check!(let_chain, let_chain_vjp; 1.5 => 14.0);
    let x = 2.0_f64;
    check!(shadowing, shadowing_vjp; x => (2.0 * x + 1.0) / (2.0 * (x * x + x).sqrt()));
    check!(shadow_param, shadow_param_vjp; x => 3.0 * (3.0 * x).cos());
    check!(let_mut_reassign, let_mut_reassign_vjp; 3.0 => 7.0);
    check!(compound_all, compound_all_vjp; 2.0, 4.0 => (1.75, -0.125));
    check!(compound_from_zero, compound_from_zero_vjp; 1.5 => 8.0);
    let x = 0.4_f64;
    check!(block_expr, block_expr_vjp; x => 2.0 * (2.0 * x).exp() + 1.0);
    let (x, y) = (1.5_f64, -0.5_f64);
    let u = x * y + x;
    check!(nested_blocks, nested_blocks_vjp; x, y => (2.0 * u * (y + 1.0), 2.0 * u * x));
    check!(inner_shadow, inner_shadow_vjp; 3.0 => 2.0);
    check!(assign_in_block, assign_in_block_vjp; 1.5 => 9.0);
    let x = 0.9_f64;
    check!(return_last, return_last_vjp; x => x.exp() * (1.0 + x));
    check!(reassign_keeps_copies, reassign_keeps_copies_vjp; 2.0, 5.0 => (5.0, 2.0));
    check!(deref_local, deref_local_vjp; 2.5 => 5.0);
    check!(typed_let, typed_let_vjp; 1.5 => 6.0);
    check!(compound_in_block, compound_in_block_vjp; 2.0 => 16.0);
    check!(compound_self, compound_self_vjp; 1.5 => 6.0);
    check!(late_init, late_init_vjp; 1.5 => 2.0);
    check!(clones, clones_vjp; 1.5 => 3.0);
}

// ---------------------------------------------------------------------------------------------
// Tuples
// ---------------------------------------------------------------------------------------------

/// (xy, x + y): Jᵀ(s, t) = (sy + t, sx + t).
#[differentiable]
fn tuple_result(x: f64, y: f64) -> (f64, f64) {
    (x * y, x + y)
}

/// (r cos t, r sin t): Jᵀ(u, v) = (u cos t + v sin t, −u r sin t + v r cos t).
#[differentiable]
fn polar(r: f64, t: f64) -> (f64, f64) {
    (r * t.cos(), r * t.sin())
}

/// sin² + cos² = 1: d/dx = 0.
#[differentiable]
fn tuple_pattern(x: f64) -> f64 {
    let (a, b) = (x.sin(), x.cos());
    a * a + b * b
}

/// t = (xy, x − y), t.0·t.1 = x²y − xy²: ∇ = (2xy − y², x² − 2xy).
#[differentiable]
fn tuple_fields(x: f64, y: f64) -> f64 {
    let t = (x * y, x - y);
    t.0 * t.1
}

/// p.0·e^{p.1}: the tangent of p is (e^{p.1}, p.0 e^{p.1}).
#[differentiable]
fn tuple_param(p: (f64, f64)) -> f64 {
    p.0 * p.1.exp()
}

/// ab + c with a pattern parameter: ∇ = ((b, a), 1).
#[differentiable]
fn pattern_param((a, b): (f64, f64), c: f64) -> f64 {
    a * b + c
}

/// ((x, 2x), x²): Jᵀ((s, t), u) = s + 2t + 2xu.
#[differentiable]
fn nested_tuple(x: f64) -> ((f64, f64), f64) {
    ((x, x * 2.0), x * x)
}

/// (sin x, cos x), used by the callers below.
#[differentiable]
fn sincos(x: f64) -> (f64, f64) {
    (x.sin(), x.cos())
}

/// sin x · cos x through a tuple-valued call: d/dx = cos² x − sin² x.
#[differentiable]
fn destructure_call(x: f64) -> f64 {
    let (s, c) = sincos(x);
    s * c
}

/// sin x + cos x via `.0`/`.1` of calls: d/dx = cos x − sin x.
#[differentiable]
fn call_components(x: f64) -> f64 {
    sincos(x).0 + sincos(x).1
}

/// (y, x): Jᵀ(s, t) = (t, s).
#[differentiable]
fn swap(x: f64, y: f64) -> (f64, f64) {
    (y, x)
}

/// (3x, 1): Jᵀ(s, t) = 3s.
#[differentiable]
fn with_constant(x: f64) -> (f64, f64) {
    (x * 3.0, 1.0)
}

/// ((a, b), c) = ((x, y), xy), a + bc = x + xy²: ∇ = (1 + y², 2xy).
#[differentiable]
fn nested_pattern(x: f64, y: f64) -> f64 {
    let ((a, b), c) = ((x, y), x * y);
    a + b * c
}

/// The ignored half of a tuple does not matter: d/dx = 2.
#[differentiable]
fn wildcard_pattern(x: f64) -> f64 {
    let (a, _) = (x * 2.0, x.ln());
    a
}

/// A tuple parameter passed on to a call and a tuple rebuilt from its parts:
/// (p.1, p.0) then swap back, times sincos: f = p.0·sin(p.1); ∇ = (sin p.1, p.0 cos p.1).
#[differentiable]
fn tuple_round_trip(p: (f64, f64)) -> f64 {
    let q = (p.1, p.0);
    let (a, b) = swap(q.0, q.1);
    a * sincos(b).0
}

/// Fields of tuple literals: (x, y).1 · (2x, y).0 = 2xy, ∇ = (2y, 2x).
#[differentiable]
fn tuple_literal_fields(x: f64, y: f64) -> f64 {
    (x, y).1 * (x * 2.0, y).0
}

/// A tuple variable reassigned from its own fields: t = (1, 3x): Jᵀ(s, u) = 3u.
#[differentiable]
fn tuple_reassign(x: f64) -> (f64, f64) {
    let mut t = (x, 1.0);
    t = (t.1, t.0 * 3.0);
    t
}

/// A 1-tuple result: (2x,), Jᵀ(s,) = 2s.
#[differentiable]
fn one_tuple(x: f64) -> (f64,) {
    (x * 2.0,)
}

#[test]
fn tuples() {
    let (x, y) = (2.0, 3.0);
    let (v, pb) = tuple_result_vjp(x, y);
    assert_eq!(v, (6.0, 5.0));
    assert_eq!(pb((1.0, 0.0)), (3.0, 2.0));
    for seed in [(1.0, 0.0), (0.0, 1.0), (0.5, -2.0)] {
        let (_, pb) = tuple_result_vjp(x, y);
        let got = pb(seed);
        assert_eq!(got, (seed.0 * y + seed.1, seed.0 * x + seed.1));
        check_vjp(
            "tuple_result",
            |(x, y)| tuple_result(x, y),
            (x, y),
            seed,
            got,
        );
    }
    let (r, t) = (1.5_f64, 0.6_f64);
    for (u, v) in [(1.0, 0.0), (0.0, 1.0), (0.3, 0.7)] {
        let (_, pb) = polar_vjp(r, t);
        let got = pb((u, v));
        let want = (
            u * t.cos() + v * t.sin(),
            -u * r * t.sin() + v * r * t.cos(),
        );
        assert_close("polar", got, want);
        check_vjp("polar", |(r, t)| polar(r, t), (r, t), (u, v), got);
    }
    check!(tuple_pattern, tuple_pattern_vjp; 0.7 => 0.0);
    let (x, y) = (1.5_f64, 0.5_f64);
    check!(tuple_fields, tuple_fields_vjp; x, y => (2.0 * x * y - y * y, x * x - 2.0 * x * y));
    let p = (2.0_f64, 0.5_f64);
    let got = gradient(tuple_param_vjp(p));
    assert_close("tuple_param", got, (p.1.exp(), p.0 * p.1.exp()));
    check_gradient("tuple_param", tuple_param, p, got);
    let got = gradient(pattern_param_vjp((2.0, 3.0), 4.0));
    assert_eq!(got, ((3.0, 2.0), 1.0));
    check_gradient(
        "pattern_param",
        |(ab, c)| pattern_param(ab, c),
        ((2.0, 3.0), 4.0),
        got,
    );
    let (_, pb) = nested_tuple_vjp(1.5);
    let got = pb(((1.0, 2.0), 3.0));
    assert_eq!(got, 1.0 + 4.0 + 9.0);
    check_vjp("nested_tuple", nested_tuple, 1.5, ((1.0, 2.0), 3.0), got);
    let x = 0.7_f64;
    check!(destructure_call, destructure_call_vjp; x => x.cos().powi(2) - x.sin().powi(2));
    check!(call_components, call_components_vjp; x => x.cos() - x.sin());
    let (_, pb) = swap_vjp(1.0, 2.0);
    assert_eq!(pb((5.0, 7.0)), (7.0, 5.0));
    let (v, pb) = with_constant_vjp(2.0);
    assert_eq!(v, (6.0, 1.0));
    assert_eq!(pb((1.0, 100.0)), 3.0);
    let (x, y) = (1.5, -2.0);
    check!(nested_pattern, nested_pattern_vjp; x, y => (1.0 + y * y, 2.0 * x * y));
    check!(wildcard_pattern, wildcard_pattern_vjp; 3.0 => 2.0);
    check!(tuple_literal_fields, tuple_literal_fields_vjp; 1.5, 2.0 => (4.0, 3.0));
    let (v, pb) = tuple_reassign_vjp(2.0);
    assert_eq!(v, (1.0, 6.0));
    assert_eq!(pb((1.0, 0.5)), 1.5);
    check_vjp("tuple_reassign", tuple_reassign, 2.0, (1.0, 0.5), 1.5);
    let (v, pb) = one_tuple_vjp(2.0);
    assert_eq!(v, (4.0,));
    assert_eq!(pb((3.0,)), 6.0);
    check_vjp("one_tuple", one_tuple, 2.0, (3.0,), 6.0);
    let p = (1.5_f64, 0.4_f64);
    let got = gradient(tuple_round_trip_vjp(p));
    assert_close("tuple_round_trip", got, (p.1.sin(), p.0 * p.1.cos()));
    check_gradient("tuple_round_trip", tuple_round_trip, p, got);
}

// ---------------------------------------------------------------------------------------------
// Which parameters are differentiated
// ---------------------------------------------------------------------------------------------

/// xy + zy² with wrt(x, z): the pullback returns (∂x, ∂z) = (y, y²).
#[differentiable(wrt(x, z))]
fn wrt_subset(x: f64, y: f64, z: f64) -> f64 {
    x * y + z * y * y
}

/// xc + sin c with c `#[no_derivative]`: d/dx = c.
#[differentiable]
fn no_derivative_param(x: f64, #[no_derivative] c: f64) -> f64 {
    x * c + c.sin()
}

/// n·xⁿ with an integer n (not differentiated): d/dx = n² xⁿ⁻¹.
#[differentiable]
fn usize_param(x: f64, n: usize) -> f64 {
    x.powi(n as i32) * n as f64
}

/// xⁿ with n: i32: d/dx = n xⁿ⁻¹.
#[differentiable]
fn i32_param(x: f64, n: i32) -> f64 {
    x.powi(n)
}

/// A `bool` chooses a constant: d/dx = 2 or 3.
#[differentiable]
fn bool_param(x: f64, flag: bool) -> f64 {
    let s = if flag { 2.0 } else { 3.0 };
    x * s
}

/// *x·*y + sin x with reference parameters: ∇ = (y + cos x, x).
#[differentiable]
fn ref_params(x: &f64, y: &f64) -> f64 {
    *x * *y + x.sin()
}

/// ref_params(&x, &x) = x² + sin x, references to a by-value parameter passed on: d/dx =
/// 2x + cos x. (Until a function with reference parameters declared a pullback that borrows
/// none of them, this was rustc's E0597 inside generated code.)
#[differentiable]
fn passes_refs(x: f64) -> f64 {
    ref_params(&x, &x)
}

/// A slice built in the body passed by reference to a function whose loop the pullback runs
/// again: ‖(x, 2x)‖² = 5x², d/dx = 10x.
#[differentiable]
fn passes_local_slice(x: f64) -> f64 {
    let v = vec![x, 2.0 * x];
    squares(&v)
}

/// Σ vᵢ² over a slice, by index (a loop the pullback runs again, reading `v`).
#[differentiable]
#[allow(clippy::needless_range_loop)]
fn squares(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * v[i];
    }
    s
}

/// A loop over data (k = 0 + 1 + … + (n − 1)) and then xk: d/dx = n(n − 1)/2.
#[differentiable]
fn loop_on_data(x: f64, n: usize) -> f64 {
    let mut k = 0.0;
    for i in 0..n {
        k += i as f64;
    }
    x * k
}

/// wrt(y) only, y appears twice: (x + y)·y, d/dy = x + 2y.
#[differentiable(wrt(y))]
fn wrt_second(x: f64, y: f64) -> f64 {
    (x + y) * y
}

/// A `#[no_derivative]` data parameter passed on to a call's inactive slot: xc, d/dx = c.
#[differentiable]
fn passes_data(x: f64, #[no_derivative] c: f64) -> f64 {
    no_derivative_param(x, c) - c.sin()
}

#[test]
fn differentiated_parameters() {
    assert_eq!(gradient(wrt_subset_vjp(2.0, 3.0, 5.0)), (3.0, 9.0));
    check_gradient(
        "wrt_subset",
        |(x, z)| wrt_subset(x, 3.0, z),
        (2.0, 5.0),
        (3.0, 9.0),
    );
    check!(|x| no_derivative_param(x, 1.5), |x| no_derivative_param_vjp(x, 1.5); 2.0 => 1.5);
    check!(|x| usize_param(x, 3), |x| usize_param_vjp(x, 3); 2.0 => 36.0);
    check!(|x| i32_param(x, -2), |x| i32_param_vjp(x, -2); 2.0 => -0.25);
    check!(|x| bool_param(x, true), |x| bool_param_vjp(x, true); 2.0 => 2.0);
    check!(|x| bool_param(x, false), |x| bool_param_vjp(x, false); 2.0 => 3.0);
    let (x, y) = (0.5_f64, 2.0_f64);
    let got = gradient(ref_params_vjp(&x, &y));
    assert_close("ref_params", got, (y + x.cos(), x));
    check_gradient("ref_params", |(x, y)| ref_params(&x, &y), (x, y), got);
    check!(passes_refs, passes_refs_vjp; x => 2.0 * x + x.cos());
    check!(passes_local_slice, passes_local_slice_vjp; 0.7 => 7.0);
    check!(|x| loop_on_data(x, 5), |x| loop_on_data_vjp(x, 5); 2.0 => 10.0);
    check!(|y| wrt_second(3.0, y), |y| wrt_second_vjp(3.0, y); 2.0 => 7.0);
    check!(|x| passes_data(x, 0.5), |x| passes_data_vjp(x, 0.5); 2.0 => 0.5);
}

// ---------------------------------------------------------------------------------------------
// Inactive code
// ---------------------------------------------------------------------------------------------

/// Logging, assertions and formatting on active values are left alone: d/dx = 2.
#[differentiable]
fn prints(x: f64) -> f64 {
    println!("x = {x}");
    assert!(x.is_finite(), "x must be finite");
    let label = format!("{x:.3}");
    let _ = label.len();
    x * 2.0
}

/// x·x held constant on the right: d/dx = x.
#[differentiable]
fn without_derivative_use(x: f64) -> f64 {
    x * without_derivative(x)
}

/// without_derivative(xy) + sin x · without_derivative(y): ∇ = (y cos x, 0).
#[differentiable]
fn without_derivative_expr(x: f64, y: f64) -> f64 {
    without_derivative(x * y) + x.sin() * without_derivative(y)
}

/// A computation whose value never reaches the result: d/dx = 3.
#[differentiable]
fn dead_code(x: f64) -> f64 {
    let unused = x.exp() * 1e300;
    let _ = unused;
    x * 3.0
}

/// A comparison is data: 1·x for x > 1, 2·x otherwise.
#[differentiable]
fn comparison_is_data(x: f64) -> f64 {
    let big = x > 1.0;
    let s = if big { 1.0 } else { 2.0 };
    x * s
}

/// A constant and a `const` item: (x + K)·2, d/dx = 2.
#[differentiable]
fn uses_const(x: f64) -> f64 {
    const K: f64 = 2.5;
    (x + K) * 2.0
}

/// Data computed from a non-differentiated parameter with an integer cast: xn², d/dx = n².
#[differentiable]
fn casts_data(x: f64, n: usize) -> f64 {
    let m = (n * n) as f64;
    x * m
}

#[test]
fn inactive_code() {
    check!(prints, prints_vjp; 1.25 => 2.0);
    // `without_derivative` changes the derivative, not the value, so finite differences apply
    // to the function with the stopped values frozen at the point.
    let x = 3.0;
    assert_eq!(without_derivative_use_vjp(x).0, 9.0);
    let got = gradient(without_derivative_use_vjp(x));
    assert_eq!(got, 3.0);
    check_gradient("without_derivative_use", |t| t * x, x, got);
    let (x, y) = (0.5_f64, 2.0_f64);
    let got = gradient(without_derivative_expr_vjp(x, y));
    assert_close("without_derivative_expr", got, (y * x.cos(), 0.0));
    check_gradient(
        "without_derivative_expr",
        |(s, _t)| x * y + s.sin() * y,
        (x, y),
        got,
    );
    check!(dead_code, dead_code_vjp; 1.0 => 3.0);
    check!(comparison_is_data, comparison_is_data_vjp; 3.0 => 1.0);
    check!(comparison_is_data, comparison_is_data_vjp; 0.5 => 2.0);
    check!(uses_const, uses_const_vjp; 1.0 => 2.0);
    check!(|x| casts_data(x, 3), |x| casts_data_vjp(x, 3); 1.0 => 9.0);
}

#[test]
fn values_are_the_original_functions() {
    // The companion's value is the original function's value, bit for bit.
    for x in [-1.5, 0.0, 0.3, 2.0] {
        assert_eq!(
            kitchen_sink_vjp(x.abs() + 0.1).0,
            kitchen_sink(x.abs() + 0.1)
        );
        assert_eq!(many_uses_vjp(x).0, many_uses(x));
        assert_eq!(compound_all_vjp(x + 3.0, 1.5).0, compound_all(x + 3.0, 1.5));
        assert_eq!(polar_vjp(x, 1.0).0, polar(x, 1.0));
    }
}

// ---------------------------------------------------------------------------------------------
// Properties: gradients agree with finite differences at random points
// ---------------------------------------------------------------------------------------------

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn rosenbrock_gradient(x in -2.0..2.0_f64, y in -2.0..2.0_f64) {
            let got = gradient(rosenbrock_vjp(x, y));
            check_gradient("rosenbrock", |(x, y)| rosenbrock(x, y), (x, y), got);
        }

        #[test]
        fn gaussian_gradient(x in -3.0..3.0_f64, mu in -3.0..3.0_f64, sigma in 0.5..3.0_f64) {
            let got = gradient(gaussian_vjp(x, mu, sigma));
            check_gradient("gaussian", |(x, m, s)| gaussian(x, m, s), (x, mu, sigma), got);
        }

        #[test]
        fn log_sum_exp_gradient(a in -10.0..10.0_f64, b in -10.0..10.0_f64) {
            let got = gradient(log_sum_exp_vjp(a, b));
            check_gradient("log_sum_exp", |(a, b)| log_sum_exp(a, b), (a, b), got);
            // The gradient is a probability vector.
            prop_assert!((got.0 + got.1 - 1.0).abs() < 1e-12);
        }

        #[test]
        fn compound_all_gradient(x in -3.0..3.0_f64, y in 0.5..3.0_f64) {
            let got = gradient(compound_all_vjp(x, y));
            check_gradient("compound_all", |(x, y)| compound_all(x, y), (x, y), got);
        }

        #[test]
        fn kitchen_sink_gradient(x in 0.1..1.3_f64) {
            let got = gradient(kitchen_sink_vjp(x));
            check_gradient("kitchen_sink", kitchen_sink, x, got);
        }

        #[test]
        fn polar_vector_jacobian_product(
            r in 0.1..3.0_f64,
            t in -3.0..3.0_f64,
            u in -1.0..1.0_f64,
            v in -1.0..1.0_f64,
        ) {
            // <J e_i, w> = <e_i, Jᵀ w> for a random seed w.
            let (_, pb) = polar_vjp(r, t);
            check_vjp("polar", |(r, t)| polar(r, t), (r, t), (u, v), pb((u, v)));
        }
    }
}

//! Control flow inside `#[differentiable]` functions: `if`/`else if`/`else`, `if let`, `match`
//! (guards included), `for` over ranges and data iterators, `while` with active conditions,
//! nested loops, carried variables, element reads and writes of arrays and `Vec`s, `push`,
//! array and `vec!` literals, direct recursion, generic loops in `f32` and `f64`, methods with
//! loops, an Elman RNN over plain arrays and a loop of a million iterations.
//!
//! Every gradient is checked against the math in the doc comment of its function (up to
//! rounding, [`common::EXACT_TOL`]) and against central finite differences; the property tests
//! at the end compare with finite differences at random points away from the branch boundaries.

// The functions index arrays in `for i in 0..n` loops and write `acc = acc * x` on purpose:
// those are the constructs under test.
#![allow(clippy::needless_range_loop, clippy::assign_op_pattern)]

mod common;

use adjoint::prelude::*;
use common::{Vector, assert_close, assert_close_f32, check, check_gradient, check_vjp};

/// Arrays (and nested arrays) of coordinates are points too, so that `check!` and the helpers
/// of `common` take array parameters and gradients.
impl<V: Vector, const N: usize> Vector for [V; N] {
    const DIM: usize = N * V::DIM;
    fn get(&self, i: usize) -> f64 {
        self[i / V::DIM].get(i % V::DIM)
    }
    fn set(&mut self, i: usize, value: f64) {
        self[i / V::DIM].set(i % V::DIM, value);
    }
}

/// A `Vec` tangent as an array: a `Vec` tangent may be shorter than its value (the zero
/// tangent is the empty vector); the missing coordinates are zeros.
fn padded<const N: usize>(v: &[f64]) -> [f64; N] {
    assert!(v.len() <= N, "tangent of length {} for {N} values", v.len());
    std::array::from_fn(|i| v.get(i).copied().unwrap_or(0.0))
}

/// Checks the gradient of a function of a `Vec<f64>` against `want` and finite differences.
fn check_vec<const N: usize>(
    name: &str,
    f: impl Fn(Vec<f64>) -> f64,
    at: [f64; N],
    got: &[f64],
    want: [f64; N],
) {
    let got = padded::<N>(got);
    assert_close(name, got, want);
    check_gradient(name, |a: [f64; N]| f(a.to_vec()), at, got);
}

// ---------------------------------------------------------------------------------------------
// if / else if / else / if let
// ---------------------------------------------------------------------------------------------

/// Huber-like: −x − ½ (x < −1), ½x² (|x| ≤ 1), x − ½ (x > 1); d/dx = −1, x, 1.
#[differentiable]
fn huber(x: f64) -> f64 {
    if x < -1.0 {
        -x - 0.5
    } else if x <= 1.0 {
        0.5 * x * x
    } else {
        x - 0.5
    }
}

/// |x| by a branch: d/dx = sgn x.
#[differentiable]
fn abs_branch(x: f64) -> f64 {
    if x >= 0.0 { x } else { -x }
}

/// ReLU with a constant arm: d/dx = 1 (x > 0) or 0 (the arm taken has no active value).
#[differentiable]
fn relu(x: f64) -> f64 {
    if x > 0.0 { x } else { 0.0 }
}

/// Nested ifs on two actives:
/// x > 0, y > 0: xy, ∇ = (y, x); x > 0, y ≤ 0: x − y², ∇ = (1, −2y);
/// x ≤ 0, y > x: y sin x, ∇ = (y cos x, sin x); x ≤ 0, y ≤ x: eˣ⁺ʸ, ∇ = (eˣ⁺ʸ, eˣ⁺ʸ).
#[differentiable]
fn nested_if(x: f64, y: f64) -> f64 {
    if x > 0.0 {
        if y > 0.0 { x * y } else { x - y * y }
    } else if y > x {
        y * x.sin()
    } else {
        (x + y).exp()
    }
}

/// Two outer `let mut` variables assigned in the arms, from a = x², b = y²:
/// x > y: a = xy, b = xy + y, ab = x²y² + xy², ∇ = (2xy² + y², 2x²y + 2xy);
/// else: a = x², b = y² − x, ab = x²y² − x³, ∇ = (2xy² − 3x², 2x²y).
#[differentiable]
fn assign_two(x: f64, y: f64) -> f64 {
    let mut a = x * x;
    let mut b = y * y;
    if x > y {
        a = x * y;
        b = a + y;
    } else {
        b = b - x;
    }
    a * b
}

/// `assign_two` starting from copies of the parameters that the arms also read, a = x, b = y:
/// x > y: a = xy, b = xy + y, ab = x²y² + xy², ∇ = (2xy² + y², 2x²y + 2xy);
/// else: a = x, b = y − x, ab = xy − x², ∇ = (y − 2x, x).
#[differentiable]
fn assign_two_copies(x: f64, y: f64) -> f64 {
    let mut a = x;
    let mut b = y;
    if x > y {
        a = x * y;
        b = a + y;
    } else {
        b = b - x;
    }
    a * b
}

/// `if` as a value: a = ln x (x > 1) or x − 1, result ax; d/dx = ln x + 1 or 2x − 1.
#[differentiable]
fn if_value(x: f64) -> f64 {
    let a = if x > 1.0 { x.ln() } else { x - 1.0 };
    a * x
}

/// `if` without `else` and a compound assignment: s = 3x (x > 0) or x, result s + x²;
/// d/dx = 3 + 2x or 1 + 2x.
#[differentiable]
fn if_without_else(x: f64) -> f64 {
    let mut s = x;
    if x > 0.0 {
        s *= 3.0;
    }
    s + x * x
}

/// Four arms: sin x (x < −1), x cos x (x < 0), eˣ (x < 1), √x;
/// d/dx = cos x, cos x − x sin x, eˣ, 1/(2√x).
#[differentiable]
fn chain4(x: f64) -> f64 {
    if x < -1.0 {
        x.sin()
    } else if x < 0.0 {
        x * x.cos()
    } else if x < 1.0 {
        x.exp()
    } else {
        x.sqrt()
    }
}

/// A branch on a `bool` parameter: sin(xy) or y cos x;
/// ∇ = (y cos xy, x cos xy) or (−y sin x, cos x).
#[differentiable]
fn on_flag(x: f64, y: f64, flag: bool) -> f64 {
    if flag { (x * y).sin() } else { y * x.cos() }
}

/// `if let` on data: Some(c) → c x², d/dx = 2cx; None → x³, d/dx = 3x².
#[differentiable(wrt(x))]
fn if_let_some(x: f64, scale: Option<f64>) -> f64 {
    if let Some(c) = scale {
        c * x * x
    } else {
        x * x * x
    }
}

/// `if let` then `else if` on an active comparison: Some(n) → xⁿ, d/dx = n xⁿ⁻¹;
/// None, x > 0 → ln(1 + x), d/dx = 1/(1 + x); None, x ≤ 0 → x²/2, d/dx = x.
#[differentiable(wrt(x))]
fn if_let_chain(x: f64, n: Option<i32>) -> f64 {
    if let Some(n) = n {
        x.powi(n)
    } else if x > 0.0 {
        x.ln_1p()
    } else {
        x * x / 2.0
    }
}

/// `if let` with a tuple pattern: (Some(a), true) → ax + y, ∇ = (a, 1); else xy, ∇ = (y, x).
#[differentiable(wrt(x, y))]
fn if_let_tuple(x: f64, y: f64, a: Option<f64>, on: bool) -> f64 {
    if let (Some(a), true) = (a, on) {
        a * x + y
    } else {
        x * y
    }
}

/// Clamp with active bounds: the gradient goes to the value returned:
/// x < lo: (0, 1, 0); x > hi: (0, 0, 1); else (1, 0, 0).
#[differentiable]
fn clamp3(x: f64, lo: f64, hi: f64) -> f64 {
    if x < lo {
        lo
    } else if x > hi {
        hi
    } else {
        x
    }
}

/// An arm-local `let` shadowing an outer active name, t = xy:
/// t > 1: r = √t·x, r + t = x^{3/2} y^{1/2} + xy, ∇ = (1.5 √(xy) + y, ½ x √(x/y) + x);
/// else: u = t + x, r = u², ∇ = (2u(y + 1) + y, 2ux + x).
#[differentiable]
fn shadow_in_arm(x: f64, y: f64) -> f64 {
    let t = x * y;
    let r = if t > 1.0 {
        let t = t.sqrt();
        t * x
    } else {
        let u = t + x;
        u * u
    };
    r + t
}

/// An arm that reads both a parameter and a `let` copy of it, a = x:
/// x > 0: ax = x², d/dx = 2x; else x, d/dx = 1.
#[differentiable]
fn alias_in_branch(x: f64) -> f64 {
    let a = x;
    if x > 0.0 { a * x } else { x }
}

#[test]
fn branches() {
    check!(huber, huber_vjp; -2.0 => -1.0);
    check!(huber, huber_vjp; 0.3 => 0.3);
    check!(huber, huber_vjp; 3.0 => 1.0);
    check!(abs_branch, abs_branch_vjp; 2.5 => 1.0);
    check!(abs_branch, abs_branch_vjp; -2.5 => -1.0);
    check!(relu, relu_vjp; 1.5 => 1.0);
    check!(relu, relu_vjp; -1.5 => 0.0);

    check!(nested_if, nested_if_vjp; 1.5, 2.0 => (2.0, 1.5));
    check!(nested_if, nested_if_vjp; 1.5, -2.0 => (1.0, 4.0));
    let (x, y) = (-1.0_f64, 0.5_f64);
    check!(nested_if, nested_if_vjp; x, y => (y * x.cos(), x.sin()));
    let (x, y) = (-1.0_f64, -2.0_f64);
    let e = (x + y).exp();
    check!(nested_if, nested_if_vjp; x, y => (e, e));

    let (x, y) = (2.0, 0.5);
    check!(
        assign_two,
        assign_two_vjp;
        x, y => (2.0 * x * y * y + y * y, 2.0 * x * x * y + 2.0 * x * y)
    );
    let (x, y) = (0.5, 2.0);
    check!(assign_two, assign_two_vjp; x, y => (2.0 * x * y * y - 3.0 * x * x, 2.0 * x * x * y));

    let (x, y) = (2.0, 0.5);
    check!(
        assign_two_copies,
        assign_two_copies_vjp;
        x, y => (2.0 * x * y * y + y * y, 2.0 * x * x * y + 2.0 * x * y)
    );
    let (x, y) = (0.5, 2.0);
    check!(assign_two_copies, assign_two_copies_vjp; x, y => (y - 2.0 * x, x));

    check!(alias_in_branch, alias_in_branch_vjp; 1.5 => 3.0);
    check!(alias_in_branch, alias_in_branch_vjp; -1.5 => 1.0);

    check!(if_value, if_value_vjp; 2.0 => 2.0_f64.ln() + 1.0);
    check!(if_value, if_value_vjp; 0.5 => 0.0);
    check!(if_without_else, if_without_else_vjp; 1.5 => 6.0);
    check!(if_without_else, if_without_else_vjp; -1.5 => -2.0);

    for x in [-2.0_f64, -0.5, 0.5, 2.0] {
        let want = if x < -1.0 {
            x.cos()
        } else if x < 0.0 {
            x.cos() - x * x.sin()
        } else if x < 1.0 {
            x.exp()
        } else {
            0.5 / x.sqrt()
        };
        check!(chain4, chain4_vjp; x => want);
    }

    let (x, y) = (0.7_f64, 1.3_f64);
    let c = (x * y).cos();
    check!(|x, y| on_flag(x, y, true), |x, y| on_flag_vjp(x, y, true); x, y => (y * c, x * c));
    check!(
        |x, y| on_flag(x, y, false),
        |x, y| on_flag_vjp(x, y, false);
        x, y => (-y * x.sin(), x.cos())
    );

    check!(
        |x| if_let_some(x, Some(2.5)),
        |x| if_let_some_vjp(x, Some(2.5));
        1.2 => 2.0 * 2.5 * 1.2
    );
    check!(|x| if_let_some(x, None), |x| if_let_some_vjp(x, None); 1.2 => 3.0 * 1.2 * 1.2);
    check!(|x| if_let_chain(x, Some(3)), |x| if_let_chain_vjp(x, Some(3)); 1.5 => 3.0 * 1.5 * 1.5);
    check!(|x| if_let_chain(x, None), |x| if_let_chain_vjp(x, None); 1.5 => 1.0 / 2.5);
    check!(|x| if_let_chain(x, None), |x| if_let_chain_vjp(x, None); -1.5 => -1.5);
    check!(
        |x, y| if_let_tuple(x, y, Some(3.0), true),
        |x, y| if_let_tuple_vjp(x, y, Some(3.0), true);
        1.5, 2.0 => (3.0, 1.0)
    );
    check!(
        |x, y| if_let_tuple(x, y, Some(3.0), false),
        |x, y| if_let_tuple_vjp(x, y, Some(3.0), false);
        1.5, 2.0 => (2.0, 1.5)
    );
    check!(
        |x, y| if_let_tuple(x, y, None, true),
        |x, y| if_let_tuple_vjp(x, y, None, true);
        1.5, 2.0 => (2.0, 1.5)
    );

    check!(clamp3, clamp3_vjp; -1.0, 0.0, 1.0 => (0.0, 1.0, 0.0));
    check!(clamp3, clamp3_vjp; 2.0, 0.0, 1.0 => (0.0, 0.0, 1.0));
    check!(clamp3, clamp3_vjp; 0.4, 0.0, 1.0 => (1.0, 0.0, 0.0));

    let (x, y) = (2.0_f64, 3.0_f64);
    let want = (1.5 * (x * y).sqrt() + y, 0.5 * x * (x / y).sqrt() + x);
    check!(shadow_in_arm, shadow_in_arm_vjp; x, y => want);
    let (x, y) = (0.5_f64, 0.4_f64);
    let u = x * y + x;
    check!(shadow_in_arm, shadow_in_arm_vjp; x, y => (2.0 * u * (y + 1.0) + y, 2.0 * u * x + x));
}

// ---------------------------------------------------------------------------------------------
// match
// ---------------------------------------------------------------------------------------------

/// Or-patterns and a wildcard on `u32`: 0 → x, 1 → x², 2 | 3 → k sin x, _ → eˣ/k;
/// d/dx = 1, 2x, k cos x, eˣ/k.
#[differentiable]
fn match_int(x: f64, k: u32) -> f64 {
    match k {
        0 => x,
        1 => x * x,
        2 | 3 => x.sin() * k as f64,
        _ => x.exp() / k as f64,
    }
}

/// Guards on data: n < 0 → nx, 0 → x², even → xⁿ, odd → n√x;
/// d/dx = n, 2x, n xⁿ⁻¹, n/(2√x).
#[differentiable]
fn match_guard(x: f64, n: i32) -> f64 {
    match n {
        n if n < 0 => x * n as f64,
        0 => x * x,
        n if n % 2 == 0 => x.powi(n),
        n => x.sqrt() * n as f64,
    }
}

/// Guards that compare active values (the comparison itself is data):
/// k = 0, x > 0 → ln x, d = 1/x; k = 0 → −x, d = −1; x² > 4 → x³, d = 3x²; else x, d = 1.
#[differentiable]
fn match_guard_active(x: f64, k: u8) -> f64 {
    match k {
        0 if x > 0.0 => x.ln(),
        0 => -x,
        _ if x * x > 4.0 => x.powi(3),
        _ => x,
    }
}

/// `Option<f64>` data with bindings and a guard: Some(c), c > 0 → cx, d = c;
/// Some(c) → (x − c)², d = 2(x − c); None → tanh x, d = 1 − tanh² x.
#[differentiable(wrt(x))]
fn match_option(x: f64, o: Option<f64>) -> f64 {
    match o {
        Some(c) if c > 0.0 => x * c,
        Some(c) => (x - c).powi(2),
        None => x.tanh(),
    }
}

/// A data enum with payloads.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Line(f64),
    Quad { a: f64, b: f64 },
    Const,
}

/// Match on a data enum: Line(m) → mx, d = m; Quad{a, b} → ax² + bx, d = 2ax + b;
/// Const → 1, d = 0.
#[differentiable(wrt(x))]
fn match_enum(x: f64, s: Shape) -> f64 {
    match s {
        Shape::Line(m) => m * x,
        Shape::Quad { a, b } => a * x * x + b * x,
        Shape::Const => 1.0,
    }
}

/// Arms assigning an outer variable, one arm leaving it, result acc·x:
/// k = 0: x²y, ∇ = (2xy, x²); k = 1: x² + xy², ∇ = (2x + y², 2xy); else x², ∇ = (2x, 0).
#[differentiable]
fn match_assign(x: f64, y: f64, k: u8) -> f64 {
    let mut acc = x;
    match k {
        0 => acc = acc * y,
        1 => {
            acc += y * y;
        }
        _ => {}
    }
    acc * x
}

/// A tuple scrutinee and arm blocks with locals: (true, true) → sin(xy), ∇ = cos(xy)(y, x);
/// (true, false) → x/y, ∇ = (1/y, −x/y²); (false, _) → (x − y)³, ∇ = 3(x − y)²(1, −1).
#[differentiable]
fn match_tuple(x: f64, y: f64, a: bool, b: bool) -> f64 {
    match (a, b) {
        (true, true) => {
            let p = x * y;
            p.sin()
        }
        (true, false) => x / y,
        (false, _) => {
            let q = x - y;
            q * q * q
        }
    }
}

/// Range patterns: 0..=2 → nx, d = n; 3..=9 → xⁿ, d = n xⁿ⁻¹; else n ln x, d = n/x.
#[differentiable]
fn match_range(x: f64, n: u32) -> f64 {
    match n {
        0..=2 => x * n as f64,
        3..=9 => x.powi(n as i32),
        _ => x.ln() * n as f64,
    }
}

#[test]
fn matches() {
    let x = 0.8_f64;
    check!(|x| match_int(x, 0), |x| match_int_vjp(x, 0); x => 1.0);
    check!(|x| match_int(x, 1), |x| match_int_vjp(x, 1); x => 2.0 * x);
    check!(|x| match_int(x, 3), |x| match_int_vjp(x, 3); x => 3.0 * x.cos());
    check!(|x| match_int(x, 7), |x| match_int_vjp(x, 7); x => x.exp() / 7.0);

    let x = 1.3_f64;
    check!(|x| match_guard(x, -2), |x| match_guard_vjp(x, -2); x => -2.0);
    check!(|x| match_guard(x, 0), |x| match_guard_vjp(x, 0); x => 2.0 * x);
    check!(|x| match_guard(x, 4), |x| match_guard_vjp(x, 4); x => 4.0 * x.powi(3));
    check!(|x| match_guard(x, 5), |x| match_guard_vjp(x, 5); x => 2.5 / x.sqrt());

    check!(|x| match_guard_active(x, 0), |x| match_guard_active_vjp(x, 0); 2.0 => 0.5);
    check!(|x| match_guard_active(x, 0), |x| match_guard_active_vjp(x, 0); -2.0 => -1.0);
    check!(|x| match_guard_active(x, 1), |x| match_guard_active_vjp(x, 1); -3.0 => 27.0);
    check!(|x| match_guard_active(x, 1), |x| match_guard_active_vjp(x, 1); 1.0 => 1.0);

    let x = 0.6_f64;
    check!(|x| match_option(x, Some(2.0)), |x| match_option_vjp(x, Some(2.0)); x => 2.0);
    check!(
        |x| match_option(x, Some(-2.0)),
        |x| match_option_vjp(x, Some(-2.0));
        x => 2.0 * (x + 2.0)
    );
    check!(|x| match_option(x, None), |x| match_option_vjp(x, None); x => 1.0 - x.tanh().powi(2));

    let x = 1.7;
    let quad = Shape::Quad { a: 2.0, b: -1.0 };
    check!(|x| match_enum(x, Shape::Line(3.0)), |x| match_enum_vjp(x, Shape::Line(3.0)); x => 3.0);
    check!(|x| match_enum(x, quad), |x| match_enum_vjp(x, quad); x => 4.0 * x - 1.0);
    check!(|x| match_enum(x, Shape::Const), |x| match_enum_vjp(x, Shape::Const); x => 0.0);

    let (x, y) = (1.5, -0.5);
    check!(
        |x, y| match_assign(x, y, 0),
        |x, y| match_assign_vjp(x, y, 0);
        x, y => (2.0 * x * y, x * x)
    );
    check!(
        |x, y| match_assign(x, y, 1),
        |x, y| match_assign_vjp(x, y, 1);
        x, y => (2.0 * x + y * y, 2.0 * x * y)
    );
    check!(|x, y| match_assign(x, y, 9), |x, y| match_assign_vjp(x, y, 9); x, y => (2.0 * x, 0.0));

    let (x, y) = (0.9_f64, 1.4_f64);
    let c = (x * y).cos();
    check!(
        |x, y| match_tuple(x, y, true, true),
        |x, y| match_tuple_vjp(x, y, true, true);
        x, y => (c * y, c * x)
    );
    check!(
        |x, y| match_tuple(x, y, true, false),
        |x, y| match_tuple_vjp(x, y, true, false);
        x, y => (1.0 / y, -x / (y * y))
    );
    let q2 = 3.0 * (x - y) * (x - y);
    check!(
        |x, y| match_tuple(x, y, false, true),
        |x, y| match_tuple_vjp(x, y, false, true);
        x, y => (q2, -q2)
    );

    let x = 1.1_f64;
    check!(|x| match_range(x, 2), |x| match_range_vjp(x, 2); x => 2.0);
    check!(|x| match_range(x, 5), |x| match_range_vjp(x, 5); x => 5.0 * x.powi(4));
    check!(|x| match_range(x, 12), |x| match_range_vjp(x, 12); x => 12.0 / x);
}

// ---------------------------------------------------------------------------------------------
// for loops over ranges and data iterators; carried variables
// ---------------------------------------------------------------------------------------------

/// Horner with active coefficients: p = Σ cᵢ x³⁻ⁱ;
/// ∂c = (x³, x², x, 1), ∂x = 3c₀x² + 2c₁x + c₂.
#[differentiable]
fn horner(c: [f64; 4], x: f64) -> f64 {
    let mut acc = 0.0;
    for i in 0..4 {
        acc = acc * x + c[i];
    }
    acc
}

/// Σ_{k=1..n} xᵏ/k with the power carried: d/dx = Σ_{k=1..n} xᵏ⁻¹ = (1 − xⁿ)/(1 − x).
#[differentiable]
fn log_series(x: f64, n: usize) -> f64 {
    let mut term = 1.0;
    let mut s = 0.0;
    for k in 1..=n {
        term = term * x;
        s += term / k as f64;
    }
    s
}

/// Truncated exponential series Σ_{k=0..15} xᵏ/k!: d/dx = Σ_{k=0..14} xᵏ/k!.
#[differentiable]
fn exp_series(x: f64) -> f64 {
    let mut term = 1.0;
    let mut s = 1.0;
    for k in 1..16 {
        term = term * x / k as f64;
        s += term;
    }
    s
}

/// s ← as + 1 from s₀ = y, n times: s = aⁿy + Σ_{k<n} aᵏ;
/// ∂a = n aⁿ⁻¹ y + Σ_{k<n} k aᵏ⁻¹, ∂y = aⁿ.
#[differentiable]
fn affine_rec(a: f64, y: f64, n: usize) -> f64 {
    let mut s = y;
    for _ in 0..n {
        s = a * s + 1.0;
    }
    s
}

/// Two carried variables rotated n times by a data angle θ: the norm is preserved,
/// a² + b² = x² + y², ∇ = (2x, 2y).
#[differentiable(wrt(x, y))]
fn rotate_norm(x: f64, y: f64, theta: f64, n: usize) -> f64 {
    let (c, s) = (theta.cos(), theta.sin());
    let mut a = x;
    let mut b = y;
    for _ in 0..n {
        let t = c * a - s * b;
        b = s * a + c * b;
        a = t;
    }
    a * a + b * b
}

/// (1, 0) rotated n times by an active θ: (cos nθ, sin nθ); result cos nθ + 2 sin nθ,
/// d/dθ = −n sin nθ + 2n cos nθ.
#[differentiable]
fn rotate_angle(theta: f64, n: usize) -> f64 {
    let (c, s) = (theta.cos(), theta.sin());
    let mut a = 1.0;
    let mut b = 0.0;
    for _ in 0..n {
        let t = c * a - s * b;
        b = s * a + c * b;
        a = t;
    }
    a + 2.0 * b
}

/// (a, b) ← (b, a + b) from (x, y), n times: b = F(n) x + F(n + 1) y, ∇ = (F(n), F(n + 1)).
#[differentiable]
fn fibonacci(x: f64, y: f64, n: usize) -> f64 {
    let mut a = x;
    let mut b = y;
    for _ in 0..n {
        let t = a + b;
        a = b;
        b = t;
    }
    b
}

/// Nested loops with a carried product: x^{1 + nm}, d/dx = (1 + nm) x^{nm}.
#[differentiable]
fn nested_pow(x: f64, n: usize, m: usize) -> f64 {
    let mut acc = x;
    for _ in 0..n {
        for _ in 0..m {
            acc = acc * x;
        }
    }
    acc
}

/// Triangular nested loops (the inner bound is the outer index): Σ_{i<n} Σ_{j<i} (x + j)²,
/// d/dx = Σ_{i<n} (2ix + i(i − 1)) = x n(n − 1) + n(n − 1)(n − 2)/3.
#[differentiable]
fn triangle(x: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        for j in 0..i {
            let t = x + j as f64;
            s += t * t;
        }
    }
    s
}

/// Loop bound from an active value: n = ⌊x⌋, Σ_{k<n} kx = x n(n − 1)/2, d/dx = n(n − 1)/2.
#[differentiable]
fn bound_from_x(x: f64) -> f64 {
    let n = x as usize;
    let mut s = 0.0;
    for k in 0..n {
        s += x * k as f64;
    }
    s
}

/// Bound from two actives: n = ⌊xy⌋, xⁿy; ∇ = (n xⁿ⁻¹ y, xⁿ).
#[differentiable]
fn bound_from_product(x: f64, y: f64) -> f64 {
    let mut acc = y;
    for _ in 0..(x * y) as usize {
        acc = acc * x;
    }
    acc
}

/// `enumerate` over a data slice: Σ wᵢ xⁱ, d/dx = Σ i wᵢ xⁱ⁻¹.
#[differentiable(wrt(x))]
fn weighted_powers(x: f64, ws: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, w) in ws.iter().enumerate() {
        // `w: &f64`: a reference operand of an operator, read as its value.
        s += w * x.powi(i as i32);
    }
    s
}

/// A `&f64` parameter as an operand inside a loop: Σ_{k<n} w xᵏ, ∇ = (Σ k w xᵏ⁻¹, Σ xᵏ).
#[differentiable]
fn ref_weight_powers(x: f64, w: &f64, n: usize) -> f64 {
    let mut s = 0.0;
    for k in 0..n {
        s += w * x.powi(k as i32);
    }
    s
}

/// `zip` of two data slices: Σ tanh(wᵢx + bᵢ), d/dx = Σ wᵢ(1 − tanh²(wᵢx + bᵢ)).
#[differentiable(wrt(x))]
fn tanh_layer(x: f64, ws: &[f64], bs: &[f64]) -> f64 {
    let mut s = 0.0;
    for (w, b) in ws.iter().zip(bs) {
        s += (*w * x + *b).tanh();
    }
    s
}

/// `for &w in ws` over a data `Vec`: Π (x + wᵢ), d/dx = Σᵢ Π_{j≠i} (x + wⱼ).
#[differentiable(wrt(x))]
fn product_roots(x: f64, ws: &Vec<f64>) -> f64 {
    let mut p = 1.0;
    for &w in ws {
        p = p * (x + w);
    }
    p
}

/// `step_by`: x⁰ + x³ + x⁶ + x⁹, d/dx = 3x² + 6x⁵ + 9x⁸.
#[differentiable]
fn step_powers(x: f64) -> f64 {
    let mut s = 0.0;
    for k in (0..10).step_by(3) {
        s += x.powi(k);
    }
    s
}

/// Reversed range, Horner with data coefficients k: Σ_{k<n} k xᵏ, d/dx = Σ k² xᵏ⁻¹.
#[differentiable]
fn rev_horner(x: f64, n: usize) -> f64 {
    let mut acc = 0.0;
    for k in (0..n).rev() {
        acc = acc * x + k as f64;
    }
    acc
}

/// A carried variable that starts as data and becomes active in a branch of the loop:
/// acc = 1, then x at k = 2, then ·x for k > 2: x^{n−2} for n ≥ 3, d/dx = (n − 2) x^{n−3}.
#[differentiable]
fn data_then_active(x: f64, n: usize) -> f64 {
    let mut acc = 1.0;
    for k in 0..n {
        if k == 2 {
            acc = x;
        } else if k > 2 {
            acc = acc * x;
        }
    }
    acc
}

fn fib(n: usize) -> f64 {
    let (mut a, mut b) = (0.0, 1.0);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

#[test]
fn for_loops() {
    let (c, x) = ([1.5, -2.0, 0.5, 3.0], 1.2_f64);
    let dx = 3.0 * c[0] * x * x + 2.0 * c[1] * x + c[2];
    check!(horner, horner_vjp; c, x => ([x * x * x, x * x, x, 1.0], dx));

    let x = 0.7_f64;
    check!(|x| log_series(x, 6), |x| log_series_vjp(x, 6); x => (1.0 - x.powi(6)) / (1.0 - x));
    check!(|x| log_series(x, 0), |x| log_series_vjp(x, 0); x => 0.0);

    let x = 1.3_f64;
    let mut want = 0.0;
    let mut term = 1.0;
    for k in 0..15 {
        want += term;
        term *= x / (k + 1) as f64;
    }
    check!(exp_series, exp_series_vjp; x => want);

    let (a, y, n) = (0.9_f64, 2.0_f64, 7);
    let da = n as f64 * a.powi(n - 1) * y + (1..n).map(|k| k as f64 * a.powi(k - 1)).sum::<f64>();
    check!(|a, y| affine_rec(a, y, 7), |a, y| affine_rec_vjp(a, y, 7); a, y => (da, a.powi(n)));

    let (x, y) = (0.8, -1.1);
    check!(
        |x, y| rotate_norm(x, y, 0.3, 10),
        |x, y| rotate_norm_vjp(x, y, 0.3, 10);
        x, y => (2.0 * x, 2.0 * y)
    );
    let t = 0.4_f64;
    let want = -5.0 * (5.0 * t).sin() + 10.0 * (5.0 * t).cos();
    check!(|t| rotate_angle(t, 5), |t| rotate_angle_vjp(t, 5); t => want);
    check!(
        |x, y| fibonacci(x, y, 10),
        |x, y| fibonacci_vjp(x, y, 10);
        0.3, 0.7 => (fib(10), fib(11))
    );
    check!(|x, y| fibonacci(x, y, 0), |x, y| fibonacci_vjp(x, y, 0); 0.3, 0.7 => (0.0, 1.0));

    let x = 1.05_f64;
    check!(|x| nested_pow(x, 3, 4), |x| nested_pow_vjp(x, 3, 4); x => 13.0 * x.powi(12));
    check!(|x| nested_pow(x, 3, 0), |x| nested_pow_vjp(x, 3, 0); x => 1.0);
    let n = 6.0;
    check!(
        |x| triangle(x, 6),
        |x| triangle_vjp(x, 6);
        x => x * n * (n - 1.0) + n * (n - 1.0) * (n - 2.0) / 3.0
    );

    check!(bound_from_x, bound_from_x_vjp; 4.5 => 6.0);
    check!(bound_from_x, bound_from_x_vjp; 0.5 => 0.0);
    let (x, y) = (1.5_f64, 2.5_f64); // n = 3
    check!(bound_from_product, bound_from_product_vjp; x, y => (3.0 * x * x * y, x.powi(3)));

    let ws = [0.5, -1.0, 2.0, 0.25];
    let x = 0.9_f64;
    let want = -1.0 + 2.0 * 2.0 * x + 3.0 * 0.25 * x * x;
    check!(|x| weighted_powers(x, &ws), |x| weighted_powers_vjp(x, &ws); x => want);
    let w = 1.5_f64;
    let (value, (dx, dw)) = value_with_gradient(ref_weight_powers_vjp(x, &w, 4));
    assert_close(
        "ref_weight_powers value",
        value,
        ref_weight_powers(x, &w, 4),
    );
    let want = (
        w * (1.0 + 2.0 * x + 3.0 * x * x),
        1.0 + x + x * x + x * x * x,
    );
    assert_close("ref_weight_powers", (dx, dw), want);
    check_gradient(
        "ref_weight_powers",
        |(x, w)| ref_weight_powers(x, &w, 4),
        (x, w),
        (dx, dw),
    );
    let bs = [0.1, 0.2, -0.3, 0.0];
    let want: f64 = ws
        .iter()
        .zip(&bs)
        .map(|(w, b)| w * (1.0 - (w * x + b).tanh().powi(2)))
        .sum();
    check!(|x| tanh_layer(x, &ws, &bs), |x| tanh_layer_vjp(x, &ws, &bs); x => want);
    let roots = vec![1.0, -2.0, 0.5];
    let (p, q, r) = (x + 1.0, x - 2.0, x + 0.5);
    check!(
        |x| product_roots(x, &roots),
        |x| product_roots_vjp(x, &roots);
        x => q * r + p * r + p * q
    );

    let x = 0.95_f64;
    check!(step_powers, step_powers_vjp; x => 3.0 * x * x + 6.0 * x.powi(5) + 9.0 * x.powi(8));
    let want: f64 = (1..6).map(|k| (k * k) as f64 * x.powi(k - 1)).sum();
    check!(|x| rev_horner(x, 6), |x| rev_horner_vjp(x, 6); x => want);

    check!(
        |x| data_then_active(x, 6),
        |x| data_then_active_vjp(x, 6);
        1.3 => 4.0 * 1.3_f64.powi(3)
    );
    check!(|x| data_then_active(x, 2), |x| data_then_active_vjp(x, 2); 1.3 => 0.0);
}

// ---------------------------------------------------------------------------------------------
// while
// ---------------------------------------------------------------------------------------------

/// A counted `while`: acc ← acc·x + 1 from 0, n times: Σ_{k<n} xᵏ, d/dx = Σ k xᵏ⁻¹.
#[differentiable]
fn while_count(x: f64, n: usize) -> f64 {
    let mut acc = 0.0;
    let mut i = 0;
    while i < n {
        acc = acc * x + 1.0;
        i += 1;
    }
    acc
}

/// An active condition: y doubles until y ≥ 10; y = x·2ᴷ with K fixed near x, d/dx = 2ᴷ.
#[differentiable]
fn while_double(x: f64) -> f64 {
    let mut y = x;
    while y < 10.0 {
        y = y * 2.0;
    }
    y
}

/// Square roots while y > 2, summed: s = Σ_{k=1..K} x^{2⁻ᵏ}, d/dx = Σ 2⁻ᵏ x^{2⁻ᵏ − 1}
/// (x = 100: √100 = 10, 100^{1/4} ≈ 3.16, 100^{1/8} ≈ 1.78, so K = 3).
#[differentiable]
fn while_sqrt(x: f64) -> f64 {
    let mut y = x;
    let mut s = 0.0;
    while y > 2.0 {
        y = y.sqrt();
        s += y;
    }
    s
}

/// Newton's method for √a with an active stopping test, then two polishing steps: the
/// iterate's derivative converges with it, dy/da = 1/(2√a).
#[differentiable]
fn newton_sqrt(a: f64) -> f64 {
    let mut y = a;
    let mut k = 0;
    while k < 100 && (y * y - a).abs() > 1e-12 * a {
        y = 0.5 * (y + a / y);
        k += 1;
    }
    for _ in 0..2 {
        y = 0.5 * (y + a / y);
    }
    y
}

/// A condition mixing data and active values: y ← y² + 1 while k < max and y < 100;
/// dy/dx = Π 2yₖ over the steps taken.
#[differentiable]
fn while_mixed(x: f64, max: usize) -> f64 {
    let mut y = x;
    let mut k = 0;
    while k < max && y < 100.0 {
        y = y * y + 1.0;
        k += 1;
    }
    y
}

#[test]
fn while_loops() {
    let x = 1.2_f64;
    let want: f64 = (1..5).map(|k| k as f64 * x.powi(k - 1)).sum();
    check!(|x| while_count(x, 5), |x| while_count_vjp(x, 5); x => want);
    check!(while_double, while_double_vjp; 0.7 => 16.0); // 0.7·16 = 11.2
    check!(while_double, while_double_vjp; 12.0 => 1.0);
    let x = 100.0_f64;
    let want: f64 = (1..=3)
        .map(|k| 0.5_f64.powi(k) * x.powf(0.5_f64.powi(k) - 1.0))
        .sum();
    check!(while_sqrt, while_sqrt_vjp; x => want);
    for a in [0.3_f64, 2.0, 50.0] {
        check!(newton_sqrt, newton_sqrt_vjp; a => 0.5 / a.sqrt());
    }
    // y: 1.5 → 3.25 → 11.5625 → 134.69…: stops at y ≥ 100 after 3 steps, or after max = 2.
    let x = 1.5_f64;
    let (y1, y2) = (x * x + 1.0, (x * x + 1.0).powi(2) + 1.0);
    check!(|x| while_mixed(x, 10), |x| while_mixed_vjp(x, 10); x => 8.0 * x * y1 * y2);
    check!(|x| while_mixed(x, 2), |x| while_mixed_vjp(x, 2); x => 4.0 * x * y1);
}

// ---------------------------------------------------------------------------------------------
// Arrays and Vec: element reads and writes, push, literals
// ---------------------------------------------------------------------------------------------

/// Σ xᵢyᵢ: ∇ = (y, x).
#[differentiable]
fn dot4(x: [f64; 4], y: [f64; 4]) -> f64 {
    let mut s = 0.0;
    for i in 0..4 {
        s += x[i] * y[i];
    }
    s
}

/// log Σ eˣⁱ with the running maximum found by a branch in the loop: ∇ = softmax(x).
#[differentiable]
fn logsumexp(x: [f64; 5]) -> f64 {
    let mut m = x[0];
    for i in 1..5 {
        if x[i] > m {
            m = x[i];
        }
    }
    let mut s = 0.0;
    for i in 0..5 {
        s += (x[i] - m).exp();
    }
    m + s.ln()
}

/// A local data array made active by element writes: vᵢ = xⁱ⁺¹, v₀ + v₃ = x + x⁴,
/// d/dx = 1 + 4x³.
#[differentiable]
fn fill_powers(x: f64) -> f64 {
    let mut v = [0.0; 4];
    for i in 0..4 {
        v[i] = x.powi(i as i32 + 1);
    }
    v[0] + v[3]
}

/// `v[i] = v[i] * s` in place: Σ (i + 1) s xᵢ; ∂x = s(1, 2, 3), ∂s = Σ (i + 1) xᵢ.
#[differentiable]
fn scale_inplace(x: [f64; 3], s: f64) -> f64 {
    let mut v = x;
    for i in 0..3 {
        v[i] = v[i] * s;
    }
    v[0] + 2.0 * v[1] + 3.0 * v[2]
}

/// Prefix sums in place (`v[i] += v[i − 1]`), then Σ cᵢ²: ∂xⱼ = 2 Σ_{i≥j} cᵢ.
#[differentiable]
fn prefix_sq(x: [f64; 5]) -> f64 {
    let mut v = x;
    for i in 1..5 {
        v[i] += v[i - 1];
    }
    let mut s = 0.0;
    for i in 0..5 {
        s += v[i] * v[i];
    }
    s
}

/// Σ (xᵢ₊₁ − xᵢ)²: ∂xⱼ = 2(xⱼ − xⱼ₋₁) − 2(xⱼ₊₁ − xⱼ), without the terms past the ends.
#[differentiable]
fn dirichlet(x: [f64; 6]) -> f64 {
    let mut s = 0.0;
    for i in 0..5 {
        let d = x[i + 1] - x[i];
        s += d * d;
    }
    s
}

/// y = Ax into a local array by `+=` in nested loops, then |y|²:
/// ∂A = 2 y xᵀ, ∂x = 2 Aᵀ y.
#[differentiable]
fn matvec_norm(a: [[f64; 3]; 2], x: [f64; 3]) -> f64 {
    let mut y = [0.0; 2];
    for i in 0..2 {
        for j in 0..3 {
            y[i] += a[i][j] * x[j];
        }
    }
    y[0] * y[0] + y[1] * y[1]
}

/// Bubble sort by swapping active elements (a branch in nested loops), then Σ (i + 1) sortedᵢ:
/// ∂xⱼ = 1 + rank(xⱼ).
#[differentiable]
#[allow(clippy::manual_swap)] // element reads and writes are what is tested
fn sort_weighted(x: [f64; 4]) -> f64 {
    let mut v = x;
    for i in 0..4 {
        for j in 0..3 - i {
            if v[j] > v[j + 1] {
                let t = v[j];
                v[j] = v[j + 1];
                v[j + 1] = t;
            }
        }
    }
    let mut s = 0.0;
    for i in 0..4 {
        s += (i + 1) as f64 * v[i];
    }
    s
}

/// An array result: (mean, mean of squares); the pullback of w is w₀/3 + 2w₁xᵢ/3.
#[differentiable]
fn moments(x: [f64; 3]) -> [f64; 2] {
    let mut m = [0.0; 2];
    for i in 0..3 {
        m[0] += x[i] / 3.0;
        m[1] += x[i] * x[i] / 3.0;
    }
    m
}

/// A `Vec` parameter: Σ vᵢ² + v₀vₙ₋₁, ∂v = 2v + vₙ₋₁e₀ + v₀eₙ₋₁. `len()` of the active `Vec`
/// is data, so it can compute the index n − 1.
#[differentiable]
fn vec_energy(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * v[i];
    }
    let n = v.len();
    s + v[0] * v[n - 1]
}

/// `len()` inside the index expression: v₀vₙ₋₁, ∂v = vₙ₋₁e₀ + v₀eₙ₋₁.
#[differentiable]
fn vec_ends(v: Vec<f64>) -> f64 {
    v[0] * v[v.len() - 1]
}

/// A slice parameter: Σ vᵢ xⁱ; ∂v = (xⁱ), ∂x = Σ i vᵢ xⁱ⁻¹.
#[differentiable]
fn slice_poly(v: &[f64], x: f64) -> f64 {
    let mut s = 0.0;
    let mut p = 1.0;
    for i in 0..v.len() {
        s += v[i] * p;
        p = p * x;
    }
    s
}

/// `push` in a loop, then reads: v = (x, x², …, xⁿ), Σᵢ vᵢ vₙ₋₁₋ᵢ = n xⁿ⁺¹,
/// d/dx = n(n + 1) xⁿ.
#[differentiable]
fn push_convolve(x: f64, n: usize) -> f64 {
    let mut v = Vec::new();
    let mut p = x;
    for _ in 0..n {
        v.push(p);
        p = p * x;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += v[i] * v[n - 1 - i];
    }
    s
}

/// `vec!` of actives, weighted by a loop: x + 2y + 3xy, ∇ = (1 + 3y, 2 + 3x).
#[differentiable]
#[allow(clippy::useless_vec)] // `vec!` of actives is what is tested
fn vec_literal(x: f64, y: f64) -> f64 {
    let v = vec![x, y, x * y];
    let mut s = 0.0;
    for i in 0..v.len() {
        s += (i + 1) as f64 * v[i];
    }
    s
}

/// Array literal, element compound assignment and reads: a = (x, y, (x + y)x),
/// a₀ + 2a₁ + 3a₂ = x + 2y + 3x² + 3xy, ∇ = (1 + 6x + 3y, 2 + 3x).
#[differentiable]
fn array_literal(x: f64, y: f64) -> f64 {
    let mut a = [x, y, x + y];
    a[2] *= a[0];
    a[0] + 2.0 * a[1] + 3.0 * a[2]
}

/// `push` onto a `vec!` then element writes reading other elements:
/// v = (x, y, xy); v₀ = xy − y; v₁ = y + v₀ = xy; v₀v₁ = x²y² − xy²,
/// ∇ = (2xy² − y², 2x²y − 2xy).
#[differentiable]
fn push_then_write(x: f64, y: f64) -> f64 {
    let mut v = vec![x, y];
    v.push(x * y);
    v[0] = v[2] - v[1];
    v[1] += v[0];
    v[0] * v[1]
}

/// A `Vec` result built by `push`: running sums of the input; the pullback of w is the
/// suffix sums of w (a shorter w is zero-padded).
#[differentiable]
fn cumsum(v: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i];
        out.push(s);
    }
    out
}

#[test]
fn arrays_and_vecs() {
    let (x, y) = ([1.0, -2.0, 0.5, 3.0], [0.25, 1.5, -1.0, 2.0]);
    check!(dot4, dot4_vjp; x, y => (y, x));

    let x = [0.3, -1.2, 2.0, 0.7, 2.0];
    let z: f64 = x.iter().map(|v: &f64| v.exp()).sum();
    check!(logsumexp, logsumexp_vjp; x => x.map(|v| v.exp() / z));

    check!(fill_powers, fill_powers_vjp; 1.1 => 1.0 + 4.0 * 1.1_f64.powi(3));

    let (x, s) = ([1.0, -0.5, 2.0], 1.5);
    check!(scale_inplace, scale_inplace_vjp; x, s => ([s, 2.0 * s, 3.0 * s], 1.0 - 1.0 + 6.0));

    let x = [1.0, -2.0, 0.5, 3.0, -1.5];
    let mut c = x;
    for i in 1..5 {
        c[i] += c[i - 1];
    }
    let want: [f64; 5] = std::array::from_fn(|j| 2.0 * c[j..].iter().sum::<f64>());
    check!(prefix_sq, prefix_sq_vjp; x => want);

    let x = [0.0, 1.0, 0.5, -1.0, 2.0, 2.5];
    let want: [f64; 6] = std::array::from_fn(|j| {
        let left = if j > 0 { 2.0 * (x[j] - x[j - 1]) } else { 0.0 };
        let right = if j < 5 { -2.0 * (x[j + 1] - x[j]) } else { 0.0 };
        left + right
    });
    check!(dirichlet, dirichlet_vjp; x => want);

    let a = [[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]];
    let x = [0.3, -0.7, 1.1];
    let y: [f64; 2] = std::array::from_fn(|i| (0..3).map(|j| a[i][j] * x[j]).sum());
    let da: [[f64; 3]; 2] = std::array::from_fn(|i| std::array::from_fn(|j| 2.0 * y[i] * x[j]));
    let dx: [f64; 3] = std::array::from_fn(|j| 2.0 * (a[0][j] * y[0] + a[1][j] * y[1]));
    check!(matvec_norm, matvec_norm_vjp; a, x => (da, dx));

    // ranks: 0.5 → 1, −1 → 0, 3 → 3, 2 → 2.
    check!(sort_weighted, sort_weighted_vjp; [0.5, -1.0, 3.0, 2.0] => [2.0, 1.0, 4.0, 3.0]);
    check!(sort_weighted, sort_weighted_vjp; [4.0, 3.0, 2.0, 1.0] => [4.0, 3.0, 2.0, 1.0]);

    let x = [1.0, -2.0, 0.5];
    let w = [1.0, 2.0];
    let (m, pullback) = moments_vjp(x);
    let got = pullback(w);
    assert_close("moments value", m, moments(x));
    assert_close(
        "moments",
        got,
        x.map(|xi| w[0] / 3.0 + 2.0 * w[1] * xi / 3.0),
    );
    check_vjp("moments", moments, x, w, got);

    let v = [1.0, -2.0, 0.5, 3.0];
    let got = gradient(vec_energy_vjp(v.to_vec()));
    check_vec("vec_energy", vec_energy, v, &got, [5.0, -4.0, 1.0, 7.0]);
    let got = gradient(vec_ends_vjp(v.to_vec()));
    check_vec("vec_ends", vec_ends, v, &got, [3.0, 0.0, 0.0, 1.0]);

    let (v, x) = ([1.0, -2.0, 0.5, 3.0], 0.8_f64);
    let (dv, dx) = gradient(slice_poly_vjp(&v, x));
    let want = 0.0 * v[0] + v[1] + 2.0 * v[2] * x + 3.0 * v[3] * x * x;
    check_vec(
        "slice_poly/v",
        |v| slice_poly(&v, x),
        v,
        &dv,
        [1.0, x, x * x, x * x * x],
    );
    let only_x = |x| {
        let (value, pullback) = slice_poly_vjp(&v, x);
        (value, move |seed: f64| pullback(seed).1)
    };
    check!(|x| slice_poly(&v, x), only_x; x => want);
    assert_close("slice_poly/x", dx, want);

    let x = 1.1_f64;
    check!(|x| push_convolve(x, 5), |x| push_convolve_vjp(x, 5); x => 30.0 * x.powi(5));
    let (x, y) = (0.6, -1.3);
    check!(vec_literal, vec_literal_vjp; x, y => (1.0 + 3.0 * y, 2.0 + 3.0 * x));
    check!(array_literal, array_literal_vjp; x, y => (1.0 + 6.0 * x + 3.0 * y, 2.0 + 3.0 * x));
    check!(
        push_then_write,
        push_then_write_vjp;
        x, y => (2.0 * x * y * y - y * y, 2.0 * x * x * y - 2.0 * x * y)
    );

    let v = [1.0, 2.0, -0.5, 4.0];
    let (out, pullback) = cumsum_vjp(&v);
    assert_eq!(out, vec![1.0, 3.0, 2.5, 6.5]);
    let got = pullback(vec![1.0, 0.0, 2.0, -1.0]);
    assert_close("cumsum", padded::<4>(&got), [2.0, 1.0, 1.0, -1.0]);
    // A shorter seed is zero-padded: (1, 1) seeds only the first two sums.
    let (_, pullback) = cumsum_vjp(&v);
    assert_close(
        "cumsum/short seed",
        padded::<4>(&pullback(vec![1.0, 1.0])),
        [2.0, 1.0, 0.0, 0.0],
    );
    // The zero tangent (the empty vector) pulls back to zero.
    let (_, pullback) = cumsum_vjp(&v);
    assert_close(
        "cumsum/zero seed",
        padded::<4>(&pullback(Vec::new())),
        [0.0; 4],
    );
}

// ---------------------------------------------------------------------------------------------
// Branches inside loops, loops inside branches
// ---------------------------------------------------------------------------------------------

/// Leaky ReLU summed over an array: ∂xᵢ = 1 (xᵢ > 0) or 0.01.
#[differentiable]
fn leaky_sum(x: [f64; 5]) -> f64 {
    let mut s = 0.0;
    for i in 0..5 {
        if x[i] > 0.0 {
            s += x[i];
        } else {
            s += 0.01 * x[i];
        }
    }
    s
}

/// A data branch in the loop: acc ← acc·x (k even) or acc + x (k odd), from 1, n = 5 times:
/// x, 2x, 2x², 2x² + x, 2x³ + x²; d/dx = 6x² + 2x.
#[differentiable]
fn parity_loop(x: f64, n: usize) -> f64 {
    let mut acc = 1.0;
    for k in 0..n {
        if k % 2 == 0 {
            acc = acc * x;
        } else {
            acc = acc + x;
        }
    }
    acc
}

/// An active branch in the loop (a tent-like map): y ← y/2 (y > 1) or 3y, 8 times;
/// y = x·Π fₖ with each factor fₖ ∈ {½, 3} fixed near x, so d/dx = Π fₖ = y/x.
#[differentiable]
fn tent_iter(x: f64) -> f64 {
    let mut y = x;
    for _ in 0..8 {
        if y > 1.0 {
            y = y / 2.0;
        } else {
            y = 3.0 * y;
        }
    }
    y
}

/// `match` in the loop on k mod 3: s += x, s += x², s −= sin x;
/// d/dx = c₀ + 2x c₁ − c₂ cos x with cᵣ = #{k < n : k mod 3 = r}.
#[differentiable]
fn match_in_loop(x: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for k in 0..n {
        match k % 3 {
            0 => s += x,
            1 => s += x * x,
            _ => s -= x.sin(),
        }
    }
    s
}

/// Loops inside the arms: flag → Π_{k<n} (x + k), d/dx = Σᵢ Π_{j≠i} (x + j);
/// else a `while` summing x/(k + 1), d/dx = Hₙ = Σ_{k=1..n} 1/k.
#[differentiable]
fn loop_in_branch(x: f64, n: usize, flag: bool) -> f64 {
    if flag {
        let mut p = 1.0;
        for k in 0..n {
            p = p * (x + k as f64);
        }
        p
    } else {
        let mut s = 0.0;
        let mut k = 0;
        while k < n {
            s += x / (k + 1) as f64;
            k += 1;
        }
        s
    }
}

/// Arg-max kept in two carried variables (one active, one data): (i* + 1)·max x,
/// ∂x = (i* + 1) e_{i*}.
#[differentiable]
fn argmax_scaled(x: [f64; 5]) -> f64 {
    let mut best = x[0];
    let mut idx = 0;
    for i in 1..5 {
        if x[i] > best {
            best = x[i];
            idx = i;
        }
    }
    best * (idx + 1) as f64
}

/// An active branch inside a `while` with an active condition: y ← y² + 1 (y < 2) or 1.5y
/// until y ≥ 20; d/dx = Π (2yₖ or 1.5) over the steps taken.
#[differentiable]
fn while_branch(x: f64) -> f64 {
    let mut y = x;
    while y < 20.0 {
        if y < 2.0 {
            y = y * y + 1.0;
        } else {
            y = 1.5 * y;
        }
    }
    y
}

#[test]
fn branches_and_loops_mixed() {
    check!(leaky_sum, leaky_sum_vjp; [1.0, -2.0, 0.5, -0.1, 3.0] => [1.0, 0.01, 1.0, 0.01, 1.0]);
    let x = 1.3_f64;
    check!(|x| parity_loop(x, 5), |x| parity_loop_vjp(x, 5); x => 6.0 * x * x + 2.0 * x);

    for x in [0.37_f64, 1.9, 2.6] {
        let mut y = x;
        for _ in 0..8 {
            y = if y > 1.0 { y / 2.0 } else { 3.0 * y };
        }
        check!(tent_iter, tent_iter_vjp; x => y / x);
    }

    let x = 0.7_f64;
    check!(
        |x| match_in_loop(x, 7),
        |x| match_in_loop_vjp(x, 7);
        x => 3.0 + 4.0 * x - 2.0 * x.cos()
    );

    let x = 0.5_f64;
    let want = (x + 1.0) * (x + 2.0) + x * (x + 2.0) + x * (x + 1.0);
    check!(|x| loop_in_branch(x, 3, true), |x| loop_in_branch_vjp(x, 3, true); x => want);
    check!(
        |x| loop_in_branch(x, 3, false),
        |x| loop_in_branch_vjp(x, 3, false);
        x => 1.0 + 0.5 + 1.0 / 3.0
    );

    check!(
        argmax_scaled,
        argmax_scaled_vjp;
        [0.5, 2.0, -1.0, 1.5, 1.9] => [0.0, 2.0, 0.0, 0.0, 0.0]
    );
    check!(
        argmax_scaled,
        argmax_scaled_vjp;
        [0.5, 0.0, -1.0, 1.5, 1.9] => [0.0, 0.0, 0.0, 0.0, 5.0]
    );

    for x in [0.5_f64, 1.2, 3.0] {
        let (mut y, mut d) = (x, 1.0);
        while y < 20.0 {
            (y, d) = if y < 2.0 {
                (y * y + 1.0, d * 2.0 * y)
            } else {
                (1.5 * y, 1.5 * d)
            };
        }
        check!(while_branch, while_branch_vjp; x => d);
    }
}

// ---------------------------------------------------------------------------------------------
// Direct recursion
// ---------------------------------------------------------------------------------------------

/// xⁿ by recursion: d/dx = n xⁿ⁻¹.
#[differentiable]
fn rec_pow(x: f64, n: u32) -> f64 {
    if n == 0 { 1.0 } else { x * rec_pow(x, n - 1) }
}

/// Σ_{k=1..n} xᵏ/k by recursion: d/dx = Σ_{k=1..n} xᵏ⁻¹.
#[differentiable]
fn rec_series(x: f64, n: u32) -> f64 {
    if n == 0 {
        0.0
    } else {
        x.powi(n as i32) / n as f64 + rec_series(x, n - 1)
    }
}

/// Continued fraction f₀ = x, fₙ = x + 1/fₙ₋₁: fₙ' = 1 − fₙ₋₁'/fₙ₋₁².
#[differentiable]
fn rec_cf(x: f64, n: u32) -> f64 {
    if n == 0 {
        x
    } else {
        x + 1.0 / rec_cf(x, n - 1)
    }
}

/// Tree recursion (two calls): t₀ = sin x, tₙ(x) = tₙ₋₁(x)·tₙ₋₁(x/2);
/// tₙ' = tₙ₋₁'(x) tₙ₋₁(x/2) + ½ tₙ₋₁(x) tₙ₋₁'(x/2).
#[differentiable]
fn rec_tree(x: f64, n: u32) -> f64 {
    if n == 0 {
        x.sin()
    } else {
        rec_tree(x, n - 1) * rec_tree(0.5 * x, n - 1)
    }
}

/// Recursion with a loop in its body: f₀ = y, fₙ = x² fₙ₋₁ + y, so fₙ = y Σ_{k=0..n} x²ᵏ;
/// ∂x = y Σ 2k x²ᵏ⁻¹, ∂y = Σ x²ᵏ.
#[differentiable]
fn rec_loop(x: f64, y: f64, n: u32) -> f64 {
    if n == 0 {
        y
    } else {
        let mut s = rec_loop(x, y, n - 1);
        for _ in 0..2 {
            s = s * x;
        }
        s + y
    }
}

/// Recursion over the indices of an array parameter: Σ_{i≥start} xᵢ², ∂x = 2x.
#[differentiable]
fn rec_sum_sq(x: [f64; 4], start: usize) -> f64 {
    if start == 4 {
        0.0
    } else {
        x[start] * x[start] + rec_sum_sq(x, start + 1)
    }
}

/// (tₙ, tₙ') of [`rec_tree`], by the product rule.
fn tree_value_and_derivative(x: f64, n: u32) -> (f64, f64) {
    if n == 0 {
        return (x.sin(), x.cos());
    }
    let (a, da) = tree_value_and_derivative(x, n - 1);
    let (b, db) = tree_value_and_derivative(0.5 * x, n - 1);
    (a * b, da * b + 0.5 * a * db)
}

#[test]
fn recursion() {
    let x = 1.3_f64;
    check!(|x| rec_pow(x, 5), |x| rec_pow_vjp(x, 5); x => 5.0 * x.powi(4));
    check!(|x| rec_pow(x, 0), |x| rec_pow_vjp(x, 0); x => 0.0);
    let want: f64 = (1..=6).map(|k| x.powi(k - 1)).sum();
    check!(|x| rec_series(x, 6), |x| rec_series_vjp(x, 6); x => want);

    let (mut f, mut d) = (x, 1.0);
    for _ in 0..6 {
        (f, d) = (x + 1.0 / f, 1.0 - d / (f * f));
    }
    check!(|x| rec_cf(x, 6), |x| rec_cf_vjp(x, 6); x => d);

    let x = 2.1;
    check!(|x| rec_tree(x, 3), |x| rec_tree_vjp(x, 3); x => tree_value_and_derivative(x, 3).1);

    let (x, y) = (0.9_f64, 1.7_f64);
    let dx: f64 = (1..=4)
        .map(|k| y * 2.0 * k as f64 * x.powi(2 * k - 1))
        .sum();
    let dy: f64 = (0..=4).map(|k| x.powi(2 * k)).sum();
    check!(|x, y| rec_loop(x, y, 4), |x, y| rec_loop_vjp(x, y, 4); x, y => (dx, dy));

    let x = [1.0, -2.0, 0.5, 3.0];
    check!(|x| rec_sum_sq(x, 0), |x| rec_sum_sq_vjp(x, 0); x => x.map(|v| 2.0 * v));
    check!(|x| rec_sum_sq(x, 2), |x| rec_sum_sq_vjp(x, 2); x => [0.0, 0.0, 1.0, 6.0]);
}

// ---------------------------------------------------------------------------------------------
// Generic loops and branches over `Float`, in f32 and f64
// ---------------------------------------------------------------------------------------------

/// xⁿ by a loop: d/dx = n xⁿ⁻¹.
#[differentiable]
fn g_pow_loop<T: Float>(x: T, n: usize) -> T {
    let mut acc = T::ONE;
    for _ in 0..n {
        acc = acc * x;
    }
    acc
}

/// x sin x (x > 0) or x²/2: d/dx = sin x + x cos x, or x.
#[differentiable]
fn g_branch<T: Float>(x: T) -> T {
    if x > T::ZERO {
        x.sin() * x
    } else {
        x * x * T::from_f64(0.5)
    }
}

/// Halve while y > 1, summing the halves: s = x Σ_{k=1..K} 2⁻ᵏ, d/dx = 1 − 2⁻ᴷ
/// (x = 5: 2.5, 1.25, 0.625, K = 3, d/dx = 7/8).
#[differentiable]
fn g_halve<T: Float>(x: T) -> T {
    let mut y = x;
    let mut s = T::ZERO;
    while y > T::ONE {
        y = y * T::from_f64(0.5);
        s = s + y;
    }
    s
}

/// Element reads of a generic array: x₀x₁, ∇ = (x₁, x₀).
#[differentiable]
fn g_read<T: Float>(x: [T; 2]) -> T {
    x[0] * x[1]
}

/// Element reads of a generic array of any length in a loop: Σ xᵢ², ∇ = 2x.
#[differentiable]
fn g_sum_sq<T: Float, const N: usize>(x: [T; N]) -> T {
    let mut s = T::ZERO;
    for i in 0..N {
        s = s + x[i] * x[i];
    }
    s
}

/// Element reads of a generic slice: v₀v₁ + v₂, ∂v = (v₁, v₀, 1).
#[differentiable]
fn g_read_slice<T: Float>(v: &[T]) -> T {
    v[0] * v[1] + v[2]
}

/// Element reads of a generic `Vec`: v₀ sin v₂, ∂v = (sin v₂, 0, v₀ cos v₂).
#[differentiable]
fn g_read_vec<T: Float>(v: Vec<T>) -> T {
    v[0] * v[2].sin()
}

/// k = 0: eˣ, d = eˣ; else k ln x, d = k/x.
#[differentiable]
fn g_match<T: Float>(x: T, k: u8) -> T {
    match k {
        0 => x.exp(),
        _ => x.ln() * T::from_f64(f64::from(k)),
    }
}

/// `push` of x·i then Σ vᵢ² = x² Σ i², d/dx = 2x Σ_{i<n} i².
#[differentiable]
fn g_push<T: Float>(x: T, n: usize) -> T {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(x * T::from_f64(i as f64));
    }
    let mut s = T::ZERO;
    for i in 0..n {
        s = s + v[i] * v[i];
    }
    s
}

#[test]
fn generic_loops_f64() {
    let x = 1.1_f64;
    check!(|x| g_pow_loop::<f64>(x, 6), |x| g_pow_loop_vjp::<f64>(x, 6); x => 6.0 * x.powi(5));
    check!(g_branch::<f64>, g_branch_vjp::<f64>; x => x.sin() + x * x.cos());
    check!(g_branch::<f64>, g_branch_vjp::<f64>; -x => -x);
    check!(g_halve::<f64>, g_halve_vjp::<f64>; 5.0 => 0.875);
    check!(|x| g_match::<f64>(x, 0), |x| g_match_vjp::<f64>(x, 0); x => x.exp());
    check!(|x| g_match::<f64>(x, 3), |x| g_match_vjp::<f64>(x, 3); x => 3.0 / x);
    check!(|x| g_push::<f64>(x, 4), |x| g_push_vjp::<f64>(x, 4); x => 2.0 * x * 14.0);

    let y = -0.6_f64;
    check!(g_read::<f64>, g_read_vjp::<f64>; [x, y] => [y, x]);
    let v = [x, y, 2.5];
    check!(g_sum_sq::<f64, 3>, g_sum_sq_vjp::<f64, 3>; v => v.map(|vi| 2.0 * vi));
    let got = gradient(g_read_slice_vjp::<f64>(&v));
    check_vec(
        "g_read_slice",
        |v| g_read_slice::<f64>(&v),
        v,
        &got,
        [y, x, 1.0],
    );
    let got = gradient(g_read_vec_vjp::<f64>(v.to_vec()));
    let want = [v[2].sin(), 0.0, x * v[2].cos()];
    check_vec("g_read_vec", g_read_vec::<f64>, v, &got, want);
}

#[test]
fn generic_loops_f32() {
    // The f32 gradients agree with the f64 ones (checked above) to f32 precision.
    for x in [-1.3_f32, 0.4, 1.1, 2.5] {
        let x64 = f64::from(x);
        assert_close_f32(
            "g_pow_loop",
            gradient(g_pow_loop_vjp(x, 6)),
            gradient(g_pow_loop_vjp(x64, 6)),
        );
        assert_close_f32(
            "g_branch",
            gradient(g_branch_vjp(x)),
            gradient(g_branch_vjp(x64)),
        );
        assert_close_f32(
            "g_push",
            gradient(g_push_vjp(x, 4)),
            gradient(g_push_vjp(x64, 4)),
        );
        if x > 0.0 {
            assert_close_f32("g_match", gradient(g_match_vjp(x, 3)), 3.0 / x64);
        }
        assert_close_f32("g_match", gradient(g_match_vjp(x, 0)), x64.exp());
    }
    // Generic element reads: the f32 gradients agree with the formulas in f64 (a `Vec`
    // tangent may be shorter than its value, the missing coordinates are zeros).
    let v = [1.1_f32, -0.6, 2.5];
    let [a, b, c] = v.map(f64::from);
    let close = |name: &str, got: &[f32], want: &[f64]| {
        assert!(
            got.len() <= want.len(),
            "{name}: tangent of length {}",
            got.len()
        );
        for (i, w) in want.iter().enumerate() {
            assert_close_f32(name, got.get(i).copied().unwrap_or(0.0), *w);
        }
    };
    close("g_read", &gradient(g_read_vjp([v[0], v[1]])), &[b, a]);
    close(
        "g_sum_sq",
        &gradient(g_sum_sq_vjp(v)),
        &[2.0 * a, 2.0 * b, 2.0 * c],
    );
    close(
        "g_read_slice",
        &gradient(g_read_slice_vjp(&v)),
        &[b, a, 1.0],
    );
    let want = [c.sin(), 0.0, a * c.cos()];
    close("g_read_vec", &gradient(g_read_vec_vjp(v.to_vec())), &want);
    assert_eq!(gradient(g_halve_vjp(5.0_f32)), 0.875);
    assert_eq!(gradient(g_pow_loop_vjp(2.0_f32, 3)), 12.0);
}

// ---------------------------------------------------------------------------------------------
// Methods with loops and branches
// ---------------------------------------------------------------------------------------------

/// A cubic c₀x³ + c₁x² + c₂x + c₃; its tangent is `([f64; 4],)`.
#[derive(Clone, Copy, Debug)]
struct Poly([f64; 4]);

impl Differentiable for Poly {
    type Tangent = ([f64; 4],);
    fn move_by(&mut self, t: &([f64; 4],)) {
        for i in 0..4 {
            self.0[i] += t.0[i];
        }
    }
}

impl Poly {
    /// Horner over the coefficients: ∂self = ((x³, x², x, 1),), ∂x = 3c₀x² + 2c₁x + c₂.
    #[differentiable]
    fn eval(&self, x: f64) -> f64 {
        let mut acc = 0.0;
        for i in 0..4 {
            acc = acc * x + self.0[i];
        }
        acc
    }

    /// A method calling a method, then branching: p > 10 → 10 + ln(p − 9), whose gradient is
    /// the one of [`Poly::eval`] divided by p − 9; else p.
    #[differentiable]
    fn capped(&self, x: f64) -> f64 {
        let p = self.eval(x);
        if p > 10.0 {
            10.0 + (p - 10.0).ln_1p()
        } else {
            p
        }
    }

    /// Σ (cᵢ₊₁ − cᵢ)² by a `while` on data: ∂cⱼ = 2(cⱼ − cⱼ₋₁) − 2(cⱼ₊₁ − cⱼ).
    #[differentiable]
    fn roughness(&self) -> f64 {
        let mut i = 0;
        let mut s = 0.0;
        while i < 3 {
            let d = self.0[i + 1] - self.0[i];
            s += d * d;
            i += 1;
        }
        s
    }
}

/// An exponential moving average with rate r: `Decay(r)`, tangent `(f64,)`.
#[derive(Clone, Copy, Debug)]
struct Decay(f64);

impl Differentiable for Decay {
    type Tangent = (f64,);
    fn move_by(&mut self, t: &(f64,)) {
        self.0 += t.0;
    }
}

impl Decay {
    /// x rⁿ by a loop: ∂self = (n x rⁿ⁻¹,), ∂x = rⁿ.
    #[differentiable]
    fn apply(&self, x: f64, n: usize) -> f64 {
        let mut y = x;
        for _ in 0..n {
            y = y * self.0;
        }
        y
    }

    /// m = x₀, then m ← r m + (1 − r) xᵢ: m = r³x₀ + (1 − r)(r²x₁ + r x₂ + x₃);
    /// ∂x = (r³, (1 − r)r², (1 − r)r, 1 − r),
    /// ∂r = 3r²x₀ + (1 − r)(2r x₁ + x₂) − (r²x₁ + r x₂ + x₃).
    #[differentiable]
    fn smooth(&self, xs: [f64; 4]) -> f64 {
        let mut m = xs[0];
        for i in 1..4 {
            m = self.0 * m + (1.0 - self.0) * xs[i];
        }
        m
    }
}

#[test]
fn methods() {
    let (c, x) = ([0.5, -1.0, 2.0, 0.25], 1.3_f64);
    let dx = 3.0 * c[0] * x * x + 2.0 * c[1] * x + c[2];
    let powers = [x * x * x, x * x, x, 1.0];
    let ((dc,), got_dx) = gradient(Poly(c).eval_vjp(x));
    assert_close("Poly::eval", (dc, got_dx), (powers, dx));
    check_gradient("Poly::eval", |(c, x)| Poly(c).eval(x), (c, x), (dc, got_dx));

    // p(3) = 13.5 − 9 + 6 + 0.25 = 10.75 > 10: scaled by 1/(p − 9).
    let x = 3.0_f64;
    let p = Poly(c).eval(x);
    assert!(p > 10.0);
    let scale = 1.0 / (p - 9.0);
    let want = (
        [x * x * x, x * x, x, 1.0].map(|v| v * scale),
        (3.0 * c[0] * x * x + 2.0 * c[1] * x + c[2]) * scale,
    );
    let (dc, dx) = gradient(Poly(c).capped_vjp(x));
    assert_close("Poly::capped", (dc.0, dx), want);
    check_gradient(
        "Poly::capped",
        |(c, x)| Poly(c).capped(x),
        (c, x),
        (dc.0, dx),
    );
    let ((dc,), dx) = gradient(Poly(c).capped_vjp(1.0));
    assert_close("Poly::capped/below", (dc, dx), ([1.0; 4], 1.5 - 2.0 + 2.0));

    let (dc,) = gradient(Poly(c).roughness_vjp());
    let want: [f64; 4] = std::array::from_fn(|j| {
        let left = if j > 0 { 2.0 * (c[j] - c[j - 1]) } else { 0.0 };
        let right = if j < 3 { -2.0 * (c[j + 1] - c[j]) } else { 0.0 };
        left + right
    });
    assert_close("Poly::roughness", dc, want);
    check_gradient("Poly::roughness", |c| Poly(c).roughness(), c, dc);

    let (r, x) = (0.8_f64, 1.5_f64);
    let ((dr,), dx) = gradient(Decay(r).apply_vjp(x, 5));
    assert_close("Decay::apply", (dr, dx), (5.0 * x * r.powi(4), r.powi(5)));
    check_gradient(
        "Decay::apply",
        |(r, x)| Decay(r).apply(x, 5),
        (r, x),
        (dr, dx),
    );

    let xs = [1.0, -2.0, 0.5, 3.0];
    let ((dr,), dxs) = gradient(Decay(r).smooth_vjp(xs));
    let want_x = [r.powi(3), (1.0 - r) * r * r, (1.0 - r) * r, 1.0 - r];
    let want_r = 3.0 * r * r * xs[0] + (1.0 - r) * (2.0 * r * xs[1] + xs[2])
        - (r * r * xs[1] + r * xs[2] + xs[3]);
    assert_close("Decay::smooth", (dr, dxs), (want_r, want_x));
    check_gradient(
        "Decay::smooth",
        |(r, xs)| Decay(r).smooth(xs),
        (r, xs),
        (dr, dxs),
    );
}

// ---------------------------------------------------------------------------------------------
// An Elman RNN over plain arrays and over `Vec`s
// ---------------------------------------------------------------------------------------------

#[path = "common/elman.rs"]
mod elman;

use elman::{HIDDEN, INPUT, elman, elman_by_hand, elman_vjp, rnn_problem};

/// The same RNN over row-major `&[f64]` weights, the state rebuilt by `push` every step.
#[differentiable(wrt(w, u, b))]
fn elman_vec(w: &[f64], u: &[f64], b: &[f64], xs: &[Vec<f64>]) -> f64 {
    let mut h = vec![0.0; HIDDEN];
    for t in 0..xs.len() {
        let mut next = Vec::new();
        for i in 0..HIDDEN {
            let mut s = b[i];
            for j in 0..HIDDEN {
                s += w[i * HIDDEN + j] * h[j];
            }
            for k in 0..INPUT {
                s += u[i * INPUT + k] * xs[t][k];
            }
            next.push(s.tanh());
        }
        h = next;
    }
    let mut loss = 0.0;
    for i in 0..HIDDEN {
        loss += h[i] * h[i];
    }
    loss
}

#[test]
fn elman_rnn() {
    let ((w, u, b), xs) = rnn_problem(7);
    let (loss, pullback) = elman_vjp(w, u, b, &xs);
    assert_eq!(loss, elman(w, u, b, &xs));
    assert!(loss > 0.1, "a loss of {loss} would make the check weak");
    let got = pullback(1.0);
    let (by_hand_loss, by_hand) = elman_by_hand(&(w, u, b), &xs);
    assert_close("elman loss", loss, by_hand_loss);
    assert_close("elman", got, by_hand);
    // All 104 coordinates against finite differences.
    check_gradient("elman", |(w, u, b)| elman(w, u, b, &xs), (w, u, b), got);

    // The `Vec` version computes the same loss and gradient.
    let flat_w: Vec<f64> = w.iter().flatten().copied().collect();
    let flat_u: Vec<f64> = u.iter().flatten().copied().collect();
    let xs_vec: Vec<Vec<f64>> = xs.iter().map(|x| x.to_vec()).collect();
    let (loss_vec, pullback) = elman_vec_vjp(&flat_w, &flat_u, &b, &xs_vec);
    assert_close("elman_vec loss", loss_vec, loss);
    let (dw, du, db) = pullback(1.0);
    let (dw, du) = (
        padded::<{ HIDDEN * HIDDEN }>(&dw),
        padded::<{ HIDDEN * INPUT }>(&du),
    );
    let dw: [[f64; HIDDEN]; HIDDEN] =
        std::array::from_fn(|i| std::array::from_fn(|j| dw[i * HIDDEN + j]));
    let du: [[f64; INPUT]; HIDDEN] =
        std::array::from_fn(|i| std::array::from_fn(|k| du[i * INPUT + k]));
    assert_close("elman_vec", (dw, du, padded::<HIDDEN>(&db)), got);
}

// ---------------------------------------------------------------------------------------------
// A loop of a million iterations
// ---------------------------------------------------------------------------------------------

/// s ← cs + x (k even) or cs + 2x (k odd) from 0, n = 2m times, c = 1 − 10⁻⁶:
/// s = x (c + 2) Σ_{j<m} c²ʲ, d/dx = (c + 2)(1 − cⁿ)/(1 − c²).
#[differentiable]
fn leaky_integrator(x: f64, n: usize) -> f64 {
    let c = 1.0 - 1e-6;
    let mut s = 0.0;
    for k in 0..n {
        if k % 2 == 0 {
            s = c * s + x;
        } else {
            s = c * s + 2.0 * x;
        }
    }
    s
}

#[test]
fn million_iterations_on_a_small_stack() {
    // 2 MiB, the default stack of a spawned thread, named explicitly: the pullback runs the
    // per-iteration records from one buffer, not by recursion.
    let n = 1_000_000;
    let got = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || gradient(leaky_integrator_vjp(0.5, n)))
        .expect("spawn")
        .join()
        .expect("the gradient of a 1e6-iteration loop runs on a 2 MiB stack");
    let c: f64 = 1.0 - 1e-6;
    let want = (c + 2.0) * (1.0 - c.powi(n as i32)) / (1.0 - c * c);
    // Both sides sum a million terms: allow the rounding of that many additions.
    assert!((got - want).abs() <= 1e-9 * want, "got {got}, want {want}");
}

// ---------------------------------------------------------------------------------------------
// Properties: gradients agree with finite differences at random points off the boundaries
// ---------------------------------------------------------------------------------------------

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Points closer than this to a branch boundary are skipped: the central difference with a
    /// step of about 1e-6 would straddle the kink (or jump).
    const MARGIN: f64 = 1e-3;

    fn away(a: f64, b: f64) -> bool {
        (a - b).abs() > MARGIN
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn huber_gradient(x in -3.0..3.0_f64) {
            prop_assume!(away(x, -1.0) && away(x, 1.0));
            let got = gradient(huber_vjp(x));
            check_gradient("huber", huber, x, got);
            prop_assert_eq!(got, x.clamp(-1.0, 1.0));
        }

        #[test]
        fn nested_if_gradient(x in -3.0..3.0_f64, y in -3.0..3.0_f64) {
            prop_assume!(away(x, 0.0) && away(y, 0.0) && away(x, y));
            let got = gradient(nested_if_vjp(x, y));
            check_gradient("nested_if", |(x, y)| nested_if(x, y), (x, y), got);
        }

        #[test]
        fn tent_iter_gradient(x in 0.1..4.0_f64) {
            // The trajectory stays in (0.1, 4) and |d/dx| = y/x < 40, so a step of 4e-6 moves
            // every iterate by less than 2e-4: enough to stay off y = 1 at MARGIN.
            let mut y = x;
            let mut near = false;
            for _ in 0..8 {
                near |= !away(y, 1.0);
                y = if y > 1.0 { y / 2.0 } else { 3.0 * y };
            }
            prop_assume!(!near);
            let got = gradient(tent_iter_vjp(x));
            check_gradient("tent_iter", tent_iter, x, got);
        }

        #[test]
        fn logsumexp_gradient(x in prop::array::uniform5(-3.0..3.0_f64)) {
            // Smooth everywhere: the branch only picks the shift.
            let got = gradient(logsumexp_vjp(x));
            check_gradient("logsumexp", logsumexp, x, got);
            prop_assert!((got.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }

        #[test]
        fn sort_weighted_gradient(x in prop::array::uniform4(-3.0..3.0_f64)) {
            for i in 0..4 {
                for j in 0..i {
                    prop_assume!(away(x[i], x[j]));
                }
            }
            let got = gradient(sort_weighted_vjp(x));
            check_gradient("sort_weighted", sort_weighted, x, got);
        }

        #[test]
        fn while_double_gradient(x in 0.1..20.0_f64) {
            // y jumps where x·2ᵏ = 10.
            prop_assume!((0..8).all(|k| away(x * f64::from(1 << k), 10.0)));
            let got = gradient(while_double_vjp(x));
            check_gradient("while_double", while_double, x, got);
        }

        #[test]
        fn while_branch_gradient(x in 0.1..19.0_f64) {
            // Kinks where some iterate crosses 2, jumps where one crosses 20; the derivative
            // is below 1e3 here, so a step moves the iterates by less than 2e-2 · MARGIN.
            let mut y = x;
            let mut near = false;
            while y < 20.0 {
                near |= !away(y, 2.0) || !away(y, 20.0);
                y = if y < 2.0 { y * y + 1.0 } else { 1.5 * y };
            }
            prop_assume!(!near && away(y, 20.0));
            let got = gradient(while_branch_vjp(x));
            check_gradient("while_branch", while_branch, x, got);
        }

        #[test]
        fn bound_from_x_gradient(x in 0.0..8.0_f64) {
            prop_assume!(away(x, x.round()));
            let got = gradient(bound_from_x_vjp(x));
            check_gradient("bound_from_x", bound_from_x, x, got);
        }

        #[test]
        fn leaky_sum_gradient(x in prop::array::uniform5(-3.0..3.0_f64)) {
            prop_assume!(x.iter().all(|&v| away(v, 0.0)));
            let got = gradient(leaky_sum_vjp(x));
            check_gradient("leaky_sum", leaky_sum, x, got);
        }

        #[test]
        fn newton_sqrt_gradient(a in 0.01..100.0_f64) {
            let got = gradient(newton_sqrt_vjp(a));
            check_gradient("newton_sqrt", newton_sqrt, a, got);
            assert_close("newton_sqrt", got, 0.5 / a.sqrt());
        }

        #[test]
        fn rec_cf_gradient(x in 0.5..3.0_f64, n in 0..8_u32) {
            let got = gradient(rec_cf_vjp(x, n));
            check_gradient("rec_cf", |x| rec_cf(x, n), x, got);
        }

        #[test]
        fn recorded_calls_gradient(x in prop::array::uniform3(-2.0..2.0_f64)) {
            // Loops run again in the pullback, with recorded `tanh`, `sin`, `cos`, `exp`.
            let got = gradient(tanh_into_vjp(x));
            check_gradient("tanh_into", tanh_into, x, got);
            let got = gradient(recorded_sites_vjp(x));
            check_gradient("recorded_sites", recorded_sites, x, got);
        }

        #[test]
        fn tanh_steps_gradient(w in prop::array::uniform2(prop::array::uniform2(-1.5..1.5_f64))) {
            let got = gradient(tanh_steps_vjp(w));
            assert_close("tanh_steps", got, tanh_steps_by_hand(w));
            check_gradient("tanh_steps", tanh_steps, w, got);
        }
    }

    proptest! {
        // Each case checks all 104 coordinates of the RNN's gradient.
        #![proptest_config(ProptestConfig::with_cases(6))]

        #[test]
        fn elman_gradient(seed in any::<u64>()) {
            let ((w, u, b), xs) = rnn_problem(seed);
            let got = gradient(elman_vjp(w, u, b, &xs));
            assert_close("elman", got, elman_by_hand(&(w, u, b), &xs).1);
            check_gradient("elman", |(w, u, b)| elman(w, u, b, &xs), (w, u, b), got);
        }
    }
}

/// Recomputed loops share an unchanging parameter instead of copying it per pullback; these
/// pin down when they may. `Σₜ Σᵢ w[i]·t` for `t` in 0..3 is `3·Σ w`, so ∂/∂w[i] = 3, read in a
/// loop nested in another (the sharing case).
#[differentiable]
fn shared_in_nested_loops(w: [f64; 3]) -> f64 {
    let mut total = 0.0;
    for t in 0..3 {
        let mut s = 0.0;
        for i in 0..3 {
            s += w[i];
        }
        total = total + s * (t as f64 + 1.0) / 2.0;
    }
    total
}

/// The parameter re-bound before the loop: the loop must read the new binding (2·w), so
/// ∂/∂w[i] = 2·3 = 6.
#[differentiable]
fn shared_then_shadowed(w: [f64; 3]) -> f64 {
    let w = [w[0] * 2.0, w[1] * 2.0, w[2] * 2.0];
    let mut total = 0.0;
    for _ in 0..3 {
        let mut s = 0.0;
        for i in 0..3 {
            s += w[i];
        }
        total = total + s;
    }
    total
}

/// The parameter used whole in the loop (`w.len()`), not only indexed: copied as before.
/// `Σᵢ w[i]·len` with len 3: ∂/∂w[i] = 3.
#[differentiable]
fn shared_used_whole(w: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        s += w[i] * w.len() as f64;
    }
    s
}

#[test]
fn unchanging_parameters_shared_by_recomputed_loops() {
    check!(shared_in_nested_loops, shared_in_nested_loops_vjp; [1.0, -2.0, 0.5] => [3.0, 3.0, 3.0]);
    check!(shared_then_shadowed, shared_then_shadowed_vjp; [1.0, -2.0, 0.5] => [6.0, 6.0, 6.0]);
    check!(shared_used_whole, shared_used_whole_vjp; [1.0, -2.0, 0.5] => [3.0, 3.0, 3.0]);
}

// ---------------------------------------------------------------------------------------------
// Accumulation loops the pullback must not run again
// ---------------------------------------------------------------------------------------------
//
// A loop over a range may be differentiated by running its body again in the pullback instead
// of storing each iteration's residuals (forwards for a loop that only adds into its
// variables, backwards from stored states for a recurrence). That is wrong when the second run
// sees other values: a call that reads changing state, or a variable the loop assigns but does
// not carry. Such loops are taped.

thread_local! {
    /// The state of [`draw`]: 1, 2, 3, … on successive calls.
    static DRAWS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The next number of a sequence 1, 2, 3, …: a stand-in for a random number generator.
fn draw() -> f64 {
    DRAWS.with(|d| {
        d.set(d.get() + 1);
        f64::from(d.get())
    })
}

/// Σ_{k<4} x·draw() with draws 1, 2, 3, 4 = 10x, d/dx = 10 (a replay would draw 5…8: 26).
#[differentiable]
fn draws_in_accumulation(x: f64) -> f64 {
    let mut s = 0.0;
    for _ in 0..4 {
        s += x * draw();
    }
    s
}

/// Σ_{k<4} x·a[2k] with an inactive counter: d/dx = a₀ + a₂ + a₄ + a₆, d/daᵢ = x for even i
/// (a replay would start the counter at its final value, 8).
#[differentiable]
fn counter_in_accumulation(x: f64, a: &[f64; 8]) -> f64 {
    let mut s = 0.0;
    let mut k = 0;
    for _ in 0..4 {
        s += x * a[k];
        k += 2;
    }
    s
}

/// x·draw()·draw()·… over 3 iterations with draws 1, 2, 3: 6x, d/dx = 6 (a recurrence, so
/// a candidate for checkpointing, which would draw 4, 5, 6 when run again: 120).
#[differentiable]
fn draws_in_recurrence(x: f64) -> f64 {
    let mut y = x;
    for _ in 0..3 {
        y = y * draw();
    }
    y
}

/// y ← y·a[k], k ← k + 3 over 3 iterations: y = x·a₀·a₃·a₆, d/dx = a₀a₃a₆.
#[differentiable(wrt(x))]
fn counter_in_recurrence(x: f64, a: &[f64; 8]) -> f64 {
    let mut y = x;
    let mut k = 0;
    for _ in 0..3 {
        y = y * a[k];
        k += 3;
    }
    y
}

/// A local `Vec` of data read by a checkpointed recurrence and a replayed accumulation, then
/// after them: x = x₀·Πdᵢ, s = x·Σdᵢ + x·d₀, ds/dx₀ = Πdᵢ·(Σdᵢ + d₀). (The pullbacks of
/// loops run again must read copies: moving the `Vec` into them did not compile.)
#[differentiable]
fn data_after_replayed_loops(x0: f64) -> f64 {
    let data: Vec<f64> = vec![0.5, 1.5, 2.0, 0.25];
    let mut x = x0;
    for i in 0..4 {
        x = x * data[i];
    }
    let mut s = 0.0;
    for i in 0..4 {
        s += x * data[i];
    }
    s + x * data[0]
}

#[test]
fn loops_with_state_are_not_replayed() {
    let product = 0.5 * 1.5 * 2.0 * 0.25;
    check!(data_after_replayed_loops, data_after_replayed_loops_vjp; 2.0 => product * (4.25 + 0.5));

    DRAWS.with(|d| d.set(0));
    let (value, pullback) = draws_in_accumulation_vjp(0.5);
    assert_eq!(value, 5.0);
    assert_eq!(pullback(1.0), 10.0);

    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    let x = 0.75;
    let (value, pullback) = counter_in_accumulation_vjp(x, &a);
    assert_eq!(value, x * 16.0);
    let (dx, da) = pullback(1.0);
    assert_eq!(dx, 16.0);
    assert_eq!(da, [x, 0.0, x, 0.0, x, 0.0, x, 0.0]);
    DRAWS.with(|d| d.set(0));
    let (value, pullback) = draws_in_recurrence_vjp(0.5);
    assert_eq!(value, 3.0);
    assert_eq!(pullback(1.0), 6.0);
    let (value, pullback) = counter_in_recurrence_vjp(x, &a);
    assert_eq!(value, x * 28.0);
    assert_eq!(pullback(1.0), 28.0);
    check_gradient(
        "counter_in_accumulation",
        |(x, a): (f64, [f64; 8])| counter_in_accumulation(x, &a),
        (x, a),
        (dx, da),
    );
}

// ---------------------------------------------------------------------------------------------
// Loops run again in the pullback: element writes, recorded calls, borrowed captures
// ---------------------------------------------------------------------------------------------

/// `yᵢ = xᵢ²` written element by element, loss `Σ (i+1)·yᵢ`: `∂/∂xᵢ = 2(i+1)·xᵢ`.
#[differentiable]
fn squares_into(x: [f64; 4]) -> f64 {
    let mut y = [0.0; 4];
    for i in 0..4 {
        y[i] = x[i] * x[i];
    }
    y[0] + 2.0 * y[1] + 3.0 * y[2] + 4.0 * y[3]
}

/// Every iteration overwrites `y₀` with `3xᵢ`; only the last write counts, so the loss
/// `y₀ + y₁ = 3x₃` has gradient `(0, 0, 0, 3)` (a pullback that walked the iterations
/// forwards would hand the adjoint to the first write, `x₀`).
#[differentiable]
fn last_write_wins(x: [f64; 4]) -> f64 {
    let mut y = [0.0; 2];
    for i in 0..4 {
        y[0] = x[i] * 3.0;
    }
    y[0] + y[1]
}

/// `yᵢ = tanh(xᵢ)` (a recorded call), loss `Σ wᵢ·yᵢ` with `w = (1, −2, 3)`:
/// `∂/∂xᵢ = wᵢ·(1 − tanh²xᵢ)`.
#[differentiable]
fn tanh_into(x: [f64; 3]) -> f64 {
    let mut y = [0.0; 3];
    for i in 0..3 {
        y[i] = x[i].tanh();
    }
    y[0] - 2.0 * y[1] + 3.0 * y[2]
}

/// Two recorded calls per iteration and one nested in another (`exp(xᵢ)` then its `tanh`):
/// `s = Σ sin xᵢ · cos xᵢ + tanh(e^{xᵢ})`, so `∂s/∂xᵢ = cos 2xᵢ + (1 − tanh²(e^{xᵢ}))·e^{xᵢ}`.
#[differentiable]
fn recorded_sites(x: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        s += x[i].sin() * x[i].cos() + x[i].exp().tanh();
    }
    s
}

/// A call under a branch runs in some iterations only and is made again, not recorded:
/// `s = Σ (xᵢ > 0 ? e^{xᵢ} : sin xᵢ)`, `∂s/∂xᵢ = e^{xᵢ}` or `cos xᵢ`.
#[differentiable]
fn branch_in_accumulation(x: [f64; 4]) -> f64 {
    let mut s = 0.0;
    for i in 0..4 {
        s += if x[i] > 0.0 { x[i].exp() } else { x[i].sin() };
    }
    s
}

/// A matrix–vector product written by rows, nested in a loop over steps, as the Elman RNN is:
/// `hₜ₊₁ = tanh(W hₜ)` from `h₀ = (1, 1)`, two steps, loss `Σ h₂`. The row loop writes `next`
/// element by element and is run again in the pullback; its nested accumulation reads `h` and
/// `w` by reference. The gradient is checked against the chain rule by hand:
/// `ḣ₂ = 1`, `ȧₜ = ḣₜ₊₁ ⊙ (1 − hₜ₊₁²)`, `W̄ += ȧₜ hₜᵀ`, `ḣₜ = Wᵀ ȧₜ`.
#[differentiable]
fn tanh_steps(w: [[f64; 2]; 2]) -> f64 {
    let mut h = [1.0; 2];
    for _ in 0..2 {
        let mut next = [0.0; 2];
        for i in 0..2 {
            let mut a = 0.0;
            for j in 0..2 {
                a += w[i][j] * h[j];
            }
            next[i] = a.tanh();
        }
        h = next;
    }
    h[0] + h[1]
}

/// `tanh_steps` by hand: the forward sweep keeps the states, the backward sweep applies the
/// formulas of its doc comment.
fn tanh_steps_by_hand(w: [[f64; 2]; 2]) -> [[f64; 2]; 2] {
    let mut hs = [[1.0; 2]; 3];
    for t in 0..2 {
        for i in 0..2 {
            hs[t + 1][i] = (w[i][0] * hs[t][0] + w[i][1] * hs[t][1]).tanh();
        }
    }
    let (mut dw, mut dh) = ([[0.0; 2]; 2], [1.0; 2]);
    for t in (0..2).rev() {
        let da = [0, 1].map(|i| dh[i] * (1.0 - hs[t + 1][i] * hs[t + 1][i]));
        dh = [0, 1].map(|j| w[0][j] * da[0] + w[1][j] * da[1]);
        for i in 0..2 {
            for j in 0..2 {
                dw[i][j] += da[i] * hs[t][j];
            }
        }
    }
    dw
}

const PAIRS: usize = 2;

/// Ranges built from constants (`0..2 * PAIRS`, `1..PAIRS + 1`) are evaluated again by the
/// pullback instead of being kept, in a recomputed accumulation and in a checkpointed
/// recurrence: `s = Σᵢ xᵢ³` over `i < 4`, `y = x₁·x₀²` (two steps of `y ← y·x₀`), loss
/// `s + y`: `∂/∂x₀ = 3x₀² + 2x₀x₁`, `∂/∂x₁ = 3x₁² + x₀²`, `∂/∂xᵢ = 3xᵢ²` for `i ≥ 2`.
#[differentiable]
fn constant_ranges(x: [f64; 4]) -> f64 {
    let mut s = 0.0;
    for i in 0..2 * PAIRS {
        s += x[i] * x[i] * x[i];
    }
    let mut y = x[1];
    for _ in 1..PAIRS + 1 {
        y = y * x[0];
    }
    s + y
}

/// A bound that is a local variable is captured, not evaluated again, even when the body
/// changes that variable afterwards (the range was fixed when the loop began): `n = 3`
/// iterations of `s += xᵢ²` while `n` grows, loss `s`: `∂/∂xᵢ = 2xᵢ` for `i < 3`, else 0.
#[allow(clippy::mut_range_bound)] // the point of the test
#[differentiable]
fn bound_changed_in_body(x: [f64; 4]) -> f64 {
    let mut n = 3;
    let mut s = 0.0;
    for i in 0..n {
        s += x[i] * x[i];
        n += 1;
    }
    s + (n as f64) * 0.0
}

/// A user type with a method named like a recorded float method: `Gain(a, b).tanh() = a·tanh b`.
#[derive(Clone, Copy, Debug)]
struct Gain(f64, f64);

impl Differentiable for Gain {
    type Tangent = (f64, f64);
    fn move_by(&mut self, t: &(f64, f64)) {
        self.0 += t.0;
        self.1 += t.1;
    }
}

impl Gain {
    /// `a·tanh b`: `∂/∂a = tanh b`, `∂/∂b = a·(1 − tanh² b)`.
    #[differentiable]
    fn tanh(&self) -> f64 {
        self.0 * self.1.tanh()
    }
}

/// A recorded call on a type without a rule from the recorded value uses the type's own rule:
/// `s = Σᵢ aᵢ·tanh bᵢ` (the method of [`Gain`]) `+ Σᵢ tanh xᵢ` (recorded `f64::tanh`), so
/// `∂s/∂aᵢ = tanh bᵢ`, `∂s/∂bᵢ = aᵢ·(1 − tanh² bᵢ)`, `∂s/∂xᵢ = 1 − tanh² xᵢ`.
#[differentiable]
fn own_tanh_in_loop(g: [Gain; 3], x: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        s += g[i].tanh() + x[i].tanh();
    }
    s
}

/// Every method the macro records (`macros/src/cache.rs::CACHED`), in one recomputed loop, so
/// that each rule from a recorded value is checked: with `aᵢ = xᵢ/2` (in (−1, 1)) and
/// `pᵢ = xᵢ² + 1` (positive), `s = Σᵢ acos aᵢ + asin aᵢ + atan xᵢ + cbrt xᵢ + cos xᵢ + cosh xᵢ
/// + exp xᵢ + exp2 xᵢ + exp_m1 xᵢ + ln pᵢ + ln_1p pᵢ + log10 pᵢ + log2 pᵢ + sin xᵢ + sinh xᵢ
/// + tan xᵢ + tanh xᵢ` (derivative: [`every_recorded_method_derivative`]).
#[differentiable]
fn every_recorded_method(x: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        let a = x[i] * 0.5;
        let p = x[i] * x[i] + 1.0;
        s += a.acos() + a.asin() + x[i].atan() + x[i].cbrt() + x[i].cos() + x[i].cosh();
        s += x[i].exp() + x[i].exp2() + x[i].exp_m1() + p.ln() + p.ln_1p() + p.log10();
        s += p.log2() + x[i].sin() + x[i].sinh() + x[i].tan() + x[i].tanh();
    }
    s
}

/// `∂s/∂x` of [`every_recorded_method`], term by term (`acos' + asin' = 0`;
/// `ln p` terms by the chain rule through `p' = 2x`).
fn every_recorded_method_derivative(x: f64) -> f64 {
    let p = x * x + 1.0;
    let (ln2, ln10) = (std::f64::consts::LN_2, std::f64::consts::LN_10);
    let dp = 2.0 * x;
    1.0 / (1.0 + x * x) + 1.0 / (3.0 * x.cbrt() * x.cbrt()) - x.sin()
        + x.sinh()
        + x.exp()
        + x.exp2() * ln2
        + x.exp()
        + dp / p
        + dp / (1.0 + p)
        + dp / (p * ln10)
        + dp / (p * ln2)
        + x.cos()
        + x.cosh()
        + 1.0 / (x.cos() * x.cos())
        + 1.0
        - x.tanh() * x.tanh()
}

/// `yᵢ = tanh(xᵢ)` over tensors written into a `Vec`, loss `Σ y₀ + 2 Σ y₁`:
/// `∂/∂xᵢ = (i+1)·(1 − tanh²)`, elementwise.
#[differentiable]
fn tanh_tensors(xs: &[Tensor]) -> Tensor {
    let mut ys = vec![Tensor::zeros(&[2]), Tensor::zeros(&[2])];
    for i in 0..2 {
        ys[i] = xs[i].tanh();
    }
    ys[0].sum_all() + ys[1].sum_all() * 2.0
}

#[test]
fn recomputed_loops_with_writes_and_recorded_calls() {
    let x = [0.5, -1.25, 2.0, 0.75];
    check!(squares_into, squares_into_vjp; x => [1.0, 4.0 * x[1], 6.0 * x[2], 8.0 * x[3]]);
    check!(last_write_wins, last_write_wins_vjp; x => [0.0, 0.0, 0.0, 3.0]);
    check!(constant_ranges, constant_ranges_vjp; x => [
        3.0 * x[0] * x[0] + 2.0 * x[0] * x[1],
        3.0 * x[1] * x[1] + x[0] * x[0],
        3.0 * x[2] * x[2],
        3.0 * x[3] * x[3],
    ]);
    check!(bound_changed_in_body, bound_changed_in_body_vjp; x => [2.0 * x[0], 2.0 * x[1], 2.0 * x[2], 0.0]);
    let x3 = [0.5, -1.25, 2.0];
    let w = [1.0, -2.0, 3.0];
    check!(tanh_into, tanh_into_vjp; x3 => std::array::from_fn(|i| w[i] * (1.0 - x3[i].tanh().powi(2))));
    check!(recorded_sites, recorded_sites_vjp; x3 => x3.map(|x| {
        (2.0 * x).cos() + (1.0 - x.exp().tanh().powi(2)) * x.exp()
    }));
    check!(branch_in_accumulation, branch_in_accumulation_vjp; x => x.map(|x| {
        if x > 0.0 { x.exp() } else { x.cos() }
    }));
    let w = [[0.5, -0.25], [0.75, 0.125]];
    check!(tanh_steps, tanh_steps_vjp; w => tanh_steps_by_hand(w));
    let xm = [0.5, -1.25, 0.875];
    check!(every_recorded_method, every_recorded_method_vjp; xm => xm.map(every_recorded_method_derivative));

    let (a, b) = ([0.5, -1.25, 2.0], [1.5, 0.25, -0.75]);
    let gains = std::array::from_fn(|i| Gain(a[i], b[i]));
    let (dg, dx) = gradient(own_tanh_in_loop_vjp(gains, x3));
    let sech2 = |v: f64| 1.0 - v.tanh().powi(2);
    assert_close("own_tanh_in_loop ∂a", dg.map(|d| d.0), b.map(f64::tanh));
    assert_close(
        "own_tanh_in_loop ∂b",
        dg.map(|d| d.1),
        std::array::from_fn(|i| a[i] * sech2(b[i])),
    );
    assert_close("own_tanh_in_loop ∂x", dx, x3.map(sech2));
    check_gradient(
        "own_tanh_in_loop",
        |(a, b, x): ([f64; 3], [f64; 3], [f64; 3])| {
            own_tanh_in_loop(std::array::from_fn(|i| Gain(a[i], b[i])), x)
        },
        (a, b, x3),
        (dg.map(|d| d.0), dg.map(|d| d.1), dx),
    );

    let xs = vec![
        Tensor::from_vec(vec![0.5_f64, -1.0], &[2]),
        Tensor::from_vec(vec![2.0_f64, 0.25], &[2]),
    ];
    let (y, pullback) = tanh_tensors_vjp(&xs);
    let want_y: f64 = [0.5_f64, -1.0].iter().map(|x| x.tanh()).sum::<f64>()
        + 2.0 * [2.0_f64, 0.25].iter().map(|x| x.tanh()).sum::<f64>();
    assert_close("tanh_tensors", y.to_scalar(), want_y);
    let grads = pullback(TensorTangent::Dense(Tensor::from_vec(vec![1.0_f64], &[])));
    for (i, g) in grads.into_iter().enumerate() {
        let want: Vec<f64> = xs[i]
            .to_vec_f64()
            .iter()
            .map(|x| (i + 1) as f64 * (1.0 - x.tanh().powi(2)))
            .collect();
        let got = g.to_tensor_like(&xs[i]).to_vec_f64();
        for (g, w) in got.iter().zip(&want) {
            assert_close("tanh_tensors gradient", *g, *w);
        }
    }
}

//! `if`/`else if`/`else`, `if let` and `match` (guards included) in differentiable functions.

use crate::common::check;
use adjoint::prelude::*;

// ---------------------------------------------------------------------------------------------
// if / else if / else / if let
// ---------------------------------------------------------------------------------------------

/// Huber-like: −x − ½ (x < −1), ½x² (|x| ≤ 1), x − ½ (x > 1); d/dx = −1, x, 1.
#[differentiable]
pub(crate) fn huber(x: f64) -> f64 {
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
pub(crate) fn nested_if(x: f64, y: f64) -> f64 {
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

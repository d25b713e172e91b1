//! Enums whose variants carry active payloads (`#[derive(Differentiable)]` on an enum, tangent
//! `ShapeTangent`): parameters, variants built from active values (tuple and struct variants,
//! fields out of declaration order), `match` arms binding payloads (with guards, `..`, a
//! catch-all binding the whole value), `if let`, and an enum as loop state. Each derivative
//! is exact on every arm and checked against central finite differences, and forward mode
//! against reverse.

use crate::common::check_gradient;
use adjoint::prelude::*;
use std::f64::consts::PI;

#[derive(Clone, Debug, PartialEq, Differentiable)]
pub enum Shape {
    Circle(f64),
    Rect { w: f64, h: f64 },
    Scaled(#[no_derivative] usize, f64),
    Empty,
}

/// area(Circle(r)) = π r², area(Rect { w, h }) = w h, area(Empty) = 0: ∂r = 2π r, (∂w, ∂h) = (h, w).
#[differentiable(forward)]
fn area(s: Shape) -> f64 {
    match s {
        Shape::Circle(r) => PI * r * r,
        Shape::Rect { w, h } => w * h,
        Shape::Scaled(..) | Shape::Empty => 0.0,
    }
}

/// 3v for `Scaled(_, v)` (its first field is `#[no_derivative]`, its tangent `()`), r² for a
/// circle: ∂v = 3, ∂r = 2r.
#[differentiable]
fn scaled(s: Shape) -> f64 {
    match s {
        Shape::Scaled(_, v) => 3.0 * v,
        Shape::Circle(r) => r * r,
        _ => 0.0,
    }
}

#[test]
fn matched_payloads_get_their_adjoints() {
    let (y, pb) = area_vjp(Shape::Circle(2.0));
    assert!((y - 4.0 * PI).abs() < 1e-12);
    let ShapeTangent::Circle(dr) = pb(1.0) else {
        panic!("Circle's tangent")
    };
    assert!((dr - 4.0 * PI).abs() < 1e-12);
    let h = 1e-6;
    let fd = (area(Shape::Circle(2.0 + h)) - area(Shape::Circle(2.0 - h))) / (2.0 * h);
    assert!((dr - fd).abs() < 1e-6, "{dr} vs {fd}");
    let (_, pb) = area_vjp(Shape::Rect { w: 2.0, h: 3.0 });
    let ShapeTangent::Rect { w, h } = pb(1.0) else {
        panic!("Rect's tangent")
    };
    assert_eq!((w, h), (3.0, 2.0));
    let (y, pb) = area_vjp(Shape::Empty);
    assert_eq!(y, 0.0);
    assert!(matches!(pb(1.0), ShapeTangent::Zero));
    // Forward: the tangent of the variant the value has.
    let (y, t) = area_jvp(
        Shape::Rect { w: 2.0, h: 3.0 },
        ShapeTangent::Rect { w: 0.5, h: -1.0 },
    );
    assert_eq!((y, t), (6.0, 3.0 * 0.5 - 2.0));
    assert_eq!(area_jvp(Shape::Circle(1.0), ShapeTangent::Zero).1, 0.0);

    let (y, pb) = scaled_vjp(Shape::Scaled(7, 1.5));
    assert_eq!(y, 4.5);
    let ShapeTangent::Scaled((), dv) = pb(1.0) else {
        panic!("Scaled's tangent")
    };
    assert_eq!(dv, 3.0);
}

/// A variant built from active values in each branch, matched again with a guard, `..` and a
/// catch-all that passes the whole value on (to `area`), and passed to `area`:
/// pick 0: s = Circle(rw), f = 2π r²w²;
/// pick 1: s = Rect { w: wr, h: r + 1 } (fields written out of order), f = g + wr(r + 1) with
/// g = wr − (r + 1) if wr > r + 1, else (r + 1)²;
/// otherwise: f = 0.
#[differentiable(forward)]
fn shaped(r: f64, w: f64, pick: u8) -> f64 {
    let s = if pick == 0 {
        Shape::Circle(r * w)
    } else if pick == 1 {
        Shape::Rect {
            w: w * r,
            h: r + 1.0,
        }
    } else {
        Shape::Empty
    };
    let g = match s.clone() {
        Shape::Rect { w: a, h } if a > h => a - h,
        Shape::Rect { h, .. } => h * h,
        other => area(other),
    };
    g + area(s)
}

fn shaped_by_hand(r: f64, w: f64, pick: u8) -> (f64, f64) {
    match pick {
        0 => (4.0 * PI * r * w * w, 4.0 * PI * r * r * w),
        1 if w * r > r + 1.0 => (w - 1.0 + 2.0 * w * r + w, r + r * (r + 1.0)),
        1 => (2.0 * (r + 1.0) + 2.0 * w * r + w, r * (r + 1.0)),
        _ => (0.0, 0.0),
    }
}

#[test]
fn variants_built_from_active_values_carry_their_derivatives() {
    for (r, w, pick) in [(0.7, 1.3, 0), (2.0, 3.0, 1), (2.0, 1.0, 1), (1.0, 1.0, 2)] {
        let got = gradient(shaped_vjp(r, w, pick));
        let want = shaped_by_hand(r, w, pick);
        crate::common::assert_close("shaped", got, want);
        check_gradient("shaped", |(r, w)| shaped(r, w, pick), (r, w), got);
        let (_, t) = shaped_jvp(r, w, pick, 0.3, -0.6);
        assert!(
            (t - (want.0 * 0.3 - want.1 * 0.6)).abs() < 1e-9,
            "shaped jvp {pick}"
        );
    }
}

/// `if let` on an active enum: r·x for a circle of radius r, x otherwise.
#[differentiable(forward)]
fn circle_or(s: Shape, x: f64) -> f64 {
    if let Shape::Circle(r) = s { r * x } else { x }
}

#[test]
fn if_let_reads_the_payload() {
    let (y, pb) = circle_or_vjp(Shape::Circle(2.0), 3.0);
    assert_eq!(y, 6.0);
    let (ds, dx) = pb(1.0);
    assert!(matches!(ds, ShapeTangent::Circle(d) if d == 3.0));
    assert_eq!(dx, 2.0);
    let (_, pb) = circle_or_vjp(Shape::Empty, 3.0);
    let (ds, dx) = pb(1.0);
    assert!(matches!(ds, ShapeTangent::Zero));
    assert_eq!(dx, 1.0);
    let (_, t) = circle_or_jvp(Shape::Circle(2.0), 3.0, ShapeTangent::Circle(0.5), 1.0);
    assert_eq!(t, 0.5 * 3.0 + 2.0);
}

#[derive(Clone, Debug, Differentiable)]
pub enum Phase {
    Grow(f64),
    Decay { level: f64, rate: f64 },
}

/// A state machine steered by an enum: from Grow(x), Grow(v) → Grow(v(1 + x)) until v > 2,
/// then Decay { level: v, rate: x/2 }, and each Decay step level → level(1 − rate).
#[differentiable(forward)]
fn phases(x: f64, n: usize) -> f64 {
    let mut state = Phase::Grow(x);
    for _ in 0..n {
        state = match state {
            Phase::Grow(v) if v > 2.0 => Phase::Decay {
                level: v,
                rate: 0.5 * x,
            },
            Phase::Grow(v) => Phase::Grow(v * (1.0 + x)),
            Phase::Decay { level, rate } => Phase::Decay {
                level: level * (1.0 - rate),
                rate,
            },
        };
    }
    match state {
        Phase::Grow(v) => v,
        Phase::Decay { level, .. } => level,
    }
}

#[test]
fn an_enum_steers_a_loop() {
    // x = 0.9, 4 steps: Grow(0.9), Grow(1.71), Grow(3.249), Decay { 3.249, 0.45 }, then one
    // decay: f = x(1 + x)²(1 − x/2).
    let x: f64 = 0.9;
    let want = (1.0 + x).powi(2) * (1.0 - x / 2.0) + 2.0 * x * (1.0 + x) * (1.0 - x / 2.0)
        - x * (1.0 + x).powi(2) / 2.0;
    let got = gradient(phases_vjp(x, 4));
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    check_gradient("phases", |x| phases(x, 4), x, got);
    assert!((phases_jvp(x, 4, 1.0).1 - want).abs() < 1e-12);
    // x = 0.5 never leaves Grow in 3 steps: f = x(1 + x)³.
    let got = gradient(phases_vjp(0.5, 3));
    let want = 1.5_f64.powi(3) + 3.0 * 0.5 * 1.5_f64.powi(2);
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    check_gradient("phases", |x| phases(x, 3), 0.5, got);
}

#[test]
fn enum_tangents_add_by_variant() {
    let a = ShapeTangent::Rect { w: 1.0, h: 2.0 };
    let b = ShapeTangent::Rect { w: 0.5, h: -1.0 };
    assert!(matches!(
        a.clone() + b,
        ShapeTangent::Rect { w: 1.5, h: 1.0 }
    ));
    assert!(matches!(
        a.clone() + ShapeTangent::Zero,
        ShapeTangent::Rect { w: 1.0, h: 2.0 }
    ));
    assert!(matches!(a * 2.0, ShapeTangent::Rect { w: 2.0, h: 4.0 }));
    let mut s = Shape::Circle(1.0);
    s.move_by(&ShapeTangent::Circle(0.5));
    assert_eq!(s, Shape::Circle(1.5));
    assert!(matches!(Shape::Empty.zero_tangent(), ShapeTangent::Zero));
}

#[test]
#[should_panic(expected = "two different variants")]
fn tangents_of_two_variants_do_not_add() {
    let _ = ShapeTangent::Circle(1.0) + ShapeTangent::Rect { w: 1.0, h: 1.0 };
}

#[derive(Clone, Debug, Differentiable)]
pub struct Pt {
    x: f64,
    y: f64,
}

#[derive(Clone, Debug, Differentiable)]
pub struct Pair(f64, f64);

/// A `match` destructuring active structs (named with a guard and `..`, tuple with `_`): the
/// fields are read as `p.x`, `q.1`. f = xy + b² when x > y, x + b² otherwise (q = Pair(_, b)):
/// ∂(x, y, b) = (y, x, 2b) or (1, 0, 2b).
#[differentiable(forward)]
fn destructured(p: Pt, q: Pair) -> f64 {
    let a = match p {
        Pt { x, y } if x > y => x * y,
        Pt { x, .. } => x,
    };
    let b = match q {
        Pair(_, second) => second * second,
    };
    a + b
}

#[test]
fn struct_patterns_read_fields() {
    for (x, y, want) in [(3.0, 2.0, (2.0, 3.0)), (1.0, 2.0, (1.0, 0.0))] {
        let (v, pb) = destructured_vjp(Pt { x, y }, Pair(5.0, 0.5));
        assert_eq!(v, if x > y { x * y } else { x } + 0.25);
        let (dp, dq) = pb(1.0);
        assert_eq!((dp.x, dp.y, dq.0, dq.1), (want.0, want.1, 0.0, 1.0));
        let f = |(x, y): (f64, f64)| destructured(Pt { x, y }, Pair(5.0, 0.5));
        check_gradient("destructured", f, (x, y), (dp.x, dp.y));
        let (_, t) = destructured_jvp(
            Pt { x, y },
            Pair(5.0, 0.5),
            PtTangent { x: 0.3, y: -0.2 },
            PairTangent(0.0, 2.0),
        );
        assert!((t - (want.0 * 0.3 - want.1 * 0.2 + 2.0)).abs() < 1e-12);
    }
}

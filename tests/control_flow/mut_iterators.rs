//! Iteration by `&mut` over active collections: `for t in v.iter_mut()` and `for t in &mut v`,
//! through `enumerate`, `rev` and `zip`, the element written as `*t`, `t.field` or through a
//! method (`t.sin()`). The macro writes each as a loop over indices whose writes are element
//! writes `v[k] = ..` (until this was done such writes were invisible to the lowering: the
//! gradient came out as if the loop were not there). Every function is also differentiated in
//! forward mode; each derivative is checked against the closed form in its doc comment, the
//! other mode, and central finite differences.

use crate::common::{check_gradient, check_vec};
use adjoint::prelude::*;

/// Scales every element by `x`, then Σ tᵢ²: f = x² Σ vᵢ²; ∂vᵢ = 2x²vᵢ, ∂x = 2x Σ vᵢ².
#[differentiable(forward)]
fn scaled(v: Vec<f64>, x: f64) -> f64 {
    let mut v = v;
    for t in v.iter_mut() {
        *t *= x;
    }
    v.iter().map(|t| t * t).sum()
}

/// `tᵢ ← tᵢ² + i·x` over `iter_mut().enumerate()`, then Σ: ∂vᵢ = 2vᵢ, ∂x = Σ i.
#[differentiable(forward)]
fn enumerated(v: Vec<f64>, x: f64) -> f64 {
    let mut v = v;
    for (i, t) in v.iter_mut().enumerate() {
        *t = *t * *t + i as f64 * x;
    }
    v.iter().sum()
}

/// `for t in &mut v { *t = t.sin() }`, a method on the element: Σ sin vᵢ, ∂vᵢ = cos vᵢ.
#[differentiable(forward)]
fn sines(v: [f64; 3]) -> f64 {
    let mut v = v;
    for t in &mut v {
        *t = t.sin();
    }
    v[0] + v[1] + v[2]
}

/// `a ← a + 2b` over `a.iter_mut().zip(b.iter())`, then Σ aᵢ²:
/// ∂aᵢ = 2(aᵢ + 2bᵢ), ∂bᵢ = 4(aᵢ + 2bᵢ).
#[differentiable(forward)]
fn axpy(a: [f64; 3], b: [f64; 3]) -> f64 {
    let mut a = a;
    for (s, y) in a.iter_mut().zip(b.iter()) {
        *s += 2.0 * y;
    }
    a.iter().map(|s| s * s).sum()
}

/// Suffix Horner written back (`iter_mut().rev()` with a carried value): over [a, b],
/// v = [bx + a, b] and f = v₀v₁ = (bx + a)b; ∂a = b, ∂b = a + 2bx, ∂x = b².
#[differentiable(forward)]
fn suffix_horner(v: [f64; 2], x: f64) -> f64 {
    let mut v = v;
    let mut carry = 0.0;
    for t in v.iter_mut().rev() {
        carry = carry * x + *t;
        *t = carry;
    }
    v[0] * v[1]
}

/// `iter_mut()` and `&mut v` loops inside an outer loop: twice v ← x·v, then v₀ + v₁ =
/// x²(v₀ + v₁); ∂v = (x², x²), ∂x = 2x(v₀ + v₁). (The outer loop once did not count `v` as
/// written by the inner `iter_mut()`: the gradient came out as if no loop ran.)
#[differentiable(forward)]
fn scaled_twice(v: Vec<f64>, x: f64) -> f64 {
    let mut v = v;
    for _ in 0..2 {
        for t in v.iter_mut() {
            *t *= x;
        }
    }
    for _ in 0..1 {
        for t in &mut v {
            *t += 0.0 * x;
        }
    }
    v[0] + v[1]
}

#[test]
fn iter_mut_loops_inside_loops() {
    let (v, x) = ([1.0, 2.0], 3.0);
    let (dv, dx) = gradient(scaled_twice_vjp(v.to_vec(), x));
    check_vec(
        "scaled_twice/v",
        |v| scaled_twice(v, x),
        v,
        &dv,
        [x * x, x * x],
    );
    assert_eq!(dx, 2.0 * x * (v[0] + v[1]));
    check_gradient(
        "scaled_twice/x",
        |x: f64| scaled_twice(v.to_vec(), x),
        x,
        dx,
    );
    let (_, t) = scaled_twice_jvp(v.to_vec(), x, vec![0.5, -1.0], 0.25);
    let want = x * x * (0.5 - 1.0) + dx * 0.25;
    assert!(
        (t - want).abs() < 1e-12,
        "scaled_twice jvp {t} against {want}"
    );
}

/// A point whose fields the loop below writes through `p.x`.
#[derive(Clone, Debug, Differentiable)]
struct Pt {
    x: f64,
    y: f64,
}

/// `p.x += s·p.y` for every point (`t.field` through `iter_mut()`), then Σ xᵢ:
/// ∂xᵢ = 1, ∂yᵢ = s, ∂s = Σ yᵢ.
#[differentiable]
fn sheared(pts: Vec<Pt>, s: f64) -> f64 {
    let mut pts = pts;
    for p in pts.iter_mut() {
        p.x += s * p.y;
    }
    let mut total = 0.0;
    for p in pts.iter() {
        total += p.x;
    }
    total
}

#[test]
fn writes_through_iter_mut_are_element_writes() {
    let pts = vec![Pt { x: 1.0, y: -2.0 }, Pt { x: 0.5, y: 3.0 }];
    let (dp, ds) = gradient(sheared_vjp(pts.clone(), 0.3));
    let got: Vec<(f64, f64)> = dp.iter().map(|t| (t.x, t.y)).collect();
    assert_eq!((got, ds), (vec![(1.0, 0.3), (1.0, 0.3)], 1.0));
    let at = ([1.0, -2.0, 0.5, 3.0], 0.3);
    let points = |c: [f64; 4]| vec![Pt { x: c[0], y: c[1] }, Pt { x: c[2], y: c[3] }];
    check_gradient(
        "sheared",
        |(c, s)| sheared(points(c), s),
        at,
        ([1.0, 0.3, 1.0, 0.3], ds),
    );

    let (v, x) = ([0.5, -1.5, 2.0], 0.7);
    let squares: f64 = v.iter().map(|t| t * t).sum();
    let (dv, dx) = gradient(scaled_vjp(v.to_vec(), x));
    check_vec(
        "scaled/v",
        |v| scaled(v, x),
        v,
        &dv,
        v.map(|t| 2.0 * x * x * t),
    );
    assert!((dx - 2.0 * x * squares).abs() < 1e-12, "scaled/x: {dx}");
    check_gradient("scaled/x", |x: f64| scaled(v.to_vec(), x), x, dx);

    let (dv, dx) = gradient(enumerated_vjp(v.to_vec(), x));
    check_vec(
        "enumerated/v",
        |v| enumerated(v, x),
        v,
        &dv,
        v.map(|t| 2.0 * t),
    );
    assert_eq!(dx, 3.0);
    check_gradient("enumerated/x", |x: f64| enumerated(v.to_vec(), x), x, dx);

    let got = gradient(sines_vjp(v));
    crate::common::assert_close("sines", got, v.map(f64::cos));
    check_gradient("sines", sines, v, got);

    let (a, b) = ([1.0, -2.0, 0.5], [0.3, 0.7, -1.1]);
    let sum: [f64; 3] = std::array::from_fn(|i| a[i] + 2.0 * b[i]);
    let got = gradient(axpy_vjp(a, b));
    crate::common::assert_close("axpy", got, (sum.map(|s| 2.0 * s), sum.map(|s| 4.0 * s)));
    check_gradient("axpy", |(a, b)| axpy(a, b), (a, b), got);

    let ([a, b], x) = ([1.5, -0.5], 0.8);
    let got = gradient(suffix_horner_vjp([a, b], x));
    crate::common::assert_close("suffix_horner", got, ([b, a + 2.0 * b * x], b * b));
    check_gradient(
        "suffix_horner",
        |(v, x)| suffix_horner(v, x),
        ([a, b], x),
        got,
    );
}

#[test]
fn writes_through_iter_mut_in_forward_mode() {
    let (v, x) = ([0.5, -1.5, 2.0], 0.7);
    let (dv, dx) = ([0.2, -0.4, 1.0], 0.3);
    let along = |g: &[f64], gx: f64| g.iter().zip(dv).map(|(g, d)| g * d).sum::<f64>() + gx * dx;

    let (value, tangent) = scaled_jvp(v.to_vec(), x, dv.to_vec(), dx);
    let (gv, gx) = gradient(scaled_vjp(v.to_vec(), x));
    assert_eq!(value, scaled(v.to_vec(), x));
    assert!(
        (tangent - along(&gv, gx)).abs() < 1e-12,
        "scaled: {tangent}"
    );

    let (_, tangent) = enumerated_jvp(v.to_vec(), x, dv.to_vec(), dx);
    let (gv, gx) = gradient(enumerated_vjp(v.to_vec(), x));
    assert!(
        (tangent - along(&gv, gx)).abs() < 1e-12,
        "enumerated: {tangent}"
    );

    let (_, tangent) = sines_jvp(v, dv);
    let want: f64 = (0..3).map(|i| v[i].cos() * dv[i]).sum();
    assert!((tangent - want).abs() < 1e-12, "sines: {tangent}");

    let (a, b) = ([1.0, -2.0, 0.5], [0.3, 0.7, -1.1]);
    let (_, tangent) = axpy_jvp(a, b, dv, [1.0, 0.5, -0.3]);
    let (ga, gb) = gradient(axpy_vjp(a, b));
    let want = along(&ga, 0.0) + (0..3).map(|i| gb[i] * [1.0, 0.5, -0.3][i]).sum::<f64>();
    assert!(
        (tangent - want).abs() < 1e-12,
        "axpy: {tangent} against {want}"
    );

    let (_, tangent) = suffix_horner_jvp([1.5, -0.5], 0.8, [0.2, -0.4], dx);
    let (gv, gx) = gradient(suffix_horner_vjp([1.5, -0.5], 0.8));
    let want = gv[0] * 0.2 - gv[1] * 0.4 + gx * dx;
    assert!(
        (tangent - want).abs() < 1e-12,
        "suffix_horner: {tangent} against {want}"
    );
}

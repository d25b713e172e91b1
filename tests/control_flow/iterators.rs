//! Iterator chains over active collections: `for` over `iter()` with `enumerate`, `rev`,
//! `zip`, `skip`, `step_by`, an array literal, and the reductions `.map(..).sum()`,
//! `.product()`, `.fold(..)` and `.map(..).collect::<Vec<_>>()`. The macro writes each as a
//! loop over indices that reads the elements; the gradients here are exact and checked
//! against finite differences.

use crate::common::{check, check_vec};
use adjoint::prelude::*;

/// Σᵢ i·vᵢ² over `iter().enumerate()`, written with `*x`: ∂v = 2i·vᵢ.
#[differentiable]
fn enumerated(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for (i, x) in v.iter().enumerate() {
        s += i as f64 * *x * *x;
    }
    s
}

/// Horner's rule over the coefficients from the last (`iter().rev()`): p(x) = Σ cᵢ xⁱ;
/// ∂c = (xⁱ), ∂x = Σ i cᵢ xⁱ⁻¹.
#[differentiable]
fn horner(c: &[f64], x: f64) -> f64 {
    let mut p = 0.0;
    for &ci in c.iter().rev() {
        p = p * x + ci;
    }
    p
}

/// A dot product over `zip` of two active vectors: ∂a = b, ∂b = a.
#[differentiable]
fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for (x, y) in a.iter().zip(b.iter()) {
        s += x * y;
    }
    s
}

/// Every second element from the second (`skip(1).step_by(2)`), squared: ∂v = 2vᵢ at
/// i = 1, 3, …, zero elsewhere.
#[differentiable]
fn odd_squares(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for x in v.iter().skip(1).step_by(2) {
        s += x * x;
    }
    s
}

/// A loop over an array literal of active values: a + b + ab, so ∂ = (1 + b, 1 + a).
#[differentiable]
fn over_literal(a: f64, b: f64) -> f64 {
    let mut s = 0.0;
    for t in [a, b, a * b] {
        s += t;
    }
    s
}

/// `.map(|x| x * x).sum::<f64>()`: Σ vᵢ², ∂v = 2v.
#[differentiable]
fn sum_of_squares(v: Vec<f64>) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>()
}

/// The dot product as `zip(..).map(..).sum()` with `*x * *y`: ∂a = b, ∂b = a.
#[differentiable]
fn dot_reduced(a: [f64; 3], b: [f64; 3]) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| *x * *y).sum()
}

/// `.product()` without `map`: Π vᵢ, ∂vᵢ = Π_{j≠i} vⱼ.
#[differentiable]
fn product(v: [f64; 3]) -> f64 {
    v.iter().product()
}

/// `.fold(0.0, |acc, x| acc + x.sin())`, then times the first element: v₀ Σ sin vᵢ;
/// ∂v₀ = Σ sin vᵢ + v₀ cos v₀, ∂vᵢ = v₀ cos vᵢ.
#[differentiable]
fn fold_sines(v: [f64; 3]) -> f64 {
    let s = v.iter().fold(0.0, |acc, x| acc + x.sin());
    s * v[0]
}

/// `.map(|x| x.exp()).collect::<Vec<_>>()`, then softmax's normaliser read back: Σ e^{vᵢ}
/// and the first share e^{v₀}/Σ; checked by finite differences and at the exact gradient of
/// e^{v₀}/Σ: ∂v₀ = p₀(1 − p₀), ∂vᵢ = −p₀pᵢ.
#[differentiable]
fn first_share(v: [f64; 3]) -> f64 {
    let e = v.iter().map(|x| x.exp()).collect::<Vec<_>>();
    let total: f64 = e.iter().sum();
    e[0] / total
}

/// A generic sum over `Float` (the accumulator starts at `Default::default()`): Σ 3vᵢ.
#[differentiable]
fn generic_sum<T: Float + std::iter::Sum>(v: [T; 2]) -> T {
    v.iter().map(|x| *x * T::from_f64(3.0)).sum()
}

/// `copied().take(2)`, `&v`, `cloned()` and `into_iter()`: Σ_{i<2} vᵢ² + Σ vᵢ + Σ vᵢ + Σ 2vᵢ;
/// ∂vᵢ = 2vᵢ [i < 2] + 4.
#[differentiable]
fn taken_copied(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for x in v.iter().copied().take(2) {
        s += x * x;
    }
    for x in &v {
        s += *x;
    }
    for x in v.iter().cloned() {
        s += x;
    }
    for x in v.into_iter() {
        s += 2.0 * x;
    }
    s
}

#[test]
fn for_loops_over_chains() {
    let w = [0.5, -1.5, 2.0];
    let got = gradient(taken_copied_vjp(w.to_vec()));
    check_vec("taken_copied", taken_copied, w, &got, [5.0, 1.0, 4.0]);
    let v = [0.5, -1.5, 2.0, 0.25];
    let got = gradient(enumerated_vjp(v.to_vec()));
    check_vec("enumerated", enumerated, v, &got, [0.0, -3.0, 8.0, 1.5]);
    let got = gradient(odd_squares_vjp(v.to_vec()));
    check_vec("odd_squares", odd_squares, v, &got, [0.0, -3.0, 0.0, 0.5]);

    let (c, x) = ([1.0, -2.0, 0.5, 3.0], 0.7_f64);
    let (dc, dx) = gradient(horner_vjp(&c, x));
    check_vec(
        "horner/c",
        |c| horner(&c, x),
        c,
        &dc,
        [1.0, x, x * x, x * x * x],
    );
    let want = c[1] + 2.0 * c[2] * x + 3.0 * c[3] * x * x;
    check!(|x| horner(&c, x), |x| {
        let (value, pullback) = horner_vjp(&c, x);
        (value, move |seed: f64| pullback(seed).1)
    }; x => want);
    assert!((dx - want).abs() < 1e-12);

    let (a, b) = ([1.0, 2.0, -0.5], [0.3, -4.0, 2.0]);
    check!(dot, dot_vjp; a, b => (b, a));
    check!(over_literal, over_literal_vjp; 0.4, -1.2 => (1.0 - 1.2, 1.0 + 0.4));
}

#[test]
fn reductions_over_chains() {
    let v = [0.5, -1.5, 2.0, 0.25];
    let got = gradient(sum_of_squares_vjp(v.to_vec()));
    check_vec(
        "sum_of_squares",
        sum_of_squares,
        v,
        &got,
        v.map(|x| 2.0 * x),
    );
    let (a, b) = ([1.0, 2.0, -0.5], [0.3, -4.0, 2.0]);
    check!(dot_reduced, dot_reduced_vjp; a, b => (b, a));
    let w = [1.5, -2.0, 0.5];
    check!(product, product_vjp; w => [-1.0, 0.75, -3.0]);
    let sines: f64 = w.iter().map(|x| x.sin()).sum();
    let want = [
        sines + w[0] * w[0].cos(),
        w[0] * w[1].cos(),
        w[0] * w[2].cos(),
    ];
    check!(fold_sines, fold_sines_vjp; w => want);
    let total: f64 = w.iter().map(|x| x.exp()).sum();
    let p = w.map(|x| x.exp() / total);
    check!(first_share, first_share_vjp; w => [p[0] * (1.0 - p[0]), -p[0] * p[1], -p[0] * p[2]]);
    check!(generic_sum::<f64>, generic_sum_vjp::<f64>; [0.3, 0.9] => [3.0, 3.0]);
    let (value, pullback) = generic_sum_vjp::<f32>([0.5, 1.0]);
    assert_eq!((value, pullback(1.0)), (4.5, [3.0, 3.0]));
}

/// Σ over the positive elements (`filter(|x| **x > 0.0)`) of x², and w·x over the elements
/// at even positions that exceed w (`enumerate().filter(..)`, a guard reading an active `w`,
/// data to the branch): ∂vᵢ = 2vᵢ [vᵢ > 0] + w [i even, vᵢ > w], ∂w = Σ_{i even, vᵢ > w} vᵢ.
/// Reverse mode only (forward mode rejects a filtered loop by name).
#[differentiable(forward)]
fn filtered(v: Vec<f64>, w: f64) -> f64 {
    let mut s = 0.0;
    for x in v.iter().filter(|x| **x > 0.0) {
        s += x * x;
    }
    for (i, x) in v.iter().enumerate().filter(|(i, x)| i % 2 == 0 && **x > w) {
        s += w * *x;
        let _ = i;
    }
    s
}

/// Filtered reductions: `Σ_{x > 0} x²` as a typed sum, `Π_{x > w} x` as a typed product, a
/// fold from `w` over the even positions, and the squares of the positives collected and
/// summed: ∂v = 4x·[x > 0] + Π/x·[x > w] + [i even]; ∂w = 1 (w starts the fold; as the
/// product's bound it moves no step). Forward mode takes them too.
#[differentiable(forward)]
fn filtered_reductions(v: Vec<f64>, w: f64) -> f64 {
    let squares = v.iter().filter(|x| **x > 0.0).map(|x| x * x).sum::<f64>();
    let product = v.iter().filter(|x| **x > w).product::<f64>();
    let folded = v
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .fold(w, |acc, (_, x)| acc + x);
    let kept: Vec<f64> = v
        .iter()
        .filter(|x| **x > 0.0)
        .map(|x| x * x)
        .collect::<Vec<_>>();
    squares + product + folded + kept.iter().sum::<f64>()
}

#[test]
fn filters_in_reductions_keep_the_steps_where_they_hold() {
    let v = [1.5, -2.0, 0.25, 3.0, -0.5];
    let w = 0.5;
    let (dv, dw) = gradient(filtered_reductions_vjp(v.to_vec(), w));
    // The product is over 1.5 and 3.0 (the elements > w): ∂ = the other one.
    let want: [f64; 5] = std::array::from_fn(|i| {
        let squares = if v[i] > 0.0 { 4.0 * v[i] } else { 0.0 };
        let product = match i {
            0 => v[3],
            3 => v[0],
            _ => 0.0,
        };
        let folded = if i % 2 == 0 { 1.0 } else { 0.0 };
        squares + product + folded
    });
    let value = filtered_reductions(v.to_vec(), w);
    let squares: f64 = 1.5 * 1.5 + 0.25 * 0.25 + 9.0;
    assert_eq!(value, 2.0 * squares + 1.5 * 3.0 + (w + 1.5 + 0.25 - 0.5));
    check_vec(
        "filtered_reductions/v",
        |v| filtered_reductions(v, w),
        v,
        &dv,
        want,
    );
    assert_eq!(dw, 1.0);
    crate::common::check_gradient(
        "filtered_reductions/w",
        |w| filtered_reductions(v.to_vec(), w),
        w,
        dw,
    );
    // Forward along (v̇, ẇ): the gradient dotted with the direction.
    let (tv, tw) = (vec![0.5, 1.0, -1.0, 0.25, 2.0], -0.75);
    let (forward_value, jv) = filtered_reductions_jvp(v.to_vec(), w, tv.clone(), tw);
    let want: f64 = dv.iter().zip(&tv).map(|(d, t)| d * t).sum::<f64>() + dw * tw;
    assert_eq!(forward_value, value);
    assert!((jv - want).abs() < 1e-12, "{jv} against {want}");
}

#[test]
fn filters_in_for_loops_run_the_body_where_they_hold() {
    let v = [1.5, -2.0, 0.25, 3.0, -0.5];
    let w = 0.5;
    let (dv, dw) = gradient(filtered_vjp(v.to_vec(), w));
    let want: [f64; 5] = std::array::from_fn(|i| {
        let square = if v[i] > 0.0 { 2.0 * v[i] } else { 0.0 };
        let weighted = if i % 2 == 0 && v[i] > w { w } else { 0.0 };
        square + weighted
    });
    check_vec("filtered/v", |v| filtered(v, w), v, &dv, want);
    // Elements 0 (1.5) and 4 (−0.5 ≤ w: no) at even positions; 2 (0.25 ≤ w: no).
    assert_eq!(dw, 1.5);
    crate::common::check_gradient("filtered/w", |w| filtered(v.to_vec(), w), w, dw);
    // Forward mode takes the loops too: J·(v̇, ẇ) against the gradient.
    let (tv, tw) = (vec![1.0, -0.5, 2.0, 0.25, 1.5], 0.75);
    let (_, jv) = filtered_jvp(v.to_vec(), w, tv.clone(), tw);
    let want: f64 = dv.iter().zip(&tv).map(|(d, t)| d * t).sum::<f64>() + dw * tw;
    assert!((jv - want).abs() < 1e-12, "{jv} against {want}");
}

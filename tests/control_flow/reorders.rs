//! In-place reorders and overwrites of active collections: `swap`, `reverse`, `fill`,
//! `sort_by`, `sort_by_key`, written by the macro as the element writes they make (a sort's
//! permutation computed on a copy without derivative: it is piecewise constant). Until then
//! they were rejected ("the result of this call is discarded"). Each function is
//! differentiated in both modes; gradients are exact and checked against central finite
//! differences, away from ties.

use crate::common::{check_gradient, check_vec};
use adjoint::prelude::*;

/// Swaps the first two elements, then weights by position: v₁ + 2v₀ + 3v₂·x;
/// ∂v = (2, 1, 3x), ∂x = 3v₂.
#[differentiable(forward)]
fn swapped(v: [f64; 3], x: f64) -> f64 {
    let mut v = v;
    v.swap(0, 1);
    v[0] + 2.0 * v[1] + 3.0 * v[2] * x
}

/// Reversed, then Σ (i + 1)·vᵢ: ∂vⱼ = n − j.
#[differentiable(forward)]
fn reversed(v: Vec<f64>) -> f64 {
    let mut v = v;
    v.reverse();
    let mut s = 0.0;
    for (i, t) in v.iter().enumerate() {
        s += (i as f64 + 1.0) * t;
    }
    s
}

/// Filled with x², then Σ: n·x², d/dx = 2nx, ∂v = 0.
#[differentiable(forward)]
fn filled(v: Vec<f64>, x: f64) -> f64 {
    let mut v = v;
    v.fill(x * x);
    v.iter().sum()
}

/// A weighted sum of the sorted values, Σ (i + 1)·v₍ᵢ₎ (ascending): the gradient at each
/// element is its rank + 1.
#[differentiable(forward)]
fn ranked(v: Vec<f64>) -> f64 {
    let mut v = v;
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut s = 0.0;
    for i in 0..v.len() {
        s += (i as f64 + 1.0) * v[i];
    }
    s
}

/// The element of largest |·| first (`sort_by_key` on data derived from it), times 10, plus the
/// rest: ∂ = 10 at the largest |vᵢ|, 1 elsewhere.
#[differentiable(forward)]
fn largest_first(v: Vec<f64>) -> f64 {
    let mut v = v;
    v.sort_by_key(|t| std::cmp::Reverse((t.abs() * 1e6) as i64));
    let mut s = 9.0 * v[0];
    for t in &v {
        s += *t;
    }
    s
}

/// A bubble sort by `swap` inside nested loops, then Σ (k + 1)·(k-th smallest): the gradient
/// at each element is its rank + 1. (A swap in a loop once lost its derivative: the loop did
/// not count the receiver as written.)
#[differentiable(forward)]
fn swap_sorted(v: [f64; 3]) -> f64 {
    let mut s = v;
    for i in 0..3 {
        for j in 0..2 - i {
            if s[j] > s[j + 1] {
                s.swap(j, j + 1);
            }
        }
    }
    s[0] + 2.0 * s[1] + 3.0 * s[2]
}

#[test]
fn swaps_in_loops_in_both_modes() {
    let v = [0.5, -1.5, 2.0];
    let got = gradient(swap_sorted_vjp(v));
    assert_eq!(got, [2.0, 1.0, 3.0]);
    check_gradient("swap_sorted", swap_sorted, v, got);
    for (i, want) in got.iter().enumerate() {
        let mut d = [0.0; 3];
        d[i] = 1.0;
        assert_eq!(swap_sorted_jvp(v, d).1, *want, "swap_sorted jvp along e{i}");
    }
}

#[test]
fn reorders_are_element_writes() {
    let (v, x) = ([0.5, -1.5, 2.0], 0.7);
    let got = gradient(swapped_vjp(v, x));
    crate::common::assert_close("swapped", got, ([2.0, 1.0, 3.0 * x], 3.0 * v[2]));
    check_gradient("swapped", |(v, x)| swapped(v, x), (v, x), got);

    let w = [0.5, -1.5, 2.0, 0.25];
    let got = gradient(reversed_vjp(w.to_vec()));
    check_vec("reversed", reversed, w, &got, [4.0, 3.0, 2.0, 1.0]);

    let (dv, dx) = gradient(filled_vjp(w.to_vec(), x));
    check_vec("filled/v", |v| filled(v, x), w, &dv, [0.0; 4]);
    assert!((dx - 8.0 * x).abs() < 1e-12, "filled/x: {dx}");
    check_gradient("filled/x", |x: f64| filled(w.to_vec(), x), x, dx);

    // Ranks of (0.5, −1.5, 2, 0.25) ascending: 3, 1, 4, 2.
    let got = gradient(ranked_vjp(w.to_vec()));
    check_vec("ranked", ranked, w, &got, [3.0, 1.0, 4.0, 2.0]);
    let got = gradient(largest_first_vjp(w.to_vec()));
    check_vec(
        "largest_first",
        largest_first,
        w,
        &got,
        [1.0, 1.0, 10.0, 1.0],
    );
}

#[test]
fn reorders_in_forward_mode_agree_with_reverse() {
    let w = [0.5, -1.5, 2.0, 0.25];
    let dw = [0.3, -0.2, 1.0, 0.5];
    let along = |g: &[f64]| g.iter().zip(dw).map(|(g, d)| g * d).sum::<f64>();
    for (name, f, grad) in [
        (
            "reversed",
            reversed_jvp as fn(Vec<f64>, Vec<f64>) -> (f64, f64),
            gradient(reversed_vjp(w.to_vec())),
        ),
        ("ranked", ranked_jvp, gradient(ranked_vjp(w.to_vec()))),
        (
            "largest_first",
            largest_first_jvp,
            gradient(largest_first_vjp(w.to_vec())),
        ),
    ] {
        let (_, t) = f(w.to_vec(), dw.to_vec());
        assert!((t - along(&grad)).abs() < 1e-12, "{name}: {t}");
    }
    let (_, t) = swapped_jvp([0.5, -1.5, 2.0], 0.7, [0.3, -0.2, 1.0], 0.5);
    let want = 2.0 * 0.3 + 1.0 * -0.2 + 3.0 * 0.7 * 1.0 + 3.0 * 2.0 * 0.5;
    assert!((t - want).abs() < 1e-12, "swapped: {t} against {want}");
    let (_, t) = filled_jvp(w.to_vec(), 0.7, dw.to_vec(), 0.5);
    assert!((t - 8.0 * 0.7 * 0.5).abs() < 1e-12, "filled: {t}");
}

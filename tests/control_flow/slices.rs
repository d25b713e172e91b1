//! Sub-slices of active collections: `&v[a..b]` passed to a differentiable function or bound
//! by `let`, iterated (`v[a..b].iter()`, `for x in &v[..n]`) and reduced, over `Vec`s and
//! arrays, with every kind of range; `windows`, `chunks` and `chunks_exact` as loops over such
//! sub-slices; and `fold` with a function path (`f64::max`). A sub-slice
//! read is a copy of the elements whose adjoint is added back from the range's start
//! (core/src/collections/ranges.rs); until it was, `&v[1..]` was rustc's E0308 inside
//! generated code. Every gradient is exact and checked against central finite differences.

use crate::common::{check_gradient, check_vec};
use adjoint::prelude::*;

/// Σ vᵢ² over a slice.
#[differentiable]
fn norm2(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x * x;
    }
    s
}

/// ‖v[1..]‖² + Σ_{i∈1..3} vᵢ³: ∂v₀ = 0, ∂vᵢ = 2vᵢ (+ 3vᵢ² for i = 1, 2).
#[differentiable]
fn tail_and_middle(v: Vec<f64>) -> f64 {
    norm2(&v[1..]) + v[1..3].iter().map(|x| x * x * x).sum::<f64>()
}

/// ‖a[..2]‖² · a₃ (a sub-slice bound by `let`, of an array): ∂a = (2a₀a₃, 2a₁a₃, 0, a₀² + a₁²).
#[differentiable]
fn head_times_last(a: [f64; 4]) -> f64 {
    let head = &a[..2];
    norm2(head) * a[3]
}

/// Σ over `for x in &v[1..=2]` of x·w: ∂v = (0, w, w, 0), ∂w = v₁ + v₂.
#[differentiable]
fn inclusive(v: Vec<f64>, w: f64) -> f64 {
    let mut s = 0.0;
    for x in &v[1..=2] {
        s += x * w;
    }
    s
}

/// The largest element, by `fold(f64::NEG_INFINITY, f64::max)`: the gradient is 1 at it.
#[differentiable]
fn largest(v: Vec<f64>) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Σ over `windows(2)` of (w₁ − w₀)², the squared differences of neighbours:
/// ∂vᵢ = 2(vᵢ − vᵢ₋₁) − 2(vᵢ₊₁ − vᵢ) (terms past either end left out).
#[differentiable]
fn roughness(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for w in v.windows(2) {
        let d = w[1] - w[0];
        s += d * d;
    }
    s
}

/// Σ over `chunks(2)` (the last one short) of c₀ · c_last, by a reduction, plus the last
/// chunk of `chunks_exact(2)` through `enumerate`: for v = (a, b, c, d, e),
/// f = ab + cd + e² + 3cd (chunks_exact leaves e out; k = 1 is weighted 3).
#[differentiable]
fn paired(v: Vec<f64>) -> f64 {
    let mut s = v.chunks(2).map(|c| c[0] * c[c.len() - 1]).sum::<f64>();
    for (k, c) in v.chunks_exact(2).enumerate() {
        if k == 1 {
            s += 3.0 * c[0] * c[1];
        }
    }
    s
}

#[test]
fn windows_and_chunks_are_sub_slices() {
    let v = [1.0, -2.0, 0.5, 3.0, 1.5];
    let got = gradient(roughness_vjp(v.to_vec()));
    let d = |i: usize| v[i] - v[i - 1];
    let want = [
        -2.0 * d(1),
        2.0 * d(1) - 2.0 * d(2),
        2.0 * d(2) - 2.0 * d(3),
        2.0 * d(3) - 2.0 * d(4),
        2.0 * d(4),
    ];
    check_vec("roughness", roughness, v, &got, want);

    let got = gradient(paired_vjp(v.to_vec()));
    let (a, b, c, d, e) = (v[0], v[1], v[2], v[3], v[4]);
    assert_eq!(paired(v.to_vec()), a * b + c * d + e * e + 3.0 * c * d);
    check_vec("paired", paired, v, &got, [b, a, 4.0 * d, 4.0 * c, 2.0 * e]);
}

#[test]
#[should_panic(expected = "window size must be non-zero")]
fn a_window_of_zero_panics_as_the_standard_library_does() {
    let _ = roughness_zero_vjp(vec![1.0, 2.0]);
}

#[differentiable]
fn roughness_zero(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for w in v.windows(0) {
        s += w.len() as f64;
    }
    s + v[0]
}

#[test]
fn sub_slices_read_copies_whose_adjoints_go_back_by_range() {
    let v = [1.0, -2.0, 0.5, 3.0];
    let got = gradient(tail_and_middle_vjp(v.to_vec()));
    let want = [
        0.0,
        2.0 * v[1] + 3.0 * v[1] * v[1],
        2.0 * v[2] + 3.0 * v[2] * v[2],
        2.0 * v[3],
    ];
    check_vec("tail_and_middle", tail_and_middle, v, &got, want);

    let got = gradient(head_times_last_vjp(v));
    let want = [
        2.0 * v[0] * v[3],
        2.0 * v[1] * v[3],
        0.0,
        v[0] * v[0] + v[1] * v[1],
    ];
    crate::common::assert_close("head_times_last", got, want);
    check_gradient("head_times_last", head_times_last, v, got);

    let w = 0.7;
    let (dv, dw) = gradient(inclusive_vjp(v.to_vec(), w));
    check_vec("inclusive/v", |v| inclusive(v, w), v, &dv, [0.0, w, w, 0.0]);
    assert_eq!(dw, v[1] + v[2]);

    let got = gradient(largest_vjp(v.to_vec()));
    check_vec("largest", largest, v, &got, [0.0, 0.0, 0.0, 1.0]);
}

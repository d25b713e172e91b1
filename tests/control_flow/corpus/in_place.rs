//! In-place and slice styles: normalising through `iter_mut()`, clamping through `&mut v`,
//! sorting a copy to take its median, reversing coefficients, a sub-slice's energy, and a
//! `match` on ranges of a float.

use crate::common::{check, check_vec};
use adjoint::prelude::*;

/// The first share after normalising in place: p₀ = v₀/S with S = Σ vᵢ;
/// ∂v₀ = (S − v₀)/S², ∂vⱼ = −v₀/S².
#[differentiable]
fn first_share(v: Vec<f64>) -> f64 {
    let mut v = v;
    let total: f64 = v.iter().sum();
    for t in v.iter_mut() {
        *t /= total;
    }
    v[0]
}

/// Σ clamp(vᵢ, −1, 1)²: ∂vᵢ = 2vᵢ inside [−1, 1], 0 outside.
#[differentiable]
fn clamped_energy(v: Vec<f64>) -> f64 {
    let mut v = v;
    for t in &mut v {
        *t = t.clamp(-1.0, 1.0);
    }
    v.iter().map(|t| t * t).sum()
}

/// The median of three, by sorting a copy: the gradient is 1 at the median element.
#[differentiable]
fn median3(v: [f64; 3]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s[1]
}

/// Horner's rule over the coefficients reversed in place: p(x) = Σ cᵢ xⁱ (lowest first);
/// ∂cᵢ = xⁱ, ∂x = Σ i cᵢ xⁱ⁻¹.
#[differentiable]
fn poly_lowest_first(c: Vec<f64>, x: f64) -> f64 {
    let mut c = c;
    c.reverse();
    let mut p = 0.0;
    for &ci in &c {
        p = p * x + ci;
    }
    p
}

/// v₀ + Σ_{i≥1} vᵢ² through a sub-slice bound by `let`: ∂v₀ = 1, ∂vᵢ = 2vᵢ.
#[differentiable]
fn head_plus_tail_energy(v: &[f64]) -> f64 {
    let rest = &v[1..];
    let mut e = v[0];
    for x in rest {
        e += x * x;
    }
    e
}

/// A leaky, saturating response by a `match` on ranges of x: 0.1x below 0, x on [0, 1],
/// 1 + ln x above; d/dx = 0.1, 1, 1/x.
#[differentiable]
fn response(x: f64) -> f64 {
    match x {
        t if t < 0.0 => 0.1 * t,
        0.0..=1.0 => x,
        _ => 1.0 + x.ln(),
    }
}

#[test]
fn in_place_and_slice_styles() {
    let v = [0.5, 1.5, 2.0, 0.25];
    let s: f64 = v.iter().sum();
    let want: [f64; 4] = std::array::from_fn(|j| {
        if j == 0 {
            (s - v[0]) / (s * s)
        } else {
            -v[0] / (s * s)
        }
    });
    let got = gradient(first_share_vjp(v.to_vec()));
    check_vec("first_share", first_share, v, &got, want);

    let w = [0.5, -1.5, 0.75, 2.0];
    let got = gradient(clamped_energy_vjp(w.to_vec()));
    check_vec(
        "clamped_energy",
        clamped_energy,
        w,
        &got,
        [1.0, 0.0, 1.5, 0.0],
    );

    check!(median3, median3_vjp; [0.5, -1.5, 2.0] => [1.0, 0.0, 0.0]);

    let (c, x) = ([1.0, -2.0, 0.5], 0.7_f64);
    let (dc, dx) = gradient(poly_lowest_first_vjp(c.to_vec(), x));
    check_vec(
        "poly_lowest_first",
        |c| poly_lowest_first(c, x),
        c,
        &dc,
        [1.0, x, x * x],
    );
    assert!(
        (dx - (c[1] + 2.0 * c[2] * x)).abs() < 1e-12,
        "poly_lowest_first/x: {dx}"
    );

    let got = gradient(head_plus_tail_energy_vjp(&v));
    check_vec(
        "head_plus_tail_energy",
        |v| head_plus_tail_energy(&v),
        v,
        &got,
        [1.0, 3.0, 4.0, 0.5],
    );

    for (x, want) in [(-2.0, 0.1), (0.5, 1.0), (3.0, 1.0 / 3.0)] {
        check!(response, response_vjp; x => want);
    }
}

//! Direct recursion.

use crate::common::check;
use adjoint::prelude::*;

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
pub(crate) fn rec_cf(x: f64, n: u32) -> f64 {
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

//! Closures bound to a name and called in the body over active values: inlined at each call
//! (`macros/src/lower/closures.rs`). Captures by reference and by `move`, typed parameters,
//! several calls, a closure calling another, a call inside a loop.

use crate::common::check;
use adjoint::prelude::*;

/// sq(x) + x with sq = |t| t·t: x² + x, d/dx = 2x + 1.
#[differentiable]
fn square_closure(x: f64) -> f64 {
    let sq = |t: f64| t * t;
    sq(x) + x
}

/// A closure capturing the active y by reference, called twice: f(x) = x·y + 1, so
/// f(x) + f(2x) = 3xy + 2; ∇ = (3y, 3x).
#[differentiable]
fn capturing(x: f64, y: f64) -> f64 {
    let f = |t| t * y + 1.0;
    f(x) + f(2.0 * x)
}

/// A `move` closure capturing a copy of the active scale s, and a closure calling it:
/// g(t) = h(t)·t with h(t) = s·sin t; g(x) = s x sin x; ∇ = (s(sin x + x cos x), x sin x).
#[differentiable]
fn nested_closures(x: f64, s: f64) -> f64 {
    let h = move |t: f64| s * t.sin();
    let g = |t: f64| h(t) * t;
    g(x)
}

/// A closure called in a loop: Σ_{k<3} step(k) with step = |k| (k + 1)·x²: 6x², d/dx = 12x.
#[differentiable]
fn closure_in_loop(x: f64) -> f64 {
    let step = |k: usize| (k as f64 + 1.0) * x * x;
    let mut s = 0.0;
    for k in 0..3 {
        s += step(k);
    }
    s
}

#[test]
fn closures_called_in_the_body() {
    check!(square_closure, square_closure_vjp; 0.7 => 2.0 * 0.7 + 1.0);
    let (x, y) = (0.4, -1.5);
    check!(capturing, capturing_vjp; x, y => (3.0 * y, 3.0 * x));
    let (x, s) = (0.9, 1.7);
    check!(nested_closures, nested_closures_vjp; x, s => (s * (x.sin() + x * x.cos()), x * x.sin()));
    check!(closure_in_loop, closure_in_loop_vjp; 0.6 => 12.0 * 0.6);
}

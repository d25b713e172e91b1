//! Stacks of active values: `while let Some(x) = stack.pop()` (a `loop` around a `match` on
//! the pop, which reads the last element and truncates), pushes inside such a loop (a
//! worklist), and `truncate`, in both modes. Every derivative is exact and checked against
//! central finite differences, and forward mode against reverse.

use crate::common::{check_gradient, check_vec};
use adjoint::prelude::*;

/// Drains a copy of `v` from the top, each element weighted by the next power of w:
/// f = Σⱼ w^(n−1−j) vⱼ, ∂vⱼ = w^(n−1−j), ∂w = Σⱼ (n−1−j) w^(n−2−j) vⱼ.
#[differentiable(forward)]
fn drained(v: Vec<f64>, w: f64) -> f64 {
    let mut stack = v.clone();
    let mut total = 0.0;
    let mut weight = 1.0;
    while let Some(x) = stack.pop() {
        total += weight * x;
        weight *= w;
    }
    total
}

/// A worklist: an element above 1 is split into x/2 and x/4 (pushed), the others are
/// summed squared. From [x] with x near 3 the leaves are x/4, x/8, x/4: f = (9/64) x².
#[differentiable(forward)]
fn split(x: f64) -> f64 {
    let mut stack = vec![x];
    let mut total = 0.0;
    while let Some(y) = stack.pop() {
        if y > 1.0 {
            stack.push(y * 0.5);
            stack.push(y * 0.25);
        } else {
            total += y * y;
        }
    }
    total
}

/// The first two elements after `truncate(2)`, the rest dropped: f = v₀ v₁ (one popped
/// element of `v` weighted 10 before): ∂v = (v₁, v₀, 0, 10) for four elements.
#[differentiable]
fn truncated(v: Vec<f64>) -> f64 {
    let mut u = v.clone();
    let mut last = 0.0;
    if let Some(t) = u.pop() {
        last = 10.0 * t;
    }
    u.truncate(2);
    u[0] * u[1] + last
}

#[test]
fn popping_a_stack_reads_its_last_element() {
    let v = [1.0, -2.0, 0.5, 3.0];
    let w = 0.7_f64;
    let (dv, dw) = gradient(drained_vjp(v.to_vec(), w));
    let want: [f64; 4] = std::array::from_fn(|j| w.powi(3 - j as i32));
    check_vec("drained/v", |v| drained(v, w), v, &dv, want);
    let want_w: f64 = (0..3)
        .map(|j| (3 - j) as f64 * w.powi(2 - j as i32) * v[j])
        .sum();
    assert!((dw - want_w).abs() < 1e-12, "{dw} vs {want_w}");
    check_gradient("drained/w", |w| drained(v.to_vec(), w), w, dw);
    let dir = vec![0.1, 0.2, -0.3, 0.4];
    let (_, t) = drained_jvp(v.to_vec(), w, dir.clone(), 0.5);
    let want_t: f64 = (0..4).map(|j| want[j] * dir[j]).sum::<f64>() + 0.5 * want_w;
    assert!((t - want_t).abs() < 1e-12, "drained jvp {t} vs {want_t}");

    for x in [3.0, 2.9] {
        let got = gradient(split_vjp(x));
        assert!((got - 18.0 / 64.0 * x).abs() < 1e-12, "split at {x}: {got}");
        check_gradient("split", split, x, got);
        assert!((split_jvp(x, 1.0).1 - got).abs() < 1e-12);
    }

    let got = gradient(truncated_vjp(v.to_vec()));
    check_vec("truncated", truncated, v, &got, [v[1], v[0], 0.0, 10.0]);
}

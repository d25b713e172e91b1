//! Generated gradients against hand-written ones, on the Rosenbrock function.
//!
//! * `rosen2`: f(x, y) = (1 − x)² + 100 (y − x²)², straight-line code;
//! * `rosen`: the n-D Rosenbrock function on `[f64; 100]`, a `for` loop reading `x[i]` and
//!   `x[i + 1]`.
//!
//! Each group times the generated `gradient(f_vjp(..))` against a hand-written derivative of the
//! same function computing the same outputs (the gradient; the value is computed by both as part
//! of the forward pass). Inputs go through `black_box`, and criterion black-boxes the returned
//! gradient, so nothing is constant-folded. Before timing, each group checks that both gradients
//! agree. Run with `cargo bench --bench rosenbrock`.

use adjoint::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

/// The two functions, shared with `benches/steps.rs`.
#[path = "common/rosenbrock.rs"]
mod rosenbrock;

use rosenbrock::{N, rosen_vjp, rosen2_vjp};

/// ∇f by hand: ∂x = −2(1 − x) − 400 x (y − x²), ∂y = 200 (y − x²).
#[inline(never)]
fn rosen2_grad_by_hand(x: f64, y: f64) -> (f64, f64) {
    let a = 1.0 - x;
    let b = y - x * x;
    (-2.0 * a - 400.0 * x * b, 200.0 * b)
}

#[inline(never)]
fn rosen2_grad_generated(x: f64, y: f64) -> (f64, f64) {
    gradient(rosen2_vjp(x, y))
}

/// Reverse mode by hand over the same loop: a forward sweep for the value, then a backward
/// sweep (in reverse order, as the generated pullback runs) that recomputes `a` and `b` and adds
/// each iteration's adjoints into the gradient.
#[inline(never)]
fn rosen_grad_by_hand(x: &[f64; N]) -> [f64; N] {
    let mut s = 0.0;
    for i in 0..N - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    black_box(s);
    let mut g = [0.0; N];
    for i in (0..N - 1).rev() {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        let (da, db) = (2.0 * a, 200.0 * b);
        g[i] += -da - 2.0 * x[i] * db;
        g[i + 1] += db;
    }
    g
}

/// Reverse mode by hand with an explicit tape: the forward sweep saves `(a, b)` of every
/// iteration in a `Vec`, the backward sweep reads them back. Not a target, a diagnostic: it
/// separates the cost of keeping residuals from the cost of the generated closures.
#[inline(never)]
fn rosen_grad_taped(x: &[f64; N]) -> [f64; N] {
    let mut s = 0.0;
    let mut tape = Vec::new();
    for i in 0..N - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
        tape.push((a, b, x[i]));
    }
    black_box(s);
    let mut g = [0.0; N];
    for (i, (a, b, xi)) in tape.into_iter().enumerate().rev() {
        let (da, db) = (2.0 * a, 200.0 * b);
        g[i] += -da - 2.0 * xi * db;
        g[i + 1] += db;
    }
    g
}

#[inline(never)]
fn rosen_grad_generated(x: [f64; N]) -> [f64; N] {
    gradient(rosen_vjp(x))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

/// A point away from the minimum, with every coordinate different.
fn point() -> [f64; N] {
    std::array::from_fn(|i| -1.2 + 0.037 * i as f64 + 0.1 * ((i * 7 % 11) as f64))
}

fn bench_rosen2(c: &mut Criterion) {
    let (x, y) = (-1.2, 1.0);
    let generated = rosen2_grad_generated(x, y);
    let by_hand = rosen2_grad_by_hand(x, y);
    assert!(
        close(generated.0, by_hand.0) && close(generated.1, by_hand.1),
        "rosen2: generated {generated:?} != by hand {by_hand:?}"
    );
    let mut group = c.benchmark_group("rosen2");
    group.bench_function("generated", |b| {
        b.iter(|| rosen2_grad_generated(black_box(x), black_box(y)))
    });
    group.bench_function("by_hand", |b| {
        b.iter(|| rosen2_grad_by_hand(black_box(x), black_box(y)))
    });
    group.finish();
}

fn bench_rosen_nd(c: &mut Criterion) {
    let x = point();
    let generated = rosen_grad_generated(x);
    let by_hand = rosen_grad_by_hand(&x);
    let taped = rosen_grad_taped(&x);
    for i in 0..N {
        assert!(
            close(generated[i], by_hand[i]) && close(taped[i], by_hand[i]),
            "rosen[{i}]: generated {} / taped {} != by hand {}",
            generated[i],
            taped[i],
            by_hand[i]
        );
    }
    let mut group = c.benchmark_group("rosen100");
    group.bench_function("generated", |b| {
        b.iter(|| rosen_grad_generated(black_box(x)))
    });
    group.bench_function("by_hand", |b| b.iter(|| rosen_grad_by_hand(black_box(&x))));
    group.bench_function("by_hand_taped", |b| {
        b.iter(|| rosen_grad_taped(black_box(&x)))
    });
    group.finish();
}

criterion_group!(benches, bench_rosen2, bench_rosen_nd);
criterion_main!(benches);

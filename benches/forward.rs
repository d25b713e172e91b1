//! Forward mode against the primal: `f_jvp` (value and one directional derivative in one
//! pass) over the time of `f` itself, on
//!
//! * `rosenbrock`: the 100-D Rosenbrock function, a loop over a slice;
//! * `logistic`: 1,000 steps of the logistic map x ← r x (1 − x), a loop-carried scalar.
//!
//! The target of issue #40 is `jvp ≤ 1.3 × primal`. The gradient (`gradient(f_vjp(..))`) is
//! timed beside them for reference. Inputs go through `black_box`. Run with
//! `cargo bench --bench forward`.

use adjoint::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

const N: usize = 100;

#[differentiable(forward)]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

#[differentiable(forward)]
fn logistic(r: f64, x0: f64, steps: usize) -> f64 {
    let mut x = x0;
    for _ in 0..steps {
        x = r * x * (1.0 - x);
    }
    x
}

/// The directional derivative of [`rosenbrock`] written by hand, in the same loop: the floor
/// that the generated `rosenbrock_jvp` is compared with (the extra flops of the tangent).
#[inline(never)]
fn rosenbrock_jvp_by_hand(x: &[f64], v: &[f64]) -> (f64, f64) {
    let (mut s, mut t) = (0.0, 0.0);
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        let (ta, tb) = (-v[i], v[i + 1] - 2.0 * x[i] * v[i]);
        s += a * a + 100.0 * b * b;
        t += 2.0 * a * ta + 200.0 * b * tb;
    }
    (s, t)
}

fn rosenbrock_group(c: &mut Criterion) {
    let x: Vec<f64> = (0..N).map(|i| 0.01 * i as f64 - 0.4).collect();
    let v: Vec<f64> = (0..N).map(|i| ((i * 7 % 5) as f64) - 2.0).collect();
    let (_, t) = rosenbrock_jvp(&x, &v);
    let g: Vec<f64> = gradient(rosenbrock_vjp(&x));
    let dot: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
    assert!((t - dot).abs() <= 1e-9 * dot.abs().max(1.0), "{t} vs {dot}");
    assert!((rosenbrock_jvp_by_hand(&x, &v).1 - t).abs() <= 1e-9 * t.abs().max(1.0));
    let mut group = c.benchmark_group("forward/rosenbrock100");
    group.bench_function("primal", |b| b.iter(|| rosenbrock(black_box(&x))));
    group.bench_function("jvp", |b| {
        b.iter(|| rosenbrock_jvp(black_box(&x), black_box(&v)))
    });
    group.bench_function("jvp_by_hand", |b| {
        b.iter(|| rosenbrock_jvp_by_hand(black_box(&x), black_box(&v)))
    });
    group.bench_function("gradient", |b| {
        b.iter(|| -> Vec<f64> { gradient(rosenbrock_vjp(black_box(&x))) })
    });
    group.finish();
}

fn logistic_group(c: &mut Criterion) {
    let steps = 1000;
    let mut group = c.benchmark_group("forward/logistic1000");
    group.bench_function("primal", |b| {
        b.iter(|| logistic(black_box(3.7), black_box(0.3), black_box(steps)))
    });
    group.bench_function("jvp", |b| {
        b.iter(|| logistic_jvp(black_box(3.7), black_box(0.3), black_box(steps), 1.0, 0.0))
    });
    group.bench_function("gradient", |b| {
        b.iter(|| -> (f64, f64) {
            gradient(logistic_vjp(
                black_box(3.7),
                black_box(0.3),
                black_box(steps),
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, rosenbrock_group, logistic_group);
criterion_main!(benches);

//! Generated gradients of loopy code against hand-written reverse mode of the same code.
//!
//! * `logistic`: 1,000 iterations of the logistic map x ← r x (1 − x) from x₀, gradient of the
//!   final x with respect to (r, x₀): one `for` loop carrying an active scalar;
//! * `elman`: an Elman RNN over plain arrays, hidden 8, input 4, 20 steps,
//!   hₜ₊₁ = tanh(W hₜ + U xₜ + b), loss |h₂₀|², gradient with respect to (W, U, b): three nested
//!   loops with element reads and writes;
//! * `reduction`: Σ aᵢ bᵢ sin aᵢ over two `Vec`s of 1,000, written as
//!   `a.iter().zip(b.iter()).map(|(x, y)| x * y * x.sin()).sum()` and as the `for` loop over
//!   indices the macro makes of it; the gradient of each, and each one's forward pass alone.
//!
//! Each group times the generated `gradient(f_vjp(..))` against a hand-written reverse sweep of
//! the same loop (computing the value on the way, as the generated code does), the plain
//! function for scale, and (Elman) the generated forward pass alone, its pullback dropped.
//! Inputs go through `black_box` and criterion black-boxes the results. Before timing, each
//! group checks that both gradients agree. After each group, `<group>/paired` times the
//! generated and the hand-written gradient in alternation and prints the ratio of their
//! medians, the figure to quote on a machine whose speed drifts. Run with
//! `cargo bench --bench control_flow`.

// Index loops are the code under test.
#![allow(clippy::needless_range_loop)]

use adjoint::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

const ITERATIONS: usize = 1000;

#[differentiable]
fn logistic(r: f64, x0: f64) -> f64 {
    let mut x = x0;
    for _ in 0..ITERATIONS {
        x = r * x * (1.0 - x);
    }
    x
}

#[inline(never)]
fn logistic_grad_generated(r: f64, x0: f64) -> (f64, f64) {
    gradient(logistic_vjp(r, x0))
}

/// Reverse mode by hand: the forward sweep keeps every xₖ in one `Vec` (the map cannot be run
/// backwards), the backward sweep reads them in reverse: r̄ += x̄ xₖ(1 − xₖ),
/// x̄ ← x̄ r (1 − 2xₖ).
#[inline(never)]
fn logistic_grad_by_hand(r: f64, x0: f64) -> (f64, f64) {
    let mut xs = Vec::with_capacity(ITERATIONS);
    let mut x = x0;
    for _ in 0..ITERATIONS {
        xs.push(x);
        x = r * x * (1.0 - x);
    }
    black_box(x);
    let (mut dr, mut dx) = (0.0, 1.0);
    for &x in xs.iter().rev() {
        dr += dx * x * (1.0 - x);
        dx *= r * (1.0 - 2.0 * x);
    }
    (dr, dx)
}

/// The RNN, its hand-written gradient and the problem, shared with `tests/control_flow/rnn.rs`.
#[path = "../tests/common/elman.rs"]
mod elman;

use elman::{Inputs, Weights, elman, elman_vjp, rnn_problem};

#[inline(never)]
fn elman_grad_generated((w, u, b): &Weights, xs: &Inputs) -> Weights {
    gradient(elman_vjp(*w, *u, *b, xs))
}

/// Backpropagation through time by hand ([`elman::elman_by_hand`]), its loss black-boxed.
#[inline(never)]
fn elman_grad_by_hand(weights: &Weights, xs: &Inputs) -> Weights {
    let (loss, grad) = elman::elman_by_hand(weights, xs);
    black_box(loss);
    grad
}

/// Times `generated` and `by_hand` in alternation (101 rounds, each a batch of `batch` calls
/// of one then of the other) and prints the median time per call of each and their ratio.
/// Criterion measures one function after the other, and this machine's speed drifts by
/// ±20% within minutes: separate runs gave ratios up to 30% apart. Alternating in short
/// batches exposes both to the same drift.
fn paired(
    name: &str,
    [first, second]: [&str; 2],
    batch: u32,
    mut generated: impl FnMut(),
    mut by_hand: impl FnMut(),
) {
    let time = |f: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        for _ in 0..batch {
            f();
        }
        start.elapsed().as_secs_f64() * 1e9 / f64::from(batch)
    };
    let (mut g, mut h): (Vec<f64>, Vec<f64>) = (0..101)
        .map(|_| (time(&mut generated), time(&mut by_hand)))
        .unzip();
    g.sort_by(f64::total_cmp);
    h.sort_by(f64::total_cmp);
    println!(
        "{name}/paired: {first} {:.0} ns, {second} {:.0} ns, ratio {:.2} (medians of 101 alternating rounds of {batch} calls)",
        g[50],
        h[50],
        g[50] / h[50]
    );
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

fn bench_logistic(c: &mut Criterion) {
    // r = 2.8: the map contracts to the fixed point 1 − 1/r, so the gradient stays finite.
    let (r, x0) = (2.8, 0.3);
    let generated = logistic_grad_generated(r, x0);
    let by_hand = logistic_grad_by_hand(r, x0);
    assert!(
        close(generated.0, by_hand.0) && close(generated.1, by_hand.1),
        "logistic: generated {generated:?} != by hand {by_hand:?}"
    );
    let mut group = c.benchmark_group("logistic1000");
    group.bench_function("generated", |b| {
        b.iter(|| logistic_grad_generated(black_box(r), black_box(x0)))
    });
    group.bench_function("by_hand", |b| {
        b.iter(|| logistic_grad_by_hand(black_box(r), black_box(x0)))
    });
    group.bench_function("value_only", |b| {
        b.iter(|| logistic(black_box(r), black_box(x0)))
    });
    group.finish();
    paired(
        "logistic1000",
        ["generated", "by hand"],
        200,
        || {
            black_box(logistic_grad_generated(black_box(r), black_box(x0)));
        },
        || {
            black_box(logistic_grad_by_hand(black_box(r), black_box(x0)));
        },
    );
}

fn bench_elman(c: &mut Criterion) {
    let (weights, xs) = rnn_problem(7);
    let generated = elman_grad_generated(&weights, &xs);
    let by_hand = elman_grad_by_hand(&weights, &xs);
    let flat = |(w, u, b): &Weights| -> Vec<f64> {
        let mut v: Vec<f64> = w.iter().flatten().copied().collect();
        v.extend(u.iter().flatten());
        v.extend(b);
        v
    };
    for (i, (g, h)) in flat(&generated).iter().zip(flat(&by_hand)).enumerate() {
        assert!(close(*g, h), "elman[{i}]: generated {g} != by hand {h}");
    }
    let mut group = c.benchmark_group("elman_h8_t20");
    group.bench_function("generated", |b| {
        b.iter(|| elman_grad_generated(black_box(&weights), black_box(&xs)))
    });
    group.bench_function("by_hand", |b| {
        b.iter(|| elman_grad_by_hand(black_box(&weights), black_box(&xs)))
    });
    group.bench_function("value_only", |b| {
        b.iter(|| {
            let (w, u, bias) = black_box(&weights);
            elman(*w, *u, *bias, black_box(&xs))
        })
    });
    // The generated gradient's forward pass alone (its pullback dropped unused).
    group.bench_function("recorded_forward", |b| {
        b.iter(|| {
            let (w, u, bias) = black_box(&weights);
            elman_vjp(*w, *u, *bias, black_box(&xs)).0
        })
    });
    group.finish();
    paired(
        "elman_h8_t20",
        ["generated", "by hand"],
        200,
        || {
            black_box(elman_grad_generated(black_box(&weights), black_box(&xs)));
        },
        || {
            black_box(elman_grad_by_hand(black_box(&weights), black_box(&xs)));
        },
    );
}

const LEN: usize = 1000;

#[differentiable]
fn reduction_chained(a: Vec<f64>, b: Vec<f64>) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| x * y * x.sin()).sum()
}

#[differentiable]
fn reduction_loop(a: Vec<f64>, b: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len().min(b.len()) {
        s += a[i] * b[i] * a[i].sin();
    }
    s
}

fn bench_reduction(c: &mut Criterion) {
    let a: Vec<f64> = (0..LEN).map(|i| (i as f64 * 0.37).sin()).collect();
    let b: Vec<f64> = (0..LEN).map(|i| (i as f64 * 0.11).cos()).collect();
    let chained = gradient(reduction_chained_vjp(a.clone(), b.clone()));
    let looped = gradient(reduction_loop_vjp(a.clone(), b.clone()));
    for (g, h) in chained
        .0
        .iter()
        .zip(&looped.0)
        .chain(chained.1.iter().zip(&looped.1))
    {
        assert!(close(*g, *h), "reduction: chained {g} != loop {h}");
    }
    let mut group = c.benchmark_group("reduction_n1000");
    group.bench_function("chained", |bench| {
        bench.iter(|| {
            gradient(reduction_chained_vjp(
                black_box(a.clone()),
                black_box(b.clone()),
            ))
        })
    });
    group.bench_function("loop", |bench| {
        bench.iter(|| {
            gradient(reduction_loop_vjp(
                black_box(a.clone()),
                black_box(b.clone()),
            ))
        })
    });
    group.bench_function("chained_forward", |bench| {
        bench.iter(|| reduction_chained_vjp(black_box(a.clone()), black_box(b.clone())).0)
    });
    group.bench_function("loop_forward", |bench| {
        bench.iter(|| reduction_loop_vjp(black_box(a.clone()), black_box(b.clone())).0)
    });
    group.finish();
    paired(
        "reduction_n1000",
        ["chained", "loop"],
        200,
        || {
            black_box(gradient(reduction_chained_vjp(
                black_box(a.clone()),
                black_box(b.clone()),
            )));
        },
        || {
            black_box(gradient(reduction_loop_vjp(
                black_box(a.clone()),
                black_box(b.clone()),
            )));
        },
    );
}

criterion_group!(benches, bench_logistic, bench_elman, bench_reduction);
criterion_main!(benches);

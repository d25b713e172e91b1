//! Generated gradients of loopy code against hand-written reverse mode of the same code.
//!
//! * `logistic`: 1,000 iterations of the logistic map x ← r x (1 − x) from x₀, gradient of the
//!   final x with respect to (r, x₀): one `for` loop carrying an active scalar;
//! * `elman`: an Elman RNN over plain arrays, hidden 8, input 4, 20 steps,
//!   hₜ₊₁ = tanh(W hₜ + U xₜ + b), loss |h₂₀|², gradient with respect to (W, U, b): three nested
//!   loops with element reads and writes.
//!
//! Each group times the generated `gradient(f_vjp(..))` against a hand-written reverse sweep of
//! the same loop (computing the value on the way, as the generated code does), and the plain
//! function for scale. Inputs go through `black_box` and criterion black-boxes the results.
//! Before timing, each group checks that both gradients agree. Run with
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

const HIDDEN: usize = 8;
const INPUT: usize = 4;
const STEPS: usize = 20;

type Weights = (
    [[f64; HIDDEN]; HIDDEN],
    [[f64; INPUT]; HIDDEN],
    [f64; HIDDEN],
);
type Inputs = [[f64; INPUT]; STEPS];

#[differentiable(wrt(w, u, b))]
fn elman(
    w: [[f64; HIDDEN]; HIDDEN],
    u: [[f64; INPUT]; HIDDEN],
    b: [f64; HIDDEN],
    xs: &[[f64; INPUT]; STEPS],
) -> f64 {
    let mut h = [0.0; HIDDEN];
    for t in 0..STEPS {
        let mut next = [0.0; HIDDEN];
        for i in 0..HIDDEN {
            let mut s = b[i];
            for j in 0..HIDDEN {
                s += w[i][j] * h[j];
            }
            for k in 0..INPUT {
                s += u[i][k] * xs[t][k];
            }
            next[i] = s.tanh();
        }
        h = next;
    }
    let mut loss = 0.0;
    for i in 0..HIDDEN {
        loss += h[i] * h[i];
    }
    loss
}

#[inline(never)]
fn elman_grad_generated((w, u, b): &Weights, xs: &Inputs) -> Weights {
    gradient(elman_vjp(*w, *u, *b, xs))
}

/// Backpropagation through time by hand: the forward sweep keeps the 21 hidden states in a
/// stack array; then ȧₜ = ḣₜ₊₁ ⊙ (1 − hₜ₊₁²), W̄ += ȧₜ hₜᵀ, Ū += ȧₜ xₜᵀ, b̄ += ȧₜ, ḣₜ = Wᵀ ȧₜ.
#[inline(never)]
fn elman_grad_by_hand((w, u, b): &Weights, xs: &Inputs) -> Weights {
    let mut hs = [[0.0; HIDDEN]; STEPS + 1];
    for t in 0..STEPS {
        for i in 0..HIDDEN {
            let mut s = b[i];
            for j in 0..HIDDEN {
                s += w[i][j] * hs[t][j];
            }
            for k in 0..INPUT {
                s += u[i][k] * xs[t][k];
            }
            hs[t + 1][i] = s.tanh();
        }
    }
    let mut loss = 0.0;
    for i in 0..HIDDEN {
        loss += hs[STEPS][i] * hs[STEPS][i];
    }
    black_box(loss);
    let (mut dw, mut du, mut db) = (
        [[0.0; HIDDEN]; HIDDEN],
        [[0.0; INPUT]; HIDDEN],
        [0.0; HIDDEN],
    );
    let mut dh = hs[STEPS].map(|h| 2.0 * h);
    for t in (0..STEPS).rev() {
        let mut da = [0.0; HIDDEN];
        for i in 0..HIDDEN {
            da[i] = dh[i] * (1.0 - hs[t + 1][i] * hs[t + 1][i]);
        }
        let mut dprev = [0.0; HIDDEN];
        for i in 0..HIDDEN {
            for j in 0..HIDDEN {
                dw[i][j] += da[i] * hs[t][j];
                dprev[j] += w[i][j] * da[i];
            }
            for k in 0..INPUT {
                du[i][k] += da[i] * xs[t][k];
            }
            db[i] += da[i];
        }
        dh = dprev;
    }
    (dw, du, db)
}

/// Deterministic values in [−scale, scale) (a 64-bit LCG).
fn uniform(seed: &mut u64, scale: f64) -> f64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    scale * (2.0 * ((*seed >> 11) as f64 / (1u64 << 53) as f64) - 1.0)
}

fn rnn_problem(mut seed: u64) -> (Weights, Inputs) {
    let s = &mut seed;
    let w = std::array::from_fn(|_| std::array::from_fn(|_| uniform(s, 0.5)));
    let u = std::array::from_fn(|_| std::array::from_fn(|_| uniform(s, 0.5)));
    let b = std::array::from_fn(|_| uniform(s, 0.2));
    let xs = std::array::from_fn(|_| std::array::from_fn(|_| uniform(s, 1.0)));
    ((w, u, b), xs)
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
    group.finish();
}

criterion_group!(benches, bench_logistic, bench_elman);
criterion_main!(benches);

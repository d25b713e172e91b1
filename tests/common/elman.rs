//! The Elman RNN over plain arrays (hidden 8, input 4, 20 steps) that `tests/control_flow/`
//! checks (`rnn.rs`, `properties.rs`) and `benches/control_flow.rs` times, with its
//! backpropagation through time written by hand and a seeded problem; both include this file by
//! path, so that what is benchmarked is what is tested.

use adjoint::prelude::*;

pub const HIDDEN: usize = 8;
pub const INPUT: usize = 4;
pub const STEPS: usize = 20;

/// `(W, U, b)`: the parameters, and their gradient.
pub type Weights = (
    [[f64; HIDDEN]; HIDDEN],
    [[f64; INPUT]; HIDDEN],
    [f64; HIDDEN],
);
/// The inputs `x₀ … x₁₉`.
pub type Inputs = [[f64; INPUT]; STEPS];

/// hₜ₊₁ = tanh(W hₜ + U xₜ + b) from h₀ = 0 for 20 steps, loss = |h₂₀|².
#[differentiable(wrt(w, u, b))]
pub fn elman(
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

/// The loss and its gradient by backpropagation through time, written by hand: the forward
/// sweep keeps the 21 hidden states in a stack array; with aₜ = W hₜ + U xₜ + b, the adjoint
/// ḣ₂₀ = 2h₂₀, then for t = 19..0: ȧₜ = ḣₜ₊₁ ⊙ (1 − hₜ₊₁²), W̄ += ȧₜ hₜᵀ, Ū += ȧₜ xₜᵀ,
/// b̄ += ȧₜ, ḣₜ = Wᵀ ȧₜ.
pub fn elman_by_hand((w, u, b): &Weights, xs: &Inputs) -> (f64, Weights) {
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
    (loss, (dw, du, db))
}

/// Deterministic values in [−scale, scale) (a 64-bit LCG).
fn uniform(seed: &mut u64, scale: f64) -> f64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    scale * (2.0 * ((*seed >> 11) as f64 / (1u64 << 53) as f64) - 1.0)
}

/// Seeded weights in ±0.5 (b in ±0.2) and inputs in ±1.
pub fn rnn_problem(mut seed: u64) -> (Weights, Inputs) {
    let s = &mut seed;
    let w = std::array::from_fn(|_| std::array::from_fn(|_| uniform(s, 0.5)));
    let u = std::array::from_fn(|_| std::array::from_fn(|_| uniform(s, 0.5)));
    let b = std::array::from_fn(|_| uniform(s, 0.2));
    let xs = std::array::from_fn(|_| std::array::from_fn(|_| uniform(s, 1.0)));
    ((w, u, b), xs)
}

//! An Elman RNN over plain arrays and over `Vec`s.

use crate::common::{assert_close, check_gradient, padded};
use crate::elman::{HIDDEN, INPUT, elman, elman_by_hand, elman_vjp, rnn_problem};
use adjoint::prelude::*;

/// The same RNN over row-major `&[f64]` weights, the state rebuilt by `push` every step.
#[differentiable(wrt(w, u, b))]
fn elman_vec(w: &[f64], u: &[f64], b: &[f64], xs: &[Vec<f64>]) -> f64 {
    let mut h = vec![0.0; HIDDEN];
    for t in 0..xs.len() {
        let mut next = Vec::new();
        for i in 0..HIDDEN {
            let mut s = b[i];
            for j in 0..HIDDEN {
                s += w[i * HIDDEN + j] * h[j];
            }
            for k in 0..INPUT {
                s += u[i * INPUT + k] * xs[t][k];
            }
            next.push(s.tanh());
        }
        h = next;
    }
    let mut loss = 0.0;
    for i in 0..HIDDEN {
        loss += h[i] * h[i];
    }
    loss
}

#[test]
fn elman_rnn() {
    let ((w, u, b), xs) = rnn_problem(7);
    let (loss, pullback) = elman_vjp(w, u, b, &xs);
    assert_eq!(loss, elman(w, u, b, &xs));
    assert!(loss > 0.1, "a loss of {loss} would make the check weak");
    let got = pullback(1.0);
    let (by_hand_loss, by_hand) = elman_by_hand(&(w, u, b), &xs);
    assert_close("elman loss", loss, by_hand_loss);
    assert_close("elman", got, by_hand);
    // All 104 coordinates against finite differences.
    check_gradient("elman", |(w, u, b)| elman(w, u, b, &xs), (w, u, b), got);

    // The `Vec` version computes the same loss and gradient.
    let flat_w: Vec<f64> = w.iter().flatten().copied().collect();
    let flat_u: Vec<f64> = u.iter().flatten().copied().collect();
    let xs_vec: Vec<Vec<f64>> = xs.iter().map(|x| x.to_vec()).collect();
    let (loss_vec, pullback) = elman_vec_vjp(&flat_w, &flat_u, &b, &xs_vec);
    assert_close("elman_vec loss", loss_vec, loss);
    let (dw, du, db) = pullback(1.0);
    let (dw, du) = (
        padded::<{ HIDDEN * HIDDEN }>(&dw),
        padded::<{ HIDDEN * INPUT }>(&du),
    );
    let dw: [[f64; HIDDEN]; HIDDEN] =
        std::array::from_fn(|i| std::array::from_fn(|j| dw[i * HIDDEN + j]));
    let du: [[f64; INPUT]; HIDDEN] =
        std::array::from_fn(|i| std::array::from_fn(|k| du[i * INPUT + k]));
    assert_close("elman_vec", (dw, du, padded::<HIDDEN>(&db)), got);
}

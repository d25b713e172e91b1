//! Branches inside loops and loops inside branches.

use crate::common::check;
use adjoint::prelude::*;

/// Leaky ReLU summed over an array: ∂xᵢ = 1 (xᵢ > 0) or 0.01.
#[differentiable]
pub(crate) fn leaky_sum(x: [f64; 5]) -> f64 {
    let mut s = 0.0;
    for i in 0..5 {
        if x[i] > 0.0 {
            s += x[i];
        } else {
            s += 0.01 * x[i];
        }
    }
    s
}

/// A data branch in the loop: acc ← acc·x (k even) or acc + x (k odd), from 1, n = 5 times:
/// x, 2x, 2x², 2x² + x, 2x³ + x²; d/dx = 6x² + 2x.
#[differentiable]
fn parity_loop(x: f64, n: usize) -> f64 {
    let mut acc = 1.0;
    for k in 0..n {
        if k % 2 == 0 {
            acc = acc * x;
        } else {
            acc = acc + x;
        }
    }
    acc
}

/// An active branch in the loop (a tent-like map): y ← y/2 (y > 1) or 3y, 8 times;
/// y = x·Π fₖ with each factor fₖ ∈ {½, 3} fixed near x, so d/dx = Π fₖ = y/x.
#[differentiable]
pub(crate) fn tent_iter(x: f64) -> f64 {
    let mut y = x;
    for _ in 0..8 {
        if y > 1.0 {
            y = y / 2.0;
        } else {
            y = 3.0 * y;
        }
    }
    y
}

/// `match` in the loop on k mod 3: s += x, s += x², s −= sin x;
/// d/dx = c₀ + 2x c₁ − c₂ cos x with cᵣ = #{k < n : k mod 3 = r}.
#[differentiable]
fn match_in_loop(x: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for k in 0..n {
        match k % 3 {
            0 => s += x,
            1 => s += x * x,
            _ => s -= x.sin(),
        }
    }
    s
}

/// Loops inside the arms: flag → Π_{k<n} (x + k), d/dx = Σᵢ Π_{j≠i} (x + j);
/// else a `while` summing x/(k + 1), d/dx = Hₙ = Σ_{k=1..n} 1/k.
#[differentiable]
fn loop_in_branch(x: f64, n: usize, flag: bool) -> f64 {
    if flag {
        let mut p = 1.0;
        for k in 0..n {
            p = p * (x + k as f64);
        }
        p
    } else {
        let mut s = 0.0;
        let mut k = 0;
        while k < n {
            s += x / (k + 1) as f64;
            k += 1;
        }
        s
    }
}

/// Arg-max kept in two carried variables (one active, one data): (i* + 1)·max x,
/// ∂x = (i* + 1) e_{i*}.
#[differentiable]
fn argmax_scaled(x: [f64; 5]) -> f64 {
    let mut best = x[0];
    let mut idx = 0;
    for i in 1..5 {
        if x[i] > best {
            best = x[i];
            idx = i;
        }
    }
    best * (idx + 1) as f64
}

/// An active branch inside a `while` with an active condition: y ← y² + 1 (y < 2) or 1.5y
/// until y ≥ 20; d/dx = Π (2yₖ or 1.5) over the steps taken.
#[differentiable]
pub(crate) fn while_branch(x: f64) -> f64 {
    let mut y = x;
    while y < 20.0 {
        if y < 2.0 {
            y = y * y + 1.0;
        } else {
            y = 1.5 * y;
        }
    }
    y
}

#[test]
fn branches_and_loops_mixed() {
    check!(leaky_sum, leaky_sum_vjp; [1.0, -2.0, 0.5, -0.1, 3.0] => [1.0, 0.01, 1.0, 0.01, 1.0]);
    let x = 1.3_f64;
    check!(|x| parity_loop(x, 5), |x| parity_loop_vjp(x, 5); x => 6.0 * x * x + 2.0 * x);

    for x in [0.37_f64, 1.9, 2.6] {
        let mut y = x;
        for _ in 0..8 {
            y = if y > 1.0 { y / 2.0 } else { 3.0 * y };
        }
        check!(tent_iter, tent_iter_vjp; x => y / x);
    }

    let x = 0.7_f64;
    check!(
        |x| match_in_loop(x, 7),
        |x| match_in_loop_vjp(x, 7);
        x => 3.0 + 4.0 * x - 2.0 * x.cos()
    );

    let x = 0.5_f64;
    let want = (x + 1.0) * (x + 2.0) + x * (x + 2.0) + x * (x + 1.0);
    check!(|x| loop_in_branch(x, 3, true), |x| loop_in_branch_vjp(x, 3, true); x => want);
    check!(
        |x| loop_in_branch(x, 3, false),
        |x| loop_in_branch_vjp(x, 3, false);
        x => 1.0 + 0.5 + 1.0 / 3.0
    );

    check!(
        argmax_scaled,
        argmax_scaled_vjp;
        [0.5, 2.0, -1.0, 1.5, 1.9] => [0.0, 2.0, 0.0, 0.0, 0.0]
    );
    check!(
        argmax_scaled,
        argmax_scaled_vjp;
        [0.5, 0.0, -1.0, 1.5, 1.9] => [0.0, 0.0, 0.0, 0.0, 5.0]
    );

    for x in [0.5_f64, 1.2, 3.0] {
        let (mut y, mut d) = (x, 1.0);
        while y < 20.0 {
            (y, d) = if y < 2.0 {
                (y * y + 1.0, d * 2.0 * y)
            } else {
                (1.5 * y, 1.5 * d)
            };
        }
        check!(while_branch, while_branch_vjp; x => d);
    }
}

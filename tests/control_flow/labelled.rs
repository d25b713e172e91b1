//! Labelled loops: `break 'outer` and `continue 'outer` from nested loops, over active values.
//! Normalization gives each labelled loop a flag per exit named after its label; the loops
//! inside set them and the rest of each body runs only if none is set.

use crate::common::check;
use adjoint::prelude::*;

/// y ← y·x in a double loop left entirely when y > 10: y = x^k for the first k with
/// xᵏ > 10 (or k = n·n), so dy/dx = k x^{k−1}.
#[differentiable]
fn first_power_above(x: f64, n: usize) -> f64 {
    let mut y = x;
    'outer: for _ in 0..n {
        for _ in 0..n {
            y = y * x;
            if y > 10.0 {
                break 'outer;
            }
        }
    }
    y
}

/// Σ over rows i of the entries x·(j + 1) up to the first j with j ≥ i (`continue 'rows`
/// leaves the row): Σᵢ Σ_{j<i} (j + 1) x, plus a term after each row that `continue` skips
/// only when taken: the rows with i = 0 never reach it.
#[differentiable]
fn triangle_rows(x: f64, n: usize) -> f64 {
    let mut s = 0.0;
    'rows: for i in 0..n {
        for j in 0..n {
            if j >= i {
                continue 'rows;
            }
            s += x * (j as f64 + 1.0);
        }
        s += x * x;
    }
    s
}

/// Three levels: `break 'outer` from the innermost, `continue 'middle` from the innermost,
/// and work after each inner loop that the exits skip.
#[differentiable]
fn three_levels(x: f64) -> f64 {
    let mut s = 0.0;
    'outer: for a in 0..4 {
        'middle: for b in 0..4 {
            for c in 0..4 {
                if a + b + c == 7 {
                    break 'outer;
                }
                if c > b {
                    continue 'middle;
                }
                s += x * (c as f64 + 1.0);
            }
            s += x.sin();
        }
        s = s * x;
    }
    s
}

/// The same as `three_levels`, with the exits written by hand as flags (no labels), generic
/// so that dual numbers give its exact derivative: the reference the labelled version must
/// agree with, value and gradient.
fn three_levels_by_hand<T: Float>(x: T) -> T {
    let mut s = T::ZERO;
    let mut done = false;
    for a in 0..4 {
        for b in 0..4 {
            let mut next_b = false;
            for c in 0..4 {
                if a + b + c == 7 {
                    done = true;
                    break;
                }
                if c > b {
                    next_b = true;
                    break;
                }
                s = s + x * T::from_f64(c as f64 + 1.0);
            }
            if done {
                break;
            }
            if !next_b {
                s = s + x.sin();
            }
        }
        if done {
            break;
        }
        s = s * x;
    }
    s
}

/// A labelled `loop` left from a `while` inside it: y ← y·x + 1 up to 3 times per pass, the
/// passes ending when y > 5 (`break 'search`). From y₀ = x = 1.2 the steps give x² + 1 = 2.44,
/// x³ + x + 1 = 3.928 and x⁴ + x² + x + 1 = 5.7136 > 5, still in the first pass: dy/dx =
/// 4x³ + 2x + 1.
#[differentiable]
fn labelled_loop(x: f64) -> f64 {
    let mut y = x;
    'search: loop {
        let mut k = 0;
        while k < 3 {
            y = y * x + 1.0;
            if y > 5.0 {
                break 'search;
            }
            k += 1;
        }
    }
    y
}

#[test]
fn labelled_exits() {
    check!(labelled_loop, labelled_loop_vjp; 1.2 => 4.0 * 1.2f64.powi(3) + 2.0 * 1.2 + 1.0);
    // x = 1.5: 1.5⁶ = 11.39 > 10 is the first power above 10, k = 6.
    check!(|x| first_power_above(x, 3), |x| first_power_above_vjp(x, 3); 1.5 => 6.0 * 1.5f64.powi(5));
    // n = 4 loop bound never reached: k = 6 ≤ 16. With n = 2 the loops end first: k = 1 + 4.
    check!(|x| first_power_above(x, 2), |x| first_power_above_vjp(x, 2); 1.5 => 5.0 * 1.5f64.powi(4));
    // n = 4: Σᵢ Σ_{j<i} (j + 1) = 0 + 1 + 3 + 6 = 10; every row takes `continue 'rows` at
    // j = i (j = i < 4 always exists), so `s += x·x` never runs: ds/dx = 10.
    check!(|x| triangle_rows(x, 4), |x| triangle_rows_vjp(x, 4); 0.7 => 10.0);
    let x = 0.8;
    assert_eq!(three_levels(x), three_levels_by_hand(x));
    let exact = three_levels_by_hand(Dual::variable(x)).eps;
    check!(three_levels, three_levels_vjp; x => exact);
}

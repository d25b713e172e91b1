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

/// A labelled block left early: y = x^(n+1), doubled unless it passed 10 (`break 'block`).
#[differentiable]
fn labelled_block(x: f64, n: usize) -> f64 {
    let mut y = x;
    'block: {
        for _ in 0..n {
            y = y * x;
        }
        if y > 10.0 {
            break 'block;
        }
        y = y * 2.0;
    }
    y
}

/// A labelled block inside a loop, left from a loop inside it (`break 'found`): for i < 3,
/// the powers x², …, x^(i+1) until one passes 2, which is added (`break 'found`); when none
/// does, the last power and x are added.
#[differentiable]
fn block_left_from_loop(x: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        'found: {
            let mut p = x;
            for _ in 0..i {
                p = p * x;
                if p > 2.0 {
                    s += p;
                    break 'found;
                }
            }
            s += p + x;
        }
    }
    s
}

/// A `continue 'rows` from inside a labelled block in loop `'rows`, and a `break 'b` of the
/// block: for i < 4, i = 1 is skipped entirely, i = 3 leaves the block before `s *= x`, and
/// each row but i = 1 ends with `s += x`.
#[differentiable]
fn continue_from_block(x: f64) -> f64 {
    let mut s = x;
    'rows: for i in 0..4 {
        'b: {
            if i == 1 {
                continue 'rows;
            }
            if i == 3 {
                break 'b;
            }
            s *= x;
        }
        s += x;
    }
    s
}

/// `block_left_from_loop` by hand, generic for its exact derivative by dual numbers.
fn block_left_from_loop_by_hand<T: Float>(x: T) -> T {
    let mut s = T::ZERO;
    for i in 0..3 {
        let mut p = x;
        let mut found = false;
        for _ in 0..i {
            p = p * x;
            if p.to_f64() > 2.0 {
                s = s + p;
                found = true;
                break;
            }
        }
        if !found {
            s = s + p + x;
        }
    }
    s
}

#[test]
fn labelled_blocks() {
    // x = 1.5, n = 3: y = x⁴ = 5.06 ≤ 10, doubled: dy/dx = 8x³. n = 5: x⁶ = 11.4 > 10: 6x⁵.
    check!(|x| labelled_block(x, 3), |x| labelled_block_vjp(x, 3); 1.5 => 8.0 * 1.5f64.powi(3));
    check!(|x| labelled_block(x, 5), |x| labelled_block_vjp(x, 5); 1.5 => 6.0 * 1.5f64.powi(5));
    // x = 1.3: i = 0 gives p + x = 2x; i = 1: x² = 1.69, then + x; i = 2: x³ = 2.197 > 2 at the
    // second step, found. s = 2x + x² + x + x³: ds/dx = 3 + 2x + 3x² = 10.67.
    let x = 1.3;
    assert_eq!(block_left_from_loop(x), block_left_from_loop_by_hand(x));
    let exact = block_left_from_loop_by_hand(Dual::variable(x)).eps;
    assert!((exact - (3.0 + 2.0 * x + 3.0 * x * x)).abs() < 1e-12);
    check!(block_left_from_loop, block_left_from_loop_vjp; x => exact);
    // s₀ = x; i = 0: x² + x; i = 1 skipped; i = 2: x³ + x² + x; i = 3: x³ + x² + 2x.
    // ds/dx = 3x² + 2x + 2.
    check!(continue_from_block, continue_from_block_vjp; x => 3.0 * x * x + 2.0 * x + 2.0);
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

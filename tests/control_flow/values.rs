//! Exits with a value over active values: `loop { .. break v }`, `break 'outer v` from a loop
//! inside, `break v` as a `match` arm, and labelled blocks left with `break 'b v`.

use crate::common::check;
use adjoint::prelude::*;

/// y ← y·x until y > 3, then the loop's value y + x. From x = 1.5: x², x³ = 3.375 > 3, so
/// r = x³ + x and dr/dx = 3x² + 1.
#[differentiable]
fn loop_value(x: f64) -> f64 {
    let mut y = x;
    let r = loop {
        y = y * x;
        if y > 3.0 {
            break y + x;
        }
    };
    r * 1.0
}

/// `break 'outer y` from a `for` inside a labelled `loop`, with work after the inner loop
/// (y += 1) that runs on passes the break did not end. The reference is the same loop with
/// `return` ([`break_outer_value_by_hand`]), generic so that dual numbers give its exact
/// derivative.
#[differentiable]
fn break_outer_value(x: f64, n: usize) -> f64 {
    let mut y = x;
    'outer: loop {
        for _ in 0..n {
            y = y * x;
            if y > 5.0 {
                break 'outer y * 2.0;
            }
        }
        y += 1.0;
    }
}

/// `break_outer_value` with `return` for `break 'outer`.
fn break_outer_value_by_hand<T: Float>(x: T, n: usize) -> T {
    let mut y = x;
    loop {
        for _ in 0..n {
            y = y * x;
            if y.to_f64() > 5.0 {
                return y * T::from_f64(2.0);
            }
        }
        y = y + T::ONE;
    }
}

/// `break v` as a `match` arm: s ← s·x three times, then the value 2s: 2x⁴, dr/dx = 8x³.
#[allow(clippy::single_match)] // the `match` arm is the construct under test
#[differentiable]
fn match_arm_value(x: f64) -> f64 {
    let mut s = x;
    let mut k = 0;
    loop {
        k += 1;
        s = s * x;
        match k {
            3 => break s * 2.0,
            _ => {}
        }
    }
}

/// A labelled block with a value: x² when x > 1 (`break 'b`), else 3x.
#[differentiable]
fn block_value(x: f64) -> f64 {
    let y = 'b: {
        if x > 1.0 {
            break 'b x * x;
        }
        x * 3.0
    };
    y + 1.0
}

#[test]
fn loops_with_values() {
    check!(loop_value, loop_value_vjp; 1.5 => 3.0 * 1.5 * 1.5 + 1.0);
    for (x, n) in [(1.2, 2), (1.3, 3), (2.5, 1)] {
        assert_eq!(break_outer_value(x, n), break_outer_value_by_hand(x, n));
        let exact = break_outer_value_by_hand(Dual::variable(x), n).eps;
        check!(|x| break_outer_value(x, n), |x| break_outer_value_vjp(x, n); x => exact);
    }
    check!(match_arm_value, match_arm_value_vjp; 0.9 => 8.0 * 0.9f64.powi(3));
}

#[test]
fn blocks_with_values() {
    check!(block_value, block_value_vjp; 1.5 => 3.0);
    check!(block_value, block_value_vjp; 0.5 => 3.0);
    check!(block_value, block_value_vjp; 1.7 => 3.4);
}

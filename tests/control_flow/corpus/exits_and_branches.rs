//! Early returns, `if`/`else if` chains and `match`.

use crate::common::{check, check_vec};
use adjoint::prelude::*;

// ---------------------------------------------------------------------------------------------
// Early returns.

/// y ← y·x up to m times, returning y − 1 from inside the loop as soon as y > 3: f = xᵏ − 1
/// for the first k ≥ 2 with xᵏ > 3 (f' = k xᵏ⁻¹), or x^(m+1) if none (f' = (m + 1) xᵐ).
#[differentiable]
fn return_from_for(x: f64, m: usize) -> f64 {
    let mut y = x;
    for _ in 0..m {
        y *= x;
        if y > 3.0 {
            return y - 1.0;
        }
    }
    y
}

/// Guard clauses: 0 for x ≤ 0 (f' = 0), 2 + (x − 4)/4 for x > 4 (f' = 1/4), else √x
/// (f' = 1/(2√x)).
#[differentiable]
fn guarded_sqrt(x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x > 4.0 {
        return 2.0 + (x - 4.0) / 4.0;
    }
    x.sqrt()
}

/// The square of the first element above 1, returned from a loop over `.iter()`; v₀v₁ when
/// none is: ∂vₖ = 2vₖ at that element only, else (v₁, v₀, 0, …).
#[differentiable]
fn first_above_one(v: Vec<f64>) -> f64 {
    for x in v.iter() {
        if *x > 1.0 {
            return *x * *x;
        }
    }
    v[0] * v[1]
}

/// y ← y·x + 1 from y = 1 while y < 50, returning 2y from the third step: for x = 5 the
/// third step runs, f = 2(x³ + x² + x + 1), f' = 2(3x² + 2x + 1); for x = 10 the loop ends
/// after two, f = x² + x + 1, f' = 2x + 1.
#[differentiable]
fn return_from_while(x: f64) -> f64 {
    let mut y = 1.0;
    let mut n = 0;
    while y < 50.0 {
        y = y * x + 1.0;
        n += 1;
        if n == 3 {
            return y * 2.0;
        }
    }
    y
}

/// `return` from a `match` arm: k = 0 → eˣ (f' = eˣ); k = 1 → 3x² (f' = 6x); else
/// 3 sin x (f' = 3 cos x).
#[differentiable]
fn match_return(x: f64, k: u8) -> f64 {
    let mut y = x;
    match k {
        0 => return x.exp(),
        1 => y *= x,
        _ => y = y.sin(),
    }
    y * 3.0
}

#[test]
fn early_returns() {
    let x = 1.3_f64;
    // 1.3² = 1.69, 1.3³ = 2.197, 1.3⁴ = 2.8561, 1.3⁵ = 3.71 > 3: k = 5.
    check!(|x| return_from_for(x, 10), |x| return_from_for_vjp(x, 10); x => 5.0 * x.powi(4));
    check!(|x| return_from_for(x, 2), |x| return_from_for_vjp(x, 2); x => 3.0 * x * x);
    check!(guarded_sqrt, guarded_sqrt_vjp; -1.0 => 0.0);
    check!(guarded_sqrt, guarded_sqrt_vjp; 2.0 => 0.5 / 2.0f64.sqrt());
    check!(guarded_sqrt, guarded_sqrt_vjp; 9.0 => 0.25);
    let v = [0.5, -0.3, 1.5, 2.0];
    let got = gradient(first_above_one_vjp(v.to_vec()));
    check_vec(
        "first_above_one",
        first_above_one,
        v,
        &got,
        [0.0, 0.0, 3.0, 0.0],
    );
    let w = [0.5, -0.3, 0.7];
    let got = gradient(first_above_one_vjp(w.to_vec()));
    check_vec(
        "first_above_one",
        first_above_one,
        w,
        &got,
        [-0.3, 0.5, 0.0],
    );
    check!(return_from_while, return_from_while_vjp; 5.0 => 2.0 * (75.0 + 10.0 + 1.0));
    check!(return_from_while, return_from_while_vjp; 10.0 => 21.0);
    let x = 0.6_f64;
    check!(|x| match_return(x, 0), |x| match_return_vjp(x, 0); x => x.exp());
    check!(|x| match_return(x, 1), |x| match_return_vjp(x, 1); x => 6.0 * x);
    check!(|x| match_return(x, 2), |x| match_return_vjp(x, 2); x => 3.0 * x.cos());
}

// ---------------------------------------------------------------------------------------------
// Branches: `if`/`else if` chains and `match` on integers, ranges, guards and tuples.

/// A piecewise function: −2x − 1 below −1 (f' = −2), x² below 1 (2x), 2x − 1 below 3 (2),
/// e^(x−3) + 5 above (e^(x−3)).
#[differentiable]
fn piecewise(x: f64) -> f64 {
    if x < -1.0 {
        -2.0 * x - 1.0
    } else if x < 1.0 {
        x * x
    } else if x < 3.0 {
        2.0 * x - 1.0
    } else {
        (x - 3.0).exp() + 5.0
    }
}

/// `match` on an integer with `|` and a range: 1 (f' = 0), x (1), xⁿ for n = 2, 3
/// (n xⁿ⁻¹), x^(n − ½) for n in 4..=6 ((n − ½) x^(n − 3/2)), eˣ otherwise (eˣ).
#[differentiable]
fn by_degree(x: f64, n: u32) -> f64 {
    match n {
        0 => 1.0,
        1 => x,
        2 | 3 => x.powi(n as i32),
        4..=6 => x.powf(n as f64 - 0.5),
        _ => x.exp(),
    }
}

/// `match` on a tuple of signs: xy (∇ = (y, x)), y − x (∇ = (−1, 1)), √(x² + y²)
/// (∇ = (x, y)/r), −(x + y) (∇ = (−1, −1)).
#[differentiable]
fn quadrant(x: f64, y: f64) -> f64 {
    match (x >= 0.0, y >= 0.0) {
        (true, true) => x * y,
        (false, true) => y - x,
        (true, false) => x.hypot(y),
        (false, false) => -(x + y),
    }
}

/// A negative-integer range pattern and a catch-all: k ≤ −1 → x/|k| (f' = 1/|k|), 0 → 0
/// (f' = 0), 1..=9 → k sin x (k cos x), else ln x (1/x).
#[differentiable]
fn by_range(x: f64, k: i32) -> f64 {
    match k {
        i32::MIN..=-1 => x / f64::from(-k),
        0 => 0.0,
        1..=9 => f64::from(k) * x.sin(),
        _ => x.ln(),
    }
}

#[test]
fn branches_and_matches() {
    check!(piecewise, piecewise_vjp; -2.0 => -2.0);
    check!(piecewise, piecewise_vjp; 0.4 => 0.8);
    check!(piecewise, piecewise_vjp; 2.0 => 2.0);
    check!(piecewise, piecewise_vjp; 3.5 => 0.5f64.exp());
    let x = 1.4_f64;
    for (n, want) in [
        (0, 0.0),
        (1, 1.0),
        (2, 2.0 * x),
        (3, 3.0 * x * x),
        (5, 4.5 * x.powf(3.5)),
        (8, x.exp()),
    ] {
        check!(|x| by_degree(x, n), |x| by_degree_vjp(x, n); x => want);
    }
    let (a, b) = (0.6_f64, 0.8_f64);
    check!(quadrant, quadrant_vjp; a, b => (b, a));
    check!(quadrant, quadrant_vjp; -a, b => (-1.0, 1.0));
    check!(quadrant, quadrant_vjp; a, -b => (a, -b));
    check!(quadrant, quadrant_vjp; -a, -b => (-1.0, -1.0));
    for (k, want) in [(-4, 0.25), (0, 0.0), (3, 3.0 * x.cos()), (12, 1.0 / x)] {
        check!(|x| by_range(x, k), |x| by_range_vjp(x, k); x => want);
    }
}

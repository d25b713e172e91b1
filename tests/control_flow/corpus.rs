//! A corpus of ordinary Rust functions in everyday style that `#[differentiable]` must take as
//! written: early `return`, `if`/`else if` chains and `match`, `for` over ranges and iterator
//! chains, `while` with active conditions, `loop` with `break value`, labelled loops and
//! blocks, reductions, closures, `Vec` and array writes, tuples, structs, `std::mem::swap`,
//! float methods, `f32`, generic `Float` code, recursion, helper functions, compound
//! assignments and `without_derivative`.
//!
//! Every gradient is compared with an exact value (a closed form in the doc comment, or the
//! dual-number derivative of the same generic code) and with central finite differences.

use crate::common::{assert_close, assert_close_f32, check, check_gradient, check_vec, check_vjp};
use adjoint::prelude::*;

/// The exact gradient of a function of `N` scalars by dual numbers, one coordinate at a time:
/// coordinate `i` is the `eps` part of `f` at the point with `eps = 1` on input `i` only.
fn dual_gradient<const N: usize>(
    f: impl Fn([Dual<f64>; N]) -> Dual<f64>,
    at: [f64; N],
) -> [f64; N] {
    std::array::from_fn(|i| {
        let point = std::array::from_fn(|j| {
            if i == j {
                Dual::variable(at[j])
            } else {
                Dual::constant(at[j])
            }
        });
        f(point).eps
    })
}

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

// ---------------------------------------------------------------------------------------------
// `for` over ranges and iterator chains, `while` and `loop`.

/// Σ_{k=1..n} xᵏ/k by a running power: f' = Σ_{k=1..n} xᵏ⁻¹.
#[differentiable]
fn log_series(x: f64, n: usize) -> f64 {
    let mut p = 1.0;
    let mut s = 0.0;
    for k in 1..=n {
        p *= x;
        s += p / k as f64;
    }
    s
}

/// The mean weighted by position over `.iter().enumerate()`: Σ (i + 1) vᵢ / Σ (i + 1);
/// ∂vᵢ = (i + 1) / Σ (j + 1).
#[differentiable]
fn weighted_mean(v: Vec<f64>) -> f64 {
    let mut num = 0.0;
    let mut den = 0.0;
    for (i, x) in v.iter().enumerate() {
        let w = (i + 1) as f64;
        num += w * x;
        den += w;
    }
    num / den
}

/// A discounted return over `.iter().rev()`: r = Σ gⁱ vᵢ; ∂vᵢ = gⁱ, ∂g = Σ i gⁱ⁻¹ vᵢ.
#[differentiable]
fn discounted(v: [f64; 4], g: f64) -> f64 {
    let mut r = 0.0;
    for x in v.iter().rev() {
        r = x + g * r;
    }
    r
}

/// The distance over `.iter().zip(..)`: ‖a − b‖; ∂a = (a − b)/‖a − b‖ = −∂b.
#[differentiable]
fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for (p, q) in a.iter().zip(b.iter()) {
        let d = p - q;
        s += d * d;
    }
    s.sqrt()
}

/// `skip(1).take(3)` then every second index by `step_by(2)`: Σ_{i=1..3} e^{vᵢ} + Σ_{i even}
/// vᵢ²; ∂vᵢ = e^{vᵢ}[1 ≤ i ≤ 3] + 2vᵢ[i even].
#[differentiable]
fn window_sums(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for x in v.iter().skip(1).take(3) {
        s += x.exp();
    }
    for i in (0..v.len()).step_by(2) {
        s += v[i] * v[i];
    }
    s
}

/// Doubling while below 10 (an active condition): y = 2ᴷx for the first K with 2ᴷx ≥ 10,
/// f' = 2ᴷ.
#[differentiable]
fn double_until(x: f64) -> f64 {
    let mut y = x;
    while y < 10.0 {
        y *= 2.0;
    }
    y
}

/// Newton's iteration for √a from y = a until |y² − a| ≤ 10⁻¹² a, generic so that dual
/// numbers give the derivative of the iteration itself (≈ 1/(2√a)).
#[differentiable]
fn newton_sqrt<T: Float>(a: T) -> T {
    let mut y = a;
    while (y * y - a).abs() > T::from_f64(1e-12) * a {
        y = T::from_f64(0.5) * (y + a / y);
    }
    y
}

/// A balance growing by the rate x each year until it doubles, `break` with the excess:
/// (1 + x)ᴷ − 2 for the first K with (1 + x)ᴷ ≥ 2; f' = K (1 + x)ᴷ⁻¹.
#[differentiable]
fn excess_after_doubling(x: f64) -> f64 {
    let mut b = 1.0;
    let excess = loop {
        b *= 1.0 + x;
        if b >= 2.0 {
            break b - 2.0;
        }
    };
    excess * 10.0
}

/// Five steps of gradient descent on (x − 3)² from x₀ with rate r: xₙ = 3 + (x₀ − 3)(1 − 2r)ⁿ;
/// ∂x₀ = (1 − 2r)⁵, ∂r = −10 (x₀ − 3)(1 − 2r)⁴.
#[differentiable]
fn descend(x0: f64, rate: f64) -> f64 {
    let mut x = x0;
    for _ in 0..5 {
        let grad = 2.0 * (x - 3.0);
        x -= rate * grad;
    }
    x
}

/// The trapezoidal rule for ∫₀ˣ t² dt with 4 panels: x³/3 + x³/(6·4²); f' = x²(1 + 1/32).
#[differentiable]
fn trapezoid(x: f64) -> f64 {
    let n = 4;
    let h = x / n as f64;
    let mut s = 0.0;
    for i in 0..=n {
        let t = h * i as f64;
        let w = if i == 0 || i == n { 0.5 } else { 1.0 };
        s += w * t * t;
    }
    s * h
}

#[test]
fn loops() {
    let x = 0.7_f64;
    let want: f64 = (1..=5).map(|k| x.powi(k - 1)).sum();
    check!(|x| log_series(x, 5), |x| log_series_vjp(x, 5); x => want);
    let v = [0.5, -1.5, 2.0, 0.25];
    let got = gradient(weighted_mean_vjp(v.to_vec()));
    check_vec(
        "weighted_mean",
        weighted_mean,
        v,
        &got,
        [0.1, 0.2, 0.3, 0.4],
    );
    let g = 0.9_f64;
    let dg: f64 = (1..4)
        .map(|i| i as f64 * g.powi(i - 1) * v[i as usize])
        .sum();
    check!(discounted, discounted_vjp; v, g => ([1.0, g, g * g, g * g * g], dg));
    let (a, b) = ([1.0, 2.0, -0.5], [0.3, -4.0, 2.0]);
    let r = distance(a, b);
    let da: [f64; 3] = std::array::from_fn(|i| (a[i] - b[i]) / r);
    check!(distance, distance_vjp; a, b => (da, da.map(|d| -d)));
    let w = [0.5, -1.5, 2.0, 0.25, 1.0];
    let want = [1.0, (-1.5f64).exp(), 2.0f64.exp() + 4.0, 0.25f64.exp(), 2.0];
    let got = gradient(window_sums_vjp(w.to_vec()));
    check_vec("window_sums", window_sums, w, &got, want);
    // 0.7 → 1.4 → 2.8 → 5.6 → 11.2: K = 4.
    check!(double_until, double_until_vjp; 0.7 => 16.0);
    let a = 2.0;
    let exact = newton_sqrt(Dual::variable(a)).eps;
    assert!((exact - 0.5 / a.sqrt()).abs() < 1e-12);
    check!(newton_sqrt::<f64>, newton_sqrt_vjp::<f64>; a => exact);
    // 1.15ᴷ: 1.15, 1.32, 1.52, 1.75, 2.01: K = 5.
    check!(excess_after_doubling, excess_after_doubling_vjp; 0.15 => 50.0 * 1.15f64.powi(4));
    let (x0, rate) = (0.5_f64, 0.1_f64);
    let q = 1.0 - 2.0 * rate;
    check!(descend, descend_vjp; x0, rate => (q.powi(5), -10.0 * (x0 - 3.0) * q.powi(4)));
    check!(trapezoid, trapezoid_vjp; 1.2 => 1.44 * (1.0 + 1.0 / 32.0));
}

// ---------------------------------------------------------------------------------------------
// Labelled loops and blocks.

/// Row by row, the first entry of a 3×3 grid above 1, times (i + j + 1), leaving both loops
/// by `break 'search`: ∂g = (i + j + 1) at that entry, 0 elsewhere (0 if none).
#[differentiable]
fn grid_search(g: [[f64; 3]; 3]) -> f64 {
    let mut found = 0.0;
    'search: for i in 0..3 {
        for j in 0..3 {
            if g[i][j] > 1.0 {
                found = g[i][j] * (i + j + 1) as f64;
                break 'search;
            }
        }
    }
    found
}

/// Σ of squares of each row's entries before its first negative one (`continue 'rows`), and
/// the sum doubled after each row without a negative entry.
#[differentiable]
fn rows_until_negative(g: [[f64; 3]; 3]) -> f64 {
    let mut s = 0.0;
    'rows: for i in 0..3 {
        for j in 0..3 {
            if g[i][j] < 0.0 {
                continue 'rows;
            }
            s += g[i][j] * g[i][j];
        }
        s *= 2.0;
    }
    s
}

/// A labelled block with `break 'b value`: −x for x < 0, ln x for x > 2, x² otherwise, plus
/// x: f' = 0, 1/x + 1, 2x + 1.
#[differentiable]
fn block_value(x: f64) -> f64 {
    let y = 'b: {
        if x < 0.0 {
            break 'b -x;
        }
        if x > 2.0 {
            break 'b x.ln();
        }
        x * x
    };
    y + x
}

/// `break 'outer value` from a `for` inside a `loop`: p ← p·x in passes of 3 until p > 5,
/// r = p + k with k the step of the pass; then r·x. For x = 1.5, p = x⁴ at k = 1 of the
/// second pass: f = x⁵ + x, f' = 5x⁴ + 1.
#[differentiable]
fn outer_break_value(x: f64) -> f64 {
    let mut p = 1.0;
    let r = 'outer: loop {
        for k in 1..4 {
            p *= x;
            if p > 5.0 {
                break 'outer p + k as f64;
            }
        }
    };
    r * x
}

/// A labelled block as an early exit of validation: for y ≤ 0 the block is left and f = x;
/// else f = x/y + y (∇ = (1/y, 1 − x/y²)).
#[differentiable]
fn validated_ratio(x: f64, y: f64) -> f64 {
    let mut f = x;
    'checks: {
        if y <= 0.0 {
            break 'checks;
        }
        f /= y;
        f += y;
    }
    f
}

#[test]
fn labelled_loops_and_blocks() {
    let g = [[0.5, -0.2, 0.9], [0.1, 1.5, 3.0], [2.0, 0.2, 0.3]];
    let mut want = [[0.0; 3]; 3];
    want[1][1] = 3.0;
    check!(grid_search, grid_search_vjp; g => want);
    check!(grid_search, grid_search_vjp; [[0.5; 3]; 3] => [[0.0; 3]; 3]);
    // Row 0 stops at −0.2 after 0.5² (no doubling); row 1 adds 0.1² + 1.5² + 3² and doubles;
    // row 2 adds 2² + 0.2² + 0.3² and doubles: s = 4(0.5² + 0.1² + 1.5² + 3²) + 2(2² + 0.2² + 0.3²).
    let want = [
        [8.0 * 0.5, 0.0, 0.0],
        [8.0 * 0.1, 8.0 * 1.5, 8.0 * 3.0],
        [4.0 * 2.0, 4.0 * 0.2, 4.0 * 0.3],
    ];
    check!(rows_until_negative, rows_until_negative_vjp; g => want);
    check!(block_value, block_value_vjp; -1.5 => 0.0);
    check!(block_value, block_value_vjp; 3.0 => 1.0 / 3.0 + 1.0);
    check!(block_value, block_value_vjp; 0.8 => 2.6);
    check!(outer_break_value, outer_break_value_vjp; 1.5 => 5.0 * 1.5f64.powi(4) + 1.0);
    check!(validated_ratio, validated_ratio_vjp; 1.5, -2.0 => (1.0, 0.0));
    check!(validated_ratio, validated_ratio_vjp; 1.5, 2.0 => (0.5, 1.0 - 1.5 / 4.0));
}

// ---------------------------------------------------------------------------------------------
// Reductions and closures.

/// The population variance by `.map(..).sum::<f64>()`, the closure capturing the active mean:
/// ∂vᵢ = 2(vᵢ − m)/n.
#[differentiable]
fn variance(v: Vec<f64>) -> f64 {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n
}

/// The geometric mean by `.product()`: g = (Π vᵢ)^(1/3), ∂vᵢ = g/(3vᵢ).
#[differentiable]
fn geometric_mean(v: [f64; 3]) -> f64 {
    v.iter().product::<f64>().powf(1.0 / 3.0)
}

/// Horner's rule by `.fold(..)`: p = Σ cᵢ x^(3−i); ∂c = (x³, x², x, 1), ∂x = p'(x).
#[differentiable]
fn fold_horner(c: [f64; 4], x: f64) -> f64 {
    c.iter().fold(0.0, |acc, ci| acc * x + ci)
}

/// The unit vector by `.map(..).collect::<Vec<_>>()`, read back: f = u₀ + 2u₁ with
/// u = v/‖v‖; ∇ = (w − u (u·w))/‖v‖ with w = (1, 2, 0).
#[differentiable]
fn unit_projection(v: [f64; 3]) -> f64 {
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let u = v.iter().map(|x| x / n).collect::<Vec<_>>();
    u[0] + 2.0 * u[1]
}

/// log Σ eˣⁱ shifted by the maximum found by `fold` with `max`: ∇ = softmax(x).
#[differentiable]
fn stable_logsumexp(x: [f64; 4]) -> f64 {
    let m = x.iter().fold(f64::NEG_INFINITY, |m, xi| m.max(*xi));
    let s = x.iter().map(|xi| (xi - m).exp()).sum::<f64>();
    m + s.ln()
}

/// A quadratic q(t) = a t² + b t bound by `let`, capturing a and b: q(1) + q(2) + q(−1) =
/// 6a + 2b; ∇ = (6, 2).
#[differentiable]
fn quadratic_at_points(a: f64, b: f64) -> f64 {
    let q = |t: f64| a * t * t + b * t;
    q(1.0) + q(2.0) + q(-1.0)
}

/// A closure returning a tuple, destructured: (r, θ) = (‖(x, y)‖, atan2(y, x)), f = r·θ;
/// ∂x = θx/r − r y/r², ∂y = θy/r + r x/r².
#[differentiable]
fn polar_closure(x: f64, y: f64) -> f64 {
    let polar = |a: f64, b: f64| (a.hypot(b), b.atan2(a));
    let (r, theta) = polar(x, y);
    r * theta
}

/// A closure called in a loop, capturing the active scale s: Σ tanh(s vᵢ);
/// ∂vᵢ = s sech²(s vᵢ), ∂s = Σ vᵢ sech²(s vᵢ).
#[differentiable]
fn scaled_tanh_sum(v: [f64; 3], s: f64) -> f64 {
    let act = |t: f64| (s * t).tanh();
    let mut total = 0.0;
    for i in 0..3 {
        total += act(v[i]);
    }
    total
}

#[test]
fn reductions_and_closures() {
    let v = [0.5, -1.5, 2.0, 0.25];
    let m = v.iter().sum::<f64>() / 4.0;
    let got = gradient(variance_vjp(v.to_vec()));
    check_vec("variance", variance, v, &got, v.map(|x| (x - m) / 2.0));
    let w = [1.5, 2.0, 0.5];
    let gm = geometric_mean(w);
    check!(geometric_mean, geometric_mean_vjp; w => w.map(|x| gm / (3.0 * x)));
    let (c, x) = ([1.0, -2.0, 0.5, 3.0], 0.7_f64);
    let dp = 3.0 * c[0] * x * x + 2.0 * c[1] * x + c[2];
    check!(fold_horner, fold_horner_vjp; c, x => ([x * x * x, x * x, x, 1.0], dp));
    let u = [1.0, 2.0, -0.5];
    let n = (1.0f64 + 4.0 + 0.25).sqrt();
    let unit = u.map(|x| x / n);
    let dot = unit[0] + 2.0 * unit[1];
    let want = [1.0, 2.0, 0.0];
    let want: [f64; 3] = std::array::from_fn(|i| (want[i] - unit[i] * dot) / n);
    check!(unit_projection, unit_projection_vjp; u => want);
    let x4 = [0.3, -1.2, 2.5, 1.0];
    let total: f64 = x4.iter().map(|x| x.exp()).sum();
    check!(stable_logsumexp, stable_logsumexp_vjp; x4 => x4.map(|x| x.exp() / total));
    check!(quadratic_at_points, quadratic_at_points_vjp; 0.4, -1.1 => (6.0, 2.0));
    let (x, y) = (0.6_f64, 0.8_f64);
    let (r, th) = (1.0, y.atan2(x));
    check!(polar_closure, polar_closure_vjp; x, y => (th * x / r - y / r, th * y / r + x / r));
    let (v3, s) = ([0.5, -1.0, 2.0], 0.7_f64);
    let sech2 = |t: f64| 1.0 - (s * t).tanh().powi(2);
    let ds: f64 = v3.iter().map(|t| t * sech2(*t)).sum();
    check!(scaled_tanh_sum, scaled_tanh_sum_vjp; v3, s => (v3.map(|t| s * sech2(t)), ds));
}

// ---------------------------------------------------------------------------------------------
// `Vec` and array writes.

/// `push` in a loop, reading the previous element: v₀ = x, vᵢ = vᵢ₋₁x + 1, so
/// v₃ = x⁴ + x² + x + 1; f' = 4x³ + 2x + 1.
#[differentiable]
fn pushed_recurrence(x: f64) -> f64 {
    let mut v = Vec::new();
    v.push(x);
    for i in 1..4 {
        let next = v[i - 1] * x + 1.0;
        v.push(next);
    }
    v[3]
}

/// `w[i] = ..` and `w[i] += ..` into a `vec!` of zeros: wᵢ = vᵢ + ½vᵢ₋₁, f = Σ wᵢ²;
/// ∂vⱼ = 2wⱼ + wⱼ₊₁.
#[differentiable]
fn smoothed_energy(v: Vec<f64>) -> f64 {
    let mut w = vec![0.0; v.len()];
    for i in 0..v.len() {
        w[i] = v[i];
        if i > 0 {
            w[i] += 0.5 * v[i - 1];
        }
    }
    w.iter().map(|x| x * x).sum::<f64>()
}

/// Prefix sums in place in a `mut` parameter: Pᵢ = Σ_{j≤i} vⱼ, f = Σ Pᵢ²;
/// ∂vⱼ = Σ_{i≥j} 2Pᵢ.
#[differentiable]
fn prefix_energy(mut v: Vec<f64>) -> f64 {
    for i in 1..v.len() {
        v[i] += v[i - 1];
    }
    let mut s = 0.0;
    for p in v.iter() {
        s += p * p;
    }
    s
}

/// A const generic array written element by element, `out[i] *= ..`: Σ (i + 1) aᵢ²;
/// ∂aᵢ = 2(i + 1)aᵢ.
#[differentiable]
fn weighted_squares<const N: usize>(a: [f64; N]) -> f64 {
    let mut out = [0.0; N];
    for i in 0..N {
        out[i] = a[i] * (i + 1) as f64;
        out[i] *= a[i];
    }
    out.iter().sum()
}

/// Bubble sort of a copy by swapping through a temporary, then a rank-weighted sum:
/// Σ (k + 1)·(k-th smallest); ∂vᵢ = 1 + rank of vᵢ.
// The swap through a temporary is the style under test (`s.swap(j, j + 1)` is rejected).
#[allow(clippy::manual_swap)]
#[differentiable]
fn rank_weighted(v: [f64; 3]) -> f64 {
    let mut s = v;
    for i in 0..3 {
        for j in 0..2 - i {
            if s[j] > s[j + 1] {
                let t = s[j];
                s[j] = s[j + 1];
                s[j + 1] = t;
            }
        }
    }
    s[0] + 2.0 * s[1] + 3.0 * s[2]
}

#[test]
fn vec_and_array_writes() {
    let x = 0.9_f64;
    check!(pushed_recurrence, pushed_recurrence_vjp; x => 4.0 * x.powi(3) + 2.0 * x + 1.0);
    let v = [0.5, -1.5, 2.0, 0.25];
    let w = [0.5, -1.25, 1.25, 1.25];
    let want = [
        2.0 * w[0] + w[1],
        2.0 * w[1] + w[2],
        2.0 * w[2] + w[3],
        2.0 * w[3],
    ];
    let got = gradient(smoothed_energy_vjp(v.to_vec()));
    check_vec("smoothed_energy", smoothed_energy, v, &got, want);
    let p = [0.5, -1.0, 1.0, 1.25];
    let want: [f64; 4] = std::array::from_fn(|j| p[j..].iter().map(|q| 2.0 * q).sum());
    let got = gradient(prefix_energy_vjp(v.to_vec()));
    check_vec("prefix_energy", prefix_energy, v, &got, want);
    let a = [0.5, -1.5, 2.0];
    check!(weighted_squares::<3>, weighted_squares_vjp::<3>; a => [1.0, -6.0, 12.0]);
    // Ranks: 0.5 is the middle one, −1.5 the smallest, 2.0 the largest.
    check!(rank_weighted, rank_weighted_vjp; a => [2.0, 1.0, 3.0]);
}

// ---------------------------------------------------------------------------------------------
// Tuples and structs.

/// Polar coordinates returned as a tuple: (r, θ) = (√(x² + y²), atan2(y, x));
/// ∂r = (x, y)/r, ∂θ = (−y, x)/r².
#[differentiable]
fn to_polar(x: f64, y: f64) -> (f64, f64) {
    let r = (x * x + y * y).sqrt();
    (r, y.atan2(x))
}

/// A helper returning a tuple, destructured: r²θ with (r, θ) from [`to_polar`];
/// ∂x = 2xθ − y, ∂y = 2yθ + x.
#[differentiable]
fn polar_area(x: f64, y: f64) -> f64 {
    let (r, theta) = to_polar(x, y);
    r * r * theta
}

/// Mean and spread of three values as a tuple.
#[differentiable]
fn mean_and_spread(v: [f64; 3]) -> (f64, f64) {
    let m = (v[0] + v[1] + v[2]) / 3.0;
    let d = [v[0] - m, v[1] - m, v[2] - m];
    (m, ((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) / 3.0).sqrt())
}

/// The z-score of the first value: (v₀ − m)/σ, generic twin in [`z_score_by_hand`].
#[differentiable]
fn z_score(v: [f64; 3]) -> f64 {
    let (m, s) = mean_and_spread(v);
    (v[0] - m) / s
}

/// [`z_score`] written with the same operations over `Float`, for dual numbers.
fn z_score_by_hand<T: Float>(v: [T; 3]) -> T {
    let three = T::from_f64(3.0);
    let m = (v[0] + v[1] + v[2]) / three;
    let d = [v[0] - m, v[1] - m, v[2] - m];
    let s = ((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) / three).sqrt();
    (v[0] - m) / s
}

/// A Fibonacci-like recurrence by tuple assignment: (a, b) ← (b, a + bx) from (1, x),
/// n steps, generic so that dual numbers give its exact derivative.
#[differentiable]
fn fib_like<T: Float>(x: T, n: usize) -> T {
    let (mut a, mut b) = (T::ONE, x);
    for _ in 0..n {
        (a, b) = (b, a + b * x);
    }
    b
}

/// `std::mem::swap` into order: min² + 3·max; ∇ = 2·min at the smaller, 3 at the larger.
#[differentiable]
fn ordered_pair(x: f64, y: f64) -> f64 {
    let (mut lo, mut hi) = (x, y);
    if lo > hi {
        std::mem::swap(&mut lo, &mut hi);
    }
    lo * lo + 3.0 * hi
}

/// A point in the plane.
#[derive(Clone, Debug, Differentiable)]
struct Pt {
    x: f64,
    y: f64,
}

/// Fields written one by one (`p.x = ..`, `p.y += ..`, `p.x *= ..`): p = (x², y + xy)
/// then p.x ← p.x·y; f = p.x + p.y = x²y + y + xy; ∇ = (2xy + y, x² + 1 + x).
#[differentiable]
fn field_by_field(x: f64, y: f64) -> f64 {
    let mut p = Pt { x: 0.0, y };
    p.x = x * x;
    p.y += x * y;
    p.x *= y;
    p.x + p.y
}

/// Struct update syntax: q = (x, 2y) from p = (x, y), r = (q.x + q.y, q.y); f = r.x·r.y =
/// 2xy + 4y², ∇ = (2y, 2x + 8y).
#[differentiable]
fn updated(x: f64, y: f64) -> f64 {
    let p = Pt { x, y };
    let q = Pt { y: p.y * 2.0, ..p };
    let r = Pt { x: q.x + q.y, ..q };
    r.x * r.y
}

/// A particle on a spring.
#[derive(Clone, Debug, Differentiable)]
struct Particle {
    pos: f64,
    vel: f64,
}

/// One symplectic Euler step with dt = 0.1: v ← v − dt k x, then x ← x + dt v.
#[differentiable]
fn spring_step(p: Particle, k: f64) -> Particle {
    let mut q = Particle {
        pos: p.pos,
        vel: p.vel,
    };
    q.vel -= 0.1 * k * p.pos;
    q.pos += 0.1 * q.vel;
    q
}

/// The spring energy ½(v² + k x²) after 3 steps of [`spring_step`] (a helper returning a
/// struct, called in a loop).
#[differentiable]
fn spring_energy(pos: f64, vel: f64, k: f64) -> f64 {
    let mut p = Particle { pos, vel };
    for _ in 0..3 {
        p = spring_step(p, k);
    }
    0.5 * (p.vel * p.vel + k * p.pos * p.pos)
}

/// [`spring_energy`] with the same operations over `Float`, on a tuple.
fn spring_energy_by_hand<T: Float>(pos: T, vel: T, k: T) -> T {
    let dt = T::from_f64(0.1);
    let (mut x, mut v) = (pos, vel);
    for _ in 0..3 {
        v -= dt * k * x;
        x += dt * v;
    }
    T::from_f64(0.5) * (v * v + k * x * x)
}

/// A struct parameter: ‖p‖ + atan2(p.y, p.x); ∂p = (x/r − y/r², y/r + x/r²).
#[differentiable]
fn point_measure(p: Pt) -> f64 {
    p.x.hypot(p.y) + p.y.atan2(p.x)
}

#[test]
fn tuples_and_structs() {
    let (x, y) = (0.6_f64, 0.8_f64);
    let (value, pullback) = to_polar_vjp(x, y);
    assert_eq!(value, to_polar(x, y));
    let seed = (1.5, -0.5);
    let vjp = pullback(seed);
    assert_close("to_polar", vjp, (1.5 * x + 0.5 * y, 1.5 * y - 0.5 * x));
    check_vjp("to_polar", |(x, y)| to_polar(x, y), (x, y), seed, vjp);
    let th = y.atan2(x);
    check!(polar_area, polar_area_vjp; x, y => (2.0 * x * th - y, 2.0 * y * th + x));

    let v = [1.5, -0.5, 0.4];
    assert_eq!(z_score(v), z_score_by_hand(v));
    check!(z_score, z_score_vjp; v => dual_gradient(z_score_by_hand, v));
    let exact = fib_like(Dual::variable(x), 5).eps;
    check!(|x| fib_like(x, 5), |x| fib_like_vjp(x, 5); x => exact);

    check!(ordered_pair, ordered_pair_vjp; x, y => (2.0 * x, 3.0));
    check!(ordered_pair, ordered_pair_vjp; y, x => (3.0, 2.0 * x));
    check!(field_by_field, field_by_field_vjp; x, y => (2.0 * x * y + y, x * x + 1.0 + x));
    check!(updated, updated_vjp; x, y => (2.0 * y, 2.0 * x + 8.0 * y));

    let at = [0.7, -0.2, 4.0];
    assert_eq!(
        spring_energy(at[0], at[1], at[2]),
        spring_energy_by_hand(at[0], at[1], at[2])
    );
    let [dp, dv, dk] = dual_gradient(|[p, v, k]| spring_energy_by_hand(p, v, k), at);
    check!(spring_energy, spring_energy_vjp; at[0], at[1], at[2] => (dp, dv, dk));

    let r = 1.0;
    check!(
        |x, y| point_measure(Pt { x, y }),
        |x, y| {
            let (value, pullback) = point_measure_vjp(Pt { x, y });
            (value, move |seed: f64| {
                let dp = pullback(seed);
                (dp.x, dp.y)
            })
        };
        x, y => (x / r - y / (r * r), y / r + x / (r * r))
    );
}

// ---------------------------------------------------------------------------------------------
// Float methods, `f32`, generic code.

/// Activations: tanh x + max(x, 0) + 0.1·min(x, 0) + |x|; f' = sech²x + [x > 0] +
/// 0.1[x < 0] + sign x.
#[differentiable]
fn activations(x: f64) -> f64 {
    x.tanh() + x.max(0.0) + 0.1 * x.min(0.0) + x.abs()
}

/// sin x cos y + atan2(x, y) + hypot(x, y): ∂x = cos x cos y + y/r² + x/r,
/// ∂y = −sin x sin y − x/r² + y/r.
#[differentiable]
fn trig_mix(x: f64, y: f64) -> f64 {
    x.sin() * y.cos() + x.atan2(y) + x.hypot(y)
}

/// x³ + x^y + √y + ln(e^(xy)): ∂x = 3x² + y x^(y−1) + y, ∂y = x^y ln x + 1/(2√y) + x.
#[differentiable]
fn powers(x: f64, y: f64) -> f64 {
    x.powi(3) + x.powf(y) + y.sqrt() + (x * y).exp().ln()
}

/// clamp(x/y, −1, 1)·y: x inside (∇ = (1, 0)), ±y outside (∇ = (0, ±1)).
#[differentiable]
fn clamped_ratio(x: f64, y: f64) -> f64 {
    (x / y).clamp(-1.0, 1.0) * y
}

/// The logistic function in `f32`: σ(x) = 1/(1 + e⁻ˣ), σ' = σ(1 − σ).
#[differentiable]
fn logistic_f32(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// A Fourier partial sum in `f32`: Σ_{k=1..3} sin(kx)/k, f' = Σ cos(kx).
#[differentiable]
fn fourier_f32(x: f32) -> f32 {
    let mut s = 0.0_f32;
    for k in 1..4 {
        let kf = k as f32;
        s += (kf * x).sin() / kf;
    }
    s
}

/// The length of an `f32` array by `.map(..).sum::<f32>()`: ∇ = v/‖v‖.
#[differentiable]
fn length_f32(v: [f32; 3]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// A generic smooth maximum: log(eˣ + eʸ) shifted by max(x, y), with a branch on the order;
/// ∇ = softmax(x, y).
#[differentiable]
fn smooth_max<T: Float>(x: T, y: T) -> T {
    let (hi, lo) = if x > y { (x, y) } else { (y, x) };
    hi + (lo - hi).exp().ln_1p()
}

/// A generic Huber loss of a residual: ½r² for |r| ≤ δ, δ(|r| − ½δ) outside; d/dr = r or
/// δ sign r.
#[differentiable]
fn huber<T: Float>(r: T, delta: T) -> T {
    let a = r.abs();
    if a <= delta {
        T::from_f64(0.5) * r * r
    } else {
        delta * (a - T::from_f64(0.5) * delta)
    }
}

/// Generic Gauss–Seidel sweeps: 4 passes over a 2×2 system [[4, 1], [1, 3]] z = (b₀, b₁), the
/// result z₀ + z₁; dual numbers give the exact derivative of the iteration.
#[differentiable]
fn gauss_seidel<T: Float>(b: [T; 2]) -> T {
    let mut z = [T::ZERO; 2];
    for _ in 0..4 {
        z[0] = (b[0] - z[1]) / T::from_f64(4.0);
        z[1] = (b[1] - z[0]) / T::from_f64(3.0);
    }
    z[0] + z[1]
}

#[test]
fn float_methods_f32_and_generic() {
    let x = 0.8_f64;
    let sech2 = 1.0 - x.tanh().powi(2);
    check!(activations, activations_vjp; x => sech2 + 2.0);
    check!(activations, activations_vjp; -x => sech2 + 0.1 - 1.0);
    let (a, b) = (0.6_f64, 0.8_f64);
    let (r, r2) = (1.0, 1.0);
    let dx = a.cos() * b.cos() + b / r2 + a / r;
    let dy = -a.sin() * b.sin() - a / r2 + b / r;
    check!(trig_mix, trig_mix_vjp; a, b => (dx, dy));
    let (x, y) = (1.3_f64, 2.5_f64);
    let dx = 3.0 * x * x + y * x.powf(y - 1.0) + y;
    let dy = x.powf(y) * x.ln() + 0.5 / y.sqrt() + x;
    check!(powers, powers_vjp; x, y => (dx, dy));
    check!(clamped_ratio, clamped_ratio_vjp; 0.5, 2.0 => (1.0, 0.0));
    check!(clamped_ratio, clamped_ratio_vjp; 3.0, 2.0 => (0.0, 1.0));
    check!(clamped_ratio, clamped_ratio_vjp; -3.0, 2.0 => (0.0, -1.0));

    // f32: against the closed forms, which are checked by finite differences in f64.
    for x in [-1.3_f32, 0.4, 2.1] {
        let x64 = f64::from(x);
        let s = 1.0 / (1.0 + (-x64).exp());
        assert_close_f32("logistic_f32", gradient(logistic_f32_vjp(x)), s * (1.0 - s));
        check_gradient(
            "logistic",
            |t: f64| 1.0 / (1.0 + (-t).exp()),
            x64,
            s * (1.0 - s),
        );
        let want: f64 = (1..4).map(|k| (k as f64 * x64).cos()).sum();
        assert_close_f32("fourier_f32", gradient(fourier_f32_vjp(x)), want);
        let fourier = |t: f64| (1..4).map(|k| (k as f64 * t).sin() / k as f64).sum::<f64>();
        check_gradient("fourier", fourier, x64, want);
    }
    let v = [1.0_f32, -2.0, 2.0];
    let got = gradient(length_f32_vjp(v));
    let v64 = v.map(f64::from);
    let want = v64.map(|t| t / 3.0);
    for i in 0..3 {
        assert_close_f32("length_f32", got[i], want[i]);
    }
    let length = |u: [f64; 3]| u.iter().map(|t| t * t).sum::<f64>().sqrt();
    check_gradient("length", length, v64, want);

    let (x, y) = (0.4_f64, -0.9_f64);
    let z = x.exp() + y.exp();
    check!(smooth_max::<f64>, smooth_max_vjp::<f64>; x, y => (x.exp() / z, y.exp() / z));
    check!(smooth_max::<f64>, smooth_max_vjp::<f64>; y, x => (y.exp() / z, x.exp() / z));
    check!(huber::<f64>, huber_vjp::<f64>; 0.3, 1.0 => (0.3, 0.0));
    check!(huber::<f64>, huber_vjp::<f64>; -2.0, 1.0 => (-1.0, 1.0));
    let bs = [1.0, 2.0];
    let exact = dual_gradient(gauss_seidel, bs);
    check!(gauss_seidel::<f64>, gauss_seidel_vjp::<f64>; bs => exact);
    // The fixed point is z = A⁻¹b, z₀ + z₁ = (2b₀ + 3b₁)/11; four sweeps are close to it.
    assert!((exact[0] - 2.0 / 11.0).abs() < 1e-3 && (exact[1] - 3.0 / 11.0).abs() < 1e-3);
}

// ---------------------------------------------------------------------------------------------
// Recursion, helpers, compound assignments, `without_derivative`.

/// xⁿ by squaring, recursively: f' = n xⁿ⁻¹.
#[differentiable]
fn power_by_squaring(x: f64, n: u32) -> f64 {
    if n == 0 {
        1.0
    } else if n.is_multiple_of(2) {
        let h = power_by_squaring(x, n / 2);
        h * h
    } else {
        x * power_by_squaring(x, n - 1)
    }
}

/// Generic xⁿ by squaring, recursively: f' = n xⁿ⁻¹.
#[differentiable]
fn g_power_by_squaring<T: Float>(x: T, n: u32) -> T {
    if n == 0 {
        T::ONE
    } else if n.is_multiple_of(2) {
        let h = g_power_by_squaring(x, n / 2);
        h * h
    } else {
        x * g_power_by_squaring(x, n - 1)
    }
}

/// Σ xᵢ² over [lo, hi) of an array by splitting in halves, recursively: ∂xᵢ = 2xᵢ in range.
#[differentiable]
fn split_sum_sq(x: [f64; 8], lo: usize, hi: usize) -> f64 {
    if hi - lo == 1 {
        return x[lo] * x[lo];
    }
    let mid = (lo + hi) / 2;
    split_sum_sq(x, lo, mid) + split_sum_sq(x, mid, hi)
}

/// A helper: x².
#[differentiable]
fn sq(x: f64) -> f64 {
    x * x
}

/// A helper calling a helper: √(sq x + sq y).
#[differentiable]
fn norm2(x: f64, y: f64) -> f64 {
    (sq(x) + sq(y)).sqrt()
}

/// A spring loss (‖(x − tx, y − ty)‖ − 1)² through [`norm2`] and [`sq`]: with d = ‖·‖,
/// ∂x = 2(d − 1)(x − tx)/d = −∂tx, and the same in y.
#[differentiable]
fn spring_loss(x: f64, y: f64, tx: f64, ty: f64) -> f64 {
    sq(norm2(x - tx, y - ty) - 1.0)
}

/// A helper called in a loop over `.iter()`: Σ (vᵢ − 1)², ∂vᵢ = 2(vᵢ − 1).
#[differentiable]
fn total_sq_error(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for x in v.iter() {
        s += sq(*x - 1.0);
    }
    s
}

/// Compound assignments on one accumulator: a = ((x + y)x − y)/y = x²/y + x − 1;
/// ∇ = (2x/y + 1, −x²/y²).
#[differentiable]
fn compound_ops(x: f64, y: f64) -> f64 {
    let mut a = x;
    a += y;
    a *= x;
    a -= y;
    a /= y;
    a
}

/// A product and a sum accumulated together: Π (1 + vᵢ) · Σ vᵢ; with P the product and S
/// the sum, ∂vᵢ = S P/(1 + vᵢ) + P.
#[differentiable]
fn product_times_sum(v: [f64; 3]) -> f64 {
    let mut p = 1.0;
    let mut s = 0.0;
    for x in v {
        p *= 1.0 + x;
        s += x;
    }
    p * s
}

/// A normalisation held constant by `without_derivative`: (x² + y)/s with s = ‖(x, y)‖
/// frozen; ∇ = (2x/s, 1/s).
#[differentiable]
fn frozen_norm(x: f64, y: f64) -> f64 {
    let s = without_derivative(x.hypot(y));
    (x * x + y) / s
}

#[test]
fn recursion_helpers_and_accumulators() {
    let x = 1.1_f64;
    for n in [0, 1, 6, 7, 13] {
        let want = if n == 0 {
            0.0
        } else {
            n as f64 * x.powi(n as i32 - 1)
        };
        check!(|x| power_by_squaring(x, n), |x| power_by_squaring_vjp(x, n); x => want);
        check!(
            |x| g_power_by_squaring::<f64>(x, n),
            |x| g_power_by_squaring_vjp::<f64>(x, n);
            x => want
        );
    }
    let v8 = [0.5, -1.0, 2.0, 0.25, 1.5, -0.75, 0.1, 3.0];
    check!(|v| split_sum_sq(v, 0, 8), |v| split_sum_sq_vjp(v, 0, 8); v8 => v8.map(|t| 2.0 * t));
    let mut want = [0.0; 8];
    for i in 2..5 {
        want[i] = 2.0 * v8[i];
    }
    check!(|v| split_sum_sq(v, 2, 5), |v| split_sum_sq_vjp(v, 2, 5); v8 => want);

    let (px, py, tx, ty) = (1.0_f64, 2.0_f64, -0.5_f64, 0.3_f64);
    let d = (px - tx).hypot(py - ty);
    let (gx, gy) = (
        2.0 * (d - 1.0) * (px - tx) / d,
        2.0 * (d - 1.0) * (py - ty) / d,
    );
    check!(spring_loss, spring_loss_vjp; px, py, tx, ty => (gx, gy, -gx, -gy));
    let v = [0.5, -1.5, 2.0, 0.25];
    let got = gradient(total_sq_error_vjp(v.to_vec()));
    check_vec(
        "total_sq_error",
        total_sq_error,
        v,
        &got,
        v.map(|t| 2.0 * (t - 1.0)),
    );

    let (x, y) = (0.7_f64, 1.6_f64);
    check!(compound_ops, compound_ops_vjp; x, y => (2.0 * x / y + 1.0, -x * x / (y * y)));
    let w = [0.5, -0.25, 2.0];
    let p: f64 = w.iter().map(|t| 1.0 + t).product();
    let s: f64 = w.iter().sum();
    check!(product_times_sum, product_times_sum_vjp; w => w.map(|t| s * p / (1.0 + t) + p));

    // `without_derivative` changes the derivative, not the value: finite differences apply to
    // the function with the frozen value fixed at the point.
    let s = x.hypot(y);
    let (value, pullback) = frozen_norm_vjp(x, y);
    assert_eq!(value, frozen_norm(x, y));
    let got = pullback(1.0);
    assert_close("frozen_norm", got, (2.0 * x / s, 1.0 / s));
    check_gradient(
        "frozen_norm",
        |(a, b): (f64, f64)| (a * a + b) / s,
        (x, y),
        got,
    );
}

// ---------------------------------------------------------------------------------------------
// More adapters and writes: nested `.iter()` with `continue 'rows`, a closure inside `map`,
// `enumerate().map(..)`, `rev().enumerate()`, `clone`, a tuple result with an
// early `return`, a `match` guard on data, `-y` and `%=`.

/// [`rows_until_negative`] over `g.iter()` and `row.iter()` instead of indices.
#[differentiable]
fn rows_until_negative_iter(g: [[f64; 3]; 3]) -> f64 {
    let mut s = 0.0;
    'rows: for row in g.iter() {
        for x in row.iter() {
            if *x < 0.0 {
                continue 'rows;
            }
            s += x * x;
        }
        s *= 2.0;
    }
    s
}

/// [`scaled_tanh_sum`] with the closure called inside `.map(..)`: Σ tanh(s vᵢ).
#[differentiable]
fn scaled_tanh_mapped(v: [f64; 3], s: f64) -> f64 {
    let act = |t: f64| (s * t).tanh();
    v.iter().map(|x| act(*x)).sum::<f64>()
}

/// `.iter().enumerate().map(|(i, x)| ..).sum()`: Σ i vᵢ, ∂vᵢ = i.
#[differentiable]
fn index_weighted(v: Vec<f64>) -> f64 {
    v.iter().enumerate().map(|(i, x)| i as f64 * x).sum::<f64>()
}

/// `.iter().rev().enumerate()`: Σ (i + 1) v₂₋ᵢ = 3v₀ + 2v₁ + v₂, ∂v = (3, 2, 1).
#[differentiable]
fn rev_enumerated(v: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for (i, x) in v.iter().rev().enumerate() {
        s += (i + 1) as f64 * x;
    }
    s
}

/// A struct copied by `clone()` and the copy written: q.x = x + y, f = q.x·p.x = x² + xy;
/// ∇ = (2x + y, x).
#[differentiable]
fn cloned_point(x: f64, y: f64) -> f64 {
    let p = Pt { x, y };
    let mut q = p.clone();
    q.x += p.y;
    q.x * p.x
}

/// A tuple result with an early `return`: (0, x) for x < 0, else (x, x²); the Jacobian is
/// ((0, 1)) or ((1, 2x)).
#[differentiable]
fn ramp_pair(x: f64) -> (f64, f64) {
    if x < 0.0 {
        return (0.0, x);
    }
    (x, x * x)
}

/// `match` on data with a range and a guard, as a `let` initialiser: k ≤ 2 → 2x (f' = 2),
/// even k → x² (2x), odd → −x (−1); plus 1.
#[differentiable]
fn by_parity(x: f64, k: usize) -> f64 {
    let w = match k {
        0..=2 => x * 2.0,
        n if n % 2 == 0 => x * x,
        _ => -x,
    };
    w + 1.0
}

/// Negation by assignment and `%=`: (−x) mod 10 (Rust's remainder, sign of −x); f' = −1
/// away from the multiples of 10.
#[differentiable]
fn negated_remainder(x: f64) -> f64 {
    let mut y = x;
    y = -y;
    y %= 10.0;
    y
}

#[test]
fn more_adapters_and_writes() {
    let g = [[0.5, -0.2, 0.9], [0.1, 1.5, 3.0], [2.0, 0.2, 0.3]];
    let got = gradient(rows_until_negative_iter_vjp(g));
    assert_eq!(got, gradient(rows_until_negative_vjp(g)));
    check!(rows_until_negative_iter, rows_until_negative_iter_vjp; g => got);
    let want = [[4.0, 0.0, 0.0], [0.8, 12.0, 24.0], [8.0, 0.8, 1.2]];
    assert_close("rows_until_negative_iter", got, want);

    let (v3, s) = ([0.5, -1.0, 2.0], 0.7_f64);
    let sech2 = |t: f64| 1.0 - (s * t).tanh().powi(2);
    let ds: f64 = v3.iter().map(|t| t * sech2(*t)).sum();
    check!(scaled_tanh_mapped, scaled_tanh_mapped_vjp; v3, s => (v3.map(|t| s * sech2(t)), ds));

    let (v, x) = ([0.5, -1.5, 2.0, 0.25], 1.3_f64);
    let got = gradient(index_weighted_vjp(v.to_vec()));
    check_vec(
        "index_weighted",
        index_weighted,
        v,
        &got,
        [0.0, 1.0, 2.0, 3.0],
    );
    check!(rev_enumerated, rev_enumerated_vjp; v3 => [3.0, 2.0, 1.0]);
    check!(cloned_point, cloned_point_vjp; 0.6, -0.4 => (0.8, 0.6));

    for (x, jac) in [(-0.5_f64, (0.0, 1.0)), (0.7, (1.0, 1.4))] {
        let (value, pullback) = ramp_pair_vjp(x);
        assert_eq!(value, ramp_pair(x));
        let seed = (1.5, -0.5);
        let vjp = pullback(seed);
        assert_close("ramp_pair", vjp, 1.5 * jac.0 - 0.5 * jac.1);
        check_vjp("ramp_pair", ramp_pair, x, seed, vjp);
    }
    for (k, want) in [(1, 2.0), (4, 2.0 * x), (7, -1.0)] {
        check!(|x| by_parity(x, k), |x| by_parity_vjp(x, k); x => want);
    }
    check!(negated_remainder, negated_remainder_vjp; 13.5 => -1.0);
    check!(negated_remainder, negated_remainder_vjp; 3.0 => -1.0);
}

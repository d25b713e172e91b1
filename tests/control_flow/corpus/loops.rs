//! `for` over ranges and iterator chains, `while`, `loop`, labelled loops and blocks, and more
//! adapters.

use super::Pt;
use crate::common::{assert_close, check, check_vec, check_vjp};
use adjoint::prelude::*;

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

/// `scaled_tanh_sum` with the closure called inside `.map(..)`: Σ tanh(s vᵢ).
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

//! `for` loops over ranges and data iterators with carried variables, `while` loops with active
//! conditions, and a loop of a million iterations on a small stack.

use crate::common::{assert_close, check, check_gradient};
use adjoint::prelude::*;

// ---------------------------------------------------------------------------------------------
// for loops over ranges and data iterators; carried variables
// ---------------------------------------------------------------------------------------------

/// Horner with active coefficients: p = Σ cᵢ x³⁻ⁱ;
/// ∂c = (x³, x², x, 1), ∂x = 3c₀x² + 2c₁x + c₂.
#[differentiable]
fn horner(c: [f64; 4], x: f64) -> f64 {
    let mut acc = 0.0;
    for i in 0..4 {
        acc = acc * x + c[i];
    }
    acc
}

/// Σ_{k=1..n} xᵏ/k with the power carried: d/dx = Σ_{k=1..n} xᵏ⁻¹ = (1 − xⁿ)/(1 − x).
#[differentiable]
fn log_series(x: f64, n: usize) -> f64 {
    let mut term = 1.0;
    let mut s = 0.0;
    for k in 1..=n {
        term = term * x;
        s += term / k as f64;
    }
    s
}

/// Truncated exponential series Σ_{k=0..15} xᵏ/k!: d/dx = Σ_{k=0..14} xᵏ/k!.
#[differentiable]
fn exp_series(x: f64) -> f64 {
    let mut term = 1.0;
    let mut s = 1.0;
    for k in 1..16 {
        term = term * x / k as f64;
        s += term;
    }
    s
}

/// s ← as + 1 from s₀ = y, n times: s = aⁿy + Σ_{k<n} aᵏ;
/// ∂a = n aⁿ⁻¹ y + Σ_{k<n} k aᵏ⁻¹, ∂y = aⁿ.
#[differentiable]
fn affine_rec(a: f64, y: f64, n: usize) -> f64 {
    let mut s = y;
    for _ in 0..n {
        s = a * s + 1.0;
    }
    s
}

/// Two carried variables rotated n times by a data angle θ: the norm is preserved,
/// a² + b² = x² + y², ∇ = (2x, 2y).
#[differentiable(wrt(x, y))]
fn rotate_norm(x: f64, y: f64, theta: f64, n: usize) -> f64 {
    let (c, s) = (theta.cos(), theta.sin());
    let mut a = x;
    let mut b = y;
    for _ in 0..n {
        let t = c * a - s * b;
        b = s * a + c * b;
        a = t;
    }
    a * a + b * b
}

/// (1, 0) rotated n times by an active θ: (cos nθ, sin nθ); result cos nθ + 2 sin nθ,
/// d/dθ = −n sin nθ + 2n cos nθ.
#[differentiable]
fn rotate_angle(theta: f64, n: usize) -> f64 {
    let (c, s) = (theta.cos(), theta.sin());
    let mut a = 1.0;
    let mut b = 0.0;
    for _ in 0..n {
        let t = c * a - s * b;
        b = s * a + c * b;
        a = t;
    }
    a + 2.0 * b
}

/// (a, b) ← (b, a + b) from (x, y), n times: b = F(n) x + F(n + 1) y, ∇ = (F(n), F(n + 1)).
#[differentiable]
fn fibonacci(x: f64, y: f64, n: usize) -> f64 {
    let mut a = x;
    let mut b = y;
    for _ in 0..n {
        let t = a + b;
        a = b;
        b = t;
    }
    b
}

/// Nested loops with a carried product: x^{1 + nm}, d/dx = (1 + nm) x^{nm}.
#[differentiable]
fn nested_pow(x: f64, n: usize, m: usize) -> f64 {
    let mut acc = x;
    for _ in 0..n {
        for _ in 0..m {
            acc = acc * x;
        }
    }
    acc
}

/// Triangular nested loops (the inner bound is the outer index): Σ_{i<n} Σ_{j<i} (x + j)²,
/// d/dx = Σ_{i<n} (2ix + i(i − 1)) = x n(n − 1) + n(n − 1)(n − 2)/3.
#[differentiable]
fn triangle(x: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        for j in 0..i {
            let t = x + j as f64;
            s += t * t;
        }
    }
    s
}

/// Loop bound from an active value: n = ⌊x⌋, Σ_{k<n} kx = x n(n − 1)/2, d/dx = n(n − 1)/2.
#[differentiable]
pub(crate) fn bound_from_x(x: f64) -> f64 {
    let n = x as usize;
    let mut s = 0.0;
    for k in 0..n {
        s += x * k as f64;
    }
    s
}

/// Bound from two actives: n = ⌊xy⌋, xⁿy; ∇ = (n xⁿ⁻¹ y, xⁿ).
#[differentiable]
fn bound_from_product(x: f64, y: f64) -> f64 {
    let mut acc = y;
    for _ in 0..(x * y) as usize {
        acc = acc * x;
    }
    acc
}

/// `enumerate` over a data slice: Σ wᵢ xⁱ, d/dx = Σ i wᵢ xⁱ⁻¹.
#[differentiable(wrt(x))]
fn weighted_powers(x: f64, ws: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, w) in ws.iter().enumerate() {
        // `w: &f64`: a reference operand of an operator, read as its value.
        s += w * x.powi(i as i32);
    }
    s
}

/// A `&f64` parameter as an operand inside a loop: Σ_{k<n} w xᵏ, ∇ = (Σ k w xᵏ⁻¹, Σ xᵏ).
#[differentiable]
fn ref_weight_powers(x: f64, w: &f64, n: usize) -> f64 {
    let mut s = 0.0;
    for k in 0..n {
        s += w * x.powi(k as i32);
    }
    s
}

/// `zip` of two data slices: Σ tanh(wᵢx + bᵢ), d/dx = Σ wᵢ(1 − tanh²(wᵢx + bᵢ)).
#[differentiable(wrt(x))]
fn tanh_layer(x: f64, ws: &[f64], bs: &[f64]) -> f64 {
    let mut s = 0.0;
    for (w, b) in ws.iter().zip(bs) {
        s += (*w * x + *b).tanh();
    }
    s
}

/// `for &w in ws` over a data `Vec`: Π (x + wᵢ), d/dx = Σᵢ Π_{j≠i} (x + wⱼ).
#[differentiable(wrt(x))]
fn product_roots(x: f64, ws: &Vec<f64>) -> f64 {
    let mut p = 1.0;
    for &w in ws {
        p = p * (x + w);
    }
    p
}

/// `step_by`: x⁰ + x³ + x⁶ + x⁹, d/dx = 3x² + 6x⁵ + 9x⁸.
#[differentiable]
fn step_powers(x: f64) -> f64 {
    let mut s = 0.0;
    for k in (0..10).step_by(3) {
        s += x.powi(k);
    }
    s
}

/// Reversed range, Horner with data coefficients k: Σ_{k<n} k xᵏ, d/dx = Σ k² xᵏ⁻¹.
#[differentiable]
fn rev_horner(x: f64, n: usize) -> f64 {
    let mut acc = 0.0;
    for k in (0..n).rev() {
        acc = acc * x + k as f64;
    }
    acc
}

/// A carried variable that starts as data and becomes active in a branch of the loop:
/// acc = 1, then x at k = 2, then ·x for k > 2: x^{n−2} for n ≥ 3, d/dx = (n − 2) x^{n−3}.
#[differentiable]
fn data_then_active(x: f64, n: usize) -> f64 {
    let mut acc = 1.0;
    for k in 0..n {
        if k == 2 {
            acc = x;
        } else if k > 2 {
            acc = acc * x;
        }
    }
    acc
}

fn fib(n: usize) -> f64 {
    let (mut a, mut b) = (0.0, 1.0);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

#[test]
fn for_loops() {
    let (c, x) = ([1.5, -2.0, 0.5, 3.0], 1.2_f64);
    let dx = 3.0 * c[0] * x * x + 2.0 * c[1] * x + c[2];
    check!(horner, horner_vjp; c, x => ([x * x * x, x * x, x, 1.0], dx));

    let x = 0.7_f64;
    check!(|x| log_series(x, 6), |x| log_series_vjp(x, 6); x => (1.0 - x.powi(6)) / (1.0 - x));
    check!(|x| log_series(x, 0), |x| log_series_vjp(x, 0); x => 0.0);

    let x = 1.3_f64;
    let mut want = 0.0;
    let mut term = 1.0;
    for k in 0..15 {
        want += term;
        term *= x / (k + 1) as f64;
    }
    check!(exp_series, exp_series_vjp; x => want);

    let (a, y, n) = (0.9_f64, 2.0_f64, 7);
    let da = n as f64 * a.powi(n - 1) * y + (1..n).map(|k| k as f64 * a.powi(k - 1)).sum::<f64>();
    check!(|a, y| affine_rec(a, y, 7), |a, y| affine_rec_vjp(a, y, 7); a, y => (da, a.powi(n)));

    let (x, y) = (0.8, -1.1);
    check!(
        |x, y| rotate_norm(x, y, 0.3, 10),
        |x, y| rotate_norm_vjp(x, y, 0.3, 10);
        x, y => (2.0 * x, 2.0 * y)
    );
    let t = 0.4_f64;
    let want = -5.0 * (5.0 * t).sin() + 10.0 * (5.0 * t).cos();
    check!(|t| rotate_angle(t, 5), |t| rotate_angle_vjp(t, 5); t => want);
    check!(
        |x, y| fibonacci(x, y, 10),
        |x, y| fibonacci_vjp(x, y, 10);
        0.3, 0.7 => (fib(10), fib(11))
    );
    check!(|x, y| fibonacci(x, y, 0), |x, y| fibonacci_vjp(x, y, 0); 0.3, 0.7 => (0.0, 1.0));

    let x = 1.05_f64;
    check!(|x| nested_pow(x, 3, 4), |x| nested_pow_vjp(x, 3, 4); x => 13.0 * x.powi(12));
    check!(|x| nested_pow(x, 3, 0), |x| nested_pow_vjp(x, 3, 0); x => 1.0);
    let n = 6.0;
    check!(
        |x| triangle(x, 6),
        |x| triangle_vjp(x, 6);
        x => x * n * (n - 1.0) + n * (n - 1.0) * (n - 2.0) / 3.0
    );

    check!(bound_from_x, bound_from_x_vjp; 4.5 => 6.0);
    check!(bound_from_x, bound_from_x_vjp; 0.5 => 0.0);
    let (x, y) = (1.5_f64, 2.5_f64); // n = 3
    check!(bound_from_product, bound_from_product_vjp; x, y => (3.0 * x * x * y, x.powi(3)));

    let ws = [0.5, -1.0, 2.0, 0.25];
    let x = 0.9_f64;
    let want = -1.0 + 2.0 * 2.0 * x + 3.0 * 0.25 * x * x;
    check!(|x| weighted_powers(x, &ws), |x| weighted_powers_vjp(x, &ws); x => want);
    let w = 1.5_f64;
    let (value, (dx, dw)) = value_with_gradient(ref_weight_powers_vjp(x, &w, 4));
    assert_close(
        "ref_weight_powers value",
        value,
        ref_weight_powers(x, &w, 4),
    );
    let want = (
        w * (1.0 + 2.0 * x + 3.0 * x * x),
        1.0 + x + x * x + x * x * x,
    );
    assert_close("ref_weight_powers", (dx, dw), want);
    check_gradient(
        "ref_weight_powers",
        |(x, w)| ref_weight_powers(x, &w, 4),
        (x, w),
        (dx, dw),
    );
    let bs = [0.1, 0.2, -0.3, 0.0];
    let want: f64 = ws
        .iter()
        .zip(&bs)
        .map(|(w, b)| w * (1.0 - (w * x + b).tanh().powi(2)))
        .sum();
    check!(|x| tanh_layer(x, &ws, &bs), |x| tanh_layer_vjp(x, &ws, &bs); x => want);
    let roots = vec![1.0, -2.0, 0.5];
    let (p, q, r) = (x + 1.0, x - 2.0, x + 0.5);
    check!(
        |x| product_roots(x, &roots),
        |x| product_roots_vjp(x, &roots);
        x => q * r + p * r + p * q
    );

    let x = 0.95_f64;
    check!(step_powers, step_powers_vjp; x => 3.0 * x * x + 6.0 * x.powi(5) + 9.0 * x.powi(8));
    let want: f64 = (1..6).map(|k| (k * k) as f64 * x.powi(k - 1)).sum();
    check!(|x| rev_horner(x, 6), |x| rev_horner_vjp(x, 6); x => want);

    check!(
        |x| data_then_active(x, 6),
        |x| data_then_active_vjp(x, 6);
        1.3 => 4.0 * 1.3_f64.powi(3)
    );
    check!(|x| data_then_active(x, 2), |x| data_then_active_vjp(x, 2); 1.3 => 0.0);
}

// ---------------------------------------------------------------------------------------------
// while
// ---------------------------------------------------------------------------------------------

/// A counted `while`: acc ← acc·x + 1 from 0, n times: Σ_{k<n} xᵏ, d/dx = Σ k xᵏ⁻¹.
#[differentiable]
fn while_count(x: f64, n: usize) -> f64 {
    let mut acc = 0.0;
    let mut i = 0;
    while i < n {
        acc = acc * x + 1.0;
        i += 1;
    }
    acc
}

/// An active condition: y doubles until y ≥ 10; y = x·2ᴷ with K fixed near x, d/dx = 2ᴷ.
#[differentiable]
pub(crate) fn while_double(x: f64) -> f64 {
    let mut y = x;
    while y < 10.0 {
        y = y * 2.0;
    }
    y
}

/// Square roots while y > 2, summed: s = Σ_{k=1..K} x^{2⁻ᵏ}, d/dx = Σ 2⁻ᵏ x^{2⁻ᵏ − 1}
/// (x = 100: √100 = 10, 100^{1/4} ≈ 3.16, 100^{1/8} ≈ 1.78, so K = 3).
#[differentiable]
fn while_sqrt(x: f64) -> f64 {
    let mut y = x;
    let mut s = 0.0;
    while y > 2.0 {
        y = y.sqrt();
        s += y;
    }
    s
}

/// Newton's method for √a with an active stopping test, then two polishing steps: the
/// iterate's derivative converges with it, dy/da = 1/(2√a).
#[differentiable]
pub(crate) fn newton_sqrt(a: f64) -> f64 {
    let mut y = a;
    let mut k = 0;
    while k < 100 && (y * y - a).abs() > 1e-12 * a {
        y = 0.5 * (y + a / y);
        k += 1;
    }
    for _ in 0..2 {
        y = 0.5 * (y + a / y);
    }
    y
}

/// A condition mixing data and active values: y ← y² + 1 while k < max and y < 100;
/// dy/dx = Π 2yₖ over the steps taken.
#[differentiable]
fn while_mixed(x: f64, max: usize) -> f64 {
    let mut y = x;
    let mut k = 0;
    while k < max && y < 100.0 {
        y = y * y + 1.0;
        k += 1;
    }
    y
}

#[test]
fn while_loops() {
    let x = 1.2_f64;
    let want: f64 = (1..5).map(|k| k as f64 * x.powi(k - 1)).sum();
    check!(|x| while_count(x, 5), |x| while_count_vjp(x, 5); x => want);
    check!(while_double, while_double_vjp; 0.7 => 16.0); // 0.7·16 = 11.2
    check!(while_double, while_double_vjp; 12.0 => 1.0);
    let x = 100.0_f64;
    let want: f64 = (1..=3)
        .map(|k| 0.5_f64.powi(k) * x.powf(0.5_f64.powi(k) - 1.0))
        .sum();
    check!(while_sqrt, while_sqrt_vjp; x => want);
    for a in [0.3_f64, 2.0, 50.0] {
        check!(newton_sqrt, newton_sqrt_vjp; a => 0.5 / a.sqrt());
    }
    // y: 1.5 → 3.25 → 11.5625 → 134.69…: stops at y ≥ 100 after 3 steps, or after max = 2.
    let x = 1.5_f64;
    let (y1, y2) = (x * x + 1.0, (x * x + 1.0).powi(2) + 1.0);
    check!(|x| while_mixed(x, 10), |x| while_mixed_vjp(x, 10); x => 8.0 * x * y1 * y2);
    check!(|x| while_mixed(x, 2), |x| while_mixed_vjp(x, 2); x => 4.0 * x * y1);
}

// ---------------------------------------------------------------------------------------------
// A loop of a million iterations
// ---------------------------------------------------------------------------------------------

/// s ← cs + x (k even) or cs + 2x (k odd) from 0, n = 2m times, c = 1 − 10⁻⁶:
/// s = x (c + 2) Σ_{j<m} c²ʲ, d/dx = (c + 2)(1 − cⁿ)/(1 − c²).
#[differentiable]
fn leaky_integrator(x: f64, n: usize) -> f64 {
    let c = 1.0 - 1e-6;
    let mut s = 0.0;
    for k in 0..n {
        if k % 2 == 0 {
            s = c * s + x;
        } else {
            s = c * s + 2.0 * x;
        }
    }
    s
}

#[test]
fn million_iterations_on_a_small_stack() {
    // 2 MiB, the default stack of a spawned thread, named explicitly: the pullback runs the
    // per-iteration records from one buffer, not by recursion.
    let n = 1_000_000;
    let got = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || gradient(leaky_integrator_vjp(0.5, n)))
        .expect("spawn")
        .join()
        .expect("the gradient of a 1e6-iteration loop runs on a 2 MiB stack");
    let c: f64 = 1.0 - 1e-6;
    let want = (c + 2.0) * (1.0 - c.powi(n as i32)) / (1.0 - c * c);
    // Both sides sum a million terms: allow the rounding of that many additions.
    assert!((got - want).abs() <= 1e-9 * want, "got {got}, want {want}");
}

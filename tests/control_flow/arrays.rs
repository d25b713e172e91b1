//! Arrays and `Vec`s: element reads and writes, `push`, array and `vec!` literals.

use crate::common::{assert_close, check, check_vec, check_vjp, padded};
use adjoint::prelude::*;

/// Σ xᵢyᵢ: ∇ = (y, x).
#[differentiable]
fn dot4(x: [f64; 4], y: [f64; 4]) -> f64 {
    let mut s = 0.0;
    for i in 0..4 {
        s += x[i] * y[i];
    }
    s
}

/// log Σ eˣⁱ with the running maximum found by a branch in the loop: ∇ = softmax(x).
#[differentiable]
pub(crate) fn logsumexp(x: [f64; 5]) -> f64 {
    let mut m = x[0];
    for i in 1..5 {
        if x[i] > m {
            m = x[i];
        }
    }
    let mut s = 0.0;
    for i in 0..5 {
        s += (x[i] - m).exp();
    }
    m + s.ln()
}

/// A local data array made active by element writes: vᵢ = xⁱ⁺¹, v₀ + v₃ = x + x⁴,
/// d/dx = 1 + 4x³.
#[differentiable]
fn fill_powers(x: f64) -> f64 {
    let mut v = [0.0; 4];
    for i in 0..4 {
        v[i] = x.powi(i as i32 + 1);
    }
    v[0] + v[3]
}

/// `v[i] = v[i] * s` in place: Σ (i + 1) s xᵢ; ∂x = s(1, 2, 3), ∂s = Σ (i + 1) xᵢ.
#[differentiable]
fn scale_inplace(x: [f64; 3], s: f64) -> f64 {
    let mut v = x;
    for i in 0..3 {
        v[i] = v[i] * s;
    }
    v[0] + 2.0 * v[1] + 3.0 * v[2]
}

/// Prefix sums in place (`v[i] += v[i − 1]`), then Σ cᵢ²: ∂xⱼ = 2 Σ_{i≥j} cᵢ.
#[differentiable]
fn prefix_sq(x: [f64; 5]) -> f64 {
    let mut v = x;
    for i in 1..5 {
        v[i] += v[i - 1];
    }
    let mut s = 0.0;
    for i in 0..5 {
        s += v[i] * v[i];
    }
    s
}

/// Σ (xᵢ₊₁ − xᵢ)²: ∂xⱼ = 2(xⱼ − xⱼ₋₁) − 2(xⱼ₊₁ − xⱼ), without the terms past the ends.
#[differentiable]
fn dirichlet(x: [f64; 6]) -> f64 {
    let mut s = 0.0;
    for i in 0..5 {
        let d = x[i + 1] - x[i];
        s += d * d;
    }
    s
}

/// y = Ax into a local array by `+=` in nested loops, then |y|²:
/// ∂A = 2 y xᵀ, ∂x = 2 Aᵀ y.
#[differentiable]
fn matvec_norm(a: [[f64; 3]; 2], x: [f64; 3]) -> f64 {
    let mut y = [0.0; 2];
    for i in 0..2 {
        for j in 0..3 {
            y[i] += a[i][j] * x[j];
        }
    }
    y[0] * y[0] + y[1] * y[1]
}

/// Bubble sort by swapping active elements (a branch in nested loops), then Σ (i + 1) sortedᵢ:
/// ∂xⱼ = 1 + rank(xⱼ).
#[differentiable]
#[allow(clippy::manual_swap)] // element reads and writes are what is tested
pub(crate) fn sort_weighted(x: [f64; 4]) -> f64 {
    let mut v = x;
    for i in 0..4 {
        for j in 0..3 - i {
            if v[j] > v[j + 1] {
                let t = v[j];
                v[j] = v[j + 1];
                v[j + 1] = t;
            }
        }
    }
    let mut s = 0.0;
    for i in 0..4 {
        s += (i + 1) as f64 * v[i];
    }
    s
}

/// An array result: (mean, mean of squares); the pullback of w is w₀/3 + 2w₁xᵢ/3.
#[differentiable]
fn moments(x: [f64; 3]) -> [f64; 2] {
    let mut m = [0.0; 2];
    for i in 0..3 {
        m[0] += x[i] / 3.0;
        m[1] += x[i] * x[i] / 3.0;
    }
    m
}

/// A `Vec` parameter: Σ vᵢ² + v₀vₙ₋₁, ∂v = 2v + vₙ₋₁e₀ + v₀eₙ₋₁. `len()` of the active `Vec`
/// is data, so it can compute the index n − 1.
#[differentiable]
fn vec_energy(v: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * v[i];
    }
    let n = v.len();
    s + v[0] * v[n - 1]
}

/// `len()` inside the index expression: v₀vₙ₋₁, ∂v = vₙ₋₁e₀ + v₀eₙ₋₁.
#[differentiable]
fn vec_ends(v: Vec<f64>) -> f64 {
    v[0] * v[v.len() - 1]
}

/// A slice parameter: Σ vᵢ xⁱ; ∂v = (xⁱ), ∂x = Σ i vᵢ xⁱ⁻¹.
#[differentiable]
fn slice_poly(v: &[f64], x: f64) -> f64 {
    let mut s = 0.0;
    let mut p = 1.0;
    for i in 0..v.len() {
        s += v[i] * p;
        p = p * x;
    }
    s
}

/// `push` in a loop, then reads: v = (x, x², …, xⁿ), Σᵢ vᵢ vₙ₋₁₋ᵢ = n xⁿ⁺¹,
/// d/dx = n(n + 1) xⁿ.
#[differentiable]
fn push_convolve(x: f64, n: usize) -> f64 {
    let mut v = Vec::new();
    let mut p = x;
    for _ in 0..n {
        v.push(p);
        p = p * x;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += v[i] * v[n - 1 - i];
    }
    s
}

/// `vec!` of actives, weighted by a loop: x + 2y + 3xy, ∇ = (1 + 3y, 2 + 3x).
#[differentiable]
#[allow(clippy::useless_vec)] // `vec!` of actives is what is tested
fn vec_literal(x: f64, y: f64) -> f64 {
    let v = vec![x, y, x * y];
    let mut s = 0.0;
    for i in 0..v.len() {
        s += (i + 1) as f64 * v[i];
    }
    s
}

/// Array literal, element compound assignment and reads: a = (x, y, (x + y)x),
/// a₀ + 2a₁ + 3a₂ = x + 2y + 3x² + 3xy, ∇ = (1 + 6x + 3y, 2 + 3x).
#[differentiable]
fn array_literal(x: f64, y: f64) -> f64 {
    let mut a = [x, y, x + y];
    a[2] *= a[0];
    a[0] + 2.0 * a[1] + 3.0 * a[2]
}

/// `push` onto a `vec!` then element writes reading other elements:
/// v = (x, y, xy); v₀ = xy − y; v₁ = y + v₀ = xy; v₀v₁ = x²y² − xy²,
/// ∇ = (2xy² − y², 2x²y − 2xy).
#[differentiable]
fn push_then_write(x: f64, y: f64) -> f64 {
    let mut v = vec![x, y];
    v.push(x * y);
    v[0] = v[2] - v[1];
    v[1] += v[0];
    v[0] * v[1]
}

/// A `Vec` result built by `push`: running sums of the input; the pullback of w is the
/// suffix sums of w (a shorter w is zero-padded).
#[differentiable]
fn cumsum(v: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i];
        out.push(s);
    }
    out
}

#[test]
fn arrays_and_vecs() {
    let (x, y) = ([1.0, -2.0, 0.5, 3.0], [0.25, 1.5, -1.0, 2.0]);
    check!(dot4, dot4_vjp; x, y => (y, x));

    let x = [0.3, -1.2, 2.0, 0.7, 2.0];
    let z: f64 = x.iter().map(|v: &f64| v.exp()).sum();
    check!(logsumexp, logsumexp_vjp; x => x.map(|v| v.exp() / z));

    check!(fill_powers, fill_powers_vjp; 1.1 => 1.0 + 4.0 * 1.1_f64.powi(3));

    let (x, s) = ([1.0, -0.5, 2.0], 1.5);
    check!(scale_inplace, scale_inplace_vjp; x, s => ([s, 2.0 * s, 3.0 * s], 1.0 - 1.0 + 6.0));

    let x = [1.0, -2.0, 0.5, 3.0, -1.5];
    let mut c = x;
    for i in 1..5 {
        c[i] += c[i - 1];
    }
    let want: [f64; 5] = std::array::from_fn(|j| 2.0 * c[j..].iter().sum::<f64>());
    check!(prefix_sq, prefix_sq_vjp; x => want);

    let x = [0.0, 1.0, 0.5, -1.0, 2.0, 2.5];
    let want: [f64; 6] = std::array::from_fn(|j| {
        let left = if j > 0 { 2.0 * (x[j] - x[j - 1]) } else { 0.0 };
        let right = if j < 5 { -2.0 * (x[j + 1] - x[j]) } else { 0.0 };
        left + right
    });
    check!(dirichlet, dirichlet_vjp; x => want);

    let a = [[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]];
    let x = [0.3, -0.7, 1.1];
    let y: [f64; 2] = std::array::from_fn(|i| (0..3).map(|j| a[i][j] * x[j]).sum());
    let da: [[f64; 3]; 2] = std::array::from_fn(|i| std::array::from_fn(|j| 2.0 * y[i] * x[j]));
    let dx: [f64; 3] = std::array::from_fn(|j| 2.0 * (a[0][j] * y[0] + a[1][j] * y[1]));
    check!(matvec_norm, matvec_norm_vjp; a, x => (da, dx));

    // ranks: 0.5 → 1, −1 → 0, 3 → 3, 2 → 2.
    check!(sort_weighted, sort_weighted_vjp; [0.5, -1.0, 3.0, 2.0] => [2.0, 1.0, 4.0, 3.0]);
    check!(sort_weighted, sort_weighted_vjp; [4.0, 3.0, 2.0, 1.0] => [4.0, 3.0, 2.0, 1.0]);

    let x = [1.0, -2.0, 0.5];
    let w = [1.0, 2.0];
    let (m, pullback) = moments_vjp(x);
    let got = pullback(w);
    assert_close("moments value", m, moments(x));
    assert_close(
        "moments",
        got,
        x.map(|xi| w[0] / 3.0 + 2.0 * w[1] * xi / 3.0),
    );
    check_vjp("moments", moments, x, w, got);

    let v = [1.0, -2.0, 0.5, 3.0];
    let got = gradient(vec_energy_vjp(v.to_vec()));
    check_vec("vec_energy", vec_energy, v, &got, [5.0, -4.0, 1.0, 7.0]);
    let got = gradient(vec_ends_vjp(v.to_vec()));
    check_vec("vec_ends", vec_ends, v, &got, [3.0, 0.0, 0.0, 1.0]);

    let (v, x) = ([1.0, -2.0, 0.5, 3.0], 0.8_f64);
    let (dv, dx) = gradient(slice_poly_vjp(&v, x));
    let want = 0.0 * v[0] + v[1] + 2.0 * v[2] * x + 3.0 * v[3] * x * x;
    check_vec(
        "slice_poly/v",
        |v| slice_poly(&v, x),
        v,
        &dv,
        [1.0, x, x * x, x * x * x],
    );
    let only_x = |x| {
        let (value, pullback) = slice_poly_vjp(&v, x);
        (value, move |seed: f64| pullback(seed).1)
    };
    check!(|x| slice_poly(&v, x), only_x; x => want);
    assert_close("slice_poly/x", dx, want);

    let x = 1.1_f64;
    check!(|x| push_convolve(x, 5), |x| push_convolve_vjp(x, 5); x => 30.0 * x.powi(5));
    let (x, y) = (0.6, -1.3);
    check!(vec_literal, vec_literal_vjp; x, y => (1.0 + 3.0 * y, 2.0 + 3.0 * x));
    check!(array_literal, array_literal_vjp; x, y => (1.0 + 6.0 * x + 3.0 * y, 2.0 + 3.0 * x));
    check!(
        push_then_write,
        push_then_write_vjp;
        x, y => (2.0 * x * y * y - y * y, 2.0 * x * x * y - 2.0 * x * y)
    );

    let v = [1.0, 2.0, -0.5, 4.0];
    let (out, pullback) = cumsum_vjp(&v);
    assert_eq!(out, vec![1.0, 3.0, 2.5, 6.5]);
    let got = pullback(vec![1.0, 0.0, 2.0, -1.0]);
    assert_close("cumsum", padded::<4>(&got), [2.0, 1.0, 1.0, -1.0]);
    // A shorter seed is zero-padded: (1, 1) seeds only the first two sums.
    let (_, pullback) = cumsum_vjp(&v);
    assert_close(
        "cumsum/short seed",
        padded::<4>(&pullback(vec![1.0, 1.0])),
        [2.0, 1.0, 0.0, 0.0],
    );
    // The zero tangent (the empty vector) pulls back to zero.
    let (_, pullback) = cumsum_vjp(&v);
    assert_close(
        "cumsum/zero seed",
        padded::<4>(&pullback(Vec::new())),
        [0.0; 4],
    );
}

//! Generic loops and branches over `Float`, in `f32` and `f64`.

use crate::common::{assert_close_f32, check, check_vec};
use adjoint::prelude::*;

/// xⁿ by a loop: d/dx = n xⁿ⁻¹.
#[differentiable]
fn g_pow_loop<T: Float>(x: T, n: usize) -> T {
    let mut acc = T::ONE;
    for _ in 0..n {
        acc = acc * x;
    }
    acc
}

/// x sin x (x > 0) or x²/2: d/dx = sin x + x cos x, or x.
#[differentiable]
fn g_branch<T: Float>(x: T) -> T {
    if x > T::ZERO {
        x.sin() * x
    } else {
        x * x * T::from_f64(0.5)
    }
}

/// Halve while y > 1, summing the halves: s = x Σ_{k=1..K} 2⁻ᵏ, d/dx = 1 − 2⁻ᴷ
/// (x = 5: 2.5, 1.25, 0.625, K = 3, d/dx = 7/8).
#[differentiable]
fn g_halve<T: Float>(x: T) -> T {
    let mut y = x;
    let mut s = T::ZERO;
    while y > T::ONE {
        y = y * T::from_f64(0.5);
        s = s + y;
    }
    s
}

/// Element reads of a generic array: x₀x₁, ∇ = (x₁, x₀).
#[differentiable]
fn g_read<T: Float>(x: [T; 2]) -> T {
    x[0] * x[1]
}

/// Element reads of a generic array of any length in a loop: Σ xᵢ², ∇ = 2x.
#[differentiable]
fn g_sum_sq<T: Float, const N: usize>(x: [T; N]) -> T {
    let mut s = T::ZERO;
    for i in 0..N {
        s = s + x[i] * x[i];
    }
    s
}

/// Element reads of a generic slice: v₀v₁ + v₂, ∂v = (v₁, v₀, 1).
#[differentiable]
fn g_read_slice<T: Float>(v: &[T]) -> T {
    v[0] * v[1] + v[2]
}

/// Element reads of a generic `Vec`: v₀ sin v₂, ∂v = (sin v₂, 0, v₀ cos v₂).
#[differentiable]
fn g_read_vec<T: Float>(v: Vec<T>) -> T {
    v[0] * v[2].sin()
}

/// k = 0: eˣ, d = eˣ; else k ln x, d = k/x.
#[differentiable]
fn g_match<T: Float>(x: T, k: u8) -> T {
    match k {
        0 => x.exp(),
        _ => x.ln() * T::from_f64(f64::from(k)),
    }
}

/// `push` of x·i then Σ vᵢ² = x² Σ i², d/dx = 2x Σ_{i<n} i².
#[differentiable]
fn g_push<T: Float>(x: T, n: usize) -> T {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(x * T::from_f64(i as f64));
    }
    let mut s = T::ZERO;
    for i in 0..n {
        s = s + v[i] * v[i];
    }
    s
}

#[test]
fn generic_loops_f64() {
    let x = 1.1_f64;
    check!(|x| g_pow_loop::<f64>(x, 6), |x| g_pow_loop_vjp::<f64>(x, 6); x => 6.0 * x.powi(5));
    check!(g_branch::<f64>, g_branch_vjp::<f64>; x => x.sin() + x * x.cos());
    check!(g_branch::<f64>, g_branch_vjp::<f64>; -x => -x);
    check!(g_halve::<f64>, g_halve_vjp::<f64>; 5.0 => 0.875);
    check!(|x| g_match::<f64>(x, 0), |x| g_match_vjp::<f64>(x, 0); x => x.exp());
    check!(|x| g_match::<f64>(x, 3), |x| g_match_vjp::<f64>(x, 3); x => 3.0 / x);
    check!(|x| g_push::<f64>(x, 4), |x| g_push_vjp::<f64>(x, 4); x => 2.0 * x * 14.0);

    let y = -0.6_f64;
    check!(g_read::<f64>, g_read_vjp::<f64>; [x, y] => [y, x]);
    let v = [x, y, 2.5];
    check!(g_sum_sq::<f64, 3>, g_sum_sq_vjp::<f64, 3>; v => v.map(|vi| 2.0 * vi));
    let got = gradient(g_read_slice_vjp::<f64>(&v));
    check_vec(
        "g_read_slice",
        |v| g_read_slice::<f64>(&v),
        v,
        &got,
        [y, x, 1.0],
    );
    let got = gradient(g_read_vec_vjp::<f64>(v.to_vec()));
    let want = [v[2].sin(), 0.0, x * v[2].cos()];
    check_vec("g_read_vec", g_read_vec::<f64>, v, &got, want);
}

#[test]
fn generic_loops_f32() {
    // The f32 gradients agree with the f64 ones (checked above) to f32 precision.
    for x in [-1.3_f32, 0.4, 1.1, 2.5] {
        let x64 = f64::from(x);
        assert_close_f32(
            "g_pow_loop",
            gradient(g_pow_loop_vjp(x, 6)),
            gradient(g_pow_loop_vjp(x64, 6)),
        );
        assert_close_f32(
            "g_branch",
            gradient(g_branch_vjp(x)),
            gradient(g_branch_vjp(x64)),
        );
        assert_close_f32(
            "g_push",
            gradient(g_push_vjp(x, 4)),
            gradient(g_push_vjp(x64, 4)),
        );
        if x > 0.0 {
            assert_close_f32("g_match", gradient(g_match_vjp(x, 3)), 3.0 / x64);
        }
        assert_close_f32("g_match", gradient(g_match_vjp(x, 0)), x64.exp());
    }
    // Generic element reads: the f32 gradients agree with the formulas in f64 (a `Vec`
    // tangent may be shorter than its value, the missing coordinates are zeros).
    let v = [1.1_f32, -0.6, 2.5];
    let [a, b, c] = v.map(f64::from);
    let close = |name: &str, got: &[f32], want: &[f64]| {
        assert!(
            got.len() <= want.len(),
            "{name}: tangent of length {}",
            got.len()
        );
        for (i, w) in want.iter().enumerate() {
            assert_close_f32(name, got.get(i).copied().unwrap_or(0.0), *w);
        }
    };
    close("g_read", &gradient(g_read_vjp([v[0], v[1]])), &[b, a]);
    close(
        "g_sum_sq",
        &gradient(g_sum_sq_vjp(v)),
        &[2.0 * a, 2.0 * b, 2.0 * c],
    );
    close(
        "g_read_slice",
        &gradient(g_read_slice_vjp(&v)),
        &[b, a, 1.0],
    );
    let want = [c.sin(), 0.0, a * c.cos()];
    close("g_read_vec", &gradient(g_read_vec_vjp(v.to_vec())), &want);
    assert_eq!(gradient(g_halve_vjp(5.0_f32)), 0.875);
    assert_eq!(gradient(g_pow_loop_vjp(2.0_f32, 3)), 12.0);
}

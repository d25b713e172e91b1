//! Float methods, `f32`, generic code; recursion, helpers, compound assignments,
//! `without_derivative`.

use super::dual_gradient;
use crate::common::{assert_close, assert_close_f32, check, check_gradient, check_vec};
use adjoint::prelude::*;

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

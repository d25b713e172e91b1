//! The logistic sigmoid and the activations built on it (SiLU, the tanh form of GELU) and on
//! `Φ` (the exact GELU), with their derivatives, in `f32`: each one pass of straight-line
//! code with one exponential (two for the exact GELU's derivative) and one division.

use super::erf::normal_cdf_f32;
use super::exp::exp_f32;

/// `√(2/π)`, of the tanh form of GELU.
const GELU_C: f32 = 0.797_884_6;
/// The cubic coefficient of the tanh form of GELU.
const GELU_A: f32 = 0.044_715;
/// `1/√(2π)`, the normal density at 0.
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;

/// `(σ(t), σ(t)·(1 − σ(t)))` of the logistic `σ(t) = 1/(1 + e⁻ᵗ)`, from `e = e^−|t|` (which
/// cannot overflow) and `d = 1 + e`: `σ = 1/d` for `t ≥ 0`, `e/d` below (no cancellation, and
/// exact down to the subnormals), and `σ(1 − σ) = e/d²` either way. NaN propagated.
#[inline(always)]
fn logistic(t: f32) -> (f32, f32) {
    let e = exp_f32(-t.abs());
    let r = 1.0 / (1.0 + e);
    let s = if t >= 0.0 { r } else { e * r };
    (s, e * r * r)
}

/// `σ(x) = 1/(1 + e⁻ˣ)` in `f32`, within 2 ulp for every `x` (the test sweeps the range
/// against the `f64` formula).
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    logistic(x).0
}

/// SiLU `x·σ(x)`. A NaN input is returned as it is: `x·σ(x)` is then a product of two NaNs,
/// of which the SSE2 build kept one and the AVX builds (operands commuted) the other, so that
/// the sign of the result differed between builds.
#[inline(always)]
pub fn silu_f32(x: f32) -> f32 {
    let v = x * logistic(x).0;
    if x.is_nan() { x } else { v }
}

/// The derivative of SiLU, `σ(x) + x·σ(x)(1 − σ(x))` (= `σ(x)(1 + x(1 − σ(x)))`).
#[inline(always)]
pub fn silu_derivative_f32(x: f32) -> f32 {
    let (s, ds) = logistic(x);
    s + x * ds
}

/// `2u` of the tanh form of GELU, `u = √(2/π)(x + 0.044715x³)`.
#[inline(always)]
fn gelu_2u(x: f32) -> f32 {
    (2.0 * GELU_C) * (x + GELU_A * x * x * x)
}

/// GELU, tanh form, `x/2·(1 + tanh u)`, evaluated as `x·σ(2u)` (the same function:
/// `(1 + tanh u)/2 = σ(2u)`), one exponential and one division.
#[inline(always)]
pub fn gelu_f32(x: f32) -> f32 {
    let v = x * logistic(gelu_2u(x)).0;
    // A NaN input returned as it is, as by `silu_f32`.
    if x.is_nan() { x } else { v }
}

/// The derivative of the tanh-form GELU `x·σ(2u)`: `σ(2u) + x·σ(2u)(1 − σ(2u))·2u′`, with
/// `u′ = √(2/π)(1 + 3·0.044715x²)`.
#[inline(always)]
pub fn gelu_derivative_f32(x: f32) -> f32 {
    let (s, ds) = logistic(gelu_2u(x));
    let du2 = (2.0 * GELU_C) * (1.0 + (3.0 * GELU_A) * x * x);
    s + x * ds * du2
}

/// The exact GELU `x·Φ(x)` (see [`normal_cdf_f32`] for `Φ`).
#[inline(always)]
pub fn gelu_erf_f32(x: f32) -> f32 {
    x * normal_cdf_f32(x)
}

/// The derivative of the exact GELU, `Φ(x) + x·φ(x)` with `φ(x) = e^(−x²/2)/√(2π)`.
#[inline(always)]
pub fn gelu_erf_derivative_f32(x: f32) -> f32 {
    normal_cdf_f32(x) + x * (exp_f32(-0.5 * x * x) * FRAC_1_SQRT_2PI)
}

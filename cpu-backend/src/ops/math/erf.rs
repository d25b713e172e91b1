//! `erf x` and the standard normal distribution function `Φ(x)` in `f32`, from two fitted
//! polynomials: `erf x = x + x·Q(x²)` near 0, and `erfc x = e^(P(x) − x²)` in the tail.

use super::exp::exp_f32;

/// Below this `|x|`, `erf x = x + x·Q(x²)`; above, `1 − erfc |x|` with the sign of `x` (at 1.2,
/// the end of `Q`'s fit, the tail is the more accurate).
const SMALL: f32 = 0.9;
/// `Q(z) ≈ erf(√z)/√z − 1` on `z ∈ [0, 1.44]`, highest degree first: a Chebyshev fit of
/// degree 7 (made with mpmath's `chebyfit`) with 1 taken out of its constant term, error below
/// `5.3·10⁻¹⁰`; `erf x = x + x·Q(x²)`, whose small correction `x·Q` adds little rounding.
const Q: [f32; 8] = [
    -8.019_644e-6,
    1.061_518_9e-4,
    -8.382_541e-4,
    5.213_142_4e-3,
    -2.686_227_5e-2,
    0.112_837_225,
    -0.376_126_35,
    0.128_379_17,
];
/// The tail `[TAIL.0, TAIL.1]` of [`P`]: `erfc x < 2⁻²⁵·…` above 4 (`erf x` rounds to 1 from
/// 3.92 on), and `Φ` uses the tail from `|x/√2| = 0.5` down.
const TAIL: (f32, f32) = (0.5, 4.0);
/// The centre of [`P`]'s variable `d = a − 2.25`.
const TAIL_MID: f32 = 2.25;
/// `P(d) ≈ ln erfc(a) + a²` for `a = 2.25 + d` on `d ∈ [−1.75, 1.75]`, highest degree
/// first: a Chebyshev fit of degree 11 (mpmath's `chebyfit`), error below `4.9·10⁻⁹`. Adding
/// `a²` leaves a slowly varying function of small magnitude (−0.48 to −1.8), so that `P`'s
/// evaluation in `f32` cancels little; `−a²` is subtracted last, and its rounding
/// (`a² ≤ 16`) gives `erfc` a relative error of up to `1.4·10⁻⁶` at the far end.
const P: [f32; 12] = [
    4.123_336_7e-8,
    -1.403_008_1e-7,
    -1.220_798_7e-7,
    2.330_351_2e-6,
    -1.652_503_9e-5,
    1.021_824_1e-4,
    -5.548_972_4e-4,
    2.771_666_3e-3,
    -1.331_253_4e-2,
    6.513_235e-2,
    -0.382_913_8,
    -1.464_959_9,
];

/// Horner's rule, coefficients highest degree first.
#[inline(always)]
fn horner<const N: usize>(coefficients: &[f32; N], x: f32) -> f32 {
    let mut p = coefficients[0];
    for &c in &coefficients[1..] {
        p = p * x + c;
    }
    p
}

/// `erf x` for `|x| < 0.9`, odd in `x`.
#[inline(always)]
fn erf_near_zero(x: f32) -> f32 {
    x + x * horner(&Q, x * x)
}

/// `erfc a` for `a ≥ 0.5`: `e^(P(a − 2.25) − a²)` up to 4, 0 above (and for NaN, as `min`
/// drops it; the callers keep the NaN).
#[inline(always)]
fn erfc_tail(a: f32) -> f32 {
    let a = a.min(TAIL.1);
    let e = exp_f32(horner(&P, a - TAIL_MID) - a * a);
    if a >= TAIL.1 { 0.0 } else { e }
}

/// `erf x` in `f32` for every `x`, within 1.5 ulp (the test sweeps the range against libm's
/// `f64` `erf`), odd, with `erf(±∞) = ±1` and NaN propagated: `x + x·Q(x²)` below 0.9 in
/// magnitude, `±(1 − erfc |x|)` above. Branch-free: a loop over it vectorizes.
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let far = (1.0 - erfc_tail(a)).copysign(x);
    let v = if a < SMALL { erf_near_zero(x) } else { far };
    if x.is_nan() { x } else { v }
}

/// `Φ(x) = (1 + erf(x/√2))/2`, the standard normal distribution function, in `f32`: with
/// `z = x/√2`, as `erfc(−z)/2` below `z = −0.5` (no cancellation: accurate to a few ulp
/// where `Φ` is small, the tail's `3·10⁻⁶` at worst, and 0 from `x = −4√2 = −5.657` on,
/// where `Φ < 10⁻⁸`), else as `(1 + erf z)/2`. NaN propagated.
#[inline(always)]
pub fn normal_cdf_f32(x: f32) -> f32 {
    let z = x * std::f32::consts::FRAC_1_SQRT_2;
    // `erf_f32(z)`'s tail is the same expression as `erfc_tail(|z|)`, computed once.
    let lower = 0.5 * erfc_tail(z.abs());
    let v = if z < -TAIL.0 {
        lower
    } else {
        0.5 + 0.5 * erf_f32(z)
    };
    if x.is_nan() { x } else { v }
}

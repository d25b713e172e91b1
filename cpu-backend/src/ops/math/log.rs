//! `ln x` in `f32`.

use super::exp::{LN2_HI, LN2_LO};

/// The bits of `√½` rounded to `f32`: mantissas are brought into `[√½, √2)`.
const SQRT_HALF_BITS: i32 = 0x3f35_04f3;
/// `2²³`, which scales a subnormal into the normals.
const TWO_23: f32 = 8_388_608.0;

/// `ln x` in `f32` for every `x`, within 1 ulp (the test sweeps the positive floats against
/// `f64::ln`), with `ln(±0) = −∞`, `ln ∞ = ∞`, `ln x = NaN` for `x < 0`, and NaN propagated.
///
/// `x = 2ᵏ·m` with `m ∈ [√½, √2)` (a subnormal is scaled by 2²³ first), so with `f = m − 1`
/// and `s = f/(2 + f)`, `|s| < 0.172`: `ln m = 2·atanh s = f − f²/2 + s·(f²/2 + R)`, where
/// `R = 2s²/3 + 2s⁴/5 + 2s⁶/7 + 2s⁸/9` (the series' next term is below `2·10⁻⁹·ln m`), and
/// `ln x = k·ln 2 + ln m` with `ln 2` split in two so that `k·LN2_HI` is exact. The small
/// terms are added first, `f` and `k·LN2_HI` last. Branch-free: a loop over it vectorizes.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    let subnormal = x < f32::MIN_POSITIVE;
    let scaled = if subnormal { x * TWO_23 } else { x };
    // Adding 1's bits minus √½'s moves the exponent up by one where the mantissa is at least
    // √½'s, so that the mantissa, with √½'s bits added back, lies in [√½, √2).
    let bits = (scaled.to_bits() as i32).wrapping_add(0x3f80_0000 - SQRT_HALF_BITS);
    let k = (bits >> 23) - 127 - if subnormal { 23 } else { 0 };
    let m = f32::from_bits(((bits & 0x007f_ffff) + SQRT_HALF_BITS) as u32);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * (2.0 / 3.0 + z * (2.0 / 5.0 + z * (2.0 / 7.0 + z * (2.0 / 9.0))));
    let half_f2 = 0.5 * f * f;
    let k = k as f32;
    let v = (((s * (half_f2 + r) + k * LN2_LO) - half_f2) + f) + k * LN2_HI;
    if x == f32::INFINITY {
        x
    } else if x > 0.0 {
        v
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else {
        f32::NAN
    }
}

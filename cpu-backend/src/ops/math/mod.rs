//! Elementary functions written so that a loop over them vectorizes: straight-line float
//! arithmetic and bit operations, no calls and no branches.
//!
//! libm's `tanhf` is a scalar call of about 20–30 ns on the development machine, which made
//! the `tanh` of a 32-wide hidden state cost more than the matrix product feeding it (the RNN
//! step of `benches/steps.rs`). [`tanh_f32`] runs four or eight lanes at a time instead. So
//! does [`exp_f32`]: libm's `expf` made the `[128, 10]` log-softmax of the MNIST MLP's loss
//! and the exponential in its pullback cost 8.5 and 5 µs (about 6.5 ns an element).
//! `f64` keeps libm: it is the type of gradient checks, where the last bit matters more than
//! speed.

/// `tanh` and `exp` on every element of a float buffer, through the fastest accurate form
/// for the type.
pub(crate) trait Elementary: Copy {
    /// `tanh self`.
    fn tanh_elementwise(self) -> Self;
    /// `e^self`.
    fn exp_elementwise(self) -> Self;
}

impl Elementary for f32 {
    #[inline(always)]
    fn tanh_elementwise(self) -> f32 {
        tanh_f32(self)
    }

    #[inline(always)]
    fn exp_elementwise(self) -> f32 {
        exp_f32(self)
    }
}

impl Elementary for f64 {
    #[inline(always)]
    fn tanh_elementwise(self) -> f64 {
        self.tanh()
    }

    #[inline(always)]
    fn exp_elementwise(self) -> f64 {
        self.exp()
    }
}

/// Below this `|x|`, tanh is evaluated by its odd polynomial, above it through `e^{2|x|}`.
const POLY_MAX: f32 = 0.7;
/// Above this `|x|`, `tanh x` rounds to ±1 in `f32` (1 − tanh 10 ≈ 4·10⁻⁹ < 2⁻²⁵).
const SATURATE: f32 = 10.0;
/// `c₀ … c₅` of `tanh x ≈ x + x³·(c₀ + c₁x² + … + c₅x¹⁰)` on `[0, 0.7]`: a least-squares fit
/// of the relative error (`tanh`'s Taylor coefficients are −1/3, 2/15, −17/315, …; the fit
/// trades the higher ones for accuracy at the end of the interval).
const POLY: [f32; 6] = [
    -3.333_332_5e-1,
    1.333_3e-1,
    -5.392_231e-2,
    2.157_617_4e-2,
    -7.892_22e-3,
    1.901_518_1e-3,
];

/// `tanh x` in `f32`, within 1.5 ulp of the exact value for every input (the test sweeps the
/// range against `f64::tanh`; the largest error seen is about 1.1 ulp), with
/// `tanh(±0) = ±0`, `tanh(±∞) = ±1` and NaN propagated.
///
/// For `|x| < 0.7` an odd polynomial; above, `1 − 2/(e^{2|x|} + 1)`, whose cancellation
/// costs at most a factor ~2.4 in relative error at the switch point; the sign is copied
/// back at the end. Both forms are computed and one is selected, so the function is
/// branch-free.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let a = x.abs().min(SATURATE);
    let a2 = a * a;
    let mut p = POLY[5];
    for &c in POLY[..5].iter().rev() {
        p = p * a2 + c;
    }
    let near_zero = a + a * a2 * p;
    let far = 1.0 - 2.0 / (exp_f32(2.0 * a) + 1.0);
    let t = if a < POLY_MAX { near_zero } else { far };
    if x.is_nan() { x } else { t.copysign(x) }
}

/// `1.5 · 2²³`: adding it to a float of magnitude below 2²² rounds that float to an integer,
/// which then sits in the low mantissa bits.
const SHIFT: f32 = 12_582_912.0;
/// `ln 2` split Cody–Waite style: `n · LN2_HI` is exact for the `n` used here, and
/// `LN2_HI + LN2_LO` is `ln 2` to about 2⁻⁴⁴.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;

/// Beyond these bounds `eʸ` overflows to `+∞` (`e^88.73 > f32::MAX`) or rounds to 0
/// (`e^-103.98` is below half the smallest subnormal); inside them `n` of [`exp_f32`] fits
/// two normal powers of two.
const EXP_RANGE: (f32, f32) = (-104.0, 89.0);

/// `eʸ` in `f32` for every `y`, within 1.5 ulp (the test sweeps the range against
/// `f64::exp`), with `e^-∞ = 0`, `e^∞ = ∞` and NaN propagated: `y = n·ln 2 + r` with
/// `|r| ≤ ln 2 / 2`, `eʳ` by its degree-7 Taylor polynomial (truncation error below
/// `r⁸/8! < 6·10⁻⁹`), and `2ⁿ` as the product of two powers of two built from their exponent
/// bits (one alone cannot reach the subnormals and the overflow). Branch-free, so a loop over
/// it vectorizes.
#[inline(always)]
pub fn exp_f32(y: f32) -> f32 {
    // `clamp` keeps a NaN.
    let y = y.clamp(EXP_RANGE.0, EXP_RANGE.1);
    let shifted = y * std::f32::consts::LOG2_E + SHIFT;
    let n = shifted - SHIFT;
    let r = (y - n * LN2_HI) - n * LN2_LO;
    // 1/7!, 1/6!, …, 1/1!, 1/0!, highest first for Horner's rule.
    const TAYLOR: [f32; 8] = [
        1.0 / 5040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ];
    let mut p = TAYLOR[0];
    for &c in &TAYLOR[1..] {
        p = p * r + c;
    }
    // The integer n sits in the low bits of `shifted`; 2ⁿ = 2^h · 2^(n − h) with h = n / 2
    // (both biased exponents, h + 127 and n − h + 127, within 52..=192). Each product with a
    // power of two is exact unless the result is subnormal or infinite, so `p·2ⁿ` is rounded
    // once.
    let n = shifted.to_bits().wrapping_sub(SHIFT.to_bits()) as i32;
    let h = n >> 1;
    let pow2 = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
    p * pow2(h) * pow2(n - h)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `|approx − exact|` in units of the last place of the exact value rounded to `f32`.
    fn ulps(approx: f32, exact: f64) -> f64 {
        let rounded = exact as f32;
        let ulp = if rounded == 0.0 {
            f64::from(f32::from_bits(1))
        } else {
            let up = f32::from_bits(rounded.abs().to_bits() + 1);
            f64::from(up) - f64::from(rounded.abs())
        };
        (f64::from(approx) - exact).abs() / ulp
    }

    #[test]
    fn tanh_within_one_and_a_half_ulp() {
        let mut worst = (0.0_f64, 0.0_f32);
        // Every 389th float from the smallest subnormal up to 12 (both signs), plus the
        // switch point's neighbours.
        let last = 12.0_f32.to_bits();
        let mut bits = 1_u32;
        let mut check = |x: f32| {
            for x in [x, -x] {
                let e = ulps(tanh_f32(x), f64::from(x).tanh());
                if e > worst.0 {
                    worst = (e, x);
                }
            }
        };
        while bits <= last {
            check(f32::from_bits(bits));
            bits += 389;
        }
        for k in -64..64 {
            check(f32::from_bits((POLY_MAX.to_bits() as i32 + k) as u32));
        }
        assert!(
            worst.0 <= 1.5,
            "tanh_f32 is {} ulp off at {}",
            worst.0,
            worst.1
        );
    }

    #[test]
    fn exp_within_one_and_a_half_ulp() {
        let mut worst = (0.0_f64, 0.0_f32);
        // Every 97th float of magnitude below 105 (both signs): results from 0 through the
        // subnormals to ∞.
        let last = 105.0_f32.to_bits();
        let mut bits = 0_u32;
        while bits <= last {
            for x in [f32::from_bits(bits), -f32::from_bits(bits)] {
                let exact = f64::from(x).exp();
                let got = exp_f32(x);
                if exact > f64::from(f32::MAX) {
                    assert_eq!(got, f32::INFINITY, "e^{x}");
                    continue;
                }
                let e = ulps(got, exact);
                if e > worst.0 {
                    worst = (e, x);
                }
            }
            bits += 97;
        }
        assert!(
            worst.0 <= 1.5,
            "exp_f32 is {} ulp off at {}",
            worst.0,
            worst.1
        );
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
        assert!((exp_f32(std::f32::consts::LN_2) - 2.0).abs() <= f32::EPSILON);
    }

    #[test]
    fn tanh_special_values() {
        assert_eq!(tanh_f32(0.0).to_bits(), 0.0_f32.to_bits());
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0_f32).to_bits());
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f32(30.0), 1.0);
        assert_eq!(tanh_f32(-1e30), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        // Exact values: tanh(ln 3 / 2) = (3 − 1)/(3 + 1) = 1/2, tanh(ln 2) = 3/5.
        let half = (0.5 * 3.0_f64.ln()) as f32;
        assert!(ulps(tanh_f32(half), f64::from(half).tanh()) <= 1.5);
        assert!((tanh_f32(half) - 0.5).abs() < 1e-7);
        assert!((tanh_f32(std::f32::consts::LN_2) - 0.6).abs() < 1e-7);
    }
}

//! Elementary functions written so that a loop over them vectorizes: straight-line float
//! arithmetic and bit operations, no calls and no branches.
//!
//! libm's `tanhf` is a scalar call of about 20–30 ns on the development machine, which made
//! the `tanh` of a 32-wide hidden state cost more than the matrix product feeding it (the RNN
//! step of `benches/steps.rs`). [`tanh_f32`] runs four or eight lanes at a time instead.
//! `f64` keeps libm: it is the type of gradient checks, where the last bit matters more than
//! speed.

/// `tanh` on every element of a float buffer, through the fastest accurate form for the type.
pub(crate) trait Tanh: Copy {
    /// `tanh self`.
    fn tanh_elementwise(self) -> Self;
}

impl Tanh for f32 {
    #[inline(always)]
    fn tanh_elementwise(self) -> f32 {
        tanh_f32(self)
    }
}

impl Tanh for f64 {
    #[inline(always)]
    fn tanh_elementwise(self) -> f64 {
        self.tanh()
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

/// `eʸ` for `0 ≤ y ≤ 20` (what [`tanh_f32`] needs), within about 1 ulp: `y = n·ln 2 + r`
/// with `|r| ≤ ln 2 / 2`, `eʳ` by its degree-7 Taylor polynomial (truncation error below
/// `r⁸/8! < 6·10⁻⁹`), and `2ⁿ` built from its exponent bits.
#[inline(always)]
fn exp_f32(y: f32) -> f32 {
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
    // The integer n sits in the low bits of `shifted`; 2ⁿ has the biased exponent n + 127.
    let n_bits = shifted.to_bits().wrapping_sub(SHIFT.to_bits());
    p * f32::from_bits(n_bits.wrapping_add(127) << 23)
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

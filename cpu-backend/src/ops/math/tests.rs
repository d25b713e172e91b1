//! The `f32` kernels against `f64` libm: the largest error over a dense sweep of the floats
//! (every `STRIDE`-th bit pattern of each sign, which passes through the subnormals, the
//! switch points and the large magnitudes), the special values, and the same bits from every
//! build this CPU runs.

use super::erf::{erf_f32, normal_cdf_f32};
use super::exp::expm1_f32;
use super::*;
use crate::ops::simd::{Kernel, each_build};

/// Every 97th float: about 44 million inputs per sign over the whole range.
const STRIDE: usize = 97;

/// `|approx − exact|` in units of the last place of the exact value rounded to `f32` (the
/// smallest subnormal's for 0).
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

/// `|approx − exact|` in units of 2⁻²⁴ (an ulp of values in `[1, 2)`): the measure of the
/// derivatives, which are `O(1)` and cross 0.
fn absolute(approx: f32, exact: f64) -> f64 {
    (f64::from(approx) - exact).abs() * f64::from(1u32 << 24)
}

/// The finite floats of the sweep, both signs, from 0 up to `max` in magnitude.
fn sweep(max: f32) -> impl Iterator<Item = f32> {
    (0..=max.to_bits())
        .step_by(STRIDE)
        .flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)])
}

/// The largest error `measure(f(x), exact(x))` over the sweep, with its input, where
/// `exact(x)` is finite and within `f32`'s range (the overflowing inputs are checked apart).
fn worst(
    f: impl Fn(f32) -> f32,
    exact: impl Fn(f64) -> f64,
    measure: fn(f32, f64) -> f64,
    max: f32,
) -> (f64, f32) {
    let mut worst = (0.0, 0.0);
    for x in sweep(max) {
        let want = exact(f64::from(x));
        if !want.is_finite() || want.abs() > f64::from(f32::MAX) {
            continue;
        }
        let e = measure(f(x), want);
        if e > worst.0 || e.is_nan() {
            worst = (e, x);
        }
    }
    worst
}

#[track_caller]
fn assert_within(name: &str, (error, at): (f64, f32), bound: f64) {
    eprintln!("{name}: largest error {error:.3} at {at:e} (bound {bound})");
    assert!(
        error <= bound,
        "{name} is {error} off at {at:e} (bound {bound})"
    );
}

/// The `f64` references: libm, and the ops' own scalar meaning.
fn erf64(x: f64) -> f64 {
    libm::erf(x)
}
fn cdf64(x: f64) -> f64 {
    0.5 * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
}
fn sigmoid64(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        x.exp() / (1.0 + x.exp())
    }
}
/// The tanh-form GELU as `x·σ(2u)`: `UnaryOp::Gelu`'s `x/2·(1 + tanh u)` in `f64` cancels
/// to 0 for `x < −6` (`tanh u` rounds to −1), where the `f32` kernel has the true, tiny value.
fn gelu64(x: f64) -> f64 {
    let u = 0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x);
    x * sigmoid64(2.0 * u)
}

#[test]
fn exp_and_expm1_within_one_and_a_half_ulp() {
    assert_within("exp_f32", worst(exp_f32, f64::exp, ulps, 105.0), 1.5);
    assert_within("expm1_f32", worst(expm1_f32, f64::exp_m1, ulps, 105.0), 1.5);
    for (f, name) in [(exp_f32 as fn(f32) -> f32, "exp"), (expm1_f32, "expm1")] {
        assert_eq!(f(100.0), f32::INFINITY, "{name}");
        assert_eq!(f(f32::INFINITY), f32::INFINITY, "{name}");
        assert!(f(f32::NAN).is_nan(), "{name}");
    }
    assert_eq!((exp_f32(0.0), exp_f32(-0.0)), (1.0, 1.0));
    assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp_f32(-104.0), 0.0);
    assert_eq!(expm1_f32(0.0).to_bits(), 0.0_f32.to_bits());
    assert_eq!(expm1_f32(-0.0).to_bits(), (-0.0_f32).to_bits());
    assert_eq!(expm1_f32(f32::NEG_INFINITY), -1.0);
    assert_eq!(expm1_f32(-40.0), -1.0);
    // The smallest subnormal: expm1 x = x.
    assert_eq!(expm1_f32(f32::from_bits(1)), f32::from_bits(1));
    assert!((exp_f32(std::f32::consts::LN_2) - 2.0).abs() <= f32::EPSILON);
    assert!((expm1_f32(std::f32::consts::LN_2) - 1.0).abs() <= f32::EPSILON);
}

#[test]
fn ln_within_one_ulp() {
    let ln = worst(ln_f32, f64::ln, ulps, f32::MAX);
    assert_within("ln_f32", ln, 1.0);
    assert_eq!(ln_f32(1.0), 0.0);
    assert_eq!(ln_f32(0.0), f32::NEG_INFINITY);
    assert_eq!(ln_f32(-0.0), f32::NEG_INFINITY);
    assert_eq!(ln_f32(f32::INFINITY), f32::INFINITY);
    assert!(ln_f32(-1.0).is_nan() && ln_f32(f32::NEG_INFINITY).is_nan());
    assert!(ln_f32(f32::NAN).is_nan());
    // The smallest subnormal, 2⁻¹⁴⁹, and the largest float.
    let tiny = -149.0 * std::f64::consts::LN_2;
    assert!(ulps(ln_f32(f32::from_bits(1)), tiny) <= 1.0);
    assert!(ulps(ln_f32(f32::MAX), f64::from(f32::MAX).ln()) <= 1.0);
}

#[test]
fn tanh_within_one_and_a_half_ulp() {
    assert_within("tanh_f32", worst(tanh_f32, f64::tanh, ulps, f32::MAX), 1.5);
    assert_eq!(tanh_f32(0.0).to_bits(), 0.0_f32.to_bits());
    assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0_f32).to_bits());
    assert_eq!(
        (tanh_f32(f32::INFINITY), tanh_f32(f32::NEG_INFINITY)),
        (1.0, -1.0)
    );
    assert_eq!((tanh_f32(30.0), tanh_f32(-1e30)), (1.0, -1.0));
    assert!(tanh_f32(f32::NAN).is_nan());
    // Exact values: tanh(ln 3 / 2) = (3 − 1)/(3 + 1) = 1/2, tanh(ln 2) = 3/5.
    assert!((tanh_f32((0.5 * 3.0_f64.ln()) as f32) - 0.5).abs() < 1e-7);
    assert!((tanh_f32(std::f32::consts::LN_2) - 0.6).abs() < 1e-7);
}

#[test]
fn erf_within_one_and_a_half_ulp() {
    assert_within("erf_f32", worst(erf_f32, erf64, ulps, f32::MAX), 1.5);
    assert_eq!(erf_f32(0.0).to_bits(), 0.0_f32.to_bits());
    assert_eq!(erf_f32(-0.0).to_bits(), (-0.0_f32).to_bits());
    assert_eq!(
        (erf_f32(f32::INFINITY), erf_f32(f32::NEG_INFINITY)),
        (1.0, -1.0)
    );
    assert_eq!((erf_f32(4.0), erf_f32(-1e30)), (1.0, -1.0));
    assert!(erf_f32(f32::NAN).is_nan());
    // erf is odd, and 2x/√π near 0 (a subnormal stays one).
    assert_eq!(erf_f32(-0.7), -erf_f32(0.7));
    assert_eq!(erf_f32(f32::from_bits(8)), f32::from_bits(9));
}

#[test]
fn logistic_functions_within_their_bounds() {
    assert_within(
        "sigmoid_f32",
        worst(sigmoid_f32, sigmoid64, ulps, f32::MAX),
        3.0,
    );
    assert_within(
        "silu_f32",
        worst(
            |x| if x > -87.0 { silu_f32(x) } else { 0.0 },
            |x| if x > -87.0 { x * sigmoid64(x) } else { 0.0 },
            ulps,
            f32::MAX,
        ),
        3.5,
    );
    // Below, σ(x) is a subnormal of few digits, and so is x·σ(x): the error is absolute.
    for x in [-90.0_f32, -103.97, -200.0] {
        let err = f64::from(silu_f32(x)) - f64::from(x) * sigmoid64(f64::from(x));
        assert!(
            err.abs() <= f64::from(x).abs() * f64::from(f32::from_bits(1)),
            "{x}"
        );
    }
    let above = |x: f32| x >= -1.5;
    assert_within(
        "gelu_f32 above −1.5",
        worst(
            |x| if above(x) { gelu_f32(x) } else { 0.0 },
            |x| if x >= -1.5 { gelu64(x) } else { 0.0 },
            ulps,
            1e10,
        ),
        6.0,
    );
    // Below, y falls off as e^(−2u), u cubic in x: the rounding of `2u` (up to 85 at
    // x = −9.9) is a relative error of y as large as the function's condition number
    // `|x·y′/y| ≈ 2|x·u′|` (220 at −9.9) times 2⁻²⁴, in any `f32` evaluation.
    let relative = |approx: f32, exact: f64| (f64::from(approx) - exact).abs() / exact.abs();
    assert_within(
        "gelu_f32 on [−10, −1.5]",
        worst(
            |x| if above(x) { 1.0 } else { gelu_f32(x) },
            |x| if x >= -1.5 { 1.0 } else { gelu64(x) },
            relative,
            10.0,
        ),
        2e-5,
    );
    assert_eq!((sigmoid_f32(0.0), sigmoid_f32(-0.0)), (0.5, 0.5));
    assert_eq!(
        (sigmoid_f32(f32::INFINITY), sigmoid_f32(f32::NEG_INFINITY)),
        (1.0, 0.0)
    );
    // σ(−100) = e^-100 is a subnormal, and gets the subnormal's ulp.
    assert!(ulps(sigmoid_f32(-100.0), sigmoid64(-100.0)) <= 3.0);
    assert!(sigmoid_f32(f32::NAN).is_nan() && gelu_f32(f32::NAN).is_nan());
    assert_eq!(gelu_f32(-0.0).to_bits(), (-0.0_f32).to_bits());
    assert_eq!(
        (gelu_f32(f32::INFINITY), gelu_f32(-20.0)),
        (f32::INFINITY, -0.0)
    );
}

#[test]
fn exact_gelu_within_its_bounds() {
    let relative = |approx: f32, exact: f64| (f64::from(approx) - exact).abs() / exact.abs();
    let gelu = |x: f64| x * cdf64(x);
    let upper = worst(
        |x| if x >= -2.0 { gelu_erf_f32(x) } else { 0.0 },
        |x| if x >= -2.0 { gelu(x) } else { 0.0 },
        ulps,
        1e30,
    );
    assert_within("gelu_erf_f32 above −2", upper, 9.0);
    let lower = worst(
        |x| {
            if (-5.65..-2.0).contains(&x) {
                gelu_erf_f32(x)
            } else {
                1.0
            }
        },
        |x| {
            if (-5.65..-2.0).contains(&x) {
                gelu(x)
            } else {
                1.0
            }
        },
        relative,
        5.65,
    );
    assert_within("gelu_erf_f32 on [−5.65, −2]", lower, 3e-6);
    // From z = x/√2 = −4 on, Φ is taken to be 0.
    for x in [-5.66_f32, -8.0, -100.0, -1e30] {
        assert!(
            gelu_erf_f32(x) == 0.0 && gelu(f64::from(x)).abs() < 1e-7,
            "{x}"
        );
    }
    assert!(gelu_erf_f32(f32::NAN).is_nan() && normal_cdf_f32(f32::NAN).is_nan());
    assert_eq!(gelu_erf_f32(f32::INFINITY), f32::INFINITY);
    assert_eq!(normal_cdf_f32(0.0), 0.5);
}

#[test]
fn derivatives_within_four_units_of_two_to_the_minus_24() {
    let d_silu = |x: f64| {
        let s = sigmoid64(x);
        s * (1.0 + x * (1.0 - s))
    };
    let d_gelu = |x: f64| BinaryOp::GeluGrad.eval(x, 1.0);
    let d_gelu_erf = |x: f64| BinaryOp::GeluErfGrad.eval(x, 1.0);
    /// A derivative kernel, named, with its `f64` reference.
    type Case<'a> = (&'a str, fn(f32) -> f32, &'a dyn Fn(f64) -> f64);
    let cases: [Case; 3] = [
        ("silu", silu_derivative_f32, &d_silu),
        ("gelu", gelu_derivative_f32, &d_gelu),
        ("gelu_erf", gelu_erf_derivative_f32, &d_gelu_erf),
    ];
    for (name, f, exact) in cases {
        assert_within(name, worst(f, exact, absolute, 1e9), 4.0);
    }
}

/// Every build the CPU runs (baseline, AVX2 + FMA, AVX-512) gives the same bits, on a buffer
/// long enough for the vector loops' bodies and tails. Each kernel is a loop in a type's
/// `#[inline(always)]` `run` that names its function (as the elementwise loops do), so that
/// it is compiled into each build: a closure run by `each_build` would be compiled once, out
/// of line, in the baseline build.
#[test]
fn every_build_gives_the_same_bits() {
    let inputs: Vec<f32> = sweep(100.0)
        .step_by(9_973)
        .chain([f32::NAN, f32::INFINITY, f32::NEG_INFINITY])
        .collect();
    macro_rules! same_bits {
        ($($f:ident)*) => {$({
            /// The bits of the function on every input.
            #[derive(Clone)]
            struct Bits<'a>(&'a [f32]);

            impl Kernel for Bits<'_> {
                type Output = Vec<u32>;
                #[inline(always)]
                unsafe fn run<const FMA: bool>(self) -> Vec<u32> {
                    let mut out = vec![0; self.0.len()];
                    for (o, &x) in out.iter_mut().zip(self.0) {
                        *o = $f(x).to_bits();
                    }
                    out
                }
            }
            // SAFETY: the kernel needs nothing of its build.
            let builds = unsafe { each_build(Bits(&inputs)) };
            let (first, want) = &builds[0];
            for (build, got) in &builds[1..] {
                let differ = got.iter().zip(want).position(|(a, b)| a != b);
                assert!(
                    differ.is_none(),
                    "{}: {build} and {first} differ at {:?}",
                    stringify!($f),
                    differ.map(|i| inputs[i])
                );
            }
        })*};
    }
    same_bits!(
        exp_f32 expm1_f32 ln_f32 tanh_f32 erf_f32 sigmoid_f32 silu_f32 gelu_f32 gelu_erf_f32
        silu_derivative_f32 gelu_derivative_f32 gelu_erf_derivative_f32
    );
    assert!(has_avx512_or_says_why());
}

/// Whether this CPU ran all three builds; a CPU without AVX-512 ran fewer, which the test
/// output says.
fn has_avx512_or_says_why() -> bool {
    if !crate::ops::simd::has_avx512() {
        eprintln!("this CPU has no AVX-512: only the baseline and AVX2 builds were compared");
    }
    true
}

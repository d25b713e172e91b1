//! `match` over an active float with patterns that compare or bind it (a name, `_`, ranges,
//! `|`, `v @ range`, tuples of those) and guards, in both modes: rewritten as an `if` chain on the value
//! (patterns/scalar_match.rs). Until then any such `match` was rejected. Each derivative is
//! exact on every arm and checked against central finite differences away from the arms'
//! boundaries, and forward against reverse.

use crate::common::check_gradient;
use adjoint::prelude::*;

/// x² above 1 (a guard on a binding), 2x below: d/dx = 2x or 2.
#[differentiable(forward)]
fn guarded(x: f64) -> f64 {
    match x {
        v if v > 1.0 => v * v,
        v => 2.0 * v,
    }
}

/// −x·y below 0, x²y on [0, 1], √x·y above: ranges of every kind, another active value in the
/// arms. ∂x = −y, 2xy, y/(2√x); ∂y = −x, x², √x.
#[differentiable(forward)]
fn piecewise(x: f64, y: f64) -> f64 {
    match x {
        ..0.0 => -x * y,
        0.0..=1.0 => x * x * y,
        _ => x.sqrt() * y,
    }
}

/// |u| outside (−2, 2) (an or-pattern of ranges), u³ inside, u bound by `u @ ..`; u = 3x:
/// d/dx = ±3 outside, 81x² inside.
#[differentiable(forward)]
fn outside_or_cube(x: f64) -> f64 {
    match 3.0 * x {
        ..=-2.0 | 2.0.. => (3.0 * x).abs(),
        u @ -2.0..2.0 => u * u * u,
        _ => 0.0,
    }
}

/// A `match` on a tuple of active values, binding and comparing its parts with a guard:
/// ab when a > b ≥ 0, a otherwise (a = x, b = y²). ∂ = (y², 2xy) or (1, 0).
#[differentiable(forward)]
fn pair_match(x: f64, y: f64) -> f64 {
    match (x, y * y) {
        (a, b @ 0.0..) if a > b => a * b,
        (a, _) => a,
    }
}

#[test]
fn matches_on_active_floats_differentiate_each_arm() {
    for (x, y, want) in [(2.0, 0.5, (0.25, 2.0)), (0.1, 0.9, (1.0, 0.0))] {
        let got = gradient(pair_match_vjp(x, y));
        crate::common::assert_close("pair_match", got, want);
        check_gradient("pair_match", |(x, y)| pair_match(x, y), (x, y), got);
        let (_, t) = pair_match_jvp(x, y, 0.3, 0.7);
        assert!(
            (t - (want.0 * 0.3 + want.1 * 0.7)).abs() < 1e-12,
            "pair_match jvp"
        );
    }
    for (x, want) in [(1.5, 3.0), (0.5, 2.0), (-2.0, 2.0)] {
        let got = gradient(guarded_vjp(x));
        assert_eq!(got, want, "guarded at {x}");
        check_gradient("guarded", guarded, x, got);
        assert_eq!(guarded_jvp(x, 1.0).1, want);
    }
    let y = 0.8;
    for x in [-0.5, 0.4, 2.25] {
        let got = gradient(piecewise_vjp(x, y));
        let want = if x < 0.0 {
            (-y, -x)
        } else if x <= 1.0 {
            (2.0 * x * y, x * x)
        } else {
            (y / (2.0 * x.sqrt()), x.sqrt())
        };
        crate::common::assert_close("piecewise", got, want);
        check_gradient("piecewise", |(x, y)| piecewise(x, y), (x, y), got);
        let (_, t) = piecewise_jvp(x, y, 0.3, -0.7);
        assert!(
            (t - (want.0 * 0.3 - want.1 * 0.7)).abs() < 1e-12,
            "piecewise jvp at {x}"
        );
    }
    for (x, want) in [(1.0, 3.0), (-1.0, -3.0), (0.2, 81.0 * 0.04)] {
        let got = gradient(outside_or_cube_vjp(x));
        assert!((got - want).abs() < 1e-12, "outside_or_cube at {x}: {got}");
        check_gradient("outside_or_cube", outside_or_cube, x, got);
        assert!((outside_or_cube_jvp(x, 1.0).1 - want).abs() < 1e-12);
    }
}

//! The forward rules of the float methods.

use super::{Binary, Unary, check_binary_table, check_unary_table};
use crate::NoTangent;
use crate::float::METHOD_NAMES;
use crate::rules::methods::{BINARY_TABLE, FloatMethods, UNARY_TABLE};
use std::f64::consts::LN_2;

/// `powi`, `mul_add` and `clamp` have rules of their own, with an integer or a third argument.
const OWN_RULES: [&str; 3] = ["powi", "mul_add", "clamp"];

/// Every method of [`Float`](crate::Float) has a forward rule: the tables of the rule macro
/// name each (or it is one of [`OWN_RULES`]), and nothing else.
#[test]
fn every_float_method_has_a_forward_rule() {
    let tabled = UNARY_TABLE
        .iter()
        .map(|r| r.name)
        .chain(BINARY_TABLE.iter().map(|r| r.name));
    let mut with_rules: Vec<&str> = tabled.chain(OWN_RULES).collect();
    let mut methods = METHOD_NAMES.to_vec();
    with_rules.sort_unstable();
    methods.sort_unstable();
    assert_eq!(with_rules, methods);
}

#[test]
fn unary_methods_against_finite_differences_and_their_pullbacks() {
    check_unary_table(UNARY_TABLE);
}

#[test]
fn binary_methods_against_finite_differences_and_their_pullbacks() {
    check_binary_table(BINARY_TABLE);
}

/// `powi` for several `n` and `mul_add`, as table rules of one or two inputs.
#[test]
fn powi_and_mul_add_against_finite_differences_and_their_pullbacks() {
    macro_rules! powi {
        ($($n:literal)*) => {[$(Unary {
            name: concat!("powi(", $n, ")"),
            value: |x| x.powi($n),
            jvp: |x, t| x.powi_jvp_full($n, (t.as_ref(), None)),
            vjp: |x, w| x.powi_vjp_full($n, [true, false]).1(w).0,
        },)*]};
    }
    check_unary_table(&powi!(-3 -1 0 1 2 5));
    // `mul_add` in each pair of its inputs, the third held fixed.
    let pairs = [
        Binary {
            name: "mul_add(x, a; b = 0.3)",
            value: |x, a| x.mul_add(a, 0.3),
            jvp: |x, a, t| x.mul_add_jvp_full(a, 0.3, (t.0.as_ref(), t.1, None)),
            vjp: |x, a, w| {
                let (dx, da, _) = x.mul_add_vjp_full(a, 0.3, [true; 3]).1(w);
                (dx, da)
            },
        },
        Binary {
            name: "mul_add(x, b; a = -1.1)",
            value: |x, b| x.mul_add(-1.1, b),
            jvp: |x, b, t| x.mul_add_jvp_full(-1.1, b, (t.0.as_ref(), None, t.1)),
            vjp: |x, b, w| {
                let (dx, _, db) = x.mul_add_vjp_full(-1.1, b, [true; 3]).1(w);
                (dx, db)
            },
        },
    ];
    check_binary_table(&pairs);
}

/// `clamp(lo, hi)`: the derivative goes to the input the value is, checked inside, below and
/// above the range and at a bound (where `x` is the value), in both modes.
#[test]
fn clamp_rules() {
    let cases: [(f64, f64, f64, f64); 4] = [
        (0.3, 1.0, 0.0, 0.0),
        (-2.0, 0.0, 1.0, 0.0),
        (4.0, 0.0, 0.0, 1.0),
        (-1.0, 1.0, 0.0, 0.0),
    ];
    for (x, dx, dlo, dhi) in cases {
        let (y, pullback) = x.clamp_vjp_full(-1.0, 2.0, [true; 3]);
        assert_eq!(
            (y, pullback(1.5)),
            (x.clamp(-1.0, 2.0), (1.5 * dx, 1.5 * dlo, 1.5 * dhi))
        );
        let t = (Some(&1.0), Some(10.0), Some(100.0));
        let want = 1.0 * dx + 10.0 * dlo + 100.0 * dhi;
        assert_eq!(x.clamp_jvp_full(-1.0, 2.0, t), (y, Some(want)));
    }
    // No tangent on the input the value is: none out (a symbolic zero).
    assert_eq!(
        (-2.0_f64).clamp_jvp_full(-1.0, 2.0, (Some(&1.0), None, None)),
        (-1.0, None)
    );
    let (_, pullback) = 0.5_f64.clamp_vjp_full(-1.0, 2.0, [false, true, true]);
    assert_eq!(pullback(1.0), (0.0, 0.0, 0.0));
}

/// `sin_cos`: both rules against central differences of (sin, cos) along a seed (s̄, c̄), the
/// transpose identity ⟨J·ẋ, (s̄, c̄)⟩ = ẋ · Jᵀ(s̄, c̄), and exact values at 0.
#[test]
fn sin_cos_rules() {
    let h = 1e-6;
    for x in [-2.0_f64, 0.3, 1.7] {
        let ((s, c), pullback) = x.sin_cos_vjp_full([true]);
        assert_eq!((s, c), x.sin_cos());
        let (ds, dc) = (0.7, -1.3);
        let (dx,) = pullback((ds, dc));
        let along = |x: f64| ds * x.sin() + dc * x.cos();
        let fd = (along(x + h) - along(x - h)) / (2.0 * h);
        assert!(
            (dx - fd).abs() < 1e-8,
            "sin_cos pullback at {x}: {dx} against {fd}"
        );
        let (_, t) = x.sin_cos_jvp_full((Some(&0.5),));
        let (ts, tc) = t.expect("a tangent in, a tangent out");
        assert!(
            (ts * ds + tc * dc - 0.5 * dx).abs() < 1e-12,
            "transpose at {x}"
        );
    }
    assert_eq!(
        0.0_f64.sin_cos_jvp_full((Some(&2.0),)),
        ((0.0, 1.0), Some((2.0, -0.0)))
    );
    assert_eq!(1.0_f64.sin_cos_jvp_full((None,)).1, None);
    let (_, pullback) = 1.0_f64.sin_cos_vjp_full([false]);
    assert_eq!(pullback((1.0, 1.0)), (0.0,));
}

#[test]
fn exact_values() {
    assert_eq!(0.0_f64.sin_jvp_full((Some(&2.0),)), (0.0, Some(2.0)));
    assert_eq!(0.0_f64.cos_jvp_full((Some(&2.0),)), (1.0, Some(0.0)));
    assert_eq!(0.0_f64.exp_jvp_full((Some(&3.0),)), (1.0, Some(3.0)));
    assert_eq!(
        3.0_f64.exp2_jvp_full((Some(&1.0),)),
        (8.0, Some(8.0 * LN_2))
    );
    assert_eq!(
        2.0_f64.ln_jvp_full((Some(&1.0),)),
        (2.0_f64.ln(), Some(0.5))
    );
    assert_eq!(4.0_f64.sqrt_jvp_full((Some(&1.0),)), (2.0, Some(0.25)));
    assert_eq!(2.0_f64.recip_jvp_full((Some(&1.0),)), (0.5, Some(-0.25)));
    assert_eq!(1.0_f64.atan_jvp_full((Some(&1.0),)).1, Some(0.5));
    assert_eq!(0.0_f32.tanh_jvp_full((Some(&1.5),)), (0.0, Some(1.5)));
    assert_eq!(1.7_f64.floor_jvp_full((Some(&1.0),)), (1.0, Some(0.0)));
    assert_eq!(1.75_f64.fract_jvp_full((Some(&2.0),)), (0.75, Some(2.0)));
    // atan2: (∂x, ∂o) = (o, −x)/(x² + o²) = (½, −½) at (1, 1).
    assert_eq!(1.0_f64.atan2_jvp_full(1.0, (Some(&1.0), None)).1, Some(0.5));
    assert_eq!(1.0_f64.atan2_jvp_full(1.0, (None, Some(1.0))).1, Some(-0.5));
    assert_eq!(
        3.0_f64.hypot_jvp_full(4.0, (Some(&1.0), None)),
        (5.0, Some(0.6))
    );
    // powf: ∂x = p·xᵖ⁻¹ = 12, ∂p = y·ln x = 8 ln 2 at (2, 3).
    assert_eq!(
        2.0_f64.powf_jvp_full(3.0, (Some(&1.0), None)),
        (8.0, Some(12.0))
    );
    assert_eq!(
        2.0_f64.powf_jvp_full(3.0, (None, Some(1.0))),
        (8.0, Some(8.0 * LN_2))
    );
    assert_eq!(
        2.0_f64.powi_jvp_full(3, (Some(&1.0), None)),
        (8.0, Some(12.0))
    );
    assert_eq!(
        2.0_f64.powi_jvp_full(-2, (Some(&1.0), None)),
        (0.25, Some(-0.25))
    );
    // mul_add: ẏ = ẋ·a + ȧ·x + ḃ = 3 + 2 + 1 at (x, a, b) = (2, 3, 4).
    let all = (Some(&1.0), Some(1.0), Some(1.0));
    assert_eq!(2.0_f64.mul_add_jvp_full(3.0, 4.0, all), (10.0, Some(6.0)));
    assert_eq!(
        2.0_f64
            .mul_add_jvp_full(3.0, 4.0, (None, None, Some(1.0)))
            .1,
        Some(1.0)
    );
    assert_eq!(
        2.0_f64
            .mul_add_jvp_full(3.0, 4.0, (None, Some(0.5), None))
            .1,
        Some(1.0)
    );
}

#[test]
fn no_tangent_in_gives_none_out_for_the_own_rules() {
    assert_eq!(
        2.0_f64.powi_jvp_full(3, (None, None::<NoTangent>)),
        (8.0, None)
    );
    assert_eq!(
        2.0_f64.mul_add_jvp_full(3.0, 4.0, (None, None, None)),
        (10.0, None)
    );
    assert_eq!(0.5_f32.sin_jvp_full((None,)), (0.5_f32.sin(), None));
}

/// Where the derivative is undefined, the forward rule takes the reverse rule's convention.
#[test]
fn conventions_agree_with_the_reverse_rules() {
    for zero in [0.0_f64, -0.0] {
        assert_eq!(zero.abs_jvp_full((Some(&1.0),)).1, Some(0.0));
        assert_eq!(zero.abs_vjp_full([true]).1(1.0).0, 0.0);
        assert_eq!(zero.signum_jvp_full((Some(&1.0),)).1, Some(0.0));
    }
    // Ties of max/min: half each, forward the mean of the tangents.
    assert_eq!(
        2.0_f64.max_jvp_full(2.0, (Some(&1.0), Some(3.0))),
        (2.0, Some(2.0))
    );
    assert_eq!(
        2.0_f64.min_jvp_full(2.0, (Some(&1.0), Some(3.0))),
        (2.0, Some(2.0))
    );
    assert_eq!(2.0_f64.max_jvp_full(2.0, (Some(&1.0), None)).1, Some(0.5));
    assert_eq!(2.0_f64.max_vjp_full(2.0, [true; 2]).1(1.0), (0.5, 0.5));
    assert_eq!(2.0_f64.min_vjp_full(2.0, [true; 2]).1(1.0), (0.5, 0.5));
    // powf at x = 0: ∂p = 0 for p ≥ 0, ∂x = 0 for p = 0; powi(0) at 0 has ∂x = 0.
    assert_eq!(0.0_f64.powf_jvp_full(2.0, (None, Some(1.0))).1, Some(0.0));
    assert_eq!(0.0_f64.powf_vjp_full(2.0, [true; 2]).1(1.0), (0.0, 0.0));
    assert_eq!(
        0.0_f64.powf_jvp_full(0.0, (Some(&1.0), Some(1.0))).1,
        Some(0.0)
    );
    assert_eq!(0.0_f64.powf_vjp_full(0.0, [true; 2]).1(1.0), (0.0, 0.0));
    assert_eq!(0.0_f64.powi_jvp_full(0, (Some(&1.0), None)).1, Some(0.0));
    assert_eq!(0.0_f64.powi_vjp_full(0, [true, false]).1(1.0).0, 0.0);
    // Piecewise constant at a jump: derivative 0 both ways.
    assert_eq!(1.0_f64.floor_jvp_full((Some(&1.0),)).1, Some(0.0));
    assert_eq!(0.5_f64.round_jvp_full((Some(&1.0),)).1, Some(0.0));
    assert_eq!(1.0_f64.round_vjp_full([true]).1(1.0).0, 0.0);
}

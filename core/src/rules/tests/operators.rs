//! The forward rules of the operators, negation and casts.

use super::{DIRECTIONS, check_binary_table, same};
use crate::rules::operators::{
    AddJvp, CastJvp, CastRule, DivJvp, MulJvp, NegJvp, NegRule, RemJvp, SubJvp, TABLE,
};

#[test]
fn every_operator_against_finite_differences_and_its_pullback() {
    assert_eq!(TABLE.len(), 5, "+ - * / %");
    check_binary_table(TABLE.iter().map(|op| &op.rule));
}

/// `&a ∘ b`, `a ∘ &b` and `&a ∘ &b` give the value and tangent of `a ∘ b`.
#[test]
fn operands_by_reference_follow_the_values() {
    for op in TABLE {
        for t in DIRECTIONS.into_iter().chain([(None, None)]) {
            let (y, ty) = (op.rule.jvp)(7.5, -2.0, t);
            for (k, (yr, tr)) in (op.by_reference)(7.5, -2.0, t).into_iter().enumerate() {
                assert!(
                    same(y, yr) && ty == tr,
                    "{} form {k} along {t:?}",
                    op.rule.name
                );
            }
        }
    }
}

#[test]
fn exact_values() {
    assert_eq!(1.0_f64.add_jvp(2.0, (Some(1.0), None)), (3.0, Some(1.0)));
    assert_eq!(
        1.0_f64.add_jvp(2.0, (Some(1.0), Some(0.5))),
        (3.0, Some(1.5))
    );
    assert_eq!(1.0_f64.sub_jvp(2.0, (None, Some(2.0))), (-1.0, Some(-2.0)));
    // ẏ = ȧ·b + ḃ·a = 1·4 + 2·3.
    assert_eq!(
        3.0_f64.mul_jvp(4.0, (Some(1.0), Some(2.0))),
        (12.0, Some(10.0))
    );
    // ẏ = ȧ/b − ḃ·y/b = 1/2 − 1·3/2.
    assert_eq!(
        6.0_f64.div_jvp(2.0, (Some(1.0), Some(1.0))),
        (3.0, Some(-1.0))
    );
    // ẏ = ȧ − ḃ·trunc(a/b) = 1 − 3.
    assert_eq!(
        7.5_f64.rem_jvp(2.0, (Some(1.0), Some(1.0))),
        (1.5, Some(-2.0))
    );
    assert_eq!(
        (-7.5_f64).rem_jvp(2.0, (None, Some(1.0))),
        (-1.5, Some(3.0))
    );
    assert_eq!(3.0_f32.mul_jvp(4.0, (None, Some(0.5))), (12.0, Some(1.5)));
    assert_eq!(
        (&3.0_f32).mul_jvp(&4.0, (None, Some(&0.5))),
        (12.0, Some(1.5))
    );
}

#[test]
fn no_tangent_in_gives_none_out() {
    assert_eq!(2.0_f64.neg_jvp((None,)), (-2.0, None));
    assert_eq!(CastJvp::<f32>::cast_jvp(2.0_f64, (None,)), (2.0_f32, None));
    assert_eq!((&2.0_f64).div_jvp(&4.0, (None, None)), (0.5, None));
}

/// `-a` and `as`: exact tangents, and the transpose identity against the pullbacks (exact, as
/// both rules are a sign change or one rounding of the same number).
#[test]
fn negation_and_casts() {
    assert_eq!(2.0_f64.neg_jvp((Some(3.0),)), (-2.0, Some(-3.0)));
    assert_eq!(2.0_f32.neg_jvp((Some(-0.5),)), (-2.0, Some(0.5)));
    let (_, pullback) = 2.0_f64.neg_vjp([true]);
    assert_eq!(-3.0 * 0.25, 3.0 * pullback(0.25).0);

    assert_eq!(
        CastJvp::<f32>::cast_jvp(1.5_f64, (Some(0.1),)),
        (1.5_f32, Some(0.1_f32))
    );
    assert_eq!(
        CastJvp::<f64>::cast_jvp(1.5_f32, (Some(0.25),)),
        (1.5_f64, Some(0.25))
    );
    assert_eq!(
        CastJvp::<f64>::cast_jvp(0.1_f64, (Some(0.3),)),
        (0.1, Some(0.3))
    );
    // f32 → f64 is exact, so ⟨J·v, w⟩ = ⟨v, Jᵀ·w⟩ holds exactly for representable v, w.
    let (v, w) = (0.375_f32, 0.625_f64);
    let (_, jv) = CastJvp::<f64>::cast_jvp(1.5_f32, (Some(v),));
    let (_, pullback) = CastRule::<f64>::cast_vjp(1.5_f32, [true]);
    assert_eq!(jv.unwrap() * w, f64::from(v * pullback(w).0));
}

/// An integer converted to a float: Rust's `as` value (rounded where the integer has more
/// bits than the float's mantissa), and a zero derivative both ways.
#[test]
fn integer_casts_have_the_value_of_as_and_no_derivative() {
    let big = (1_u64 << 53) + 1; // not an f64: `as` rounds it to even
    let (value, pullback) = CastRule::<f64>::cast_vjp(big, [true]);
    assert_eq!((value, pullback(1.0).0), (big as f64, 0));
    let (value, pullback) = CastRule::<f32>::cast_vjp(-7_i32, [true]);
    assert_eq!((value, pullback(2.5).0), (-7.0_f32, 0));
    assert_eq!(CastJvp::<f64>::cast_jvp(12_usize, (Some(3),)), (12.0, None));
    assert_eq!(
        CastJvp::<f32>::cast_jvp(u128::MAX, (None,)),
        (u128::MAX as f32, None)
    );
    // Rounded once, as `as` does: through `f64` this integer would round twice, to 2⁶⁰.
    let n: u64 = (1 << 60) + (1 << 36) + 1;
    assert_ne!(n as f32, (n as f64) as f32);
    assert_eq!(CastRule::<f32>::cast_vjp(n, [true]).0, n as f32);
    assert_eq!(CastJvp::<f32>::cast_jvp(n, (None,)), (n as f32, None));
}

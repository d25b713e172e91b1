//! Properties: gradients agree with finite differences at random points off the branch
//! boundaries.

use adjoint::prelude::*;
use proptest::prelude::*;

use crate::arrays::{logsumexp, logsumexp_vjp, sort_weighted, sort_weighted_vjp};
use crate::branches::{huber, huber_vjp, nested_if, nested_if_vjp};
use crate::common::{assert_close, check_gradient};
use crate::elman::{elman, elman_by_hand, elman_vjp, rnn_problem};
use crate::loops::{
    bound_from_x, bound_from_x_vjp, newton_sqrt, newton_sqrt_vjp, while_double, while_double_vjp,
};
use crate::mixed::{
    leaky_sum, leaky_sum_vjp, tent_iter, tent_iter_vjp, while_branch, while_branch_vjp,
};
use crate::recomputed::{
    recorded_sites, recorded_sites_vjp, tanh_into, tanh_into_vjp, tanh_steps, tanh_steps_by_hand,
    tanh_steps_vjp,
};
use crate::recursion::{rec_cf, rec_cf_vjp};

/// Points closer than this to a branch boundary are skipped: the central difference with a
/// step of about 1e-6 would straddle the kink (or jump).
const MARGIN: f64 = 1e-3;

fn away(a: f64, b: f64) -> bool {
    (a - b).abs() > MARGIN
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn huber_gradient(x in -3.0..3.0_f64) {
        prop_assume!(away(x, -1.0) && away(x, 1.0));
        let got = gradient(huber_vjp(x));
        check_gradient("huber", huber, x, got);
        prop_assert_eq!(got, x.clamp(-1.0, 1.0));
    }

    #[test]
    fn nested_if_gradient(x in -3.0..3.0_f64, y in -3.0..3.0_f64) {
        prop_assume!(away(x, 0.0) && away(y, 0.0) && away(x, y));
        let got = gradient(nested_if_vjp(x, y));
        check_gradient("nested_if", |(x, y)| nested_if(x, y), (x, y), got);
    }

    #[test]
    fn tent_iter_gradient(x in 0.1..4.0_f64) {
        // The trajectory stays in (0.1, 4) and |d/dx| = y/x < 40, so a step of 4e-6 moves
        // every iterate by less than 2e-4: enough to stay off y = 1 at MARGIN.
        let mut y = x;
        let mut near = false;
        for _ in 0..8 {
            near |= !away(y, 1.0);
            y = if y > 1.0 { y / 2.0 } else { 3.0 * y };
        }
        prop_assume!(!near);
        let got = gradient(tent_iter_vjp(x));
        check_gradient("tent_iter", tent_iter, x, got);
    }

    #[test]
    fn logsumexp_gradient(x in prop::array::uniform5(-3.0..3.0_f64)) {
        // Smooth everywhere: the branch only picks the shift.
        let got = gradient(logsumexp_vjp(x));
        check_gradient("logsumexp", logsumexp, x, got);
        prop_assert!((got.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn sort_weighted_gradient(x in prop::array::uniform4(-3.0..3.0_f64)) {
        for i in 0..4 {
            for j in 0..i {
                prop_assume!(away(x[i], x[j]));
            }
        }
        let got = gradient(sort_weighted_vjp(x));
        check_gradient("sort_weighted", sort_weighted, x, got);
    }

    #[test]
    fn while_double_gradient(x in 0.1..20.0_f64) {
        // y jumps where x·2ᵏ = 10.
        prop_assume!((0..8).all(|k| away(x * f64::from(1 << k), 10.0)));
        let got = gradient(while_double_vjp(x));
        check_gradient("while_double", while_double, x, got);
    }

    #[test]
    fn while_branch_gradient(x in 0.1..19.0_f64) {
        // Kinks where some iterate crosses 2, jumps where one crosses 20; the derivative
        // is below 1e3 here, so a step moves the iterates by less than 2e-2 · MARGIN.
        let mut y = x;
        let mut near = false;
        while y < 20.0 {
            near |= !away(y, 2.0) || !away(y, 20.0);
            y = if y < 2.0 { y * y + 1.0 } else { 1.5 * y };
        }
        prop_assume!(!near && away(y, 20.0));
        let got = gradient(while_branch_vjp(x));
        check_gradient("while_branch", while_branch, x, got);
    }

    #[test]
    fn bound_from_x_gradient(x in 0.0..8.0_f64) {
        prop_assume!(away(x, x.round()));
        let got = gradient(bound_from_x_vjp(x));
        check_gradient("bound_from_x", bound_from_x, x, got);
    }

    #[test]
    fn leaky_sum_gradient(x in prop::array::uniform5(-3.0..3.0_f64)) {
        prop_assume!(x.iter().all(|&v| away(v, 0.0)));
        let got = gradient(leaky_sum_vjp(x));
        check_gradient("leaky_sum", leaky_sum, x, got);
    }

    #[test]
    fn newton_sqrt_gradient(a in 0.01..100.0_f64) {
        let got = gradient(newton_sqrt_vjp(a));
        check_gradient("newton_sqrt", newton_sqrt, a, got);
        assert_close("newton_sqrt", got, 0.5 / a.sqrt());
    }

    #[test]
    fn rec_cf_gradient(x in 0.5..3.0_f64, n in 0..8_u32) {
        let got = gradient(rec_cf_vjp(x, n));
        check_gradient("rec_cf", |x| rec_cf(x, n), x, got);
    }

    #[test]
    fn recorded_calls_gradient(x in prop::array::uniform3(-2.0..2.0_f64)) {
        // Loops run again in the pullback, with recorded `tanh`, `sin`, `cos`, `exp`.
        let got = gradient(tanh_into_vjp(x));
        check_gradient("tanh_into", tanh_into, x, got);
        let got = gradient(recorded_sites_vjp(x));
        check_gradient("recorded_sites", recorded_sites, x, got);
    }

    #[test]
    fn tanh_steps_gradient(w in prop::array::uniform2(prop::array::uniform2(-1.5..1.5_f64))) {
        let got = gradient(tanh_steps_vjp(w));
        assert_close("tanh_steps", got, tanh_steps_by_hand(w));
        check_gradient("tanh_steps", tanh_steps, w, got);
    }
}

proptest! {
    // Each case checks all 104 coordinates of the RNN's gradient.
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn elman_gradient(seed in any::<u64>()) {
        let ((w, u, b), xs) = rnn_problem(seed);
        let got = gradient(elman_vjp(w, u, b, &xs));
        assert_close("elman", got, elman_by_hand(&(w, u, b), &xs).1);
        check_gradient("elman", |(w, u, b)| elman(w, u, b, &xs), (w, u, b), got);
    }
}

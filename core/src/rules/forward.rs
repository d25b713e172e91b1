//! Tangents of forward-mode (JVP) rules, as generated code passes them: an
//! `Option<Tangent>` per value, where `None` is the zero tangent of a value that is inactive or
//! not tracked. A rule's result tangent is `None` exactly when all its input tangents are, so
//! that forward mode never builds zeros it does not need.
//!
//! The two helpers below are what generated code (and the rules) combine such tangents with.
//!
//! # Example
//! ```
//! use adjoint::rules::forward::{plus_opt, tangent_or_zero};
//! assert_eq!(plus_opt(Some(1.5_f64), None), Some(1.5));
//! assert_eq!(plus_opt::<f64>(None, None), None);
//! assert_eq!(tangent_or_zero(&2.0_f64, None), 0.0);
//! ```

use crate::{Differentiable, TangentVector};

/// The tangent `t` of `value`, or `value`'s zero tangent ([`Differentiable::zero_tangent`])
/// where `t` is `None`: turns a forward-mode tangent into the plain tangent a caller of a
/// `_jvp` companion receives.
#[inline(always)]
pub fn tangent_or_zero<T: Differentiable>(value: &T, t: Option<T::Tangent>) -> T::Tangent {
    t.unwrap_or_else(|| value.zero_tangent())
}

/// The sum `a + b` of two optional tangents, `None` standing for zero: `None` when both are
/// `None`, the other one when one is, and [`TangentVector::plus`] otherwise. The tangent of a
/// sum of terms (`ẏ = ∂y/∂a · ȧ + ∂y/∂b · ḃ`) is built by this, so that no zero is added.
#[inline(always)]
pub fn plus_opt<T: TangentVector>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.plus(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

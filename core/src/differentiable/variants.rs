//! Enums with `#[derive(Differentiable)]` in differentiable code: a `match` on an active enum
//! value picks its arm by the variant, which is data, and reads the payloads through the
//! enum's hidden rules. These functions hand the rewritten `match` its data scrutinee, and
//! their bound says what is missing where an enum without the derive is matched.

use super::Differentiable;

/// An enum whose derived tangent has a variant per variant with differentiated fields, and
/// hidden rules that build a variant and read its payloads (written by
/// `#[derive(Differentiable)]`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is matched with its payloads differentiated, but it has no `#[derive(Differentiable)]`",
    label = "an active value whose arms bind payloads",
    note = "derive `Differentiable` (and `Clone`) on the enum, or match on `without_derivative(..)` if no derivative should flow through the payloads"
)]
pub trait DifferentiableEnum: Differentiable {}

/// The value to match on: its variant and payloads, read as data.
#[inline(always)]
pub fn variant_of<T: DifferentiableEnum>(value: &T) -> &T {
    value
}

/// A copy to match on, for arms whose guards read payloads (a guard is data).
#[inline(always)]
pub fn variant_of_owned<T: DifferentiableEnum + Clone>(value: &T) -> T {
    value.clone()
}

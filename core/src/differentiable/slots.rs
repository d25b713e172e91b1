//! A callee's tangent slots as the tangents of the arguments passed there: generated code
//! reads each active argument's tangent out of the pullback's slot through
//! [`arg_tangent`], which fails to compile where the slot is a [`NoTangent`].

use super::{NoTangent, TangentVector};

/// Converts a callee's tangent slot into the tangent of the argument passed there: every
/// [`TangentVector`] converts to itself, and [`NoTangent`] converts to nothing, so passing an
/// active value to a parameter the callee does not differentiate fails to compile here.
#[diagnostic::on_unimplemented(
    message = "this argument carries a derivative, but the called function does not differentiate it",
    label = "the parameter it is passed to is `#[no_derivative]` or not in `wrt(...)`",
    note = "if dropping its derivative is intended, pass `without_derivative(arg)`; otherwise make the callee differentiate that parameter"
)]
pub trait ReceivesTangent<T> {
    /// The tangent itself.
    fn into_tangent(self) -> T;
}

impl<T: TangentVector> ReceivesTangent<T> for T {
    #[inline(always)]
    fn into_tangent(self) -> T {
        self
    }
}

// Two impls for `NoTangent` with types nobody names: with them rustc cannot guess `T` from
// `NoTangent` alone and reports the missing impl (with the message above) instead of a type
// mismatch.
#[doc(hidden)]
pub enum Unreachable1 {}
#[doc(hidden)]
pub enum Unreachable2 {}

#[diagnostic::do_not_recommend]
impl ReceivesTangent<Unreachable1> for NoTangent {
    fn into_tangent(self) -> Unreachable1 {
        unreachable!("NoTangent never converts")
    }
}

#[diagnostic::do_not_recommend]
impl ReceivesTangent<Unreachable2> for NoTangent {
    fn into_tangent(self) -> Unreachable2 {
        unreachable!("NoTangent never converts")
    }
}

/// An argument's tangent as returned by a callee's pullback; fails to compile for [`NoTangent`].
#[inline(always)]
pub fn arg_tangent<T, S: ReceivesTangent<T>>(slot: S) -> T {
    slot.into_tangent()
}

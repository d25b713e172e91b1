//! The partial adjoints of one value in generated code, and their arithmetic: tangents, and
//! the [`Dropped`] adjoint of a `#[no_derivative]` field.
//!
//! A value used several times gets one partial adjoint per use; generated code adds them
//! ([`plus`], [`plus_assign`]) at the value's definition, puts each rule's seed in its final
//! representation ([`settled`]) and reads a field's adjoint from its consumer's slot
//! ([`field_partial`]).

use super::TangentVector;

/// Adjoints in generated code that can be put in their final representation: tangents, and
/// the [`Dropped`] adjoint of a `#[no_derivative]` field.
pub trait Settle {
    /// See [`TangentVector::settled`].
    fn settle(self) -> Self;
}

impl<T: TangentVector> Settle for T {
    #[inline(always)]
    fn settle(self) -> Self {
        self.settled()
    }
}

impl Settle for Dropped {
    #[inline(always)]
    fn settle(self) -> Self {
        self
    }
}

/// `t` in its final representation ([`TangentVector::settled`]): what every rule's pullback
/// is given, and what the public `_vjp` functions return.
#[inline(always)]
pub fn settled<T: Settle>(t: T) -> T {
    t.settle()
}

/// `*acc += t` of two partial adjoints (nothing for [`Dropped`]).
#[inline(always)]
pub fn plus_assign<T: Plus>(acc: &mut T, t: T) {
    acc.plus_assign_partial(t);
}

/// The adjoint of a `#[no_derivative]` field read from an active struct: whatever tangent its
/// consumers hand back is dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped;

/// Converts a consumer's tangent slot into the adjoint of a field read: the field's tangent
/// for a differentiated field, anything for a `#[no_derivative]` one.
#[diagnostic::on_unimplemented(
    message = "this field carries a derivative, but the called function does not differentiate the argument it is passed to",
    note = "if dropping its derivative is intended, pass `without_derivative(..)`, or mark the field `#[no_derivative]`"
)]
pub trait FieldPartial<T> {
    /// The adjoint.
    fn into_field_partial(self) -> T;
}

impl<T: TangentVector> FieldPartial<T> for T {
    #[inline(always)]
    fn into_field_partial(self) -> T {
        self
    }
}

impl<S> FieldPartial<Dropped> for S {
    #[inline(always)]
    fn into_field_partial(self) -> Dropped {
        Dropped
    }
}

/// See [`FieldPartial`].
#[inline(always)]
pub fn field_partial<T, S: FieldPartial<T>>(slot: S) -> T {
    slot.into_field_partial()
}

/// Addition of the partial adjoints of one value: tangents, or [`Dropped`].
pub trait Plus {
    /// `self + other`.
    fn plus_partial(self, other: Self) -> Self;
    /// `*self += other`.
    fn plus_assign_partial(&mut self, other: Self);
    /// The zero.
    fn zero_partial() -> Self;
}

impl<T: TangentVector> Plus for T {
    #[inline(always)]
    fn plus_partial(self, other: Self) -> Self {
        self.plus(other)
    }
    #[inline(always)]
    fn plus_assign_partial(&mut self, other: Self) {
        self.plus_assign(other);
    }
    #[inline(always)]
    fn zero_partial() -> Self {
        T::zero()
    }
}

impl Plus for Dropped {
    #[inline(always)]
    fn plus_partial(self, _: Self) -> Self {
        Dropped
    }
    #[inline(always)]
    fn plus_assign_partial(&mut self, _: Self) {}
    #[inline(always)]
    fn zero_partial() -> Self {
        Dropped
    }
}

/// `a + b` of two partial adjoints.
#[inline(always)]
pub fn plus<T: Plus>(a: T, b: T) -> T {
    a.plus_partial(b)
}

/// Takes the tangent out of an inout accumulator, leaving zero.
#[inline(always)]
pub fn take<T: TangentVector>(t: &mut T) -> T {
    std::mem::replace(t, T::zero())
}

/// The zero of a partial adjoint: a tangent's zero, or [`Dropped`] (the start of an
/// accumulator for a `#[no_derivative]` field read, e.g. the scrutinee of
/// `if let Some(l) = c.limit`).
#[inline(always)]
pub fn zero<T: Plus>() -> T {
    T::zero_partial()
}

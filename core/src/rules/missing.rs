//! The errors for a method without a derivative, called on an active value.
//!
//! `#[differentiable]` calls the companion `x.m_vjp_full(..)` (forward mode: `m_jvp_full`) of
//! every method `m` it differentiates. Where none exists rustc would say only that no method
//! `m_vjp_full` was found, and suggest an unrelated one. So the generated body also holds a
//! fallback method of that name for every type `S` with `S: NoDerivativeRule<m>` (`m` a
//! local marker type named after the method), which no type implements: method lookup drops
//! the fallback wherever the bound fails, so a companion that exists is always the one
//! called, and where none does rustc reports the failed bound with the message below, at the
//! call in the user's code.

/// Implemented by no type: the bound of the fallback companion of method `M` in reverse mode.
#[diagnostic::on_unimplemented(
    message = "`{M}` has no derivative rule for `{Self}`",
    label = "`{M}` is called here on an active `{Self}`",
    note = "give `{M}` a derivative: put #[differentiable] on its definition (or on its `impl`), or call a free function with a #[derivative_of] rule instead; if no gradient is needed through this call, call it on `without_derivative(..)` of its receiver and arguments",
    note = "if `{M}` takes `&mut self` and has #[differentiable], it is followed only as a statement (`x.{M}(..);`), not for the value it returns: call it as a statement and read what it changed from its receiver"
)]
pub trait NoDerivativeRule<M: ?Sized> {}

/// Implemented by no type: the bound of the fallback companion of method `M` in forward mode.
#[diagnostic::on_unimplemented(
    message = "`{M}` has no forward derivative (JVP) for `{Self}`",
    label = "`{M}` is called here on an active `{Self}`",
    note = "give `{M}` a forward derivative: put #[differentiable(forward)] on its definition, or call a free function whose #[derivative_of] rule has a `jvp`; if no tangent is needed through this call, call it on `without_derivative(..)` of its receiver and arguments"
)]
pub trait NoJvpRule<M: ?Sized> {}

/// Implemented by no type: the bound of the fallback accessor of field `M`, read from an
/// active value whose type does not say how its tangent holds the field.
#[diagnostic::on_unimplemented(
    message = "the field `{M}` of `{Self}` is read from an active value, and `{Self}` has no accessor for its tangent",
    label = "`{M}` is read here from an active `{Self}`",
    note = "derive the tangent and the accessors with #[derive(Differentiable)] instead of implementing `Differentiable` by hand, or mark the field #[no_derivative]; if no gradient is needed through this read, read it from `without_derivative(..)` of the value"
)]
pub trait NoFieldAccessor<M: ?Sized> {}

/// Implemented by no type: the bound of the fallback rules of an enum variant (`M` is the
/// rule: its constructor from active values, or a payload's reader), for an enum without the
/// derive's rules.
#[diagnostic::on_unimplemented(
    message = "a variant of `{Self}` carries active values here, but `{Self}` has no `#[derive(Differentiable)]`",
    label = "built or matched here with active payloads",
    note = "derive `Differentiable` (and `Clone`) on the enum, so that its variants carry derivatives; if none should flow through this variant, build or match it on `without_derivative(..)` of the values"
)]
pub trait NoVariantRule<M: ?Sized> {}

/// Implemented by no type: the bound of the fallback companion `m_vjp_mut` of a method called
/// as a statement (`acc.add(x);`), which differentiable code takes as a `&mut self` method,
/// where `M` is not one.
#[diagnostic::on_unimplemented(
    message = "`{M}`'s result is discarded, so #[differentiable] takes it as a `&mut self` method that changes its `{Self}`, but `{M}` is no differentiable `&mut self` method",
    label = "called for its effect on an active `{Self}`",
    note = "use the result (`let y = ..`), or make the method `#[differentiable] fn {M}(&mut self, ..)`; if no derivative should flow, call it on `without_derivative(..)` of its receiver"
)]
pub trait NoMutatingRule<M: ?Sized> {}

//! Derivative rules of the primitive operations, one table per family.
//!
//! A rule is a vector-Jacobian product: given the inputs of an operation it returns the output
//! and a *pullback* that maps the tangent `ȳ` of the output to the tangents `x̄ᵢ = ȳ · ∂y/∂xᵢ` of
//! the inputs. Every rule takes `needs: [bool; N]`, one flag per input, computed by the macro's
//! activity analysis: an input whose flag is `false` gets [`TangentVector::zero`] and no work
//! is done for it (for tensors this saves whole matrix products).
//!
//! The pullback returns one slot per input, in order, as a tuple (a 1-tuple for a single input);
//! inputs that are never differentiable (the `n` of `powi`) get a [`NoTangent`] slot.
//!
//! Each rule also has a forward form (a Jacobian-vector product, `_jvp`): given the inputs and
//! their tangents `ẋᵢ` it returns the output and its tangent `ẏ = Σ ∂y/∂xᵢ · ẋᵢ`, with `None`
//! for a zero tangent ([`forward`]).
//!
//! * [`operators`]: `+ - * / %`, unary `-` and `as` casts between float types.
//! * [`methods`]: the std float methods (`sin`, `exp`, `powf`, `max`, ...).
//!
//! [`TangentVector::zero`]: crate::TangentVector::zero
//! [`NoTangent`]: crate::NoTangent

pub(crate) mod cached;
pub mod fields;
pub mod forward;
pub mod methods;
pub mod missing;
pub mod operators;
pub(crate) mod sites;
#[cfg(test)]
mod tests;

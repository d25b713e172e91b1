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
//! * [`operators`]: `+ - * / %`, unary `-` and `as` casts between float types.
//! * [`methods`]: the std float methods (`sin`, `exp`, `powf`, `max`, ...).
//! * [`forward_ops`]: the forward-mode (JVP) traits of the operators.
//!
//! [`TangentVector::zero`]: crate::TangentVector::zero
//! [`NoTangent`]: crate::NoTangent

pub(crate) mod cached;
pub mod forward_ops;
pub mod methods;
pub mod operators;
pub(crate) mod sites;

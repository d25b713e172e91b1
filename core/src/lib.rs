//! Runtime support of [adjoint](https://docs.rs/adjoint): the traits that describe what can be
//! differentiated, the derivative rules of the primitive operations, and the small helpers the
//! `#[differentiable]` macro emits calls to.
//!
//! Users depend on the `adjoint` facade crate, which re-exports everything here together with the
//! macros; see its documentation for the user guide.

#![warn(missing_docs)]

// The macros emit paths of the form `::adjoint::__private::...`. Inside this crate (whose own
// code will use the macros for layers) that path must resolve to this crate itself.
extern crate self as adjoint;

pub mod check;
pub mod checkpoint;
mod collections;
mod differentiable;
mod dual;
mod dual_reverse;
mod float;
mod gradient;
mod jacobian;
pub mod nn;
pub mod ops;
pub mod optim;
mod params;
mod pullbacks;
pub mod rules;
pub mod tensor;

#[doc(hidden)]
pub mod __private;

pub use checkpoint::CheckpointError;
pub use differentiable::{Differentiable, NoTangent, TangentVector};
pub use dual::Dual;
pub use dual_reverse::{dual, dual_eps, dual_eps_vjp, dual_re, dual_re_vjp, dual_vjp};
pub use float::{Float, FloatMath};
pub use gradient::{UnitSeed, gradient, value_with_gradient, without_derivative};
pub use jacobian::{
    Jacobian, JacobianError, hessian, hvp, jacfwd, jacobian, jacobian_by, jacrev, jacrev_by, jvp,
};
pub use ops::conv::Conv2d;
pub use ops::index::TensorList;
pub use ops::loss::{cross_entropy, cross_entropy_vjp, mse, mse_vjp, nll, nll_vjp};
pub use params::{GradMutVisitor, GradVisitor, ParamPath, Parameters};
pub use tensor::{Backend, Cpu, DType, Element, Tensor, TensorError, TensorTangent};

//! Tensor operations, one module per family: each holds the op's API, its derivative rule
//! (`<op>_vjp_full`, called by `#[differentiable]` code), its documentation (math and
//! derivative) and its rule tests.
//!
//! Every rule takes `needs: [bool; N]`, one flag per input; an input whose flag is `false`
//! gets [`TensorTangent::Zero`] and no work is done for it.

// A rule's signature spells out its pullback's slots, one per input, in the order of the call:
// aliases for every slot pattern would hide exactly what the reader needs to see.
#![allow(clippy::type_complexity)]

pub mod affine;
pub mod arith;
pub mod compare;
pub mod constant;
pub mod conv;
pub mod cross_entropy;
pub(crate) mod forward;
pub mod index;
pub mod loss;
pub mod mask;
pub mod matmul;
pub mod nn;
pub mod pool;
pub mod recurrence;
pub mod reduce;
pub mod scalar;
pub mod shape;
pub mod split;
pub mod unary;

#[cfg(test)]
pub(crate) mod testing;

use crate::tensor::TensorTangent;
use crate::tensor::{Backend, Tensor};

/// [`slot`] for a pullback that owns the output tangent: `f` gets it by value, so it can write
/// its result into the tangent's buffer.
#[inline]
pub(crate) fn slot_owned<B: Backend>(
    need: bool,
    d: TensorTangent<B>,
    f: impl FnOnce(Tensor<B>) -> Tensor<B>,
) -> TensorTangent<B> {
    match d {
        TensorTangent::Dense(d) if need => TensorTangent::Dense(f(d)),
        TensorTangent::Outer(sum) if need => TensorTangent::Dense(f(sum.into_tensor())),
        _ => TensorTangent::Zero,
    }
}

/// The tangent slot of input `i`: `f()` if `needs[i]` and the output tangent is not zero.
#[inline]
pub(crate) fn slot<B: Backend>(
    need: bool,
    d: &TensorTangent<B>,
    f: impl FnOnce(&Tensor<B>) -> Tensor<B>,
) -> TensorTangent<B> {
    match d {
        TensorTangent::Dense(d) if need => TensorTangent::Dense(f(d)),
        TensorTangent::Outer(sum) if need => TensorTangent::Dense(f(&sum.to_tensor())),
        _ => TensorTangent::Zero,
    }
}

//! Forward mode (`#[differentiable(forward)]` and `f_jvp`), one module per kind of code:
//! - [`check_jvp`]: the checker against right and deliberately wrong jvps.
//! - [`jacobian`]: the `jvp`/`jacfwd`/`jacrev`/`jacobian` helpers and `check_jvp` on vector
//!   functions, with their typed errors.
//! - [`reverse_over_forward`]: reverse mode through dual arithmetic (`dual`, `dual_eps`).
//! - [`scalar`]: straight-line code, branches, loops over slices, `while`, element writes,
//!   recursion, calls, inout parameters, tuples and early returns.
//!
//! Every tangent is checked against its hand-computed derivative, against central finite
//! differences in f64, and against the gradient of the same function (`⟨∇f, v⟩ = ∂f·v`).

// The functions are written in the forms forward mode must handle (index loops, `push` after
// `Vec::new`, `&mut Vec` parameters), not in the forms clippy prefers.
#![allow(
    clippy::needless_range_loop,
    clippy::ptr_arg,
    clippy::vec_init_then_push
)]

mod check_jvp;
mod custom;
mod iterators;
mod jacobian;
mod nested;
mod reverse_over_forward;
mod scalar;
mod structs;
mod tensors;

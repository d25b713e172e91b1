//! Procedural macros of [adjoint](https://docs.rs/adjoint): `#[differentiable]` and
//! `#[derivative_of]`.
//!
//! The entry points are thin; the work happens in modules that unit tests drive directly:
//! `item` parses the function, `signature` decides what is differentiated, `normalize`
//! restructures early exits, `lower` walks the body (rewriting the forward pass and building
//! the adjoint `graph`; `calls`, `mutation` and `region` handle calls, writes, branches and
//! loops), `activity` keeps only what reaches the result, `reverse` writes the pullback and
//! `emit` the companions. See `docs/design.md` for the pipeline with a worked expansion.

#![warn(missing_docs)]

#[cfg(test)]
mod corpus;
mod derivative_of;
mod derive;
mod diag;
mod emit;
mod expand;
mod forward;
mod ir;
mod lower;
mod missing;
mod normalize;
mod parse;
mod patterns;
mod pipeline;
#[cfg(test)]
mod rejections;
#[cfg(test)]
mod snapshots;

use proc_macro::TokenStream;

/// Generates the reverse-mode derivative of a function: see the `adjoint` crate documentation.
#[proc_macro_attribute]
pub fn differentiable(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::differentiable(args.into(), input.into()).into()
}

/// Registers a hand-written derivative (a VJP) of a function: see the `adjoint` crate
/// documentation.
#[proc_macro_attribute]
pub fn derivative_of(args: TokenStream, input: TokenStream) -> TokenStream {
    derivative_of::expand(args.into(), input.into()).into()
}

/// Derives `Differentiable` for a struct: see the `adjoint` crate documentation.
///
/// Generates the tangent struct `NameTangent` (same field names; `#[no_derivative]` fields
/// are left out), its vector-space operations, `move_by`, and what `#[differentiable]` code
/// needs to read fields of an active value.
#[proc_macro_derive(Differentiable, attributes(no_derivative))]
pub fn derive_differentiable(input: TokenStream) -> TokenStream {
    derive::expand(input.into()).into()
}

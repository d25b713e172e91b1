//! Pure recognizers of syntax: what a piece of the user's code is, decided from its tokens
//! alone, with no lowering state. Each is unit-tested on its own.

pub mod affine;
pub mod bindings;
pub mod exits;
pub mod iterators;
pub mod loops;
pub mod mem;
pub mod operators;
pub mod queries;
pub mod recurrence;
pub mod reorders;
pub mod scalar_match;
pub mod scan;
pub mod variant_match;

//! The intermediate representation of a body: the adjoint graph a lowering pass builds, and
//! the activity analysis over it.

pub mod activity;
pub mod graph;

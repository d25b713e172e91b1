//! The pipeline every body goes through, a function's as well as each region's (a branch arm,
//! a loop body): **lower → activity → lower → reverse**.
//!
//! The first lowering pass builds the adjoint graph with nothing known to be useful (the
//! analysis pass); the activity analysis keeps the nodes that reach the body's outputs (its
//! *roots*); the second pass, with identical numbering, rewrites exactly those nodes and
//! reports the errors that matter; the reverse pass writes the pullback code over the useful
//! nodes (`emit::reverse::pullback`). A region's analysis pass may run more than once before its roots are known (a loop's
//! carried variables grow until they settle), so [`compile_body`] takes the analysis pass
//! already done.

use crate::ir::activity;
use crate::ir::graph::Act;
use crate::ir::{Compiled, Pass};

/// Runs the activity analysis over the analysis pass `first` from its outputs `roots`, then the
/// final lowering pass `again`, which is given the useful nodes.
pub fn compile_body<P: Pass>(
    first: &P,
    roots: &[Act],
    again: impl FnOnce(&[bool]) -> P,
) -> Compiled<P> {
    let useful = activity::useful_from(first.graph(), roots);
    let pass = again(&useful);
    Compiled { pass, useful }
}

//! The intermediate representation of a body: the adjoint graph a lowering pass builds (next
//! to the rewritten forward pass), and the activity analysis over it.

pub mod activity;
pub mod graph;

use crate::diag::Errors;
use graph::{Act, Graph};
use syn::{Block, Ident};

/// A lowering pass over a body, as the pipeline ([`crate::pipeline`]) sees it.
pub trait Pass {
    /// The adjoint graph the pass built.
    fn graph(&self) -> &Graph;
}

/// A body through the pipeline: its final lowering pass and which of its nodes are useful.
pub struct Compiled<P> {
    /// The second lowering pass.
    pub pass: P,
    /// Whether each node of the analysis pass's graph (numbered as the second pass's) reaches
    /// a root.
    pub useful: Vec<bool>,
}

/// The result of one lowering pass.
pub struct Lowered {
    pub graph: Graph,
    pub body: Block,
    pub result: Act,
    /// Variables declared at the start of the body and assigned during the forward pass:
    /// pullbacks (`__pbN`) and index records (`__ixN`).
    pub hoisted: Vec<Ident>,
    pub errors: Errors,
    /// The final values of the inout parameters, in parameter order.
    pub finals: Vec<Act>,
}

impl Pass for Lowered {
    fn graph(&self) -> &Graph {
        &self.graph
    }
}

//! The adjoint graph: one node per active value, with the edges its tangent flows back along.
//!
//! The forward pass keeps the user's code (names, shadowing, blocks); only the graph is in SSA
//! form: a `let mut` reassignment or `x += y` creates a new node and rebinds the name.

use proc_macro2::Span;
use syn::Ident;

/// Index of a node; nodes are created in evaluation order, so operands have smaller ids.
pub type NodeId = usize;

/// What an expression evaluates to, as far as derivatives are concerned.
#[derive(Clone, Debug)]
pub enum Act {
    /// Does not depend on a differentiated input.
    Inactive,
    /// Depends on differentiated inputs: its tangent is the adjoint of this node.
    Active(NodeId),
    /// Computed from an active value by something that loses the derivative (a cast to an
    /// integer, an unsupported construct). Fine as data; an error where it flows into the result.
    Poison(Span, String),
}

/// A node of the adjoint graph.
pub struct Node {
    pub kind: NodeKind,
    /// Bit `i` is set when the value depends on parameter `i`.
    pub deps: u128,
    /// Errors to report if the node turns out to reach the result.
    pub errors: Vec<(Span, String)>,
    /// A field read of an active struct: its adjoint has the type the derived accessor's
    /// pullback takes (the field's tangent, or `Dropped` for a `#[no_derivative]` field).
    pub field_read: bool,
    /// A rule whose pullback takes its seed as it comes (a fused layer's, which computes a
    /// product not yet computed with its activation's derivative applied, and settles any
    /// other seed itself before reading it).
    pub takes_products: bool,
}

/// How a node's adjoint flows back to its operands.
pub enum NodeKind {
    /// Parameter `i` of the function.
    Param(usize),
    /// A primitive or a call with a pullback closure stored in `pullback`; one slot per
    /// operand, `None` for inactive operands.
    Rule {
        pullback: Ident,
        slots: Vec<Option<NodeId>>,
        /// The span of each operand, where a type error about its tangent is reported.
        spans: Vec<Span>,
        /// Slots passed as `&mut v` to an inout parameter: their adjoints go through the
        /// pullback's `&mut` tangents rather than its result.
        inout: Vec<usize>,
    },
    /// The value of the variable passed as `&mut v` in slot `slot` of call `call`, after it.
    InoutOut { call: NodeId, slot: usize },
    /// Component `index` of a tuple-valued node.
    Component { parent: NodeId, index: usize },
    /// A tuple built from its components.
    Tuple(Vec<Option<NodeId>>),
    /// A struct literal `Path { f: a, g: b }` of a `#[derive(Differentiable)]` struct: the
    /// tangent struct's fields of the same names are the adjoints of the parts.
    Struct {
        /// The hoisted variable holding the literal's type (`witness(&value)`).
        witness: Ident,
        fields: Vec<Ident>,
        parts: Vec<Option<NodeId>>,
    },
    /// A tuple struct `Pair(a, b)`: its tangent's components are the adjoints of the parts.
    TupleStruct { parts: Vec<Option<NodeId>> },
    /// An array `[a, b]` (`vec: false`) or `vec![a, b]` built from its elements.
    Elements {
        parts: Vec<Option<NodeId>>,
        vec: bool,
    },
    /// An element `base[i]`; `record` holds the index (and length) captured in the forward pass.
    /// Its adjoint is added in place into the adjoint of `base`.
    /// `nested`: `base[i][j]`, one element of a collection of collections.
    Index {
        base: NodeId,
        record: Ident,
        nested: bool,
    },
    /// A branch or loop: its value is the tuple of its outputs (the `if` value and the variables
    /// it assigns). Its pullback takes their adjoints and `&mut` accumulators for `accumulated`,
    /// and returns the adjoints of `carried` (a loop's variables at entry).
    Region {
        pullback: Ident,
        accumulated: Vec<NodeId>,
        carried: Vec<Option<NodeId>>,
    },
}

impl NodeKind {
    /// The nodes this node's adjoint flows to.
    pub fn operands(&self) -> Vec<NodeId> {
        match self {
            NodeKind::Param(_) => Vec::new(),
            NodeKind::Rule { slots, .. } | NodeKind::Tuple(slots) => {
                slots.iter().flatten().copied().collect()
            }
            NodeKind::Component { parent, .. } => vec![*parent],
            NodeKind::Index { base, .. } => vec![*base],
            NodeKind::InoutOut { call, .. } => vec![*call],
            NodeKind::Elements { parts, .. }
            | NodeKind::Struct { parts, .. }
            | NodeKind::TupleStruct { parts } => parts.iter().flatten().copied().collect(),
            NodeKind::Region {
                accumulated,
                carried,
                ..
            } => accumulated
                .iter()
                .copied()
                .chain(carried.iter().flatten().copied())
                .collect(),
        }
    }
}

/// All nodes of one function.
#[derive(Default)]
pub struct Graph {
    pub nodes: Vec<Node>,
}

impl Graph {
    /// Adds a node whose dependencies are the union of its operands'.
    pub fn add(&mut self, kind: NodeKind) -> NodeId {
        let deps = kind
            .operands()
            .iter()
            .fold(0, |acc, &o| acc | self.nodes[o].deps);
        self.add_with_deps(kind, deps)
    }

    /// Adds a node with the given dependencies: bit `i` for parameter `i` of the function;
    /// for a region's input, what the captured value depends on.
    pub fn add_with_deps(&mut self, kind: NodeKind, deps: u128) -> NodeId {
        self.nodes.push(Node {
            kind,
            deps,
            errors: Vec::new(),
            field_read: false,
            takes_products: false,
        });
        self.nodes.len() - 1
    }
}

/// Whether a value carries a derivative.
pub fn is_active(act: &Act) -> bool {
    matches!(act, Act::Active(_))
}

/// Whether a value is plain data.
pub fn is_inactive(act: &Act) -> bool {
    matches!(act, Act::Inactive)
}

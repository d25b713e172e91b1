//! Regions: the arms of `if`/`match` and the bodies of loops.
//!
//! A region is lowered as a child function whose inputs are the active variables it reads and
//! whose outputs are its value and the outer variables it assigns. Its reverse pass becomes a
//! closure `|seed, acc|` taking the outputs' adjoints and `&mut` accumulators for the inputs.
//!
//! * A branch stores the closure of the arm taken, as a nested [`Branch`] enum; the parent
//!   graph sees one `Region` node whose outputs are components.
//! * A loop pushes one closure per iteration onto a `Vec` (one growing buffer, no recursion);
//!   variables assigned in the loop are *carried*: each iteration's closure maps their adjoints
//!   at the end of the iteration to their adjoints at its start, and the loop's pullback runs
//!   the closures in reverse. A loop of N iterations holds N closures, each holding the
//!   residuals of one iteration.
//! * A `for` loop over a range whose body gives the same values when run again (see
//!   [`scan::replayable`]) stores less: an accumulation loop is run again forwards in the
//!   pullback, a straight-line recurrence stores only its carried variables per iteration and
//!   is run again backwards (`lower::loops`, [`crate::lower::strategy`], `emit::loops`).
//!
//! Each region body goes through the same [pipeline](crate::pipeline) as a function's.
//!
//! [`Branch`]: https://docs.rs/adjoint

use crate::diag::Errors;
use crate::emit::region::{acc_type, closure, dispatch, wrap};
use crate::emit::reverse::Sink;
use crate::ir::Pass;
use crate::ir::graph::{Act, Graph, NodeKind, is_active};
use crate::lower::Lowering;
use crate::patterns::scan;
use crate::pipeline::compile_body;
use proc_macro2::{Ident, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::{Block, Expr};

/// One arm: its body and the names its pattern binds (data).
pub struct Arm {
    pub block: Block,
    pub bound: Vec<Ident>,
    /// The name an arm's `Some(v)`/`Ok(v)` pattern binds to the payload of an active
    /// scrutinee, and the scrutinee's node: the payload's tangent is the scrutinee's.
    pub payload: Option<(String, usize)>,
    /// What the names in `bound` are: data, or poisoned when the scrutinee is.
    pub bound_as: Act,
    /// Whether the block is a loop body (rather than a branch arm).
    pub looping: bool,
}

/// A child lowering of one region body.
pub struct Child {
    pub graph: Graph,
    pub block: Block,
    pub tail: Act,
    pub finals: Vec<Act>,
    pub hoisted: Vec<Ident>,
    pub errors: Errors,
}

impl Pass for Child {
    fn graph(&self) -> &Graph {
        &self.graph
    }
}

/// An input of a region: a name read inside, its node outside and what it depends on.
#[derive(Clone)]
pub struct Input {
    pub name: String,
    pub outer: Option<usize>,
    pub deps: u128,
}

impl Lowering<'_> {
    pub(crate) fn run_child(
        &self,
        arm: &Arm,
        inputs: &[Input],
        watch: &[String],
        useful: Option<&[bool]>,
    ) -> Child {
        self.run_child_of(arm, inputs, watch, useful, false, &[])
    }

    /// [`run_child`](Self::run_child) of a body that the pullback runs again when `rerun`.
    pub(crate) fn run_child_of(
        &self,
        arm: &Arm,
        inputs: &[Input],
        watch: &[String],
        useful: Option<&[bool]>,
        rerun: bool,
        write_only: &[String],
    ) -> Child {
        let mut child = Lowering::new(useful);
        child.rerun = self.rerun || rerun;
        child.write_only = write_only.to_vec();
        child.ref_names = self.ref_names.clone();
        child.refs_capturable = self.refs_capturable;
        child.shared = self.shared.clone();
        child.owned_refs = self.owned_refs.clone();
        child.in_loop = self.in_loop || arm.looping;
        // The references, closures and `mut` variables of the enclosing scopes, which the
        // child sees as one scope.
        child.aliases = self
            .aliases
            .iter()
            .map(|a| crate::lower::aliases::Alias {
                depth: 1,
                ..a.clone()
            })
            .collect();
        child.inout_params = self.inout_params.clone();
        child.closure_writes = self.closure_writes.clone();
        child.mutable = self.mutable.clone();
        child.integer_locals = self.integer_locals.clone();
        let mut scope: Vec<(String, Act)> = self
            .scopes
            .iter()
            .flatten()
            .map(|(n, a)| {
                (
                    n.clone(),
                    if is_active(a) {
                        Act::Inactive
                    } else {
                        a.clone()
                    },
                )
            })
            .collect();
        for (k, input) in inputs.iter().enumerate() {
            let id = child.graph.add_with_deps(NodeKind::Param(k), input.deps);
            scope.push((input.name.clone(), Act::Active(id)));
        }
        let bound = arm
            .bound
            .iter()
            .map(|b| (b.to_string(), arm.bound_as.clone()))
            .collect();
        child.scopes = vec![scope, bound];
        let (block, tail) = child.block(&arm.block, false);
        let finals = watch
            .iter()
            .map(|w| child.lookup(w).cloned().unwrap_or(Act::Inactive))
            .collect();
        Child {
            graph: child.graph,
            block,
            tail,
            finals,
            hoisted: child.hoisted,
            errors: child.errors,
        }
    }

    /// The active variables of the enclosing scope that `tokens` read, in order.
    pub(crate) fn inputs_of(&self, tokens: TokenStream, exclude: &[String]) -> Vec<Input> {
        let mut inputs: Vec<Input> = Vec::new();
        for name in scan::idents(tokens) {
            let name = name.to_string();
            if exclude.contains(&name) || inputs.iter().any(|i| i.name == name) {
                continue;
            }
            if let Some(Act::Active(id)) = self.lookup(&name) {
                inputs.push(Input {
                    name,
                    outer: Some(*id),
                    deps: self.graph.nodes[*id].deps,
                });
            }
        }
        inputs
    }

    /// Outer variables assigned in `tokens`.
    pub(crate) fn assigned_outer(&self, tokens: TokenStream) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for name in scan::assigned(tokens) {
            let name = name.to_string();
            if self.lookup(&name).is_some() && !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// Lowers the arms of an `if` or `match`; `rebuild` puts the new arm bodies back into the
    /// construct.
    pub fn branches(
        &mut self,
        arms: Vec<Arm>,
        original: Expr,
        rebuild: impl FnOnce(Vec<TokenStream>) -> TokenStream,
    ) -> (Expr, Act) {
        let tokens: TokenStream = arms.iter().map(|a| a.block.to_token_stream()).collect();
        let inputs = self.branch_inputs(&arms, tokens.clone());
        let assigned = self.assigned_outer(tokens);
        let first: Vec<Child> = arms
            .iter()
            .map(|a| self.run_child(a, &inputs, &assigned, None))
            .collect();
        let result_active = first.iter().any(|c| is_active(&c.tail));
        let out_vars: Vec<usize> = (0..assigned.len())
            .filter(|&j| first.iter().any(|c| is_active(&c.finals[j])))
            .collect();
        if !result_active && out_vars.is_empty() {
            self.assign_outputs(&assigned, &first, &[], None);
            self.arms_escapes(&arms, &first, &inputs, &assigned);
            return (original, first_poison(first.iter().map(|c| &c.tail)));
        }
        let pullback = format_ident!("__pb{}", self.graph.nodes.len());
        let (accumulated, acc_slots) = accumulators(&inputs);
        let acc_count = accumulated.len();
        let id = self.graph.add(NodeKind::Region {
            pullback: pullback.clone(),
            accumulated,
            carried: Vec::new(),
        });
        let offset = usize::from(result_active);
        let result = if result_active {
            self.component(id, 0)
        } else {
            Act::Inactive
        };
        self.assign_outputs(&assigned, &first, &out_vars, Some((id, offset)));
        if !self.is_useful(id) {
            // Nothing of it reaches the result, but its errors (a `&mut` borrow the lowering
            // does not follow) are reported all the same.
            self.arms_escapes(&arms, &first, &inputs, &assigned);
            return (original, result);
        }
        let count = arms.len();
        let bodies = arms
            .iter()
            .zip(&first)
            .enumerate()
            .map(|(i, (arm, analysed))| {
                let mut roots: Vec<Act> = Vec::new();
                if result_active {
                    roots.push(analysed.tail.clone());
                }
                roots.extend(out_vars.iter().map(|&j| analysed.finals[j].clone()));
                let compiled = compile_body(analysed, &roots, |useful| {
                    self.run_child(arm, &inputs, &assigned, Some(useful))
                });
                self.absorb(&compiled.pass, &roots);
                let sinks: Vec<Sink> = acc_slots.iter().map(|&a| Sink::Accumulate(a)).collect();
                let closure = closure(&compiled, &roots, &sinks, acc_count, 0);
                let wrapped = wrap(i, count, closure);
                let (hoisted, stmts) = (&compiled.pass.hoisted, &compiled.pass.block.stmts);
                quote!({ #(let #hoisted;)* let __value = { #(#stmts)* }; (__value, #wrapped) })
            })
            .collect();
        let construct = rebuild(bodies);
        let dispatch = dispatch(count);
        let acc_ty = acc_type(acc_count);
        let expr = Expr::Verbatim(quote!(({
            let (__value, __pullback) = #construct;
            #pullback = move |__seed, __acc: #acc_ty| { let __p = __pullback; #dispatch };
            __value
        })));
        self.hoisted.push(pullback);
        (expr, result)
    }

    /// Rebinds the variables the arms assign: an output (`out_vars`) to its component of the
    /// region's node (`region`: the node and the first output's position), any other to the
    /// first poison the arms left in it, if any.
    fn assign_outputs(
        &mut self,
        assigned: &[String],
        first: &[Child],
        out_vars: &[usize],
        region: Option<(crate::ir::graph::NodeId, usize)>,
    ) {
        for (j, name) in assigned.iter().enumerate() {
            let act = match (out_vars.iter().position(|&v| v == j), region) {
                (Some(k), Some((id, offset))) => self.component(id, offset + k),
                _ => first_poison(first.iter().map(|c| &c.finals[j])),
            };
            self.assign(name, act);
        }
    }

    /// [`check_escapes`](Self::check_escapes) of every arm, given its analysis pass.
    fn arms_escapes(
        &mut self,
        arms: &[Arm],
        first: &[Child],
        inputs: &[Input],
        assigned: &[String],
    ) {
        for (arm, analysed) in arms.iter().zip(first) {
            self.check_escapes(arm, inputs, assigned, analysed.graph.nodes.len());
        }
    }

    /// The inputs of a branch: the active names its arms read, plus the payload an arm's
    /// `Some(v)`/`Ok(v)` pattern binds from an active scrutinee (its tangent is the
    /// scrutinee's).
    fn branch_inputs(&self, arms: &[Arm], tokens: TokenStream) -> Vec<Input> {
        let mut inputs = self.inputs_of(tokens, &[]);
        for (name, id) in arms.iter().filter_map(|a| a.payload.clone()) {
            if !inputs.iter().any(|i| i.name == name) {
                inputs.push(Input {
                    name,
                    outer: Some(id),
                    deps: self.graph.nodes[id].deps,
                });
            }
        }
        inputs
    }

    /// A region with no active output is emitted unchanged, but active values may still leave
    /// it through a non-differentiable path (a discarded call, a write to outside state):
    /// lowers it once more, with nothing useful, to report those.
    pub(crate) fn check_escapes(
        &mut self,
        arm: &Arm,
        inputs: &[Input],
        assigned: &[String],
        nodes: usize,
    ) {
        if self.final_pass() {
            let none = vec![false; nodes];
            let child = self.run_child(arm, inputs, assigned, Some(&none));
            self.absorb(&child, &[]);
        }
    }

    /// Reports a child's errors, and those of poisoned outputs, in the final pass.
    pub(crate) fn absorb(&mut self, child: &Child, roots: &[Act]) {
        if !self.final_pass() {
            return;
        }
        self.errors.add_all(&child.errors);
        for root in roots {
            if let Act::Poison(span, message) = root {
                self.errors.push(*span, message);
            }
        }
    }
}

/// What a variable (or value) that is inactive in every arm is after the branch: poisoned if
/// any arm poisoned it, so its error is reported where it is used, else inactive.
pub fn first_poison<'a>(mut acts: impl Iterator<Item = &'a Act>) -> Act {
    acts.find(|a| matches!(a, Act::Poison(..)))
        .cloned()
        .unwrap_or(Act::Inactive)
}

/// The distinct outer nodes of `inputs` (two names may hold the same value: `let a = x;`), and
/// for each input the index of its accumulator among them.
pub fn accumulators(inputs: &[Input]) -> (Vec<usize>, Vec<usize>) {
    let mut unique: Vec<usize> = Vec::new();
    let slots = inputs
        .iter()
        .map(|i| {
            let id = i.outer.expect("a free input has an outer node");
            unique.iter().position(|&u| u == id).unwrap_or_else(|| {
                unique.push(id);
                unique.len() - 1
            })
        })
        .collect();
    (unique, slots)
}

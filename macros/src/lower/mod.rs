//! Lowering: one walk over the body that (1) builds the adjoint [`Graph`] with flow-sensitive
//! activity (a name is rebound on every `let`, assignment and compound assignment) and (2)
//! rewrites the forward pass, replacing each active operation that reaches the result by a
//! call to its rule, whose pullback is stored in a hoisted `__pbN` variable.
//!
//! The walk runs twice with identical numbering: the first pass (`useful: None`) only builds
//! the graph; [`crate::ir::activity::useful`] then decides which nodes reach the result, and the
//! second pass rewrites exactly those and reports the errors that matter.

mod aliases;
mod branch;
mod cache;
mod calls;
mod elements;
mod expr;
mod fields;
mod fusion;
mod hidden_writes;
mod loops;
mod mutation;
mod recurrence;
mod region;
pub mod strategy;
mod unsupported;

use crate::diag::Errors;
use crate::ir::Lowered;
use crate::ir::graph::{Act, Graph, NodeId, NodeKind};
use crate::parse::signature::FnSignature;
use crate::patterns::exits::early_exit_in;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::{Block, Expr, Ident, parse_quote};

/// An inout argument `&mut v` of a call: its slot, the local the call rebinds and the place
/// its new value is written back to (`v`, or `*r` through a followed reference).
pub(crate) type Inout = (usize, String, TokenStream);

/// Lowers the body of a function with signature `sig`.
pub fn lower(
    sig: &FnSignature,
    body: &Block,
    useful: Option<&[bool]>,
    refs_capturable: bool,
) -> Lowered {
    let mut l = Lowering::new(useful);
    l.refs_capturable = refs_capturable;
    let mut prologue = l.bind_params(sig);
    if let Some(exit) = early_exit_in(body) {
        l.report(
            exit,
            "early exit (`return` or `?`) is not supported yet by #[differentiable]: make the value the function's last expression",
        );
        l.fatal = true;
    }
    l.ref_names = sig
        .params
        .iter()
        .filter(|p| p.by_ref)
        .map(|p| p.name.clone())
        .collect();
    let shareable: Vec<&crate::parse::signature::Param> =
        sig.params.iter().filter(|p| shareable(p)).collect();
    l.shared = shareable.iter().map(|p| p.name.clone()).collect();
    let owned: Vec<&crate::parse::signature::Param> = sig
        .params
        .iter()
        .filter(|p| p.by_ref && !p.inout && p.pattern.is_none() && has_owned_form(&p.value_ty))
        .collect();
    l.owned_refs = owned
        .iter()
        .map(|p| (p.name.clone(), p.value_ty.clone()))
        .collect();
    let (mut block, result) = l.block(body, true);
    // The cells of the parameters that recomputed loops actually share.
    let mentioned = crate::patterns::scan::idents(block.to_token_stream());
    for p in shareable {
        let (cell, ty) = (format_ident!("__shared_{}", p.name), &p.value_ty);
        if mentioned.contains(&cell) {
            prologue.push(parse_quote!(
                let #cell: ::adjoint::__private::Shared<#ty> = ::adjoint::__private::Shared::new();
            ));
        }
    }
    for p in owned {
        let (cell, ty) = (format_ident!("__shared_{}", p.name), &p.value_ty);
        if mentioned.contains(&cell) {
            prologue.push(parse_quote!(
                let #cell: ::adjoint::__private::Shared<<#ty as ::std::borrow::ToOwned>::Owned> =
                    ::adjoint::__private::Shared::new();
            ));
        }
    }
    prologue.append(&mut block.stmts);
    block.stmts = prologue;
    if let Act::Poison(span, message) = &result {
        l.report(*span, message);
    }
    let finals: Vec<Act> = sig
        .params
        .iter()
        .filter(|p| p.inout)
        .map(|p| l.lookup(&p.name).cloned().unwrap_or(Act::Inactive))
        .collect();
    for act in &finals {
        if let Act::Poison(span, message) = act {
            l.report(*span, message);
        }
    }
    Lowered {
        graph: l.graph,
        body: block,
        result,
        hoisted: l.hoisted,
        errors: l.errors,
        finals,
    }
}

impl Lowering<'_> {
    /// Binds the parameters (active when differentiated) and returns the prologue that
    /// rebinds inout and pattern parameters at the start of the body.
    fn bind_params(&mut self, sig: &FnSignature) -> Vec<syn::Stmt> {
        let mut prologue = Vec::new();
        for (i, p) in sig.params.iter().enumerate() {
            let act = if p.wrt {
                Act::Active(self.graph.add_with_deps(NodeKind::Param(i), 1 << i))
            } else {
                Act::Inactive
            };
            // A `&mut self` receiver is taken by value: in the body, `self` is a local.
            let inout_ref = p.inout && p.name != "self";
            if inout_ref {
                let (name, owned) = (
                    format_ident!("{}", p.name),
                    format_ident!("__inout_{}", p.name),
                );
                prologue.push(parse_quote!(let #name = &mut #owned;));
            }
            match &p.pattern {
                None => {
                    self.bind(&p.name, act);
                    if inout_ref {
                        self.inout_params.push(p.name.clone());
                    }
                    if declared_mut(p) {
                        self.mutable.push(p.name.clone());
                    }
                }
                Some(pat) => {
                    self.bind_pattern(pat, act);
                    let pass = &p.pass;
                    prologue.push(parse_quote!(let #pat = #pass;));
                }
            }
        }
        prologue
    }
}

/// Whether a parameter keeps its value for the whole body, so that recomputed loops may share
/// one copy of it: passed by value, bound by name and not `mut` (re-binding it is seen during
/// lowering, which stops the sharing from there on).
fn shareable(p: &crate::parse::signature::Param) -> bool {
    !p.inout && !p.by_ref && p.pattern.is_none() && !declared_mut(p)
}

/// Whether `ty` (the referent of a `&T` parameter) is one the macro knows to be `ToOwned`: a
/// slice, an array, a `Vec`, a float or a tensor.
fn has_owned_form(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Slice(_) | syn::Type::Array(_) => true,
        syn::Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| ["Vec", "f32", "f64", "Tensor"].iter().any(|k| s.ident == k)),
        _ => false,
    }
}

/// Whether a parameter is declared `mut x: T`.
fn declared_mut(p: &crate::parse::signature::Param) -> bool {
    let receiver = p.inout && p.name == "self";
    receiver
        || matches!(p.decl.clone().into_iter().next(), Some(proc_macro2::TokenTree::Ident(i)) if i == "mut")
}

/// The state of one lowering pass over one body (a function or a region).
pub struct Lowering<'u> {
    pub graph: Graph,
    /// Innermost scope last; within a scope, later bindings shadow earlier ones.
    pub scopes: Vec<Vec<(String, Act)>>,
    useful: Option<&'u [bool]>,
    pub errors: Errors,
    pub hoisted: Vec<Ident>,
    /// Set after an error that makes later ones noise.
    pub(crate) fatal: bool,
    /// Names bound to references (`&T` parameters), whose operators take `operand(..)`.
    pub ref_names: Vec<String>,
    /// Whether pullbacks may keep references (the companions capture every lifetime), so that
    /// a recomputed loop may copy a reference it reads.
    pub refs_capturable: bool,
    /// Parameters whose value never changes in the body (not `mut`, not re-bound so far): a
    /// recomputed loop shares them through `__shared_<name>` instead of copying them into
    /// every pullback (see `region::LoopCode::replayed`).
    pub shared: Vec<String>,
    /// `&T` parameters of a type known to have an owned form (slices, arrays, `Vec`s, floats,
    /// tensors), with `T`: when pullbacks may not keep references, a recomputed loop reads
    /// them from one owned copy per call (`__shared_<name>`, `Shared::share_owned`).
    pub owned_refs: Vec<(String, syn::Type)>,
    /// Whether this pass lowers (part of) a loop body.
    pub in_loop: bool,
    /// Whether this pass lowers code that a pullback runs again (the body of a recomputed
    /// loop): the pullbacks of its nested loops are then called in the same iteration, and a
    /// nested recomputed loop may borrow what it reads instead of copying it.
    pub rerun: bool,
    /// The collections that the loop whose body this pass lowers only writes element by
    /// element, in a body the pullback runs again: their writes keep only their pullbacks
    /// ([`index_rewrite`](../../adjoint_core/collections/indexing/fn.index_rewrite.html)).
    pub write_only: Vec<String>,
    /// The references to locals the lowering follows (`let r = &mut a;`), innermost last.
    pub(crate) aliases: Vec<aliases::Alias>,
    /// The inout (`&mut`) parameters, bound by name: `*x = e` rebinds `x`.
    pub(crate) inout_params: Vec<String>,
    /// Set while the expression of a statement `recv.m(..);` is lowered: its method call
    /// takes `recv` inout when `recv` is a local (a `&mut self` method).
    pub(crate) statement_call: bool,
    /// Closures bound to a name that assign (or borrow `&mut`) locals they capture, with
    /// those locals: a call of the closure with active arguments poisons them.
    pub(crate) closure_writes: Vec<(String, Vec<String>)>,
    /// The variables declared `mut` (a macro they are passed to may assign them).
    pub(crate) mutable: Vec<String>,
    /// Locals that hold integers or `bool`s (by their declared type or initialiser): a
    /// `&mut` of one is a data argument, not an inout one.
    pub(crate) integer_locals: Vec<String>,
}

impl<'u> Lowering<'u> {
    /// A pass with no bindings; `useful: None` is the analysis pass.
    pub fn new(useful: Option<&'u [bool]>) -> Self {
        Lowering {
            graph: Graph::default(),
            scopes: vec![Vec::new()],
            useful,
            errors: Errors::default(),
            hoisted: Vec::new(),
            fatal: false,
            ref_names: Vec::new(),
            refs_capturable: false,
            shared: Vec::new(),
            owned_refs: Vec::new(),
            in_loop: false,
            rerun: false,
            write_only: Vec::new(),
            aliases: Vec::new(),
            inout_params: Vec::new(),
            statement_call: false,
            closure_writes: Vec::new(),
            mutable: Vec::new(),
            integer_locals: Vec::new(),
        }
    }

    /// An operator's operand as the rule takes it: a reference (`&x`, or a name bound to one)
    /// becomes a value through `operand`, so rules exist for values only and `&a * b` works.
    pub(crate) fn operand(&self, original: &Expr, rewritten: &Expr) -> TokenStream {
        let is_ref = match original {
            Expr::Reference(r) => r.mutability.is_none(),
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|i| self.ref_names.contains(&i.to_string())),
            _ => false,
        };
        if is_ref {
            quote!(::adjoint::__private::operand(#rewritten))
        } else {
            rewritten.to_token_stream()
        }
    }

    /// Whether this is the pass that emits code and reports errors.
    pub fn final_pass(&self) -> bool {
        self.useful.is_some()
    }

    /// Whether a node reaches the result (always true in the analysis pass).
    pub fn is_useful(&self, id: NodeId) -> bool {
        self.useful.is_none_or(|u| u[id])
    }

    /// Reports an error in the final pass.
    pub(crate) fn report(&mut self, span: Span, message: impl std::fmt::Display) {
        if self.final_pass() && !self.fatal {
            self.errors.push(span, message);
        }
    }

    /// Whether `e` mentions a variable whose value is active (or poisoned).
    /// The referent type `T` of `name` when it is a `&T` parameter with an owned form
    /// ([`Lowering::owned_refs`]).
    pub(crate) fn owned_ref(&self, name: &str) -> Option<&syn::Type> {
        self.owned_refs
            .iter()
            .find(|(o, _)| o == name)
            .map(|(_, ty)| ty)
    }

    pub(crate) fn mentions_active(&self, e: &syn::Expr) -> bool {
        let mut tracked = |id: &proc_macro2::Ident| {
            self.lookup(&id.to_string())
                .is_some_and(|a| !crate::ir::graph::is_inactive(a))
        };
        crate::patterns::scan::first_mention(e.to_token_stream(), &mut tracked).is_some()
    }

    pub fn lookup(&self, name: &str) -> Option<&Act> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, a)| a)
    }

    /// The activity of the variable `name`; data when it is not a local.
    pub(crate) fn act_of(&self, name: &str) -> Act {
        self.lookup(name).cloned().unwrap_or(Act::Inactive)
    }

    pub(crate) fn bind(&mut self, name: &str, act: Act) {
        self.ref_names.retain(|r| r != name);
        self.shared.retain(|r| r != name);
        self.owned_refs.retain(|(r, _)| r != name);
        self.unalias(name);
        self.scopes
            .last_mut()
            .expect("a scope is open")
            .push((name.to_owned(), act));
    }

    /// Rebinds an existing variable (assignment), with the local it refers to and every other
    /// reference to that local when it is one the lowering follows ([`aliases`]); returns
    /// false when it is not a local.
    pub fn assign(&mut self, name: &str, act: Act) -> bool {
        let Some(target) = self.aliases.iter().rev().find(|a| a.name == name) else {
            return self.set_slot(name, act);
        };
        let target = target.target.clone();
        let others: Vec<String> = self
            .aliases
            .iter()
            .filter(|a| a.target == target)
            .map(|a| a.name.clone())
            .collect();
        for other in others {
            self.set_slot(&other, act.clone());
        }
        self.set_slot(&target, act)
    }

    /// Rebinds the innermost variable `name` alone; returns false when it is not a local.
    pub(crate) fn set_slot(&mut self, name: &str, act: Act) -> bool {
        let slot = self
            .scopes
            .iter_mut()
            .rev()
            .flat_map(|s| s.iter_mut().rev())
            .find(|(n, _)| n == name);
        match slot {
            Some((_, a)) => {
                *a = act;
                true
            }
            None => false,
        }
    }

    /// The runtime flag saying whether an operand's tangent is needed: true when any
    /// parameter it depends on is differentiated at this call.
    pub(crate) fn needs(&self, act: &Act) -> TokenStream {
        match act {
            Act::Active(id) => {
                let deps = self.graph.nodes[*id].deps;
                let flags = (0..128)
                    .filter(|i| deps >> i & 1 == 1)
                    .map(|i: usize| {
                        let i = crate::emit::index(i);
                        quote!(__needs[#i])
                    })
                    .collect();
                crate::emit::any(flags)
            }
            _ => quote!(false),
        }
    }

    /// An operation with operands `slots`: a rule node when some operand is active.
    pub(crate) fn rule(
        &mut self,
        slots: Vec<Act>,
        spans: Vec<Span>,
        span: Span,
        original: Expr,
        call: impl FnOnce(Vec<TokenStream>) -> TokenStream,
    ) -> (Expr, Act) {
        self.rule_with_inout(slots, spans, span, original, call, Vec::new())
    }

    /// [`Self::rule`] for a call with `&mut v` arguments: `(slot, v, place)` triples, each
    /// rebinding `v` to its value after the call, written back to `place` (`v`, or `*r` through
    /// a followed reference).
    pub(crate) fn rule_with_inout(
        &mut self,
        slots: Vec<Act>,
        spans: Vec<Span>,
        span: Span,
        original: Expr,
        call: impl FnOnce(Vec<TokenStream>) -> TokenStream,
        inout: Vec<Inout>,
    ) -> (Expr, Act) {
        let pullback = format_ident!("__pb{}", self.graph.nodes.len());
        let inout_slots = inout.iter().map(|(slot, ..)| *slot).collect();
        let kind = |slots| NodeKind::Rule {
            pullback: pullback.clone(),
            slots,
            spans,
            inout: inout_slots,
        };
        let id = match self.node_over(slots.clone(), kind) {
            Ok(id) => id,
            Err(act) => return (original, act),
        };
        for (slot, name, _) in &inout {
            let after = self.graph.add(NodeKind::InoutOut {
                call: id,
                slot: *slot,
            });
            self.assign(name, Act::Active(after));
        }
        if !self.is_useful(id) {
            return (original, Act::Active(id));
        }
        let needs = slots.iter().map(|a| self.needs(a)).collect();
        let call = call(needs);
        self.hoisted.push(pullback.clone());
        let names: Vec<&TokenStream> = inout.iter().map(|(.., place)| place).collect();
        let news: Vec<Ident> = (0..names.len())
            .map(|k| format_ident!("__new{}", k))
            .collect();
        // Spanned like the template below, so that `__value` has the same hygiene in both.
        let receive = if names.is_empty() {
            quote_spanned!(span=> __value)
        } else {
            quote_spanned!(span=> (__value, (#(#news,)*)))
        };
        let expr = Expr::Verbatim(quote_spanned!(span=> ({
            let (#receive, __pullback) = #call;
            #(#names = #news;)*
            #pullback = __pullback;
            __value
        })));
        (expr, Act::Active(id))
    }

    /// A node over `acts` built by `kind` from its operands, when some operand is active; the
    /// poisoned operands become errors of the node (reported if it turns out useful). Without
    /// an active operand: the poison of the first poisoned operand, or `Inactive`.
    pub(crate) fn node_over(
        &mut self,
        acts: Vec<Act>,
        kind: impl FnOnce(Vec<Option<NodeId>>) -> NodeKind,
    ) -> Result<NodeId, Act> {
        let operands: Vec<Option<NodeId>> = acts
            .iter()
            .map(|a| {
                if let Act::Active(id) = a {
                    Some(*id)
                } else {
                    None
                }
            })
            .collect();
        if operands.iter().all(Option::is_none) {
            let poison = acts.into_iter().find(|a| matches!(a, Act::Poison(..)));
            return Err(poison.unwrap_or(Act::Inactive));
        }
        let id = self.graph.add(kind(operands));
        for act in acts {
            if let Act::Poison(s, m) = act {
                self.graph.nodes[id].errors.push((s, m));
            }
        }
        if self.is_useful(id) {
            for (s, m) in self.graph.nodes[id].errors.clone() {
                self.report(s, m);
            }
        }
        Ok(id)
    }

    /// Component `index` of an active tuple-valued node.
    pub fn component(&mut self, parent: NodeId, index: usize) -> Act {
        if let NodeKind::Tuple(parts) = &self.graph.nodes[parent].kind {
            return parts
                .get(index)
                .copied()
                .flatten()
                .map_or(Act::Inactive, Act::Active);
        }
        Act::Active(self.graph.add(NodeKind::Component { parent, index }))
    }
}

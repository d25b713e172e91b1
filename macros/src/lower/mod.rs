//! Lowering: one walk over the body that (1) builds the adjoint [`Graph`] with flow-sensitive
//! activity (a name is rebound on every `let`, assignment and compound assignment) and (2)
//! rewrites the forward pass, replacing each active operation that reaches the result by a
//! call to its rule, whose pullback is stored in a hoisted `__pbN` variable.
//!
//! The walk runs twice with identical numbering: the first pass (`useful: None`) only builds
//! the graph; [`crate::ir::activity::useful`] then decides which nodes reach the result, and the
//! second pass rewrites exactly those and reports the errors that matter.

mod branch;
mod cache;
mod calls;
mod elements;
mod fusion;
mod loops;
mod mutation;
mod recurrence;
mod region;
pub mod strategy;
mod unsupported;

use crate::diag::Errors;
use crate::emit::names;
use crate::ir::Lowered;
use crate::ir::graph::{Act, Graph, NodeId, NodeKind};
use crate::ir::graph::{is_active, is_inactive};
use crate::parse::signature::FnSignature;
use crate::patterns::bindings::pattern_names;
use crate::patterns::exits::early_exit_in;
use crate::patterns::loops::Loop;
use crate::patterns::operators::{arithmetic_rule, compound_rule, is_comparison};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Block, Expr, Ident, Local, LocalInit, Member, Pat, Stmt, UnOp, parse_quote, parse_quote_spanned,
};

/// Lowers the body of a function with signature `sig`.
pub fn lower(
    sig: &FnSignature,
    body: &Block,
    useful: Option<&[bool]>,
    refs_capturable: bool,
) -> Lowered {
    let mut l = Lowering::new(useful);
    l.refs_capturable = refs_capturable;
    let mut prologue = Vec::new();
    for (i, p) in sig.params.iter().enumerate() {
        let act = if p.wrt {
            Act::Active(l.graph.add_with_deps(NodeKind::Param(i), 1 << i))
        } else {
            Act::Inactive
        };
        if p.inout {
            let (name, owned) = (
                format_ident!("{}", p.name),
                format_ident!("__inout_{}", p.name),
            );
            prologue.push(parse_quote!(let #name = &mut #owned;));
        }
        match &p.pattern {
            None => l.bind(&p.name, act),
            Some(pat) => {
                l.bind_pattern(pat, act);
                let pass = &p.pass;
                prologue.push(parse_quote!(let #pat = #pass;));
            }
        }
    }
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

/// Whether a parameter keeps its value for the whole body, so that recomputed loops may share
/// one copy of it: passed by value, bound by name and not `mut` (re-binding it is seen during
/// lowering, which stops the sharing from there on).
fn shareable(p: &crate::parse::signature::Param) -> bool {
    !p.inout
        && !p.by_ref
        && p.pattern.is_none()
        && !matches!(p.decl.clone().into_iter().next(), Some(proc_macro2::TokenTree::Ident(i)) if i == "mut")
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
    /// Whether this pass lowers (part of) a loop body.
    pub in_loop: bool,
    /// Whether this pass lowers code that a pullback runs again (the body of a recomputed
    /// loop): the pullbacks of its nested loops are then called in the same iteration, and a
    /// nested recomputed loop may borrow what it reads instead of copying it.
    pub rerun: bool,
    /// The collections that the loop whose body this pass lowers only writes element by
    /// element, in a body the pullback runs again: their writes keep only their pullbacks
    /// ([`index_rewrite`](../../adjoint_core/__private/fn.index_rewrite.html)).
    pub write_only: Vec<String>,
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
            in_loop: false,
            rerun: false,
            write_only: Vec::new(),
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

    pub fn lookup(&self, name: &str) -> Option<&Act> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, a)| a)
    }

    pub(crate) fn bind(&mut self, name: &str, act: Act) {
        self.ref_names.retain(|r| r != name);
        self.shared.retain(|r| r != name);
        self.scopes
            .last_mut()
            .expect("a scope is open")
            .push((name.to_owned(), act));
    }

    /// Rebinds an existing variable (assignment); returns false when it is not a local.
    pub fn assign(&mut self, name: &str, act: Act) -> bool {
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
                    .map(|i: usize| quote!(__needs[#i]));
                quote!((false #(|| #flags)*))
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

    /// [`Self::rule`] for a call with `&mut v` arguments: `(slot, v)` pairs, each rebinding `v`
    /// to its value after the call.
    pub(crate) fn rule_with_inout(
        &mut self,
        slots: Vec<Act>,
        spans: Vec<Span>,
        span: Span,
        original: Expr,
        call: impl FnOnce(Vec<TokenStream>) -> TokenStream,
        inout: Vec<(usize, String)>,
    ) -> (Expr, Act) {
        let pullback = format_ident!("__pb{}", self.graph.nodes.len());
        let inout_slots = inout.iter().map(|(slot, _)| *slot).collect();
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
        for (slot, name) in &inout {
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
        let names: Vec<Ident> = inout.iter().map(|(_, n)| format_ident!("{}", n)).collect();
        let news: Vec<Ident> = (0..names.len())
            .map(|k| format_ident!("__new{}", k))
            .collect();
        // Spanned like the template below, so that `__value` has the same hygiene in both.
        let receive = if names.is_empty() {
            quote_spanned!(span=> __value)
        } else {
            quote_spanned!(span=> (__value, (#(#news,)*)))
        };
        let expr = parse_quote_spanned!(span=> ({
            let (#receive, __pullback) = #call;
            #(#names = #news;)*
            #pullback = __pullback;
            __value
        }));
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

    pub fn block(&mut self, block: &Block, top: bool) -> (Block, Act) {
        self.scopes.push(Vec::new());
        let mut stmts = Vec::new();
        let mut result = Act::Inactive;
        let last = block.stmts.len().saturating_sub(1);
        for (i, stmt) in block.stmts.iter().enumerate() {
            match stmt {
                Stmt::Local(local) => stmts.push(Stmt::Local(self.local(local))),
                Stmt::Expr(Expr::Return(r), _) if top && i == last && r.expr.is_some() => {
                    let (e, act) = self.expr(r.expr.as_ref().expect("checked"));
                    result = act;
                    stmts.push(Stmt::Expr(e, None));
                }
                Stmt::Expr(e, None) if i == last => {
                    let (e, act) = self.expr(e);
                    result = act;
                    stmts.push(Stmt::Expr(e, None));
                }
                Stmt::Expr(e, semi) => {
                    let (new, act) = self.expr(e);
                    if is_active(&act)
                        && matches!(e, Expr::Call(_) | Expr::MethodCall(_))
                        && !passes_mut(e)
                    {
                        self.report(
                            e.span(),
                            "the result of this call is discarded, so the active values passed to it lose their derivative (a write through interior mutability or to outside state is not differentiable); pass `without_derivative(..)` if that is intended",
                        );
                    }
                    // A rewritten `if`/loop is no longer block-like and needs its `;`.
                    let semi = semi.or_else(|| (i != last).then(Default::default));
                    stmts.push(Stmt::Expr(new, semi));
                }
                other => stmts.push(other.clone()),
            }
        }
        self.scopes.pop();
        (
            Block {
                brace_token: block.brace_token,
                stmts,
            },
            result,
        )
    }

    pub(crate) fn local(&mut self, local: &Local) -> Local {
        let mut out = local.clone();
        let act = match &local.init {
            Some(LocalInit { expr, diverge, .. }) => {
                let (e, act) = self.expr(expr);
                if let (Some(_), false) = (diverge, is_inactive(&act)) {
                    self.report(expr.span(), "`let ... else` on an active value is not supported yet: match on data instead");
                }
                *out.init.as_mut().expect("checked").expr = e;
                act
            }
            None => Act::Inactive,
        };
        self.bind_pattern(&local.pat, act);
        out
    }

    pub(crate) fn bind_pattern(&mut self, pat: &Pat, act: Act) {
        match pat {
            Pat::Ident(p) if p.subpat.is_none() => self.bind(&p.ident.to_string(), act),
            Pat::Type(p) => self.bind_pattern(&p.pat, act),
            Pat::Paren(p) => self.bind_pattern(&p.pat, act),
            Pat::Reference(r) => self.bind_pattern(&r.pat, act),
            Pat::Wild(_) => {}
            Pat::Tuple(t) if !t.elems.iter().any(|e| matches!(e, Pat::Rest(_))) => {
                for (index, elem) in t.elems.iter().enumerate() {
                    let part = match &act {
                        Act::Active(parent) if !pattern_names(elem).is_empty() => {
                            self.component(*parent, index)
                        }
                        Act::Active(_) => continue,
                        other => other.clone(),
                    };
                    self.bind_pattern(elem, part);
                }
            }
            other => {
                let act = match act {
                    Act::Active(_) => Act::Poison(
                        other.span(),
                        "this pattern cannot destructure an active value yet: bind it to a name or use a tuple pattern without `..`".into(),
                    ),
                    a => a,
                };
                for name in pattern_names(other) {
                    self.bind(&name.to_string(), act.clone());
                }
            }
        }
    }

    pub(crate) fn expr(&mut self, e: &Expr) -> (Expr, Act) {
        if let Some(pattern) = crate::patterns::affine::affine(e) {
            return self.affine(pattern);
        }
        if let Some(lowered) = Loop::of(e).and_then(|l| self.loop_expr(l, e)) {
            return lowered;
        }
        match e {
            Expr::Lit(_) => (e.clone(), Act::Inactive),
            Expr::Path(p) => (e.clone(), self.path_activity(p)),
            Expr::Paren(p) => {
                let (inner, act) = self.expr(&p.expr);
                let mut out = p.clone();
                out.expr = Box::new(inner);
                (Expr::Paren(out), act)
            }
            Expr::Group(g) => {
                let (inner, act) = self.expr(&g.expr);
                let mut out = g.clone();
                out.expr = Box::new(inner);
                (Expr::Group(out), act)
            }
            Expr::Reference(r) => self.reference(r),
            Expr::Unary(u) => self.unary(u),
            Expr::Binary(b) => self.binary(b),
            Expr::Assign(a) => self.assignment(a),
            Expr::MethodCall(m) => self.method_call(m),
            Expr::Call(c) => self.call(c),
            Expr::Cast(c) => self.cast(c),
            Expr::Tuple(t) => self.tuple(t),
            Expr::Field(f) => self.field(f),
            Expr::Index(i) => self.index(i),
            Expr::Array(a) => self.elements(a.elems.iter().cloned().collect(), false, e.clone()),
            Expr::Struct(lit) => self.struct_literal(lit),
            Expr::Macro(m) if m.mac.path.is_ident("vec") => {
                match m.mac.parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                ) {
                    Ok(elems) => self.elements(elems.into_iter().collect(), true, e.clone()),
                    Err(_) => self.opaque(e),
                }
            }
            Expr::If(i) => self.if_else(i),
            Expr::Match(m) => self.match_arms(m),
            Expr::Block(b) if b.label.is_none() => {
                let (block, act) = self.block(&b.block, false);
                let mut out = b.clone();
                out.block = block;
                (Expr::Block(out), act)
            }
            other => self.opaque(other),
        }
    }

    /// A variable's activity; other paths (constants, functions) are inactive.
    fn path_activity(&self, p: &syn::ExprPath) -> Act {
        match (&p.qself, p.path.get_ident()) {
            (None, Some(id)) => self
                .lookup(&id.to_string())
                .cloned()
                .unwrap_or(Act::Inactive),
            _ => Act::Inactive,
        }
    }

    /// `&x` has the activity of `x`; `&mut` of an active value is rejected.
    fn reference(&mut self, r: &syn::ExprReference) -> (Expr, Act) {
        let (inner, act) = self.expr(&r.expr);
        let mut out = r.clone();
        out.expr = Box::new(inner);
        let act = match act {
            Act::Active(_) if r.mutability.is_some() => Act::Poison(
                r.span(),
                "`&mut` of an active value is not supported yet: pass it by value and return the new value".into(),
            ),
            a => a,
        };
        (Expr::Reference(out), act)
    }

    pub(crate) fn unary(&mut self, u: &syn::ExprUnary) -> (Expr, Act) {
        let (inner, act) = self.expr(&u.expr);
        let mut out = u.clone();
        out.expr = Box::new(inner.clone());
        let rebuilt = Expr::Unary(out);
        let operand = self.operand(&u.expr, &inner);
        match u.op {
            UnOp::Neg(_) => self.rule(
                vec![act],
                vec![u.expr.span()],
                u.span(),
                rebuilt,
                |n| quote!(::adjoint::__private::NegRule::neg_vjp(#operand, [#(#n),*])),
            ),
            UnOp::Deref(_) => (rebuilt, act),
            _ => (rebuilt, Act::Inactive),
        }
    }

    pub(crate) fn binary(&mut self, b: &syn::ExprBinary) -> (Expr, Act) {
        if let Some(rule) = compound_rule(&b.op) {
            return self.compound(b, rule);
        }
        let (left, la) = self.expr(&b.left);
        let (right, ra) = self.expr(&b.right);
        let mut out = b.clone();
        out.left = Box::new(left.clone());
        out.right = Box::new(right.clone());
        let rebuilt = Expr::Binary(out);
        let (left, right) = (self.operand(&b.left, &left), self.operand(&b.right, &right));
        match arithmetic_rule(&b.op) {
            Some((tr, method)) => self.rule(vec![la, ra], vec![b.left.span(), b.right.span()], b.op.span(), rebuilt, |n| {
                quote_spanned!(b.op.span()=> ::adjoint::__private::#tr::#method(#left, #right, [#(#n),*]))
            }),
            None if is_comparison(&b.op) => (rebuilt, Act::Inactive),
            None if is_inactive(&la) && is_inactive(&ra) => (rebuilt, Act::Inactive),
            None => {
                let op = b.op.to_token_stream();
                (rebuilt, Act::Poison(b.op.span(), format!("operator `{op}` has no derivative")))
            }
        }
    }

    pub(crate) fn tuple(&mut self, t: &syn::ExprTuple) -> (Expr, Act) {
        let (elems, acts) = self.args(&t.elems);
        let mut out = t.clone();
        out.elems = elems.into_iter().collect();
        let rebuilt = Expr::Tuple(out);
        match self.node_over(acts, NodeKind::Tuple) {
            Ok(id) => (rebuilt, Act::Active(id)),
            Err(act) => (rebuilt, act),
        }
    }

    pub(crate) fn field(&mut self, f: &syn::ExprField) -> (Expr, Act) {
        let (base, act) = self.expr(&f.base);
        let mut out = f.clone();
        out.base = Box::new(base.clone());
        let rebuilt = Expr::Field(out);
        match (&f.member, act) {
            (Member::Unnamed(index), Act::Active(parent)) => {
                (rebuilt, self.component(parent, index.index as usize))
            }
            // A named field of an active struct: the accessor rule `#[derive(Differentiable)]`
            // writes (`base.__field_w_vjp_full(needs)`).
            (Member::Named(name), act @ Act::Active(_)) => {
                let accessor =
                    names::full_method(&format_ident!("__field_{}", name, span = name.span()));
                let read = self.rule(
                    vec![act],
                    vec![f.base.span()],
                    name.span(),
                    rebuilt,
                    |n| quote_spanned!(name.span()=> #base.#accessor([#(#n),*])),
                );
                if let Act::Active(id) = read.1 {
                    self.graph.nodes[id].field_read = true;
                }
                read
            }
            (_, act @ Act::Poison(..)) => (rebuilt, act),
            _ => (rebuilt, Act::Inactive),
        }
    }
}

/// Whether a call passes some argument as `&mut` (its effect is the mutation, so its result
/// may be discarded).
fn passes_mut(e: &Expr) -> bool {
    let args = match e {
        Expr::Call(c) => &c.args,
        Expr::MethodCall(m) => &m.args,
        _ => return false,
    };
    args.iter()
        .any(|a| matches!(a, Expr::Reference(r) if r.mutability.is_some()))
}

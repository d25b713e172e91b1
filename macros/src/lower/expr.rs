//! The expression walk: blocks, bindings and the dispatch over expression kinds, with the
//! operators, tuples, fields and references lowered here and the rest in the sibling modules.

use crate::emit::names;
use crate::ir::graph::{Act, NodeKind, is_active, is_inactive};
use crate::lower::Lowering;
use crate::patterns::bindings::pattern_names;
use crate::patterns::loops::Loop;
use crate::patterns::operators::{arithmetic_rule, compound_rule, is_comparison};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Block, Expr, Local, LocalInit, Member, Pat, Stmt, UnOp};

impl Lowering<'_> {
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
                    // A method called for its effect on a local (`acc.add(x);`) is taken as a
                    // `&mut self` method: its receiver is inout (`lower/calls.rs`).
                    self.statement_call = semi.is_some() && matches!(e, Expr::MethodCall(_));
                    let (new, act) = self.expr(e);
                    self.statement_call = false;
                    if is_active(&act)
                        && matches!(e, Expr::Call(_) | Expr::MethodCall(_))
                        && !self.passes_mut(e)
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
                Stmt::Macro(m) => {
                    self.macro_statement(m);
                    stmts.push(stmt.clone());
                }
                Stmt::Item(item) => {
                    self.item_statement(item);
                    stmts.push(stmt.clone());
                }
            }
        }
        self.scopes.pop();
        let depth = self.scopes.len();
        self.aliases.retain(|a| a.depth <= depth);
        (
            Block {
                brace_token: block.brace_token,
                stmts,
            },
            result,
        )
    }

    pub(crate) fn local(&mut self, local: &Local) -> Local {
        if let Some(kept) = self.alias_local(local) {
            return kept;
        }
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
        if let (Some(init), Pat::Ident(p)) = (&local.init, &local.pat) {
            self.record_closure(&p.ident, &init.expr);
        }
        if let Some(name) = integer_local(local) {
            self.integer_locals.push(name);
        }
        out
    }

    pub(crate) fn bind_pattern(&mut self, pat: &Pat, act: Act) {
        if !is_inactive(&act) && self.reject_ref_mut(pat) {
            return self.bind_parts(pat, Act::Inactive);
        }
        self.bind_parts(pat, act);
    }

    fn bind_parts(&mut self, pat: &Pat, act: Act) {
        match pat {
            Pat::Ident(p) if p.subpat.is_none() => {
                let name = p.ident.to_string();
                self.bind(&name, act);
                if p.mutability.is_some() {
                    self.mutable.push(name);
                }
            }
            Pat::Type(p) => self.bind_parts(&p.pat, act),
            Pat::Paren(p) => self.bind_parts(&p.pat, act),
            Pat::Reference(r) => self.bind_parts(&r.pat, act),
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
                    self.bind_parts(elem, part);
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

    /// `&x` has the activity of `x`. A `&mut` borrow of an active value that the lowering does
    /// not follow (it follows `&mut v` passed to a call and `let r = &mut v;`) is an error:
    /// writes through it would be invisible.
    fn reference(&mut self, r: &syn::ExprReference) -> (Expr, Act) {
        let (inner, act) = self.expr(&r.expr);
        let mut out = r.clone();
        out.expr = Box::new(inner);
        if r.mutability.is_some() && !is_inactive(&act) {
            self.report(
                r.span(),
                "this `&mut` borrow of an active value is not followed by #[differentiable], so writes through it would lose their derivative: pass `&mut v` of a local straight to a call, bind it with `let r = &mut v;`, or assign the new value",
            );
            return (Expr::Reference(out), Act::Inactive);
        }
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

impl Lowering<'_> {
    /// Whether a call passes some argument as `&mut` (`&mut v`, or a reference `r` the
    /// lowering follows): its effect is the mutation, so its result may be discarded.
    fn passes_mut(&self, e: &Expr) -> bool {
        let args = match e {
            Expr::Call(c) => &c.args,
            Expr::MethodCall(m) => &m.args,
            _ => return false,
        };
        args.iter().any(|a| {
            matches!(a, Expr::Reference(r) if r.mutability.is_some()) || self.mut_place(a).is_some()
        })
    }
}

/// The name a `let` binds when what it holds is integers or `bool`s by its declared type
/// (`let mut r: Vec<usize> = ..`) or its initialiser (`0`, `vec![0; n]`, `vec![1, 2]`):
/// a `&mut` of it passed to a call is data, never an inout argument.
fn integer_local(local: &Local) -> Option<String> {
    let (pat, ty) = match &local.pat {
        Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
        pat => (pat, None),
    };
    let Pat::Ident(p) = pat else { return None };
    let by_type = ty.is_some_and(holds_no_derivative);
    let by_init = local
        .init
        .as_ref()
        .is_some_and(|i| integer_literals(&i.expr));
    (by_type || by_init).then(|| p.ident.to_string())
}

/// Whether a type holds only integers, `bool`s and other obviously non-differentiable
/// values: those types, and `Vec`s, arrays and slices of them.
fn holds_no_derivative(ty: &syn::Type) -> bool {
    use syn::Type;
    if crate::parse::signature::obviously_non_differentiable(ty) {
        return true;
    }
    match ty {
        Type::Array(a) => holds_no_derivative(&a.elem),
        Type::Slice(s) => holds_no_derivative(&s.elem),
        Type::Reference(r) => holds_no_derivative(&r.elem),
        Type::Path(p) => p.path.segments.last().is_some_and(|s| {
            s.ident == "Vec"
                && matches!(&s.arguments, syn::PathArguments::AngleBracketed(a)
                    if matches!(a.args.first(), Some(syn::GenericArgument::Type(t)) if holds_no_derivative(t)))
        }),
        _ => false,
    }
}

/// An integer or `bool` literal, or `vec![..]` of one.
fn integer_literals(e: &Expr) -> bool {
    match e {
        Expr::Lit(l) => matches!(l.lit, syn::Lit::Int(_) | syn::Lit::Bool(_)),
        Expr::Macro(m) if m.mac.path.is_ident("vec") => matches!(
            m.mac.tokens.clone().into_iter().next(),
            Some(proc_macro2::TokenTree::Literal(l)) if syn::parse_str::<syn::LitInt>(&l.to_string()).is_ok()
        ),
        _ => false,
    }
}

//! Mutation: assignment, compound assignment, element writes `v[i] = e` and `v.push(e)`.
//! Each creates a new version of the variable in the adjoint graph and rebinds its name.

use crate::ir::graph::{Act, NodeKind};
use crate::ir::graph::{is_active, is_inactive};
use crate::lower::Lowering;
use crate::patterns::bindings::local_name;
use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident, parse_quote};

impl Lowering<'_> {
    /// `place op= rhs`: a new version of `place`.
    pub(crate) fn compound(
        &mut self,
        b: &syn::ExprBinary,
        (tr, method): (Ident, Ident),
    ) -> (Expr, Act) {
        if let Expr::Index(place) = &*b.left {
            // `v[i] op= e` is `v[i] = v[i] op e`.
            let op = plain_op(&b.op);
            let (left, right) = (&b.left, &b.right);
            let value: Expr = parse_quote!(#left #op #right);
            return self.element_write(place, &value, Expr::Binary(b.clone()));
        }
        if matches!(&*b.left, Expr::Field(_)) {
            // `p.x op= e` is `p.x = p.x op e`.
            let op = plain_op(&b.op);
            let (left, right) = (&b.left, &b.right);
            let value: Expr = parse_quote!(#left #op #right);
            let assign: Expr = parse_quote!(#left = #value);
            if let Some(lowered) = self.element_field_write(&b.left, &value) {
                return lowered;
            }
            if let Some(lowered) = self.field_write(&b.left, &value, assign) {
                return lowered;
            }
        }
        let (right, ra) = self.expr(&b.right);
        let mut out = b.clone();
        out.right = Box::new(right.clone());
        let rebuilt = Expr::Binary(out);
        let Some(name) = self.written_local(&b.left) else {
            self.unfollowed_write(&b.left, &ra);
            return (rebuilt, Act::Inactive);
        };
        let current = self.act_of(&name.to_string());
        let left = &b.left;
        let right = self.operand(&b.right, &right);
        let spans = vec![b.left.span(), b.right.span()];
        let (value, act) = self.rule(vec![current, ra], spans, b.op.span(), rebuilt.clone(), |n| {
            quote_spanned!(b.op.span()=> ::adjoint::__private::#tr::#method(#left, #right, [#(#n),*]))
        });
        if !self.assign(&name.to_string(), act.clone()) && !is_inactive(&act) {
            self.report(b.left.span(), non_local_write(&b.left));
        }
        match act {
            Act::Active(id) if self.is_useful(id) => (parse_quote!(#left = #value), Act::Inactive),
            _ => (rebuilt, Act::Inactive),
        }
    }

    pub(crate) fn assignment(&mut self, a: &syn::ExprAssign) -> (Expr, Act) {
        if let Expr::Index(place) = &*a.left {
            return self.element_write(place, &a.right, Expr::Assign(a.clone()));
        }
        if self.repoint(a) {
            return (Expr::Assign(a.clone()), Act::Inactive);
        }
        if let Some(lowered) = self.element_field_write(&a.left, &a.right) {
            return lowered;
        }
        if let Some(lowered) = self.field_write(&a.left, &a.right, Expr::Assign(a.clone())) {
            return lowered;
        }
        let (right, ra) = self.expr(&a.right);
        let mut out = a.clone();
        out.right = Box::new(right);
        self.write(&a.left, ra);
        (Expr::Assign(out), Act::Inactive)
    }

    /// Writes a value of activity `act` to the left side of an assignment: rebinds a local
    /// (`a`, or `*r` through a followed reference), each local of a tuple `(a, (b, _))` to its
    /// component (`_` skipped); anything else is an error when an active value is on either
    /// side.
    fn write(&mut self, left: &Expr, act: Act) {
        match left {
            Expr::Infer(_) => {}
            Expr::Paren(p) => self.write(&p.expr, act),
            Expr::Tuple(t) => {
                for (index, elem) in t.elems.iter().enumerate() {
                    if matches!(elem, Expr::Infer(_)) {
                        continue;
                    }
                    let part = match &act {
                        Act::Active(parent) => self.component(*parent, index),
                        other => other.clone(),
                    };
                    self.write(elem, part);
                }
            }
            _ => match self.written_local(left) {
                Some(name) => {
                    if !self.assign(&name.to_string(), act.clone()) && !is_inactive(&act) {
                        self.report(left.span(), non_local_write(left));
                    }
                }
                None => self.unfollowed_write(left, &act),
            },
        }
    }

    /// A write to a place the lowering does not follow (a field, a deref of a reference it
    /// does not know, a destructuring pattern other than a tuple): an error when the value
    /// written or the place is active, since the place's derivative would be silently wrong.
    fn unfollowed_write(&mut self, place: &Expr, value: &Act) {
        let (_, place_act) = self.expr(place);
        let root_active = self.root_of(place).is_some_and(|r| !is_inactive(&r));
        let mentions = matches!(
            place,
            Expr::Array(_) | Expr::Call(_) | Expr::Struct(_) | Expr::Range(_)
        ) && crate::patterns::scan::idents(place.to_token_stream())
            .iter()
            .any(|i| !is_inactive(&self.act_of(&i.to_string())));
        let place_active = !is_inactive(&place_act) || root_active || mentions;
        let message = if let Expr::Unary(u) = place {
            format!(
                "writes through `*{}`, a reference #[differentiable] does not follow (it follows differentiated `&mut` parameters and `let r = &mut v;` of a local), with an active value on one side, so the derivative would be wrong: return the new value instead",
                u.expr.to_token_stream()
            )
        } else if is_inactive(value) {
            format!(
                "writes to `{}`, part of an active value, which #[differentiable] does not follow yet, so its old derivative would be kept: build the new value and assign the whole variable",
                place.to_token_stream()
            )
        } else {
            non_local_write(place)
        };
        // A place reached through `.last_mut()` and the like was reported at that call (by
        // `self.expr(place)` above).
        if (!is_inactive(value) || place_active) && !lent(place) {
            self.report(place.span(), message);
        }
    }

    /// The activity of the local a place is part of: `p` of `p.x`, `v[i][j]`, `*r`, `p.get()`.
    pub(crate) fn root_of(&self, place: &Expr) -> Option<Act> {
        match place {
            Expr::Path(p) => p.path.get_ident().map(|i| self.act_of(&i.to_string())),
            Expr::Field(f) => self.root_of(&f.base),
            Expr::Index(i) => self.root_of(&i.expr),
            Expr::Paren(p) => self.root_of(&p.expr),
            Expr::Group(g) => self.root_of(&g.expr),
            Expr::Unary(u) => self.root_of(&u.expr),
            Expr::MethodCall(m) => self.root_of(&m.receiver),
            _ => None,
        }
    }

    /// `v[i] = value` on a local collection: a new version of `v` whose pullback takes the
    /// element's adjoint out of the collection's.
    fn element_write(
        &mut self,
        place: &syn::ExprIndex,
        value: &Expr,
        original: Expr,
    ) -> (Expr, Act) {
        let (index, index_act) = self.expr(&place.index);
        let (value_expr, value_act) = self.expr(value);
        let Some(name) = local_name(&place.expr) else {
            self.unfollowed_write(&Expr::Index(place.clone()), &value_act);
            return (original, Act::Inactive);
        };
        let current = self.act_of(&name.to_string());
        let target = self.place_of(name);
        if is_active(&index_act) {
            self.report(
                place.index.span(),
                "an index must be data, not an active value",
            );
        }
        let rewrite = self.write_only.contains(&name.to_string());
        let spans = vec![place.expr.span(), value.span()];
        let (expr, act) = self.rule(
            vec![current, value_act],
            spans,
            place.span(),
            original,
            |n| {
                // A collection the loop only writes is not kept: the write was made by the
                // forward pass, and only its pullback is built again.
                let (write, target) = if rewrite {
                    (quote!(index_rewrite), quote!(&#target))
                } else {
                    (quote!(index_write), quote!(&mut #target))
                };
                quote_spanned!(place.span()=> {
                    let (__index, __element) = (#index, #value_expr);
                    ::adjoint::__private::#write(#target, __index, __element, [#(#n),*])
                })
            },
        );
        self.assign(&name.to_string(), act);
        (expr, Act::Inactive)
    }

    /// `v.push(value)` and `v.truncate(len)` on a local `Vec`: a new version of `v`, by the rule
    /// `vec_push` (the value differentiated) or `vec_truncate` (the length is data).
    pub(crate) fn resized(&mut self, m: &syn::ExprMethodCall, name: &Ident) -> (Expr, Act) {
        let (arg_expr, arg_act) = self.expr(&m.args[0]);
        let current = self.act_of(&name.to_string());
        let target = self.place_of(name);
        let mut original = m.clone();
        original.args[0] = arg_expr.clone();
        let (acts, spans, rule, arg) = if m.method == "push" {
            let spans = vec![m.receiver.span(), m.args[0].span()];
            (
                vec![current, arg_act],
                spans,
                quote!(vec_push),
                quote!(__element),
            )
        } else {
            let spans = vec![m.receiver.span()];
            (vec![current], spans, quote!(vec_truncate), quote!(__len))
        };
        let (expr, act) = self.rule(
            acts,
            spans,
            m.method.span(),
            Expr::MethodCall(original),
            |n| {
                quote_spanned!(m.method.span()=> {
                    let #arg = #arg_expr;
                    ::adjoint::__private::#rule(&mut #target, #arg, [#(#n),*])
                })
            },
        );
        self.assign(&name.to_string(), act);
        (expr, Act::Inactive)
    }

    /// `Path { f: a, g: b }` with active fields: a struct built from its parts.
    pub(crate) fn struct_literal(&mut self, lit: &syn::ExprStruct) -> (Expr, Act) {
        if lit.fields.iter().any(|f| self.mentions_active(&f.expr))
            && let Some(built) = crate::patterns::variant_match::struct_literal(lit)
        {
            // `Enum::V { .. }` of active values: the enum's hidden constructor rule.
            return self.expr(&built);
        }
        if let (Some(base), None) = (&lit.rest, &lit.qself)
            && (self.mentions_active(base)
                || lit.fields.iter().any(|f| self.mentions_active(&f.expr)))
        {
            // `P { x: e, ..base }` is `base` with its `x` written (`lower/fields.rs`), the field
            // values evaluated first, as Rust evaluates them before the base.
            let values: Vec<Ident> = (0..lit.fields.len())
                .map(|i| quote::format_ident!("__adjoint_field{}", i))
                .collect();
            let exprs = lit.fields.iter().map(|f| &f.expr);
            let members = lit.fields.iter().map(|f| &f.member);
            let updated: Expr = parse_quote!({
                #(let #values = #exprs;)*
                let mut __adjoint_updated = #base;
                #(__adjoint_updated.#members = #values;)*
                __adjoint_updated
            });
            return self.expr(&updated);
        }
        let mut out = lit.clone();
        let mut fields = Vec::new();
        let mut acts = Vec::new();
        for field in &mut out.fields {
            let (value, act) = self.expr(&field.expr);
            field.expr = value;
            let syn::Member::Named(name) = &field.member else {
                return (
                    Expr::Struct(lit.clone()),
                    self.unsupported_struct(lit, "a struct literal with positional fields"),
                );
            };
            fields.push(name.clone());
            acts.push(act);
        }
        let rebuilt = Expr::Struct(out);
        if !acts.iter().any(is_active) {
            let poison = acts.into_iter().find(|a| matches!(a, Act::Poison(..)));
            return (rebuilt, poison.unwrap_or(Act::Inactive));
        }
        if lit.rest.is_some() || lit.qself.is_some() {
            return (
                rebuilt,
                self.unsupported_struct(lit, "a struct literal with `..base`"),
            );
        }
        let witness = quote::format_ident!("__ty{}", self.graph.nodes.len());
        match self.node_over(acts, |parts| NodeKind::Struct {
            witness: witness.clone(),
            fields,
            parts,
        }) {
            Ok(id) if self.is_useful(id) => {
                // The pullback names the literal's type through its value: the path may leave
                // out generic arguments that rustc infers.
                self.hoisted.push(witness.clone());
                let typed = Expr::Verbatim(quote!({
                    let __value = #rebuilt;
                    #witness = ::adjoint::__private::witness(&__value);
                    __value
                }));
                (typed, Act::Active(id))
            }
            Ok(id) => (rebuilt, Act::Active(id)),
            Err(act) => (rebuilt, act),
        }
    }

    fn unsupported_struct(&self, lit: &syn::ExprStruct, what: &str) -> Act {
        let message = format!(
            "{what} built from active values is not supported yet: list every field by name"
        );
        Act::Poison(lit.path.span(), message)
    }

    /// `[a, b, c]` or `vec![a, b, c]` with active elements.
    pub(crate) fn elements(&mut self, elems: Vec<Expr>, vec: bool, original: Expr) -> (Expr, Act) {
        let (exprs, acts): (Vec<Expr>, Vec<Act>) = elems.iter().map(|e| self.expr(e)).unzip();
        let id = match self.node_over(acts, |parts| NodeKind::Elements { parts, vec }) {
            Ok(id) => id,
            Err(act) => return (original, act),
        };
        let expr: Expr = if vec {
            parse_quote!(::std::vec![#(#exprs),*])
        } else {
            parse_quote!([#(#exprs),*])
        };
        (expr, Act::Active(id))
    }
}

pub(crate) fn non_local_write(place: &Expr) -> String {
    format!(
        "writes an active value to `{}`, which is not a local variable of this function: derivatives cannot flow through outside state (statics, captured variables, fields, elements) yet",
        place.to_token_stream()
    )
}

/// The operator of `a op= b` without the assignment.
fn plain_op(op: &BinOp) -> TokenStream {
    match op {
        BinOp::AddAssign(_) => quote!(+),
        BinOp::SubAssign(_) => quote!(-),
        BinOp::MulAssign(_) => quote!(*),
        BinOp::DivAssign(_) => quote!(/),
        BinOp::RemAssign(_) => quote!(%),
        other => other.to_token_stream(),
    }
}

/// Whether the place is reached through a method that lends its receiver by `&mut`
/// (`*v.last_mut().unwrap()`).
fn lent(place: &Expr) -> bool {
    match place {
        Expr::MethodCall(m) => {
            crate::patterns::queries::lends_mut(&m.method.to_string()) || lent(&m.receiver)
        }
        Expr::Unary(u) => lent(&u.expr),
        Expr::Paren(p) => lent(&p.expr),
        Expr::Field(f) => lent(&f.base),
        Expr::Index(i) => lent(&i.expr),
        _ => false,
    }
}

//! Statements, blocks and branches in forward mode (loops: `loops.rs`). The forward pass
//! keeps the shape of the user's code: a loop stays the same loop and a branch the same
//! branch, with the tangent statements next to the value statements. Nothing is stored for
//! later.
//!
//! A variable that is written an active value inside a block, a branch or a loop but declared
//! outside it must have its tangent variable declared outside too: each statement is first
//! transformed on a copy of the state (a dry run) to find the variables it makes active, whose
//! `let mut __t_x = None;` is then written before it. A loop's body is dry-run until no more
//! variables become active, because the first iteration's writes are read by the second.

use super::Forward;
use super::expr::{Fx, binary_rule};
use super::place::place;
use super::scope::{Hold, tangent_ident};
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::{Block, Expr, Pat, Stmt};

impl Forward {
    /// A block's statements and its value.
    pub fn block(&mut self, block: &Block) -> (Vec<TokenStream>, Option<Fx>) {
        self.scopes.push();
        let mut out = Vec::new();
        let mut tail = None;
        let last = block.stmts.len().checked_sub(1);
        for (k, stmt) in block.stmts.iter().enumerate() {
            out.extend(self.declare_promoted(stmt));
            match stmt {
                Stmt::Expr(e, None) if Some(k) == last => tail = Some(self.expr(e)),
                _ => out.push(self.stmt(stmt)),
            }
        }
        self.scopes.pop();
        (out, tail)
    }

    /// `let mut __t_x = None;` for each variable that `stmt` makes active.
    fn declare_promoted(&mut self, stmt: &Stmt) -> Vec<TokenStream> {
        let before = self.scopes.untracked();
        let mut dry = self.dry();
        let _ = dry.stmt(stmt);
        let promoted: Vec<String> = before
            .into_iter()
            .filter(|n| dry.scopes.hold(n).is_some())
            .collect();
        promoted
            .iter()
            .map(|n| {
                self.scopes.track(n);
                let t = tangent_ident(n);
                if self.uninit.contains(n) {
                    return quote!(let mut #t = ::core::option::Option::None;);
                }
                // A zero rather than `None`: the tangent a loop carries is then `Some` on
                // every path, and the optimizer drops the tests of the rules it passes through.
                let x: syn::Ident = syn::parse_str(n).expect("a variable name");
                quote!(let mut #t = ::core::option::Option::Some({ use ::adjoint::Differentiable as _; #x.zero_tangent() });)
            })
            .collect()
    }

    /// A copy of the state whose errors are dropped.
    pub(super) fn dry(&self) -> Forward {
        Forward {
            scopes: self.scopes.clone(),
            errors: crate::diag::Errors::default(),
            uninit: self.uninit.clone(),
        }
    }

    fn stmt(&mut self, stmt: &Stmt) -> TokenStream {
        match stmt {
            Stmt::Local(local) => self.local(local),
            Stmt::Expr(e, semi) => {
                let fx = self.expr(e);
                match (fx, semi) {
                    (Fx::Data(v), Some(s)) => quote!(#v #s),
                    (Fx::Data(v), None) => v,
                    (Fx::Pair(p), _) => quote!(let _ = #p;),
                }
            }
            Stmt::Item(item) => item.to_token_stream(),
            Stmt::Macro(m) => match self.other_macro(&m.mac, m.to_token_stream()) {
                Fx::Data(v) | Fx::Pair(v) => v,
            },
        }
    }

    /// `let pat = init;`.
    fn local(&mut self, local: &syn::Local) -> TokenStream {
        let Some(init) = &local.init else {
            self.bind_pattern(&local.pat, false);
            if let Pat::Ident(i) = &local.pat {
                self.uninit.insert(i.ident.to_string());
            }
            return local.to_token_stream();
        };
        if init.diverge.is_some() {
            if let Some(n) = self.mentions_tracked(init.expr.to_token_stream()) {
                self.error(local.span(), format!("forward mode: `let ... else` on the active value `{n}` is not supported; use `match`"));
            }
            return local.to_token_stream();
        }
        let fx = self.expr(&init.expr);
        let (pat, ty) = match &local.pat {
            Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
            p => (p, None),
        };
        match fx {
            Fx::Data(v) => {
                self.bind_pattern(pat, false);
                let ty = ty.map(|t| quote!(: #t));
                quote!(let #pat #ty = #v;)
            }
            Fx::Pair(p) => {
                let code = self.bind_active(pat, ty, p);
                // `let r = &x;` / `let r = &mut x;`: the tangent is held as a reference too,
                // so that `*r = ..` writes `x`'s tangent.
                if let (Expr::Reference(r), Pat::Ident(i)) = (&*init.expr, pat) {
                    let hold = if r.mutability.is_some() {
                        Hold::Inout
                    } else {
                        Hold::Ref
                    };
                    self.scopes.declare(&i.ident.to_string(), Some(hold));
                }
                code
            }
        }
    }

    /// Declares the names a pattern binds, tracked or not.
    pub(super) fn bind_pattern(&mut self, pat: &Pat, tracked: bool) {
        let hold = tracked.then_some(Hold::Owned);
        match pat {
            Pat::Ident(i) => self.scopes.declare(&i.ident.to_string(), hold),
            Pat::Tuple(t) => t.elems.iter().for_each(|p| self.bind_pattern(p, tracked)),
            Pat::Type(t) => self.bind_pattern(&t.pat, tracked),
            Pat::Reference(r) => self.bind_pattern(&r.pat, tracked),
            Pat::TupleStruct(t) => t.elems.iter().for_each(|p| self.bind_pattern(p, tracked)),
            Pat::Struct(s) => s
                .fields
                .iter()
                .for_each(|f| self.bind_pattern(&f.pat, tracked)),
            Pat::Slice(s) => s.elems.iter().for_each(|p| self.bind_pattern(p, tracked)),
            _ => {}
        }
    }

    /// `let x = active;` or `let (a, b) = active;`.
    fn bind_active(&mut self, pat: &Pat, ty: Option<&syn::Type>, pair: TokenStream) -> TokenStream {
        let ty = ty.map(|t| quote!(: (#t, _)));
        match pat {
            Pat::Ident(i) if i.subpat.is_none() => {
                let t = tangent_ident(&i.ident.to_string());
                self.scopes.declare(&i.ident.to_string(), Some(Hold::Owned));
                quote!(let (#pat, mut #t) #ty = #pair;)
            }
            Pat::Wild(_) => quote!(let _ = #pair;),
            Pat::Tuple(tuple)
                if tuple.elems.iter().all(|p| {
                    matches!(p, Pat::Ident(i) if i.subpat.is_none()) || matches!(p, Pat::Wild(_))
                }) =>
            {
                let n = tuple.elems.len();
                let parts: Vec<syn::Ident> =
                    (0..n).map(|k| quote::format_ident!("__x{}", k)).collect();
                let names: Vec<TokenStream> = tuple
                    .elems
                    .iter()
                    .map(|p| match p {
                        Pat::Ident(i) => {
                            self.scopes.declare(&i.ident.to_string(), Some(Hold::Owned));
                            let t = tangent_ident(&i.ident.to_string());
                            quote!(mut #t)
                        }
                        _ => quote!(_),
                    })
                    .collect();
                let nones = (0..n).map(|_| quote!(::core::option::Option::None));
                quote! {
                    let (#pat, __t) #ty = #pair;
                    let (#(#names,)*) = match __t {
                        ::core::option::Option::Some((#(#parts,)*)) => (#(::core::option::Option::Some(#parts),)*),
                        ::core::option::Option::None => (#(#nones,)*),
                    };
                }
            }
            _ => {
                self.error(
                    pat.span(),
                    "forward mode: bind an active value to a name or a tuple of names".to_string(),
                );
                quote!()
            }
        }
    }

    /// `place = value`.
    pub fn assign(&mut self, a: &syn::ExprAssign) -> Fx {
        let value = self.expr(&a.right);
        let Some(p) = place(&a.left) else {
            if let Expr::Unary(u) = &*a.left {
                return self.deref_assign(u, value);
            }
            if value.is_pair() {
                self.error(
                    a.left.span(),
                    "forward mode: assign an active value to a variable, a field or an element"
                        .to_string(),
                );
            }
            let (l, v) = (&a.left, value.value());
            return Fx::Data(quote!(#l = #v));
        };
        if !value.is_pair() && self.scopes.hold(&p.root).is_none() {
            let (l, v) = (&a.left, value.value());
            return Fx::Data(quote!(#l = #v));
        }
        self.write(&a.left, &p, value.pair())
    }

    /// Writes a pair to a place: the value to the place and the tangent to the same place of
    /// the root's tangent, created (zero, of the value's shape) at the first active write.
    fn write(&mut self, left: &Expr, p: &super::place::Place, pair: TokenStream) -> Fx {
        if self.scopes.hold(&p.root).is_none() {
            self.promote(&p.root);
        }
        let Some(tp) = self.scopes.tangent_place(&p.root) else {
            self.error(
                left.span(),
                format!(
                    "forward mode: `{}` is borrowed immutably and cannot be written",
                    p.root
                ),
            );
            return Fx::Data(quote!());
        };
        if p.is_variable() {
            return Fx::Data(quote!({ let (__v, __t) = #pair; #left = __v; #tp = __t; }));
        }
        let root: syn::Ident = syn::parse_str(&p.root).expect("a variable name");
        let acc = &p.accesses();
        Fx::Data(quote! {{
            let (__v, __t) = #pair;
            match __t {
                ::core::option::Option::Some(__t) => {
                    let __whole = #tp.get_or_insert_with(|| { use ::adjoint::Differentiable as _; #root.zero_tangent() });
                    __whole #acc = __t;
                }
                ::core::option::Option::None => {
                    if let ::core::option::Option::Some(__whole) = #tp.as_mut() {
                        __whole #acc = ::adjoint::TangentVector::zero();
                    }
                }
            }
            #left = __v;
        }})
    }

    /// `*r = value` for an inout parameter.
    fn deref_assign(&mut self, u: &syn::ExprUnary, value: Fx) -> Fx {
        let target = place(&u.expr).filter(|p| p.is_variable());
        match (target, &u.op) {
            (Some(p), syn::UnOp::Deref(_)) if self.scopes.hold(&p.root) == Some(Hold::Inout) => {
                let t = tangent_ident(&p.root);
                let pair = value.pair();
                Fx::Data(quote!({ let (__v, __t) = #pair; #u = __v; *#t = __t; }))
            }
            _ if !value.is_pair() => {
                let v = value.value();
                Fx::Data(quote!(#u = #v))
            }
            _ => {
                self.error(
                    u.span(),
                    "forward mode: write through `*` only to a differentiated `&mut` parameter"
                        .to_string(),
                );
                Fx::Data(quote!())
            }
        }
    }

    /// `place op= value`: the operator's rule, written back to the place.
    pub fn compound(&mut self, b: &syn::ExprBinary) -> Fx {
        let rhs = self.expr(&b.right);
        let target = match &*b.left {
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => None,
            l => place(l),
        };
        let lhs_tracked = target
            .as_ref()
            .is_some_and(|p| self.scopes.hold(&p.root).is_some());
        if !rhs.is_pair() && !lhs_tracked && !matches!(&*b.left, Expr::Unary(_)) {
            let (l, op, r) = (&b.left, &b.op, rhs.value());
            return Fx::Data(quote!(#l #op #r));
        }
        let current = self.expr(&b.left);
        let Some(rule) = binary_rule(&b.op, clone_pair(current), rhs.pair()) else {
            return self.opaque(&Expr::Binary(b.clone()));
        };
        match target {
            Some(p) => self.write(&b.left, &p, rule),
            None => match &*b.left {
                Expr::Unary(u) => self.deref_assign(u, Fx::Pair(rule)),
                _ => self.opaque(&Expr::Binary(b.clone())),
            },
        }
    }

    /// A block used as an expression.
    pub fn block_expr(&mut self, block: &Block) -> Fx {
        let (stmts, tail) = self.block(block);
        match tail {
            Some(Fx::Pair(p)) => Fx::Pair(quote!({ #(#stmts)* #p })),
            Some(Fx::Data(v)) => Fx::Data(quote!({ #(#stmts)* #v })),
            None => Fx::Data(quote!({ #(#stmts)* })),
        }
    }

    pub fn if_expr(&mut self, i: &syn::ExprIf) -> Fx {
        // `if let P = active { a } else { b }` is `match active { P => a, _ => b }`.
        if let Expr::Let(l) = &*i.cond
            && self.mentions_tracked(l.expr.to_token_stream()).is_some()
        {
            let (pat, scrutinee, then) = (&l.pat, &l.expr, &i.then_branch);
            let otherwise = match &i.else_branch {
                Some((_, e)) => quote!(#e),
                None => quote!({}),
            };
            let m: syn::ExprMatch =
                syn::parse_quote!(match #scrutinee { #pat => #then, _ => #otherwise });
            return self.match_expr(&m);
        }
        let cond = self.condition(&i.cond);
        let (then_stmts, then_tail) = self.block(&i.then_branch);
        let else_fx = i.else_branch.as_ref().map(|(_, e)| self.expr(e));
        let any_pair = then_tail.as_ref().is_some_and(Fx::is_pair)
            || else_fx.as_ref().is_some_and(Fx::is_pair);
        let finish = |fx: Option<Fx>| match fx {
            Some(fx) if any_pair => fx.pair(),
            Some(fx) => fx.value(),
            None => quote!(),
        };
        let then_tail = finish(then_tail);
        let else_part = i.else_branch.as_ref().map(|_| {
            let e = finish(else_fx);
            quote!(else { #e })
        });
        let code = quote!(if #cond { #(#then_stmts)* #then_tail } #else_part);
        if any_pair {
            Fx::Pair(code)
        } else {
            Fx::Data(code)
        }
    }

    /// A condition: data, or `let pat = data`.
    pub(super) fn condition(&mut self, cond: &Expr) -> TokenStream {
        match cond {
            Expr::Let(l) => {
                if let Some(n) = self.mentions_tracked(l.expr.to_token_stream()) {
                    self.error(
                        l.span(),
                        format!(
                            "forward mode: `if let` on the active value `{n}` is not supported"
                        ),
                    );
                }
                self.bind_pattern(&l.pat, false);
                cond.to_token_stream()
            }
            c if crate::patterns::iterators::is_guard_chain(c) => c.to_token_stream(),
            c => self.expr(c).value(),
        }
    }

    pub fn match_expr(&mut self, m: &syn::ExprMatch) -> Fx {
        if self.mentions_tracked(m.expr.to_token_stream()).is_some()
            && let Some(rewritten) = crate::patterns::variant_match::as_data_match(m)
        {
            // Arms binding enum payloads: the variant is data, the payloads are read by rules.
            return self.expr(&rewritten);
        }
        if self.mentions_tracked(m.expr.to_token_stream()).is_some()
            && let Some(chain) = crate::patterns::scalar_match::as_if_chain(m)
        {
            // A `match` that only compares or binds an active value: an `if` chain on it.
            return self.expr(&chain);
        }
        let scrutinee = self.expr(&m.expr);
        let active = scrutinee.is_pair();
        let mut arms = Vec::new();
        for arm in &m.arms {
            self.scopes.push();
            self.bind_pattern(&arm.pat, false);
            // On an active `Option`/`Result`, the payload `v` of `Some(v)`/`Ok(v)` has the
            // scrutinee's tangent (the tangent of `Option<T>` is `T`'s).
            let payload = if active { self.payload(&arm.pat) } else { None };
            let take = payload.map(|name| {
                self.scopes.declare(&name, Some(Hold::Owned));
                let t = tangent_ident(&name);
                quote!(let mut #t = __ts;)
            });
            let guard = arm.guard.as_ref().map(|(_, g)| {
                let g = self.expr(g).value();
                quote!(if #g)
            });
            let body = self.expr(&arm.body);
            self.scopes.pop();
            arms.push((&arm.pat, guard, take, body));
        }
        let any_pair = arms.iter().any(|(_, _, _, b)| b.is_pair());
        let arms = arms.into_iter().map(|(pat, guard, take, body)| {
            let body = if any_pair { body.pair() } else { body.value() };
            quote!(#pat #guard => { #take #body },)
        });
        let code = if active {
            let pair = scrutinee.pair();
            quote!({ let (__s, __ts) = #pair; match __s { #(#arms)* } })
        } else {
            let scrutinee = scrutinee.value();
            quote!(match #scrutinee { #(#arms)* })
        };
        if any_pair {
            Fx::Pair(code)
        } else {
            Fx::Data(code)
        }
    }

    /// The name bound by `Some(v)` / `Ok(v)` in an arm over an active `Option`/`Result`;
    /// `None`, `Err(..)` and `_` bind no active value; any other pattern is an error.
    fn payload(&mut self, pat: &Pat) -> Option<String> {
        let variant = |path: &syn::Path| path.segments.last().map(|s| s.ident.to_string());
        match pat {
            Pat::TupleStruct(t) if matches!(variant(&t.path).as_deref(), Some("Some" | "Ok")) => {
                match t.elems.iter().collect::<Vec<_>>().as_slice() {
                    [Pat::Ident(i)] if i.subpat.is_none() => Some(i.ident.to_string()),
                    [Pat::Wild(_)] => None,
                    _ => {
                        self.error(
                            pat.span(),
                            "forward mode: bind the payload of an active `Some`/`Ok` to a name"
                                .to_string(),
                        );
                        None
                    }
                }
            }
            Pat::TupleStruct(t) if variant(&t.path).as_deref() == Some("Err") => None,
            Pat::Ident(i) if i.ident == "None" => None,
            Pat::Path(p) if variant(&p.path).as_deref() == Some("None") => None,
            Pat::Wild(_) => None,
            _ => {
                self.error(pat.span(), "forward mode: on an active value, match only `Some(v)`, `Ok(v)`, `None`, `Err(..)` or `_`; match on data otherwise".to_string());
                None
            }
        }
    }

    pub fn return_expr(&mut self, r: &syn::ExprReturn) -> Fx {
        let value = match &r.expr {
            Some(e) => self.expr(e).pair(),
            None => quote!(((), ::core::option::Option::None)),
        };
        Fx::Data(quote!(return #value))
    }
}

/// A place's current value for a compound assignment, cloned so that the place can be
/// written again.
fn clone_pair(current: Fx) -> TokenStream {
    match current {
        Fx::Data(v) => quote!((::core::clone::Clone::clone(&#v), ::core::option::Option::None)),
        Fx::Pair(p) => p,
    }
}

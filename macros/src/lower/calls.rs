//! Calls: method calls, function calls and `as` casts of active values.

use crate::emit::names;
use crate::ir::graph::is_inactive;
use crate::ir::graph::{Act, NodeKind};
use crate::lower::Lowering;
use crate::parse::signature::obviously_non_differentiable;
use crate::patterns::bindings::local_name;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident, parse_quote};

impl Lowering<'_> {
    /// Call arguments; `&mut v` with a local `v` (or `r`, `&mut *r` with `r` a reference the
    /// lowering follows) that is active, or data in a call with an active argument (which
    /// may write an active value into it) unless it holds integers by its declared type or
    /// initialiser (`integer_locals`), is an inout argument: its slot carries `v`'s value
    /// before the call, and the call rebinds `v`.
    fn call_args(
        &mut self,
        args: &syn::punctuated::Punctuated<Expr, syn::Token![,]>,
        receiver: Option<&Expr>,
    ) -> (Vec<Expr>, Vec<Act>, Vec<crate::lower::Inout>) {
        let mut inout = Vec::new();
        let offset = usize::from(receiver.is_some());
        let any_active = receiver
            .into_iter()
            .chain(args)
            .any(|a| self.mentions_active(a));
        let (exprs, acts) = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                if let Some((name, place)) = self.mut_place(a)
                    && let Some(act) = self.lookup(&name).cloned()
                    && (matches!(act, Act::Active(_))
                        || (any_active
                            && is_inactive(&act)
                            && !self.integer_locals.contains(&name)))
                {
                    // The uniform companion takes the value and returns the new one.
                    let value = parse_quote!(::core::clone::Clone::clone(&#place));
                    inout.push((i + offset, name, place));
                    return (value, act);
                }
                self.expr(a)
            })
            .unzip();
        (exprs, acts, inout)
    }

    /// `std::mem::swap(&mut a, &mut b)`, `replace(&mut a, v)` and `take(&mut a)` (by the
    /// paths `std::mem::`, `core::mem::` and `mem::`) on locals the lowering follows: they
    /// move activities between the locals, and the call stays as written. `swap` exchanges
    /// the activities of `a` and `b`; `replace` returns `a`'s and gives `a` that of `v`;
    /// `take` returns `a`'s and leaves `a` data (its default value).
    fn mem_call(&mut self, c: &syn::ExprCall) -> Option<(Expr, Act)> {
        if let Some(writes) = crate::patterns::mem::on_parts(c) {
            // On fields and elements: the reads and writes the call makes.
            return Some(self.expr(&writes));
        }
        let function = crate::patterns::mem::mem_function(c)?;
        let (a, _) = self.mut_place(c.args.first()?)?;
        let old = self.act_of(&a);
        match (function.as_str(), c.args.len()) {
            ("swap", 2) => {
                let (b, _) = self.mut_place(&c.args[1])?;
                let other = self.act_of(&b);
                self.assign(&a, other);
                self.assign(&b, old);
                Some((Expr::Call(c.clone()), Act::Inactive))
            }
            ("replace", 2) => {
                let (value, act) = self.expr(&c.args[1]);
                self.assign(&a, act);
                let mut out = c.clone();
                out.args[1] = value;
                Some((Expr::Call(out), old))
            }
            ("take", 1) => {
                self.assign(&a, Act::Inactive);
                Some((Expr::Call(c.clone()), old))
            }
            _ => None,
        }
    }

    pub(crate) fn args(
        &mut self,
        args: &syn::punctuated::Punctuated<Expr, syn::Token![,]>,
    ) -> (Vec<Expr>, Vec<Act>) {
        args.iter().map(|a| self.expr(a)).unzip()
    }

    /// `v.push(x)` and `v.truncate(n)` on a local (`truncate` when `v` is active): rules that
    /// make a new version of `v`.
    fn resize(&mut self, m: &syn::ExprMethodCall) -> Option<(Expr, Act)> {
        let name = local_name(&m.receiver)?;
        match (m.method.to_string().as_str(), m.args.len()) {
            ("push", 1) => Some(self.resized(m, name)),
            ("truncate", 1) if self.mentions_active(&m.receiver) => Some(self.resized(m, name)),
            _ => None,
        }
    }

    pub(crate) fn method_call(&mut self, m: &syn::ExprMethodCall) -> (Expr, Act) {
        let statement = std::mem::take(&mut self.statement_call);
        if let Some(resized) = self.resize(m) {
            return resized;
        }
        if local_name(&m.receiver).is_some()
            && self.mentions_active(&Expr::MethodCall(m.clone()))
            && let Some(writes) = crate::patterns::reorders::reordered(m)
        {
            // `v.swap(i, j)`, `v.reverse()`, `v.fill(x)`, `v.sort_by(..)` on an active local:
            // the element writes they make.
            return self.expr(&writes);
        }
        if let Some(message) = crate::patterns::iterators::unsupported_adapter(m)
            && self.mentions_active(&m.receiver)
        {
            self.report(m.method.span(), message);
            return (Expr::MethodCall(m.clone()), Act::Inactive);
        }
        if let Some(the_loop) = crate::patterns::iterators::reduction(m)
            && self.mentions_active(&m.receiver)
        {
            // `xs.iter().map(..).sum()` and the like over an active collection: a loop.
            return self.expr(&the_loop);
        }
        if crate::patterns::queries::lends_mut(&m.method.to_string())
            && self.root_of(&m.receiver).is_some_and(|a| !is_inactive(&a))
        {
            self.report(
                m.method.span(),
                format!(
                    "`.{}(..)` lends part of an active value by `&mut`, which #[differentiable] does not follow, so writes through it would lose their derivative: write the elements by index (`v[i] = ..`), or loop `for x in v.iter_mut()` / `for x in &mut v` naming the element `*x`, `x.field`, `x[i]`",
                    m.method
                ),
            );
        }
        if statement && let Some(lowered) = self.mutating_call(m) {
            return lowered;
        }
        let (receiver, ra) = self.expr(&m.receiver);
        let (args, acts, inout) = self.call_args(&m.args, Some(&m.receiver));
        let operands: Vec<Act> = std::iter::once(ra.clone()).chain(acts.clone()).collect();
        self.closures_called(&m.args, &operands, m.method.span());
        let mut out = m.clone();
        out.receiver = Box::new(receiver.clone());
        out.args = args.iter().cloned().collect();
        let rebuilt = Expr::MethodCall(out);
        if crate::patterns::queries::is_query(&m.method.to_string()) {
            // Sizes and predicates are data, whatever they are asked of.
            return (rebuilt, Act::Inactive);
        }
        if m.method == "clone" && m.args.is_empty() {
            return (rebuilt, ra);
        }
        if let Some(cached) = crate::lower::cache::given_method(&m.method) {
            return self.recorded_call(m, &cached, (&receiver, ra), &args, inout);
        }
        let method = names::full_method(&m.method);
        let turbofish = &m.turbofish;
        let mut slots = vec![ra];
        slots.extend(acts);
        let spans = std::iter::once(m.receiver.span())
            .chain(m.args.iter().map(Spanned::span))
            .collect();
        let call = |n: Vec<TokenStream>| quote_spanned!(m.method.span()=> #receiver.#method #turbofish(#(#args,)* [#(#n),*]));
        self.rule_with_inout(slots, spans, m.method.span(), rebuilt, call, inout)
    }

    /// `x.m__given(value)` in a recomputed loop's forward pass (`cache.rs`): a call recorded
    /// by an earlier pass, whose value is the recorded one (`args[0]`); its rule is the
    /// method's from that value where the receiver's type has one, else the method's own rule
    /// (method lookup picks: `core/src/rules/sites.rs`).
    fn recorded_call(
        &mut self,
        m: &syn::ExprMethodCall,
        cached: &str,
        (receiver, ra): (&Expr, Act),
        args: &[Expr],
        inout: Vec<crate::lower::Inout>,
    ) -> (Expr, Act) {
        let value = &args[0];
        let span = m.method.span();
        let marker = Ident::new(cached, span);
        let plain = names::full_method(&marker);
        let slots = vec![ra, Act::Inactive];
        let spans = vec![m.receiver.span(), span];
        let call = |n: Vec<TokenStream>| {
            let own = &n[0];
            quote_spanned!(span=> {
                #[allow(unused_imports)]
                use ::adjoint::__private::SitePlain as _;
                ::adjoint::__private::site::<::adjoint::__private::recorded::#marker, _, _, _>(
                    #receiver,
                    |__receiver| ::adjoint::__private::with_value_slot(__receiver.#plain([#own])),
                )
                .rule(#value, [#(#n),*])
            })
        };
        self.rule_with_inout(slots, spans, span, value.clone(), call, inout)
    }

    /// `recv.m(args);`, a method called for its effect on the local `recv` (active, or given
    /// active arguments), as a `&mut self` method: `recv` is its inout slot 0, the companion
    /// `m_vjp_full` takes a clone of it by value and returns the new value, which the call
    /// rebinds (`m_vjp_mut`: a method that is none has no such companion, and its fallback
    /// says so). `None` for the methods that only read (`queries::called_for_effect`).
    fn mutating_call(&mut self, m: &syn::ExprMethodCall) -> Option<(Expr, Act)> {
        let name = local_name(&m.receiver)?.clone();
        if !crate::patterns::queries::called_for_effect(&m.method)
            || !self.mentions_active(&Expr::MethodCall(m.clone()))
        {
            return None;
        }
        let current = self.lookup(&name.to_string())?.clone();
        // A `&mut self` method needs a `mut` binding; one called on a binding that is not
        // `mut` (`cell.set(x)`) changes nothing the lowering could follow.
        if is_inactive(&current) && !self.mutable.contains(&name.to_string()) {
            return None;
        }
        let place = self.place_of(&name);
        let (args, acts, mut inout) = self.call_args(&m.args, Some(&m.receiver));
        inout.insert(0, (0, name.to_string(), place.clone()));
        let slots: Vec<Act> = std::iter::once(current).chain(acts).collect();
        let spans = std::iter::once(m.receiver.span())
            .chain(m.args.iter().map(Spanned::span))
            .collect();
        let companion = names::mut_method(&m.method);
        let turbofish = &m.turbofish;
        let call = |n: Vec<TokenStream>| quote_spanned!(m.method.span()=> ::core::clone::Clone::clone(&#place).#companion #turbofish(#(#args,)* [#(#n),*]));
        let (expr, _) = self.rule_with_inout(
            slots,
            spans,
            m.method.span(),
            Expr::MethodCall(m.clone()),
            call,
            inout,
        );
        Some((expr, Act::Inactive))
    }

    /// `Name(args)` or `Enum::Variant(args)`: a tuple struct built from its parts
    /// (`#[derive(Differentiable)]` gives its tangent `Component<I>`); an enum variant built from
    /// active values is an error where it reaches the result.
    fn constructor(&mut self, path: &syn::ExprPath, rebuilt: Expr, acts: Vec<Act>) -> (Expr, Act) {
        if acts.iter().all(crate::ir::graph::is_inactive) {
            return (rebuilt, Act::Inactive);
        }
        let segments = &path.path.segments;
        let last = &segments.last().expect("a path has a segment").ident;
        let variant = segments.len() >= 2
            && segments[segments.len() - 2]
                .ident
                .to_string()
                .starts_with(|ch: char| ch.is_ascii_uppercase());
        if !variant {
            return match self.node_over(acts, |parts| NodeKind::TupleStruct { parts }) {
                Ok(id) => (rebuilt, Act::Active(id)),
                Err(act) => (rebuilt, act),
            };
        }
        let message = format!(
            "constructing `{last}(..)` from active values needs `#[derive(Differentiable)]` on its enum"
        );
        (rebuilt, Act::Poison(last.span(), message))
    }

    pub(crate) fn call(&mut self, c: &syn::ExprCall) -> (Expr, Act) {
        if self.mentions_active(&Expr::Call(c.clone()))
            && let Some(built) = crate::patterns::variant_match::constructor(c)
        {
            // `Enum::V(args)` of active values: the enum's hidden constructor rule.
            return self.expr(&built);
        }
        if let Some(lowered) = self.mem_call(c) {
            return lowered;
        }
        let (args, acts, inout) = self.call_args(&c.args, None);
        let mut operands = acts.clone();
        if let Some(callee) = local_name(&c.func) {
            operands.push(self.act_of(&callee.to_string()));
        }
        let passed = std::iter::once(&*c.func).chain(&c.args);
        self.closures_called(passed, &operands, c.func.span());
        let mut out = c.clone();
        out.args = args.iter().cloned().collect();
        let rebuilt = Expr::Call(out);
        if let Some(local) = local_name(&c.func).and_then(|n| self.lookup(&n.to_string()).cloned())
        {
            let callee = match local {
                Act::Inactive => acts,
                other => vec![other],
            };
            return self.unsupported_call(
                rebuilt,
                callee,
                c.func.span(),
                "calling a closure the macro cannot inline (it inlines a closure bound by `let` and only called, whose captured variables are assigned nowhere in the function and not bound again after it, with no `return` or `?`) or a function value",
            );
        }
        let Expr::Path(path) = &*c.func else {
            return self.unsupported_call(
                rebuilt,
                acts,
                c.func.span(),
                "calling a closure or a function value",
            );
        };
        let last = &path
            .path
            .segments
            .last()
            .expect("a path has a segment")
            .ident;
        if crate::patterns::variant_match::is_data_call(&path.path) {
            return (rebuilt, Act::Inactive);
        }
        if (last == "Some" || last == "Ok") && acts.len() == 1 {
            // The tangent of `Some(x)`/`Ok(x)` is the tangent of `x`.
            return (rebuilt, acts.into_iter().next().expect("one argument"));
        }
        if last
            .to_string()
            .starts_with(|ch: char| ch.is_ascii_uppercase())
        {
            return self.constructor(path, rebuilt, acts);
        }
        let companion = names::companion_call(path);
        self.rule_with_inout(
            acts,
            c.args.iter().map(Spanned::span).collect(),
            last.span(),
            rebuilt,
            |n| quote_spanned!(last.span()=> #companion(#(#args,)* [#(#n),*])),
            inout,
        )
    }

    pub(crate) fn unsupported_call(
        &mut self,
        rebuilt: Expr,
        acts: Vec<Act>,
        span: Span,
        what: &str,
    ) -> (Expr, Act) {
        if acts.iter().all(is_inactive) {
            return (rebuilt, Act::Inactive);
        }
        let message = format!(
            "{what} with active arguments is not differentiable yet: call a #[differentiable] function instead"
        );
        (rebuilt, Act::Poison(span, message))
    }

    pub(crate) fn cast(&mut self, c: &syn::ExprCast) -> (Expr, Act) {
        let (inner, act) = self.expr(&c.expr);
        let mut out = c.clone();
        out.expr = Box::new(inner.clone());
        let rebuilt = Expr::Cast(out);
        let ty = &c.ty;
        let Act::Active(_) = act else {
            return (rebuilt, act);
        };
        let source = c.expr.to_token_stream();
        let target = ty.to_token_stream();
        if is_float_type(ty) {
            self.rule(
                vec![act],
                vec![c.expr.span()],
                c.span(),
                rebuilt,
                |n| quote!(::adjoint::__private::CastRule::<#ty>::cast_vjp(#inner, [#(#n),*])),
            )
        } else if obviously_non_differentiable(ty) {
            let message = format!(
                "`{source} as {target}` truncates an active value to an integer, which has no derivative; write `without_derivative({source}) as {target}` if a zero derivative is intended"
            );
            (rebuilt, Act::Poison(c.span(), message))
        } else {
            (
                rebuilt,
                Act::Poison(
                    c.span(),
                    format!("casting an active value to `{target}` is not differentiable"),
                ),
            )
        }
    }
}

pub(crate) fn is_float_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.path.is_ident("f32") || p.path.is_ident("f64"))
}

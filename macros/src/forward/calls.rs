//! Calls in forward mode: methods (`x.sin()` → `x.sin_jvp_full((tx,))`), functions
//! (`g(a)` → `<g_vjp>::__jvp(a, (ta,))`), and the calls it follows itself: `clone`, `push`,
//! `Some`/`Ok`, `mem::{swap, replace, take}`, and methods whose result is data.

use super::Forward;
use super::expr::Fx;
use super::place::place;
use crate::emit::names;
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;
use syn::{Expr, ExprCall, ExprMethodCall};

impl Forward {
    /// Arguments bound to `__aK` (values) and `__taK` (tangents), in order.
    pub(super) fn bind_args<'a>(
        &mut self,
        args: impl Iterator<Item = &'a Expr>,
    ) -> (Vec<TokenStream>, Vec<TokenStream>, bool) {
        let mut binds = Vec::new();
        let mut slots = Vec::new();
        let mut active = false;
        for (k, arg) in args.enumerate() {
            let (a, ta) = (format_ident!("__a{}", k), format_ident!("__ta{}", k));
            // `&rvalue`: the value lives in the call's block, borrowed with its tangent.
            if let Expr::Reference(r) = arg
                && r.mutability.is_none()
                && place(&r.expr).is_none()
            {
                let fx = self.expr(&r.expr);
                let (v, tv) = (format_ident!("__v{}", k), format_ident!("__tv{}", k));
                binds.push(match fx {
                    Fx::Pair(pair) => {
                        active = true;
                        quote!(let (#v, #tv) = #pair; let (#a, #ta) = (&#v, #tv.as_ref());)
                    }
                    Fx::Data(value) => {
                        quote!(let (#a, #ta) = (&#value, ::core::option::Option::None);)
                    }
                });
                slots.push(quote!(#a));
                continue;
            }
            let fx = self.expr(arg);
            active |= fx.is_pair();
            let pair = fx.pair();
            binds.push(quote!(let (#a, #ta) = #pair;));
            slots.push(quote!(#a));
        }
        (binds, slots, active)
    }

    pub(super) fn method_call(&mut self, m: &ExprMethodCall) -> Fx {
        let name = m.method.to_string();
        if crate::patterns::bindings::local_name(&m.receiver).is_some()
            && self.mentions_tracked(m.to_token_stream()).is_some()
            && let Some(writes) = crate::patterns::reorders::reordered(m)
        {
            // `v.swap(i, j)`, `v.reverse()`, `v.fill(x)`, `v.sort_by(..)`: element writes.
            return self.expr(&writes);
        }
        if let Some(message) = crate::patterns::iterators::unsupported_adapter(m)
            && self
                .mentions_tracked(m.receiver.to_token_stream())
                .is_some()
        {
            self.error(m.method.span(), message);
            return Fx::Data(m.to_token_stream());
        }
        if let Some(the_loop) = crate::patterns::iterators::reduction(m)
            && self
                .mentions_tracked(m.receiver.to_token_stream())
                .is_some()
        {
            // `xs.iter().map(..).sum()` and the like over an active collection: a loop.
            return self.expr(&the_loop);
        }
        if crate::patterns::queries::is_query(&name) {
            let recv = self.receiver_value(&m.receiver);
            let args: Vec<TokenStream> = m.args.iter().map(|a| self.expr(a).value()).collect();
            let (method, turbofish) = (&m.method, &m.turbofish);
            return Fx::Data(quote!(#recv.#method #turbofish (#(#args),*)));
        }
        if name == "clone" && m.args.is_empty() {
            return self.clone_call(m);
        }
        if name == "push"
            && m.args.len() == 1
            && let Some(fx) = self.push_call(m)
        {
            return fx;
        }
        if name == "truncate"
            && m.args.len() == 1
            && let Some(fx) = self.truncate_call(m)
        {
            return fx;
        }
        let (recv_bind, recv, recv_tangent, recv_active) = self.receiver(&m.receiver);
        let (binds, values, args_active) = self.bind_args(m.args.iter());
        if !recv_active && !args_active {
            let args: Vec<TokenStream> = m.args.iter().map(|a| a.to_token_stream()).collect();
            let (method, turbofish) = (&m.method, &m.turbofish);
            return Fx::Data(quote!({ #recv_bind #recv.#method #turbofish (#(#args),*) }));
        }
        let tangents = (0..values.len()).map(|k| format_ident!("__ta{}", k));
        let rule = names::forward_method(&m.method);
        let turbofish = &m.turbofish;
        Fx::Pair(quote! {{
            #recv_bind
            #(#binds)*
            #recv.#rule #turbofish (#(#values,)* (#recv_tangent, #(#tangents,)*))
        }})
    }

    /// The receiver of a method call: a binding for an rvalue, the receiver expression, its
    /// tangent by reference, and whether it is active.
    fn receiver(&mut self, recv: &Expr) -> (TokenStream, TokenStream, TokenStream, bool) {
        if let Some(p) = place(recv)
            && self
                .mentions_tracked(p.mentions().parse().unwrap_or_default())
                .is_none()
        {
            return match self.scopes.tangent_ref(&p.root) {
                Some(base) => (
                    TokenStream::new(),
                    recv.to_token_stream(),
                    p.tangent_ref(base),
                    true,
                ),
                None => (
                    TokenStream::new(),
                    recv.to_token_stream(),
                    quote!(::core::option::Option::None),
                    false,
                ),
            };
        }
        match self.expr(recv) {
            Fx::Pair(p) => (
                quote!(let (__r, __tr) = #p;),
                quote!(__r),
                quote!(__tr.as_ref()),
                true,
            ),
            Fx::Data(v) => (
                quote!(let __r = #v;),
                quote!(__r),
                quote!(::core::option::Option::None),
                false,
            ),
        }
    }

    /// The receiver's value, for a method whose result is data.
    fn receiver_value(&mut self, recv: &Expr) -> TokenStream {
        if place(recv).is_some() {
            return recv.to_token_stream();
        }
        self.expr(recv).value()
    }

    /// `v.push(x)` on a variable: the tangent (zeros of `v`'s length, at the first active
    /// element) gets `x`'s tangent, or a zero of `x`'s shape.
    fn push_call(&mut self, m: &ExprMethodCall) -> Option<Fx> {
        let target = place(&m.receiver).filter(|p| p.is_variable())?;
        let pair = self.expr(&m.args[0]);
        if !pair.is_pair() && self.scopes.hold(&target.root).is_none() {
            return None;
        }
        if self.scopes.hold(&target.root).is_none() {
            self.promote(&target.root);
        }
        let tv = self.scopes.tangent_place(&target.root)?;
        let v = &m.receiver;
        let pair = pair.pair();
        Some(Fx::Data(quote!({
            let (__v, __t) = #pair;
            if __t.is_some() || #tv.is_some() {
                let __whole = #tv.get_or_insert_with(|| { use ::adjoint::Differentiable as _; #v.zero_tangent() });
                __whole.push(::adjoint::__private::tangent_or_zero(&__v, __t));
            }
            #v.push(__v);
        })))
    }

    /// `v.truncate(n)` on a tracked variable: its tangent is truncated with it.
    fn truncate_call(&mut self, m: &ExprMethodCall) -> Option<Fx> {
        let target = place(&m.receiver).filter(|p| p.is_variable())?;
        self.scopes.hold(&target.root)?;
        let tv = self.scopes.tangent_place(&target.root)?;
        let (v, len) = (&m.receiver, self.expr(&m.args[0]).value());
        Some(Fx::Data(quote!({
            let __n = #len;
            #v.truncate(__n);
            if let ::core::option::Option::Some(__t) = #tv.as_mut() {
                __t.truncate(__n);
            }
        })))
    }

    /// `x.clone()`: the tangent is cloned with it.
    fn clone_call(&mut self, m: &ExprMethodCall) -> Fx {
        if let Some(p) = place(&m.receiver) {
            return match self.scopes.tangent_ref(&p.root) {
                Some(base) => {
                    let t = p.tangent_clone(base);
                    Fx::Pair(quote!((#m, #t)))
                }
                None => Fx::Data(m.to_token_stream()),
            };
        }
        match self.expr(&m.receiver) {
            Fx::Pair(p) => Fx::Pair(
                quote!({ let (__r, __tr) = #p; (::core::clone::Clone::clone(&__r), __tr) }),
            ),
            Fx::Data(v) => Fx::Data(quote!(::core::clone::Clone::clone(&#v))),
        }
    }

    pub(super) fn call(&mut self, c: &ExprCall) -> Fx {
        if self.mentions_tracked(c.to_token_stream()).is_some()
            && let Some(built) = crate::patterns::variant_match::constructor(c)
        {
            // `Enum::V(args)` of active values: the enum's hidden constructor rule.
            return self.expr(&built);
        }
        let Expr::Path(callee) = &*c.func else {
            return self.opaque(&Expr::Call(c.clone()));
        };
        let last = callee.path.segments.last().map(|s| s.ident.to_string());
        if crate::patterns::variant_match::is_data_call(&callee.path) {
            let args: Vec<TokenStream> = c.args.iter().map(|a| self.expr(a).value()).collect();
            return Fx::Data(quote!(#callee(#(#args),*)));
        }
        // `Some(x)`, `Ok(x)`: the tangent of `Option<T>` / `Result<T, E>` is `T`'s.
        if matches!(last.as_deref(), Some("Some" | "Ok")) && c.args.len() == 1 {
            return match self.expr(&c.args[0]) {
                Fx::Pair(p) => Fx::Pair(quote!({ let (__a, __ta) = #p; (#callee(__a), __ta) })),
                Fx::Data(_) => Fx::Data(c.to_token_stream()),
            };
        }
        if let Some(fx) = self.mem_call(c) {
            return fx;
        }
        let (binds, values, active) = self.bind_args(c.args.iter());
        if !active {
            return Fx::Data(c.to_token_stream());
        }
        let rule = forward_call(callee);
        let tangents = (0..values.len()).map(|k| format_ident!("__ta{}", k));
        // Associated functions of floats take their first argument as a method receiver.
        let owner_is_float = callee.path.segments.len() == 2
            && matches!(
                callee.path.segments[0].ident.to_string().as_str(),
                "f32" | "f64"
            );
        let tangents: Vec<TokenStream> = tangents
            .enumerate()
            .map(|(k, t)| {
                if k == 0 && owner_is_float {
                    quote!(#t.as_ref())
                } else {
                    quote!(#t)
                }
            })
            .collect();
        Fx::Pair(quote! {{
            #(#binds)*
            #rule(#(#values,)* (#(#tangents,)*))
        }})
    }

    /// `mem::swap`, `mem::replace` and `mem::take` on variables: the same call on their
    /// tangents (`take` leaves the zero tangent, `None`, with the default value).
    fn mem_call(&mut self, c: &ExprCall) -> Option<Fx> {
        if let Some(writes) = crate::patterns::mem::on_parts(c) {
            // On fields and elements: the reads and writes the call makes.
            return Some(self.expr(&writes));
        }
        let last = crate::patterns::mem::mem_function(c)?;
        let last = Some(last.as_str());
        let mut args = c.args.iter();
        let target = match args.next()? {
            Expr::Reference(r) if r.mutability.is_some() => {
                place(&r.expr).filter(|p| p.is_variable())
            }
            _ => None,
        };
        // Other forms (through a reference, into a field) are not seen: rejected when active.
        let Some(target) = target else {
            return Some(self.opaque(&Expr::Call(c.clone())));
        };
        let rest: Vec<&Expr> = args.collect();
        let tracked = self.scopes.hold(&target.root).is_some()
            || rest
                .iter()
                .any(|e| self.mentions_tracked(e.to_token_stream()).is_some());
        if !tracked {
            return Some(Fx::Data(c.to_token_stream()));
        }
        if self.scopes.hold(&target.root).is_none() {
            self.promote(&target.root);
        }
        let (a, ta) = (
            syn::parse_str::<syn::Ident>(&target.root).ok()?,
            self.scopes.tangent_place(&target.root)?,
        );
        Some(match (last, rest.as_slice()) {
            (Some("swap"), [Expr::Reference(r)]) => {
                let Some(other) =
                    place(&r.expr).filter(|p| p.is_variable() && r.mutability.is_some())
                else {
                    return Some(self.opaque(&Expr::Call(c.clone())));
                };
                if self.scopes.hold(&other.root).is_none() {
                    self.promote(&other.root);
                }
                let b = syn::parse_str::<syn::Ident>(&other.root).ok()?;
                let tb = self.scopes.tangent_place(&other.root)?;
                Fx::Data(
                    quote!({ ::core::mem::swap(&mut #a, &mut #b); ::core::mem::swap(&mut #ta, &mut #tb); }),
                )
            }
            (Some("replace"), [value]) => {
                let pair = self.expr(value).pair();
                Fx::Pair(quote!({
                    let (__v, __t) = #pair;
                    (::core::mem::replace(&mut #a, __v), ::core::mem::replace(&mut #ta, __t))
                }))
            }
            (Some("take"), []) => {
                Fx::Pair(quote!((::core::mem::take(&mut #a), ::core::mem::take(&mut #ta))))
            }
            _ => return None,
        })
    }
}

/// The forward companion a call goes through: `<m::g_vjp>::__jvp` for a free function,
/// `Type::g_jvp_full` for an associated one.
fn forward_call(callee: &syn::ExprPath) -> TokenStream {
    let full = names::companion_call(callee).to_token_stream().to_string();
    // The reverse companion's path with its last segment renamed: `__full` → `__jvp`,
    // `g_vjp_full` → `g_jvp_full`.
    let renamed = if full.contains("__full") {
        full.replace("__full", "__jvp")
    } else {
        full.replace("_vjp_full", "_jvp_full")
    };
    let tokens: TokenStream = renamed.parse().expect("a renamed path parses");
    respan(tokens, callee.span())
}

/// `tokens` with every span set to `span` (the callee's, so that a missing rule is reported at
/// the call).
fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            if let proc_macro2::TokenTree::Group(g) = &t {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                t = proc_macro2::TokenTree::Group(group);
            }
            t.set_span(span);
            t
        })
        .collect()
}

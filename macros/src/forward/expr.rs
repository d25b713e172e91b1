//! Expressions in forward mode: each one becomes either plain data (emitted as written, or
//! with its operands' values) or a *pair*, code that evaluates to `(value, Option<tangent>)`.
//! An active operation calls its forward rule with the operands' values and one tangent slot
//! per operand (`None` for data): `MulJvp::mul_jvp(a, b, (ta, tb))`, `x.sin_jvp_full((tx,))`,
//! `<g_vjp>::__jvp(a, (ta,))` (FORWARD conventions in `core/src/rules/forward.rs`).

use super::Forward;
use super::place::place;
use crate::emit::names;
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, ExprCall, ExprMethodCall, UnOp};

/// A forward-mode expression.
pub enum Fx {
    /// Carries no tangent: the code computes the value.
    Data(TokenStream),
    /// The code computes `(value, Option<tangent>)`.
    Pair(TokenStream),
}

impl Fx {
    /// The code as a pair (`(value, None)` for data).
    pub fn pair(self) -> TokenStream {
        match self {
            Fx::Data(v) => quote!((#v, ::core::option::Option::None)),
            Fx::Pair(p) => p,
        }
    }

    /// The code computing only the value.
    pub fn value(self) -> TokenStream {
        match self {
            Fx::Data(v) => v,
            Fx::Pair(p) => quote!((#p).0),
        }
    }

    pub fn is_pair(&self) -> bool {
        matches!(self, Fx::Pair(_))
    }
}

/// Methods whose result carries no derivative (sizes, tests, comparisons).
const DATA_METHODS: &[&str] = &[
    "len",
    "is_empty",
    "is_nan",
    "is_finite",
    "is_infinite",
    "is_sign_positive",
    "is_sign_negative",
    "is_normal",
    "partial_cmp",
    "total_cmp",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "shape",
    "dims",
    "ndim",
    "rank",
    "numel",
    "dtype",
    "device",
];

/// The operator traits of the forward rules.
fn operator_rule(op: &BinOp) -> Option<(&'static str, &'static str)> {
    Some(match op {
        BinOp::Add(_) | BinOp::AddAssign(_) => ("AddJvp", "add_jvp"),
        BinOp::Sub(_) | BinOp::SubAssign(_) => ("SubJvp", "sub_jvp"),
        BinOp::Mul(_) | BinOp::MulAssign(_) => ("MulJvp", "mul_jvp"),
        BinOp::Div(_) | BinOp::DivAssign(_) => ("DivJvp", "div_jvp"),
        BinOp::Rem(_) | BinOp::RemAssign(_) => ("RemJvp", "rem_jvp"),
        _ => return None,
    })
}

/// Whether `op` is a compound assignment (`+=` ...).
pub fn is_compound(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
    )
}

/// `Trait::method(lhs, rhs, (tl, tr))` for a binary operator, from two pairs.
pub fn binary_rule(op: &BinOp, lhs: TokenStream, rhs: TokenStream) -> Option<TokenStream> {
    let (tr, method) = operator_rule(op)?;
    let tr = format_ident!("{}", tr);
    let method = format_ident!("{}", method);
    Some(quote_spanned! {op.span()=> {
        let (__a, __ta) = #lhs;
        let (__b, __tb) = #rhs;
        ::adjoint::__private::#tr::#method(__a, __b, (__ta, __tb))
    }})
}

impl Forward {
    /// The forward form of an expression.
    pub fn expr(&mut self, e: &Expr) -> Fx {
        match e {
            Expr::Lit(_) | Expr::Range(_) => Fx::Data(e.to_token_stream()),
            Expr::Paren(p) => match self.expr(&p.expr) {
                Fx::Data(v) => Fx::Data(quote!((#v))),
                pair => pair,
            },
            Expr::Path(_) | Expr::Field(_) | Expr::Index(_) => self.place_read(e),
            Expr::Reference(r) => self.reference(r),
            Expr::Binary(b) if is_compound(&b.op) => self.compound(b),
            Expr::Binary(b) => self.binary(b),
            Expr::Unary(u) => self.unary(u),
            Expr::Cast(c) => self.cast(c),
            Expr::MethodCall(m) => self.method_call(m),
            Expr::Call(c) => self.call(c),
            Expr::Tuple(t) => self.tuple(t),
            Expr::Struct(st) if st.rest.is_none() && st.qself.is_none() => self.struct_literal(st),
            Expr::Array(a) => self.elements(a.elems.iter(), false, e),
            Expr::Macro(m) => self.macro_expr(m, e),
            Expr::Assign(a) => self.assign(a),
            Expr::Block(b) if b.label.is_none() => self.block_expr(&b.block, e),
            Expr::If(i) => self.if_expr(i),
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::While(w) => self.while_loop(w),
            Expr::Loop(l) => self.plain_loop(l),
            Expr::Match(m) => self.match_expr(m),
            Expr::Return(r) => self.return_expr(r),
            _ => self.opaque(e),
        }
    }

    /// An expression forward mode does not look into: fine as long as it mentions no tracked
    /// variable.
    pub fn opaque(&mut self, e: &Expr) -> Fx {
        if let Some(name) = self.mentions_tracked(e.to_token_stream()) {
            self.error(
                e.span(),
                format!(
                    "forward mode cannot differentiate this expression, which uses the active value `{name}`: write it with operators, method calls, function calls, `if`, `match` on data, or loops"
                ),
            );
        }
        Fx::Data(e.to_token_stream())
    }

    /// A read of a variable, a field or an element.
    fn place_read(&mut self, e: &Expr) -> Fx {
        let Some(p) = place(e) else {
            return self.opaque(e);
        };
        if self
            .mentions_tracked(p.mentions().parse().unwrap_or_default())
            .is_some()
        {
            return self.opaque(e);
        }
        let value = e.to_token_stream();
        let tangent = if p.is_variable() {
            self.scopes.tangent_value(&p.root)
        } else {
            self.scopes.tangent_ref(&p.root).map(|b| p.tangent_copy(b))
        };
        match tangent {
            Some(t) => Fx::Pair(quote!((#value, #t))),
            None => Fx::Data(value),
        }
    }

    /// `&place` (`&mut place` as an argument is handled by the call).
    fn reference(&mut self, r: &syn::ExprReference) -> Fx {
        let Some(p) = place(&r.expr) else {
            return self.opaque(&Expr::Reference(r.clone()));
        };
        if r.mutability.is_some() {
            return self.mut_reference(r, &p);
        }
        match self.scopes.tangent_ref(&p.root) {
            Some(base) => {
                let t = p.tangent_ref(base);
                Fx::Pair(quote!((#r, #t)))
            }
            None => Fx::Data(r.to_token_stream()),
        }
    }

    /// `&mut v` passed on: the callee receives the tangent as `&mut Option<T::Tangent>`, so
    /// that it can make an inactive variable active.
    fn mut_reference(&mut self, r: &syn::ExprReference, p: &super::place::Place) -> Fx {
        if !p.is_variable() {
            return self.opaque(&Expr::Reference(r.clone()));
        }
        if self.scopes.hold(&p.root).is_none() {
            self.promote(&p.root);
        }
        match self.scopes.tangent_place(&p.root) {
            Some(t) => Fx::Pair(quote!((#r, &mut #t))),
            None => self.opaque(&Expr::Reference(r.clone())),
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Fx {
        let lhs = self.expr(&b.left);
        let rhs = self.expr(&b.right);
        let op = &b.op;
        if !(lhs.is_pair() || rhs.is_pair()) || operator_rule(op).is_none() {
            let (l, r) = (lhs.value(), rhs.value());
            return Fx::Data(quote!(#l #op #r));
        }
        Fx::Pair(binary_rule(op, lhs.pair(), rhs.pair()).expect("an arithmetic operator"))
    }

    fn unary(&mut self, u: &syn::ExprUnary) -> Fx {
        match &u.op {
            UnOp::Neg(_) => match self.expr(&u.expr) {
                Fx::Data(v) => Fx::Data(quote!(-#v)),
                Fx::Pair(p) => Fx::Pair(quote_spanned! {u.span()=> {
                    let (__a, __ta) = #p;
                    ::adjoint::__private::NegJvp::neg_jvp(__a, (__ta,))
                }}),
            },
            UnOp::Deref(_) => {
                if let Some(p) = place(&u.expr).filter(|p| p.is_variable()) {
                    let value = u.to_token_stream();
                    return match (self.scopes.hold(&p.root), self.scopes.tangent_ref(&p.root)) {
                        (Some(super::scope::Hold::Inout), _) => {
                            let t = super::scope::tangent_ident(&p.root);
                            Fx::Pair(quote!((#value, ::core::clone::Clone::clone(&*#t))))
                        }
                        (Some(_), Some(t)) => Fx::Pair(quote!((#value, #t.map(|__t| *__t)))),
                        _ => Fx::Data(value),
                    };
                }
                self.opaque(&Expr::Unary(u.clone()))
            }
            _ => {
                let v = self.expr(&u.expr).value();
                let op = &u.op;
                Fx::Data(quote!(#op #v))
            }
        }
    }

    fn cast(&mut self, c: &syn::ExprCast) -> Fx {
        let inner = self.expr(&c.expr);
        let ty = &c.ty;
        let is_float = matches!(ty.to_token_stream().to_string().as_str(), "f32" | "f64");
        match inner {
            Fx::Pair(p) if is_float => Fx::Pair(quote_spanned! {c.span()=> {
                let (__a, __ta) = #p;
                <_ as ::adjoint::__private::CastJvp<#ty>>::cast_jvp(__a, (__ta,))
            }}),
            inner => {
                let v = inner.value();
                Fx::Data(quote!(#v as #ty))
            }
        }
    }

    /// Arguments bound to `__aK` (values) and `__taK` (tangents), in order.
    fn bind_args<'a>(
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

    fn method_call(&mut self, m: &ExprMethodCall) -> Fx {
        let name = m.method.to_string();
        if DATA_METHODS.contains(&name.as_str()) {
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
        let (recv_bind, recv, recv_tangent, recv_active) = self.receiver(&m.receiver);
        let (binds, values, args_active) = self.bind_args(m.args.iter());
        if !recv_active && !args_active {
            let args: Vec<TokenStream> = m.args.iter().map(|a| a.to_token_stream()).collect();
            let (method, turbofish) = (&m.method, &m.turbofish);
            return Fx::Data(quote!({ #recv_bind #recv.#method #turbofish (#(#args),*) }));
        }
        let tangents = (0..values.len()).map(|k| format_ident!("__ta{}", k));
        let rule = format_ident!("{}_jvp_full", m.method, span = m.method.span());
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

    fn call(&mut self, c: &ExprCall) -> Fx {
        let Expr::Path(callee) = &*c.func else {
            return self.opaque(&Expr::Call(c.clone()));
        };
        let last = callee.path.segments.last().map(|s| s.ident.to_string());
        if matches!(last.as_deref(), Some("without_derivative")) {
            let args: Vec<TokenStream> = c.args.iter().map(|a| self.expr(a).value()).collect();
            return Fx::Data(quote!(#callee(#(#args),*)));
        }
        // `Some(x)`, `Ok(x)`: the tangent of `Option<T>` / `Result<T, E>` is `T`'s.
        if callee.path.segments.len() == 1
            && matches!(last.as_deref(), Some("Some" | "Ok"))
            && c.args.len() == 1
        {
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

    /// `Path { f: a, g: b }` of a `#[derive(Differentiable)]` struct: its tangent is the
    /// derived `PathTangent { f: ȧ, g: ḃ }` (a zero of the field's shape for data fields).
    fn struct_literal(&mut self, st: &syn::ExprStruct) -> Fx {
        let parts: Vec<Fx> = st.fields.iter().map(|f| self.expr(&f.expr)).collect();
        if !parts.iter().any(Fx::is_pair) {
            return Fx::Data(st.to_token_stream());
        }
        let members: Vec<&syn::Member> = st.fields.iter().map(|f| &f.member).collect();
        let mut tangent_path = st.path.clone();
        if let Some(last) = tangent_path.segments.last_mut() {
            last.ident = format_ident!("{}Tangent", last.ident, span = last.ident.span());
        }
        let path = &st.path;
        let (binds, values, tangents) = bound_parts(parts);
        Fx::Pair(quote! {{
            #(#binds)*
            let __t = if #(#tangents.is_none())&&* {
                ::core::option::Option::None
            } else {
                ::core::option::Option::Some(#tangent_path {
                    #(#members: ::adjoint::__private::tangent_or_zero(&#values, #tangents),)*
                })
            };
            (#path { #(#members: #values,)* }, __t)
        }})
    }

    fn tuple(&mut self, t: &syn::ExprTuple) -> Fx {
        let parts: Vec<Fx> = t.elems.iter().map(|e| self.expr(e)).collect();
        if !parts.iter().any(Fx::is_pair) {
            let values = parts.into_iter().map(Fx::value);
            return Fx::Data(quote!((#(#values,)*)));
        }
        let (binds, values, tangents) = bound_parts(parts);
        Fx::Pair(quote! {{
            #(#binds)*
            let __t = if #(#tangents.is_none())&&* {
                ::core::option::Option::None
            } else {
                ::core::option::Option::Some((#(::adjoint::__private::tangent_or_zero(&#values, #tangents),)*))
            };
            ((#(#values,)*), __t)
        }})
    }

    /// `[a, b]` or `vec![a, b]`.
    fn elements<'a>(
        &mut self,
        elems: impl Iterator<Item = &'a Expr>,
        vec: bool,
        whole: &Expr,
    ) -> Fx {
        let parts: Vec<Fx> = elems.map(|e| self.expr(e)).collect();
        if !parts.iter().any(Fx::is_pair) {
            return Fx::Data(whole.to_token_stream());
        }
        let (binds, values, tangents) = bound_parts(parts);
        let (open, close) = if vec {
            (quote!(::std::vec!), quote!())
        } else {
            (quote!(), quote!())
        };
        Fx::Pair(quote! {{
            #(#binds)*
            let __t = if #(#tangents.is_none())&&* {
                ::core::option::Option::None
            } else {
                ::core::option::Option::Some(#open[#(::adjoint::__private::tangent_or_zero(&#values, #tangents)),*] #close)
            };
            (#open[#(#values),*], __t)
        }})
    }

    fn macro_expr(&mut self, m: &syn::ExprMacro, whole: &Expr) -> Fx {
        if !m.mac.path.is_ident("vec") {
            return self.other_macro(&m.mac, whole.to_token_stream());
        }
        if let Ok(arr) = m
            .mac
            .parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)
        {
            return self.elements(arr.iter(), true, whole);
        }
        let tokens = &m.mac.tokens;
        match syn::parse2::<syn::ExprRepeat>(quote!([#tokens])) {
            Ok(rep) => match self.expr(&rep.expr) {
                Fx::Data(_) => Fx::Data(whole.to_token_stream()),
                Fx::Pair(p) => {
                    let n = &rep.len;
                    Fx::Pair(quote! {{
                        let (__a, __ta) = #p;
                        let __n = #n;
                        (::std::vec![__a; __n], __ta.map(|__t| ::std::vec![__t; __n]))
                    }})
                }
            },
            Err(_) => self.opaque(whole),
        }
    }
}

/// Macros that only read their arguments: printing, formatting, assertions.
const READING_MACROS: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "format",
    "write",
    "writeln",
    "panic",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "unreachable",
    "todo",
    "unimplemented",
    "format_args",
    "dbg",
];

impl Forward {
    /// A macro other than `vec!`: kept as written when it only reads (a value it prints is the
    /// primal), rejected when it mentions an active value and could write it.
    pub fn other_macro(&mut self, mac: &syn::Macro, whole: TokenStream) -> Fx {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if !READING_MACROS.contains(&name.as_str())
            && let Some(n) = self.mentions_tracked(mac.tokens.clone())
        {
            self.error(
                    mac.path.span(),
                    format!("forward mode cannot see inside the macro `{name}!`, which uses the active value `{n}`: write its expansion, or compute the value outside it"),
                );
        }
        Fx::Data(whole)
    }
}

/// Binds each part to `__pK`/`__tpK`; returns the bindings, values and tangents.
fn bound_parts(parts: Vec<Fx>) -> (Vec<TokenStream>, Vec<syn::Ident>, Vec<syn::Ident>) {
    let mut binds = Vec::new();
    let mut values = Vec::new();
    let mut tangents = Vec::new();
    for (k, part) in parts.into_iter().enumerate() {
        let (v, t) = (format_ident!("__p{}", k), format_ident!("__tp{}", k));
        let pair = part.pair();
        binds.push(quote!(let (#v, #t) = #pair;));
        values.push(v);
        tangents.push(t);
    }
    (binds, values, tangents)
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

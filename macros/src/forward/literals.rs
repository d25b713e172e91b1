//! Aggregates in forward mode: tuples, arrays, `vec![..]` and struct literals (their tangent
//! is built from the parts' tangents, `None` when every part's is), and the other macros.

use super::Forward;
use super::expr::Fx;
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::Expr;
use syn::spanned::Spanned;

impl Forward {
    /// `Path { f: a, g: b }` of a `#[derive(Differentiable)]` struct: its tangent is the
    /// derived `PathTangent { f: ȧ, g: ḃ }` (a zero of the field's shape for data fields).
    pub(super) fn struct_literal(&mut self, st: &syn::ExprStruct) -> Fx {
        if self.mentions_tracked(st.to_token_stream()).is_some()
            && let Some(built) = crate::patterns::variant_match::struct_literal(st)
        {
            // `Enum::V { .. }` of active values: the enum's hidden constructor rule.
            return self.expr(&built);
        }
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
        aggregate(parts, |items, tangent| {
            let path = if tangent { &tangent_path } else { path };
            quote!(#path { #(#members: #items,)* })
        })
    }

    pub(super) fn tuple(&mut self, t: &syn::ExprTuple) -> Fx {
        let parts: Vec<Fx> = t.elems.iter().map(|e| self.expr(e)).collect();
        if !parts.iter().any(Fx::is_pair) {
            let values = parts.into_iter().map(Fx::value);
            return Fx::Data(quote!((#(#values,)*)));
        }
        aggregate(parts, |items, _| quote!((#(#items,)*)))
    }

    /// `[a, b]` or `vec![a, b]`.
    pub(super) fn elements<'a>(
        &mut self,
        elems: impl Iterator<Item = &'a Expr>,
        vec: bool,
        whole: &Expr,
    ) -> Fx {
        let parts: Vec<Fx> = elems.map(|e| self.expr(e)).collect();
        if !parts.iter().any(Fx::is_pair) {
            return Fx::Data(whole.to_token_stream());
        }
        let open = vec.then(|| quote!(::std::vec!));
        aggregate(parts, |items, _| quote!(#open[#(#items),*]))
    }

    pub(super) fn macro_expr(&mut self, m: &syn::ExprMacro, whole: &Expr) -> Fx {
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

/// A value built from parts (`build(items, false)`) and its tangent, built the same way from
/// the parts' tangents (`build(items, true)`, a zero of a part's shape where it has none), or
/// `None` when no part has a tangent. Each part is evaluated once, in order.
fn aggregate(parts: Vec<Fx>, build: impl Fn(&[TokenStream], bool) -> TokenStream) -> Fx {
    let mut binds = Vec::new();
    let (mut values, mut tangents, mut filled) = (Vec::new(), Vec::new(), Vec::new());
    for (k, part) in parts.into_iter().enumerate() {
        let (v, t) = (format_ident!("__p{}", k), format_ident!("__tp{}", k));
        let pair = part.pair();
        binds.push(quote!(let (#v, #t) = #pair;));
        filled.push(quote!(::adjoint::__private::tangent_or_zero(&#v, #t)));
        values.push(quote!(#v));
        tangents.push(t);
    }
    let (value, tangent) = (build(&values, false), build(&filled, true));
    Fx::Pair(quote! {{
        #(#binds)*
        let __t = if #(#tangents.is_none())&&* {
            ::core::option::Option::None
        } else {
            ::core::option::Option::Some(#tangent)
        };
        (#value, __t)
    }})
}

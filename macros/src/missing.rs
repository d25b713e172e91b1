//! The error for a method called on an active value that has no derivative: without help,
//! rustc reports that `twice_vjp_full` does not exist and suggests an unrelated method.
//!
//! For every method companion a companion's body calls (`x.twice_vjp_full(a, needs)`), the
//! body starts with a fallback: a trait with that method, implemented for every type `S` with
//! `S: NoDerivativeRule<twice>` (core's `rules/missing.rs`), which no type implements. Method
//! lookup tries the fallback last (its receiver is `&mut self`, the last autoref step) and
//! drops it wherever the bound does not hold, so a method that exists is always the one
//! called. When none exists, rustc reports the unsatisfied bound, whose
//! `#[diagnostic::on_unimplemented]` message names the method, the receiver's type and the
//! ways out, at the call's span in the user's code.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::{format_ident, quote_spanned};

/// The fallbacks of the method companions ending in each suffix (`_vjp_full`, `_vjp_mut`,
/// `_jvp_full`) that `body` calls, one per name and number of arguments, each marker type
/// defined once (a method called with two arities, or both for its value and as a
/// statement, shares it).
pub fn fallbacks(body: &TokenStream, kinds: &[(&str, Mode)]) -> TokenStream {
    // One walk over the body for every kind: each walk crosses the compiler's token bridge.
    let mut calls: Vec<Vec<(proc_macro2::Ident, usize)>> = vec![Vec::new(); kinds.len()];
    collect(body.clone(), kinds, &mut calls);
    let mut markers: Vec<String> = Vec::new();
    let mut out = TokenStream::new();
    for (&(suffix, mode), calls) in kinds.iter().zip(&calls) {
        for (companion, arity) in calls {
            out.extend(fallback(companion, *arity, suffix, mode, &mut markers));
        }
    }
    out
}

/// Which derivative is missing, for the message.
#[derive(Clone, Copy)]
pub enum Mode {
    Reverse,
    Forward,
    /// A statement `recv.m(..);` taken as a `&mut self` method (`m_vjp_mut`).
    Mutating,
}

/// The method companions called in `tokens` (`. name (args)`), and the constructor rules of
/// enum variants (`:: __new_V_vjp_full (args)`), by the suffix they end in (`out[k]` for
/// `kinds[k]`), first call first, each name and number of arguments once.
fn collect(
    tokens: TokenStream,
    kinds: &[(&str, Mode)],
    out: &mut [Vec<(proc_macro2::Ident, usize)>],
) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Group(g) => collect(g.stream(), kinds, out),
            TokenTree::Ident(name) => {
                let text = name.to_string();
                let Some(k) = kinds.iter().position(|(s, _)| text.ends_with(s)) else {
                    continue;
                };
                let after_dot =
                    i > 0 && matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == '.');
                let constructor = i > 0
                    && text.starts_with("__new_")
                    && matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == ':');
                let args = match trees.get(i + 1) {
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => g,
                    _ => continue,
                };
                let arity = arguments(args.stream());
                if (after_dot || constructor)
                    && !out[k].iter().any(|(n, a)| n == name && *a == arity)
                {
                    out[k].push((name.clone(), arity));
                }
            }
            _ => {}
        }
    }
}

/// The number of comma-separated arguments in `args`.
fn arguments(args: TokenStream) -> usize {
    let mut count = 0;
    let mut pending = false;
    for tree in args {
        match tree {
            TokenTree::Punct(p) if p.as_char() == ',' => {
                count += usize::from(pending);
                pending = false;
            }
            _ => pending = true,
        }
    }
    count + usize::from(pending)
}

/// The marker type, the fallback trait and its blanket impl for one companion, spanned at
/// the call so that rustc's notes point there too. The bound is one of the traits of
/// `adjoint::__private` that no type implements, named after the method by the marker (a
/// braced struct: type namespace only, so it shadows no function of the body).
fn fallback(
    companion: &proc_macro2::Ident,
    arity: usize,
    suffix: &str,
    mode: Mode,
    markers: &mut Vec<String>,
) -> TokenStream {
    let span: Span = companion.span();
    let name = companion.to_string();
    let method = name.trim_end_matches(suffix).trim_end_matches("_given");
    let variant = method
        .strip_prefix("__new_")
        .or_else(|| method.strip_prefix("__variant_"));
    let (marker, bound) = match (method.strip_prefix("__field_"), variant, mode) {
        (Some(field), _, _) => (field, quote_spanned!(span=> NoFieldAccessor)),
        // The marker keeps the rule's name (`__new_Circle`): a variant's name could shadow a
        // type of the body.
        (None, Some(_), _) => (method, quote_spanned!(span=> NoVariantRule)),
        (None, None, Mode::Reverse) => (method, quote_spanned!(span=> NoDerivativeRule)),
        (None, None, Mode::Forward) => (method, quote_spanned!(span=> NoJvpRule)),
        (None, None, Mode::Mutating) => (method, quote_spanned!(span=> NoMutatingRule)),
    };
    let receiver = match method.starts_with("__new_") {
        true => TokenStream::new(),
        false => quote_spanned!(span=> &mut self,),
    };
    let defined = markers.iter().any(|m| m == marker);
    if !defined {
        markers.push(marker.to_owned());
    }
    let marker = proc_macro2::Ident::new(marker, span);
    let marker_item = (!defined).then(|| {
        quote_spanned! {span=>
            #[allow(non_camel_case_types)]
            struct #marker {}
        }
    });
    let fallback = format_ident!("__adjoint_{}_fallback_{}", name, arity, span = span);
    let params: Vec<proc_macro2::Ident> = (0..arity)
        .map(|i| format_ident!("A{}", i, span = span))
        .collect();
    quote_spanned! {span=>
        #marker_item
        #[allow(non_camel_case_types, non_snake_case)]
        trait #fallback {
            fn #companion<#(#params),*>(#receiver #(_: #params),*) -> !;
        }
        #[allow(non_snake_case)]
        impl<__S: ?::core::marker::Sized + ::adjoint::__private::#bound<#marker>> #fallback for __S {
            fn #companion<#(#params),*>(#receiver #(_: #params),*) -> ! {
                ::core::unreachable!()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn each_marker_is_defined_once() {
        let body = quote!(a.mm_vjp_full(b, [t]); c.mm_vjp_full(d, e, [t]); s.mm_vjp_mut(x, [t]););
        let out = fallbacks(
            &body,
            &[("_vjp_full", Mode::Reverse), ("_vjp_mut", Mode::Mutating)],
        )
        .to_string();
        assert_eq!(out.matches("struct mm").count(), 1, "{out}");
        assert_eq!(out.matches("trait __adjoint_mm_").count(), 3, "{out}");
        assert!(out.contains("NoMutatingRule < mm >"), "{out}");
    }

    #[test]
    fn one_fallback_per_method_and_arity() {
        let body = quote!(x.sin_vjp_full([n[0]]); (a.mm_vjp_full(&b, [true, false],)).y; acc.add_vjp_mut(x, n); f.sin_vjp_full([n[0]]); g.mm_vjp_full(c, d, e); t.x_vjp_full);
        let mut calls = vec![Vec::new(), Vec::new()];
        let kinds = [("_vjp_full", Mode::Reverse), ("_vjp_mut", Mode::Mutating)];
        collect(body, &kinds, &mut calls);
        let mutating: Vec<(String, usize)> =
            calls[1].iter().map(|(n, a)| (n.to_string(), *a)).collect();
        assert_eq!(mutating, [("add_vjp_mut".into(), 2)]);
        let found: Vec<(String, usize)> =
            calls[0].iter().map(|(n, a)| (n.to_string(), *a)).collect();
        assert_eq!(
            found,
            [
                ("sin_vjp_full".into(), 1),
                ("mm_vjp_full".into(), 2),
                ("mm_vjp_full".into(), 3)
            ]
        );
    }
}

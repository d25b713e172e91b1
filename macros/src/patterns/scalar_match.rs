//! A `match` over a value with patterns that only compare or bind it (`v`, `_`, literals,
//! ranges `a..=b`, `..b`, `a..`, `p | q`, `v @ range`), with guards: rewritten as an `if` chain
//! on the value, whose conditions are data and whose arms bind the value. Both modes use it
//! when the scrutinee is active (a float, usually), which a `match` cannot carry a derivative
//! through:
//!
//! ```text
//! match e { v if v > 1.0 => a, 0.0..=1.0 => b, v => c }
//!   ⇒ { let s = e; if { let v = s.clone(); v > 1.0 } { let v = s.clone(); a }
//!       else if (s >= 0.0 && s <= 1.0) { b } else { let v = s.clone(); c } }
//! ```

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use syn::{Expr, Pat, RangeLimits};

/// The scrutinee's binding in the rewritten code.
const SCRUTINEE: &str = "__adjoint_scrutinee";

/// `m` as an `if` chain, when every arm's pattern only compares or binds the value; `None`
/// otherwise.
pub fn as_if_chain(m: &syn::ExprMatch) -> Option<Expr> {
    let s = Ident::new(SCRUTINEE, Span::call_site());
    let mut tests = Vec::new();
    for arm in &m.arms {
        let (test, binding) = pattern_test(&arm.pat, &s)?;
        let bind = binding.map(|b| quote!(let #b = #s.clone();));
        let cond = match &arm.guard {
            Some((_, guard)) => quote!((#test) && { #bind #guard }),
            None => test,
        };
        let body = &arm.body;
        tests.push((cond, quote!({ #bind #body })));
    }
    let expr = &m.expr;
    let mut chain = quote!({ ::core::unreachable!("no arm of the `match` applies") });
    for (cond, body) in tests.into_iter().rev() {
        chain = quote!(if #cond #body else #chain);
    }
    syn::parse2(quote!({ let #s = #expr; #chain })).ok()
}

/// The test of a pattern on `s` and the name it binds `s` to, if any; `None` for a pattern
/// that destructures.
fn pattern_test(pat: &Pat, s: &Ident) -> Option<(TokenStream, Option<Ident>)> {
    match pat {
        Pat::Wild(_) => Some((quote!(true), None)),
        Pat::Ident(p) if p.by_ref.is_none() && p.mutability.is_none() => match &p.subpat {
            None => Some((quote!(true), Some(p.ident.clone()))),
            Some((_, sub)) => {
                let (test, inner) = pattern_test(sub, s)?;
                inner.is_none().then_some((test, Some(p.ident.clone())))
            }
        },
        Pat::Lit(l) => Some((quote!(#s == #l), None)),
        Pat::Range(r) => {
            let lower = r.start.as_ref().map(|a| quote!(#s >= #a));
            let upper = r.end.as_ref().map(|b| match r.limits {
                RangeLimits::Closed(_) => quote!(#s <= #b),
                RangeLimits::HalfOpen(_) => quote!(#s < #b),
            });
            let parts: Vec<TokenStream> = lower.into_iter().chain(upper).collect();
            Some((quote!((#(#parts)&&*)), None))
        }
        Pat::Or(o) => {
            let mut tests = Vec::new();
            for case in &o.cases {
                let (test, binding) = pattern_test(case, s)?;
                if binding.is_some() {
                    return None;
                }
                tests.push(test);
            }
            Some((quote!((#(#tests)||*)), None))
        }
        Pat::Paren(p) => pattern_test(&p.pat, s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn chain(tokens: TokenStream) -> String {
        let m: syn::ExprMatch = syn::parse2(tokens).unwrap();
        as_if_chain(&m)
            .map(|e| e.to_token_stream().to_string())
            .unwrap_or_default()
    }

    #[test]
    fn comparing_patterns_become_conditions_and_others_are_left() {
        let out = chain(quote!(match x {
            v if v > 1.0 => v * v,
            0.0..=1.0 | 2.0 => 1.0,
            ..-3.0 => 0.0,
            v => 2.0 * v,
        }));
        assert!(
            out.contains("if (true) && { let v = __adjoint_scrutinee . clone () ; v > 1.0 }"),
            "{out}"
        );
        assert!(out.contains("((__adjoint_scrutinee >= 0.0 && __adjoint_scrutinee <= 1.0) || __adjoint_scrutinee == 2.0)"), "{out}");
        assert!(out.contains("(__adjoint_scrutinee < - 3.0)"), "{out}");
        assert_eq!(
            chain(quote!(match o {
                Some(v) => v,
                None => 0.0,
            })),
            ""
        );
    }
}

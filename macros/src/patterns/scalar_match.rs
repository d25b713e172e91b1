//! A `match` over a value with patterns that only compare or bind it (`v`, `_`, literals,
//! ranges `a..=b`, `..b`, `a..`, `p | q`, `v @ range`, tuples of those), with guards: rewritten as an `if` chain
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

/// `m` as an `if` chain, when every arm's pattern only compares or binds the value (or the
/// parts of a tuple, `(a, 0.0..)`); `None` otherwise.
pub fn as_if_chain(m: &syn::ExprMatch) -> Option<Expr> {
    let s = Ident::new(SCRUTINEE, Span::call_site());
    let mut tests = Vec::new();
    for arm in &m.arms {
        let mut bindings = Vec::new();
        let test = pattern_test(&arm.pat, &quote!(#s), &mut bindings)?;
        let bind: Vec<TokenStream> = bindings
            .iter()
            .map(|(name, part)| quote!(let #name = #part.clone();))
            .collect();
        let cond = match &arm.guard {
            Some((_, guard)) => quote!((#test) && { #(#bind)* #guard }),
            None => test,
        };
        let body = &arm.body;
        tests.push((cond, quote!({ #(#bind)* #body })));
    }
    let expr = &m.expr;
    let mut chain = quote!({ ::core::unreachable!("no arm of the `match` applies") });
    for (cond, body) in tests.into_iter().rev() {
        chain = quote!(if #cond #body else #chain);
    }
    syn::parse2(quote!({ let #s = #expr; #chain })).ok()
}

/// The test of a pattern on the value `s`, pushing the names it binds with the part each is
/// bound to; `None` for a pattern that destructures other than a tuple.
fn pattern_test(
    pat: &Pat,
    s: &TokenStream,
    bindings: &mut Vec<(Ident, TokenStream)>,
) -> Option<TokenStream> {
    match pat {
        Pat::Wild(_) => Some(quote!(true)),
        Pat::Ident(p) if p.by_ref.is_none() && p.mutability.is_none() => {
            let test = match &p.subpat {
                None => quote!(true),
                Some((_, sub)) => {
                    let before = bindings.len();
                    let test = pattern_test(sub, s, bindings)?;
                    if bindings.len() != before {
                        return None;
                    }
                    test
                }
            };
            bindings.push((p.ident.clone(), s.clone()));
            Some(test)
        }
        Pat::Lit(l) => Some(quote!(#s == #l)),
        Pat::Range(r) => {
            let lower = r.start.as_ref().map(|a| quote!(#s >= #a));
            let upper = r.end.as_ref().map(|b| match r.limits {
                RangeLimits::Closed(_) => quote!(#s <= #b),
                RangeLimits::HalfOpen(_) => quote!(#s < #b),
            });
            let parts: Vec<TokenStream> = lower.into_iter().chain(upper).collect();
            Some(quote!((#(#parts)&&*)))
        }
        Pat::Or(o) => {
            let mut tests = Vec::new();
            for case in &o.cases {
                let before = bindings.len();
                tests.push(pattern_test(case, s, bindings)?);
                if bindings.len() != before {
                    return None;
                }
            }
            Some(quote!((#(#tests)||*)))
        }
        Pat::Tuple(t) if !t.elems.iter().any(|e| matches!(e, Pat::Rest(_))) => {
            let mut tests = Vec::new();
            for (k, elem) in t.elems.iter().enumerate() {
                let k = syn::Index::from(k);
                tests.push(pattern_test(elem, &quote!(#s.#k), bindings)?);
            }
            Some(quote!((true #(&& #tests)*)))
        }
        Pat::Paren(p) => pattern_test(&p.pat, s, bindings),
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

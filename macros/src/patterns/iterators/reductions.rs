//! Reductions of iterator chains over active collections (`.sum()`, `.product()`,
//! `.fold(init, g)`, `.collect::<Vec<_>>()`, each after an optional `.map(|x| ..)`, and
//! `xs.to_vec()`): loops over indices that accumulate from the first step's value, which
//! types the accumulator (see the parent module). Over a filtered chain (`.filter(p)`, whose
//! predicate guards each step) the first step may not run: `fold` starts from its `init`,
//! `.sum::<T>()` and `.product::<T>()` from zero and one of the named type, `collect` from an
//! empty `Vec`; a sum or product without the turbofish is not taken.

use super::{Bound, Chain, ItemsNamed, chain, index, indexed_loop};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, quote};
use syn::visit_mut::VisitMut;
use syn::{Expr, Pat, parse_quote};

/// A reduction of a chain (`chain[.map(f)].sum()`, `.product()`, `.fold(init, g)`,
/// `.collect::<Vec<_>>()`, and `xs.to_vec()`) as a block with a loop over indices; `None` for anything else.
pub fn reduction(m: &syn::ExprMethodCall) -> Option<Expr> {
    if m.method == "to_vec" && m.args.is_empty() {
        // `xs.to_vec()` is `xs.iter().cloned().collect::<Vec<_>>()`.
        let xs = &m.receiver;
        let collected: syn::ExprMethodCall = parse_quote!(#xs.iter().cloned().collect::<Vec<_>>());
        return reduction(&collected);
    }
    if !["sum", "product", "fold", "collect"]
        .iter()
        .any(|r| m.method == r)
    {
        return None;
    }
    let (source, map) = match &*m.receiver {
        Expr::MethodCall(inner) if inner.method == "map" && inner.args.len() == 1 => {
            match &inner.args[0] {
                Expr::Closure(c) if c.inputs.len() == 1 => (&*inner.receiver, Some(c)),
                _ => return None,
            }
        }
        receiver => (receiver, None),
    };
    let mut fresh = 0;
    let mut chain = chain(source, &mut fresh).filter(|c| !c.item.has_place())?;
    if m.method == "fold" {
        return fold(m, &chain).filter(|_| map.is_none());
    }
    // The first step types a sum's or product's accumulator, but a filtered chain's first
    // step may not run: there the turbofish types it (`.sum::<f64>()`), which then starts
    // from zero (one) and adds every step that passes the filters.
    let filtered = !chain.guards.is_empty();
    let (pat, value): (Pat, Expr) = match map {
        Some(c) => (c.inputs[0].clone(), (*c.body).clone()),
        None => (parse_quote!(__adjoint_item), parse_quote!(__adjoint_item)),
    };
    let acc = Ident::new("__adjoint_acc", Span::call_site());
    let len = &chain.len;
    let turbofish = m
        .turbofish
        .as_ref()
        .and_then(|t| t.args.first())
        .map(ToTokens::to_token_stream);
    let ty = turbofish.clone().map(|t| quote!(: #t));
    let first = |empty| first_or(&chain, &pat, &value, empty);
    let (init, step, start): (syn::Stmt, syn::Stmt, usize) =
        match (m.method.to_string().as_str(), m.args.len()) {
            ("sum" | "product", 0) if filtered => {
                let (ty, start) = (turbofish.as_ref()?, zero_or_one(&m.method));
                let op = match m.method == "sum" {
                    true => quote!(+),
                    false => quote!(*),
                };
                (
                    parse_quote!(let mut #acc: #ty = #start;),
                    parse_quote!(#acc = #acc #op (#value);),
                    0,
                )
            }
            ("sum", 0) => {
                let init = first(zero_or_one(&m.method))?;
                (
                    parse_quote!(let mut #acc #ty = #init;),
                    parse_quote!(#acc = #acc + (#value);),
                    1,
                )
            }
            ("product", 0) => {
                let init = first(zero_or_one(&m.method))?;
                (
                    parse_quote!(let mut #acc #ty = #init;),
                    parse_quote!(#acc = #acc * (#value);),
                    1,
                )
            }
            ("collect", 0) if turbofish.is_none_or(|t| t.to_string().starts_with("Vec")) => (
                parse_quote!(let mut #acc = ::std::vec::Vec::with_capacity(#len);),
                parse_quote!(#acc.push(#value);),
                0,
            ),
            _ => return None,
        };
    // The chain's prelude (a bound array literal or sub-slice) comes before the first step,
    // which reads it.
    let prelude = std::mem::take(&mut chain.prelude);
    let the_loop = indexed_loop(&chain, &pat, &[], Some(step), start)?;
    Some(parse_quote!({ #(#prelude)* #init #the_loop; #acc }))
}

/// Where a sum (zero) or a product (one) of a filtered chain starts.
fn zero_or_one(method: &Ident) -> TokenStream {
    match method == "sum" {
        true => quote!(::core::default::Default::default()),
        false => quote!(::adjoint::__private::one()),
    }
}

/// The first step's value (`value` with `pat` bound to the first item), or `empty` for an
/// empty chain: the start of a sum or product, which gives the accumulator its type (a
/// trait-dispatched `+` cannot).
fn first_or(chain: &Chain, pat: &Pat, value: &Expr, empty: TokenStream) -> Option<TokenStream> {
    let mut bound = Bound::default();
    let lets = chain.item.bindings(pat, &mut bound)?;
    let (index, len) = (index(), &chain.len);
    let mut value = value.clone();
    ItemsNamed(&bound).visit_expr_mut(&mut value);
    Some(quote!(if #len > 0 { let #index: usize = 0; #(#lets)* #value } else { #empty }))
}

/// `chain.fold(init, |acc, x| body)` as `{ let mut acc = init; for .. { acc = body; } acc }`;
/// a function path `chain.fold(init, f64::max)` as `|acc, x| f64::max(acc, x)`.
fn fold(m: &syn::ExprMethodCall, chain: &Chain) -> Option<Expr> {
    let (Some(init), Some(step), 2) = (m.args.first(), m.args.get(1), m.args.len()) else {
        return None;
    };
    let called: Expr;
    let g = match step {
        Expr::Closure(g) => g,
        Expr::Path(f) => {
            called =
                parse_quote!(|__adjoint_acc, __adjoint_item| #f(__adjoint_acc, __adjoint_item));
            let Expr::Closure(g) = &called else {
                unreachable!("parsed as a closure")
            };
            g
        }
        _ => return None,
    };
    let (Some(Pat::Ident(acc)), Some(x), 2) = (g.inputs.first(), g.inputs.get(1), g.inputs.len())
    else {
        return None;
    };
    let (name, body) = (&acc.ident, &g.body);
    let the_loop = indexed_loop(chain, x, &[parse_quote!(#name = #body;)], None, 0)?;
    Some(parse_quote!({ let mut #name = #init; #the_loop; #name }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_are_loops_that_accumulate() {
        let m: syn::ExprMethodCall = syn::parse2(quote!(
            xs.iter().zip(ys.iter()).map(|(x, y)| *x * *y).sum::<f64>()
        ))
        .unwrap();
        let out = reduction(&m).unwrap().to_token_stream().to_string();
        assert!(out.contains("let mut __adjoint_acc : f64 = if :: core :: cmp :: min (xs . len () , ys . len ()) > 0"), "{out}");
        assert!(
            out.contains("else { :: core :: default :: Default :: default () }"),
            "{out}"
        );
        assert!(out.contains("for __adjoint_index in 1 .."), "{out}");
        assert!(
            out.contains("__adjoint_acc = __adjoint_acc + (x * y)"),
            "{out}"
        );
        let m: syn::ExprMethodCall =
            syn::parse2(quote!(xs.iter().fold(1.0, |p, x| p * x))).unwrap();
        let out = reduction(&m).unwrap().to_token_stream().to_string();
        assert!(out.starts_with("{ let mut p = 1.0 ;"), "{out}");
        let m: syn::ExprMethodCall =
            syn::parse2(quote!(xs.iter().map(|x| x.sin()).collect::<HashSet<_>>())).unwrap();
        assert!(reduction(&m).is_none());
    }
}

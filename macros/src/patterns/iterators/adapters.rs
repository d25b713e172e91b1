//! The adapters of a chain (`enumerate`, `rev`, `zip`, `skip`, `take`, `step_by`, `copied`,
//! `cloned`, `filter`), its sub-slice sources (`chunks`, `chunks_exact`, `windows`), and the
//! adapters no chain holds.

use super::{Chain, Item, chain, index, substitute};
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Expr, parse_quote};

/// `xs.chunks(n)`, `xs.chunks_exact(n)`, `xs.windows(n)` over a named collection: the chain
/// of its sub-slices `&xs[k·n..min((k + 1)·n, len)]`, `&xs[k·n..(k + 1)·n]`, `&xs[k..k + n]`.
pub(super) fn sub_slices(collection: &Expr, method: &str, size: &Expr) -> Option<Chain> {
    let collection = match collection {
        Expr::Path(p) if p.path.get_ident().is_some() => p.to_token_stream(),
        Expr::Field(f) => f.to_token_stream(),
        _ => return None,
    };
    let (k, all) = (index(), quote!(#collection.len()));
    let (len, start, end) = match method {
        "chunks" => (
            quote!(#all.div_ceil(#size)),
            quote!((#k * (#size))),
            quote!(::core::cmp::min((#k + 1) * (#size), #all)),
        ),
        "chunks_exact" => (
            quote!(#all / (#size)),
            quote!((#k * (#size))),
            quote!(((#k + 1) * (#size))),
        ),
        _ => (
            quote!((#all + 1).saturating_sub(#size)),
            quote!(#k),
            quote!((#k + (#size))),
        ),
    };
    // The standard library's words.
    let message = match method {
        "windows" => "window size must be non-zero",
        _ => "chunk size must be non-zero",
    };
    Some(Chain {
        len,
        item: Item::Slice {
            collection,
            start,
            end,
        },
        prelude: vec![parse_quote!(::core::assert!((#size) != 0, #message);)],
        guards: Vec::new(),
    })
}

/// `inner.method(args)` for an adapter `method`; `None` for any other method.
pub(super) fn adapted(
    inner: Chain,
    method: &str,
    args: &[&Expr],
    fresh: &mut usize,
    by_ref: Option<bool>,
) -> Option<Chain> {
    let (k, len) = (index(), &inner.len);
    let reindexed = |with: TokenStream, len: TokenStream| Chain {
        item: inner.item.reindexed(&with),
        len,
        prelude: inner.prelude.clone(),
        guards: inner
            .guards
            .iter()
            .map(|g| substitute(g.clone(), &with))
            .collect(),
    };
    Some(match (method, args) {
        ("copied" | "cloned", []) => inner,
        ("enumerate", []) => Chain {
            item: Item::Pair(Box::new(Item::Position(k)), Box::new(inner.item)),
            ..inner
        },
        ("rev", []) => reindexed(quote!((#len - 1 - #k)), len.clone()),
        ("skip", [n]) => reindexed(quote!((#k + (#n))), quote!(#len.saturating_sub(#n))),
        ("step_by", [n]) => reindexed(quote!((#k * (#n))), quote!(#len.div_ceil(#n))),
        ("take", [n]) => Chain {
            len: quote!(::core::cmp::min(#len, #n)),
            ..inner
        },
        ("zip", [other]) => {
            let other = chain(other, fresh)?;
            let b = &other.len;
            let mut prelude = inner.prelude;
            prelude.extend(other.prelude);
            if !inner.guards.is_empty() || !other.guards.is_empty() {
                // A filtered chain's positions are not the steps' count.
                return None;
            }
            Chain {
                len: quote!(::core::cmp::min(#len, #b)),
                item: Item::Pair(Box::new(inner.item), Box::new(other.item)),
                prelude,
                guards: Vec::new(),
            }
        }
        ("filter", [Expr::Closure(c)]) if c.inputs.len() == 1 && by_ref.is_some() => {
            // The predicate sees `&item`, the item as the iterator yields it.
            let value = inner.item.as_yielded(by_ref?)?;
            let (pat, body) = (&c.inputs[0], &c.body);
            let mut guards = inner.guards.clone();
            guards.push(quote!({ let #pat = &#value; #body }));
            Chain { guards, ..inner }
        }
        _ => return None,
    })
}

/// Iterator adapters a chain over active values cannot hold yet (each changes which elements
/// are read, or how many, by the values themselves); `filter` only in a `for` loop, a `fold`,
/// a `collect` and a typed sum or product.
const UNSUPPORTED_ADAPTERS: &[&str] = &[
    "filter",
    "filter_map",
    "flat_map",
    "flatten",
    "take_while",
    "skip_while",
    "map_while",
    "scan",
    "chain",
    "peekable",
    "inspect",
    "rchunks",
    "rev_chunks",
];

/// The error for `xs.iter().filter(..)` and the other adapters no chain holds, when `m` is
/// one of them (its receiver's activity is the caller's to check).
pub fn unsupported_adapter(m: &syn::ExprMethodCall) -> Option<String> {
    let name = m.method.to_string();
    UNSUPPORTED_ADAPTERS.contains(&name.as_str()).then(|| {
        let instead = match name.as_str() {
            "filter" => "a `for` loop over the same chain takes it (`for x in xs.iter().filter(..)`), and so do `.fold(init, ..)`, `.collect::<Vec<_>>()` and a sum or product that names its type (`.sum::<f64>()`)",
            _ => "loop `for x in xs.iter()` (through `enumerate`, `zip`, `rev`, `skip`, `take`, `step_by`, `filter`) and choose the elements in its body (`if`, `break`)",
        };
        format!(
            "`.{name}(..)` in an iterator chain over active values is not supported yet: {instead}, or select indices on data (`without_derivative(..)`) and read `xs[i]`"
        )
    })
}

/// Whether the chain `e` yields its elements by reference (`xs.iter()`, `&xs`,
/// `xs.windows(n)`, through adapters that keep the items), by value (`copied`, `cloned`,
/// `into_iter()`, a bare name, an array literal), or `None` when that is not known.
pub(super) fn yields_references(e: &Expr) -> Option<bool> {
    match e {
        Expr::Paren(p) => yields_references(&p.expr),
        Expr::Reference(r) => Some(r.mutability.is_none()),
        Expr::Path(_) | Expr::Field(_) | Expr::Array(_) => Some(false),
        Expr::MethodCall(m) => match m.method.to_string().as_str() {
            "iter" | "chunks" | "chunks_exact" | "windows" => Some(true),
            "copied" | "cloned" | "into_iter" => Some(false),
            "enumerate" | "rev" | "skip" | "take" | "step_by" | "filter" => {
                yields_references(&m.receiver)
            }
            _ => None,
        },
        _ => None,
    }
}

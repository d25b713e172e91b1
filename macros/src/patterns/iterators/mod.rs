//! Iterator chains over active collections, rewritten as loops over indices: element reads are
//! differentiable, iterators are not.
//!
//! A chain is a source (`xs.iter()`, `xs.into_iter()`, `&xs`, `xs`, an array literal, and the
//! sub-slices of `xs.chunks(n)`, `xs.chunks_exact(n)`, `xs.windows(n)`) and
//! adapters (`enumerate`, `rev`, `zip(ys)`, `skip(n)`, `take(n)`, `step_by(n)`, `copied`,
//! `cloned`, and in a `for` loop `filter(p)`, whose predicate guards the body). A `for` loop
//! over one reads each element at its index:
//!
//! ```text
//! for (i, (a, b)) in xs.iter().zip(ys).enumerate().rev() { body }
//!   ⇒ for __adjoint_index in 0..min(xs.len(), ys.len()) {
//!         let i = n − 1 − k; let a = xs[n − 1 − k].clone(); let b = ys[n − 1 − k].clone();
//!         body }                                   (k = __adjoint_index, n = the length)
//! ```
//!
//! and a reduction of one (`.sum()`, `.product()`, `.fold(init, |acc, x| ..)`,
//! `.collect::<Vec<_>>()`, each after an optional `.map(|x| ..)`) is such a loop that
//! accumulates from the first step's value (which types the accumulator):
//! `xs.iter().map(|x| x * x).sum()` ⇒ `{ let mut acc = if n > 0 { let x = xs[0].clone(); x * x }
//! else { Default::default() }; for k in 1..n { let x = xs[k].clone(); acc = acc + (x * x); }
//! acc }`.
//!
//! Elements are read by value (`.clone()`), under a reference pattern (`for &x in ..`,
//! `|&x| ..`, where the element is `Copy`) too; a tuple pattern binds part by part; an element
//! written `*x` in the body is read as `x`.

mod adapters;
mod reductions;

pub use adapters::unsupported_adapter;
pub use reductions::reduction;

use adapters::{adapted, sub_slices, yields_references};

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::visit_mut::VisitMut;
use syn::{Expr, Pat, parse_quote};

/// The index variable of the loops this module writes.
const INDEX: &str = "__adjoint_index";

/// What one step of a chain yields, in terms of the loop's index `k`.
#[derive(Clone)]
pub(super) enum Item {
    /// `collection[index]`.
    Element {
        collection: TokenStream,
        index: TokenStream,
    },
    /// The place `collection[index]`, yielded as `&mut` (`iter_mut`, `&mut xs`): the name
    /// bound to it stands for the place in the body, so that a write through it is an element
    /// write the lowering sees.
    Place {
        collection: TokenStream,
        index: TokenStream,
    },
    /// The sub-slice `&collection[start..end]` (`chunks`, `windows`): a copy whose adjoint
    /// goes back from `start`.
    Slice {
        collection: TokenStream,
        start: TokenStream,
        end: TokenStream,
    },
    /// A position (`enumerate`'s count).
    Position(TokenStream),
    /// A pair (`enumerate`, `zip`).
    Pair(Box<Item>, Box<Item>),
}

impl Item {
    /// The item with `k` replaced by `with` in every index (an adapter that reorders).
    fn reindexed(&self, with: &TokenStream) -> Item {
        match self {
            Item::Element { collection, index } => Item::Element {
                collection: collection.clone(),
                index: substitute(index.clone(), with),
            },
            Item::Place { collection, index } => Item::Place {
                collection: collection.clone(),
                index: substitute(index.clone(), with),
            },
            Item::Slice {
                collection,
                start,
                end,
            } => Item::Slice {
                collection: collection.clone(),
                start: substitute(start.clone(), with),
                end: substitute(end.clone(), with),
            },
            Item::Position(p) => Item::Position(substitute(p.clone(), with)),
            Item::Pair(a, b) => {
                Item::Pair(Box::new(a.reindexed(with)), Box::new(b.reindexed(with)))
            }
        }
    }

    /// The `let`s that bind `pat` to this item: a tuple pattern over a pair part by part (so
    /// that a position stays data beside an active element), an element by value (under a
    /// reference pattern `&x` too: the element is `Copy` then); `names` collects the names
    /// bound to elements, whose `*x` the body means as `x`, and those bound to places, which
    /// bind nothing (the body is rewritten to name the place). `None` for a pattern that
    /// destructures a place.
    pub(super) fn bindings(&self, pat: &Pat, names: &mut Bound) -> Option<Vec<syn::Stmt>> {
        match (self, pat) {
            (_, Pat::Paren(p)) => self.bindings(&p.pat, names),
            (Item::Pair(a, b), Pat::Tuple(t)) if t.elems.len() == 2 => {
                let mut lets = a.bindings(&t.elems[0], names)?;
                lets.extend(b.bindings(&t.elems[1], names)?);
                Some(lets)
            }
            (Item::Element { .. }, Pat::Reference(r)) => self.bindings(&r.pat, names),
            (Item::Place { collection, index }, pat) => match pat {
                Pat::Ident(i)
                    if i.by_ref.is_none() && i.mutability.is_none() && i.subpat.is_none() =>
                {
                    names
                        .places
                        .push((i.ident.clone(), quote!(#collection[#index])));
                    Some(Vec::new())
                }
                Pat::Wild(_) => Some(Vec::new()),
                _ => None,
            },
            (item, pat) => {
                if let (Item::Element { .. }, Pat::Ident(i)) = (item, pat) {
                    names.by_value.push(i.ident.clone());
                }
                let value = item.value()?;
                Some(vec![parse_quote!(let #pat = #value;)])
            }
        }
    }

    /// The item as one value: an element read by value, a position, a pair as a tuple;
    /// `None` for a place (which is no value) or a pair holding one.
    fn value(&self) -> Option<TokenStream> {
        self.as_yielded(false)
    }

    /// The item as the iterator yields it, for a `filter` predicate: an element by reference
    /// (`by_ref`, as `iter()` yields it) or by value, a window or chunk as a slice; `None` for
    /// a place.
    fn as_yielded(&self, by_ref: bool) -> Option<TokenStream> {
        Some(match self {
            Item::Element { collection, index } if by_ref => quote!(&#collection[#index]),
            Item::Element { collection, index } => quote!(#collection[#index].clone()),
            Item::Place { .. } => return None,
            Item::Slice {
                collection,
                start,
                end,
            } => quote!(&#collection[#start..#end]),
            Item::Position(p) => quote!((#p)),
            Item::Pair(a, b) => {
                let (a, b) = (a.as_yielded(by_ref)?, b.as_yielded(by_ref)?);
                quote!((#a, #b))
            }
        })
    }

    /// Whether the item yields a place (`&mut`), alone or in a pair.
    pub(super) fn has_place(&self) -> bool {
        match self {
            Item::Place { .. } => true,
            Item::Pair(a, b) => a.has_place() || b.has_place(),
            _ => false,
        }
    }
}

/// The names a pattern binds to a chain's items: elements read by value, and places with the
/// place each stands for.
#[derive(Default)]
pub(super) struct Bound {
    by_value: Vec<Ident>,
    places: Vec<(Ident, TokenStream)>,
}

/// A chain: its length, what each step yields, and the statements that must run before the
/// loop (an array literal's binding).
pub(super) struct Chain {
    pub(super) len: TokenStream,
    pub(super) item: Item,
    pub(super) prelude: Vec<syn::Stmt>,
    /// The conditions of `filter(..)` adapters, in terms of the index: a step runs the body
    /// only where all hold.
    pub(super) guards: Vec<TokenStream>,
}

/// The loop's index variable, as tokens.
pub(super) fn index() -> TokenStream {
    Ident::new(INDEX, Span::call_site()).to_token_stream()
}

/// The chain that reads `collection[k]` for every index `k`.
fn elements(collection: TokenStream) -> Chain {
    Chain {
        len: quote!(#collection.len()),
        item: Item::Element {
            collection,
            index: index(),
        },
        prelude: Vec::new(),
        guards: Vec::new(),
    }
}

/// The chain that yields the place `collection[k]` for every index `k`, by `&mut`.
fn places(collection: &Expr) -> Option<Chain> {
    let collection = match collection {
        Expr::Path(p) if p.path.get_ident().is_some() => p.to_token_stream(),
        Expr::Field(f) => f.to_token_stream(),
        _ => return None,
    };
    Some(Chain {
        len: quote!(#collection.len()),
        item: Item::Place {
            collection,
            index: index(),
        },
        prelude: Vec::new(),
        guards: Vec::new(),
    })
}

/// The chain over the elements of `collection` (an array literal, a sub-slice `&xs[a..b]`),
/// bound to a name before the loop; `fresh` numbers the names.
fn bound_first(collection: TokenStream, fresh: &mut usize) -> Chain {
    let name = Ident::new(&format!("__adjoint_items{}", *fresh), Span::call_site());
    *fresh += 1;
    let mut c = elements(name.to_token_stream());
    c.prelude.push(parse_quote!(let #name = #collection;));
    c
}

/// `e` as a chain, if it is one; `fresh` numbers the array literals and sub-slices bound
/// before the loop.
pub(super) fn chain(e: &Expr, fresh: &mut usize) -> Option<Chain> {
    match e {
        Expr::Paren(p) => chain(&p.expr, fresh),
        Expr::Reference(r) if r.mutability.is_some() => places(&r.expr),
        Expr::Reference(r) => match &*r.expr {
            Expr::Array(_) => chain(&r.expr, fresh),
            sub @ Expr::Index(i) if matches!(&*i.index, Expr::Range(_)) => {
                Some(bound_first(quote!(&#sub), fresh))
            }
            inner => Some(elements(inner.to_token_stream())),
        },
        Expr::Path(p) if p.path.get_ident().is_some() => Some(elements(p.to_token_stream())),
        Expr::Field(f) => Some(elements(f.to_token_stream())),
        Expr::Array(a) => Some(bound_first(a.to_token_stream(), fresh)),
        Expr::MethodCall(m) => {
            let args: Vec<&Expr> = m.args.iter().collect();
            match (m.method.to_string().as_str(), args.as_slice()) {
                ("iter" | "into_iter", []) => match &*m.receiver {
                    receiver @ (Expr::Path(_) | Expr::Field(_)) => {
                        Some(elements(receiver.to_token_stream()))
                    }
                    receiver @ Expr::Array(_) => chain(receiver, fresh),
                    Expr::Index(i) if matches!(&*i.index, Expr::Range(_)) => {
                        let sub = &m.receiver;
                        Some(bound_first(quote!(&#sub), fresh))
                    }
                    _ => None,
                },
                ("iter_mut", []) => places(&m.receiver),
                ("chunks" | "chunks_exact" | "windows", [size]) => {
                    sub_slices(&m.receiver, &m.method.to_string(), size)
                }
                (method, args) => {
                    let by_ref = yields_references(&m.receiver);
                    adapted(chain(&m.receiver, fresh)?, method, args, fresh, by_ref)
                }
            }
        }
        _ => None,
    }
}

/// Whether `cond` is the guard of a filtered loop over indices ([`indexed_loop`]): `true &&
/// { let p = &item; predicate } && ..`. It is data (a filter's predicate only reads), and
/// forward mode evaluates it as written, on the values, which keep their names there.
pub fn is_guard_chain(cond: &Expr) -> bool {
    match cond {
        Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
            let guard = matches!(&*b.right, Expr::Block(block) if matches!(
                block.block.stmts.first(),
                Some(syn::Stmt::Local(syn::Local { init: Some(init), .. }))
                    if matches!(&*init.expr, Expr::Reference(_))
            ));
            guard
                && (matches!(&*b.left, Expr::Lit(l) if matches!(&l.lit, syn::Lit::Bool(t) if t.value))
                    || is_guard_chain(&b.left))
        }
        _ => false,
    }
}

/// Whether `e` is a chain with a `filter(..)`, which only a `for` loop over indices takes
/// (lowering the iterator first would meet the adapter).
pub fn is_filtered(e: &Expr) -> bool {
    chain(e, &mut 0).is_some_and(|c| !c.guards.is_empty())
}

/// Whether `e` is a chain that yields places by `&mut` (`xs.iter_mut()`, `&mut xs`).
pub fn yields_places(e: &Expr) -> bool {
    chain(e, &mut 0).is_some_and(|c| c.item.has_place())
}

/// `for pat in chain { body }` as a loop over indices (in a block when the chain binds an
/// array literal first); `None` when the iterator is not a chain this module knows.
pub fn indexed_for(f: &syn::ExprForLoop) -> Option<Expr> {
    let mut fresh = 0;
    let chain = chain(&f.expr, &mut fresh)?;
    let mut indexed = indexed_loop(&chain, &f.pat, &f.body.stmts, None, 0)?;
    if let Some(label) = &f.label {
        // Forward mode keeps labels (reverse mode's normalization has removed them by now).
        match &mut indexed {
            Expr::ForLoop(l) => l.label = Some(label.clone()),
            Expr::Block(b) => {
                if let Some(syn::Stmt::Expr(Expr::ForLoop(l), _)) = b.block.stmts.last_mut() {
                    l.label = Some(label.clone());
                }
            }
            _ => {}
        }
    }
    Some(indexed)
}

/// The loop over `chain` from step `start` binding `pat` before `stmts`, then `after` (the
/// accumulation of a reduction), in a block with the chain's prelude; `None` when `pat`
/// destructures a place or the body binds a place's name again.
pub(super) fn indexed_loop(
    chain: &Chain,
    pat: &Pat,
    stmts: &[syn::Stmt],
    after: Option<syn::Stmt>,
    start: usize,
) -> Option<Expr> {
    let mut bound = Bound::default();
    let lets = chain.item.bindings(pat, &mut bound)?;
    let mut body: syn::Block = parse_quote!({ #(#stmts)* #after });
    if binds_any(&body, &bound.places) {
        return None;
    }
    ItemsNamed(&bound).visit_block_mut(&mut body);
    let (index, len, prelude) = (
        Ident::new(INDEX, Span::call_site()),
        &chain.len,
        &chain.prelude,
    );
    let stmts = &body.stmts;
    let start = proc_macro2::Literal::usize_unsuffixed(start);
    let guards = &chain.guards;
    let step = match guards.is_empty() {
        true => quote!(#(#stmts)*),
        false => quote!(if true #(&& #guards)* { #(#stmts)* }),
    };
    let the_loop: Expr = parse_quote! {
        for #index in #start..#len {
            #(#lets)*
            #step
        }
    };
    Some(if prelude.is_empty() {
        the_loop
    } else {
        parse_quote!({ #(#prelude)* #the_loop })
    })
}

/// Rewrites the body for the names a chain's pattern bound: `*x` is `x` for an element bound
/// by value (a value now, not the reference the iterator yielded); a name bound to a place
/// stands for it, `*t` and `t.f`, `t[i]`, `t.m(..)` for `xs[k]` .. and a bare `t` for
/// `(&mut xs[k])`, a borrow the lowering judges like any other.
pub(super) struct ItemsNamed<'a>(pub(super) &'a Bound);

impl ItemsNamed<'_> {
    /// The place the path `e` names, if it names one.
    fn place(&self, e: &Expr) -> Option<Expr> {
        let Expr::Path(p) = e else { return None };
        let name = p.path.get_ident()?;
        let (_, place) = self.0.places.iter().find(|(n, _)| n == name)?;
        Some(parse_quote!(#place))
    }
}

impl VisitMut for ItemsNamed<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                if let Some(place) = self.place(&u.expr) {
                    *e = place;
                    return;
                }
                if let Expr::Path(p) = &*u.expr
                    && p.path
                        .get_ident()
                        .is_some_and(|i| self.0.by_value.contains(i))
                {
                    *e = Expr::Path(p.clone());
                    return;
                }
            }
            Expr::Field(f) => {
                if let Some(place) = self.place(&f.base) {
                    *f.base = place;
                    return;
                }
            }
            Expr::Index(i) => {
                if let Some(place) = self.place(&i.expr) {
                    *i.expr = place;
                    self.visit_expr_mut(&mut i.index);
                    return;
                }
            }
            Expr::MethodCall(m) => {
                if let Some(place) = self.place(&m.receiver) {
                    *m.receiver = place;
                    for arg in &mut m.args {
                        self.visit_expr_mut(arg);
                    }
                    return;
                }
            }
            Expr::Path(_) => {
                if let Some(place) = self.place(e) {
                    *e = parse_quote!((&mut #place));
                    return;
                }
            }
            _ => {}
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Whether `body` binds one of the places' names again (a `let`, a closure's or an arm's
/// pattern), so that later mentions would not be the place, or names one inside a macro,
/// whose tokens are not rewritten.
fn binds_any(body: &syn::Block, places: &[(Ident, TokenStream)]) -> bool {
    struct Binds<'a>(&'a [(Ident, TokenStream)], bool);
    impl<'v> syn::visit::Visit<'v> for Binds<'_> {
        fn visit_pat_ident(&mut self, p: &'v syn::PatIdent) {
            self.1 |= self.0.iter().any(|(n, _)| *n == p.ident);
            syn::visit::visit_pat_ident(self, p);
        }
        fn visit_macro(&mut self, m: &'v syn::Macro) {
            let named = crate::patterns::scan::idents(m.tokens.clone());
            self.1 |= self.0.iter().any(|(n, _)| named.contains(n));
        }
    }
    if places.is_empty() {
        return false;
    }
    let mut found = Binds(places, false);
    syn::visit::Visit::visit_block(&mut found, body);
    found.1
}

/// `tokens` with the index variable replaced by `with`.
fn substitute(tokens: TokenStream, with: &TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .flat_map(|tree| -> Vec<TokenTree> {
            match tree {
                TokenTree::Ident(i) if i == INDEX => with.clone().into_iter().collect(),
                TokenTree::Group(g) => {
                    let mut inner =
                        proc_macro2::Group::new(g.delimiter(), substitute(g.stream(), with));
                    inner.set_span(g.span());
                    vec![TokenTree::Group(inner)]
                }
                other => vec![other],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn for_loop(tokens: TokenStream) -> String {
        let f: syn::ExprForLoop = syn::parse2(tokens).unwrap();
        indexed_for(&f)
            .map(|e| e.to_token_stream().to_string())
            .unwrap_or_default()
    }

    #[test]
    fn enumerate_rev_zip_read_elements_at_their_index() {
        let out = for_loop(quote!(for (i, x) in xs.iter().enumerate() {
            s += *x * i as f64;
        }));
        assert!(
            out.contains("let i = (__adjoint_index) ; let x = xs [__adjoint_index] . clone () ;"),
            "{out}"
        );
        assert!(out.contains("s += x * i as f64"), "{out}");
        let out = for_loop(quote!(for (a, &b) in xs.iter().rev().zip(&ys) {
            s += a * b;
        }));
        assert!(
            out.contains("0 .. :: core :: cmp :: min (xs . len () , ys . len ())"),
            "{out}"
        );
        assert!(
            out.contains("xs [(xs . len () - 1 - __adjoint_index)] . clone ()"),
            "{out}"
        );
        assert!(
            out.contains("let b = ys [__adjoint_index] . clone ()"),
            "{out}"
        );
        let out = for_loop(quote!(for x in [a, b, c] {
            s += x;
        }));
        assert!(
            out.starts_with("{ let __adjoint_items0 = [a , b , c] ;"),
            "{out}"
        );
        let out = for_loop(quote!(for w in xs.windows(2) {
            s += w[0];
        }));
        assert!(
            out.contains("for __adjoint_index in 0 .. (xs . len () + 1) . saturating_sub (2) { let w = & xs [__adjoint_index .. (__adjoint_index + (2))] ;"),
            "{out}"
        );
        let out = for_loop(quote!(for c in xs.chunks(3) {
            s += c[0];
        }));
        assert!(
            out.contains("let c = & xs [(__adjoint_index * (3)) .. :: core :: cmp :: min ((__adjoint_index + 1) * (3) , xs . len ())]"),
            "{out}"
        );
        assert_eq!(
            for_loop(quote!(for w in xs.rchunks(2) {
                s += w[0];
            })),
            ""
        );
    }
}

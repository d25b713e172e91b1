//! Loops in forward mode: `for` (over ranges, data, active collections by reference, and
//! iterator chains rewritten as loops over indices), `while` and `loop`, each the same loop
//! with the tangent statements beside the value statements. A loop's body is dry-run until no
//! more variables become active, because the first iteration's writes are read by the second.

use super::Forward;
use super::expr::Fx;
use super::place::place;
use super::scope::{Hold, tangent_ident};
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::{Block, Expr, Pat};

impl Forward {
    /// Runs `body` on copies until it makes no more outer variables active, so that the
    /// loop's code is written once with every carried tangent in place.
    fn settle_loop(&mut self, body: &Block, pat: Option<&Pat>) {
        loop {
            let before = self.scopes.untracked();
            let mut dry = self.dry();
            dry.scopes.push();
            if let Some(p) = pat {
                dry.bind_pattern(p, false);
            }
            let _ = dry.block(body);
            let promoted: Vec<String> = before
                .into_iter()
                .filter(|n| dry.scopes.hold(n).is_some())
                .collect();
            if promoted.is_empty() {
                return;
            }
            for n in &promoted {
                self.promote(n);
            }
        }
    }

    pub fn for_loop(&mut self, f: &syn::ExprForLoop) -> Fx {
        if crate::patterns::iterators::is_filtered(&f.expr)
            && let Some(n) = self.mentions_tracked(f.expr.to_token_stream())
        {
            // `for x in xs.iter().filter(p)`: a loop over indices whose body runs where the
            // predicate holds (its guard, data, is read as written: `condition`).
            if let Some(indexed) = crate::patterns::iterators::indexed_for(f) {
                return self.expr(&indexed);
            }
            self.error(
                f.expr.span(),
                format!("forward mode: this `for` loop over `.filter(..)` of the active value `{n}` cannot be read as a loop over indices; loop without the filter and put an `if` around the body"),
            );
            return Fx::Data(quote!(#f));
        }
        let (label, pat) = (&f.label, &f.pat);
        let (pattern, iter, element_tangent) = match self.iterated(&f.expr) {
            Some((items, t)) => (
                quote!((__k, #pat)),
                quote!(::core::iter::Iterator::enumerate(#items)),
                Some(t),
            ),
            None => {
                if self.mentions_tracked(f.expr.to_token_stream()).is_some()
                    && let Some(indexed) = crate::patterns::iterators::indexed_for(f)
                {
                    // A chain over an active collection: a loop over indices.
                    return self.expr(&indexed);
                }
                let iterated = self.expr(&f.expr);
                if iterated.is_pair() {
                    self.error(
                        f.expr.span(),
                        "forward mode: iterate over an active collection as `for x in &v`, `for x in v.iter()` or `for x in v` (a reference), or by index".to_string(),
                    );
                }
                (quote!(#pat), iterated.value(), None)
            }
        };
        self.settle_loop(&f.body, Some(&f.pat));
        self.scopes.push();
        self.bind_pattern(&f.pat, false);
        let element = element_tangent.map(|t| self.bind_element(&f.pat, t));
        let (stmts, tail) = self.block(&f.body);
        self.scopes.pop();
        let tail = tail.map(Fx::value);
        Fx::Data(quote!(#label for #pattern in #iter { #element #(#stmts)* #tail }))
    }

    /// `for x in &v` / `v.iter()` over an active collection: the elements, and the tangent of
    /// element `__k`.
    fn iterated(&mut self, e: &Expr) -> Option<(TokenStream, TokenStream)> {
        let base = match e {
            Expr::Reference(r) if r.mutability.is_none() => &*r.expr,
            Expr::MethodCall(m) if m.method == "iter" && m.args.is_empty() => &*m.receiver,
            // `for x in v` over a reference (a `&[T]` parameter, `let v = &w;`).
            Expr::Path(_) => {
                let p = place(e)?;
                (self.scopes.hold(&p.root) == Some(Hold::Ref)).then_some(e)?
            }
            _ => return None,
        };
        let p = place(base)?;
        let tangent = self.scopes.tangent_ref(&p.root)?;
        let tangent = p.tangent_ref(tangent);
        Some((quote!(#base.iter()), quote!(#tangent.map(|__t| &__t[__k]))))
    }

    /// The element's tangent, bound to the loop pattern's name.
    fn bind_element(&mut self, pat: &Pat, tangent: TokenStream) -> TokenStream {
        match pat {
            Pat::Ident(i) => {
                self.scopes.declare(&i.ident.to_string(), Some(Hold::Ref));
                let t = tangent_ident(&i.ident.to_string());
                quote!(let #t = #tangent;)
            }
            Pat::Reference(r) => match &*r.pat {
                Pat::Ident(i) => {
                    self.scopes.declare(&i.ident.to_string(), Some(Hold::Owned));
                    let t = tangent_ident(&i.ident.to_string());
                    quote!(let mut #t = #tangent.map(|__t| *__t);)
                }
                _ => self.unsupported_element(pat),
            },
            _ => self.unsupported_element(pat),
        }
    }

    fn unsupported_element(&mut self, pat: &Pat) -> TokenStream {
        self.error(pat.span(), "forward mode: iterate over an active collection with `for x in &v` or `for &x in v.iter()`".to_string());
        quote!()
    }

    pub fn while_loop(&mut self, w: &syn::ExprWhile) -> Fx {
        if let Some(the_loop) = crate::patterns::loops::pop_loop(&syn::Expr::While(w.clone())) {
            // `while let P = v.pop()`: a `loop` around a `match` on the pop.
            return self.expr(&the_loop);
        }
        self.settle_loop(&w.body, None);
        let cond = self.condition(&w.cond);
        let (stmts, tail) = self.block(&w.body);
        let tail = tail.map(Fx::value);
        let label = &w.label;
        Fx::Data(quote!(#label while #cond { #(#stmts)* #tail }))
    }

    pub fn plain_loop(&mut self, l: &syn::ExprLoop) -> Fx {
        if let Some(n) = self.mentions_tracked(break_values(&l.body)) {
            self.error(l.span(), format!("forward mode: `break` with the active value `{n}` is not supported; assign it to a variable before `break`"));
        }
        self.settle_loop(&l.body, None);
        let (stmts, tail) = self.block(&l.body);
        let tail = tail.map(Fx::value);
        let label = &l.label;
        Fx::Data(quote!(#label loop { #(#stmts)* #tail }))
    }
}

/// The tokens of the `break` values in a loop body (for the activity check).
fn break_values(body: &Block) -> TokenStream {
    let mut out = TokenStream::new();
    let mut tokens = body.to_token_stream().into_iter().peekable();
    while let Some(t) = tokens.next() {
        if t.to_string() == "break" {
            while let Some(n) = tokens.peek() {
                if n.to_string() == ";" {
                    break;
                }
                out.extend(std::iter::once(tokens.next().expect("peeked")));
            }
        }
    }
    out
}

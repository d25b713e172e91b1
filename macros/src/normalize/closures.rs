//! Closures bound to a name and called in the body: each call `f(a, b)` of
//! `let f = |x, y| body;` becomes the closure's body inlined at the call, and the binding
//! goes, so that the lowering sees (and differentiates) the code a call runs:
//!
//! ```text
//! f(a, b)  ⇒  ({ let __adjoint_arg0 = a; let __adjoint_arg1 = b;
//!                let x = __adjoint_arg0; let y = __adjoint_arg1; body })
//! ```
//!
//! That is what the call computes when every variable the body captures holds at the call
//! what it held when the closure was made. So a closure is inlined only when none of the
//! variables it mentions other than its parameters is assigned anywhere in the function (so
//! it writes none of its captures) or bound again after it (nor its name), its body has no
//! `return` or `?`, and the rest of its block uses its name only to call it. Any other closure stays as written (and a call of it
//! with active values is an error of the lowering).

use crate::patterns::bindings::pattern_names;
use crate::patterns::scan;
use proc_macro2::TokenTree;
use quote::{ToTokens, format_ident};
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, ExprClosure, Pat, Stmt, parse_quote};

/// `body` with the closures that can be inlined at their calls inlined.
pub(super) fn inline_closures(body: &Block) -> Block {
    let mut body = body.clone();
    Inliner {
        assigned: scan::assigned(body.to_token_stream())
            .iter()
            .map(ToString::to_string)
            .collect(),
    }
    .visit_block_mut(&mut body);
    body
}

struct Inliner {
    /// The names assigned anywhere in the function.
    assigned: Vec<String>,
}

impl Inliner {
    /// Whether `closure`, bound to `name`, may be inlined at calls in `rest` (its block's
    /// statements after the binding).
    fn inlinable(&self, name: &str, closure: &ExprClosure, rest: &[Stmt]) -> bool {
        let params: Vec<String> = closure
            .inputs
            .iter()
            .flat_map(pattern_names)
            .map(|i| i.to_string())
            .collect();
        let body = closure.body.to_token_stream();
        let rebound = bound_names(rest);
        let captured_stable = scan::idents(body.clone())
            .iter()
            .map(ToString::to_string)
            .all(|i| params.contains(&i) || !(self.assigned.contains(&i) || rebound.contains(&i)));
        closure.asyncness.is_none()
            && !rebound.iter().any(|b| b == name)
            && captured_stable
            && crate::patterns::exits::early_exit(body).is_none()
            && only_called(name, quote::quote!(#(#rest)*))
    }
}

impl VisitMut for Inliner {
    fn visit_block_mut(&mut self, block: &mut Block) {
        let mut i = 0;
        while i < block.stmts.len() {
            if let Stmt::Local(local) = &block.stmts[i]
                && let Pat::Ident(p) = &local.pat
                && p.mutability.is_none()
                && let Some(init) = &local.init
                && let Expr::Closure(closure) = &*init.expr
                && init.diverge.is_none()
                && self.inlinable(&p.ident.to_string(), closure, &block.stmts[i + 1..])
            {
                let (name, closure) = (p.ident.to_string(), closure.clone());
                block.stmts.remove(i);
                let mut calls = Calls {
                    name: &name,
                    closure: &closure,
                };
                for stmt in &mut block.stmts[i..] {
                    calls.visit_stmt_mut(stmt);
                }
                continue;
            }
            self.visit_stmt_mut(&mut block.stmts[i]);
            i += 1;
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Replaces the calls of one closure by its inlined body.
struct Calls<'a> {
    name: &'a str,
    closure: &'a ExprClosure,
}

impl VisitMut for Calls<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let Expr::Call(c) = e else { return };
        let Expr::Path(p) = &*c.func else { return };
        if !p.path.is_ident(self.name) || c.args.len() != self.closure.inputs.len() {
            return;
        }
        let values: Vec<syn::Ident> = (0..c.args.len())
            .map(|i| format_ident!("__adjoint_arg{}", i))
            .collect();
        let (args, params, body) = (
            c.args.iter(),
            self.closure.inputs.iter(),
            &self.closure.body,
        );
        // In parentheses: a block that starts a statement would end there (`{ .. } * t`).
        *e = parse_quote!(({
            #(let #values = #args;)*
            #(let #params = #values;)*
            #body
        }));
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Whether every mention of `name` in `tokens` is a call `name(..)` (not a method or field
/// of that name, which follows a `.`).
fn only_called(name: &str, tokens: proc_macro2::TokenStream) -> bool {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    trees.iter().enumerate().all(|(i, tree)| match tree {
        TokenTree::Group(g) => only_called(name, g.stream()),
        TokenTree::Ident(id) if id == name => {
            let after_dot = i > 0 && matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == '.');
            let called = matches!(trees.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
            after_dot || called
        }
        _ => true,
    })
}

/// The names that patterns in `stmts` bind (`let`, closure parameters, loops, `match` arms).
fn bound_names(stmts: &[Stmt]) -> Vec<String> {
    struct Bindings(Vec<String>);
    impl<'a> Visit<'a> for Bindings {
        fn visit_pat(&mut self, p: &'a Pat) {
            if let Pat::Ident(i) = p {
                self.0.push(i.ident.to_string());
            }
            syn::visit::visit_pat(self, p);
        }
    }
    let mut bound = Bindings(Vec::new());
    stmts.iter().for_each(|stmt| bound.visit_stmt(stmt));
    bound.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inlined(body: Block) -> String {
        inline_closures(&body).to_token_stream().to_string()
    }

    #[test]
    fn calls_become_the_body_with_the_arguments_bound() {
        let out = inlined(parse_quote!({
            let h = move |t: f64| s * t.sin();
            let g = |t: f64| h(t) * t;
            g(x)
        }));
        assert_eq!(
            out,
            "{ ({ let __adjoint_arg0 = x ; let t : f64 = __adjoint_arg0 ; ({ let __adjoint_arg0 = t ; \
             let t : f64 = __adjoint_arg0 ; s * t . sin () }) * t }) }"
        );
    }

    #[test]
    fn closures_whose_captures_may_change_stay() {
        for body in [
            parse_quote!({
                let f = |t| t * y;
                y = 2.0;
                f(x)
            }),
            parse_quote!({
                let f = |t| t * y;
                let y = 2.0;
                f(x)
            }),
            parse_quote!({
                let f = |t| {
                    y += t;
                    y
                };
                f(x)
            }),
            parse_quote!({
                let f = |t| t * y;
                xs.iter().map(f)
            }),
            parse_quote!({
                let f = |t| return t;
                f(x)
            }),
        ] {
            let body: Block = body;
            assert_eq!(inlined(body.clone()), body.to_token_stream().to_string());
        }
    }
}

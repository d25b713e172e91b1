//! Early exits: where a body leaves before its last expression.

use proc_macro2::{Span, TokenStream};
use syn::visit::Visit;
use syn::{Block, Expr, Stmt};

/// Whether tokens contain `return` or `?` (outside closures is approximated by the caller).
/// The first `return` or `?` of the function itself (not of its closures or nested items),
/// other than a `return` in last position.
pub fn early_exit_in(body: &Block) -> Option<Span> {
    struct Exits(Option<Span>);
    impl<'a> Visit<'a> for Exits {
        fn visit_expr_return(&mut self, r: &'a syn::ExprReturn) {
            self.0.get_or_insert(r.return_token.span);
        }
        fn visit_expr_try(&mut self, t: &'a syn::ExprTry) {
            self.0.get_or_insert(t.question_token.span);
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut exits = Exits(None);
    let last = body.stmts.len().saturating_sub(1);
    for (i, stmt) in body.stmts.iter().enumerate() {
        match stmt {
            Stmt::Expr(Expr::Return(r), _) if i == last => {
                if let Some(e) = &r.expr {
                    exits.visit_expr(e);
                }
            }
            other => exits.visit_stmt(other),
        }
    }
    exits.0
}

/// The span of the first `return` or `?` in `tokens`.
pub fn early_exit(tokens: TokenStream) -> Option<Span> {
    tokens.into_iter().find_map(|tt| match tt {
        proc_macro2::TokenTree::Ident(id) if id == "return" => Some(id.span()),
        proc_macro2::TokenTree::Punct(p) if p.as_char() == '?' => Some(p.span()),
        proc_macro2::TokenTree::Group(g) => early_exit(g.stream()),
        _ => None,
    })
}

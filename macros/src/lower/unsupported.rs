//! Constructs the lowering does not walk: fine on data, an error where an active value goes
//! through them into the result; and early exits the normalization could not remove.

use crate::ir::graph::Act;
use crate::lower::{Lowering, is_inactive};
use crate::patterns::scan;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::visit::Visit;
use syn::{Block, Expr, Stmt};

impl Lowering<'_> {
    /// A construct the lowering does not walk yet: fine on data, an error where an active value
    /// goes through it into the result.
    pub(crate) fn opaque(&mut self, e: &Expr) -> (Expr, Act) {
        let tokens = e.to_token_stream();
        let mut tracked = |id: &proc_macro2::Ident| {
            self.lookup(&id.to_string())
                .is_some_and(|a| !is_inactive(a))
        };
        let mention = scan::first_mention(tokens.clone(), &mut tracked);
        let what = construct_name(e);
        for name in scan::assigned(tokens.clone()) {
            let current = self.lookup(&name.to_string()).cloned();
            if current.is_some_and(|a| !is_inactive(&a)) || mention.is_some() {
                let message = format!(
                    "`{name}` is assigned inside {what}, which #[differentiable] does not support over active values yet"
                );
                self.assign(&name.to_string(), Act::Poison(name.span(), message));
            }
        }
        let exit = match e {
            Expr::Return(r) => Some(r.return_token.span),
            Expr::Closure(_) => None,
            _ => early_exit(tokens),
        };
        if let Some(exit) = exit {
            self.report(
                exit,
                "early exit (`return` or `?`) is not supported yet by #[differentiable]: make the value the function's last expression",
            );
            // Everything after an early exit would be reported against a function whose
            // control flow is already unsupported: one error is enough.
            self.fatal = true;
            return (e.clone(), Act::Inactive);
        }
        if let (Expr::Unsafe(_), Some(span)) = (e, mention) {
            self.report(span, "active value used inside an `unsafe` block: its derivative cannot be tracked; wrap the unsafe code in a function with a #[derivative_of] rule");
            return (e.clone(), Act::Inactive);
        }
        match mention {
            Some(span) => {
                let message = format!(
                    "{what} over active values is not supported yet by #[differentiable]; compute it on data (`without_derivative(..)`), or move it into a function with a #[derivative_of] rule"
                );
                (e.clone(), Act::Poison(span, message))
            }
            None => (e.clone(), Act::Inactive),
        }
    }
}

pub(crate) fn construct_name(e: &Expr) -> String {
    match e {
        Expr::If(_) => "`if`".into(),
        Expr::Match(_) => "`match`".into(),
        Expr::Loop(_) => "a `loop` left with `break value` or a labelled `break`".into(),
        Expr::ForLoop(_) | Expr::While(_) => "a labelled loop".into(),
        Expr::Closure(_) => "a closure".into(),
        Expr::Macro(m) => format!("macro `{}!`", m.mac.path.to_token_stream()),
        Expr::Index(_) => "indexing".into(),
        Expr::Array(_) | Expr::Repeat(_) => "an array".into(),
        Expr::Struct(_) => "a struct literal".into(),
        Expr::Unsafe(_) => "an `unsafe` block".into(),
        Expr::Async(_) | Expr::Await(_) => "async code".into(),
        Expr::Try(_) => "`?`".into(),
        Expr::Range(_) => "a range".into(),
        _ => "this expression".into(),
    }
}

/// Whether tokens contain `return` or `?` (outside closures is approximated by the caller).
/// The first `return` or `?` of the function itself (not of its closures or nested items),
/// other than a `return` in last position.
pub(crate) fn early_exit_in(body: &Block) -> Option<Span> {
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
pub(crate) fn early_exit(tokens: TokenStream) -> Option<Span> {
    tokens.into_iter().find_map(|tt| match tt {
        proc_macro2::TokenTree::Ident(id) if id == "return" => Some(id.span()),
        proc_macro2::TokenTree::Punct(p) if p.as_char() == '?' => Some(p.span()),
        proc_macro2::TokenTree::Group(g) => early_exit(g.stream()),
        _ => None,
    })
}

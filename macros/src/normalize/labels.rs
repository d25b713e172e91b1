//! Labelled loops: the flags of `break 'l` / `continue 'l` taken from a loop inside `'l`,
//! and the guard that skips the rest of each body once one is set.
//!
//! ```text
//! 'l: for .. { for .. { if c { break 'l; } s1 } s2 }
//!   ⇒ let mut __adjoint_break_l = false;
//!     for .. { { let mut b0 = false; for .. { if c { __adjoint_break_l = true; b0 = true; } else { s1 } if b0 { break; } } }
//!              if __adjoint_break_l { } else { s2 } if __adjoint_break_l { break; } }
//! ```

use super::exits;
use crate::patterns::loops::{BREAK_FLAG, Loop};
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::visit::Visit;
use syn::{Block, Expr, Ident, Stmt, parse_quote};

/// The loop whose body is being rewritten: `break` sets its flag. A labelled loop `'l` has
/// the flags `__adjoint_break_l` and `__adjoint_continue_l`, named after the label so that
/// the loops inside it, rewritten first, can set them (see [`label_flags`]).
#[derive(Clone)]
pub(super) struct LoopCtx {
    pub(super) flag: Ident,
    pub(super) label: Option<String>,
}

impl LoopCtx {
    /// Whether `label` names this loop.
    pub(super) fn is(&self, label: &syn::Lifetime) -> bool {
        self.label.as_deref() == Some(&label.ident.to_string())
    }
}

/// The flag a labelled `break 'label` / `continue 'label` sets.
pub(super) fn label_flag(exit: &str, label: &syn::Lifetime) -> Ident {
    format_ident!(
        "{}{}_{}",
        BREAK_FLAG.trim_end_matches("break"),
        exit,
        label.ident
    )
}

/// The labels of the loops in `body`.
pub(super) fn loop_labels(body: &Block) -> Vec<String> {
    struct Labels(Vec<String>);
    impl<'a> Visit<'a> for Labels {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Some(label) = Loop::of(e).and_then(|lp| lp.label()) {
                self.0.push(label.name.ident.to_string());
            }
            syn::visit::visit_expr(self, e);
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut labels = Labels(Vec::new());
    labels.visit_block(body);
    labels.0
}

/// The label flags (`__adjoint_break_l`, `__adjoint_continue_l`) that `stmt` sets and does not
/// declare: the exits to loops around it of the loops inside it, already rewritten.
pub(super) fn label_flags(stmt: &Stmt) -> Vec<String> {
    let prefixes = [label_prefix("break"), label_prefix("continue")];
    let tokens = stmt.to_token_stream();
    let declared = let_bound(tokens.clone());
    let mut set: Vec<String> = crate::patterns::scan::assigned(tokens)
        .into_iter()
        .map(|i| i.to_string())
        .filter(|i| prefixes.iter().any(|p| i.starts_with(p.as_str())) && !declared.contains(i))
        .collect();
    set.sort();
    set.dedup();
    set
}

/// The names that `let` / `let mut` bind directly in `tokens` (at any depth).
pub(super) fn let_bound(tokens: TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            proc_macro2::TokenTree::Group(g) => out.extend(let_bound(g.stream())),
            proc_macro2::TokenTree::Ident(k) if k == "let" => {
                let next = match trees.get(i + 1) {
                    Some(proc_macro2::TokenTree::Ident(m)) if m == "mut" => trees.get(i + 2),
                    next => next,
                };
                if let Some(proc_macro2::TokenTree::Ident(name)) = next {
                    out.push(name.to_string());
                }
            }
            _ => {}
        }
    }
    out
}

pub(super) fn label_prefix(exit: &str) -> String {
    format!("{}{}_", BREAK_FLAG.trim_end_matches("break"), exit)
}

/// `if <an outer loop's flag> { flag = true; } else if <own flags> { } else { rest }`: after a
/// statement whose loops set label flags (`set`), the rest of `lp`'s body runs only if none
/// is set; a loop around `lp` being left leaves `lp` too. Nothing when there is no rest and
/// only `lp`'s own flags are set (its final check reads them).
pub(super) fn guard(lp: &LoopCtx, set: &[String], rest: Vec<Stmt>) -> Option<Stmt> {
    let own: Vec<String> = match &lp.label {
        Some(l) => ["break", "continue"]
            .map(|exit| format!("{}{l}", label_prefix(exit)))
            .to_vec(),
        None => Vec::new(),
    };
    let ident = |f: &String| format_ident!("{}", f);
    let outer: Vec<Ident> = set.iter().filter(|f| !own.contains(f)).map(ident).collect();
    let mine: Vec<Ident> = set.iter().filter(|f| own.contains(f)).map(ident).collect();
    let flag = &lp.flag;
    if rest.is_empty() && outer.is_empty() {
        return None;
    }
    let rest = quote!({ #(#rest)* });
    let rest = if mine.is_empty() {
        rest
    } else {
        quote!(if #(#mine)||* { } else #rest)
    };
    Some(if outer.is_empty() {
        parse_quote!(#rest;)
    } else {
        parse_quote!(if #(#outer)||* { #flag = true; } else { #rest };)
    })
}

/// Whether a loop body was already rewritten: its only exit is the final `if flag { break; }`.
pub(super) fn normalized(body: &Block) -> bool {
    let (rest, check) = crate::patterns::loops::split_break_check(body);
    !check.is_empty() && !exits(rest.to_token_stream(), true)
}

/// The identifiers of `stmts`.
pub(super) fn scan_idents(stmts: &[Stmt]) -> Vec<String> {
    crate::patterns::scan::idents(quote!(#(#stmts)*))
        .iter()
        .map(|i| i.to_string())
        .collect()
}

/// A rewritten loop without its label (no exit names it any more).
pub(super) fn unlabelled(mut e: Expr) -> Expr {
    match &mut e {
        Expr::ForLoop(f) => f.label = None,
        Expr::While(w) => w.label = None,
        Expr::Loop(l) => l.label = None,
        _ => {}
    }
    e
}

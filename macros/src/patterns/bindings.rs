//! Names: what a pattern binds and which local a place expression names.

use syn::visit::Visit;
use syn::{Expr, Ident, Pat};

/// The names a pattern binds.
pub fn pattern_names(pat: &Pat) -> Vec<Ident> {
    struct Names(Vec<Ident>);
    impl<'a> Visit<'a> for Names {
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            self.0.push(p.ident.clone());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut names = Names(Vec::new());
    names.visit_pat(pat);
    names.0
}

/// The arms a `match` on an active `Option`/`Result` may have: `Some(v)`/`Ok(v)` bind the
/// payload (`Some(Some(v))`), `None`, `Err(..)` and `_` bind nothing active (`Some(None)`).
pub fn payload_pattern(pat: &syn::Pat) -> Option<Option<String>> {
    match pat {
        syn::Pat::TupleStruct(t) => {
            let last = t.path.segments.last()?.ident.to_string();
            match (last.as_str(), t.elems.len(), t.elems.first()) {
                ("Some" | "Ok", 1, Some(syn::Pat::Ident(i))) if i.subpat.is_none() => {
                    Some(Some(i.ident.to_string()))
                }
                ("Some" | "Ok", 1, Some(syn::Pat::Wild(_))) | ("Err", _, _) => Some(None),
                _ => None,
            }
        }
        syn::Pat::Ident(i) if i.ident == "None" => Some(None),
        syn::Pat::Path(p) if p.path.is_ident("None") => Some(None),
        syn::Pat::Wild(_) => Some(None),
        _ => None,
    }
}

pub fn local_name(e: &Expr) -> Option<&Ident> {
    match e {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
        // `*x = e` through an inout (`&mut`) parameter writes a new version of `x`.
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => local_name(&u.expr),
        _ => None,
    }
}

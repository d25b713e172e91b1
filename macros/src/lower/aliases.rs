//! References to locals that the lowering follows: an inout (`&mut`) parameter `x`, and
//! `let r = &mut a;` (also a reborrow `let r2 = &mut *r;` and a move `let r2 = r;`), which
//! makes `r` an alias of `a`. Reads of `r` and `*r` have `a`'s activity; writes through `r`
//! (`*r = e`, `*r op= e`, `r[i] = e`, `r.push(e)`, an inout call `g(r)`, `std::mem::swap(r, s)`)
//! rebind `a` and every alias of it ([`Lowering::assign`]). Any other `&mut` borrow of an
//! active value is an error at its span (`Lowering::reference`), and so is a write through a
//! reference the lowering does not follow when an active value is on either side.

use crate::ir::graph::Act;
use crate::lower::Lowering;
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::{Expr, Local, Pat, UnOp};

/// `name` refers to the local `target` through `let name = &mut target;`, made in scope
/// number `depth` (it ends with that scope).
#[derive(Clone)]
pub struct Alias {
    pub name: String,
    pub target: String,
    pub depth: usize,
}

impl Lowering<'_> {
    /// The local whose value `*name` is, when the lowering follows the reference `name`: the
    /// target of an alias, or an inout parameter itself.
    pub(crate) fn followed(&self, name: &str) -> Option<String> {
        if let Some(alias) = self.aliases.iter().rev().find(|a| a.name == name) {
            return Some(alias.target.clone());
        }
        self.inout_params
            .iter()
            .any(|p| p == name)
            .then(|| name.to_owned())
    }

    /// The name to rebind and the place to write in the forward code for a `&mut` argument
    /// the lowering follows: `&mut a` (`a`), `&mut *r` or `r` with `r` followed (`*r`).
    pub(crate) fn mut_place(&self, arg: &Expr) -> Option<(String, TokenStream)> {
        match arg {
            Expr::Reference(r) if r.mutability.is_some() => match &*r.expr {
                Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => self.followed_path(&u.expr),
                Expr::Paren(p) => self.mut_place(&Expr::Reference(syn::ExprReference {
                    expr: p.expr.clone(),
                    ..r.clone()
                })),
                inner => {
                    let name = path_name(inner)?;
                    if self.followed(&name).is_some() {
                        // `&mut r` coerces to `r` where a `&mut T` is expected.
                        return self.followed_path(inner);
                    }
                    self.lookup(&name)?;
                    Some((name, inner.to_token_stream()))
                }
            },
            Expr::Paren(p) => self.mut_place(&p.expr),
            other => self.followed_path(other),
        }
    }

    /// `r` with `r` followed: `(r, *r)`.
    fn followed_path(&self, e: &Expr) -> Option<(String, TokenStream)> {
        let name = path_name(e)?;
        self.followed(&name)?;
        let ident = format_ident!("{}", name);
        Some((name, quote!(*#ident)))
    }

    /// The place tokens of the local `name` in generated code that takes it by reference:
    /// `*name` for a followed reference (so that `&mut *r`, `&*r` reach the value), else
    /// `name`.
    pub(crate) fn place_of(&self, name: &syn::Ident) -> TokenStream {
        if self.followed(&name.to_string()).is_some() {
            quote!(*#name)
        } else {
            name.to_token_stream()
        }
    }

    /// The local an assignment to `place` rebinds: `a`, or `*r` through a followed reference.
    /// `None` for anything else (a field, a deref of a reference the lowering does not follow).
    pub(crate) fn written_local(&self, place: &Expr) -> Option<syn::Ident> {
        match place {
            Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
            Expr::Paren(p) => self.written_local(&p.expr),
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => {
                let Expr::Path(p) = &*u.expr else { return None };
                let ident = p.path.get_ident()?;
                self.followed(&ident.to_string())?;
                Some(ident.clone())
            }
            _ => None,
        }
    }

    /// `let r = &mut a;` (or `&mut *r0`, or `r0`, with `r0` followed): binds `r` as an alias of
    /// `a`, with `a`'s activity. The statement is kept as written.
    pub(crate) fn alias_local(&mut self, local: &Local) -> Option<Local> {
        let name = simple_binding(&local.pat)?;
        let init = local.init.as_ref().filter(|i| i.diverge.is_none())?;
        let target = self.referent(&init.expr)?;
        self.bind(&name, Act::Inactive);
        self.point(name, target);
        Some(local.clone())
    }

    /// The local that `e`, of type `&mut T`, points to when the lowering follows it: `&mut a`,
    /// `&mut *r` or `r` with `r` followed.
    fn referent(&self, e: &Expr) -> Option<String> {
        let borrowed = match e {
            Expr::Reference(r) => r.mutability.is_some(),
            other => path_name(other).is_some_and(|n| self.followed(&n).is_some()),
        };
        let (target, _) = self.mut_place(e).filter(|_| borrowed)?;
        Some(self.followed(&target).unwrap_or(target))
    }

    /// Makes the bound variable `name` an alias of `target`, with its activity.
    fn point(&mut self, name: String, target: String) {
        let act = self.act_of(&target);
        self.set_slot(&name, act);
        self.aliases.push(Alias {
            name,
            target,
            depth: self.scopes.len(),
        });
    }

    /// Whether `body` mentions a reference bound by `let r = &mut a;`.
    pub(crate) fn mentions_alias(&self, body: &syn::Block) -> bool {
        !self.aliases.is_empty()
            && crate::patterns::scan::idents(body.to_token_stream())
                .iter()
                .any(|i| self.aliases.iter().any(|a| i == &a.name))
    }

    /// Forgets what `name`, bound again, was: an inout parameter, a reference, a closure that
    /// writes its captures; and the references to it (the local they point to can no longer be
    /// named: a write through them is one the lowering does not follow, an error wherever an
    /// active value is on either side).
    pub(crate) fn unalias(&mut self, name: &str) {
        self.inout_params.retain(|p| p != name);
        self.closure_writes.retain(|(c, _)| c != name);
        self.mutable.retain(|m| m != name);
        self.aliases.retain(|a| a.name != name && a.target != name);
    }

    /// `r = &mut b;` (or `r = r0;`) with `r` an alias: `r` now points to `b`. Returns whether
    /// this was such an assignment; the statement is kept as written.
    pub(crate) fn repoint(&mut self, assign: &syn::ExprAssign) -> bool {
        let Some(name) = path_name(&assign.left) else {
            return false;
        };
        if !self.aliases.iter().any(|a| a.name == name) {
            return false;
        }
        self.aliases.retain(|a| a.name != name);
        match self.referent(&assign.right) {
            Some(target) => self.point(name, target),
            None => {
                // Anything else is a reference the lowering does not follow.
                let (_, act) = self.expr(&assign.right);
                self.set_slot(&name, act);
            }
        }
        true
    }
}

/// The name bound by `name`, `mut name` or `name: T` (no `ref`, no sub-pattern).
fn simple_binding(pat: &Pat) -> Option<String> {
    match pat {
        Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => Some(p.ident.to_string()),
        Pat::Type(t) => simple_binding(&t.pat),
        _ => None,
    }
}

/// The name of a path of one segment.
fn path_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(ToString::to_string),
        Expr::Paren(p) => path_name(&p.expr),
        _ => None,
    }
}
